//! Which transcript is the pane's session.
//!
//! First choice: a `.jsonl` file under the agent's transcript folder that the agent's process
//! holds open (read from `/proc/<pid>/fd`). Otherwise the newest one written since the process
//! started: for Claude Code in `projects/<folder>`, where `<folder>` is the working folder with
//! every character but ASCII letters and digits turned into `-` (how Claude Code names it); for
//! Codex among the day folders `sessions/YYYY/MM/DD` of the last days, the newest rollout whose
//! first line (`session_meta`) names the same working folder. Two agents of one kind started in
//! one folder at the same second could be told apart only by the open descriptor.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::agent::Found;
use super::folder::Folder;
use super::Agent;

/// The pane's session transcript, opened.
#[derive(Debug)]
pub struct Transcript {
    /// The file.
    pub file: File,
    /// Its name without `.jsonl`.
    pub session: String,
}

/// Most entries looked at in one folder.
const MAX_ENTRIES: usize = 4096;
/// Most Codex rollouts whose first line is read.
const MAX_PEEKS: usize = 32;
/// The most of a rollout's first line read (Codex puts its instructions in `session_meta`).
const MAX_META: u64 = 256 * 1024;

/// The pane's transcript, if the agent wrote one.
pub fn find(found: &Found) -> Option<Transcript> {
    let base = Folder::open(&found.root, found.below)?;
    if let Some(t) = held_open(found, &base) {
        return Some(t);
    }
    let since = found
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
        - 1;
    match found.agent {
        Agent::Claude => {
            let project = base.child(OsStr::new(&project_folder(&found.cwd)))?;
            let mut files: Vec<_> = project
                .entries(MAX_ENTRIES)
                .into_iter()
                .filter(|e| !e.is_dir && e.mtime >= since && is_transcript(&e.name))
                .collect();
            files.sort_by_key(|e| std::cmp::Reverse(e.mtime));
            files.into_iter().find_map(|e| open(&project, &e.name))
        }
        Agent::Codex => {
            let mut days = recent_days(&base, 3);
            let mut files: Vec<(i64, usize, OsString)> = Vec::new();
            for (i, day) in days.iter().enumerate() {
                for e in day.entries(MAX_ENTRIES) {
                    if !e.is_dir && e.mtime >= since && is_transcript(&e.name) {
                        files.push((e.mtime, i, e.name));
                    }
                }
            }
            files.sort_by_key(|f| std::cmp::Reverse(f.0));
            files.into_iter().take(MAX_PEEKS).find_map(|(_, i, name)| {
                let day = days.get_mut(i)?;
                let t = open(day, &name)?;
                (codex_cwd(&t.file).as_deref() == Some(found.cwd.as_path())).then_some(t)
            })
        }
    }
}

/// Claude Code's folder name for a working folder.
pub fn project_folder(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn is_transcript(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.ends_with(".jsonl") && n.len() > ".jsonl".len())
}

fn open(folder: &Folder, name: &OsStr) -> Option<Transcript> {
    let session = name.to_str()?.strip_suffix(".jsonl")?.to_owned();
    Some(Transcript {
        file: folder.file(name)?,
        session,
    })
}

/// A transcript under `base` that the agent holds open.
fn held_open(found: &Found, base: &Folder) -> Option<Transcript> {
    let mut prefix = found.root.canonicalize().ok()?;
    prefix.extend(found.below);
    let fds = std::fs::read_dir(format!("/proc/{}/fd", found.pid)).ok()?;
    for fd in fds.flatten().take(MAX_ENTRIES) {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let Ok(rel) = target.strip_prefix(&prefix) else {
            continue;
        };
        if let Some(t) = walk(base, rel) {
            return Some(t);
        }
    }
    None
}

/// The transcript at `rel` below `base`, each step by the folder rules.
fn walk(base: &Folder, rel: &Path) -> Option<Transcript> {
    let parts: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let (name, dirs) = parts.split_last()?;
    if !is_transcript(name) {
        return None;
    }
    let mut folder: Option<Folder> = None;
    for dir in dirs {
        folder = Some(folder.as_ref().unwrap_or(base).child(dir)?);
    }
    open(folder.as_ref().unwrap_or(base), name)
}

/// The newest day folders `YYYY/MM/DD` under Codex's `sessions`, newest first, at most `n`.
fn recent_days(sessions: &Folder, n: usize) -> Vec<Folder> {
    let mut out = Vec::new();
    for year in newest_numbered(sessions, 2) {
        for month in newest_numbered(&year, 2) {
            for day in newest_numbered(&month, n) {
                out.push(day);
                if out.len() >= n {
                    return out;
                }
            }
        }
    }
    out
}

/// The sub-folders of `folder` named by digits, highest first, at most `n`.
fn newest_numbered(folder: &Folder, n: usize) -> Vec<Folder> {
    let mut names: Vec<OsString> = folder
        .entries(MAX_ENTRIES)
        .into_iter()
        .filter(|e| {
            e.is_dir
                && e.name
                    .to_str()
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|e| e.name)
        .collect();
    names.sort_by(|a, b| b.cmp(a));
    names
        .iter()
        .take(n)
        .filter_map(|name| folder.child(name))
        .collect()
}

/// The working folder a Codex rollout's first line (`session_meta`) names.
fn codex_cwd(file: &File) -> Option<PathBuf> {
    let mut first = Vec::new();
    BufReader::new(file.take(MAX_META))
        .read_until(b'\n', &mut first)
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&first).ok()?;
    (v["type"] == "session_meta")
        .then(|| v["payload"]["cwd"].as_str().map(PathBuf::from))
        .flatten()
}
