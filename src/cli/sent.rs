//! `collie sent list|discard N|clear` (SPEC §3.1, §11): this machine's sent log.
//!
//! With the bridge running the commands go through the control socket (the bridge keeps the one
//! writer, and a discard is audited `sent.discard`). With the bridge stopped they read and
//! rewrite `<state>/sent.jsonl` themselves, atomically and 0600, as `collie durable` does with
//! `sources.json`; there is no audit line then, since the audit log is the bridge's.

use std::process::ExitCode;

use collie_actors::redact::Masker;
use collie_actors::sent::{entry, file, SENT_FILE};

use super::{print_json, settings};
use crate::app::sent::{Discarded, SentLine, SentList};
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;

/// `collie sent …`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// List the lines sent to this machine's shells through Collie, newest first.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Discard one line, by the number `list` shows.
    Discard {
        /// The line's number.
        n: u64,
    },
    /// Discard every line of this machine.
    Clear,
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let settings = settings()?;
    let socket = settings.control_socket();
    let path = settings.state_dir.join(SENT_FILE);
    match cmd {
        Cmd::List { json } => {
            let list = match client::ask::<SentList>(&socket, &Request::SentList) {
                Err(ClientError::NotRunning) => {
                    let masker = Masker::new(settings.redact);
                    let lines = SentLine::newest_first(file::load_log(&path)?, &masker);
                    SentList {
                        recording: settings.sent,
                        lines,
                        unavailable: Vec::new(),
                    }
                }
                other => other?,
            };
            if json {
                print_json(&list)?;
            } else if list.lines.is_empty() {
                outln!("no sent lines")?;
            } else {
                for l in &list.lines {
                    outln!(
                        "{:>5}  {}  {}/{}  {}",
                        l.id,
                        l.ts,
                        l.machine,
                        l.pane,
                        l.line
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Discard { n } => {
            let done = match client::ask::<Discarded>(&socket, &Request::SentDiscard { id: n }) {
                Err(ClientError::NotRunning) => {
                    let mut all = file::load_log(&path)?;
                    if entry::discard(&mut all, n) == 0 {
                        anyhow::bail!("no such line: {n} (`collie sent list` shows the numbers)");
                    }
                    file::rewrite_log(&path, &all)?;
                    1
                }
                Err(ClientError::Refused(e)) if e == "no such line" => {
                    anyhow::bail!("no such line: {n} (`collie sent list` shows the numbers)")
                }
                other => other?.discarded,
            };
            outln!("discarded {done} line")?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Clear => {
            let done = match client::ask::<Discarded>(&socket, &Request::SentClear) {
                Err(ClientError::NotRunning) => {
                    let n = file::load_log(&path)?.len();
                    file::rewrite_log(&path, &[])?;
                    n
                }
                other => other?.discarded,
            };
            outln!("discarded {done} line{}", if done == 1 { "" } else { "s" })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
