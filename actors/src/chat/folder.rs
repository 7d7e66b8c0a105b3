//! Reaching a transcript without leaving the agent's folder.
//!
//! The folder to look in is named by the program in the pane (its `HOME`, its working folder),
//! so it may be crafted: a symlink to `~/.ssh`, a hard link to a key, a FIFO that never answers.
//! The walk starts from a handle on the root the environment names (resolved once: a home may
//! itself be reached through links) and descends one folder at a time with
//! `O_NOFOLLOW | O_DIRECTORY`, each folder this user's own; a file is opened `O_NOFOLLOW |
//! O_NONBLOCK` and read only when it is a regular file of this user with a single link. A
//! symlink anywhere below the root ends the walk.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{fstat, openat, Dir, FileType, Mode, OFlags, Stat, CWD};

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// A folder reached by the rules above.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
}

/// An entry of a folder: its name, whether it is a folder, and when it was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name.
    pub name: OsString,
    /// A folder (else a regular file; nothing else is listed).
    pub is_dir: bool,
    /// Last write, seconds since the epoch.
    pub mtime: i64,
}

fn mine(st: &Stat) -> bool {
    st.st_uid == nix::unistd::geteuid().as_raw()
}

/// Whether `name` is one plain component (not empty, `.`, `..`, and without `/`).
fn plain(name: &OsStr) -> bool {
    let b = name.as_encoded_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/')
}

impl Folder {
    /// `root` (resolved), then each of `below` without following a symlink; every folder this
    /// user's own.
    pub fn open(root: &Path, below: &[&str]) -> Option<Folder> {
        let root = root.canonicalize().ok()?;
        let fd = openat(CWD, &root, DIR, Mode::empty()).ok()?;
        let mut folder = Folder { fd };
        if !mine(&fstat(&folder.fd).ok()?) {
            return None;
        }
        for part in below {
            folder = folder.child(OsStr::new(part))?;
        }
        Some(folder)
    }

    /// The folder `name` in this one, not through a symlink, and this user's own.
    pub fn child(&self, name: &OsStr) -> Option<Folder> {
        if !plain(name) {
            return None;
        }
        let fd = openat(&self.fd, name, DIR, Mode::empty()).ok()?;
        mine(&fstat(&fd).ok()?).then_some(Folder { fd })
    }

    /// The folders and regular files in this folder (symlinks and the rest left out), at most
    /// `limit` of them.
    pub fn entries(&self, limit: usize) -> Vec<Entry> {
        let Ok(mut dir) = Dir::read_from(&self.fd) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        while let Some(Ok(entry)) = dir.next() {
            if out.len() >= limit {
                break;
            }
            let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
            if !plain(&name) {
                continue;
            }
            let Ok(st) = rustix::fs::statat(&self.fd, &name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            let is_dir = match FileType::from_raw_mode(st.st_mode as _) {
                FileType::Directory => true,
                FileType::RegularFile => false,
                _ => continue,
            };
            #[allow(clippy::unnecessary_cast)]
            out.push(Entry {
                name,
                is_dir,
                mtime: st.st_mtime as i64,
            });
        }
        out
    }

    /// The transcript `name` in this folder: opened only if it is a regular file of this user
    /// with one link.
    pub fn file(&self, name: &OsStr) -> Option<File> {
        if !plain(name) {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = openat(&self.fd, name, flags, Mode::empty()).ok()?;
        let st = fstat(&fd).ok()?;
        let regular = FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile;
        (regular && mine(&st) && st.st_nlink == 1).then(|| File::from(fd))
    }
}
