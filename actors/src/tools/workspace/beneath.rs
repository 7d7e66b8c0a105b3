//! Opening a resolved path beneath a workspace root's directory handle (SPEC §15: "never by
//! checking a path and opening it again").
//!
//! The lookup ([`walk`](super::walk)) turns what a caller typed into a path with every symlink
//! replaced and every `..` folded, and the guard rules are checked on that path. What is opened is
//! exactly that path, relative to a handle on the workspace root, with `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: the kernel refuses to leave the root and to follow any
//! symlink on the way, the last component included. A folder swapped for a symlink between the
//! lookup and the open therefore fails the open (`ELOOP`) instead of leading out of the
//! workspace; the lookup only chooses the path, the open alone decides where it lands.
//!
//! Where `openat2` is missing (a kernel before 5.6, or not Linux), or keeps answering `EAGAIN`
//! (it does while other processes rename things), the same open is made one component at a time
//! with `openat(…, O_NOFOLLOW)`, each folder from the handle of the one before: as strict, a few
//! more system calls.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{openat, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::tools::ToolError;

/// Flags of every folder opened on the way.
const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Set once `openat2` answered `ENOSYS`: the component walk is used from then on.
#[cfg(target_os = "linux")]
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `rel` (relative, plain names only; empty: `dir` itself) beneath `dir` with `flags`,
/// following no symlink anywhere. `O_NOFOLLOW` and `O_CLOEXEC` are always added.
pub(crate) fn open_at(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let names = names(rel)?;
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(target_os = "linux")]
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        use rustix::fs::{openat2, ResolveFlags};
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let target: &Path = if names.is_empty() {
            Path::new(".")
        } else {
            rel
        };
        // EAGAIN: the kernel saw a rename somewhere during the lookup and would not vouch for
        // it (a busy machine renames all the time); after a few tries the walk below, which
        // does not depend on that, answers instead.
        for _ in 0..4 {
            match openat2(dir, target, flags, mode, how) {
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                other => return other,
            }
        }
    }
    walk_open(dir, &names, flags, mode)
}

/// [`open_at`] without `openat2`: one `openat` per component, none followed.
pub(crate) fn walk_open(
    dir: BorrowedFd<'_>,
    names: &[&OsStr],
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let Some((last, folders)) = names.split_last() else {
        return openat(dir, ".", flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode);
    };
    let mut cur: Option<OwnedFd> = None;
    for name in folders {
        let at = cur.as_ref().map_or(dir, AsFd::as_fd);
        cur = Some(openat(at, *name, DIR, Mode::empty())?);
    }
    let at = cur.as_ref().map_or(dir, AsFd::as_fd);
    openat(at, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode)
}

/// `rel`'s names; anything but a plain name (`/`, `.`, `..`) is `EXDEV`, as `RESOLVE_BENEATH`
/// answers an escape.
fn names(rel: &Path) -> Result<Vec<&OsStr>, Errno> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(Errno::XDEV),
        })
        .collect()
}

/// Opens the folder at the canonical absolute `root` with no symlink on the way: a root is
/// stored canonical, so a link there now was put there since.
pub(crate) fn open_root(root: &Path) -> Result<OwnedFd, Errno> {
    let rel = root.strip_prefix("/").map_err(|_| Errno::XDEV)?;
    let slash = openat(CWD, "/", DIR, Mode::empty())?;
    open_at(
        slash.as_fd(),
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
}

/// A failed open beneath a root, in a tool's words: a symlink met (`ELOOP`) or an escape
/// refused (`EXDEV`) can only be a link put there since the lookup, which saw none — refused as
/// a path out of the workspace is.
pub(crate) fn refusal(what: &str, e: Errno) -> ToolError {
    match e {
        Errno::LOOP | Errno::XDEV => ToolError::OutsideWorkspace,
        Errno::NOENT => ToolError::NoSuchFile,
        Errno::NOTDIR => ToolError::WrongKind("a path component is a file, not a folder".into()),
        Errno::ISDIR => ToolError::WrongKind("a folder, not a file".into()),
        Errno::EXIST => ToolError::AlreadyExists,
        other => ToolError::io(what, &std::io::Error::from(other)),
    }
}

/// A folder opened beneath a root and a name in it: where an entry is created, replaced,
/// renamed or looked at without any path being resolved again.
#[derive(Debug)]
pub(crate) struct Parent {
    /// The folder.
    pub(crate) dir: OwnedFd,
    /// The entry's name in it.
    pub(crate) name: OsString,
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn fd(p: &Path) -> OwnedFd {
        open_root(p).expect("open root")
    }

    #[test]
    fn links_and_escapes_are_refused_both_ways() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(t.path()).expect("canonical");
        std::fs::create_dir(root.join("d")).expect("mkdir");
        std::fs::write(root.join("d/f"), "x").expect("write");
        symlink(root.join("d"), root.join("abs")).expect("link");
        symlink("d", root.join("rel")).expect("link");
        let r = fd(&root);
        let read = OFlags::RDONLY;
        assert!(open_at(r.as_fd(), Path::new("d/f"), read, Mode::empty()).is_ok());
        assert!(open_at(r.as_fd(), Path::new(""), read, Mode::empty()).is_ok());
        for bad in ["abs/f", "rel/f", "rel", "../x", "d/../d/f", "/etc/passwd"] {
            let e = open_at(r.as_fd(), Path::new(bad), read, Mode::empty());
            assert!(e.is_err(), "{bad}");
            let names: Vec<&OsStr> = Path::new(bad).iter().collect();
            if !bad.contains("..") && !bad.starts_with('/') {
                let w = walk_open(r.as_fd(), &names, read, Mode::empty());
                assert!(w.is_err(), "{bad}");
            }
        }
        // A root whose path holds a link is refused too.
        assert!(open_root(&root.join("rel")).is_err());
        assert!(open_root(&root.join("d")).is_ok());
    }
}
