//! The desired state made concrete: `config.toml`'s hash, every workspace as a canonical folder,
//! every starter's executable as a real file with its SHA-256 and the arguments it runs with.
//!
//! Resolution reads the file system and changes nothing. It reports every problem it finds at once
//! (a person fixing a configuration wants the whole list, not one error per run), and either all of
//! it resolves or nothing is returned.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::agents::{valid_model, Agent};
use super::env::expand;
use super::sandbox::SandboxResolved;
use super::speech::SpeechResolved;
use crate::config::{Access, ConfigFile, StarterEntry};

/// Most starters a configuration may hold (the New page is a list on a phone).
pub const MAX_STARTERS: usize = 64;
/// Most workspaces.
pub const MAX_WORKSPACES: usize = 64;

pub use super::env::ResolveEnv;
pub use super::pin::{executable, sha256_file, MAX_ARGS, MAX_ARG_BYTES};

/// `config.toml` as applied: where it was and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigPin {
    /// The file.
    pub path: PathBuf,
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
}

/// One workspace, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolvedWorkspace {
    /// As `config.toml` writes it (`~/code`), or `~` for the default.
    pub given: String,
    /// The canonical folder (symlinks resolved).
    pub path: PathBuf,
    /// What the file tools may do in it.
    pub access: Access,
}

/// One starter, resolved and pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolvedStarter {
    /// What the New page shows.
    pub name: String,
    /// The agent it runs, when Collie knows it.
    pub agent: Option<Agent>,
    /// `exec` as written.
    pub exec_given: String,
    /// The real file it runs (symlinks resolved).
    pub exec: PathBuf,
    /// Hex SHA-256 of that file, checked again just before each spawn.
    pub sha256: String,
    /// The arguments after the executable: the fixed ones, then the option fields' flags.
    pub args: Vec<String>,
    /// It skips the agent's permission prompts ("No prompts").
    pub no_prompts: bool,
}

/// The whole resolution: what `apply` pins and the bridge compares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolved {
    /// `config.toml`, or `None` when there is none (the built-in defaults).
    pub config: Option<ConfigPin>,
    /// The workspaces (the home folder when `config.toml` names none).
    pub workspaces: Vec<ResolvedWorkspace>,
    /// The starters, in the file's order.
    pub starters: Vec<ResolvedStarter>,
    /// `[sandbox]`'s effective policy; `None` with `profile = "off"` (and in snapshots written
    /// before there was a sandbox, which read as `off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxResolved>,
    /// `[speech]`'s transcriber, pinned; `None` without the table (and in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<SpeechResolved>,
}

/// Everything that did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("\n"))]
pub struct ResolveError {
    /// One line per problem.
    pub problems: Vec<String>,
}

/// Resolves `file` (read from `text`, at `config_path`; `None` when there is no file).
pub fn resolve(
    config_path: &Path,
    text: Option<&str>,
    file: &ConfigFile,
    env: &ResolveEnv,
) -> Result<Resolved, ResolveError> {
    let mut problems = Vec::new();
    let config = text.map(|t| ConfigPin {
        path: config_path.to_path_buf(),
        sha256: hex::encode(Sha256::digest(t.as_bytes())),
    });
    let workspaces = workspaces(file, env, &mut problems);
    let starters = starters(&file.starters, env, &mut problems);
    let roots: Vec<(PathBuf, Access)> = workspaces
        .iter()
        .map(|w| (w.path.clone(), w.access))
        .collect();
    let programs: Vec<(&str, &Path)> = starters
        .iter()
        .map(|st| (st.name.as_str(), st.exec.as_path()))
        .collect();
    let sandbox = super::sandbox::resolve(file, &roots, &programs, env, &mut problems);
    let speech = super::speech::resolve(file.speech.as_ref(), env, &mut problems);
    if problems.is_empty() {
        Ok(Resolved {
            config,
            workspaces,
            starters,
            sandbox,
            speech,
        })
    } else {
        Err(ResolveError { problems })
    }
}

