//! Counts of reads, writes and denials over the last seven days for `/api/health` (SPEC §4.7).
//!
//! Kept in memory as one bucket per UTC day, and saved in the store (table `meta`, key
//! [`STORE_KEY`]) a few seconds after they change and when the bridge stops, so a restart keeps
//! them; a crash loses at most the last few seconds. The saver waits for [`Counters::changed`],
//! so counts that do not change cost no wake-up. The counts name no pane, text or person.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

const DAYS: usize = 7;

/// Where the counts are kept in the store.
pub const STORE_KEY: &str = "http.counts_7d";

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Bucket {
    day: i64,
    reads: u64,
    writes: u64,
    denied: u64,
}

/// The seven-day counters.
#[derive(Debug, Default)]
pub struct Counters {
    buckets: Mutex<[Bucket; DAYS]>,
    /// Changed since the last [`Counters::take_changes`].
    dirty: AtomicBool,
    /// Told when `dirty` turns true.
    changed: Notify,
}

/// Totals over the last seven days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Authenticated reads.
    pub reads: u64,
    /// Authenticated writes.
    pub writes: u64,
    /// Refused requests.
    pub denied: u64,
}

fn today() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp() / 86_400
}

impl Counters {
    fn bump(&self, day: i64, f: impl FnOnce(&mut Bucket)) {
        if let Ok(mut b) = self.buckets.lock() {
            let slot = &mut b[day.rem_euclid(DAYS as i64) as usize];
            if slot.day != day {
                *slot = Bucket {
                    day,
                    ..Bucket::default()
                };
            }
            f(slot);
            if !self.dirty.swap(true, Ordering::Relaxed) {
                self.changed.notify_one();
            }
        }
    }

    /// Returns once the counts changed since the last [`Counters::take_changes`] (at once if
    /// they already had).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The buckets to save, if anything changed since the last call.
    pub fn take_changes(&self) -> Option<Vec<u8>> {
        if !self.dirty.swap(false, Ordering::Relaxed) {
            return None;
        }
        let buckets = *self.buckets.lock().ok()?;
        serde_json::to_vec(&buckets.to_vec()).ok()
    }

    /// Counters holding what [`Counters::take_changes`] saved; unreadable bytes start from zero.
    pub fn restored(bytes: Option<&[u8]>) -> Counters {
        let counters = Counters::default();
        let saved: Vec<Bucket> = bytes
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        if let Ok(mut buckets) = counters.buckets.lock() {
            for b in saved {
                let slot = &mut buckets[b.day.rem_euclid(DAYS as i64) as usize];
                if b.day > slot.day {
                    *slot = b;
                }
            }
        }
        counters
    }

    /// One authenticated read.
    pub fn read(&self) {
        self.bump(today(), |b| b.reads += 1);
    }
    /// One authenticated write.
    pub fn write(&self) {
        self.bump(today(), |b| b.writes += 1);
    }
    /// One refusal.
    pub fn denied(&self) {
        self.bump(today(), |b| b.denied += 1);
    }

    /// Totals for the seven days ending `day` (UTC days since the epoch).
    fn totals_at(&self, day: i64) -> Totals {
        let mut t = Totals {
            reads: 0,
            writes: 0,
            denied: 0,
        };
        if let Ok(b) = self.buckets.lock() {
            for x in b
                .iter()
                .filter(|x| x.day > day - DAYS as i64 && x.day <= day)
            {
                t.reads += x.reads;
                t.writes += x.writes;
                t.denied += x.denied;
            }
        }
        t
    }

    /// Totals for the last seven days.
    pub fn totals(&self) -> Totals {
        self.totals_at(today())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_counts_come_back() {
        let c = Counters::default();
        assert_eq!(c.take_changes(), None);
        c.bump(100, |b| b.reads += 2);
        c.bump(101, |b| b.denied += 1);
        let saved = c.take_changes().expect("changed");
        assert_eq!(c.take_changes(), None, "nothing new");
        let back = Counters::restored(Some(&saved));
        assert_eq!(back.totals_at(101), c.totals_at(101));
        assert_eq!(Counters::restored(Some(b"garbage")).totals_at(101).reads, 0);
        assert_eq!(Counters::restored(None).totals_at(101).reads, 0);
    }

    #[test]
    fn old_days_fall_out() {
        let c = Counters::default();
        c.bump(100, |b| b.reads += 2);
        c.bump(103, |b| b.writes += 1);
        assert_eq!(
            c.totals_at(103),
            Totals {
                reads: 2,
                writes: 1,
                denied: 0
            }
        );
        assert_eq!(
            c.totals_at(107),
            Totals {
                reads: 0,
                writes: 1,
                denied: 0
            }
        );
        c.bump(107, |b| b.denied += 1); // reuses day 100's slot
        assert_eq!(
            c.totals_at(107),
            Totals {
                reads: 0,
                writes: 1,
                denied: 1
            }
        );
    }
}
