//! Waiting for the disk without holding up the bridge's other work.
//!
//! The bridge runs its tasks on one worker thread (decision 0061): a request hops between its
//! tasks without waking a second thread, which on a small machine costs more than the work. But a
//! task that waits for the disk on that thread — an `fdatasync` of the audit log before every
//! write (a fifth of a millisecond here, far more on a busy disk) — would hold up every other
//! request for as long. [`wait`] runs such a call with the worker's queue handed to another thread
//! meanwhile (`tokio::task::block_in_place`), so eight phones typing at once are audited in
//! parallel again instead of one after the other.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `f`, which blocks on the disk. On a worker of the bridge's multi-threaded runtime the
/// other tasks go on on another thread while it blocks; anywhere else (a blocking thread, the
/// command line, a single-threaded test runtime, where `block_in_place` is not allowed) `f`
/// simply runs.
pub fn wait<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While one task waits for the disk, another task of a one-worker runtime still runs: without
    /// the hand-over the second task could not answer before the first one's wait ended.
    #[test]
    fn another_task_runs_while_one_waits() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let waiter = tokio::spawn(async move {
                // Blocks until the other task has run; with the worker held it never would.
                wait(|| rx.recv_timeout(std::time::Duration::from_secs(10)))
            });
            let other = tokio::spawn(async move { tx.send(()) });
            other.await.expect("other").expect("sent");
            assert!(waiter.await.expect("waiter").is_ok(), "the other task ran");
        });
    }

    #[test]
    fn outside_a_runtime_and_on_a_current_thread_runtime_it_just_runs() {
        assert_eq!(wait(|| 7), 7);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(rt.block_on(async { wait(|| 8) }), 8);
    }
}
