//! Opening and reading a resolved file: opened beneath its workspace root's handle following no
//! symlink (`Workspaces::open`: a link swapped in anywhere on the path since it was resolved
//! fails the open instead of being followed) and `O_NONBLOCK` (a FIFO swapped in does not hang
//! the call), and only a regular file is read — never more than the cap, which is checked
//! against the size before any byte is read.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use rustix::fs::{Mode, OFlags};
use sha2::{Digest, Sha256};

use crate::tools::workspace::{open_at, refusal, Parent, Workspaces};
use crate::tools::ToolError;

/// Opens the regular file at the resolved `path` for reading, beneath its workspace root.
pub(super) fn open_regular(ws: &Workspaces, path: &Path) -> Result<(File, Metadata), ToolError> {
    regular(File::from(ws.open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK,
        Mode::empty(),
    )?))
}

/// Opens the regular file `name` in the folder `dir` for reading, not following a symlink.
pub(super) fn open_regular_in(dir: &Parent) -> Result<(File, Metadata), ToolError> {
    let fd = open_at(
        dir.dir.as_fd(),
        Path::new(&dir.name),
        OFlags::RDONLY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| refusal("open", e))?;
    regular(File::from(fd))
}

/// What the entry `name` in the folder `dir` is, not following a symlink (a symlink there now
/// was put there since the lookup: refused as a path out of the workspace).
pub(super) fn stat_in(dir: &Parent) -> Result<rustix::fs::Stat, ToolError> {
    let st = rustix::fs::statat(&dir.dir, &dir.name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| refusal("stat", e))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
        return Err(ToolError::OutsideWorkspace);
    }
    Ok(st)
}

/// `file` and its metadata, if it is a regular file.
fn regular(file: File) -> Result<(File, Metadata), ToolError> {
    let meta = file.metadata().map_err(|e| ToolError::io("stat", &e))?;
    if meta.is_dir() {
        return Err(ToolError::WrongKind("a folder, not a file".to_owned()));
    }
    if !meta.is_file() {
        return Err(ToolError::WrongKind("not a regular file".to_owned()));
    }
    Ok((file, meta))
}

/// All of `file`'s bytes, refused with `ResourceLimit(cap_name)` when it holds more than `cap`
/// (checked on the size first, and again while reading, for a file that grows).
pub(super) fn read_capped(
    file: &mut File,
    meta: &Metadata,
    cap: u64,
    cap_name: &'static str,
) -> Result<Vec<u8>, ToolError> {
    if meta.len() > cap {
        return Err(ToolError::ResourceLimit(cap_name));
    }
    // `meta.len() <= cap`, a few MiB: the allocation is bounded.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", &e))?;
    if bytes.len() as u64 > cap {
        return Err(ToolError::ResourceLimit(cap_name));
    }
    Ok(bytes)
}

/// What identifies one version of a file: its size, modification time and the SHA-256 of its
/// bytes. Two reads with equal stamps read the same file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) size: u64,
    pub(super) modified: Option<SystemTime>,
    pub(super) sha256: [u8; 32],
    pub(super) mode: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
}

impl Stamp {
    pub(super) fn of(meta: &Metadata, bytes: &[u8]) -> Stamp {
        Stamp {
            size: bytes.len() as u64,
            modified: meta.modified().ok(),
            sha256: sha256(bytes),
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }

    /// The fingerprint `read_file` answers: the hex SHA-256 of the bytes.
    pub(super) fn fingerprint(&self) -> String {
        hex::encode(self.sha256)
    }

    /// Whether the file `file` (just opened) is still this version (re-reads it).
    pub(super) fn still(
        &self,
        opened: Result<(File, Metadata), ToolError>,
        cap: u64,
    ) -> Result<bool, ToolError> {
        let (mut file, meta) = match opened {
            Ok(f) => f,
            // Gone, a folder, a symlink or a FIFO now: not the file that was read.
            Err(ToolError::Internal(detail)) => return Err(ToolError::Internal(detail)),
            Err(_) => return Ok(false),
        };
        if meta.len() != self.size || meta.modified().ok() != self.modified {
            return Ok(false);
        }
        let bytes = match read_capped(&mut file, &meta, cap, "read size") {
            Ok(b) => b,
            Err(ToolError::ResourceLimit(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        Ok(sha256(&bytes) == self.sha256)
    }
}

/// The SHA-256 of `bytes`.
pub(super) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}
