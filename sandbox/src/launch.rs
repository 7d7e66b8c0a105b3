//! The program every confined command starts through.
//!
//! `collie __sandbox <policy> -- [program args…]` is the **keeper**: it stays outside the
//! sandbox, makes the private temp folder and the pids cgroup, and starts `collie
//! __sandbox-inner <confinement> -- program args…` — the child that confines itself
//! ([`crate::confine`]) and then becomes the command (no program: the user's `$SHELL`). The keeper
//! is a child subreaper, so whatever the command starts stays below it even when orphaned; it
//! kills that whole tree when the time limit is reached, when the command ends (what it left
//! running in the background goes with it), and — after the command had [`GRACE`] to end — when
//! the keeper is told to stop (SIGTERM, SIGHUP: a tool's `kill_process`, a pane closed). SIGINT
//! and SIGQUIT are the terminal's to the command; the keeper ignores them.
//!
//! Exit code: the command's (128 + N if killed by signal N); [`TIMED_OUT`] at the time limit;
//! [`FAILED`] when the sandbox could not be set up — then the command never ran.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, SignalKind};

use crate::cgroup::{self, PidsCgroup, ProcessLimit};
use crate::confine::{confine, Confinement};
use crate::policy::{PathAccess, PathRule, Policy};

/// The keeper's subcommand.
pub const KEEPER: &str = "__sandbox";
/// The confining child's subcommand.
pub const INNER: &str = "__sandbox-inner";
/// Exit code at the time limit (as `timeout(1)`).
pub const TIMED_OUT: u8 = 124;
/// Exit code when the sandbox could not be set up.
pub const FAILED: u8 = 125;
/// How long the command has to end after the keeper is told to stop.
pub const GRACE: Duration = Duration::from_secs(1);
/// The largest policy argument read (a policy is a few KiB).
pub const MAX_POLICY_BYTES: usize = 256 * 1024;

/// Why the prefix that confines a command cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PrefixError {
    /// The executable's path is not UTF-8 (a pane's command is a list of strings).
    #[error("the collie executable's path is not UTF-8: {0}")]
    NotUtf8(PathBuf),
    /// The policy does not encode.
    #[error("the sandbox policy does not encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The words that run a command confined by `policy` when the command's own words follow them:
/// `<exe> __sandbox <policy> --` (`exe`: this `collie` executable). No words after them: the
/// user's shell.
pub fn prefix(exe: &std::path::Path, policy: &Policy) -> Result<Vec<String>, PrefixError> {
    let exe = exe
        .to_str()
        .ok_or_else(|| PrefixError::NotUtf8(exe.to_path_buf()))?;
    Ok(vec![
        exe.to_owned(),
        KEEPER.to_owned(),
        serde_json::to_string(policy)?,
        "--".into(),
    ])
}

/// `<json> -- [program args…]`.
fn split(args: &[OsString]) -> Option<(&str, &[OsString])> {
    let [json, dashes, rest @ ..] = args else {
        return None;
    };
    let json = json.to_str()?;
    (dashes == "--" && json.len() <= MAX_POLICY_BYTES).then_some((json, rest))
}

fn fail(what: impl std::fmt::Display) -> ExitCode {
    eprintln!("collie sandbox: {what}; the command was not started");
    ExitCode::from(FAILED)
}

/// The keeper (`collie __sandbox …`), with the arguments after its subcommand.
pub fn keeper_main(args: Vec<OsString>) -> ExitCode {
    let Some((json, command)) = split(&args) else {
        return fail("usage: collie __sandbox <policy> -- [program args…]");
    };
    let mut policy: Policy = match serde_json::from_str(json) {
        Ok(p) => p,
        Err(e) => return fail(format!("the policy does not read: {e}")),
    };
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        return fail(format!("become a subreaper: {e}"));
    }
    let tmp = match tempfile::Builder::new().prefix("collie-sandbox-").tempdir() {
        Ok(t) => t,
        Err(e) => return fail(format!("make the private temp folder: {e}")),
    };
    policy.paths.push(PathRule {
        path: tmp.path().to_path_buf(),
        access: PathAccess::Write,
        from: "temp".into(),
    });
    let (cgroup, nproc) = match cgroup::process_limit() {
        Ok(ProcessLimit::Cgroup(base)) => match PidsCgroup::make(&base, policy.limits.processes) {
            Ok(c) => (Some(c), None),
            Err(e) => return fail(format!("make the pids cgroup: {e}")),
        },
        Ok(ProcessLimit::Rlimit) => {
            let mine = cgroup::tasks_of(nix::unistd::getuid().as_raw());
            (None, Some(mine + u64::from(policy.limits.processes)))
        }
        Err(why) => return fail(format!("the process limit cannot be enforced: {why}")),
    };
    let timeout = Duration::from_secs(policy.limits.timeout_s);
    let confinement = Confinement {
        policy,
        cgroup: cgroup.as_ref().map(|c| c.dir().to_path_buf()),
        nproc,
    };
    let confinement = match serde_json::to_string(&confinement) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("find the collie executable: {e}")),
    };
    let child = std::process::Command::new(exe)
        .arg(INNER)
        .arg(confinement)
        .arg("--")
        .args(command)
        .env("TMPDIR", tmp.path())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => return fail(format!("start: {e}")),
    };
    let Ok(pid) = i32::try_from(child.id()) else {
        return fail("the child's pid does not fit");
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let code = runtime.block_on(keep(Pid::from_raw(pid), timeout));
    // Everything below the keeper is gone now; the cgroup and the temp folder can go too.
    drop(cgroup);
    drop(tmp);
    code
}

