//! Looking at a repository's files without ever leaving the repository.
//!
//! A tracked path such as `conf/app.ini` names a file git expects under a real folder `conf`. If
//! someone with write access to the working tree (an agent, say) replaces `conf` with a symlink to
//! `/etc`, opening `<root>/conf/app.ini` by its path would read a file outside the workspace and
//! put it in a `read` device's answer, and checking the path first and opening it after leaves a
//! window to swap the link in between. So every stat, open and readlink here starts from a handle
//! on the repository's top and descends one folder at a time with `O_NOFOLLOW | O_DIRECTORY`: a
//! symlink anywhere on the way stops the descent, exactly as git treats a path "beyond a symbolic
//! link" (as gone). The last component is never followed either; a file is opened `O_NONBLOCK`
//! (a FIFO swapped in does not wait for a writer) and must turn out a regular file.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{openat, readlinkat, statat, AtFlags, FileType, Mode, OFlags, CWD};

/// What the working tree holds at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file of this many bytes.
    File(u64),
    /// A symbolic link (its content is its target, never what it points to).
    Link,
}

/// What a file's stat says, as far as the diff needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    /// A regular file (with its size) or a symlink.
    pub(super) kind: Kind,
    /// Seconds and nanoseconds of the last status change.
    pub(super) ctime: (i64, i64),
    /// Seconds and nanoseconds of the last content change.
    pub(super) mtime: (i64, i64),
    /// The inode number.
    pub(super) ino: u64,
}

/// A handle on a repository's top, and the folder looked at last (paths come in sorted order, so
/// neighbours share it).
pub(super) struct Beneath {
    root: OwnedFd,
    last: Option<(Vec<u8>, OwnedFd)>,
}

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Whether `rel` has a component git would never check out: empty, `.`, `..`, or `.git` in any
/// case. A crafted HEAD can still name one (`git mktree` writes a tree with `.git/config` in it);
/// such a path is never looked at, so the repository's own config — where a remote's URL may hold
/// a token — never reaches an answer.
pub(super) fn unsafe_path(rel: &[u8]) -> bool {
    rel.split(|&b| b == b'/')
        .any(|c| c.is_empty() || c == b"." || c == b".." || c.eq_ignore_ascii_case(b".git"))
}

/// `rel` split into its folder and its name; `None` for an [`unsafe_path`].
fn split(rel: &[u8]) -> Option<(&[u8], &OsStr)> {
    if unsafe_path(rel) {
        return None;
    }
    Some(match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], OsStr::from_bytes(&rel[i + 1..])),
        None => (&rel[..0], OsStr::from_bytes(rel)),
    })
}

impl Beneath {
    /// A handle on `root` (already canonical: the top itself may be reached through links).
    pub(super) fn new(root: &Path) -> Option<Beneath> {
        let root = openat(
            CWD,
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        Some(Beneath { root, last: None })
    }

    /// The folder `parent` (from the top), reached without following any symlink.
    fn dir(&mut self, parent: &[u8]) -> Option<&OwnedFd> {
        if parent.is_empty() {
            return Some(&self.root);
        }
        let cached = self.last.as_ref().is_some_and(|(p, _)| p == parent);
        if !cached {
            let mut fd: Option<OwnedFd> = None;
            for part in parent.split(|&b| b == b'/') {
                let next = match &fd {
                    None => openat(&self.root, OsStr::from_bytes(part), DIR, Mode::empty()),
                    Some(d) => openat(d, OsStr::from_bytes(part), DIR, Mode::empty()),
                };
                fd = Some(next.ok()?);
            }
            self.last = Some((parent.to_vec(), fd?));
        }
        self.last.as_ref().map(|(_, fd)| fd)
    }

    /// What is at `rel` now: a regular file or a symlink; `None` for nothing, a folder, anything
    /// else, or a path beyond a symlink.
    pub(super) fn stat(&mut self, rel: &[u8]) -> Option<Stat> {
        let (parent, name) = split(rel)?;
        let dir = self.dir(parent)?;
        let st = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let kind = match FileType::from_raw_mode(st.st_mode as _) {
            FileType::RegularFile => Kind::File(st.st_size as u64),
            FileType::Symlink => Kind::Link,
            _ => return None,
        };
        // The casts follow the platform's `struct stat` (field widths differ between targets).
        #[allow(clippy::unnecessary_cast)]
        Some(Stat {
            kind,
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ino: st.st_ino as u64,
        })
    }

    /// The regular file at `rel`, opened for reading.
    pub(super) fn open(&mut self, rel: &[u8]) -> Option<File> {
        let (parent, name) = split(rel)?;
        let dir = self.dir(parent)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let f = File::from(openat(dir, name, flags, Mode::empty()).ok()?);
        f.metadata().ok()?.is_file().then_some(f)
    }

    /// The target of the symlink at `rel` (its text, never what it points to).
    pub(super) fn read_link(&mut self, rel: &[u8]) -> Option<Vec<u8>> {
        let (parent, name) = split(rel)?;
        let dir = self.dir(parent)?;
        Some(readlinkat(dir, name, Vec::new()).ok()?.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_and_odd_components_are_refused() {
        assert_eq!(split(b"a/b/c"), Some((&b"a/b"[..], OsStr::new("c"))));
        assert_eq!(split(b"c"), Some((&b""[..], OsStr::new("c"))));
        assert_eq!(
            split(b".github/x"),
            Some((&b".github"[..], OsStr::new("x")))
        );
        assert_eq!(split(b"a.git/x"), Some((&b"a.git"[..], OsStr::new("x"))));
        for bad in [
            &b""[..],
            b"/abs",
            b"a//b",
            b"a/./b",
            b"a/../b",
            b"..",
            b"a/",
            b".git/config",
            b"sub/.GIT/config",
            b"x/.Git",
        ] {
            assert_eq!(split(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
