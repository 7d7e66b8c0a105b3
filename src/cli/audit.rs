//! `collie audit verify|tail`: check the hash chain of `<state>/audit.log` and read its end.
//!
//! Both read the file directly. `verify` also needs the chain tail the store remembers: it asks the
//! running bridge for it, or opens the store itself when no bridge runs (sled allows one process).

use std::process::ExitCode;

use anyhow::Context;
use collie_actors::audit::actor::stored_tail;
use collie_actors::audit::{self, ChainTail, VerifyReport};
use collie_actors::store::Store;

use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Check every line's hash and the chain; exit 1 and name the first bad seq if broken.
    Verify,
    /// Print the last lines of the audit log.
    Tail {
        /// How many lines.
        #[arg(short = 'n', default_value_t = 20)]
        n: usize,
    },
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let settings = super::settings()?;
    let path = settings.state_dir.join("audit.log");
    match cmd {
        Cmd::Tail { n } => {
            for line in audit::tail(&path, n.min(100_000))? {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify => {
            let stored: Option<ChainTail> =
                match client::call(&settings.control_socket(), &Request::AuditStoredTail) {
                    Ok(v) => serde_json::from_value(v).context("reading the stored tail")?,
                    Err(ClientError::NotRunning) => {
                        let db = settings.state_dir.join("db");
                        if db.exists() {
                            let store = Store::open(&db).context("opening the store")?;
                            stored_tail(&store)
                        } else {
                            None
                        }
                    }
                    Err(e) => return Err(e.into()),
                };
            match audit::verify(&path, stored.as_ref())? {
                VerifyReport::Ok {
                    records, last_seq, ..
                } => {
                    println!(
                        "audit log ok: {records} lines, last seq {}",
                        last_seq.map_or("-".to_string(), |s| s.to_string())
                    );
                    Ok(ExitCode::SUCCESS)
                }
                VerifyReport::Broken(f) => {
                    println!("audit log broken at {f}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
