//! Where a file tool may go (SPEC §11): inside a workspace folder, and never onto Collie's own
//! state or config, a file named like a Collie state file, or an agent's hook settings.
//!
//! Every path a tool receives is resolved here before anything opens it: `~` is the home folder,
//! a relative path starts at the first workspace root, and then each component is looked at in
//! turn — a symlink is replaced by its target, `..` is folded *after* that (so `link/..` is the
//! link target's parent, as the kernel sees it), and a component that does not exist ends the
//! lookups (the rest is taken as written). The outcome is checked against the canonical roots
//! ([`Workspaces::allows`]): outside every root is [`ToolError::OutsideWorkspace`], a guarded
//! path is [`ToolError::PathNotAllowed`] — the same answer whether or not the path exists, so a
//! caller cannot probe the rest of the machine.
//!
//! **Hard links are the documented exception** (seed 002): a hard link inside a workspace to a file
//! outside it is a directory entry inside, and nothing in a path tells it apart. Reading through it
//! reads the shared file; writing through it never changes the outside file, because every write
//! replaces the entry with a new file by rename (see `files`).
//!
//! **Nothing is opened by the path it was checked on.** The lookup only chooses the path; every
//! tool then opens that path beneath a handle on its workspace root following no symlink at all
//! (`beneath`: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), and creates, replaces
//! and renames entries relative to a handle on their folder. A folder swapped for a symlink after
//! the lookup fails the open instead of leading out (SPEC §15). A symlink inside a workspace —
//! relative or absolute — that leads to another place inside keeps working: the lookup replaces
//! it by its target and the open goes straight there. Decision 0049 has the reasoning.

mod beneath;
mod guard;
mod walk;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

pub(crate) use self::beneath::{open_at, open_root, refusal, Parent};
pub use self::guard::{Guarded, AGENT_FILE_NAMES, AGENT_SETTINGS_FILES, STATE_FILE_NAMES};
use self::walk::walk;
use super::ToolError;

/// The longest path string a tool accepts, in bytes (PATH_MAX on Linux).
pub const MAX_PATH_LEN: usize = 4096;

/// The workspace roots a device's file tools stay in, and the paths none may touch.
#[derive(Debug, Clone)]
pub struct Workspaces {
    roots: Vec<PathBuf>,
    /// The roots the file tools may only read (`access = "read"` in the applied configuration).
    read_only: Vec<PathBuf>,
    guarded: Guarded,
    home: Option<PathBuf>,
}

/// A path as [`Workspaces`] resolved it, for the tools in this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The absolute path, symlinks replaced and `..` folded.
    pub(crate) path: PathBuf,
    /// How many trailing components do not exist (0: the path exists).
    pub(crate) missing: usize,
}

/// Whether the last component, when it is a symlink, is replaced by its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Last {
    /// Follow it (reading, writing: the tool acts on what the link names).
    Follow,
    /// Keep it (moving: the tool acts on the entry itself).
    Keep,
}

impl Workspaces {
    /// The workspaces at `roots` (each must be an existing folder; stored canonical, duplicates
    /// dropped), guarding `guarded`. No root is an error: an empty workspace list never means
    /// "everywhere".
    pub fn new(roots: Vec<PathBuf>, guarded: Guarded) -> Result<Workspaces, ToolError> {
        if roots.is_empty() {
            return Err(ToolError::BadArgument("no workspace folder".to_owned()));
        }
        let mut canonical: Vec<PathBuf> = Vec::with_capacity(roots.len());
        for root in roots {
            let c = std::fs::canonicalize(&root).map_err(|_| {
                ToolError::BadArgument(format!(
                    "workspace folder {} does not exist",
                    root.display()
                ))
            })?;
            if !c.is_dir() {
                return Err(ToolError::WrongKind(format!(
                    "workspace {} is not a folder",
                    root.display()
                )));
            }
            if !canonical.contains(&c) {
                canonical.push(c);
            }
        }
        Ok(Workspaces {
            roots: canonical,
            read_only: Vec::new(),
            guarded: guarded.canonical()?,
            home: None,
        })
    }

    /// The same workspaces with the roots in `read_only` readable only: nothing under them is
    /// written unless a deeper root that is writable holds it (a workspace inside another may
    /// widen it, never narrow it — `collie apply` refuses the narrowing kind).
    #[must_use]
    pub fn with_read_only(mut self, read_only: &[PathBuf]) -> Workspaces {
        self.read_only = read_only
            .iter()
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
            .filter(|r| self.roots.contains(r))
            .collect();
        self
    }

