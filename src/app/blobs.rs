//! Uploads (SPEC §11): an image or file from the phone into a pane's folder, for the agent in that
//! pane to read.
//!
//! The request names the pane and the file's name; the bytes are the body (at most
//! [`MAX_UPLOAD`], refused by the body limit before more is read). The pane's folder is its
//! foreground process's working folder, read now (tmux's `#{pane_current_path}`; a hosted pane's
//! the same way), and it must pass the tools' [`Workspaces`] rules — inside a workspace, not
//! guarded, not in a `.git` folder — or the upload is refused and audited `security.denied`. The
//! file is written under a hidden `.collie-uploads/` folder there (created 0700) as 0600,
//! atomically (a temp file linked into place, so a reader never sees half a file) and never over
//! an existing file — all of it in a handle on the pane's folder opened beneath its workspace root
//! with no symlink on the way, so a folder swapped for a link meanwhile is refused (decision 0049): a taken name gets a `-1`, `-2`… suffix. A copy is kept as
//! `<state>/blobs/<id>` (0600 in a 0700 folder) and served back by id.
//!
//! The upload is audited `tool.upload` before anything is written (a line that cannot be written
//! refuses it) with the pane, the folder, the name and the size; the written path and the blob id
//! follow in a `"phase": "done"` line. The bytes are never in a line.
//!
//! A member's pane takes uploads through the lead ([`RelayKind::Blob`], capability `uploads`;
//! decision 0036): the lead checks the tier, the name and the size before anything is relayed;
//! the member checks the size again, applies its own workspace rules and audits its own lines
//! with the same request id; once it answered that the file is written, the lead audits the
//! upload with the member's name (decision 0052). A member with
//! `[crew] tools = false` leaves the capability out and refuses a relayed upload anyway.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::tools::workspace::Workspaces;
use collie_actors::tools::ToolError;
use collie_crew::relay::{RelayKind, RelayOk, Stored, MAX_BLOB};
use rand::RngCore;
use rustix::fs::{fchmod, fstat, linkat, mkdirat, openat, unlinkat, AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;
use serde::Serialize;

use super::files::in_git_folder;
use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The largest upload, in bytes (10 MiB; the relay's own cap, so that a member's pane takes
/// what this machine's does).
pub const MAX_UPLOAD: usize = MAX_BLOB;
/// The most all kept blobs may take together; past it an upload is `resource limit`.
pub const MAX_BLOBS_TOTAL: u64 = 512 << 20;
/// The folder, in the pane's folder, uploads are written to.
pub const UPLOADS_DIR: &str = ".collie-uploads";
/// The longest file name, in bytes.
pub const MAX_NAME: usize = 128;
/// How many suffixes are tried for a taken name.
const MAX_SUFFIX: u32 = 999;

/// What an upload answers.
#[derive(Debug, Clone, Serialize)]
pub struct Uploaded {
    /// The blob's id (`GET /api/blobs/{id}`).
    pub id: String,
    /// The file's absolute path on the machine (what the phone inserts into the input).
    pub path: String,
    /// The name it got (the asked one, or with a suffix when that was taken).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A blob served back: its bytes and the content type it may be served as.
#[derive(Debug)]
pub struct Blob {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `Some("image/…")` for an image recognised by its first bytes; `None`: serve it as an
    /// attachment of type `application/octet-stream`.
    pub image: Option<&'static str>,
}

/// Checks an upload's file name: 1 to [`MAX_NAME`] bytes, one plain component (no `/`, no
/// leading dot, not `..`), no control characters, not a `.git` name.
pub fn validate_name(name: &str) -> Result<(), AppError> {
    let bad = name.is_empty()
        || name.len() > MAX_NAME
        || name.starts_with('.')
        || name.contains('/')
        || name.contains('\\')
        || name.chars().any(char::is_control)
        || in_git_folder(name);
    if bad {
        return Err(AppError::BadRequest(format!(
            "invalid name: 1-{MAX_NAME} bytes, no slash, no leading dot, no control characters"
        )));
    }
    Ok(())
}

/// The `n`th name tried for `name`: `name` itself, then `stem-n.ext`.
pub fn candidate(name: &str, n: u32) -> String {
    if n == 0 {
        return name.to_owned();
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}-{n}.{ext}"),
        _ => format!("{name}-{n}"),
    }
}

/// The image type of `bytes` by its first bytes (never by the name the phone gave); SVG is not
/// an image here, since it can hold script.
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A blob id: 128 random bits as 32 lowercase hex digits.
fn new_id() -> String {
    let mut raw = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut raw);
    hex::encode(raw)
}

/// Whether `id` has the shape of a new id, 32 lowercase hex digits (so it can never name another
/// file).
pub fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A folder of ours, `name` in the folder `parent` (a handle): created 0700 when missing; an
/// existing one must be a real folder (not a link), and is tightened to 0700. Its handle.
fn own_dir(parent: BorrowedFd<'_>, name: &str) -> rustix::io::Result<OwnedFd> {
    match mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e),
    }
    let dir = openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if fstat(&dir)?.st_mode & 0o777 != 0o700 {
        fchmod(&dir, Mode::from_raw_mode(0o700))?;
    }
    Ok(dir)
}

