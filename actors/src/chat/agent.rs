//! Which agent runs in a pane, read from `/proc`: the first process of the pane's terminal's
//! foreground group named `claude` or `codex` (the native binaries the npm packages install;
//! Codex's npm wrapper is `node`, and the native `codex` it starts is in the same group), and of
//! that process its working folder, its home for the agent (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
//! else `HOME`), and when it started.
//!
//! The process is this user's own or nothing is read: another user's environment is not ours to
//! read, and a folder it names is not this user's to show.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::Agent;
use crate::panes::foreground::Processes;

/// What is known of the agent in a pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Which agent.
    pub agent: Agent,
    /// Its process.
    pub pid: u32,
    /// Its working folder.
    pub cwd: PathBuf,
    /// Where the walk to the transcripts starts: `$CLAUDE_CONFIG_DIR` or `$CODEX_HOME` when the
    /// process's environment sets it, else its `$HOME` — a claim of the program in the pane, so
    /// nothing below it is followed through a symlink (see [`super::folder`]).
    pub root: PathBuf,
    /// The folders from [`Found::root`] to the transcripts: `.claude/projects` or `projects`;
    /// `.codex/sessions` or `sessions`.
    pub below: &'static [&'static str],
    /// When the process started (to the second; `UNIX_EPOCH` when unknown).
    pub started: SystemTime,
}

/// The most of a process's environment read.
const MAX_ENVIRON: u64 = 256 * 1024;

/// Linux reports process times in clock ticks of `USER_HZ`, which is 100 on every architecture
/// Collie builds for (it is part of the kernel's ABI, whatever the kernel's own tick rate).
const USER_HZ: u64 = 100;

/// The agent in the foreground of the terminal `pane_pid` runs on.
pub fn in_pane(pane_pid: u32) -> Option<Found> {
    let procs = Processes::scan();
    let (pid, agent) = procs
        .foreground_members(pane_pid)
        .into_iter()
        .find_map(|(pid, comm)| agent_named(&comm).map(|a| (pid, a)))?;
    let me = nix::unistd::geteuid().as_raw();
    if std::fs::metadata(format!("/proc/{pid}")).ok()?.uid() != me {
        return None;
    }
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    let env = environ(pid)?;
    let var = |name: &str| {
        env.iter()
            .find_map(|(k, v)| (k == name && !v.is_empty()).then(|| PathBuf::from(v)))
    };
    let (own, dot, sub) = match agent {
        Agent::Claude => ("CLAUDE_CONFIG_DIR", ".claude", "projects"),
        Agent::Codex => ("CODEX_HOME", ".codex", "sessions"),
    };
    let (root, below): (PathBuf, &'static [&'static str]) = match var(own) {
        Some(dir) => (
            dir,
            if sub == "projects" {
                &["projects"]
            } else {
                &["sessions"]
            },
        ),
        None => (
            var("HOME")?,
            if dot == ".claude" {
                &[".claude", "projects"]
            } else {
                &[".codex", "sessions"]
            },
        ),
    };
    // A relative folder would be relative to the agent's cwd, not ours: not worth guessing.
    if !root.is_absolute() {
        return None;
    }
    Some(Found {
        agent,
        pid,
        cwd,
        root,
        below,
        started: started(pid).unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// The agent a process name is.
pub fn agent_named(comm: &str) -> Option<Agent> {
    match comm {
        "claude" => Some(Agent::Claude),
        "codex" => Some(Agent::Codex),
        _ => None,
    }
}

/// The process's environment as name/value pairs (bounded).
fn environ(pid: u32) -> Option<Vec<(String, String)>> {
    let mut raw = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/environ"))
        .ok()?
        .take(MAX_ENVIRON)
        .read_to_end(&mut raw)
        .ok()?;
    Some(parse_environ(&raw))
}

/// `NAME=value` entries separated by NUL; entries that are not UTF-8 or have no `=` are skipped.
pub fn parse_environ(raw: &[u8]) -> Vec<(String, String)> {
    raw.split(|b| *b == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .filter_map(|entry| entry.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// When `pid` started: the boot time plus its start in clock ticks.
fn started(pid: u32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = start_ticks(&stat)?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(btime + ticks / USER_HZ))
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line, counted from the name's last `)`.
pub fn start_ticks(stat: &str) -> Option<u64> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    // After `)`: field 3 (state) is the first; field 22 the twentieth.
    rest.split_whitespace().nth(19)?.parse().ok()
}
