//! Running a short blocking call (an `fdatasync`, a sled flush) from an actor without stalling
//! the runtime worker it happens to run on.
//!
//! The audit and walky actors must answer only after their lines are durable, so they do block; on
//! the multi-threaded runtime (the bridge) [`tokio::task::block_in_place`] hands this worker's
//! other tasks to another worker meanwhile. On a current-thread runtime (some tests) there is no
//! other worker to hand them to, and the call simply runs.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `f`, letting the runtime move other tasks off this worker while it blocks.
pub fn run<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn runs_on_a_current_thread_runtime() {
        assert_eq!(run(|| 2 + 2), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_on_a_multi_thread_runtime() {
        assert_eq!(run(|| 2 + 2), 4);
    }

    #[test]
    fn runs_outside_a_runtime() {
        assert_eq!(run(|| 2 + 2), 4);
    }
}
