//! The global IO bound: a counting semaphore on file reads shared by every search. A walker
//! thread takes a permit before it opens a file and gives it back when it has read it, so however
//! many searches run, no more than `io_permits` files are being read at once (decision 0031 says
//! why a semaphore rather than a bytes-per-second budget).

use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// How long a waiting thread sleeps before it checks again whether its search was stopped (a
/// stop also wakes every waiter at once; this is the fallback for a search's own deadline).
const RECHECK: Duration = Duration::from_millis(20);

/// What the gate has seen, for tests and the bridge's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoStats {
    /// Files that may be read at once.
    pub permits: usize,
    /// Files being read now.
    pub in_use: usize,
    /// Most files read at once so far.
    pub peak: usize,
    /// Times a thread had to wait for a permit.
    pub waits: u64,
    /// Files read so far.
    pub reads: u64,
}

/// The semaphore.
#[derive(Debug)]
pub(crate) struct IoGate {
    stats: Mutex<IoStats>,
    freed: Condvar,
}

/// A permit; dropping it gives it back.
pub(crate) struct Permit<'a> {
    gate: &'a IoGate,
}

impl IoGate {
    pub(crate) fn new(permits: usize) -> IoGate {
        IoGate {
            stats: Mutex::new(IoStats {
                permits: permits.max(1),
                ..IoStats::default()
            }),
            freed: Condvar::new(),
        }
    }

    /// Waits for a permit; answers `None` as soon as `stop()` says the search is over.
    pub(crate) fn acquire(&self, stop: impl Fn() -> bool) -> Option<Permit<'_>> {
        let mut s = self.stats.lock();
        let mut waited = false;
        while s.in_use >= s.permits {
            if !waited {
                s.waits += 1;
                waited = true;
            }
            if stop() {
                return None;
            }
            self.freed.wait_for(&mut s, RECHECK);
        }
        s.in_use += 1;
        s.reads += 1;
        s.peak = s.peak.max(s.in_use);
        Some(Permit { gate: self })
    }

    /// Wakes every waiter (a search was stopped) so it can see it and leave.
    pub(crate) fn wake_all(&self) {
        self.freed.notify_all();
    }

    pub(crate) fn stats(&self) -> IoStats {
        *self.stats.lock()
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut s = self.gate.stats.lock();
        s.in_use = s.in_use.saturating_sub(1);
        drop(s);
        self.gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_hands_out_more_than_its_permits() {
        let gate = IoGate::new(2);
        let a = gate.acquire(|| false);
        let b = gate.acquire(|| false);
        assert!(a.is_some() && b.is_some());
        // A third waits; told that its search stopped, it leaves without a permit.
        assert!(gate.acquire(|| true).is_none());
        assert_eq!(gate.stats().in_use, 2);
        drop(a);
        assert!(gate.acquire(|| false).is_some());
        let s = gate.stats();
        assert_eq!((s.peak, s.reads, s.waits), (2, 3, 1));
    }
}
