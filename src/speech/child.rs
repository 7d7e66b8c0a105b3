//! One dictation's child (SPEC §16, seed 002): the argument list Collie built, none of the
//! bridge's `COLLIE_*` variables, nothing on standard input, a process group of its own, at most
//! [`MAX_OUTPUT`] bytes of output read, and SIGKILL to the whole group at the time limit.
//!
//! The group is signalled only while its leader is our unreaped child, so its id cannot belong to
//! anyone else: the child's exit is learnt with `waitid(WNOWAIT)`, which leaves it a zombie, the
//! group is swept once with SIGKILL (whatever the engine left running), and only then reaped.

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// The most a transcriber may print on standard output.
pub const MAX_OUTPUT: usize = 256 * 1024;
/// How much of its standard error is kept for the bridge's log when it fails.
const STDERR_KEPT: usize = 2048;

/// How a run went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// The program could not be started.
    #[error("start the speech engine: {0}")]
    Start(std::io::Error),
    /// It ran past the time limit and was killed.
    #[error("the speech engine ran past {0:?} and was stopped")]
    TimedOut(Duration),
    /// It printed more than [`MAX_OUTPUT`] and was killed.
    #[error("the speech engine printed more than {MAX_OUTPUT} bytes and was stopped")]
    TooMuchOutput,
    /// It exited with a failure.
    #[error("the speech engine failed ({status}): {stderr}")]
    Failed {
        /// Its exit status, in words.
        status: String,
        /// The start of its standard error.
        stderr: String,
    },
    /// Waiting for it failed.
    #[error("wait for the speech engine: {0}")]
    Wait(String),
}

/// Runs `argv` (the program first) and answers its standard output.
pub async fn run(argv: &[OsString], limit: Duration) -> Result<Vec<u8>, ChildError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(ChildError::Start(std::io::Error::other("no program")));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("COLLIE_") {
            cmd.env_remove(name);
        }
    }
    let mut child = cmd.spawn().map_err(ChildError::Start)?;
    let group = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .map(Pid::from_raw)
        .ok_or_else(|| ChildError::Wait("the speech engine has no pid".into()))?;
    // Declared after `child`, so dropped before it: a run dropped half-way (the device lost its
    // right, the request was cancelled) still kills the whole group while its leader is unreaped.
    let mut guard = Group {
        id: group,
        reaped: false,
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ChildError::Wait("the speech engine has no pipes".into()));
    };
    let outcome = tokio::time::timeout(limit, async {
        let (out, err) = tokio::join!(
            capped(stdout, MAX_OUTPUT, Excess::Fails),
            capped(stderr, STDERR_KEPT, Excess::Dropped)
        );
        match out {
            // Enough: it is stopped below, with the rest of its group.
            Err(Overflow) => Err(ChildError::TooMuchOutput),
            Ok(out) => {
                exited(group).await?;
                Ok((out, err.unwrap_or_else(|Overflow| Vec::new())))
            }
        }
    })
    .await;
    // Sweep the group while the leader is unreaped (see the module docs); then reap.
    guard.sweep();
    let status = reap(&mut child).await?;
    guard.reaped = true;
    let (out, err) = match outcome {
        Err(_) => return Err(ChildError::TimedOut(limit)),
        Ok(result) => result?,
    };
    if !status.success() {
        return Err(ChildError::Failed {
            status: status.to_string(),
            stderr: String::from_utf8_lossy(&err).trim().to_owned(),
        });
    }
    Ok(out)
}

/// The child's process group, swept with SIGKILL unless its leader was reaped.
struct Group {
    id: Pid,
    reaped: bool,
}

impl Group {
    fn sweep(&self) {
        if !self.reaped {
            let _ = killpg(self.id, Signal::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.sweep();
    }
}

/// More than the cap arrived.
struct Overflow;

/// What happens to bytes past a cap.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Excess {
    /// The read fails ([`Overflow`]): standard output, the answer.
    Fails,
    /// They are read and dropped (the engine must never block on a full pipe): standard error,
    /// kept only for the log.
    Dropped,
}

/// Reads `from` to its end, keeping at most `cap` bytes.
async fn capped(
    mut from: impl AsyncRead + Unpin,
    cap: usize,
    excess: Excess,
) -> Result<Vec<u8>, Overflow> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return Ok(kept),
            Ok(n) => n,
        };
        let room = cap.saturating_sub(kept.len());
        if n > room && excess == Excess::Fails {
            return Err(Overflow);
        }
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// Waits until the group's leader has exited, leaving it unreaped.
async fn exited(group: Pid) -> Result<(), ChildError> {
    tokio::task::spawn_blocking(move || {
        waitid(Id::Pid(group), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
    })
    .await
    .map_err(|e| ChildError::Wait(e.to_string()))?
    .map(|_| ())
    .map_err(|e| ChildError::Wait(e.to_string()))
}

async fn reap(child: &mut Child) -> Result<std::process::ExitStatus, ChildError> {
    child
        .wait()
        .await
        .map_err(|e| ChildError::Wait(e.to_string()))
}
