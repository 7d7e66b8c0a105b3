//! Where lines go: the [`AuditSink`] trait and the synchronous [`FileSink`].

use std::{
    fs::{File, OpenOptions, Permissions},
    io::{self, Write},
    os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

/// Appends whole lines durably. An `Err` means the line may not be in the log: the chain is not
/// advanced and the write being audited is refused.
pub trait AuditSink: Send {
    /// The log's length in bytes (0 when it does not exist), so the writer notices a log that
    /// changed under it.
    fn file_len(&self) -> io::Result<u64>;

    /// Appends `line` (which ends in `\n`) and makes it durable before returning the log's new
    /// length.
    fn append(&mut self, line: &[u8]) -> io::Result<u64>;
}

/// The audit log file (`<state>/audit.log`, SPEC §2 and §7).
///
/// Each append opens the file by name with `O_APPEND | O_CREAT` and mode 0600, tightens a wider
/// mode to 0600 (with a log line), writes the whole line with one `write_all` and `fdatasync`s it;
/// the first line of a new file also syncs the directory so that the file itself survives a crash.
///
/// If the file does not end in `\n` (a crash cut the previous write short), the line is preceded by
/// a `\n`, so the torn fragment stays on a line of its own: the verifier reports it as an
/// interrupted write and checks that the chain continues across it. If a write or sync fails, the
/// file is cut back to its length before the append (best effort), so a failed append leaves no
/// half line and no uncommitted whole line behind.
#[derive(Debug, Clone)]
pub struct FileSink {
    path: PathBuf,
}

impl FileSink {
    /// A sink appending to the file at `path`; nothing is opened until the first append.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AuditSink for FileSink {
    fn file_len(&self) -> io::Result<u64> {
        match std::fs::metadata(&self.path) {
            Ok(meta) => Ok(meta.len()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(err) => Err(err),
        }
    }

    fn append(&mut self, line: &[u8]) -> io::Result<u64> {
        // Opened on every append rather than kept open: the log is found by its name each time, so
        // a log that was moved, deleted or replaced (a test puts a directory in its place) makes this
        // append fail — and the write it records be refused — instead of landing in an unlinked
        // file that nobody reads.
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&self.path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("audit log is not a regular file"));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            file.set_permissions(Permissions::from_mode(0o600))?;
            tracing::warn!(
                path = %self.path.display(),
                old_mode = %format_args!("{mode:o}"),
                "audit log was open to others; tightened it to 0600"
            );
        }

        let len = meta.len();
        #[cfg(feature = "fault-injection")]
        let written =
            injected_full_disk(&self.path, &file, line).and_then(|()| write_line(&file, len, line));
        #[cfg(not(feature = "fault-injection"))]
        let written = write_line(&file, len, line);
        let written = written.and_then(|written| {
            crate::disk::wait(|| file.sync_data())?;
            if len == 0 {
                sync_parent_dir(&self.path)?;
            }
            Ok(written)
        });
        match written {
            Ok(written) => Ok(len + written),
            Err(err) => {
                // Best effort: the append has failed either way, and the caller says so.
                let _ = file.set_len(len).and_then(|()| file.sync_data());
                Err(err)
            }
        }
    }
}

/// Writes `line` with one `write_all`, after a `\n` if the file ends inside a line; returns the
/// number of bytes written.
fn write_line(mut file: &File, len: u64, line: &[u8]) -> io::Result<u64> {
    let mut last = [0u8; 1];
    if len > 0 {
        file.read_exact_at(&mut last, len - 1)?;
    }
    let bytes = if len > 0 && last[0] != b'\n' {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.push(b'\n');
        buf.extend_from_slice(line);
        file.write_all(&buf)?;
        buf.len()
    } else {
        file.write_all(line)?;
        line.len()
    };
    u64::try_from(bytes).map_err(io::Error::other)
}

/// Test-only (feature `fault-injection`): the file beside the log whose presence makes every
/// append fail as a full disk does — half the line written, then `ENOSPC` — for the tests that
/// cannot mount a small filesystem of their own (decision 0004).
#[cfg(feature = "fault-injection")]
pub(crate) const FULL_DISK_MARKER: &str = "audit.log.nospace";

/// Test-only (feature `fault-injection`): with [`FULL_DISK_MARKER`] beside the log, writes the
/// first half of `line` and fails with `ENOSPC`, as a write that ran out of space does.
#[cfg(feature = "fault-injection")]
fn injected_full_disk(path: &Path, mut file: &File, line: &[u8]) -> io::Result<()> {
    if !path.with_file_name(FULL_DISK_MARKER).exists() {
        return Ok(());
    }
    file.write_all(&line[..line.len() / 2])?;
    Err(io::Error::from(io::ErrorKind::StorageFull))
}

fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = File::open(dir)?;
    crate::disk::wait(|| dir.sync_all())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn creates_the_file_0600_and_appends_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut sink = FileSink::new(&path);
        assert_eq!(sink.file_len().unwrap(), 0);
        assert_eq!(sink.append(b"one\n").unwrap(), 4);
        assert_eq!(sink.append(b"two\n").unwrap(), 8);
        assert_eq!(sink.file_len().unwrap(), 8);
        assert_eq!(fs::read(&path).unwrap(), b"one\ntwo\n");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn tightens_a_wider_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        fs::write(&path, b"").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        FileSink::new(&path).append(b"x\n").unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_directory_in_the_files_place_fails_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut sink = FileSink::new(&path);
        sink.append(b"one\n").unwrap();
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(sink.append(b"two\n").is_err());
    }

    #[test]
    fn a_torn_last_line_gets_its_own_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        fs::write(&path, b"one\n{\"v\":1,\"se").unwrap();
        let len = FileSink::new(&path).append(b"two\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one\n{\"v\":1,\"se\ntwo\n");
        assert_eq!(len, fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn a_missing_directory_fails_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone").join("audit.log");
        assert!(FileSink::new(path).append(b"x\n").is_err());
    }
}