    /// The same workspaces with `~` meaning `home` (canonicalized when it exists). Without a home,
    /// a path starting with `~` is refused.
    #[must_use]
    pub fn with_home(mut self, home: PathBuf) -> Workspaces {
        self.home = Some(std::fs::canonicalize(&home).unwrap_or(home));
        self
    }

    /// The canonical roots, in the order given (the first is where relative paths start).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The home folder `~` means, canonical, if one is known.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The guarded paths, canonical.
    pub fn guarded(&self) -> &Guarded {
        &self.guarded
    }

    /// An existing path, resolved: relative paths are taken from the first root, `~` and `~/…`
    /// mean the home folder, symlinks (also the last component) are followed.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let r = self.resolve_with(path, Last::Follow)?;
        if r.missing > 0 {
            return Err(ToolError::NoSuchFile);
        }
        Ok(r.path)
    }

    /// A path that may not exist yet (write, create, move destination): its existing part
    /// resolved as in [`Workspaces::resolve`], the rest taken as written, the whole checked. A
    /// symlink as the last component — dangling or not — is replaced by its target, so a write
    /// lands where the link points, and only if that is allowed.
    pub fn resolve_new(&self, path: &str) -> Result<PathBuf, ToolError> {
        Ok(self.resolve_with(path, Last::Follow)?.path)
    }

    /// Resolves `path` and checks the outcome; `missing` says how much of it does not exist.
    pub(crate) fn resolve_with(&self, path: &str, last: Last) -> Result<Resolved, ToolError> {
        let absolute = self.absolute(path)?;
        // `x/` and `x/.` name a folder, as in the kernel: the last component is followed and
        // must be a folder (`Path` drops the trailing part, so it is looked at here).
        let folder_form = path.ends_with('/') || path.ends_with("/.") || path == ".";
        let follow = last == Last::Follow || folder_form;
        let resolved = walk(&absolute, follow).map_err(|e| {
            // A failure while walking outside every root says nothing about the outside.
            if self.inside(&e.at) {
                e.error
            } else {
                ToolError::OutsideWorkspace
            }
        })?;
        self.check(&resolved.path)?;
        if folder_form && resolved.missing == 0 && !resolved.path.is_dir() {
            return Err(ToolError::WrongKind("a file, not a folder".to_owned()));
        }
        Ok(resolved)
    }

    /// Cheap (no syscalls) check of an already-resolved absolute path: inside a root and not
    /// guarded. The search and list walkers call it for every entry they visit.
    pub fn allows(&self, resolved: &Path) -> bool {
        self.inside(resolved) && !self.guarded.covers(resolved)
    }

    /// Opens the resolved path `resolved` (from [`Workspaces::resolve`] or
    /// [`Workspaces::resolve_new`]) beneath a handle on the deepest root holding it, following no
    /// symlink (see [`beneath`]).
    pub(crate) fn open(
        &self,
        resolved: &Path,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, ToolError> {
        let (root, rel) = self.root_of(resolved)?;
        let dir = open_root(root).map_err(|e| refusal("open workspace", e))?;
        open_at(dir.as_fd(), rel, flags, mode).map_err(|e| refusal("open", e))
    }

    /// What the resolved path `resolved` is now (a file, a folder, anything else), looked at
    /// beneath its root without following a symlink; a symlink there now was put there since the
    /// lookup and is refused as a path out of the workspace.
    pub(crate) fn metadata(&self, resolved: &Path) -> Result<std::fs::Metadata, ToolError> {
        // `O_PATH` opens anything without reading it (a FIFO does not wait for a writer).
        #[cfg(target_os = "linux")]
        let flags = OFlags::PATH;
        #[cfg(not(target_os = "linux"))]
        let flags = OFlags::RDONLY | OFlags::NONBLOCK;
        let fd = self.open(resolved, flags, Mode::empty())?;
        let meta = std::fs::File::from(fd)
            .metadata()
            .map_err(|e| ToolError::io("stat", &e))?;
        if meta.file_type().is_symlink() {
            return Err(ToolError::OutsideWorkspace);
        }
        Ok(meta)
    }

    /// The resolved folder `resolved`, opened beneath its root (a handle to create, list and
    /// rename in).
    pub fn open_dir(&self, resolved: &Path) -> Result<OwnedFd, ToolError> {
        self.open(resolved, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
    }

    /// The folder holding the resolved path `resolved`, opened beneath its root, and the last
    /// name: where `resolved` is created, replaced or renamed.
    pub(crate) fn parent(&self, resolved: &Path) -> Result<Parent, ToolError> {
        let (root, rel) = self.root_of(resolved)?;
        let name = rel
            .file_name()
            .ok_or_else(|| ToolError::WrongKind("a workspace folder itself".to_owned()))?;
        let folder = rel.parent().unwrap_or(Path::new(""));
        let dir = open_root(root).map_err(|e| refusal("open workspace", e))?;
        let dir = open_at(
            dir.as_fd(),
            folder,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(|e| refusal("open folder", e))?;
        Ok(Parent {
            dir,
            name: name.to_os_string(),
        })
    }

    /// The deepest root holding `resolved`, and the rest of `resolved` below it.
    fn root_of<'p>(&self, resolved: &'p Path) -> Result<(&Path, &'p Path), ToolError> {
        self.roots
            .iter()
            .filter_map(|r| resolved.strip_prefix(r).ok().map(|rel| (r.as_path(), rel)))
            .max_by_key(|(r, _)| r.components().count())
            .ok_or(ToolError::OutsideWorkspace)
    }

    /// Whether a tool may change `resolved` (already allowed): nothing inside a `.git` folder —
    /// nor a `.git` entry itself — is writable, since a repository's config runs commands.
    pub fn allows_write(&self, resolved: &Path) -> bool {
        self.allows(resolved)
            && !resolved.components().any(|c| guard::is_name(c, ".git"))
            && self.writable_root(resolved)
    }

    /// Whether the deepest root holding `resolved` is writable.
    fn writable_root(&self, resolved: &Path) -> bool {
        self.roots
            .iter()
            .filter(|r| resolved.starts_with(r))
            .max_by_key(|r| r.components().count())
            .is_some_and(|r| !self.read_only.contains(r))
    }

    /// Whether moving `resolved` away would carry a root or a guarded folder with it.
    pub(crate) fn holds_protected(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|r| r.starts_with(resolved)) || self.guarded.is_ancestor(resolved)
    }

    fn inside(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r))
    }

    fn check(&self, resolved: &Path) -> Result<(), ToolError> {
        if !self.inside(resolved) {
            Err(ToolError::OutsideWorkspace)
        } else if self.guarded.covers(resolved) {
            Err(ToolError::PathNotAllowed)
        } else {
            Ok(())
        }
    }

    /// `path` as an absolute path, before any lookup.
    fn absolute(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.is_empty() {
            return Err(ToolError::BadArgument("path is empty".to_owned()));
        }
        if path.len() > MAX_PATH_LEN {
            return Err(ToolError::BadArgument(format!(
                "path is longer than {MAX_PATH_LEN} bytes"
            )));
        }
        if path.contains('\0') {
            return Err(ToolError::BadArgument(
                "path contains a NUL character".to_owned(),
            ));
        }
        let p = Path::new(path);
        if let Some(rest) = path.strip_prefix('~') {
            if !(rest.is_empty() || rest.starts_with('/')) {
                return Err(ToolError::BadArgument(
                    "path: only `~` and `~/…` name a home folder".to_owned(),
                ));
            }
            let home = self.home.as_ref().ok_or_else(|| {
                ToolError::BadArgument("path: no home folder is known here".to_owned())
            })?;
            return Ok(home.join(rest.trim_start_matches('/')));
        }
        if p.has_root() {
            Ok(p.to_path_buf())
        } else {
            // `roots` is never empty (`new` refuses that).
            let first = self.roots.first().ok_or(ToolError::OutsideWorkspace)?;
            Ok(first.join(p))
        }
    }
}

/// Whether `p`'s last component is `.claude`, `.codex` or `.git` (any case): the folders a move
/// must neither create nor carry away.
pub(crate) fn is_special_folder_name(p: &Path) -> bool {
    p.components().next_back().is_some_and(|c| {
        [".claude", ".codex", ".git"]
            .iter()
            .any(|n| guard::is_name(c, n))
    })
}
