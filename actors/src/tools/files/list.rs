//! `list_directory`: a folder's entries to a depth, as structured entries.
//!
//! The walk is breadth-first — all of the folder's own entries, then the next level — so an
//! answer cut at [`MAX_ENTRIES`] still shows the top of the tree. Within a folder entries are
//! sorted by name. A symlink is listed as one (kind `symlink`) and never followed, so the walk
//! cannot leave the workspace; entries no tool may touch (a state file's name, an agent's hook
//! settings, Collie's state folder) are left out, not reported as errors. A `.git` folder is
//! listed but not descended into. A sub-folder that cannot be read is listed without its
//! entries.
//!
//! Every folder is read through a handle opened beneath its workspace root following no symlink:
//! a sub-folder swapped for a link to elsewhere after it was seen is skipped, never listed.
//!
//! Memory stays bounded for huge folders: at most one more entry than the answer still has room
//! for is kept from each folder (which of them, in a folder too big to list, is the OS's order).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{statat, AtFlags, Dir, FileType};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shown;
use crate::tools::workspace::{refusal, Workspaces};
use crate::tools::{Done, ToolError};

/// The depth listed when none is given.
pub const DEFAULT_DEPTH: u32 = 2;
/// The deepest listing.
pub const MAX_DEPTH: u32 = 5;
/// The most entries one answer holds.
pub const MAX_ENTRIES: usize = 1_000;

/// `list_directory`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryArgs {
    /// The folder: absolute, `~/…`, or relative to the first workspace folder.
    pub path: String,
    /// How many levels to list: 1 is the folder's own entries (default 2, at most 5).
    #[serde(default)]
    pub depth: Option<u32>,
}

/// What an entry is (symlinks are not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// A socket, FIFO or device.
    Other,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListEntry {
    /// The entry's name.
    pub name: String,
    /// Its path relative to the listed folder (`sub/name`).
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// A file's size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// What `list_directory` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListDirectoryAnswer {
    /// The folder, resolved.
    pub path: String,
    /// The depth listed.
    pub depth: u32,
    /// The entries, level by level, each folder's sorted by name.
    pub entries: Vec<ListEntry>,
    /// Whether entries were left out because the answer reached [`MAX_ENTRIES`].
    pub truncated: bool,
}

/// Lists a folder.
pub fn list_directory(
    ws: &Workspaces,
    a: ListDirectoryArgs,
) -> Result<Done<ListDirectoryAnswer>, ToolError> {
    let depth = a.depth.unwrap_or(DEFAULT_DEPTH);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(ToolError::BadArgument(format!(
            "`depth`: from 1 to {MAX_DEPTH}"
        )));
    }
    let root = ws.resolve(&a.path)?;
    let meta = ws.metadata(&root)?;
    if !meta.is_dir() {
        return Err(ToolError::WrongKind("a file, not a folder".to_owned()));
    }

    let mut entries: Vec<ListEntry> = Vec::new();
    let mut truncated = false;
    let mut queue: VecDeque<(PathBuf, String, u32)> = VecDeque::new();
    queue.push_back((root.clone(), String::new(), 1));
    let mut first = true;
    while let Some((dir, rel, level)) = queue.pop_front() {
        let room = MAX_ENTRIES - entries.len();
        let found = match read_folder(ws, &dir, room + 1) {
            Ok(found) => found,
            // The listed folder itself must be readable; a sub-folder that is not is skipped.
            Err(e) if first => return Err(e),
            Err(_) => continue,
        };
        first = false;
        if found.len() > room {
            truncated = true;
        }
        for (name, kind, size) in found.into_iter().take(room) {
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if kind == EntryKind::Dir && level < depth && name != ".git" {
                queue.push_back((dir.join(&name), path.clone(), level + 1));
            }
            entries.push(ListEntry {
                name,
                path,
                kind,
                size,
            });
        }
        if truncated {
            break;
        }
    }
    let count = entries.len();
    let shown_root = shown(&root);
    Ok(Done::new(ListDirectoryAnswer {
        path: shown_root.clone(),
        depth,
        entries,
        truncated,
    })
    .with("path", shown_root)
    .with("depth", depth)
    .with("entries", count)
    .with("truncated", truncated))
}

/// Up to `keep` allowed entries of `dir` (a resolved folder, read through a handle opened
/// beneath its workspace root), sorted by name.
fn read_folder(
    ws: &Workspaces,
    dir: &Path,
    keep: usize,
) -> Result<Vec<(String, EntryKind, Option<u64>)>, ToolError> {
    let fd = ws.open_dir(dir)?;
    let mut entries = Dir::new(fd).map_err(|e| refusal("read folder", e))?;
    let mut found = Vec::new();
    while let Some(entry) = entries.read() {
        if found.len() >= keep {
            break;
        }
        let Ok(entry) = entry else { continue };
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." {
            continue;
        }
        let name = OsStr::from_bytes(raw);
        let full = dir.join(name);
        // `dir` is resolved and nothing is followed, so `full` is resolved already.
        if !ws.allows(&full) {
            continue;
        }
        let Ok(folder) = entries.fd() else { continue };
        let Ok(st) = statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let (kind, size) = match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => (EntryKind::Symlink, None),
            FileType::Directory => (EntryKind::Dir, None),
            FileType::RegularFile => (EntryKind::File, u64::try_from(st.st_size).ok()),
            _ => (EntryKind::Other, None),
        };
        found.push((name.to_string_lossy().into_owned(), kind, size));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}
