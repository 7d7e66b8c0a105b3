//! The check `collie bridge` makes before it starts (SPEC §12): `config.toml`, every path it
//! resolves to and every pinned executable's hash must be exactly what `collie apply` wrote, or the
//! bridge refuses with one message that says what differs and to run `collie apply`.
//!
//! Without a `config.toml` and without a snapshot there is nothing to apply: the built-in defaults
//! run (the README's two commands work on a fresh machine).

use std::path::PathBuf;

use super::diff::{differences, Difference};
use super::resolve::{resolve, ResolveEnv, ResolveError};
use super::snapshot::{Snapshot, SnapshotError, APPLIED_FILE};
use crate::config::{parse_config, read_config_text, ConfigFile, Settings};

/// Why the bridge may not start.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// `config.toml` cannot be read or is not valid.
    #[error("{0}\nfix config.toml, then run `collie apply`")]
    Config(String),
    /// The snapshot cannot be read.
    #[error("{0}\nrun `collie apply` to review the configuration and write it again")]
    Snapshot(#[from] SnapshotError),
    /// There is a `config.toml` but nothing was applied.
    #[error("{0} has not been applied: run `collie apply` to review it and apply it")]
    NotApplied(String),
    /// Something it names no longer resolves (an executable deleted, a folder gone).
    #[error(
        "the configuration no longer resolves:\n{}\nrestore what it names or change config.toml, then run `collie apply`",
        indent(&.0.problems)
    )]
    Unresolved(ResolveError),
    /// The file, a path or a hash differs from the snapshot.
    #[error(
        "the configuration differs from the one applied with `collie apply`:\n{}\nrun `collie apply` to review the difference and apply it",
        indent(&.0.iter().map(ToString::to_string).collect::<Vec<_>>())
    )]
    Differs(Vec<Difference>),
}

fn indent(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("  {}", l.replace('\n', "\n  ")))
        .collect::<Vec<_>>()
        .join("\n")
}

impl ResolveEnv {
    /// Where `settings` say things are; `path` is the `PATH` to look executables up in.
    pub fn for_settings(settings: &Settings, path: Option<String>) -> ResolveEnv {
        let mut guarded = settings.tool_paths.state_dirs.clone();
        guarded.push(settings.config_dir.clone());
        ResolveEnv {
            config_dir: settings.config_dir.clone(),
            home: settings.tool_paths.home.clone(),
            path,
            guarded,
            agent_settings: user_agent_settings(settings),
            collie: std::env::current_exe().and_then(std::fs::canonicalize).ok(),
        }
    }
}

/// The user-scope settings files of the agents Collie installs hooks into, where `collie hooks
/// install` puts them (`CLAUDE_CONFIG_DIR` and `CODEX_HOME` honoured, read from this process's
/// environment like `PATH`).
fn user_agent_settings(settings: &Settings) -> Vec<PathBuf> {
    use crate::agent_hooks::{Agent, Paths, Scope};
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let paths = Paths {
        home: settings.tool_paths.home.clone().unwrap_or_default(),
        cwd: PathBuf::new(),
        claude_config_dir: var("CLAUDE_CONFIG_DIR"),
        codex_home: var("CODEX_HOME"),
    };
    Agent::ALL
        .iter()
        .map(|a| a.settings_file(Scope::User, &paths))
        // Without a home folder, only the ones a variable names.
        .filter(|p| p.is_absolute())
        .collect()
}

/// `config.toml`'s path for `settings`.
pub fn config_path(settings: &Settings) -> PathBuf {
    settings.config_dir.join("config.toml")
}

/// `applied.json`'s path for `settings`.
pub fn snapshot_path(settings: &Settings) -> PathBuf {
    settings.state_dir.join(APPLIED_FILE)
}

/// The desired state as it is now: the file's text, its typed reading, and its resolution.
pub struct Desired {
    /// `config.toml`'s text (`None`: no file).
    pub text: Option<String>,
    /// The typed reading (defaults without a file).
    pub file: ConfigFile,
    /// Resolved, or what did not resolve.
    pub resolved: Result<super::Resolved, ResolveError>,
}

/// Reads and resolves `config.toml` for `settings`.
pub fn desired(settings: &Settings, env: &ResolveEnv) -> Result<Desired, GateError> {
    let path = config_path(settings);
    let text = read_config_text(&path).map_err(|e| GateError::Config(format!("{e:#}")))?;
    let file = match &text {
        Some(t) => {
            parse_config(t).map_err(|e| GateError::Config(format!("{}: {e}", path.display())))?
        }
        None => ConfigFile::default(),
    };
    let resolved = resolve(&path, text.as_deref(), &file, env);
    Ok(Desired {
        text,
        file,
        resolved,
    })
}

/// The bridge's check: the snapshot to run on (`None`: no configuration and nothing applied, the
/// built-in defaults), or why it may not start.
pub fn check(settings: &Settings, env: &ResolveEnv) -> Result<Option<Snapshot>, GateError> {
    let applied = Snapshot::read(&snapshot_path(settings))?;
    let now = desired(settings, env)?;
    let Some(applied) = applied else {
        return match now.text {
            None => Ok(None),
            Some(_) => Err(GateError::NotApplied(
                config_path(settings).display().to_string(),
            )),
        };
    };
    let resolved = now.resolved.map_err(GateError::Unresolved)?;
    let diffs = differences(Some(&applied.resolved), &resolved);
    if diffs.is_empty() {
        Ok(Some(applied))
    } else {
        Err(GateError::Differs(diffs))
    }
}
