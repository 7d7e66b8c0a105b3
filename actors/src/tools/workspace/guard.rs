//! The paths no tool may touch, whatever the workspace: Collie's own state and config folders,
//! files named like a Collie state file anywhere, and the agents' hook settings anywhere — an
//! agent must not raise its own permissions through Collie.
//!
//! Names compare ignoring ASCII case: on a case-insensitive file system (macOS by default)
//! `.Claude/Settings.json` is the same file as `.claude/settings.json`.

use std::path::{Component, Path, PathBuf};

use crate::state_files;
use crate::tools::ToolError;

/// The names of Collie's state files (SPEC §2), from the one list their writers name them by
/// ([`state_files::ALL`]). A file with one of these names is refused wherever it lies — a copy,
/// a hard link or a bind mount of the state folder is still state.
pub const STATE_FILE_NAMES: [&str; state_files::ALL.len()] = state_files::ALL;

/// The agents' settings that hold their hooks and permissions, and their login tokens, as (folder
/// name, file name): refused in any folder of that name, and by file name alone directly inside a
/// [`Guarded::agent_settings_dirs`] folder (`$CLAUDE_CONFIG_DIR` need not be called `.claude`).
/// The credentials are here too: a `read` device must not lift an agent's login (decision 0030).
pub const AGENT_SETTINGS_FILES: [(&str, &str); 6] = [
    (".claude", "settings.json"),
    (".claude", "settings.local.json"),
    (".claude", ".credentials.json"),
    (".codex", "hooks.json"),
    (".codex", "config.toml"),
    (".codex", "auth.json"),
];

/// Agent files refused by name wherever they lie: Claude Code's `~/.claude.json` keeps each
/// project's allowed tools and MCP servers, so writing it would raise an agent's own permissions.
pub const AGENT_FILE_NAMES: [&str; 1] = [".claude.json"];

/// Paths no tool may touch, whatever the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guarded {
    /// Collie's state dir(s).
    pub state_dirs: Vec<PathBuf>,
    /// Collie's config dir(s).
    pub config_dirs: Vec<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR` / `$CODEX_HOME` when set (else `~/.claude`, `~/.codex`).
    pub agent_settings_dirs: Vec<PathBuf>,
}

impl Guarded {
    /// The same folders, canonical (so a prefix test on a resolved path sees them through any
    /// symlink); for one that does not exist yet, its existing part is.
    pub(super) fn canonical(self) -> Result<Guarded, ToolError> {
        let fix = |dirs: Vec<PathBuf>| -> Result<Vec<PathBuf>, ToolError> {
            dirs.into_iter()
                .map(|d| {
                    if !d.has_root() {
                        return Err(ToolError::BadArgument(format!(
                            "guarded folder {} is not absolute",
                            d.display()
                        )));
                    }
                    Ok(canonical_prefix(&clean(&d)))
                })
                .collect()
        };
        Ok(Guarded {
            state_dirs: fix(self.state_dirs)?,
            config_dirs: fix(self.config_dirs)?,
            agent_settings_dirs: fix(self.agent_settings_dirs)?,
        })
    }

    /// Whether the resolved path `p` is guarded. No syscalls.
    pub(super) fn covers(&self, p: &Path) -> bool {
        if self
            .state_dirs
            .iter()
            .chain(&self.config_dirs)
            .any(|d| p.starts_with(d))
        {
            return true;
        }
        let mut back = p.components().rev();
        let Some(name) = back.next() else {
            return false;
        };
        if STATE_FILE_NAMES
            .iter()
            .chain(&AGENT_FILE_NAMES)
            .any(|n| is_name(name, n))
        {
            return true;
        }
        if let Some(parent) = back.next() {
            if AGENT_SETTINGS_FILES
                .iter()
                .any(|(dir, file)| is_name(parent, dir) && is_name(name, file))
            {
                return true;
            }
        }
        let in_settings_dir = p
            .parent()
            .is_some_and(|parent| self.agent_settings_dirs.iter().any(|d| d == parent));
        in_settings_dir
            && AGENT_SETTINGS_FILES
                .iter()
                .any(|(_, file)| is_name(name, file))
    }

    /// Whether `p` is a guarded folder or holds one (moving it would move the guarded folder).
    pub(super) fn is_ancestor(&self, p: &Path) -> bool {
        self.state_dirs
            .iter()
            .chain(&self.config_dirs)
            .chain(&self.agent_settings_dirs)
            .any(|d| d.starts_with(p))
    }
}

/// Whether the component `c` is the name `n`, ignoring ASCII case.
pub(super) fn is_name(c: Component<'_>, n: &str) -> bool {
    match c {
        Component::Normal(s) => s.to_str().is_some_and(|s| s.eq_ignore_ascii_case(n)),
        _ => false,
    }
}

/// `p` with its longest existing ancestor canonicalized and the rest appended: a state folder
/// that does not exist yet, under a symlinked `~/.local`, is still recognized once it does.
fn canonical_prefix(p: &Path) -> PathBuf {
    for base in p.ancestors() {
        if let Ok(c) = std::fs::canonicalize(base) {
            return match p.strip_prefix(base) {
                Ok(rest) if !rest.as_os_str().is_empty() => c.join(rest),
                _ => c,
            };
        }
    }
    p.to_path_buf()
}

/// `p` with `.` dropped and `..` folded lexically (only for folders that do not exist yet, where
/// no symlink can be in the way).
fn clean(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
