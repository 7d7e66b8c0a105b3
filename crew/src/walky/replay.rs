//! The replay guard: which message ids a verifier has accepted recently.
//!
//! A message is accepted only if its `sent_at` is within [`MAX_SKEW_SECS`] of the verifier's clock,
//! so an id whose `sent_at` has fallen behind `now - MAX_SKEW_SECS` can never be accepted again
//! anyway: the guard forgets it (pruned on every admission). Memory is thus bounded by the message
//! rate over a ten-minute window (a `sent_at` up to five minutes ahead stays five minutes after it).
//!
//! **The cap.** A hard cap bounds memory even under a flood. Past it the oldest ids (by `sent_at`)
//! are forgotten — and to stay safe, the guard then refuses every message whose `sent_at` is not
//! newer than the newest `sent_at` it forgot ([`WalkyError::TooOldToCheck`]): such a message
//! might be a replay of a forgotten one. A message older than everything remembered while the
//! guard is full is refused the same way instead of pushing a newer id out. So a flood can delay
//! genuine messages by making them look old, never let a replay through.
//!
//! **A clock that steps back.** Pruning at `now` forgets everything older than `now -
//! MAX_SKEW_SECS`; the guard remembers that line too, so if a later `now` is smaller, messages
//! older than the line are refused rather than checked against a memory that no longer holds them.

use std::collections::{BTreeSet, HashMap};

use super::{MessageId, WalkyError, MAX_SKEW_SECS};

/// Recently accepted message ids, for one verifier. Pure: the caller passes `now`.
#[derive(Debug, Clone)]
pub struct ReplayGuard {
    /// Accepted ids and their `sent_at`.
    seen: HashMap<MessageId, i64>,
    /// The same entries ordered oldest first, to prune and to evict.
    order: BTreeSet<(i64, MessageId)>,
    cap: usize,
    /// Every message with `sent_at <= floor` may have been forgotten; such messages are refused.
    floor: i64,
}

impl ReplayGuard {
    /// A guard remembering at most `cap` ids (at least one).
    pub fn new(cap: usize) -> Self {
        Self {
            seen: HashMap::new(),
            order: BTreeSet::new(),
            cap: cap.max(1),
            floor: i64::MIN,
        }
    }

    /// Accepts `id` sent at `sent_at` and remembers it, or says why not: [`WalkyError::Skew`] when
    /// `sent_at` is more than [`MAX_SKEW_SECS`] from `now`, [`WalkyError::Replayed`] when the id
    /// was accepted before, [`WalkyError::TooOldToCheck`] when it is older than the guard's memory
    /// (see the module docs). A refusal changes nothing but pruning.
    pub fn admit(&mut self, id: MessageId, sent_at: i64, now: i64) -> Result<(), WalkyError> {
        if now.abs_diff(sent_at) > MAX_SKEW_SECS.unsigned_abs() {
            return Err(WalkyError::Skew { id, sent_at, now });
        }
        self.prune(now);
        if self.seen.contains_key(&id) {
            return Err(WalkyError::Replayed { id });
        }
        if sent_at <= self.floor {
            return Err(WalkyError::TooOldToCheck { id });
        }
        if self.seen.len() >= self.cap {
            match self.order.first() {
                Some(&oldest) if (sent_at, id) < oldest => {
                    return Err(WalkyError::TooOldToCheck { id });
                }
                _ => {}
            }
        }
        self.seen.insert(id, sent_at);
        self.order.insert((sent_at, id));
        while self.seen.len() > self.cap {
            let Some((forgotten_at, forgotten)) = self.order.pop_first() else {
                break;
            };
            self.seen.remove(&forgotten);
            self.floor = self.floor.max(forgotten_at);
        }
        Ok(())
    }

    /// Forgets the ids no message can be accepted with any more at `now`.
    pub fn prune(&mut self, now: i64) {
        let cutoff = now.saturating_sub(MAX_SKEW_SECS);
        self.floor = self.floor.max(cutoff.saturating_sub(1));
        while let Some(&(sent_at, id)) = self.order.first() {
            if sent_at >= cutoff {
                break;
            }
            self.order.pop_first();
            self.seen.remove(&id);
        }
    }

    /// Whether `id` is remembered.
    pub fn contains(&self, id: &MessageId) -> bool {
        self.seen.contains_key(id)
    }

