//! The lead's short-lived memory of walky results and deliveries (SPEC §9): in memory only, gone
//! after [`RECORD_TTL_SECS`], and bounded by a cap so that a flood of messages cannot grow it.
//!
//! Nothing here is durable on purpose: a result that arrives after its record expired (or after a
//! restart) is simply not relayed, and the sender's log shows the message without an outcome. The
//! cap drops the oldest record first and counts every drop ([`Records::dropped`]), so a lead that
//! loses records before their time can say so instead of failing silently.

use std::collections::{BTreeSet, HashMap};

use super::{MessageId, RECORD_TTL_SECS};

#[derive(Debug, Clone)]
struct Entry<T> {
    value: T,
    inserted_at: i64,
    seq: u64,
}

/// Records keyed by message id, expiring [`RECORD_TTL_SECS`] after insertion. Pure: the caller
/// passes `now`.
#[derive(Debug, Clone)]
pub struct Records<T> {
    entries: HashMap<MessageId, Entry<T>>,
    /// `(inserted_at, seq, id)`, oldest first; `seq` orders insertions within one second.
    order: BTreeSet<(i64, u64, MessageId)>,
    next_seq: u64,
    cap: usize,
    dropped: u64,
}

impl<T> Records<T> {
    /// Empty records holding at most `cap` entries (at least one).
    pub fn new(cap: usize) -> Self {
        Self {
            entries: HashMap::new(),
            order: BTreeSet::new(),
            next_seq: 0,
            cap: cap.max(1),
            dropped: 0,
        }
    }

    /// Stores `value` for `id` at `now`, replacing (and returning) an earlier value for the same
    /// id and restarting its time to live. Expired records are pruned first; if the records are
    /// still full, the oldest is dropped and counted.
    pub fn insert(&mut self, id: MessageId, value: T, now: i64) -> Option<T> {
        self.prune(now);
        let previous = self.remove(&id);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(
            id,
            Entry {
                value,
                inserted_at: now,
                seq,
            },
        );
        self.order.insert((now, seq, id));
        while self.entries.len() > self.cap {
            let Some((_, _, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
            self.dropped += 1;
        }
        previous
    }

    /// The record for `id`, unless it has expired at `now`.
    pub fn get(&self, id: &MessageId, now: i64) -> Option<&T> {
        self.entries
            .get(id)
            .filter(|e| !expired(e.inserted_at, now))
            .map(|e| &e.value)
    }

    /// Removes and returns the record for `id`, expired or not.
    pub fn remove(&mut self, id: &MessageId) -> Option<T> {
        let entry = self.entries.remove(id)?;
        self.order.remove(&(entry.inserted_at, entry.seq, *id));
        Some(entry.value)
    }

    /// Drops every record expired at `now`; returns how many. Expiry is not counted in
    /// [`Records::dropped`]: that is for records lost to the cap.
    pub fn prune(&mut self, now: i64) -> usize {
        let mut pruned = 0;
        while let Some(&(inserted_at, seq, id)) = self.order.first() {
            if !expired(inserted_at, now) {
                break;
            }
            self.order.remove(&(inserted_at, seq, id));
            self.entries.remove(&id);
            pruned += 1;
        }
        pruned
    }

    /// Records held, including expired ones not yet pruned.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many records the cap dropped before their time, since creation.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The most records held at once.
    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// Whether a record inserted at `inserted_at` has lived its [`RECORD_TTL_SECS`] at `now`.
fn expired(inserted_at: i64, now: i64) -> bool {
    now.saturating_sub(inserted_at) >= RECORD_TTL_SECS
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000;

    fn id(n: u8) -> MessageId {
        MessageId::from([n; 16])
    }

    #[test]
    fn a_record_lives_ten_minutes() {
        let mut records = Records::new(10);
        assert_eq!(records.insert(id(1), "delivered", NOW), None);
        assert_eq!(records.get(&id(1), NOW), Some(&"delivered"));
        assert_eq!(
            records.get(&id(1), NOW + RECORD_TTL_SECS - 1),
            Some(&"delivered")
        );
        assert_eq!(records.get(&id(1), NOW + RECORD_TTL_SECS), None);
        assert_eq!(records.get(&id(2), NOW), None);
        // Expired but not yet pruned: still held, not shown.
        assert_eq!(records.len(), 1);
        assert_eq!(records.prune(NOW + RECORD_TTL_SECS), 1);
        assert!(records.is_empty());
        assert_eq!(records.dropped(), 0);
    }

    #[test]
    fn prune_keeps_the_live_ones() {
        let mut records = Records::new(10);
        records.insert(id(1), 1, NOW);
        records.insert(id(2), 2, NOW + 100);
        records.insert(id(3), 3, NOW + 200);
        assert_eq!(records.prune(NOW + RECORD_TTL_SECS + 100), 2);
        assert_eq!(records.len(), 1);
        assert_eq!(records.get(&id(3), NOW + RECORD_TTL_SECS + 100), Some(&3));
    }

    #[test]
    fn past_the_cap_the_oldest_is_dropped_and_counted() {
        let mut records = Records::new(2);
        records.insert(id(1), 1, NOW);
        records.insert(id(2), 2, NOW);
        records.insert(id(3), 3, NOW);
        assert_eq!(records.len(), 2);
        assert_eq!(records.dropped(), 1);
        assert_eq!(records.get(&id(1), NOW), None);
        assert_eq!(records.get(&id(2), NOW), Some(&2));
        assert_eq!(records.get(&id(3), NOW), Some(&3));
        // Expired records make room before anything live is dropped.
        records.insert(id(4), 4, NOW + RECORD_TTL_SECS);
        assert_eq!(records.len(), 1);
        assert_eq!(records.dropped(), 1);
    }

    #[test]
    fn replacing_a_record_restarts_its_time_and_drops_nothing() {
        let mut records = Records::new(2);
        records.insert(id(1), 1, NOW);
        records.insert(id(2), 2, NOW + 1);
        assert_eq!(records.insert(id(1), 10, NOW + 2), Some(1));
        assert_eq!(records.len(), 2);
        assert_eq!(records.dropped(), 0);
        // id 2 is now the oldest, so it goes first.
        records.insert(id(3), 3, NOW + 3);
        assert_eq!(records.get(&id(2), NOW + 3), None);
        assert_eq!(records.get(&id(1), NOW + RECORD_TTL_SECS + 1), Some(&10));
        assert_eq!(records.remove(&id(1)), Some(10));
        assert_eq!(records.remove(&id(1)), None);
        assert_eq!(records.len(), 1);
    }

    #[test]
    fn a_zero_cap_means_one() {
        let mut records = Records::new(0);
        assert_eq!(records.cap(), 1);
        records.insert(id(1), (), NOW);
        assert_eq!(records.get(&id(1), NOW), Some(&()));
    }
}
