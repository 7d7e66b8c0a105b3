//! `collie walky …`: agents in panes message each other (SPEC §9).
//!
//! The sender is the pane the command runs in (`COLLIE_PANE`, or tmux's `TMUX_PANE` and `TMUX`);
//! the bridge resolves it. `send` waits for the result and exits 0 only when the message was
//! delivered.

use std::io::Read;
use std::process::ExitCode;

use super::{ask, print_json};
use crate::app::walky::sender::PaneEnv;
use crate::app::walky::views::{Inbox, InboxMessage, Log, Sent, Who};
use crate::app::walky::MAX_BODY;
use crate::control::protocol::Request;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Send TEXT (or `-` for stdin) to the pane TO (`pane#token` or `machine/pane#token`).
    Send {
        /// The receiving pane's address (see `collie walky who`).
        to: String,
        /// The message; `-` reads it from stdin. At most 16 KiB.
        text: String,
        /// Return once the message left instead of waiting for the result.
        #[arg(long)]
        no_wait: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the messages received here, or print one message's body.
    Inbox {
        /// A message id.
        id: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Addressable panes with their tokens, on this machine and the crew's others.
    Who {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// This machine's walky log.
    Log {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn read_body(text: &str) -> anyhow::Result<String> {
    if text != "-" {
        return Ok(text.to_owned());
    }
    let mut body = Vec::new();
    std::io::stdin()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)?;
    String::from_utf8(body).map_err(|_| anyhow::anyhow!("the message is not UTF-8 text"))
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    match cmd {
        Cmd::Send {
            to,
            text,
            no_wait,
            json,
        } => {
            let body = read_body(&text)?;
            if body.len() > MAX_BODY {
                anyhow::bail!("the message is too long: at most 16 KiB (16384 bytes)");
            }
            let req = Request::WalkySend {
                from: PaneEnv::from_process(),
                to,
                body,
                wait: !no_wait,
            };
            let sent: Sent = match ask(&req) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&sent)?;
            }
            if let Some(why) = sent.refusal() {
                eprintln!("collie: {} to {}: {why}", sent.id, sent.to);
                return Ok(ExitCode::from(1));
            }
            if !json {
                outln!("{} {} to {}", sent.outcome, sent.id, sent.to)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Inbox { id: Some(id), json } => {
            let req = Request::WalkyInbox {
                from: PaneEnv::from_process(),
                id: Some(id),
            };
            let message: InboxMessage = match ask(&req) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&message)?;
            } else {
                out!("{}", message.text)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Inbox { id: None, json } => {
            let req = Request::WalkyInbox {
                from: PaneEnv::from_process(),
                id: None,
            };
            let inbox: Inbox = match ask(&req) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&inbox)?;
            } else if inbox.messages.is_empty() {
                outln!("no messages")?;
            } else {
                for m in &inbox.messages {
                    outln!("{m}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Who { json } => {
            let who: Who = match ask(&Request::WalkyWho) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&who)?;
            } else {
                for p in &who.panes {
                    let shell = if p.at_shell {
                        "  (at a shell prompt: messages refused)"
                    } else {
                        ""
                    };
                    outln!("{:<32} {}{shell}", p.address, p.name)?;
                }
                for m in &who.unreachable {
                    outln!("({m} not reachable)")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Log { json } => {
            let log: Log = match ask(&Request::WalkyLog) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&log)?;
            } else {
                for e in &log.entries {
                    outln!("{e}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
