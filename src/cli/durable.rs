//! `collie durable attach|list|detach` (SPEC §3.1, §10.3): the durable agents this machine reads.
//!
//! The commands edit `<state>/sources.json` themselves (atomically, 0600), so they work with the
//! bridge stopped; a running bridge is then told to read the file again. A token is read only
//! from the variable `--token-env` names — never from the command line, where other users could
//! read it in the process list and the shell would keep it in its history — and never printed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use collie_actors::durable::sources::{self, Source, Sources, Token, Transport};

use super::{print_json, settings};
use crate::app::durable::DurableList;
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;

/// `collie durable …`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Attach a durable agent: over a private unix socket, or over HTTPS with a bearer token.
    Attach(AttachArgs),
    /// List the attached agents and how each is doing.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Detach a durable agent (its waiting questions are withdrawn).
    Detach {
        /// The agent's name.
        name: String,
    },
}

/// Arguments of `collie durable attach`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["socket", "url"])))]
pub(super) struct AttachArgs {
    /// The agent's name (1–32 of A-Z a-z 0-9 . _ -).
    name: String,
    /// The agent's private unix socket (absolute path).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// The agent's HTTPS address (`https://host[:port][/path]`).
    #[arg(long, value_name = "URL", requires = "token_env")]
    url: Option<String>,
    /// The environment variable that holds the agent's bearer token.
    #[arg(long, value_name = "VAR", requires = "url")]
    token_env: Option<String>,
    /// Trust only the CAs in this PEM file for the agent's certificate (else the public roots).
    #[arg(long, value_name = "FILE", requires = "url")]
    ca_file: Option<PathBuf>,
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let settings = settings()?;
    let path = settings.state_dir.join(sources::FILE);
    match cmd {
        Cmd::Attach(args) => {
            let transport = match (args.socket, args.url, args.token_env) {
                (Some(socket), None, None) => {
                    let socket = if socket.is_absolute() {
                        socket
                    } else {
                        std::env::current_dir()?.join(socket)
                    };
                    Transport::Socket { socket }
                }
                (None, Some(url), Some(var)) => {
                    let value = std::env::var(&var).map_err(|_| {
                        anyhow::anyhow!("the variable {var} is not set (or not valid UTF-8)")
                    })?;
                    let token = Token::new(value).with_context(|| format!("the token in {var}"))?;
                    let ca_file = match args.ca_file {
                        Some(f) => Some(
                            std::fs::canonicalize(&f)
                                .with_context(|| format!("the CA file {}", f.display()))?,
                        ),
                        None => None,
                    };
                    Transport::Https {
                        url,
                        token,
                        ca_file,
                    }
                }
                _ => anyhow::bail!("give --socket PATH, or --url URL with --token-env VAR"),
            };
            let source = Source {
                name: args.name.clone(),
                transport,
            };
            let mut all = Sources::load(&path)?;
            all.attach(source)?;
            all.save(&path)?;
            outln!("attached {}", args.name)?;
            reload(&settings)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Detach { name } => {
            let mut all = Sources::load(&path)?;
            all.detach(&name)?;
            all.save(&path)?;
            outln!("detached {name}")?;
            reload(&settings)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::List { json } => {
            let all = Sources::load(&path)?;
            let live: Option<DurableList> =
                client::ask(&settings.control_socket(), &Request::Durable).ok();
            if json {
                print_json(&listing(&all, live.as_ref()))?;
                return Ok(ExitCode::SUCCESS);
            }
            if all.agents.is_empty() {
                outln!("no durable agents attached")?;
            }
            for row in listing(&all, live.as_ref()) {
                outln!(
                    "{}  {}  {}{}  {}{}",
                    row.name,
                    row.transport,
                    row.address,
                    if row.token { "  (token set)" } else { "" },
                    row.status,
                    row.error.map(|e| format!(": {e}")).unwrap_or_default()
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// One row of `list`.
#[derive(serde::Serialize)]
struct Row {
    name: String,
    transport: &'static str,
    address: String,
    /// Whether a token is set (never the token).
    token: bool,
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    conversations: usize,
}

fn listing(all: &Sources, live: Option<&DurableList>) -> Vec<Row> {
    all.agents
        .iter()
        .map(|s| {
            let agent = live.and_then(|l| l.agents.iter().find(|a| a.agent.name == s.name));
            Row {
                name: s.name.clone(),
                transport: s.transport.kind(),
                address: s.transport.address(),
                token: matches!(s.transport, Transport::Https { .. }),
                status: match agent {
                    Some(a) => serde_json::to_value(a.agent.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    None if live.is_some() => "starting".to_owned(),
                    None => "bridge not running".to_owned(),
                },
                error: agent.and_then(|a| a.agent.error.clone()),
                conversations: agent.map_or(0, |a| a.agent.view.conversations.len()),
            }
        })
        .collect()
}

/// Tells a running bridge to read `sources.json` again; says so when none runs.
fn reload(settings: &crate::config::Settings) -> std::io::Result<()> {
    match client::ask::<usize>(&settings.control_socket(), &Request::DurableReload) {
        Ok(_) => outln!("the bridge reads it now")?,
        Err(ClientError::NotRunning) => {
            outln!("no bridge running: it is read when the bridge starts")?
        }
        Err(e) => eprintln!("collie: the bridge could not read it: {e}"),
    }
    Ok(())
}
