//! Where resolution looks things up, and how a path `config.toml` writes becomes one: shared by
//! the resolution of the whole file ([`super::resolve`](mod@super::resolve)) and of its `[sandbox]`
//! ([`super::sandbox`]).

use std::path::PathBuf;

/// Where resolution looks things up.
#[derive(Debug, Clone)]
pub struct ResolveEnv {
    /// The folder `config.toml` is in (relative paths start there).
    pub config_dir: PathBuf,
    /// `$HOME`, for `~/` and the default workspace.
    pub home: Option<PathBuf>,
    /// `$PATH`, where a starter's bare executable name is looked up (absolute entries only).
    pub path: Option<String>,
    /// Folders no workspace may lie inside (Collie's state and config).
    pub guarded: Vec<PathBuf>,
    /// The user's agent settings files Collie's hooks live in (Claude Code's `settings.json`,
    /// Codex's `hooks.json`), whether they exist or not: the sandbox keeps them read-only.
    pub agent_settings: Vec<PathBuf>,
    /// This program, symlinks resolved: the hooks an agent runs inside the sandbox call it.
    pub collie: Option<PathBuf>,
}

/// `~` and `~/…` against home; a relative path against the config folder.
pub(super) fn expand(text: &str, env: &ResolveEnv) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err("empty".into());
    }
    if text == "~" || text.starts_with("~/") {
        let home = env.home.as_ref().ok_or("HOME is not set")?;
        return Ok(home.join(text.trim_start_matches('~').trim_start_matches('/')));
    }
    let p = PathBuf::from(text);
    Ok(if p.is_absolute() {
        p
    } else {
        env.config_dir.join(p)
    })
}
