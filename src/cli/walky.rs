//! `collie walky …`: agents in panes message each other (SPEC §9).
//!
//! The sender is the pane the command runs in (`COLLIE_PANE`, or tmux's `TMUX_PANE` and `TMUX`);
//! the bridge resolves it. `send` waits for the result and exits 0 only when the message was
//! delivered.

use std::io::Read;
use std::process::ExitCode;

use serde_json::Value;

use super::{ask, print_json};
use crate::app::walky::sender::PaneEnv;
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
            let v = match ask(&req) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&v);
            }
            let outcome = v["outcome"].as_str().unwrap_or("");
            let id = v["id"].as_str().unwrap_or("");
            let to = v["to"].as_str().unwrap_or("");
            match outcome {
                "delivered" => {
                    if !json {
                        println!("delivered {id} to {to}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                "sent" => {
                    if !json {
                        println!("sent {id} to {to}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                other => {
                    eprintln!("collie: {id} to {to}: {other}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::Inbox { id, json } => {
            let req = Request::WalkyInbox {
                from: PaneEnv::from_process(),
                id: id.clone(),
            };
            let v = match ask(&req) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&v);
            } else if id.is_some() {
                print!("{}", v["text"].as_str().unwrap_or(""));
            } else {
                let list = v["messages"].as_array().cloned().unwrap_or_default();
                if list.is_empty() {
                    println!("no messages");
                }
                for m in list {
                    println!(
                        "{}  {}  from {} \"{}\"",
                        m["id"].as_str().unwrap_or(""),
                        m["received_at"].as_str().unwrap_or(""),
                        m["from"].as_str().unwrap_or(""),
                        m["name"].as_str().unwrap_or("")
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Who { json } => {
            let v = match ask(&Request::WalkyWho) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&v);
            } else {
                for p in v["panes"].as_array().cloned().unwrap_or_default() {
                    let shell = if p["at_shell"] == true {
                        "  (at a shell prompt: messages refused)"
                    } else {
                        ""
                    };
                    println!(
                        "{:<32} {}{shell}",
                        p["address"].as_str().unwrap_or(""),
                        p["name"].as_str().unwrap_or("")
                    );
                }
                for m in v["unreachable"].as_array().cloned().unwrap_or_default() {
                    println!("({} not reachable)", m.as_str().unwrap_or(""));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Log { json } => {
            let v = match ask(&Request::WalkyLog) {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            if json {
                print_json(&v);
            } else {
                for e in v["entries"].as_array().cloned().unwrap_or_default() {
                    println!("{}", log_line(&e));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn log_line(e: &Value) -> String {
    let s = |k: &str| e[k].as_str().unwrap_or("").to_owned();
    let mut line = format!("{}  {:<9} {}", s("logged_at"), s("kind"), s("id"));
    if !s("from").is_empty() {
        line.push_str(&format!("  {} → {}", s("from"), s("to")));
    }
    if !s("outcome").is_empty() {
        line.push_str(&format!("  {}", s("outcome")));
    }
    line
}
