//! Collie's held-permission hook in the agents' own settings (SPEC §10.2): what
//! `collie hooks install|uninstall|status` does.
//!
//! `install` merges one entry into Claude Code's `settings.json` or Codex's `hooks.json` under
//! `PermissionRequest`: the agent then runs `<this collie> hook claude-permission` (or
//! `codex-permission`) before it shows a permission dialog, and the bridge holds the request for a
//! tap on the phone. `uninstall` removes exactly that entry; `status` reads every file and says
//! what is there. The user's own hooks and settings are never removed or reordered.
//!
//! The parts: [`merge`] is the pure core (Collie's entry into, out of and found in a JSON
//! document); [`command`] writes the hook's command line and recognises it again; [`mod@file`] reads a
//! settings file (size-capped) and replaces it atomically, keeping its mode; `claude` and `codex`
//! hold what differs between the agents (where the file is, the subcommand); `status` reads. Nothing
//! here audits: `install` and `uninstall` return a [`Change`] for the caller to record
//! (`hooks.installed`).

mod claude;
mod codex;
pub mod command;
pub mod file;
#[cfg(test)]
mod fuzz;
pub mod merge;
pub mod record;
mod status;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use self::file::FileError;
use self::merge::{Hook, Installed, ShapeError};
pub use self::status::{status, Report, State};

/// How much longer the agent waits for the hook than the bridge holds it: the bridge's deadline
/// must end a hold (and the agent's dialog appear), never the agent killing a hook mid-answer.
pub const TIMEOUT_MARGIN: Duration = Duration::from_secs(60);

/// The `timeout` of the installed hook for a bridge that holds requests for `hold` (`[hooks]
/// hold`): the hold and the margin — 660 s for the default 10 minutes.
pub fn hook_timeout(hold: Duration) -> Duration {
    hold.saturating_add(TIMEOUT_MARGIN)
}

/// The agents whose hooks Collie installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Agent {
    /// Every agent, in the order `status` lists them.
    pub const ALL: [Agent; 2] = [Agent::Claude, Agent::Codex];

    /// `claude` or `codex`, as on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The product's name, for messages.
    pub fn product(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// `collie hook <subcommand>` that this agent runs.
    pub fn subcommand(self) -> &'static str {
        match self {
            Agent::Claude => claude::SUBCOMMAND,
            Agent::Codex => codex::SUBCOMMAND,
        }
    }

    /// The event Collie's hook is installed under.
    pub fn event(self) -> &'static str {
        match self {
            Agent::Claude => claude::EVENT,
            Agent::Codex => codex::EVENT,
        }
    }

    /// The file holding this agent's hooks for `scope`.
    pub fn settings_file(self, scope: Scope, paths: &Paths) -> PathBuf {
        match self {
            Agent::Claude => claude::settings_file(scope, paths),
            Agent::Codex => codex::settings_file(scope, paths),
        }
    }

    fn matcher(self) -> &'static str {
        match self {
            Agent::Claude => claude::MATCHER,
            Agent::Codex => codex::MATCHER,
        }
    }

    fn timeout(self, hold: Duration) -> u64 {
        match self {
            Agent::Claude => claude::timeout(hook_timeout(hold)),
            Agent::Codex => codex::timeout(hook_timeout(hold)),
        }
    }

    /// Whether `command` is Collie's hook for this agent (wherever that collie lives).
    fn is_ours(self, command: &str) -> bool {
        command::recognise(command, self.subcommand()).is_some()
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Whose settings: the user's (every project) or the current directory's project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user's settings, in their home.
    User,
    /// The project in the current directory.
    Project,
}

impl Scope {
    /// Every scope, in the order `status` lists them.
    pub const ALL: [Scope; 2] = [Scope::User, Scope::Project];

    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Where the settings files are: from the environment ([`Paths::from_env`]) or given (tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `$HOME`.
    pub home: PathBuf,
    /// The current directory: the project of `--scope project`.
    pub cwd: PathBuf,
    /// `$CLAUDE_CONFIG_DIR`, which Claude Code reads in place of `~/.claude`.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, which Codex reads in place of `~/.codex`.
    pub codex_home: Option<PathBuf>,
}

impl Paths {
    /// `HOME` (required), the current directory, and the agents' own directory variables when
    /// set and not empty.
    pub fn from_env() -> Result<Self, HooksError> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Paths {
            home: var("HOME").ok_or(HooksError::NoHome)?,
            cwd: std::env::current_dir().map_err(HooksError::NoCwd)?,
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
        })
    }
}

