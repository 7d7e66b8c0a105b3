//! Claude Code: where its settings live and what its hook entry looks like.
//!
//! Claude Code reads hooks from its settings files — `~/.claude/settings.json` for the user,
//! `<project>/.claude/settings.json` for a project (`CLAUDE_CONFIG_DIR` moves the user's
//! `~/.claude`). Under `hooks`, an event name maps to a list of matcher groups
//! `{"matcher", "hooks": [{"type": "command", "command", "timeout"}]}`; `timeout` is in seconds.
//! For `PermissionRequest` the matcher is a tool-name pattern, and `*` matches every tool.
//! What was read and where: docs/guide/hooks.md.

use std::path::PathBuf;

use super::{Paths, Scope};

/// `collie hook …` for Claude Code.
pub(super) const SUBCOMMAND: &str = "claude-permission";
/// The event Collie's hook answers: a permission dialog is about to appear.
pub(super) const EVENT: &str = "PermissionRequest";
/// Every tool: the phone decides about all of them, or the dialog does.
pub(super) const MATCHER: &str = "*";

/// The settings file of `scope`.
pub(super) fn settings_file(scope: Scope, paths: &Paths) -> PathBuf {
    match scope {
        Scope::User => paths
            .claude_config_dir
            .clone()
            .unwrap_or_else(|| paths.home.join(".claude"))
            .join("settings.json"),
        Scope::Project => paths.cwd.join(".claude").join("settings.json"),
    }
}

/// The hook's `timeout` in Claude Code's unit (seconds).
pub(super) fn timeout(timeout: std::time::Duration) -> u64 {
    timeout.as_secs()
}
