//! The state dir on disk: created 0700, files created 0600, wider modes tightened at start (SPEC §2).
//!
//! Also the local secret (SPEC §4.6): a fresh random value written at each start and deleted on a
//! clean exit, which lets the CLI read its own bridge over HTTP.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::RngCore;

/// The file holding the local secret.
pub const LOCAL_SECRET_FILE: &str = collie_actors::state_files::LOCAL_SECRET;

/// Creates the state dir (0700) if needed and tightens it and every file in it (recursively) to
/// 0700/0600. Returns one line per change, which the bridge logs.
pub fn prepare_state_dir(dir: &Path) -> Result<Vec<String>> {
    fs::create_dir_all(dir).with_context(|| format!("creating state dir {}", dir.display()))?;
    let mut changes = Vec::new();
    tighten(dir, &mut changes)?;
    Ok(changes)
}

fn tighten(path: &Path, changes: &mut Vec<String>) -> Result<()> {
    let meta = fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let want = if meta.is_dir() { 0o700 } else { 0o600 };
    let mode = meta.permissions().mode() & 0o777;
    if mode & !want != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode & want))
            .with_context(|| format!("tightening {}", path.display()))?;
        changes.push(format!(
            "tightened {} from {:o} to {:o}",
            path.display(),
            mode,
            mode & want
        ));
    }
    if meta.is_dir() {
        for entry in fs::read_dir(path).with_context(|| format!("listing {}", path.display()))? {
            tighten(&entry?.path(), changes)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename) with mode 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Creates a fresh local secret (256 random bits, hex) and writes it to `<state>/local-secret`.
pub fn write_local_secret(state_dir: &Path) -> Result<String> {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = hex::encode(bytes);
    write_private(&state_dir.join(LOCAL_SECRET_FILE), secret.as_bytes())?;
    Ok(secret)
}

/// Reads the local secret, if the bridge is running.
pub fn read_local_secret(state_dir: &Path) -> Option<String> {
    fs::read_to_string(state_dir.join(LOCAL_SECRET_FILE))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Files a clean exit removes.
pub fn ephemeral_files(state_dir: &Path) -> [PathBuf; 3] {
    [
        state_dir.join(LOCAL_SECRET_FILE),
        state_dir.join(collie_actors::state_files::CONTROL_SOCKET),
        state_dir.join(crate::config::HOOK_SOCKET),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_modes_are_tightened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("s");
        fs::create_dir(&state).expect("mkdir");
        fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).expect("chmod");
        let f = state.join("audit.log");
        fs::write(&f, "x").expect("write");
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).expect("chmod");
        let changes = prepare_state_dir(&state).expect("prepare");
        assert_eq!(changes.len(), 2, "{changes:?}");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&f), 0o600);
        assert!(prepare_state_dir(&state).expect("again").is_empty());
    }

    #[test]
    fn local_secret_is_private_and_fresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = write_local_secret(dir.path()).expect("write");
        let b = write_local_secret(dir.path()).expect("write");
        assert_ne!(a, b);
        assert_eq!(read_local_secret(dir.path()).as_deref(), Some(b.as_str()));
        let mode = fs::metadata(dir.path().join(LOCAL_SECRET_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
