//! The restart budget: the pure rule behind "more than 5 restarts of one child within 60 s stops the
//! bridge" (SPEC §1). It keeps the recent restart times of one child and answers whether one more
//! restart is allowed at `now`. No clock is read here; the supervisor passes `now`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Most restarts of one child allowed inside [`RESTART_WINDOW`].
pub const MAX_RESTARTS: usize = 5;
/// The sliding window the restart count is taken over.
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// Recent restart times of one child.
#[derive(Debug, Default, Clone)]
pub struct RestartBudget {
    recent: VecDeque<Instant>,
    total: usize,
}

/// What the supervisor should do with a failed child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Start the child again.
    Restart,
    /// The child failed too often: stop the bridge.
    GiveUp,
}

impl RestartBudget {
    /// Records a failure at `now` and says whether the child may be restarted.
    ///
    /// The sixth failure inside one window gives up; failures older than the window are forgotten,
    /// so a child that fails once an hour is restarted forever.
    pub fn on_failure(&mut self, now: Instant) -> Verdict {
        while let Some(first) = self.recent.front() {
            if now.duration_since(*first) >= RESTART_WINDOW {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= MAX_RESTARTS {
            return Verdict::GiveUp;
        }
        self.recent.push_back(now);
        self.total += 1;
        Verdict::Restart
    }

    /// Restarts granted since the child first started.
    pub fn total(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_restarts_allowed_sixth_gives_up() {
        let t0 = Instant::now();
        let mut b = RestartBudget::default();
        for i in 0..5 {
            assert_eq!(b.on_failure(t0 + Duration::from_secs(i)), Verdict::Restart);
        }
        assert_eq!(b.on_failure(t0 + Duration::from_secs(10)), Verdict::GiveUp);
    }

    #[test]
    fn old_failures_fall_out_of_the_window() {
        let t0 = Instant::now();
        let mut b = RestartBudget::default();
        for i in 0..5 {
            assert_eq!(b.on_failure(t0 + Duration::from_secs(i)), Verdict::Restart);
        }
        // 60 s after the first failure it no longer counts.
        assert_eq!(b.on_failure(t0 + Duration::from_secs(60)), Verdict::Restart);
        assert_eq!(b.on_failure(t0 + Duration::from_secs(61)), Verdict::Restart);
        assert_eq!(b.on_failure(t0 + Duration::from_secs(61)), Verdict::GiveUp);
    }
}
