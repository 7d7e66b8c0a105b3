//! Ending a hosted pane's processes: the child, its process group and, on Linux, its session.
//!
//! The child is started with `setsid`, so its pid is also its process group and session id.
//! Jobs an interactive shell starts get process groups of their own but stay in that session;
//! on Linux `/proc` lists every process's session, so they are found and killed too. Elsewhere
//! only the child's group is signalled (best effort; closing the terminal sends SIGHUP to the
//! rest).
//!
//! Pid reuse: a pid stays reserved while any process still uses it as its group or session id,
//! and the child is reaped only here or by `try_wait` under the pane's lock. So the group is
//! signalled only while the child is unreaped, and the session scan never signals a process
//! whose own pid is the session id once the child is gone (that could only be a newcomer).

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use portable_pty::Child;

/// SIGKILLs the child's group and session, then reaps the child. Idempotent.
pub(super) fn kill_tree(pid: Option<u32>, child: &mut (dyn Child + Send + Sync)) {
    let reaped = matches!(child.try_wait(), Ok(Some(_)) | Err(_));
    let leader = pid
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 1)
        .map(Pid::from_raw);
    if let Some(leader) = leader {
        if !reaped {
            // Errors mean there is nothing left to signal.
            let _ = killpg(leader, Signal::SIGKILL);
            let _ = kill(leader, Signal::SIGKILL);
        }
        #[cfg(target_os = "linux")]
        for member in session_members(leader) {
            if member != leader {
                let _ = kill(member, Signal::SIGKILL);
            }
        }
    }
    if !reaped {
        // The child was just sent SIGKILL (or has no pid to signal), so this wait is short.
        let _ = child.wait();
    }
}

/// Processes whose session id is `sid`, read from `/proc/<pid>/stat`.
#[cfg(target_os = "linux")]
fn session_members(sid: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat_session(&stat))
                == Some(sid.as_raw())
        })
        .map(Pid::from_raw)
        .collect()
}

/// The session id field of a `/proc/<pid>/stat` line. The command name is in parentheses and
/// may itself contain spaces and parentheses, so fields are counted after the last `)`:
/// state, ppid, pgrp, session.
#[cfg(target_os = "linux")]
fn stat_session(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn parses_the_session_after_an_awkward_name() {
        let stat = "4242 (a) b (c) S 1 4242 4240 34816 4242 4194560 0 0";
        assert_eq!(stat_session(stat), Some(4240));
        assert_eq!(stat_session("1 (init"), None);
    }

    #[test]
    fn finds_our_own_session() {
        let own = nix::unistd::getsid(None).unwrap();
        let me = Pid::this();
        assert!(session_members(own).contains(&me));
    }
}
