//! Reading and writing `sent.jsonl` and `commands-recent.json`: created 0600, a wider mode
//! tightened (and logged) when Collie opens the file, every rewrite atomic (a temp file beside
//! it, fsync, rename, fsync of the folder), reads bounded before anything is allocated.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::entry::{self, Entry};
use super::recent::Recent;
use super::SentError;

/// The most of `sent.jsonl` that is read: its newest 16 MiB (500 lines of 4,096 characters fit
/// with room to spare; a file grown past it by hand loses its oldest lines, not the bridge).
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// The largest `commands-recent.json` that is read (12 lines of 4,096 characters fit).
pub const MAX_RECENT_BYTES: u64 = 1024 * 1024;

fn io(path: &Path) -> impl Fn(std::io::Error) -> SentError + '_ {
    move |e| SentError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

/// Tightens `file` to 0600 when others could read it.
fn tighten(file: &File, path: &Path) -> Result<(), SentError> {
    let mode = file.metadata().map_err(io(path))?.mode() & 0o777;
    if mode & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io(path))?;
        tracing::warn!(
            file = %path.display(),
            mode = format!("{mode:o}"),
            "tightened to 0600 (it holds lines sent to shells)"
        );
    }
    Ok(())
}

/// Opens `path` for reading (tightened), or `None` when it does not exist.
fn open(path: &Path) -> Result<Option<File>, SentError> {
    match File::open(path) {
        Ok(f) => {
            tighten(&f, path)?;
            Ok(Some(f))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// The log's entries, oldest first (at most the newest [`entry::MAX_ENTRIES`]); none when the
/// file does not exist.
pub fn load_log(path: &Path) -> Result<Vec<Entry>, SentError> {
    let Some(mut file) = open(path)? else {
        return Ok(Vec::new());
    };
    let len = file.metadata().map_err(io(path))?.len();
    let start = len.saturating_sub(MAX_LOG_BYTES);
    file.seek(SeekFrom::Start(start)).map_err(io(path))?;
    let mut bytes = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    file.take(MAX_LOG_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    let text = String::from_utf8_lossy(&bytes);
    // Read from the middle of the file: the first piece is the tail of a line.
    let text = if start > 0 {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        text.as_ref()
    };
    let (mut entries, skipped) = entry::parse(text);
    if skipped > 0 {
        tracing::warn!(file = %path.display(), skipped, "unreadable lines in the sent log skipped");
    }
    entry::trim(&mut entries);
    Ok(entries)
}

/// Appends `e` to the log (the file created 0600 if missing), synced to disk.
pub fn append_log(path: &Path, e: &Entry) -> Result<(), SentError> {
    let mut line = serde_json::to_string(e).map_err(|e| io(path)(std::io::Error::other(e)))?;
    line.push('\n');
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path))?;
    tighten(&file, path)?;
    file.write_all(line.as_bytes()).map_err(io(path))?;
    crate::disk::wait(|| file.sync_data()).map_err(io(path))
}

/// Replaces the log with `entries`, atomically.
pub fn rewrite_log(path: &Path, entries: &[Entry]) -> Result<(), SentError> {
    write_atomic(path, entry::render(entries).as_bytes())
}

/// The recent commands; an empty list when the file does not exist.
pub fn load_recent(path: &Path) -> Result<Recent, SentError> {
    let Some(file) = open(path)? else {
        return Ok(Recent::default());
    };
    let mut bytes = Vec::new();
    file.take(MAX_RECENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path))?;
    if bytes.len() as u64 > MAX_RECENT_BYTES {
        return Err(SentError::Unreadable {
            path: path.to_owned(),
        });
    }
    let mut recent: Recent = serde_json::from_slice(&bytes).map_err(|_| SentError::Unreadable {
        path: path.to_owned(),
    })?;
    recent.commands.truncate(super::recent::MAX_RECENT);
    Ok(recent)
}

/// Replaces the recent commands, atomically.
pub fn save_recent(path: &Path, recent: &Recent) -> Result<(), SentError> {
    let bytes = serde_json::to_vec(recent).map_err(|e| io(path)(std::io::Error::other(e)))?;
    write_atomic(path, &bytes)
}

/// Writes `bytes` to a fresh 0600 temp file beside `path`, syncs it, renames it over `path` and
/// syncs the folder; on failure the temp file is removed and `path` is as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SentError> {
    crate::private_file::write_atomic(path, bytes).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).expect("meta").mode() & 0o777
    }

    fn entry(id: u64) -> Entry {
        Entry {
            id,
            ts: "2026-01-01T00:00:00Z".into(),
            machine: "m".into(),
            pane: "t0-1".into(),
            line: format!("echo {id}"),
        }
    }

    #[test]
    fn created_private_and_tightened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(super::super::SENT_FILE);
        append_log(&path, &entry(1)).expect("append");
        assert_eq!(mode(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        append_log(&path, &entry(2)).expect("append");
        assert_eq!(mode(&path), 0o600, "append tightens");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(load_log(&path).expect("load").len(), 2);
        assert_eq!(mode(&path), 0o600, "reading tightens");
        rewrite_log(&path, &[entry(2)]).expect("rewrite");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(load_log(&path).expect("load"), [entry(2)]);
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "no temp file stays");
    }

    #[test]
    fn a_failed_rewrite_leaves_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sent.jsonl");
        append_log(&path, &entry(1)).expect("append");
        // A directory where the temp file's folder should be writable is not enough as root, so
        // the target is made a folder elsewhere: renaming a file over a non-empty folder fails.
        let blocked = dir.path().join("blocked");
        fs::create_dir_all(blocked.join("inside")).expect("mkdir");
        assert!(rewrite_log(&blocked, &[entry(2)]).is_err());
        assert!(blocked.join("inside").is_dir());
        assert_eq!(load_log(&path).expect("load"), [entry(1)]);
    }

    #[test]
    fn recent_round_trip_and_bad_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(super::super::RECENT_FILE);
        assert_eq!(load_recent(&path).expect("missing"), Recent::default());
        let mut r = Recent::default();
        r.push("ls");
        save_recent(&path, &r).expect("save");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(load_recent(&path).expect("load"), r);
        fs::write(&path, "not json").expect("write");
        assert!(load_recent(&path).is_err());
    }
}
