//! `collie panes …`: list, read, type into, create, rename and close panes of the running bridge.

use std::process::ExitCode;

use super::{ask, print_json};
use crate::app::windows::SessionList;
use crate::control::protocol::Request;
use crate::control::replies::{Pane, Panes, Screen};

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
    /// Start a hosted pane running CMD (default: your shell), or a new window of a tmux session.
    New {
        /// The pane's name.
        #[arg(long)]
        name: Option<String>,
        /// The folder it starts in (absolute or `~/…`, inside one of your workspaces).
        #[arg(long)]
        folder: Option<String>,
        /// Open it as a new window of this tmux session (`t0:main`, as `collie panes sessions`
        /// lists them) instead of a hosted pane.
        #[arg(long)]
        session: Option<String>,
        /// The command and its arguments.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// List the tmux sessions the bridge mirrors (where `new --session` opens a window).
    Sessions,
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
        Cmd::New {
            name,
            folder,
            session,
            command,
        } => Request::PanesNew {
            name: name.clone(),
            command: command.clone(),
            folder: folder.clone(),
            session: session.clone(),
        },
        Cmd::Sessions => Request::PanesSessions,
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
    match cmd {
        Cmd::List => {
            let Panes { panes } = match ask(&req) {
                Ok(d) => d,
                Err(code) => return Ok(code),
            };
            if args.json {
                print_json(&Panes { panes })?;
                return Ok(ExitCode::SUCCESS);
            }
            if panes.is_empty() {
                outln!("no panes (start tmux, or `collie panes new`)")?;
            }
            for p in panes {
                outln!(
                    "{}/{}#{}  {:<24} {:<4} {}x{}{}",
                    p.machine,
                    p.pane,
                    p.token,
                    p.name,
                    p.backend,
                    p.cols,
                    p.rows,
                    if p.alive { "" } else { "  (exited)" },
                )?;
            }
        }
        Cmd::Sessions => {
            let list: SessionList = match ask(&req) {
                Ok(d) => d,
                Err(code) => return Ok(code),
            };
            if args.json {
                print_json(&list)?;
                return Ok(ExitCode::SUCCESS);
            }
            if list.sessions.is_empty() {
                outln!("no tmux sessions mirrored on {}", list.machine)?;
            }
            for s in list.sessions {
                outln!("{}", s.session)?;
            }
        }
        Cmd::Read { .. } => {
            let screen: Screen = match ask(&req) {
                Ok(d) => d,
                Err(code) => return Ok(code),
            };
            if args.json {
                print_json(&screen)?;
                return Ok(ExitCode::SUCCESS);
            }
            for line in screen.scrollback.iter().chain(&screen.lines) {
                outln!("{line}")?;
            }
        }
        Cmd::New { .. } => {
            let p: Pane = match ask(&req) {
                Ok(d) => d,
                Err(code) => return Ok(code),
            };
            if args.json {
                print_json(&p)?;
            } else {
                outln!("{}/{}#{}", p.machine, p.pane, p.token)?;
            }
        }
        Cmd::Send { .. } | Cmd::Keys { .. } | Cmd::Rename { .. } | Cmd::Close { .. } => {
            if let Err(code) = ask::<()>(&req) {
                return Ok(code);
            }
            if args.json {
                print_json(&())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
