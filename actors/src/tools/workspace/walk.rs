//! Resolving a path one component at a time, as the kernel would: a symlink is replaced by its
//! target before the next component is looked at, so `..` after a symlinked folder goes to the
//! target's parent. Unlike `std::fs::canonicalize` this also resolves a path whose tail does not
//! exist (a write target), and reports how much of it is missing.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use super::Resolved;
use crate::tools::ToolError;

/// At most this many symlinks per path (Linux's `MAXSYMLINKS`); more is a loop.
const MAX_LINKS: usize = 40;

/// A failure, and the resolved folder it happened in (to tell inside from outside).
#[derive(Debug)]
pub(super) struct WalkError {
    pub(super) at: PathBuf,
    pub(super) error: ToolError,
}

/// Resolves the absolute path `start`. `follow_last`: whether a symlink as the last component is
/// replaced by its target.
pub(super) fn walk(start: &Path, follow_last: bool) -> Result<Resolved, WalkError> {
    // The components still to visit, last first (a symlink's target is pushed on top).
    let mut todo: Vec<Step> = steps(start);
    let mut cur = PathBuf::from("/");
    let mut missing = 0usize;
    let mut links = 0usize;
    // Whether `cur` is a folder: `..` after a file or a missing name fails, as in the kernel.
    let mut is_dir = true;

    while let Some(step) = todo.pop() {
        match step {
            Step::Root => {
                cur = PathBuf::from("/");
                missing = 0;
                is_dir = true;
            }
            Step::Parent => {
                if missing > 0 {
                    return Err(WalkError {
                        at: cur,
                        error: ToolError::NoSuchFile,
                    });
                }
                if !is_dir {
                    return Err(WalkError {
                        at: cur,
                        error: ToolError::WrongKind(
                            "a path component is a file, not a folder".to_owned(),
                        ),
                    });
                }
                cur.pop();
            }
            Step::Name(name) => {
                let candidate = cur.join(&name);
                if missing > 0 {
                    // Below a missing folder nothing exists, and so nothing is a symlink.
                    cur = candidate;
                    missing += 1;
                    continue;
                }
                match std::fs::symlink_metadata(&candidate) {
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        cur = candidate;
                        missing = 1;
                    }
                    Err(e) => {
                        return Err(WalkError {
                            at: cur,
                            error: not_a_folder_or(&e),
                        })
                    }
                    Ok(m) if m.file_type().is_symlink() && (follow_last || !todo.is_empty()) => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(WalkError {
                                at: cur,
                                error: ToolError::BadArgument(
                                    "path: too many levels of symbolic links".to_owned(),
                                ),
                            });
                        }
                        let target = std::fs::read_link(&candidate).map_err(|e| WalkError {
                            at: cur.clone(),
                            error: ToolError::io("read link", &e),
                        })?;
                        // A relative target is taken from the link's folder, `cur`; an absolute
                        // one starts with `Root`.
                        todo.extend(steps(&target));
                    }
                    Ok(m) => {
                        is_dir = m.is_dir();
                        cur = candidate;
                    }
                }
            }
        }
    }
    Ok(Resolved { path: cur, missing })
}

/// One component to visit.
enum Step {
    Root,
    Parent,
    Name(std::ffi::OsString),
}

/// `p`'s components as steps, last first (`.` dropped).
fn steps(p: &Path) -> Vec<Step> {
    let mut out: Vec<Step> = p
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Step::Root),
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    out.reverse();
    out
}

/// A lookup error: a file used as a folder is the caller's mistake, the rest is internal.
fn not_a_folder_or(e: &std::io::Error) -> ToolError {
    if e.kind() == ErrorKind::NotADirectory {
        ToolError::WrongKind("a path component is a file, not a folder".to_owned())
    } else {
        ToolError::io("look up path", e)
    }
}
