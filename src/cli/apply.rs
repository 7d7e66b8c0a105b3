//! `collie apply [--yes]` (SPEC §12, seed 001): resolve and validate all of `config.toml` first,
//! show the difference from the applied snapshot once, confirm, and replace `<state>/applied.json`
//! whole. Any failure before the rename leaves the old snapshot byte for byte.
//!
//! The change is audited `config.applied`: through the running bridge (which keeps the
//! configuration it started with until it restarts), or, with the bridge stopped, as a line kept
//! in the store that the bridge appends to its log when it starts (the audit log has one writer).

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use time::OffsetDateTime;

use super::local_audit::Sink;
use super::settings;
use crate::applied::gate::{config_path, snapshot_path};
use crate::applied::record::config_applied;
use crate::applied::{differences, Confirmed, ResolveEnv, Snapshot};
use crate::config::SCHEMA_VERSION;
use crate::control::protocol::Request;

/// `collie apply`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Apply without asking (for scripts); audited as such.
    #[arg(long)]
    yes: bool,
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = settings()?;
    let env = ResolveEnv::for_settings(&settings, std::env::var("PATH").ok());
    let desired = crate::applied::desired(&settings, &env)?;
    let resolved = match desired.resolved {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "collie: {} does not resolve; nothing was applied:",
                config_path(&settings).display()
            );
            for p in &e.problems {
                eprintln!("  {p}");
            }
            return Ok(ExitCode::from(1));
        }
    };
    let path = snapshot_path(&settings);
    let applied = match Snapshot::read(&path) {
        Ok(s) => s,
        Err(e) => {
            // A snapshot nobody can read is replaced, not kept: say so before asking.
            outln!("the applied snapshot cannot be read ({e}); applying replaces it")?;
            None
        }
    };
    let diffs = differences(applied.as_ref().map(|s| &s.resolved), &resolved);
    if diffs.is_empty() {
        outln!("nothing to apply: the configuration is the one applied")?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("collie apply: the difference from the applied configuration")?;
    for d in &diffs {
        outln!("  {}", d.to_string().replace('\n', "\n  "))?;
    }
    let confirmed = if args.yes {
        Confirmed::Yes
    } else if std::io::stdin().is_terminal() {
        if !ask("apply it?")? {
            outln!("nothing was applied")?;
            return Ok(ExitCode::from(1));
        }
        Confirmed::Interactive
    } else {
        eprintln!(
            "collie: not a terminal: pass --yes to apply without a question; nothing was applied"
        );
        return Ok(ExitCode::from(1));
    };
    let snapshot = Snapshot {
        schema_version: SCHEMA_VERSION,
        resolved,
        applied_at: collie_actors::rfc3339::format(OffsetDateTime::now_utc()).unwrap_or_default(),
        confirmed,
    };

    // Where the audit line will go, found before anything changes.
    let sink = Sink::find(&settings, "nothing was applied")?;
    let running = sink.is_bridge();

    snapshot
        .write(&path, fault_before_rename)
        .context("writing the applied configuration; the old one is unchanged")?;

    let changes = diffs.len();
    let record = |machine: &str| config_applied(machine, &snapshot, changes);
    let request = Request::ConfigApplied {
        snapshot: Box::new(snapshot.clone()),
        changes: changes as u64,
    };
    sink.write(&request, record, "applied")?;
    if running {
        outln!("applied; the running bridge uses it once it is restarted")?;
    } else {
        outln!("applied: `collie bridge` starts with it")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks `question` on the terminal; true for `y` or `yes`.
fn ask(question: &str) -> std::io::Result<bool> {
    out!("{question} [y/N] ")?;
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

/// Test builds only (feature `fault-injection`): with `COLLIE_FAULT=apply-before-rename`, stop
/// once the new snapshot is durable in its temp file and before the rename, and wait to be killed
/// — the crash the test makes at the one moment both files exist.
#[cfg(feature = "fault-injection")]
fn fault_before_rename() {
    if std::env::var("COLLIE_FAULT").as_deref() == Ok("apply-before-rename") {
        eprintln!("fault: apply stops before the rename");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
fn fault_before_rename() {}
