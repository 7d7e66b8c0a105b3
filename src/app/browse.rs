//! Choosing a folder for a new pane (SPEC §11 "File view and browse", §12 "Starters"): browsing
//! folder names under the home folder, and checking the folder a pane is opened in.
//!
//! **Browse** lists folder names only, under the home folder only — whatever the workspaces say,
//! since the New page picks where a pane runs, not what the file tools may touch. The path asked
//! for is resolved as the file tools resolve one (`~`, symlinks followed, `..` folded after them)
//! against a workspace made of the home folder alone, with the tools' guarded paths: leaving home
//! is `path outside the workspace`, Collie's own state and config folders are `path not allowed`,
//! a `.git` folder too. In the listing, a name starting with a dot is left out (a typed path may
//! still name one), so is `.git`, a guarded folder, and a symlink whose target is not a folder
//! inside home. At most [`MAX_FOLDERS`] names are kept while the folder is read (sorted, the
//! first ones; `truncated` says there were more), and at most [`MAX_SCAN`] entries are read at all,
//! so a huge folder costs bounded memory and time. Names and the path are masked.
//!
//! **A pane's folder** must be an existing folder inside one of the applied workspaces (read-only
//! ones included: running there is not writing through Collie), not guarded and not in a `.git`
//! folder, resolved with symlinks followed; the pane starts in the resolved path, so a symlink
//! swapped afterwards does not move it. Through the lead, the member checks the folder against
//! its own workspaces (decision 0040).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use collie_actors::audit::AuditRecord;
use collie_actors::tools::workspace::{Workspaces, MAX_PATH_LEN};
use collie_actors::tools::ToolError;
use collie_crew::relay::{Folders, RelayKind, RelayOk, MAX_FOLDERS};
use serde::Serialize;

use super::files::in_git_folder;
use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The most directory entries one browse reads before it answers `truncated`.
pub const MAX_SCAN: usize = 50_000;

/// What `GET /api/browse/{m}` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Browsed {
    /// The machine, by the name the phone addresses it by.
    pub machine: String,
    /// The folder listed, resolved and masked.
    pub path: String,
    /// Its folders' names, sorted and masked.
    pub folders: Vec<String>,
    /// Whether it holds more folders than are listed.
    pub truncated: bool,
}

/// The folders of `path` (`None` or empty: home) on a machine, for a new pane's folder.
#[derive(Debug, Clone)]
pub struct BrowseFolders {
    /// The folder to list (absolute or `~/…`).
    pub path: Option<String>,
}

impl Operation for BrowseFolders {
    type Output = Browsed;

    fn op(&self) -> Op {
        Op::Browse
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        match &self.path {
            Some(p) => validate_path("path", p, false),
            None => Ok(()),
        }
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Browse {
            path: self.path.clone(),
        })
    }

    /// The member masked them; this machine cuts and masks again (SPEC §8).
    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<Browsed, AppError> {
        let RelayOk::Folders(mut f) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        if f.folders.len() > MAX_FOLDERS {
            f.folders.truncate(MAX_FOLDERS);
            f.truncated = true;
        }
        app.mask_in_place(&mut f.path);
        f.folders.iter_mut().for_each(|n| app.mask_in_place(n));
        Ok(Browsed {
            machine: member.name().to_owned(),
            path: f.path,
            folders: f.folders,
            truncated: f.truncated,
        })
    }

    fn reply(out: Browsed) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Folders(Folders {
            path: out.path,
            folders: out.folders,
            truncated: out.truncated,
        }))
    }

    fn record(&self, _: &App, _: &Caller, _: &Browsed) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<Browsed, AppError> {
        let f = app.local_folders(self.path).await?;
        Ok(Browsed {
            machine: app.machine_name(),
            path: f.path,
            folders: f.folders,
            truncated: f.truncated,
        })
    }
}

/// Checks what a path can be checked for without the machine it names: a length limit, no NUL,
/// and (for a pane's folder) absolute or `~/…`.
pub fn validate_path(field: &str, path: &str, absolute: bool) -> Result<(), AppError> {
    if path.len() > MAX_PATH_LEN {
        return Err(AppError::BadRequest(format!(
            "{field}: longer than {MAX_PATH_LEN} bytes"
        )));
    }
    if path.contains('\0') {
        return Err(AppError::BadRequest(format!(
            "{field}: contains a NUL character"
        )));
    }
    if absolute && !(path.starts_with('/') || path == "~" || path.starts_with("~/")) {
        return Err(AppError::BadRequest(format!(
            "{field}: an absolute path or ~/…"
        )));
    }
    Ok(())
}

