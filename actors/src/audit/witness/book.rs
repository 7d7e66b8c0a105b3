//! The lead's side: the heads it keeps of one member's audit chain, and when one is worth a line
//! of the lead's own log (pure: `now` is an argument, unix seconds).
//!
//! **What is kept.** At most [`MAX_HEADS`] heads, oldest first. The [`RECENT`] newest are always
//! kept; beyond the bound, the older head whose neighbours are closest in `seq` goes, so the kept
//! heads spread over the member's whole history and the oldest one stays. A head matters for every
//! line up to it (its hash covers them), so a rewrite of an old line stays evident as long as one
//! head kept from before the rewrite lies at or after that line.
//!
//! **Contradictions.** A head with a `seq` the lead already holds under another hash, or a `seq`
//! below a kept one, cannot come from the log the lead witnessed: that log was rewritten, cut or
//! replaced. Nor can a log that, by the member's own check at the start of a run, does not hold a
//! kept head with its hash (`contradicted`): that catches a rewrite whose log was also made longer
//! than the lead saw, which the `seq`s alone do not show. The heads it contradicts are **held**: never thinned (at most [`MAX_HEADS`] / 2
//! of them), so the evidence outlives any number of later heads; and not compared again, so a
//! rewritten log does not make every later head a line.
//!
//! **Lines on the lead** (`audit.witnessed`; the rule that keeps a busy crew from flooding the
//! lead's log): a head is a line when it is the first the lead keeps of this member since the lead
//! started, when it contradicts a kept head, when the member sent it as it stopped, or when the
//! member's last line on the lead is [`LINE_EVERY_SECS`] old; otherwise it is kept in the store
//! only, and the next line counts it (`heads`). So a member costs the lead at most one line per
//! ten minutes while it is written to, plus one per clean stop and one per contradiction.

use serde::{Deserialize, Serialize};

use crate::audit::ChainTail;

/// The most heads kept per member.
pub const MAX_HEADS: usize = 32;

/// The newest heads, always kept.
pub const RECENT: usize = 8;

/// A member's ordinary heads are a line on the lead at most this often.
pub const LINE_EVERY_SECS: i64 = 600;

/// One kept head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptHead {
    /// The head.
    pub head: ChainTail,
    /// When the lead received it (unix seconds).
    pub at: i64,
    /// A later head contradicted it: it is held.
    #[serde(default)]
    pub held: bool,
}

/// The heads of one member, as the lead's store keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptHeads {
    /// Oldest first.
    pub heads: Vec<KeptHead>,
    /// When this member's last `audit.witnessed` line was written (this run of the lead only).
    #[serde(skip)]
    pub last_line_at: Option<i64>,
    /// Heads kept since that line.
    #[serde(skip)]
    pub unlined: u64,
}

/// What [`KeptHeads::observe`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The kept heads changed: store them.
    pub changed: bool,
    /// Write an `audit.witnessed` line.
    pub line: bool,
    /// The kept heads the new one contradicts.
    pub contradicts: Vec<ChainTail>,
    /// Heads this line stands for (itself included).
    pub heads: u64,
}

impl KeptHeads {
    /// The newest kept head.
    pub fn latest(&self) -> Option<&ChainTail> {
        self.heads.last().map(|k| &k.head)
    }

    /// The member reports `head` at `now` (`stopping`: as its bridge stops; `contradicted`: the
    /// `seq`s of kept heads its log does not hold).
    pub fn observe(
        &mut self,
        head: ChainTail,
        stopping: bool,
        contradicted: &[u64],
        now: i64,
    ) -> Observed {
        if self.latest() == Some(&head) && contradicted.is_empty() {
            return Observed {
                changed: false,
                line: false,
                contradicts: Vec::new(),
                heads: 0,
            };
        }
        let mut contradicts = Vec::new();
        let held = self.heads.iter().filter(|k| k.held).count();
        let mut room = (MAX_HEADS / 2).saturating_sub(held);
        // A held head was contradicted once already; its line was written then.
        for kept in self.heads.iter_mut().filter(|k| !k.held) {
            let against = (kept.head.seq == head.seq && kept.head.hash != head.hash)
                || kept.head.seq > head.seq
                || contradicted.contains(&kept.head.seq);
            if against {
                contradicts.push(kept.head.clone());
                if room > 0 {
                    kept.held = true;
                    room -= 1;
                }
            }
        }
        let repeated = self.latest() == Some(&head);
        if repeated && contradicts.is_empty() {
            return Observed {
                changed: false,
                line: false,
                contradicts,
                heads: 0,
            };
        }
        if !repeated {
            self.heads.retain(|k| k.head != head);
            self.heads.push(KeptHead {
                head,
                at: now,
                held: false,
            });
        }
        self.thin();
        self.unlined += 1;
        let line = !contradicts.is_empty()
            || stopping
            || self
                .last_line_at
                .is_none_or(|at| now.saturating_sub(at) >= LINE_EVERY_SECS);
        let heads = self.unlined;
        if line {
            self.last_line_at = Some(now);
            self.unlined = 0;
        }
        Observed {
            changed: true,
            line,
            contradicts,
            heads,
        }
    }

