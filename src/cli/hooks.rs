//! `collie hooks install|uninstall|status`: Collie's held-permission hook in Claude Code's or
//! Codex's own settings (SPEC §10.2, docs/guide/hooks.md). Works without a bridge: it only edits
//! the agents' files.
//!
//! `install` requires `--hold-permissions`: the hook routes every permission request of the agent
//! to the phone, and the flag is the user's explicit consent to that
//! (docs/decisions/0021-hooks-install.md).

use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use super::local_audit::Sink;
use super::print_json;
use crate::agent_hooks::{self, Agent, Change, ChangeKind, HooksError, Paths, Report, Scope};
use crate::config::{Overrides, Settings};
use crate::control::protocol::Request;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Merge Collie's PermissionRequest hook into the agent's settings, so that its permission
    /// dialogs wait for a tap on your phone first. Your own hooks stay as they are.
    Install {
        /// The agent.
        #[arg(value_enum)]
        agent: AgentArg,
        /// Send the agent's permission requests to your phone (required: this version installs
        /// only that hook).
        #[arg(long)]
        hold_permissions: bool,
        /// Your settings for every project, or the current directory's project settings.
        #[arg(long, value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
    },
    /// Remove exactly the hook Collie added (nothing else).
    Uninstall {
        /// The agent.
        #[arg(value_enum)]
        agent: AgentArg,
        /// Your settings for every project, or the current directory's project settings.
        #[arg(long, value_enum, default_value_t = ScopeArg::User)]
        scope: ScopeArg,
    },
    /// Show, for each agent and scope, the settings file and whether Collie's hook is in it.
    Status {
        /// Only this agent.
        #[arg(value_enum)]
        agent: Option<AgentArg>,
        /// Print `{"hooks": [{"agent","scope","path","state",…}]}`.
        #[arg(long)]
        json: bool,
    },
}

/// The agent on the command line (the library never sees clap types).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum AgentArg {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
}

impl From<AgentArg> for Agent {
    fn from(a: AgentArg) -> Agent {
        match a {
            AgentArg::Claude => Agent::Claude,
            AgentArg::Codex => Agent::Codex,
        }
    }
}

/// The scope on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum ScopeArg {
    /// Your settings (`~/.claude/settings.json`, `~/.codex/hooks.json`).
    User,
    /// The current directory's (`.claude/settings.json`, `.codex/hooks.json`).
    Project,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::User => Scope::User,
            ScopeArg::Project => Scope::Project,
        }
    }
}

/// `--json` of `status`.
#[derive(Serialize)]
struct StatusJson {
    hooks: Vec<Report>,
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    match cmd {
        Cmd::Install {
            agent,
            hold_permissions,
            scope,
        } => {
            let agent = Agent::from(agent);
            if !hold_permissions {
                eprintln!(
                    "collie: this version installs only the held-permission hook, which sends \
                     {}'s permission requests to your phone; pass --hold-permissions to install it",
                    agent.product()
                );
                return Ok(ExitCode::from(2));
            }
            let paths = Paths::from_env().map_err(nothing_changed)?;
            let exe =
                std::env::current_exe().context("cannot find the running collie executable")?;
            let settings = Settings::load(&Overrides::default())?;
            let sink = Sink::find(&settings, "nothing was changed")?;
            // The agent must wait longer than this bridge holds a request (`[hooks] hold`).
            let change = agent_hooks::install(agent, scope.into(), &paths, &exe, settings.hold)
                .map_err(nothing_changed)?;
            say_installed(&change)?;
            audit(sink, change, "installed")?;
        }
        Cmd::Uninstall { agent, scope } => {
            let paths = Paths::from_env().map_err(nothing_changed)?;
            let sink = Sink::find(
                &Settings::load(&Overrides::default())?,
                "nothing was changed",
            )?;
            let change = agent_hooks::uninstall(agent.into(), scope.into(), &paths)
                .map_err(nothing_changed)?;
            say_removed(&change)?;
            audit(sink, change, "removed")?;
        }
        Cmd::Status { agent, json } => {
            let paths = Paths::from_env()?;
            let exe = std::env::current_exe().ok();
            let only = agent.map(Agent::from);
            let hooks: Vec<Report> = agent_hooks::status(&paths, exe.as_deref())
                .into_iter()
                .filter(|r| only.is_none_or(|a| a == r.agent))
                .collect();
            if json {
                print_json(&StatusJson { hooks })?;
            } else {
                for r in hooks {
                    outln!(
                        "{:<6}  {:<7}  {}  {}",
                        r.agent,
                        r.scope,
                        r.path.display(),
                        r.state
                    )?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the `hooks.installed` line of `change` through `sink` (none when nothing changed).
fn audit(sink: Sink, change: Change, changed: &str) -> anyhow::Result<()> {
    let Some(action) = agent_hooks::record::action(change.kind) else {
        return Ok(());
    };
    let record = |machine: &str| agent_hooks::record::hooks_installed(machine, &change, action);
    sink.write(
        &Request::HooksChanged {
            change: change.clone(),
        },
        record,
        changed,
    )
}

/// Every failure of install and uninstall happens before the file is replaced (or is the
/// replacement itself failing), so the file is as it was.
fn nothing_changed(e: HooksError) -> anyhow::Error {
    anyhow::anyhow!("{e}; nothing was changed")
}

/// What `install` did.
fn say_installed(change: &Change) -> std::io::Result<()> {
    let product = change.agent.product();
    let path = change.path.display();
    if change.kind == ChangeKind::Unchanged {
        outln!("Collie's hook for {product} is already in {path}; nothing changed")?;
        return Ok(());
    }
    outln!(
        "installed Collie's {} hook for {product} in {path}: while `collie bridge` runs, \
         {product}'s permission dialogs wait for a tap on your phone first",
        change.agent.event()
    )?;
    if change.agent == Agent::Codex {
        outln!("Codex runs a new hook only once you trust it: review it with /hooks in Codex")?;
    }
    outln!("sessions already running may not see it until they restart")?;
    Ok(())
}

/// What `uninstall` did.
fn say_removed(change: &Change) -> std::io::Result<()> {
    let product = change.agent.product();
    let path = change.path.display();
    if change.kind == ChangeKind::Unchanged {
        outln!("no Collie hook for {product} in {path}; nothing changed")?;
    } else {
        outln!("removed Collie's hook for {product} from {path}")?;
    }
    Ok(())
}
