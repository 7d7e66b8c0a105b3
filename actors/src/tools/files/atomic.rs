//! Replacing a file's bytes so that no reader ever sees a half-written file: the bytes go to a
//! new temp file in the target's folder — a handle opened beneath the workspace root, never a
//! path looked up again (decision 0049) — created exclusively, never through a symlink, which is
//! synced, given the permissions (and, where allowed, the owner) to keep, checked against the
//! precondition, and renamed over the target; then the folder is synced so the rename survives a
//! crash. On every failure the temp file is removed and the target is untouched.
//!
//! The precondition — the file is still the version that was read — is checked after the temp file
//! is complete and synced, as late as possible; the rename follows at once. A writer that lands
//! in between those two steps loses its write: that window is what remains of the check-then-rename
//! race (seed 003 §8.8 accepts "size/mtime/hash checked before the commit"). Decision 0030.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;

use rand::RngCore;
use rustix::fs::{fsync, openat, renameat, unlinkat, AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::open::{open_regular_in, Stamp};
use super::WRITE_CAP;
use crate::tools::workspace::{refusal, Parent};
use crate::tools::ToolError;

/// What to write where.
pub(super) struct Replace<'a> {
    /// The target: its folder, opened beneath the workspace root, and its name there.
    pub(super) target: &'a Parent,
    /// The new content.
    pub(super) bytes: &'a [u8],
    /// The version the new content was made from: the target must still be it at the rename.
    pub(super) expect: Option<&'a Stamp>,
    /// The existing file's permissions and owner to keep; `None` makes a new file 0644 less the
    /// umask.
    pub(super) keep: Option<&'a Stamp>,
}

/// Writes `r` atomically: the temp file is made in the target's folder handle and renamed
/// within it, so no path is looked up again. `before_commit` runs after the temp file is synced
/// and before the precondition is checked: a test's hook to change the file meanwhile (a no-op
/// otherwise).
pub(super) fn replace(r: Replace<'_>, before_commit: &mut dyn FnMut()) -> Result<(), ToolError> {
    let folder = r.target;
    let mut temp = TempFile::create(folder, r.keep.is_some())?;
    temp.file
        .write_all(r.bytes)
        .map_err(|e| ToolError::io("write temp file", &e))?;
    if let Some(keep) = r.keep {
        temp.file
            .set_permissions(std::fs::Permissions::from_mode(keep.mode))
            .map_err(|e| ToolError::io("chmod temp file", &e))?;
        // Keeping the owner only matters (and only works) when running as another user, such as
        // root editing a user's file; a refusal leaves the new file owned by the writer.
        let _ = std::os::unix::fs::fchown(&temp.file, Some(keep.uid), Some(keep.gid));
    }
    temp.file
        .sync_all()
        .map_err(|e| ToolError::io("sync temp file", &e))?;

    before_commit();
    if let Some(expect) = r.expect {
        if !expect.still(open_regular_in(folder), WRITE_CAP)? {
            return Err(ToolError::Conflict);
        }
    }
    renameat(&folder.dir, &temp.name, &folder.dir, &folder.name).map_err(|e| match e {
        Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST => {
            ToolError::WrongKind("a folder, not a file".to_owned())
        }
        other => refusal("rename temp file", other),
    })?;
    temp.committed = true;
    // The rename is done; a folder that cannot be synced only weakens durability after a crash.
    if let Err(e) = fsync(&folder.dir) {
        tracing::warn!(error = %e, "sync folder after rename");
    }
    Ok(())
}

/// A temp file that removes itself unless committed.
struct TempFile<'a> {
    folder: &'a Parent,
    name: OsString,
    file: File,
    committed: bool,
}

impl TempFile<'_> {
    /// A new file `.collie-<random>.tmp` in `folder`, 0600 when its permissions are set later,
    /// else 0644 less the umask.
    fn create(folder: &Parent, private: bool) -> Result<TempFile<'_>, ToolError> {
        let mut rng = rand::thread_rng();
        for _ in 0..8 {
            let mut tag = [0u8; 8];
            rng.fill_bytes(&mut tag);
            let name = OsString::from(format!(".collie-{}.tmp", hex::encode(tag)));
            let opened = openat(
                folder.dir.as_fd(),
                &name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(if private { 0o600 } else { 0o644 }),
            );
            match opened {
                Ok(fd) => {
                    return Ok(TempFile {
                        folder,
                        name,
                        file: File::from(fd),
                        committed: false,
                    })
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(refusal("create temp file", e)),
            }
        }
        Err(ToolError::Internal(
            "create temp file: names kept colliding".to_owned(),
        ))
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.committed {
            if let Err(e) = unlinkat(&self.folder.dir, &self.name, AtFlags::empty()) {
                tracing::warn!(error = %e, "remove temp file");
            }
        }
    }
}