    /// Drops heads beyond [`MAX_HEADS`]: never the newest [`RECENT`], the oldest or a held one;
    /// of the others, the one whose neighbours are closest in `seq`.
    fn thin(&mut self) {
        while self.heads.len() > MAX_HEADS {
            let last_candidate = self.heads.len().saturating_sub(RECENT);
            let gap = |i: usize| {
                let (before, after) = (&self.heads[i - 1].head, &self.heads[i + 1].head);
                after.seq.abs_diff(before.seq)
            };
            let pick = (1..last_candidate)
                .filter(|&i| !self.heads[i].held)
                .min_by_key(|&i| gap(i))
                .or_else(|| (0..self.heads.len()).find(|&i| !self.heads[i].held))
                .unwrap_or(0);
            self.heads.remove(pick);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, tag: char) -> ChainTail {
        ChainTail {
            seq,
            hash: tag.to_string().repeat(64),
        }
    }

    #[test]
    fn the_first_head_is_a_line_then_one_per_ten_minutes_and_each_stop() {
        let mut kept = KeptHeads::default();
        let first = kept.observe(head(10, 'a'), false, &[], 1_000);
        assert!(first.changed && first.line);
        assert_eq!(first.heads, 1);
        let again = kept.observe(head(10, 'a'), false, &[], 1_001);
        assert!(
            !again.changed && !again.line,
            "the same head again is nothing"
        );
        assert!(!kept.observe(head(20, 'a'), false, &[], 1_100).line);
        assert!(!kept.observe(head(30, 'a'), false, &[], 1_200).line);
        let tenth_minute = kept.observe(head(40, 'a'), false, &[], 1_000 + LINE_EVERY_SECS);
        assert!(tenth_minute.line);
        assert_eq!(
            tenth_minute.heads, 3,
            "the line counts the heads kept since the last"
        );
        assert!(
            kept.observe(head(41, 'a'), true, &[], 1_601).line,
            "a clean stop"
        );
        assert!(kept
            .observe(head(42, 'a'), false, &[], 1_602)
            .contradicts
            .is_empty());
    }

    #[test]
    fn a_rewritten_or_shorter_log_contradicts_and_the_evidence_is_held() {
        let mut kept = KeptHeads::default();
        kept.observe(head(10, 'a'), false, &[], 0);
        kept.observe(head(12, 'a'), true, &[], 1);
        let rewritten = kept.observe(head(12, 'b'), false, &[], 2);
        assert!(rewritten.line);
        assert_eq!(rewritten.contradicts, vec![head(12, 'a')]);
        let shorter = kept.observe(head(11, 'c'), false, &[], 3);
        assert_eq!(
            shorter.contradicts,
            vec![head(12, 'b')],
            "a head already held is not contradicted twice"
        );
        // However many heads follow, the held ones stay.
        for seq in 13..200 {
            kept.observe(head(seq, 'd'), false, &[], 4);
        }
        assert!(kept.heads.len() <= MAX_HEADS);
        assert!(kept.heads.iter().any(|k| k.head == head(12, 'a') && k.held));
        assert!(kept.heads.iter().any(|k| k.head == head(12, 'b') && k.held));
    }

    #[test]
    fn a_longer_log_the_member_finds_at_odds_with_the_kept_heads_contradicts_them() {
        let mut kept = KeptHeads::default();
        kept.observe(head(10, 'a'), false, &[], 0);
        kept.observe(head(20, 'a'), true, &[], 1);
        // Rewritten and made longer: the seqs alone look like progress.
        assert!(kept
            .observe(head(25, 'b'), false, &[], 2)
            .contradicts
            .is_empty());
        let reported = kept.observe(head(25, 'b'), false, &[20], 3);
        assert!(reported.changed && reported.line);
        assert_eq!(reported.contradicts, vec![head(20, 'a')]);
        assert!(kept.heads.iter().any(|k| k.head == head(20, 'a') && k.held));
        assert_eq!(kept.latest(), Some(&head(25, 'b')), "the head is kept once");
        assert_eq!(kept.heads.len(), 3);
    }

    #[test]
    fn thinning_keeps_the_oldest_the_recent_and_a_spread() {
        let mut kept = KeptHeads::default();
        for seq in 1..=1_000u64 {
            kept.observe(head(seq * 10, 'a'), false, &[], 0);
        }
        assert_eq!(kept.heads.len(), MAX_HEADS);
        assert_eq!(kept.heads[0].head.seq, 10, "the oldest head stays");
        let recent: Vec<u64> = kept.heads[MAX_HEADS - RECENT..]
            .iter()
            .map(|k| k.head.seq)
            .collect();
        assert_eq!(recent, (993..=1_000).map(|s| s * 10).collect::<Vec<_>>());
        // Spread: no gap between kept heads is more than a few times the even spacing.
        let seqs: Vec<u64> = kept.heads.iter().map(|k| k.head.seq).collect();
        let widest = seqs.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(widest <= 4 * 10_000 / MAX_HEADS as u64, "{seqs:?}");
    }

    #[test]
    fn the_kept_heads_round_trip_through_the_store_without_the_line_clock() {
        let mut kept = KeptHeads::default();
        kept.observe(head(3, 'a'), false, &[], 5);
        let bytes = serde_json::to_vec(&kept).unwrap();
        let back: KeptHeads = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back.heads, kept.heads);
        assert_eq!(
            back.last_line_at, None,
            "a restarted lead writes the next head's line"
        );
    }
}
