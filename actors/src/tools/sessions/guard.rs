//! The tool guard: the small process between the bridge and a tool's command that makes the
//! command die with the bridge, even when the bridge is SIGKILLed (SPEC §11; decision 0032).
//!
//! The bridge runs `collie __tool-guard <bridge pid> -- sh -c <command>` in a new process group.
//! The guard asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`, no `unsafe`
//! needed), checks that its parent is still the bridge (else it exits at once: the bridge died
//! before the request took hold), and runs the command as its child in the same group, stdio
//! inherited. It exits with the command's status (128 + N for a command killed by signal N).
//!
//! On SIGTERM — the bridge died, or `kill_process` signalled the group — it passes SIGTERM to the
//! whole group, gives the command [`GRACE`] to end, and then SIGKILLs the group (itself included)
//! if the command is still there or the bridge is gone. With the bridge alive and the command
//! ended, the bridge sweeps the rest of the group itself before reaping the guard.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{getpgrp, getppid, setpgid, Pid};
use tokio::signal::unix::{signal, SignalKind};

/// How long a command has to end after SIGTERM before its group is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// The guard's exit code when it could not start the command (bad arguments, the parent already
/// gone, no runtime, no `sh`).
pub const GUARD_FAILED: u8 = 125;

/// Runs the guard with its arguments (those after `__tool-guard`): `<parent pid> -- <program>
/// [args…]`.
pub fn guard_main(args: Vec<OsString>) -> ExitCode {
    let Some((parent, program, rest)) = parse(&args) else {
        eprintln!("usage: collie __tool-guard <parent pid> -- <program> [args…]");
        return ExitCode::from(GUARD_FAILED);
    };
    // Ask first, then check: a parent that dies after the check triggers the signal, one that
    // died before it is caught by the check.
    if nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).is_err() || getppid() != parent {
        return ExitCode::from(GUARD_FAILED);
    }
    // The bridge starts us as a group leader already; this makes the guard safe to start
    // otherwise too (and is a no-op then).
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("collie tool guard: {e}");
            return ExitCode::from(GUARD_FAILED);
        }
    };
    runtime.block_on(run(parent, program, rest))
}

/// `<pid> -- <program> [args…]`.
fn parse(args: &[OsString]) -> Option<(Pid, &OsString, &[OsString])> {
    let [pid, dashes, program, rest @ ..] = args else {
        return None;
    };
    let pid: i32 = pid.to_str()?.parse().ok()?;
    (pid > 1 && dashes == "--").then_some((Pid::from_raw(pid), program, rest))
}

async fn run(parent: Pid, program: &OsString, args: &[OsString]) -> ExitCode {
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return ExitCode::from(GUARD_FAILED);
    };
    let mut child = match tokio::process::Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("collie tool guard: {e}");
            return ExitCode::from(GUARD_FAILED);
        }
    };
    tokio::select! {
        status = child.wait() => code(status),
        _ = term.recv() => {
            let group = getpgrp();
            let _ = killpg(group, Signal::SIGTERM);
            let ended = tokio::time::timeout(GRACE, child.wait()).await;
            if ended.is_err() || getppid() != parent {
                // Ends the guard too: nothing is left to report to.
                let _ = killpg(group, Signal::SIGKILL);
            }
            match ended {
                Ok(status) => code(status),
                Err(_) => ExitCode::from(GUARD_FAILED),
            }
        }
    }
}

/// The command's status as the guard's exit code.
fn code(status: std::io::Result<std::process::ExitStatus>) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(GUARD_FAILED)),
            (None, Some(sig)) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(GUARD_FAILED)),
            (None, None) => ExitCode::from(GUARD_FAILED),
        },
        Err(_) => ExitCode::from(GUARD_FAILED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_are_checked() {
        assert!(parse(&os(&["123", "--", "sh", "-c", "true"])).is_some());
        assert!(parse(&os(&["123", "--"])).is_none());
        assert!(parse(&os(&["123", "sh", "-c"])).is_none());
        assert!(parse(&os(&["x", "--", "sh"])).is_none());
        assert!(parse(&os(&["1", "--", "sh"])).is_none());
        assert!(parse(&os(&["-5", "--", "sh"])).is_none());
    }
}
