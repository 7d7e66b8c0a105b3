//! `exec_command` (SPEC §11, seed 003 §8.12): runs a command line to its end in a fresh shell
//! under the tool guard, with a time limit, an output cap, a per-owner concurrency limit and the
//! per-owner creation rate that sessions share.
//!
//! stdin is /dev/null. stdout and stderr are kept apart, each capped at `exec_output_cap` bytes
//! (the rest is read and dropped, so the command never blocks on a full pipe, and the answer says
//! `truncated`). At the time limit the whole process group is killed; when the command ends, what
//! it left in its group in the background is killed too (see `sessions::child`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::task::AbortOnDropHandle;

use super::sessions::{check_command, SessionLimits, Sessions};
use super::{Done, ToolError};
use crate::command_word::first_word;
use crate::tools::sessions::child::{self, GroupGuard};
use crate::tools::sessions::core::millis;

/// How long the pipes may stay open once the group is dead (a process that left the group on
/// purpose could hold them); then the answer is built from what was read.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// `exec_command`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecCommandArgs {
    /// The command line, run by `sh -c`.
    pub command: String,
    /// The time limit in milliseconds (default 30 s, at most 10 minutes); at the limit the
    /// command's process group is killed.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The folder to run in, inside a workspace. The application layer resolves it and passes the
    /// result to [`Sessions::exec`]; this field is not read here.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `exec_command`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ExecAnswer {
    /// The exit code, when the command exited (128 + N when the shell's command was killed by
    /// signal N).
    pub exit_code: Option<i32>,
    /// The signal that ended it, when its group was killed (at the time limit: 9).
    pub signal: Option<i32>,
    /// What it wrote to stdout (up to the cap).
    pub stdout: String,
    /// What it wrote to stderr (up to the cap).
    pub stderr: String,
    /// Whether stdout went past the cap.
    pub stdout_truncated: bool,
    /// Whether stderr went past the cap.
    pub stderr_truncated: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Whether the time limit ended it.
    pub timed_out: bool,
}

/// The time limit a call asks for (`timeout_ms`), the default when it names none; refused when
/// it is 0 or past the cap.
pub(crate) fn time_limit(
    limits: &SessionLimits,
    timeout_ms: Option<u64>,
) -> Result<Duration, ToolError> {
    match timeout_ms {
        None => Ok(limits.exec_default_timeout),
        Some(0) => Err(ToolError::BadArgument("timeout_ms: more than 0".into())),
        Some(ms) if Duration::from_millis(ms) > limits.exec_max_timeout => {
            Err(ToolError::BadArgument(format!(
                "timeout_ms: at most {}",
                millis(limits.exec_max_timeout)
            )))
        }
        Some(ms) => Ok(Duration::from_millis(ms)),
    }
}

/// Gives an owner's exec slot back however the call ends (also when its future is dropped).
struct Slot<'a> {
    sessions: &'a Sessions,
    owner: &'a str,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.sessions.end_exec(self.owner);
    }
}

impl Sessions {
    /// Whether `exec_command` with `a` would start for `owner` now: the checks
    /// [`Sessions::exec`] makes before it starts anything, taking nothing (the application runs
    /// them before it audits the call; see `sessions/gate.rs`).
    pub fn admits_exec(&self, owner: &str, a: &ExecCommandArgs) -> Result<(), ToolError> {
        check_command(&a.command)?;
        time_limit(&self.limits(), a.timeout_ms)?;
        self.exec_admitted(owner)
    }

    /// `exec_command`: runs `a.command` in `cwd` for `owner` to its end and answers its exit code
    /// and output.
    pub async fn exec(
        &self,
        owner: &str,
        cwd: PathBuf,
        a: ExecCommandArgs,
    ) -> Result<Done<ExecAnswer>, ToolError> {
        check_command(&a.command)?;
        let limits = self.limits();
        let limit = time_limit(&limits, a.timeout_ms)?;
        self.begin_exec(owner)?;
        let _slot = Slot {
            sessions: self,
            owner,
        };
        let started = Instant::now();
        let s = child::spawn(self.launcher(), &cwd, &a.command, false)?;
        let group = s.group;
        let mut group_guard = GroupGuard::new(group);
        let cap = limits.exec_output_cap;
        let stdout = AbortOnDropHandle::new(tokio::spawn(read_capped(s.stdout, cap)));
        let stderr = AbortOnDropHandle::new(tokio::spawn(read_capped(s.stderr, cap)));
        let mut child = s.child;
        let exited = child::exited(group);
        tokio::pin!(exited);
        let timed_out = tokio::select! {
            _ = &mut exited => false,
            _ = tokio::time::sleep(limit) => true,
        };
        if timed_out {
            // The guard is unreaped: the group is still this command's.
            child::signal_group(group, Signal::SIGKILL);
            (&mut exited).await;
        }
        child::signal_group(group, Signal::SIGKILL);
        group_guard.disarm();
        let exit = child::exit_info(child.wait().await);
        let duration = started.elapsed();
        let (stdout, stdout_truncated) = collect(stdout).await;
        let (stderr, stderr_truncated) = collect(stderr).await;
        let answer = ExecAnswer {
            exit_code: exit.code,
            signal: exit.signal,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            duration_ms: millis(duration),
            timed_out,
        };
        Ok(Done::new(answer)
            .with("command", first_word(&a.command))
            .with("command_len", a.command.len())
            .with("exit_code", exit.code)
            .with("signal", exit.signal)
            .with("timed_out", timed_out)
            .with("duration_ms", millis(duration)))
    }
}

/// Reads a pipe to its end, keeping the first `cap` bytes.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, truncated),
            Ok(n) => {
                let room = cap - kept.len();
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// A reader's result, waiting at most [`PIPE_GRACE`] for the pipe to close.
async fn collect(task: AbortOnDropHandle<(Vec<u8>, bool)>) -> (String, bool) {
    match tokio::time::timeout(PIPE_GRACE, task).await {
        Ok(Ok((bytes, truncated))) => (String::from_utf8_lossy(&bytes).into_owned(), truncated),
        // Still open (held by a process that left the group) or the reader failed.
        _ => (String::new(), true),
    }
}
