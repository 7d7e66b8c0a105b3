//! `create_directory` and `move_file`: the two tools that change a folder's entries rather than a
//! file's bytes.
//!
//! `move_file` acts on the entries themselves: a symlink named as the source is moved as a link
//! (its target stays where it is), and the destination must not exist in any form — not even as
//! a dangling symlink. Where the kernel can (Linux, glibc) the rename is told not to replace, so
//! a destination that appears meanwhile is refused too. A move never carries away a workspace
//! root or a folder that holds a guarded one (Collie's state or config, an agent's settings), and
//! never creates or moves a `.git`, `.claude` or `.codex` entry: a concurrent call could
//! otherwise turn a folder that was checked as harmless into one that holds hook settings.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::list::EntryKind;
use super::shown;
use crate::tools::workspace::{is_special_folder_name, Last, Workspaces};
use crate::tools::{Done, ToolError};

/// `create_directory`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDirectoryArgs {
    /// The folder to make, with any missing parents: absolute, `~/…`, or relative to the first
    /// workspace folder.
    pub path: String,
}

/// What `create_directory` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateDirectoryAnswer {
    /// The folder, resolved.
    pub path: String,
    /// How many folders were made (0: it existed already).
    pub created: u64,
}

/// `move_file`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveFileArgs {
    /// What to move (a file, folder or symlink).
    pub source: String,
    /// Where to: must not exist; its folder must.
    pub destination: String,
}

/// What `move_file` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoveFileAnswer {
    /// Where it was, resolved.
    pub source: String,
    /// Where it is now, resolved.
    pub destination: String,
    /// What was moved.
    pub kind: EntryKind,
}

/// Makes a folder and its missing parents, all inside the workspace. An existing folder is fine.
pub fn create_directory(
    ws: &Workspaces,
    a: CreateDirectoryArgs,
) -> Result<Done<CreateDirectoryAnswer>, ToolError> {
    let r = ws.resolve_with(&a.path, Last::Follow)?;
    if !ws.allows_write(&r.path) {
        return Err(ToolError::PathNotAllowed);
    }
    if r.missing == 0 {
        let meta = std::fs::metadata(&r.path).map_err(|e| ToolError::io("stat", &e))?;
        if !meta.is_dir() {
            return Err(ToolError::WrongKind("a file, not a folder".to_owned()));
        }
    }
    // The missing folders, outermost first: each extends the resolved existing part, so each
    // is inside the workspace as the whole path is.
    let mut to_make: Vec<&Path> = r.path.ancestors().take(r.missing).collect();
    to_make.reverse();
    let mut created = 0u64;
    for dir in to_make {
        match std::fs::create_dir(dir) {
            Ok(()) => created += 1,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Made meanwhile: fine if it is a real folder, not a link someone put there.
                let meta = std::fs::symlink_metadata(dir).map_err(|e| ToolError::io("stat", &e))?;
                if !meta.is_dir() {
                    return Err(ToolError::Conflict);
                }
            }
            Err(e) => return Err(ToolError::io("create folder", &e)),
        }
    }
    let path = shown(&r.path);
    Ok(Done::new(CreateDirectoryAnswer {
        path: path.clone(),
        created,
    })
    .with("path", path)
    .with("created", created))
}

/// Moves or renames a file, folder or symlink inside the workspaces.
pub fn move_file(ws: &Workspaces, a: MoveFileArgs) -> Result<Done<MoveFileAnswer>, ToolError> {
    let src = ws.resolve_with(&a.source, Last::Keep)?;
    if src.missing > 0 {
        return Err(ToolError::NoSuchFile);
    }
    let dst = ws.resolve_with(&a.destination, Last::Keep)?;
    for p in [&src.path, &dst.path] {
        if !ws.allows_write(p) || is_special_folder_name(p) {
            return Err(ToolError::PathNotAllowed);
        }
    }
    if ws.holds_protected(&src.path) {
        return Err(ToolError::PathNotAllowed);
    }
    if dst.missing == 0 {
        return Err(ToolError::AlreadyExists);
    }
    if dst.missing > 1 {
        return Err(ToolError::NoSuchFile);
    }
    if dst.path.starts_with(&src.path) {
        return Err(ToolError::BadArgument(
            "`destination` is inside `source`".to_owned(),
        ));
    }
    let meta = std::fs::symlink_metadata(&src.path).map_err(|e| ToolError::io("stat", &e))?;
    let ft = meta.file_type();
    let kind = if ft.is_symlink() {
        EntryKind::Symlink
    } else if ft.is_dir() {
        EntryKind::Dir
    } else if ft.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    rename_no_replace(&src.path, &dst.path)?;
    let (from, to) = (shown(&src.path), shown(&dst.path));
    let size = if kind == EntryKind::File {
        Some(meta.len())
    } else {
        None
    };
    let mut done = Done::new(MoveFileAnswer {
        source: from.clone(),
        destination: to.clone(),
        kind,
    })
    .with("source", from)
    .with("destination", to);
    if let Some(size) = size {
        done = done.with("size", size);
    }
    Ok(done)
}

/// Renames `from` to `to`, refusing to replace an existing `to`.
fn rename_no_replace(from: &Path, to: &Path) -> Result<(), ToolError> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::errno::Errno;
        use nix::fcntl::{renameat2, RenameFlags};
        match renameat2(None, from, None, to, RenameFlags::RENAME_NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(Errno::EEXIST) => return Err(ToolError::AlreadyExists),
            // The file system cannot refuse a replace itself: checked just before, below.
            Err(Errno::EINVAL) if !to.starts_with(from) => {}
            Err(e) => return Err(rename_error(std::io::Error::from(e))),
        }
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(ToolError::AlreadyExists);
    }
    std::fs::rename(from, to).map_err(rename_error)
}

fn rename_error(e: std::io::Error) -> ToolError {
    if e.raw_os_error() == Some(nix::libc::EXDEV) {
        ToolError::BadArgument("`destination` is on another file system".to_owned())
    } else {
        ToolError::io("rename", &e)
    }
}
