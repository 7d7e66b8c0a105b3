//! The one thread every tool guard is started from.
//!
//! A guard asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), and Linux takes
//! the parent to be the *thread* that forked it: a guard forked by a thread that later exits is
//! signalled then, and ends its command, though the bridge lives on. The runtime's threads come
//! and go — a worker that waits for the disk hands its queue to another thread and retires later
//! (`crate::disk`) — so guards are forked by one thread kept for the life of the process.

use std::io;
use std::sync::mpsc;
use std::sync::OnceLock;

use tokio::process::{Child, Command};

/// A command to start, and where its answer goes.
type Job = (
    Command,
    tokio::runtime::Handle,
    mpsc::SyncSender<io::Result<Child>>,
);

static FORKER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

/// Starts `cmd` from the forker thread (started on first use), registered with the caller's
/// runtime. Must be called from within a runtime, like [`Command::spawn`].
pub(crate) fn spawn(cmd: Command) -> io::Result<Child> {
    let gone = || io::Error::other("the thread that starts tool guards is gone");
    let handle = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
    let jobs = FORKER.get_or_init(start).as_ref().ok_or_else(gone)?;
    let (answer, answered) = mpsc::sync_channel(1);
    jobs.send((cmd, handle, answer)).map_err(|_| gone())?;
    answered.recv().map_err(|_| gone())?
}

/// The forker thread: it serves jobs until the process ends (its sender lives in a static).
fn start() -> Option<mpsc::Sender<Job>> {
    let (jobs, queue) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("collie-forker".into())
        .spawn(move || {
            for (mut cmd, handle, answer) in queue {
                // The child is registered with the caller's runtime (its exit is seen there).
                let _entered = handle.enter();
                let _ = answer.send(cmd.spawn());
            }
        })
        .ok()
        .map(|_| jobs)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// `setpriv --pdeathsig TERM`, asking for SIGTERM at its parent's death as the guard does,
    /// then a line on stdout once it asked, then a minute's sleep.
    fn asks_for_its_parents_death() -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--pdeathsig",
            "TERM",
            "sh",
            "-c",
            "echo asked; exec sleep 60",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
        cmd
    }

    /// Starts a child with `start` from a thread of its own that ends once the child asked for its
    /// parent's death (had it ended before, there would be no parent to outlive).
    fn from_a_passing_thread(
        handle: &tokio::runtime::Handle,
        start: fn(Command) -> io::Result<Child>,
    ) -> Child {
        use tokio::io::AsyncBufReadExt;
        let handle = handle.clone();
        std::thread::spawn(move || {
            let _entered = handle.enter();
            let mut child = start(asks_for_its_parents_death()).expect("spawn");
            let stdout = child.stdout.take().expect("stdout");
            let mut line = String::new();
            handle
                .block_on(tokio::io::BufReader::new(stdout).read_line(&mut line))
                .expect("read");
            assert_eq!(line, "asked\n");
            child
        })
        .join()
        .expect("thread")
    }

    /// Waits up to 10 s for `child` to exit; whether it did.
    async fn exits(child: &mut Child) -> bool {
        tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
    }

    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        // Started straight from a thread that then ends, the child is signalled: the kernel's rule
        // this module exists for (if it did not hold here, the test would prove nothing).
        let mut direct = from_a_passing_thread(rt.handle(), |mut cmd| cmd.spawn());
        // Through the forker, from a thread that ends likewise, it lives on.
        let mut forked = from_a_passing_thread(rt.handle(), spawn);
        rt.block_on(async {
            let began = Instant::now();
            assert!(
                exits(&mut direct).await,
                "the directly started child was signalled"
            );
            // Given as long again as the signal took to arrive, and at least a moment.
            let grace = began.elapsed().max(Duration::from_millis(200));
            assert!(
                tokio::time::timeout(grace, forked.wait()).await.is_err(),
                "the forked child is still running"
            );
            forked.kill().await.expect("kill");
        });
    }
}