/// The `.git` rule on a path as asked or as resolved.
fn not_git(path: &Path) -> Result<(), ToolError> {
    if path.to_str().is_some_and(in_git_folder) {
        return Err(ToolError::PathNotAllowed);
    }
    Ok(())
}

/// Lists the folders of `path` under `home` (see the module docs). Blocking.
fn list_folders(home: &Workspaces, path: &str) -> Result<(PathBuf, Vec<String>, bool), ToolError> {
    not_git(Path::new(path))?;
    let dir = home.resolve(path)?;
    not_git(&dir)?;
    if !dir.is_dir() {
        return Err(ToolError::WrongKind(
            "path: a file, not a folder".to_owned(),
        ));
    }
    let entries = std::fs::read_dir(&dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => ToolError::PathNotAllowed,
        _ => ToolError::Internal(format!("reading {}: {e}", dir.display())),
    })?;
    let mut kept = BTreeSet::new();
    let mut truncated = false;
    for (seen, entry) in entries.enumerate() {
        if seen >= MAX_SCAN {
            truncated = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let file_name = entry.file_name();
        // A name that is not UTF-8 could not be typed back; it is left out.
        let Some(name) = file_name.to_str() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let at = dir.join(name);
        let target = if kind.is_dir() {
            at
        } else if kind.is_symlink() {
            match std::fs::canonicalize(&at) {
                Ok(t) if t.is_dir() => t,
                _ => continue,
            }
        } else {
            continue;
        };
        if !home.allows(&target) || not_git(&target).is_err() {
            continue;
        }
        kept.insert(name.to_owned());
        if kept.len() > MAX_FOLDERS {
            kept.pop_last();
            truncated = true;
        }
    }
    Ok((dir, kept.into_iter().collect(), truncated))
}

/// Resolves a pane's folder against the workspaces (see the module docs). Blocking.
fn resolve_folder(ws: &Workspaces, folder: &str) -> Result<PathBuf, ToolError> {
    not_git(Path::new(folder))?;
    let dir = ws.resolve(folder)?;
    not_git(&dir)?;
    if !dir.is_dir() {
        return Err(ToolError::WrongKind(
            "folder: a file, not a folder".to_owned(),
        ));
    }
    Ok(dir)
}

/// Runs blocking file-system work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| AppError::Backend(e.to_string()))?
        .map_err(AppError::Tool)
}

impl App {
    /// This machine's folder names of `path` under home, masked.
    pub async fn local_folders(&self, path: Option<String>) -> Result<Folders, AppError> {
        let path = path.filter(|p| !p.is_empty()).unwrap_or_else(|| "~".into());
        validate_path("path", &path, false)?;
        let tools = self
            .tools
            .toolbox
            .workspaces()
            .ok_or(AppError::Tool(ToolError::OutsideWorkspace))?;
        let home = tools
            .home()
            .map(Path::to_path_buf)
            .ok_or(AppError::Tool(ToolError::OutsideWorkspace))?;
        let guarded = tools.guarded().clone();
        let (dir, mut folders, truncated) = blocking(move || {
            let home_only = Workspaces::new(vec![home.clone()], guarded)?.with_home(home);
            list_folders(&home_only, &path)
        })
        .await?;
        let mut path = dir.to_string_lossy().into_owned();
        self.mask_in_place(&mut path);
        folders.iter_mut().for_each(|n| self.mask_in_place(n));
        Ok(Folders {
            path,
            folders,
            truncated,
        })
    }

    /// The folder a pane of this machine starts in: `folder` resolved and checked against this
    /// machine's workspaces.
    pub(super) async fn pane_start_folder(&self, folder: &str) -> Result<PathBuf, AppError> {
        validate_path("folder", folder, true)?;
        let ws = self
            .tools
            .toolbox
            .workspaces()
            .ok_or(AppError::Tool(ToolError::OutsideWorkspace))?;
        let folder = folder.to_owned();
        blocking(move || resolve_folder(&ws, &folder)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_before_any_machine_is_asked() {
        assert!(validate_path("path", "~/src", false).is_ok());
        assert!(validate_path("path", "src", false).is_ok());
        assert!(validate_path("folder", "src", true).is_err());
        assert!(validate_path("folder", "~x", true).is_err());
        assert!(validate_path("folder", "/srv/x", true).is_ok());
        assert!(validate_path("folder", "~", true).is_ok());
        assert!(validate_path("path", "a\0b", false).is_err());
        assert!(validate_path("path", &"a".repeat(MAX_PATH_LEN + 1), false).is_err());
    }
}
