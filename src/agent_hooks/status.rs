//! `collie hooks status`: what each agent's settings of each scope hold. Reads only; a file that
//! cannot be read is reported as such, never an error that hides the other files.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{command, file, merge, Agent, Paths, Scope};

/// What `status` found in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Whose hook.
    pub agent: Agent,
    /// Which settings.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// What is there.
    #[serde(flatten)]
    pub state: State,
}

/// Whether Collie's hook is in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    /// Collie's hook, running this collie.
    Installed,
    /// Collie's hook, running a collie elsewhere (`install` again to point it here).
    OtherPath {
        /// The executable the hook runs.
        executable: String,
    },
    /// No Collie hook (or no file).
    NotInstalled,
    /// The file could not be read, or is not of the agents' shape.
    Unreadable {
        /// Why.
        why: String,
    },
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Installed => f.write_str("installed"),
            State::OtherPath { executable } => {
                write!(f, "installed (other collie path: {executable})")
            }
            State::NotInstalled => f.write_str("not installed"),
            State::Unreadable { why } => write!(f, "unreadable: {why}"),
        }
    }
}

/// What every agent's settings of every scope hold, compared with `exe` (the running collie, when
/// known). Reads only.
pub fn status(paths: &Paths, exe: Option<&Path>) -> Vec<Report> {
    Agent::ALL
        .into_iter()
        .flat_map(|agent| Scope::ALL.into_iter().map(move |scope| (agent, scope)))
        .map(|(agent, scope)| {
            let path = agent.settings_file(scope, paths);
            let state = state_of(agent, &path, exe);
            Report {
                agent,
                scope,
                path,
                state,
            }
        })
        .collect()
}

fn state_of(agent: Agent, path: &Path, exe: Option<&Path>) -> State {
    let loaded = match file::load(path) {
        Ok(loaded) => loaded,
        Err(e) => return State::Unreadable { why: e.to_string() },
    };
    let found = match merge::find(&loaded.doc, agent.event(), &|c| agent.is_ours(c)) {
        Ok(found) => found,
        Err(e) => return State::Unreadable { why: e.to_string() },
    };
    let current = exe.and_then(|exe| command::render(exe, agent.subcommand()).ok());
    if current.as_ref().is_some_and(|c| found.contains(c)) {
        return State::Installed;
    }
    match found.first() {
        None => State::NotInstalled,
        Some(other) => State::OtherPath {
            executable: command::recognise(other, agent.subcommand()).unwrap_or_default(),
        },
    }
}