/// How the command ended, as far as the keeper saw.
enum Ended {
    Exited(ExitCode),
    TimedOut,
}

async fn keep(child: Pid, timeout: Duration) -> ExitCode {
    let (Ok(mut chld), Ok(mut term), Ok(mut hup), Ok(mut int), Ok(mut quit)) = (
        signal(SignalKind::child()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::quit()),
    ) else {
        let _ = kill(child, Signal::SIGKILL);
        kill_tree();
        return ExitCode::from(FAILED);
    };
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut stopping: Option<tokio::time::Instant> = None;
    let ended = loop {
        if let Some(code) = reap(child) {
            break Ended::Exited(code);
        }
        let grace_over = async {
            match stopping {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = chld.recv() => {}
            _ = &mut deadline => break Ended::TimedOut,
            _ = term.recv() => stopping = Some(stop(child, stopping)),
            _ = hup.recv() => stopping = Some(stop(child, stopping)),
            // The terminal's signals are the command's.
            _ = int.recv() => {}
            _ = quit.recv() => {}
            _ = grace_over => break Ended::Exited(ExitCode::from(FAILED)),
        }
    };
    kill_tree();
    match ended {
        Ended::Exited(code) => code,
        Ended::TimedOut => {
            eprintln!(
                "\r\ncollie sandbox: the time limit of {} s was reached; the command and \
                 everything it started were stopped",
                timeout.as_secs()
            );
            ExitCode::from(TIMED_OUT)
        }
    }
}

/// Passes SIGTERM on to the command (once) and returns when its grace ends.
fn stop(child: Pid, stopping: Option<tokio::time::Instant>) -> tokio::time::Instant {
    if let Some(at) = stopping {
        return at;
    }
    let _ = kill(child, Signal::SIGTERM);
    tokio::time::Instant::now() + GRACE
}

/// Reaps every child that ended (orphans of the command come to the keeper); the command's exit
/// code once it has ended.
fn reap(child: Pid) -> Option<ExitCode> {
    let mut code = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, c)) if pid == child => {
                code = Some(ExitCode::from(u8::try_from(c & 0xff).unwrap_or(FAILED)));
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                code = Some(ExitCode::from(
                    u8::try_from(128 + sig as i32).unwrap_or(FAILED),
                ));
            }
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return code,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return code,
        }
    }
}

/// SIGKILLs every process below the keeper until none is left, reaping as it goes. Being a
/// subreaper, the keeper is the parent of every orphan, so the tree cannot be left by forking.
fn kill_tree() {
    for _ in 0..1000 {
        let below = descendants();
        if below.is_empty() {
            // Reap what died since the last look.
            let _ = reap(Pid::from_raw(0));
            return;
        }
        for pid in below {
            let _ = kill(pid, Signal::SIGKILL);
        }
        let _ = reap(Pid::from_raw(0));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The keeper's descendants, from `/proc/<pid>/task/<tid>/children`.
fn descendants() -> Vec<Pid> {
    let mut found = Vec::new();
    let mut todo = vec![std::process::id()];
    while let Some(pid) = todo.pop() {
        let tasks = PathBuf::from(format!("/proc/{pid}/task"));
        let Ok(entries) = std::fs::read_dir(tasks) else {
            continue;
        };
        for task in entries.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if let Ok(raw) = i32::try_from(c) {
                    found.push(Pid::from_raw(raw));
                }
                todo.push(c);
            }
        }
    }
    found
}

/// The confining child (`collie __sandbox-inner …`): confines itself, then becomes the command.
pub fn inner_main(args: Vec<OsString>) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let Some((json, command)) = split(&args) else {
        return fail("usage: collie __sandbox-inner <confinement> -- [program args…]");
    };
    let confinement: Confinement = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => return fail(format!("the confinement does not read: {e}")),
    };
    take_the_terminal();
    if let Err(e) = confine(&confinement) {
        return fail(e);
    }
    let (program, rest) = match command.split_first() {
        Some((p, rest)) => (p.clone(), rest),
        None => (
            std::env::var_os("SHELL").unwrap_or_else(|| OsString::from("/bin/sh")),
            &[][..],
        ),
    };
    let e = std::process::Command::new(&program).args(rest).exec();
    eprintln!("collie sandbox: {}: {e}", PathBuf::from(&program).display());
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// On a terminal (a pane), the command gets a process group of its own and the terminal's
/// foreground, as a shell gives the commands it runs: the pane then shows the command, not the
/// keeper, as what runs in it (SPEC §9's foreground), and the terminal's Ctrl-C reaches the command
/// alone. Without a terminal (a tool's command) it stays in the tool guard's group.
fn take_the_terminal() {
    use nix::sys::signal::{SigSet, SigmaskHow};
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return;
    }
    if nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0)).is_err() {
        return;
    }
    // A background group that sets the foreground is sent SIGTTOU unless it blocks it.
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut before = SigSet::empty();
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut before))
        .is_ok()
    {
        let _ = nix::unistd::tcsetpgrp(&stdin, nix::unistd::getpgrp());
        let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
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
        assert!(split(&os(&["{}", "--", "sh", "-c", "true"])).is_some());
        assert!(split(&os(&["{}", "--"])).is_some(), "no program: the shell");
        assert!(split(&os(&["{}", "sh"])).is_none());
        assert!(split(&os(&["{}"])).is_none());
        let huge = "x".repeat(MAX_POLICY_BYTES + 1);
        assert!(split(&os(&[&huge, "--", "sh"])).is_none());
    }
}