/// What `install` or `uninstall` did to one file: what the caller audits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Whose hook.
    pub agent: Agent,
    /// Which settings.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// What happened to it.
    pub kind: ChangeKind,
}

/// What happened to a settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Collie's hook was added, or its entry rewritten (a moved binary, a new timeout).
    Installed,
    /// Collie's hook was removed.
    Removed,
    /// The file already was as asked; it was not written.
    Unchanged,
}

/// Why `install`, `uninstall` or finding the files failed. Every failure leaves the file as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HooksError {
    /// Both agents keep the user's settings under the home directory.
    #[error("HOME is not set, so the agents' user settings cannot be found")]
    NoHome,
    /// The project scope is the current directory's.
    #[error("cannot read the current directory: {0}")]
    NoCwd(std::io::Error),
    /// The running executable cannot go into a hook.
    #[error(transparent)]
    Command(#[from] command::CommandError),
    /// Reading or writing the file failed.
    #[error("{}: {reason}", path.display())]
    File {
        /// The settings file.
        path: PathBuf,
        /// What failed.
        reason: FileError,
    },
    /// The file is JSON but not of the shape the agent reads.
    #[error("{}: {reason}", path.display())]
    Shape {
        /// The settings file.
        path: PathBuf,
        /// What is wrong.
        reason: ShapeError,
    },
}

/// Merges Collie's hook for `agent` into the `scope` settings, running `exe` (the absolute path of
/// the running collie) with a `timeout` of [`hook_timeout`] of the bridge's `hold`. Idempotent: a second run changes
/// nothing, and a run from a moved binary rewrites the entry in place.
pub fn install(
    agent: Agent,
    scope: Scope,
    paths: &Paths,
    exe: &Path,
    hold: Duration,
) -> Result<Change, HooksError> {
    let path = agent.settings_file(scope, paths);
    let command = command::render(exe, agent.subcommand())?;
    let hook = Hook {
        event: agent.event(),
        matcher: agent.matcher(),
        command: &command,
        timeout: agent.timeout(hold),
    };
    let loaded = file::load(&path).map_err(|reason| file_error(&path, reason))?;
    let mut doc = loaded.doc.clone();
    let done = merge::install(&mut doc, &hook, &|c| agent.is_ours(c))
        .map_err(|reason| shape_error(&path, reason))?;
    let kind = if done == Installed::Unchanged {
        ChangeKind::Unchanged
    } else {
        file::store(&loaded, &doc).map_err(|reason| file_error(&path, reason))?;
        ChangeKind::Installed
    };
    Ok(Change {
        agent,
        scope,
        path,
        kind,
    })
}

/// Removes every Collie hook for `agent` from the `scope` settings (whichever collie it runs).
/// A file without one, or no file, is left alone.
pub fn uninstall(agent: Agent, scope: Scope, paths: &Paths) -> Result<Change, HooksError> {
    let path = agent.settings_file(scope, paths);
    let change = |kind| Change {
        agent,
        scope,
        path: path.clone(),
        kind,
    };
    let loaded = file::load(&path).map_err(|reason| file_error(&path, reason))?;
    if !loaded.existed {
        return Ok(change(ChangeKind::Unchanged));
    }
    let mut doc = loaded.doc.clone();
    let removed = merge::uninstall(&mut doc, agent.event(), &|c| agent.is_ours(c))
        .map_err(|reason| shape_error(&path, reason))?;
    if removed == 0 {
        return Ok(change(ChangeKind::Unchanged));
    }
    file::store(&loaded, &doc).map_err(|reason| file_error(&path, reason))?;
    Ok(change(ChangeKind::Removed))
}

fn file_error(path: &Path, reason: FileError) -> HooksError {
    HooksError::File {
        path: path.to_owned(),
        reason,
    }
}

fn shape_error(path: &Path, reason: ShapeError) -> HooksError {
    HooksError::Shape {
        path: path.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests;
