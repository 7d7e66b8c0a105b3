//! Bounded waiting: every wait of the benches has a deadline, so a bridge that never answers
//! fails the run instead of hanging it.

use std::time::{Duration, Instant};

/// Polls `f` every 20 ms until it returns `Some` or `timeout` passes.
pub(crate) fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
