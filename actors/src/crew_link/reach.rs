//! On a member: whether its link to the lead is up and since when, and whether it is the crew's
//! deputy. The link task writes the first, the bridge (which keeps the deputy's registry copy)
//! the second; the deputy's standby door reads both (SPEC §13: it stands in once the lead has
//! been out of reach for a while), and the link task reads the second to redial sooner.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// A deputy whose link to the lead broke redials at least this often, whatever its backoff says:
/// it must see the lead come back within the standby door's bound (a crew has one deputy, so
/// this adds no reconnect storm).
pub const DEPUTY_REDIAL: Duration = Duration::from_secs(2);

/// See the module docs; shared as an `Arc`.
#[derive(Debug)]
pub struct LeadReach {
    /// `(up, since)`.
    state: watch::Sender<(bool, Instant)>,
    deputy: AtomicBool,
}

impl Default for LeadReach {
    fn default() -> LeadReach {
        LeadReach::new()
    }
}

impl LeadReach {
    /// Out of reach since now (a bridge starting has not reached its lead yet).
    pub fn new() -> LeadReach {
        LeadReach {
            state: watch::channel((false, Instant::now())).0,
            deputy: AtomicBool::new(false),
        }
    }

    /// The link came up (`true`) or went down; a repeat of the current state changes nothing.
    pub fn set_up(&self, up: bool) {
        self.state.send_if_modified(|state| {
            let changed = state.0 != up;
            if changed {
                *state = (up, Instant::now());
            }
            changed
        });
    }

    /// A receiver that changes when the link comes up or goes down.
    pub fn watch(&self) -> watch::Receiver<(bool, Instant)> {
        self.state.subscribe()
    }

    /// Whether the link is up, and since when it has been as it is.
    pub fn get(&self) -> (bool, Instant) {
        *self.state.borrow()
    }

    /// This member is (`true`) or is no longer the deputy.
    pub fn set_deputy(&self, deputy: bool) {
        self.deputy.store(deputy, Ordering::Relaxed);
    }

    /// Whether this member is the deputy.
    pub fn is_deputy(&self) -> bool {
        self.deputy.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_time_is_that_of_the_last_change() {
        let reach = LeadReach::new();
        let (up, born) = reach.get();
        assert!(!up);
        tokio::time::advance(Duration::from_secs(3)).await;
        reach.set_up(false);
        assert_eq!(reach.get(), (false, born), "no change, no new time");
        reach.set_up(true);
        let (up, since) = reach.get();
        assert!(up);
        assert_eq!(since - born, Duration::from_secs(3));
    }
}
