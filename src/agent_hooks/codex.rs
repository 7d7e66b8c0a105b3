//! Codex: where its hooks file lives and what its hook entry looks like.
//!
//! Codex (openai/codex) reads a `hooks.json` beside each config layer's `config.toml`:
//! `$CODEX_HOME/hooks.json` for the user (`CODEX_HOME` defaults to `~/.codex`) and
//! `<project>/.codex/hooks.json` for a project. The file is `{"hooks": {…}}` with the same
//! matcher groups as Claude Code's settings; `timeout` is in seconds (default 600), and a
//! `PermissionRequest` matcher of `*` (or empty) matches every tool. Codex runs a user or project
//! hook only once the user has trusted it (`/hooks` in Codex). What was read and where:
//! docs/guide/hooks.md.

use std::path::PathBuf;

use super::{Paths, Scope};

/// `collie hook …` for Codex.
pub(super) const SUBCOMMAND: &str = "codex-permission";
/// The event Collie's hook answers: an approval prompt is about to appear.
pub(super) const EVENT: &str = "PermissionRequest";
/// Every tool.
pub(super) const MATCHER: &str = "*";

/// The hooks file of `scope`.
pub(super) fn settings_file(scope: Scope, paths: &Paths) -> PathBuf {
    match scope {
        Scope::User => paths
            .codex_home
            .clone()
            .unwrap_or_else(|| paths.home.join(".codex"))
            .join("hooks.json"),
        Scope::Project => paths.cwd.join(".codex").join("hooks.json"),
    }
}

/// The hook's `timeout` in Codex's unit (seconds).
pub(super) fn timeout(timeout: std::time::Duration) -> u64 {
    timeout.as_secs()
}
