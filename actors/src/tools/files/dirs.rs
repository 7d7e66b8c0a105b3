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

use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{mkdirat, renameat, statat, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gate::{movable, writable};
use super::list::EntryKind;
use super::shown;
use crate::tools::workspace::{open_at, refusal, Last, Parent, Workspaces};
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
    let r = writable(ws, &a.path, Last::Follow)?;
    if r.missing == 0 {
        let meta = ws.metadata(&r.path)?;
        if !meta.is_dir() {
            return Err(ToolError::WrongKind("a file, not a folder".to_owned()));
        }
    }
    // The missing folders, outermost first, each made in a handle on the one before — the first
    // in the existing part, opened beneath the workspace root — and never through a link.
    let existing = r
        .path
        .ancestors()
        .nth(r.missing)
        .ok_or(ToolError::OutsideWorkspace)?;
    let mut names: Vec<&std::ffi::OsStr> = r
        .path
        .ancestors()
        .take(r.missing)
        .filter_map(Path::file_name)
        .collect();
    names.reverse();
    let mut cur = ws.open_dir(existing)?;
    let mut created = 0u64;
    for name in names {
        match mkdirat(&cur, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => created += 1,
            // Made meanwhile: fine if it is a real folder (the open below refuses a link).
            Err(Errno::EXIST) => {}
            Err(e) => return Err(refusal("create folder", e)),
        }
        cur = open_at(
            cur.as_fd(),
            Path::new(name),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => ToolError::Conflict,
            other => refusal("open folder", other),
        })?;
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
    let (src, dst) = movable(ws, &a.source, &a.destination)?;
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
    // Both folders opened beneath their roots: the entries are named in them, never by a path
    // looked up again.
    let from = ws.parent(&src.path)?;
    let to = ws.parent(&dst.path)?;
    let st =
        statat(&from.dir, &from.name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| refusal("stat", e))?;
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => EntryKind::Symlink,
        FileType::Directory => EntryKind::Dir,
        FileType::RegularFile => EntryKind::File,
        _ => EntryKind::Other,
    };
    rename_no_replace(&from, &to)?;
    let (from, to) = (shown(&src.path), shown(&dst.path));
    let size = if kind == EntryKind::File {
        u64::try_from(st.st_size).ok()
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

/// Renames the entry `from` to `to` (each a name in a folder handle), refusing to replace an
/// existing `to`.
fn rename_no_replace(from: &Parent, to: &Parent) -> Result<(), ToolError> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags};
        match renameat_with(
            &from.dir,
            &from.name,
            &to.dir,
            &to.name,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => return Ok(()),
            Err(Errno::EXIST) => return Err(ToolError::AlreadyExists),
            // The file system cannot refuse a replace itself: checked just before, below.
            Err(Errno::INVAL) => {}
            Err(e) => return Err(rename_error(e)),
        }
    }
    if statat(&to.dir, &to.name, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Err(ToolError::AlreadyExists);
    }
    renameat(&from.dir, &from.name, &to.dir, &to.name).map_err(rename_error)
}

fn rename_error(e: Errno) -> ToolError {
    if e == Errno::XDEV {
        // Here `EXDEV` is the kernel's "another file system", not an escape: both folders were
        // opened beneath their roots.
        ToolError::BadArgument("`destination` is on another file system".to_owned())
    } else if e == Errno::INVAL {
        ToolError::BadArgument("`destination` is inside `source`".to_owned())
    } else {
        refusal("rename", e)
    }
}