fn workspaces(
    file: &ConfigFile,
    env: &ResolveEnv,
    problems: &mut Vec<String>,
) -> Vec<ResolvedWorkspace> {
    let given: Vec<(String, Access)> = match &file.workspaces {
        Some(list) => list
            .iter()
            .map(|w| (w.path().to_owned(), w.access()))
            .collect(),
        // No `workspaces`: the home folder, as before there was a configuration (SPEC §11).
        None => match &env.home {
            Some(_) => vec![("~".to_owned(), Access::Write)],
            None => Vec::new(),
        },
    };
    if given.len() > MAX_WORKSPACES {
        problems.push(format!(
            "workspaces: {} given, at most {MAX_WORKSPACES}",
            given.len()
        ));
        return Vec::new();
    }
    let mut out: Vec<ResolvedWorkspace> = Vec::new();
    for (text, access) in given {
        let path = match expand(&text, env) {
            Ok(p) => p,
            Err(why) => {
                problems.push(format!("workspace {text:?}: {why}"));
                continue;
            }
        };
        let path = match std::fs::canonicalize(&path) {
            Ok(p) if p.is_dir() => p,
            Ok(p) => {
                problems.push(format!(
                    "workspace {text:?}: {} is not a folder",
                    p.display()
                ));
                continue;
            }
            Err(e) => {
                problems.push(format!("workspace {text:?}: {}: {e}", path.display()));
                continue;
            }
        };
        if let Some(g) = env
            .guarded
            .iter()
            .filter_map(|g| std::fs::canonicalize(g).ok())
            .find(|g| path.starts_with(g))
        {
            problems.push(format!(
                "workspace {text:?}: {} lies inside Collie's own {}, which no tool may use",
                path.display(),
                g.display()
            ));
            continue;
        }
        // The same folder twice: one workspace with the wider access (seed 001).
        if let Some(same) = out.iter_mut().find(|w| w.path == path) {
            same.access = same.access.max(access);
            continue;
        }
        out.push(ResolvedWorkspace {
            given: text,
            path,
            access,
        });
    }
    // A workspace inside another may widen what its parent grants, never narrow it: the file tools
    // could not keep a read-only hole inside a writable folder (a rename or a link around it).
    for inner in &out {
        if let Some(outer) = out
            .iter()
            .find(|o| o.path != inner.path && inner.path.starts_with(&o.path))
        {
            if inner.access < outer.access {
                problems.push(format!(
                    "workspace {:?} ({}) lies inside workspace {:?} ({}) and would narrow it: \
                     remove it, or make the outer one read-only",
                    inner.given,
                    inner.access.as_str(),
                    outer.given,
                    outer.access.as_str()
                ));
            }
        }
    }
    out
}

fn starters(
    rows: &[StarterEntry],
    env: &ResolveEnv,
    problems: &mut Vec<String>,
) -> Vec<ResolvedStarter> {
    if rows.len() > MAX_STARTERS {
        problems.push(format!(
            "starters: {} given, at most {MAX_STARTERS}",
            rows.len()
        ));
        return Vec::new();
    }
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for row in rows {
        let before = problems.len();
        let name = row.name.trim();
        let label = format!("starter {name:?}");
        if !valid_starter_name(name) {
            problems.push(format!(
                "{label}: a name is 1 to 40 characters without control characters"
            ));
        } else if !names.insert(name.to_lowercase()) {
            problems.push(format!("{label}: the name is used twice"));
        }
        let agent = match &row.agent {
            Some(a) => match Agent::from_name(a) {
                Some(agent) => Some(agent),
                None => {
                    problems.push(format!(
                        "{label}: agent {a:?} is not one Collie knows (claude, codex)"
                    ));
                    None
                }
            },
            None => Path::new(&row.exec)
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(Agent::from_name),
        };
        if let Some(m) = &row.model {
            if !valid_model(m) {
                problems.push(format!(
                    "{label}: model {m:?} must be letters, digits and ._:/- (at most 100)"
                ));
            }
        }
        if agent.is_none() && (row.model.is_some() || row.no_prompts) {
            problems.push(format!(
                "{label}: `model` and `no_prompts` pick an agent's own flags; name the agent \
                 (`agent = \"claude\"` or `\"codex\"`) or put the flags in `args`"
            ));
        }
        if row.args.len() > MAX_ARGS {
            problems.push(format!("{label}: at most {MAX_ARGS} args"));
        }
        if row
            .args
            .iter()
            .any(|a| a.len() > MAX_ARG_BYTES || a.contains('\0'))
        {
            problems.push(format!(
                "{label}: an argument is longer than {MAX_ARG_BYTES} bytes or holds a NUL"
            ));
        }
        let exec = match executable(&row.exec, env) {
            Ok(found) => Some(found),
            Err(why) => {
                problems.push(format!("{label}: exec {:?}: {why}", row.exec));
                None
            }
        };
        if problems.len() > before {
            continue;
        }
        let Some((exec, sha256)) = exec else { continue };
        let mut args = row.args.clone();
        if let Some(agent) = agent {
            args.extend(agent.option_flags(row.model.as_deref(), row.no_prompts));
        }
        out.push(ResolvedStarter {
            name: name.to_owned(),
            agent,
            exec_given: row.exec.clone(),
            exec,
            sha256,
            args,
            no_prompts: row.no_prompts,
        });
    }
    out
}

/// 1 to 40 characters, none a control character.
pub fn valid_starter_name(name: &str) -> bool {
    let n = name.chars().count();
    (1..=40).contains(&n) && !name.chars().any(char::is_control)
}
