//! Replacing a private file whole (SPEC §2: files that can hold a secret are 0600; nothing
//! half-written is ever read as whole): the one atomic write of Collie's own small state files —
//! `sources.json`, `sent.jsonl`, `commands-recent.json`.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `bytes` to a fresh 0600 temp file beside `path`, syncs it, renames it over `path` and
/// syncs the folder. A reader sees the old file or the new one, never half of one; on failure the
/// temp file is removed and `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_then(path, bytes, || {})
}

/// [`write_atomic`], running `before_rename` once the new bytes are durable in their temp file and
/// before they take `path`'s name: the one moment a crash would leave both files, which the crash
/// test of `collie apply` interrupts (a process killed there leaves `path` as it was).
pub fn write_atomic_then(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce(),
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        crate::disk::wait(|| file.sync_all())?;
        before_rename();
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn replaces_whole_and_private_and_leaves_no_temp_on_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        fs::write(&path, b"old").expect("write");
        write_atomic(&path, b"new").expect("replace");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A folder where the file should be: the rename fails, the folder stays, no temp is left.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).expect("mkdir");
        fs::write(blocked.join("x"), b"x").expect("write");
        assert!(write_atomic(&blocked, b"y").is_err());
        assert!(blocked.is_dir());
        let left: Vec<_> = fs::read_dir(dir.path())
            .expect("ls")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
