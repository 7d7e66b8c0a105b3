//! When a member sends its audit chain head to the lead (pure: `now` is an argument).
//!
//! The rule: the head is sent
//! - at the start of each run, as soon as the link is up (the lead sees at once where this run's
//!   log stands — a log rewritten while the bridge was stopped shows there as a contradiction);
//! - once [`EVERY_LINES`] lines were written since the last head sent;
//! - [`EVERY`] after the first line not yet sent, so a slowly written log is witnessed every minute
//!   while lines are written, and an idle one costs nothing;
//! - when the bridge stops cleanly (by the shell, not here: [`HeadSchedule::stopping`]).
//!
//! A send that fails (no link, the lead busy) is retried after [`RETRY`]; lines written meanwhile
//! only move the head the retry sends.

use std::time::{Duration, Instant};

use crate::audit::ChainTail;

/// A head is sent at the latest once this many lines were written since the last one sent.
pub const EVERY_LINES: u64 = 10;

/// A head is sent at the latest this long after the first line it covers was written.
pub const EVERY: Duration = Duration::from_secs(60);

/// A failed send is tried again after this long.
pub const RETRY: Duration = Duration::from_secs(5);

/// The member's side: the current head, what the lead has, and when to send.
#[derive(Debug, Clone, Default)]
pub struct HeadSchedule {
    head: Option<ChainTail>,
    sent: Option<ChainTail>,
    /// When the first line not yet sent was seen (or the run started).
    unsent_since: Option<Instant>,
    retry_at: Option<Instant>,
}

impl HeadSchedule {
    /// A run that starts with `head` as its log's last line, at `now`.
    pub fn start(head: Option<ChainTail>, now: Instant) -> Self {
        let unsent_since = head.as_ref().map(|_| now);
        HeadSchedule {
            head,
            sent: None,
            unsent_since,
            retry_at: None,
        }
    }

    /// The log's last line is now `head`.
    pub fn line(&mut self, head: Option<ChainTail>, now: Instant) {
        if head == self.head {
            return;
        }
        if self.unsent_since.is_none() && head != self.sent {
            self.unsent_since = Some(now);
        }
        self.head = head;
    }

    /// When the head is due (`None`: nothing to send).
    pub fn due(&self) -> Option<Instant> {
        let head = self.head.as_ref()?;
        if self.sent.as_ref() == Some(head) {
            return None;
        }
        let since = self.unsent_since?;
        let at = match &self.sent {
            None => since,
            Some(sent) if head.seq.saturating_sub(sent.seq) >= EVERY_LINES => since,
            Some(_) => since + EVERY,
        };
        Some(match self.retry_at {
            Some(retry) => retry.max(at),
            None => at,
        })
    }

    /// The head to send at `now`, if it is due.
    pub fn to_send(&self, now: Instant) -> Option<ChainTail> {
        self.due().filter(|due| *due <= now)?;
        self.head.clone()
    }

    /// The lead kept `head`.
    pub fn sent(&mut self, head: ChainTail, now: Instant) {
        self.retry_at = None;
        self.unsent_since = (self.head.as_ref() != Some(&head)).then_some(now);
        self.sent = Some(head);
    }

    /// Sending failed at `now`.
    pub fn failed(&mut self, now: Instant) {
        self.retry_at = Some(now + RETRY);
    }

    /// The head to send as the bridge stops: the current one, unless the lead has it.
    pub fn stopping(&self) -> Option<ChainTail> {
        self.head.clone().filter(|h| self.sent.as_ref() != Some(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64) -> Option<ChainTail> {
        Some(ChainTail {
            seq,
            hash: format!("{seq:064x}"),
        })
    }

    #[test]
    fn a_run_sends_its_head_at_once_and_an_empty_log_nothing() {
        let t0 = Instant::now();
        assert_eq!(HeadSchedule::start(None, t0).due(), None);
        let s = HeadSchedule::start(head(7), t0);
        assert_eq!(s.to_send(t0), head(7));
    }

    #[test]
    fn ten_lines_send_at_once_fewer_wait_a_minute() {
        let t0 = Instant::now();
        let mut s = HeadSchedule::start(head(5), t0);
        s.sent(ChainTail::clone(head(5).as_ref().unwrap()), t0);
        assert_eq!(s.due(), None, "the lead has the head: nothing is due");
        let t1 = t0 + Duration::from_secs(3);
        s.line(head(6), t1);
        assert_eq!(s.due(), Some(t1 + EVERY), "one line waits a minute");
        for seq in 7..15 {
            s.line(head(seq), t1 + Duration::from_secs(seq));
            assert_eq!(s.to_send(t1 + Duration::from_secs(seq)), None, "{seq}");
        }
        let t2 = t1 + Duration::from_secs(20);
        s.line(head(15), t2);
        assert_eq!(
            s.to_send(t2),
            head(15),
            "the tenth line since the last head"
        );
        s.sent(ChainTail::clone(head(15).as_ref().unwrap()), t2);
        assert_eq!(s.due(), None);
    }

    #[test]
    fn a_minute_after_the_first_unsent_line_the_head_goes() {
        let t0 = Instant::now();
        let mut s = HeadSchedule::start(head(1), t0);
        s.sent(ChainTail::clone(head(1).as_ref().unwrap()), t0);
        let t1 = t0 + Duration::from_secs(100);
        s.line(head(2), t1);
        s.line(head(3), t1 + Duration::from_secs(50));
        assert_eq!(s.to_send(t1 + Duration::from_secs(59)), None);
        assert_eq!(s.to_send(t1 + EVERY), head(3));
    }

    #[test]
    fn lines_during_a_send_stay_due_and_a_failure_waits_for_the_retry() {
        let t0 = Instant::now();
        let mut s = HeadSchedule::start(head(10), t0);
        let sending = s.to_send(t0).unwrap();
        s.line(head(11), t0 + Duration::from_secs(1));
        s.sent(sending, t0 + Duration::from_secs(2));
        assert_eq!(s.due(), Some(t0 + Duration::from_secs(2) + EVERY));
        assert_eq!(
            s.stopping(),
            head(11),
            "a clean stop sends what the lead lacks"
        );

        let t1 = t0 + Duration::from_secs(200);
        s.failed(t1);
        assert_eq!(s.to_send(t1 + Duration::from_secs(1)), None);
        assert_eq!(s.to_send(t1 + RETRY), head(11));
    }

    #[test]
    fn nothing_is_sent_at_a_stop_the_lead_already_has() {
        let t0 = Instant::now();
        let mut s = HeadSchedule::start(head(4), t0);
        s.sent(ChainTail::clone(head(4).as_ref().unwrap()), t0);
        assert_eq!(s.stopping(), None);
    }
}