    /// How many ids are remembered.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no id is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// The most ids the guard remembers.
    pub fn cap(&self) -> usize {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000;

    fn id(n: u8) -> MessageId {
        MessageId::from([n; 16])
    }

    #[test]
    fn admits_once_and_refuses_the_replay() {
        let mut guard = ReplayGuard::new(10);
        guard.admit(id(1), NOW, NOW).unwrap();
        assert_eq!(
            guard.admit(id(1), NOW, NOW + 1),
            Err(WalkyError::Replayed { id: id(1) })
        );
        assert!(guard.contains(&id(1)));
        assert_eq!(guard.len(), 1);
    }

    #[test]
    fn refuses_outside_the_skew_without_remembering() {
        let mut guard = ReplayGuard::new(10);
        let old = NOW - MAX_SKEW_SECS - 1;
        assert_eq!(
            guard.admit(id(1), old, NOW),
            Err(WalkyError::Skew {
                id: id(1),
                sent_at: old,
                now: NOW
            })
        );
        assert!(guard.is_empty());
        guard.admit(id(2), NOW - MAX_SKEW_SECS, NOW).unwrap();
        guard.admit(id(3), NOW + MAX_SKEW_SECS, NOW).unwrap();
        // Extreme values do not overflow.
        assert!(matches!(
            guard.admit(id(4), i64::MIN, i64::MAX),
            Err(WalkyError::Skew { .. })
        ));
    }

    #[test]
    fn forgets_ids_once_the_skew_refuses_them_anyway() {
        let mut guard = ReplayGuard::new(10);
        guard.admit(id(1), NOW, NOW).unwrap();
        guard.admit(id(2), NOW + 100, NOW + 100).unwrap();
        // At NOW + 300 id 1 is still acceptable by skew, so it is still remembered.
        guard.prune(NOW + MAX_SKEW_SECS);
        assert!(guard.contains(&id(1)));
        // One second later it is not, and is forgotten.
        guard
            .admit(id(3), NOW + MAX_SKEW_SECS + 1, NOW + MAX_SKEW_SECS + 1)
            .unwrap();
        assert!(!guard.contains(&id(1)));
        assert!(guard.contains(&id(2)));
        assert_eq!(guard.len(), 2);
        // Its replay is now refused by the skew check.
        assert!(matches!(
            guard.admit(id(1), NOW, NOW + MAX_SKEW_SECS + 1),
            Err(WalkyError::Skew { .. })
        ));
    }

    #[test]
    fn a_future_sent_at_is_remembered_until_it_is_too_old() {
        let mut guard = ReplayGuard::new(10);
        guard.admit(id(1), NOW + MAX_SKEW_SECS, NOW).unwrap();
        guard.prune(NOW + 2 * MAX_SKEW_SECS);
        assert!(guard.contains(&id(1)));
        assert_eq!(
            guard.admit(id(1), NOW + MAX_SKEW_SECS, NOW + 2 * MAX_SKEW_SECS),
            Err(WalkyError::Replayed { id: id(1) })
        );
        guard.prune(NOW + 2 * MAX_SKEW_SECS + 1);
        assert!(guard.is_empty());
    }

    #[test]
    fn past_the_cap_the_oldest_are_forgotten_and_older_messages_refused() {
        let mut guard = ReplayGuard::new(3);
        for n in 0..3 {
            guard.admit(id(n), NOW + i64::from(n), NOW).unwrap();
        }
        // A fourth pushes out the oldest (sent at NOW)...
        guard.admit(id(3), NOW + 3, NOW).unwrap();
        assert_eq!(guard.len(), 3);
        assert!(!guard.contains(&id(0)));
        // ...whose replay is still refused, though the guard no longer knows its id.
        assert_eq!(
            guard.admit(id(0), NOW, NOW),
            Err(WalkyError::TooOldToCheck { id: id(0) })
        );
        // So is any new message not newer than what was forgotten.
        assert_eq!(
            guard.admit(id(9), NOW, NOW),
            Err(WalkyError::TooOldToCheck { id: id(9) })
        );
        // While full, a message older than everything remembered does not push a newer id out.
        let mut full = ReplayGuard::new(2);
        full.admit(id(1), NOW, NOW).unwrap();
        full.admit(id(2), NOW + 1, NOW).unwrap();
        assert_eq!(
            full.admit(id(0), NOW - 1, NOW),
            Err(WalkyError::TooOldToCheck { id: id(0) })
        );
        assert!(full.contains(&id(1)) && full.contains(&id(2)));
        // Newer messages still get in.
        guard.admit(id(4), NOW + 4, NOW).unwrap();
        assert_eq!(guard.len(), 3);
    }

    #[test]
    fn a_clock_stepping_back_does_not_reopen_forgotten_ids() {
        let mut guard = ReplayGuard::new(10);
        guard.admit(id(1), NOW, NOW).unwrap();
        // An hour later id 1 is pruned...
        guard.prune(NOW + 3600);
        assert!(guard.is_empty());
        // ...and if the clock then steps back to NOW, its replay is refused all the same.
        assert_eq!(
            guard.admit(id(1), NOW, NOW),
            Err(WalkyError::TooOldToCheck { id: id(1) })
        );
    }

    #[test]
    fn a_zero_cap_means_one() {
        let mut guard = ReplayGuard::new(0);
        assert_eq!(guard.cap(), 1);
        guard.admit(id(1), NOW, NOW).unwrap();
        assert_eq!(
            guard.admit(id(1), NOW, NOW),
            Err(WalkyError::Replayed { id: id(1) })
        );
    }
}