/// The folder at the absolute path `dir` of Collie's own (the kept blobs), opened.
fn open_own(dir: &Path) -> rustix::io::Result<OwnedFd> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or(".");
    let parent = openat(
        CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    own_dir(parent.as_fd(), name)
}

/// Writes `bytes` as a new 0600 file in the folder `dir` (a handle; `shown` its path) under the
/// first free [`candidate`] of `name`: written whole to a temp file first, then hard-linked into
/// place (a link never replaces an existing entry), then the temp name removed — all relative to
/// the handle, never by a path looked up again. Answers the path and the name it got.
fn write_new(
    dir: BorrowedFd<'_>,
    shown: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<(PathBuf, String), AppError> {
    let tmp = format!(".upload-{}", new_id());
    let written = (|| -> std::io::Result<()> {
        let fd = openat(
            dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut f = fs::File::from(fd);
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = unlinkat(dir, tmp.as_str(), AtFlags::empty());
        tracing::error!(error = %e, "cannot write an upload");
        return Err(AppError::Internal);
    }
    let mut placed = None;
    for n in 0..=MAX_SUFFIX {
        let name = candidate(name, n);
        match linkat(dir, tmp.as_str(), dir, name.as_str(), AtFlags::empty()) {
            Ok(()) => {
                placed = Some((shown.join(&name), name));
                break;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => {
                tracing::error!(error = %e, "cannot place an upload");
                break;
            }
        }
    }
    let _ = unlinkat(dir, tmp.as_str(), AtFlags::empty());
    placed.ok_or(AppError::Internal)
}

/// An upload of `bytes` as `name` into the folder of `pane` ([`App::run`]; see the module docs).
#[derive(Debug, Clone)]
pub struct Upload {
    /// The pane whose folder takes the file.
    pub pane: String,
    /// The file's name (one plain component).
    pub name: String,
    /// The file, at most [`MAX_UPLOAD`] bytes.
    pub bytes: Vec<u8>,
}

impl Upload {
    /// The line of the request: the pane, the name and the size, never the bytes (this machine's
    /// own line names the folder too, once it has read it).
    fn line(&self, app: &App, caller: &Caller) -> AuditRecord {
        caller
            .record(app, AuditEventKind::Upload)
            .with_detail("pane", self.pane.clone())
            .with_detail("name", self.name.clone())
            .with_detail("size", self.bytes.len() as u64)
    }
}

/// The line of an upload that is written: where it landed and the kept copy's id.
fn done_line(app: &App, caller: &Caller, path: String, blob: &str) -> AuditRecord {
    caller
        .record(app, AuditEventKind::Upload)
        .with_detail("phase", "done")
        .with_detail("path", path)
        .with_detail("blob", blob.to_owned())
}

impl Operation for Upload {
    type Output = Uploaded;
    fn op(&self) -> Op {
        Op::Upload
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        validate_name(&self.name)?;
        if self.bytes.is_empty() {
            return Err(AppError::BadRequest("the file is empty".into()));
        }
        if self.bytes.len() > MAX_UPLOAD {
            return Err(AppError::BodyTooLarge("10 MiB"));
        }
        Ok(())
    }

    /// The file travels in the request (capability `uploads`); the member checks the size again.
    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Blob {
            pane: self.pane.clone(),
            name: self.name.clone(),
            bytes: self.bytes.clone(),
        })
    }

    /// The member's answer, masked again here; the kept copy is the member's (`GET
    /// /api/blobs/{id}` serves this machine's).
    fn answer(&self, app: &App, _: &Member, ok: RelayOk) -> Result<Uploaded, AppError> {
        let RelayOk::Stored(stored) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        if !valid_id(&stored.id) || stored.size != self.bytes.len() as u64 {
            return Err(AppError::MemberUnreadable);
        }
        let Stored {
            id,
            mut path,
            mut name,
            size,
        } = stored;
        app.mask_in_place(&mut path);
        app.mask_in_place(&mut name);
        Ok(Uploaded {
            id,
            path,
            name,
            size,
        })
    }

    fn reply(out: Uploaded) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Stored(Stored {
            id: out.id,
            path: out.path,
            name: out.name,
            size: out.size,
        }))
    }

    fn record(&self, app: &App, caller: &Caller, _: &Uploaded) -> Option<AuditRecord> {
        Some(self.line(app, caller))
    }

    fn outcome(&self, app: &App, caller: &Caller, out: &Uploaded) -> Option<AuditRecord> {
        Some(done_line(app, caller, out.path.clone(), &out.id))
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<Uploaded, AppError> {
        let cwd = app.pane_folder(&self.pane).await?;
        let (ws, folder) = app.upload_folder(caller, &cwd)?;
        let size = self.bytes.len() as u64;
        app.blobs_room(size)?;
        let rec = self
            .line(app, caller)
            .with_detail("folder", folder.display().to_string());
        app.audit(rec).await?;

        let blobs = app.tools.blobs_dir.clone();
        let Upload { name, bytes, .. } = self;
        let id = new_id();
        let blob_id = id.clone();
        let (path, name) = tokio::task::spawn_blocking(move || {
            // The pane's folder, opened beneath its workspace root with no symlink on the way:
            // the uploads folder and the file are made in this handle (decision 0049).
            let pane_dir = ws.open_dir(&folder).map_err(AppError::Tool)?;
            let uploads = own_dir(pane_dir.as_fd(), UPLOADS_DIR).map_err(|e| {
                tracing::error!(error = %e, "cannot make the uploads folder");
                AppError::Internal
            })?;
            let placed = write_new(uploads.as_fd(), &folder.join(UPLOADS_DIR), &name, &bytes)?;
            let kept = open_own(&blobs).map_err(|e| {
                tracing::error!(error = %e, "cannot make the blobs folder");
                AppError::Internal
            })?;
            write_new(kept.as_fd(), &blobs, &blob_id, &bytes)?;
            Ok::<_, AppError>(placed)
        })
        .await
        .map_err(|_| AppError::Internal)??;
        let done = done_line(app, caller, path.display().to_string(), &id);
        if let Err(e) = app.audit(done).await {
            tracing::error!(error = %e, "cannot audit an upload's outcome");
        }
        let mut path = path.display().to_string();
        app.mask_in_place(&mut path);
        Ok(Uploaded {
            id,
            path,
            name,
            size,
        })
    }
}

impl App {
    /// A kept blob by id; `no such file` for an id that is malformed or unknown.
    pub async fn blob(&self, id: &str) -> Result<Blob, AppError> {
        if !valid_id(id) {
            return Err(AppError::Tool(ToolError::NoSuchFile));
        }
        let path = self.tools.blobs_dir.join(id);
        let bytes = tokio::task::spawn_blocking(move || {
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&path)?;
            let len = f.metadata()?.len();
            if len > MAX_UPLOAD as u64 {
                return Err(std::io::Error::other("blob larger than an upload"));
            }
            let mut bytes = Vec::with_capacity(len as usize);
            std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_UPLOAD as u64), &mut bytes)?;
            Ok(bytes)
        })
        .await
        .map_err(|_| AppError::Internal)?
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                AppError::Tool(ToolError::NoSuchFile)
            } else {
                tracing::error!(error = %e, "cannot read a blob");
                AppError::Internal
            }
        })?;
        let image = image_type(&bytes);
        Ok(Blob { bytes, image })
    }

    /// The pane's folder as the workspace rules see it, or the refusal (audited
    /// `security.denied`, as a file tool's).
    fn upload_folder(
        &self,
        caller: &Caller,
        cwd: &Path,
    ) -> Result<(Arc<Workspaces>, PathBuf), AppError> {
        let checked = (|| -> Result<(Arc<Workspaces>, PathBuf), ToolError> {
            let ws = self
                .tools
                .toolbox
                .workspaces()
                .ok_or(ToolError::OutsideWorkspace)?;
            let cwd = cwd.to_str().ok_or(ToolError::PathNotAllowed)?;
            let folder = ws.resolve(cwd)?;
            let target = folder.join(UPLOADS_DIR);
            if !folder.is_dir() || !ws.allows_write(&target) || in_git_folder(cwd) {
                return Err(ToolError::PathNotAllowed);
            }
            Ok((ws, folder))
        })();
        checked.map_err(|e| {
            if matches!(e, ToolError::OutsideWorkspace | ToolError::PathNotAllowed) {
                let mut rec = AuditRecord::new(AuditEventKind::SecurityDenied, self.machine_name())
                    .with_request_id(caller.request_id().to_owned())
                    .with_detail("upload", "pane folder");
                if let Some(device) = caller.audit_name() {
                    rec = rec.with_device(device);
                }
                self.deny(caller.source(), &e.to_string(), rec);
            }
            AppError::Tool(e)
        })
    }

    /// Refuses an upload that would take the kept blobs past [`MAX_BLOBS_TOTAL`].
    fn blobs_room(&self, size: u64) -> Result<(), AppError> {
        let used: u64 = fs::read_dir(&self.tools.blobs_dir)
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        if used.saturating_add(size) > MAX_BLOBS_TOTAL {
            return Err(AppError::ResourceLimit);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn names_are_one_plain_component() {
        for ok in ["shot.png", "notes 1.txt", "Ünïcode.md", "a"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        let long = "x".repeat(MAX_NAME + 1);
        for bad in [
            "", ".", "..", ".hidden", "a/b", "../x", "a\\b", "a\nb", ".git", &long,
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn taken_names_get_a_suffix_before_the_extension() {
        assert_eq!(candidate("shot.png", 0), "shot.png");
        assert_eq!(candidate("shot.png", 2), "shot-2.png");
        assert_eq!(candidate("README", 1), "README-1");
        assert_eq!(candidate("a.tar.gz", 1), "a.tar-1.gz");
    }

    #[test]
    fn images_are_told_by_their_bytes() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(image_type(b"<svg onload=alert(1)>"), None);
        assert_eq!(image_type(b"<html>"), None);
    }

    #[test]
    fn ids_cannot_name_another_file() {
        assert!(valid_id(&new_id()));
        for bad in [
            "",
            "../x",
            "ABCDEF0123456789abcdef0123456789",
            "0".repeat(33).as_str(),
        ] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_taken_name_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), b"old").unwrap();
        let fd = open_own(dir.path()).unwrap();
        let (path, name) = write_new(fd.as_fd(), dir.path(), "a.txt", b"new").unwrap();
        assert_eq!(name, "a-1.txt");
        assert_eq!(fs::read(dir.path().join("a.txt")).unwrap(), b"old");
        assert_eq!(fs::read(&path).unwrap(), b"new");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temp file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
