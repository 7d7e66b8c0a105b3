//! `collie panes …`: list, read, type into, create, rename and close panes of the running bridge.

use std::process::ExitCode;

use super::{ask, print_json};
use crate::control::protocol::Request;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// List panes (the default).
    List,
    /// Start a hosted pane running CMD (default: your shell).
    New {
        /// The pane's name.
        #[arg(long)]
        name: Option<String>,
        /// The command and its arguments.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Print a pane's screen (masked).
    Read {
        /// Pane id (`t0-3`, `p1`, or `local/t0-3`).
        pane: String,
        /// Also print this many scrollback lines.
        #[arg(long, default_value_t = 0)]
        scrollback: usize,
    },
    /// Type TEXT into a pane.
    Send {
        /// Pane id.
        pane: String,
        /// The text, typed literally.
        text: String,
        /// Press Enter afterwards.
        #[arg(long)]
        enter: bool,
    },
    /// Press named keys (`Enter`, `C-c`, `Up`, …).
    Keys {
        /// Pane id.
        pane: String,
        /// Key names.
        #[arg(required = true)]
        keys: Vec<String>,
    },
    /// Rename a pane.
    Rename {
        /// Pane id.
        pane: String,
        /// The new name.
        name: String,
    },
    /// Close a pane.
    Close {
        /// Pane id.
        pane: String,
    },
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cmd = args.cmd.unwrap_or(Cmd::List);
    let req = match &cmd {
        Cmd::List => Request::PanesList,
        Cmd::New { name, command } => Request::PanesNew {
            name: name.clone(),
            command: command.clone(),
        },
        Cmd::Read { pane, scrollback } => Request::PanesRead {
            pane: pane.clone(),
            scrollback: *scrollback,
        },
        Cmd::Send { pane, text, enter } => Request::PanesSend {
            pane: pane.clone(),
            text: text.clone(),
            enter: *enter,
        },
        Cmd::Keys { pane, keys } => Request::PanesKeys {
            pane: pane.clone(),
            keys: keys.clone(),
        },
        Cmd::Rename { pane, name } => Request::PanesRename {
            pane: pane.clone(),
            name: name.clone(),
        },
        Cmd::Close { pane } => Request::PanesClose { pane: pane.clone() },
    };
    let data = match ask(&req) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    if args.json {
        print_json(&data);
        return Ok(ExitCode::SUCCESS);
    }
    match cmd {
        Cmd::List => {
            let panes = data["panes"].as_array().cloned().unwrap_or_default();
            if panes.is_empty() {
                println!("no panes (start tmux, or `collie panes new`)");
            }
            for p in panes {
                println!(
                    "{}/{}#{}  {:<24} {:<4} {}x{}{}",
                    p["machine"].as_str().unwrap_or(""),
                    p["pane"].as_str().unwrap_or(""),
                    p["token"].as_str().unwrap_or(""),
                    p["name"].as_str().unwrap_or(""),
                    p["backend"].as_str().unwrap_or(""),
                    p["cols"],
                    p["rows"],
                    if p["alive"].as_bool() == Some(false) {
                        "  (exited)"
                    } else {
                        ""
                    },
                );
            }
        }
        Cmd::Read { .. } => {
            for line in data["scrollback"].as_array().into_iter().flatten() {
                println!("{}", line.as_str().unwrap_or(""));
            }
            for line in data["lines"].as_array().into_iter().flatten() {
                println!("{}", line.as_str().unwrap_or(""));
            }
        }
        Cmd::New { .. } => println!(
            "{}/{}#{}",
            data["machine"].as_str().unwrap_or(""),
            data["pane"].as_str().unwrap_or(""),
            data["token"].as_str().unwrap_or("")
        ),
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
}
