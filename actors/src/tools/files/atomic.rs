//! Replacing a file's bytes so that no reader ever sees a half-written file: the bytes go to a
//! new temp file in the target's folder (created exclusively, never through a symlink), which is
//! synced, given the permissions (and, where allowed, the owner) to keep, checked against the
//! precondition, and renamed over the target; then the folder is synced so the rename survives a
//! crash. On every failure the temp file is removed and the target is untouched.
//!
//! The precondition — the file is still the version that was read — is checked after the temp file
//! is complete and synced, as late as possible; the rename follows at once. A writer that lands
//! in between those two steps loses its write: that window is what remains of the check-then-rename
//! race (seed 003 §8.8 accepts "size/mtime/hash checked before the commit"). Decision 0030.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::libc;
use rand::RngCore;

use super::open::Stamp;
use super::WRITE_CAP;
use crate::tools::ToolError;

/// What to write where.
pub(super) struct Replace<'a> {
    /// The resolved target; its folder exists.
    pub(super) target: &'a Path,
    /// The new content.
    pub(super) bytes: &'a [u8],
    /// The version the new content was made from: the target must still be it at the rename.
    pub(super) expect: Option<&'a Stamp>,
    /// The existing file's permissions and owner to keep; `None` makes a new file 0644 less the
    /// umask.
    pub(super) keep: Option<&'a Stamp>,
}

/// Writes `r` atomically. `before_commit` runs after the temp file is synced and before the
/// precondition is checked: a test's hook to change the file meanwhile (a no-op otherwise).
pub(super) fn replace(r: Replace<'_>, before_commit: &mut dyn FnMut()) -> Result<(), ToolError> {
    let folder = r
        .target
        .parent()
        .ok_or_else(|| ToolError::WrongKind("not a file path".to_owned()))?;
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
        if !expect.still(r.target, WRITE_CAP)? {
            return Err(ToolError::Conflict);
        }
    }
    std::fs::rename(&temp.path, r.target).map_err(|e| match e.raw_os_error() {
        Some(libc::EISDIR | libc::ENOTEMPTY | libc::EEXIST) => {
            ToolError::WrongKind("a folder, not a file".to_owned())
        }
        _ => ToolError::io("rename temp file", &e),
    })?;
    temp.committed = true;
    // The rename is done; a folder that cannot be synced only weakens durability after a crash.
    if let Ok(dir) = File::open(folder) {
        if let Err(e) = dir.sync_all() {
            tracing::warn!(error = %e, "sync folder after rename");
        }
    }
    Ok(())
}

/// A temp file that removes itself unless committed.
struct TempFile {
    path: PathBuf,
    file: File,
    committed: bool,
}

impl TempFile {
    /// A new file `.collie-<random>.tmp` in `folder`, 0600 when its permissions are set later,
    /// else 0644 less the umask.
    fn create(folder: &Path, private: bool) -> Result<TempFile, ToolError> {
        let mut rng = rand::thread_rng();
        for _ in 0..8 {
            let mut tag = [0u8; 8];
            rng.fill_bytes(&mut tag);
            let path = folder.join(format!(".collie-{}.tmp", hex::encode(tag)));
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(if private { 0o600 } else { 0o644 })
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path);
            match opened {
                Ok(file) => {
                    return Ok(TempFile {
                        path,
                        file,
                        committed: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(ToolError::io("create temp file", &e)),
            }
        }
        Err(ToolError::Internal(
            "create temp file: names kept colliding".to_owned(),
        ))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!(error = %e, "remove temp file");
            }
        }
    }
}
