//! Starting a command under the guard, and the three things the shell does to its process group:
//! notice that the guard exited without reaping it, signal the group, reap.
//!
//! The rule that keeps signals on our own processes: the group id is the guard's pid, and the
//! guard is our child. Until we reap it, its pid (and so the group id) cannot be handed to another
//! process, so a signal to the group reaches only what the session started. We learn that the guard
//! exited with `waitid(WNOWAIT)`, which leaves it unreaped, sweep the group once with SIGKILL (what
//! the command left behind in the background), and only then reap. After that the group is never
//! signalled again.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::signal::unix::{signal, SignalKind};

use super::core::ExitInfo;
use super::Launcher;
use crate::tools::ToolError;

/// A command started under its guard, in a process group of its own.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    /// The group: the guard's pid.
    pub(crate) group: Pid,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Starts `sh -c <command>` in `cwd` under the guard, with piped stdout and stderr and a piped
/// stdin when `with_stdin` (else /dev/null).
///
/// The guard starts in a new process group (`process_group(0)`, set before it runs, so there is
/// no moment when a signal to its group could miss it). It is spawned from the forker thread
/// ([`super::forker`]), which lives as long as the process: the guard's parent-death signal follows
/// the thread that forked it.
pub(crate) fn spawn(
    launcher: &Launcher,
    cwd: &Path,
    command: &str,
    with_stdin: bool,
) -> Result<Spawned, ToolError> {
    if !cwd.is_dir() {
        return Err(ToolError::BadArgument("cwd: not a folder".into()));
    }
    let mut cmd = Command::new(&launcher.program);
    cmd.args(&launcher.args)
        .arg(std::process::id().to_string())
        .arg("--")
        .args(&launcher.sandbox)
        .args(["sh", "-c", command])
        .current_dir(cwd)
        .stdin(if with_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = super::forker::spawn(cmd)
        .map_err(|e| ToolError::Internal(format!("start the tool guard: {e}")))?;
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| ToolError::Internal("the tool guard has no pid".into()))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::Internal("the tool guard has no pipes".into()));
    };
    Ok(Spawned {
        stdin: child.stdin.take(),
        child,
        group: Pid::from_raw(pid),
        stdout,
        stderr,
    })
}

/// Resolves once the guard `pid` has exited, leaving it unreaped (a zombie that holds its pid and
/// so the group id).
pub(crate) async fn exited(pid: Pid) {
    // Listen before the first look, so an exit between the look and the wait still wakes us.
    let mut sigchld = signal(SignalKind::child()).ok();
    loop {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => {}
            // Exited (or not our child at all, which cannot happen: then there is nothing to wait).
            _ => return,
        }
        match sigchld.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            // No SIGCHLD stream (cannot happen on a running runtime): look again shortly.
            None => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
}

/// Sends `sig` to the group. Only call while the guard is not yet reaped.
pub(crate) fn signal_group(group: Pid, sig: Signal) {
    if let Err(e) = killpg(group, sig) {
        if e != Errno::ESRCH {
            tracing::warn!(error = %e, "signal a session's process group");
        }
    }
}

/// How the guard ended.
pub(crate) fn exit_info(status: std::io::Result<ExitStatus>) -> ExitInfo {
    match status {
        Ok(s) => ExitInfo {
            code: s.code(),
            signal: s.signal(),
        },
        Err(_) => ExitInfo {
            code: None,
            signal: None,
        },
    }
}

/// Kills the group with SIGKILL when dropped while armed: a call whose future is dropped (its
/// client went away) must not leave its command running. Disarm before reaping.
pub(crate) struct GroupGuard {
    group: Pid,
    armed: bool,
}

impl GroupGuard {
    pub(crate) fn new(group: Pid) -> GroupGuard {
        GroupGuard { group, armed: true }
    }

    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            signal_group(self.group, Signal::SIGKILL);
        }
    }
}
