//! What runs in a pane's foreground, and whether that is a shell waiting at its prompt (SPEC §9).
//!
//! A walky header is typed into the receiving pane followed by Enter. An agent reads it as input;
//! a shell at its prompt would run it. So a message is refused for a pane at a shell prompt, and
//! `walky who` marks such panes.
//!
//! **How it is told.** The pane's first process (the one tmux or Collie started on the pane's
//! terminal) names, in `/proc/<pid>/stat`, the terminal's foreground process group (`tpgid`).
//! The pane is at a shell prompt when every process of that group is a shell: an interactive shell
//! with job control puts each command it runs into a group of its own, so an agent started from
//! bash is "not a shell", and a shell without job control (`sh -c cat`) shares its group with the
//! command it waits for, which then is in the group too. A pane whose foreground cannot be read
//! (no `/proc`, the first process gone) is treated as a shell: the message is refused rather than
//! typed where it might run.

use std::collections::HashMap;

/// Programs that run a line typed into them as a command.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "tcsh", "csh", "nu", "elvish", "xonsh",
    "pwsh",
];

/// Whether `command` (a process name: `bash`, `-zsh` for a login shell, `/bin/sh`) is a shell.
pub fn is_shell(command: &str) -> bool {
    let name = command.trim().trim_start_matches('-');
    let name = name.rsplit('/').next().unwrap_or(name);
    SHELLS.contains(&name)
}

/// Whether a foreground made of processes named `names` is a shell waiting at its prompt.
pub fn at_prompt<S: AsRef<str>>(names: &[S]) -> bool {
    !names.is_empty() && names.iter().all(|n| is_shell(n.as_ref()))
}

/// The fields of `/proc/<pid>/stat` this module needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The process name (`comm`).
    pub comm: String,
    /// Its parent.
    pub ppid: u32,
    /// Its process group.
    pub pgrp: i64,
    /// The foreground process group of its controlling terminal (-1: none).
    pub tpgid: i64,
    /// When it started, in clock ticks after boot: with the pid, one process instance.
    pub start_time: u64,
}

/// Parses a `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp session tty_nr tpgid …`. The
/// name may itself hold spaces and parentheses, so the fields are counted from its last `)`.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] state, [1] ppid, [2] pgrp, [3] session, [4] tty_nr, [5] tpgid, … [19] starttime
    Some(Stat {
        comm,
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        tpgid: rest.get(5)?.parse().ok()?,
        start_time: rest.get(19)?.parse().ok()?,
    })
}

/// Most parents [`ancestry`] follows: deeper chains are not real process trees.
const MAX_ANCESTRY: usize = 64;

/// `pid` and its parents up to (not including) pid 1, read from `/proc` now; empty when `pid`
/// cannot be read. Used to place a process in a pane: a pane's process is on the chain of every
/// process started inside it (SPEC §10.2). The caller must hold the process alive (a connected
/// socket peer) while it uses the answer, so the pid is not reused meanwhile.
pub fn ancestry(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut next = pid;
    while next > 1 && chain.len() < MAX_ANCESTRY && !chain.contains(&next) {
        chain.push(next);
        let Some(stat) = std::fs::read_to_string(format!("/proc/{next}/stat"))
            .ok()
            .and_then(|l| parse_stat(&l))
        else {
            break;
        };
        next = stat.ppid;
    }
    chain
}

/// The working folder of the foreground process group of the terminal `pid` runs on — the
/// group's leader, as tmux's `#{pane_current_path}` reads it — or of `pid` itself when the
/// terminal has no foreground group; `None` when neither can be read.
pub fn cwd_of(pid: u32) -> Option<std::path::PathBuf> {
    let tpgid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|l| parse_stat(&l))
        .map(|s| s.tpgid)
        .filter(|t| *t > 0);
    tpgid
        .and_then(|t| std::fs::read_link(format!("/proc/{t}/cwd")).ok())
        .or_else(|| std::fs::read_link(format!("/proc/{pid}/cwd")).ok())
}

/// One reading of every process: enough to answer for many panes at once.
#[derive(Debug, Default)]
pub struct Processes {
    stats: HashMap<u32, Stat>,
}

