//! Reading an agent's settings file and replacing it atomically.
//!
//! A settings file belongs to the user and to their agent, so Collie writes it the careful way:
//! the new text goes to a temp file in the same directory, is fsynced, gets the old file's mode,
//! and is renamed over the old one — a reader sees the old file or the new one, never half of
//! either, and a failure at any step leaves the old file byte for byte. Just before the rename the
//! file is read again: when someone else (the agent itself, an editor) changed it meanwhile,
//! Collie stops rather than overwrite their change.
//!
//! A symbolic link (a settings file kept in a dotfiles repository) is followed: its target is
//! rewritten and the link stays a link. A new file is created 0600, and a missing parent
//! directory 0700.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The largest settings file Collie reads (checked before reading).
pub const MAX_SETTINGS_BYTES: u64 = 4 * 1024 * 1024;

/// Mode of a settings file Collie creates.
const NEW_FILE_MODE: u32 = 0o600;
/// Mode of a directory Collie creates for it.
const NEW_DIR_MODE: u32 = 0o700;

/// Why a settings file could not be read or written. The caller names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Over [`MAX_SETTINGS_BYTES`].
    #[error("larger than {} MiB; refusing to read it", MAX_SETTINGS_BYTES / 1024 / 1024)]
    TooLarge,
    /// A directory, a socket, …
    #[error("not a regular file")]
    NotAFile,
    /// A link whose target is missing: writing would replace the link, not fill its target.
    #[error("a symbolic link to a missing file")]
    DanglingLink,
    /// Reading failed.
    #[error("cannot read it: {0}")]
    Read(#[source] io::Error),
    /// Not JSON at all.
    #[error("not valid JSON: {0}")]
    Parse(#[source] serde_json::Error),
    /// Someone changed the file between Collie's read and its write.
    #[error("it changed while Collie was writing it; run the command again")]
    Changed,
    /// One step of the replacement failed.
    #[error("cannot write it ({step}): {source}")]
    Write {
        /// Which step.
        step: Step,
        /// What failed.
        source: io::Error,
    },
}

/// The steps of [`store`], named in errors (and where tests make one fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creating the missing parent directory.
    CreateDir,
    /// Creating the temp file beside the target.
    CreateTemp,
    /// Writing the new text.
    Write,
    /// Giving the temp file the old file's mode.
    SetMode,
    /// Flushing it to disk.
    Sync,
    /// Reading the target again to see that it is still what was read.
    Recheck,
    /// Renaming the temp file over the target.
    Rename,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::CreateDir => "creating its directory",
            Step::CreateTemp => "creating a temp file",
            Step::Write => "writing",
            Step::SetMode => "setting the mode",
            Step::Sync => "syncing",
            Step::Recheck => "reading it again",
            Step::Rename => "renaming into place",
        })
    }
}

/// A settings file as read, with what writing it back needs.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its JSON; `{}` for a missing or empty file.
    pub doc: Value,
    /// Whether the file was there.
    pub existed: bool,
    /// Where to write: the path, or the target of the link it is.
    target: PathBuf,
    /// The bytes read (to see whether the file changed before the rename).
    original: Option<Vec<u8>>,
    /// The mode to keep (0600 for a new file).
    mode: u32,
}

/// Reads `path`: a missing file is `{}`; an empty one too (it holds no settings, and `touch`
/// makes one). Anything over [`MAX_SETTINGS_BYTES`], not a file, or not JSON is an error.
pub fn load(path: &Path) -> Result<Loaded, FileError> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_ok() {
                return Err(FileError::DanglingLink);
            }
            return Ok(Loaded {
                doc: Value::Object(serde_json::Map::new()),
                existed: false,
                target: path.to_owned(),
                original: None,
                mode: NEW_FILE_MODE,
            });
        }
        Err(e) => return Err(FileError::Read(e)),
    };
    if !meta.is_file() {
        return Err(FileError::NotAFile);
    }
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(FileError::TooLarge);
    }
    let target = fs::canonicalize(path).map_err(FileError::Read)?;
    let bytes = read_capped(&target).map_err(FileError::Read)?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(FileError::TooLarge);
    }
    let doc = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&bytes).map_err(FileError::Parse)?
    };
    Ok(Loaded {
        doc,
        existed: true,
        target,
        original: Some(bytes),
        mode: meta.permissions().mode() & 0o7777,
    })
}

/// Replaces the file `loaded` came from with `doc` (pretty JSON and a newline).
pub fn store(loaded: &Loaded, doc: &Value) -> Result<(), FileError> {
    store_with(loaded, doc, &mut |_| Ok(()))
}

/// [`store`], calling `before` ahead of each step; an error from it fails that step (tests).
fn store_with(
    loaded: &Loaded,
    doc: &Value,
    before: &mut dyn FnMut(Step) -> io::Result<()>,
) -> Result<(), FileError> {
    let mut text = serde_json::to_vec_pretty(doc).map_err(|e| FileError::Write {
        step: Step::Write,
        source: io::Error::other(e),
    })?;
    text.push(b'\n');

    let path = &loaded.target;
    let fail = |step| move |source| FileError::Write { step, source };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        before(Step::CreateDir)
            .and_then(|()| {
                DirBuilder::new()
                    .recursive(true)
                    .mode(NEW_DIR_MODE)
                    .create(&dir)
            })
            .map_err(fail(Step::CreateDir))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.collie-{:016x}.tmp", rand::random::<u64>()));
    let result = (|| {
        before(Step::CreateTemp).map_err(fail(Step::CreateTemp))?;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(NEW_FILE_MODE)
            .open(&temp)
            .map_err(fail(Step::CreateTemp))?;
        before(Step::Write)
            .and_then(|()| file.write_all(&text))
            .map_err(fail(Step::Write))?;
        before(Step::SetMode)
            .and_then(|()| file.set_permissions(Permissions::from_mode(loaded.mode)))
            .map_err(fail(Step::SetMode))?;
        before(Step::Sync)
            .and_then(|()| file.sync_all())
            .map_err(fail(Step::Sync))?;
        before(Step::Recheck).map_err(fail(Step::Recheck))?;
        if current_bytes(path).map_err(fail(Step::Recheck))? != loaded.original {
            return Err(FileError::Changed);
        }
        before(Step::Rename)
            .and_then(|()| fs::rename(&temp, path))
            .map_err(fail(Step::Rename))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
        return result;
    }
    // The new file is in place; syncing the directory makes the rename itself durable. Its
    // failure changes nothing about what was written, so it is not reported as one.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The file's bytes now, `None` when it is missing.
fn current_bytes(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match read_capped(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// At most one byte more than [`MAX_SETTINGS_BYTES`] of `path`.
fn read_capped(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)?
        .take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests;
