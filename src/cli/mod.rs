//! The `collie` command line (SPEC §3.1): clap definitions and dispatch, one file per command group.
//!
//! Exit codes: 0 success, 1 a failure the user can fix, 2 a usage error (clap's own). Commands that
//! need the running bridge talk to it over the control socket and say so in one line when none runs.

// First, so that the printing macros are in scope in every command module below.
#[macro_use]
mod out;

mod apply;
mod audit;
mod bridge;
mod cards;
mod completions;
mod crew;
mod devices;
mod doctor;
mod durable;
mod hook;
mod hooks;
mod local_audit;
mod mcp;
mod pair;
mod panes;
mod redact;
mod restart;
mod sent;
mod service;
mod show;
mod version;
mod walky;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Overrides, Settings};
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;

/// Reach the coding agents in your terminal panes from a phone, safely.
#[derive(Debug, Parser)]
#[command(name = "collie", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run this machine's bridge in the foreground.
    Bridge(bridge::Args),
    /// Print a one-time pairing code (and QR code) for a phone, valid 10 minutes.
    Pair(pair::Args),
    /// Make a crew of machines: init, invite, join, status, members, remove.
    #[command(subcommand)]
    Crew(crew::Cmd),
    /// List and manage paired devices.
    #[command(subcommand)]
    Devices(devices::Cmd),
    /// List, read, type into, create, rename and close panes.
    Panes(panes::Args),
    /// Check and read the audit log.
    #[command(subcommand)]
    Audit(audit::Cmd),
    /// Put Collie's held-permission hook into Claude Code's or Codex's settings, or take it out.
    #[command(subcommand)]
    Hooks(hooks::Cmd),
    /// Mask secret shapes in a file (or stdin) and write the result to stdout.
    Redact(redact::Args),
    /// Agents in panes message each other: send, inbox, who, log.
    #[command(subcommand)]
    Walky(walky::Cmd),
    /// Stdio MCP server for agents (walky tools).
    Mcp,
    /// The cards waiting for a tap on the phone, and the last receipts (reading only).
    Cards(cards::Args),
    /// Attach, list and detach durable agents (programs whose questions reach the phone).
    #[command(subcommand)]
    Durable(durable::Cmd),
    /// The shell lines sent through Collie to this machine: list, discard N, clear.
    #[command(subcommand)]
    Sent(sent::Cmd),
    /// Check this machine's Collie setup, one line per check.
    Doctor,
    /// The hook an agent runs at a permission dialog: asks the phone, prints its decision.
    Hook(hook::Args),
    /// Resolve config.toml, show the difference from the applied configuration, and apply it.
    Apply(apply::Args),
    /// Show the desired, resolved and applied configuration and the permissions in effect.
    Show(show::Args),
    /// Print the version.
    Version,
    /// Run the bridge as your user's service (systemd; launchd on macOS): install, uninstall, status.
    #[command(subcommand)]
    Service(service::Cmd),
    /// Restart the running bridge (through its service when it runs as one), on the same port.
    Restart,
    /// Print a shell completion script: `collie completions bash|zsh|fish`.
    Completions(completions::Args),
    /// Print the man page (roff): `collie man | man -l -`.
    Man,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    // Everything any collie command creates — the bridge's state, and the store's files when
    // `audit verify` or `doctor` opens it with no bridge running — is private from the moment it
    // exists (SPEC §2; docs/decisions/0005-umask.md).
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bridge(args) => bridge::run(args),
        Command::Pair(args) => pair::run(args),
        Command::Crew(cmd) => crew::run(cmd),
        Command::Devices(cmd) => devices::run(cmd),
        Command::Panes(args) => panes::run(args),
        Command::Audit(cmd) => audit::run(cmd),
        Command::Hooks(cmd) => hooks::run(cmd),
        Command::Redact(args) => redact::run(args),
        Command::Walky(cmd) => walky::run(cmd),
        Command::Mcp => mcp::run(),
        Command::Cards(args) => cards::run(args),
        Command::Durable(cmd) => durable::run(cmd),
        Command::Sent(cmd) => sent::run(cmd),
        Command::Doctor => doctor::run(),
        Command::Hook(args) => hook::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Show(args) => show::run(args),
        Command::Service(cmd) => service::run(cmd),
        Command::Restart => restart::run(),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
        Command::Version => version::run(),
    };
    match result {
        Ok(code) => code,
        // The reader of a pipe went away (`collie audit list | head`): it has what it wanted.
        Err(e) if out::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("collie: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Settings for commands that have no flags of their own.
fn settings() -> anyhow::Result<Settings> {
    Settings::load(&Overrides::default())
}

/// Sends one request to the running bridge and reads its reply as `T`; errors become one line on
/// stderr and exit 1.
fn ask<T: serde::de::DeserializeOwned>(req: &Request) -> Result<T, ExitCode> {
    let settings = settings().map_err(|e| {
        eprintln!("collie: {e:#}");
        ExitCode::from(1)
    })?;
    client::ask(&settings.control_socket(), req).map_err(|e| {
        match e {
            ClientError::NotRunning => eprintln!("collie: {e}"),
            other => eprintln!("collie: {other}"),
        }
        ExitCode::from(1)
    })
}

/// Prints JSON data pretty, for `--json`.
fn print_json(v: &impl serde::Serialize) -> std::io::Result<()> {
    match serde_json::to_string_pretty(v) {
        Ok(text) => outln!("{}", out::terminal_safe_json(&text))?,
        Err(e) => eprintln!("collie: cannot print JSON: {e}"),
    }
    Ok(())
}