impl Processes {
    /// Reads `/proc` now.
    pub fn scan() -> Processes {
        let mut stats = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Processes::default();
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(stat) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|l| parse_stat(&l))
            {
                stats.insert(pid, stat);
            }
        }
        Processes { stats }
    }

    /// Processes from given stats (for tests).
    pub fn from_stats(stats: impl IntoIterator<Item = (u32, Stat)>) -> Processes {
        Processes {
            stats: stats.into_iter().collect(),
        }
    }

    /// The names of the processes in the foreground group of the terminal `pid` runs on; `None`
    /// when that cannot be read.
    pub fn foreground_of(&self, pid: u32) -> Option<Vec<String>> {
        let tpgid = self.stats.get(&pid)?.tpgid;
        if tpgid <= 0 {
            return None;
        }
        let mut names: Vec<String> = self
            .stats
            .values()
            .filter(|s| s.pgrp == tpgid)
            .map(|s| s.comm.clone())
            .collect();
        names.sort();
        (!names.is_empty()).then_some(names)
    }

    /// The processes (pid and name) in the foreground group of the terminal `pid` runs on, by
    /// pid; empty when that cannot be read.
    pub fn foreground_members(&self, pid: u32) -> Vec<(u32, String)> {
        let Some(tpgid) = self.stats.get(&pid).map(|s| s.tpgid).filter(|t| *t > 0) else {
            return Vec::new();
        };
        let mut members: Vec<(u32, String)> = self
            .stats
            .iter()
            .filter(|(_, s)| s.pgrp == tpgid)
            .map(|(p, s)| (*p, s.comm.clone()))
            .collect();
        members.sort();
        members
    }

    /// Whether the terminal `pid` runs on is at a shell prompt (unknown counts as yes).
    pub fn at_prompt(&self, pid: u32) -> bool {
        self.foreground_of(pid)
            .is_none_or(|names| at_prompt(&names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_by_any_spelling() {
        for shell in [
            "bash", "-bash", "sh", "/bin/sh", "zsh", "-zsh", "fish", "pwsh", " dash\n",
        ] {
            assert!(is_shell(shell), "{shell:?}");
        }
        for not in [
            "cat", "claude", "node", "codex", "python3", "vim", "bashful", "", "ssh",
        ] {
            assert!(!is_shell(not), "{not:?}");
        }
    }

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let s = parse_stat(
            "42 (my (odd) name) S 1 42 42 34816 4242 4194560 0 0 0 0 3 1 0 0 20 0 1 0 987654 8192 1",
        )
        .expect("stat");
        assert_eq!(
            s,
            Stat {
                comm: "my (odd) name".into(),
                ppid: 1,
                pgrp: 42,
                tpgid: 4242,
                start_time: 987_654,
            }
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1"), None);
        assert_eq!(
            parse_stat("1 (x) S 1 1 1 0 -1 0 0 0"),
            None,
            "no start time"
        );
    }

    fn stat(comm: &str, pgrp: i64, tpgid: i64) -> Stat {
        Stat {
            comm: comm.into(),
            ppid: 1,
            pgrp,
            tpgid,
            start_time: 0,
        }
    }

    #[test]
    fn the_foreground_group_decides() {
        let procs = Processes::from_stats([
            // A shell at its prompt: alone in the foreground group.
            (10, stat("bash", 10, 10)),
            // A shell that started an agent with job control: the agent's group is in front.
            (20, stat("bash", 20, 21)),
            (21, stat("claude", 21, 21)),
            (22, stat("node", 21, 21)),
            // `sh -c cat`: no job control, the shell waits in the same group as cat.
            (30, stat("sh", 30, 30)),
            (31, stat("cat", 30, 30)),
            // No controlling terminal.
            (40, stat("daemon", 40, -1)),
        ]);
        assert!(procs.at_prompt(10));
        assert!(!procs.at_prompt(20));
        assert_eq!(
            procs.foreground_of(20),
            Some(vec!["claude".to_owned(), "node".to_owned()])
        );
        assert!(!procs.at_prompt(30));
        assert!(procs.at_prompt(40), "unknown counts as a shell");
        assert!(procs.at_prompt(99), "a gone process counts as a shell");
    }

    #[test]
    fn a_child_s_ancestry_holds_its_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let chain = ancestry(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(chain.first(), Some(&child.id()));
        assert!(chain.contains(&std::process::id()), "{chain:?}");
        assert!(!chain.contains(&1));
    }

    #[test]
    fn this_process_has_a_readable_stat() {
        let procs = Processes::scan();
        assert!(procs.stats.contains_key(&std::process::id()));
    }
}
