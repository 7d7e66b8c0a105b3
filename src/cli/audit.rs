//! `collie audit verify|tail|acknowledge`: check the hash chain of `<state>/audit.log`, read its
//! end, and mark a recorded break as seen (SPEC §7).
//!
//! `verify` reads the file directly and compares its end with what the store vouches for: it asks
//! the running bridge (whose answer also says how long the file was when it answered, so lines
//! appended meanwhile are not read half-way), or opens the store itself when no bridge runs (sled
//! allows one process). Recorded breaks are listed; any not acknowledged fails the check. With
//! `--witnessed` it also compares the log with the heads the crew's lead witnessed
//! ([`witnessed`]).

mod witnessed;

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use anyhow::Context;
use collie_actors::audit::stored::{load_anchor, load_breaks};
use collie_actors::audit::{self, Anchor, AuditStatus, BreakRecord, VerifyReport};
use collie_actors::store::Store;

use crate::config::Settings;
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;
use crate::control::replies::Acknowledged;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Check every line's hash, the chain, and the end the store vouches for; list recorded
    /// breaks. Exit 1 naming the first bad seq, or any break not acknowledged.
    Verify {
        /// Print `{"ok","records","last_seq","failure","breaks"}` (with `--witnessed`, also
        /// `"witnessed"`).
        #[arg(long)]
        json: bool,
        /// On a crew member: also ask the lead (through the running bridge) which heads of this
        /// log it witnessed, and check that each is a line of this log with that hash. Exit 1 on
        /// a mismatch, when the lead keeps no head, or when the lead cannot be asked.
        #[arg(long)]
        witnessed: bool,
    },
    /// Print the last lines of the audit log.
    Tail {
        /// How many lines.
        #[arg(short = 'n', default_value_t = 20)]
        n: usize,
        /// On a lead: the lines its deputy wrote standing in for it (kept as `deputy.line`
        /// lines once the deputy was back), each as the deputy wrote it, after its name.
        #[arg(long)]
        crew: bool,
    },
    /// Mark the recorded break at SEQ as seen, once you have looked at it (audited). The break
    /// stays listed; it no longer fails `verify`, `doctor` or `/api/health`.
    Acknowledge {
        /// The `seq` of the break's `audit.break` line (`collie audit verify` lists them).
        seq: u64,
    },
}

/// A verification and the breaks on record.
pub(super) struct Checked {
    pub(super) report: VerifyReport,
    pub(super) breaks: Vec<BreakRecord>,
    /// Lines the log refused that wait in the store.
    pub(super) kept: usize,
    /// Whether a store was there to compare the end with.
    pub(super) anchored: bool,
}

impl Checked {
    /// Breaks nobody acknowledged.
    pub(super) fn open_breaks(&self) -> impl Iterator<Item = &BreakRecord> {
        self.breaks.iter().filter(|b| b.acknowledged.is_none())
    }

    pub(super) fn is_ok(&self) -> bool {
        self.report.is_ok() && self.open_breaks().next().is_none()
    }
}

/// Verifies the log of `settings` against the running bridge's view, or the store's.
pub(super) fn check(settings: &Settings) -> anyhow::Result<Checked> {
    let path = settings
        .state_dir
        .join(collie_actors::state_files::AUDIT_LOG);
    let (anchor, len, breaks, kept): (Option<Anchor>, Option<u64>, Vec<BreakRecord>, usize) =
        match client::ask::<AuditStatus>(&settings.control_socket(), &Request::AuditStatus) {
            Ok(status) => (Some(status.anchor), status.len, status.breaks, status.kept),
            Err(ClientError::NotRunning) => {
                let db = settings.state_dir.join("db");
                if db.exists() {
                    let store = Store::open(&db).context("opening the store")?;
                    let anchor = load_anchor(&store).context("reading the audit anchor")?;
                    let breaks = load_breaks(&store).context("reading the recorded breaks")?;
                    (Some(anchor), None, breaks, 0)
                } else {
                    (None, None, Vec::new(), 0)
                }
            }
            Err(e) => return Err(e.into()),
        };
    let report = audit::verify(&path, anchor.as_ref(), len)?;
    Ok(Checked {
        report,
        breaks,
        kept,
        anchored: anchor.is_some(),
    })
}

/// The log of `settings` checked against the running bridge's view as [`check`] does, with the
/// hashes of its lines at `seqs` (for `--witnessed`).
pub(super) fn check_at(
    settings: &Settings,
    status: AuditStatus,
    seqs: &BTreeSet<u64>,
) -> anyhow::Result<(Checked, BTreeMap<u64, String>)> {
    let path = settings
        .state_dir
        .join(collie_actors::state_files::AUDIT_LOG);
    let (report, chain) = audit::verify_at(&path, Some(&status.anchor), status.len, seqs)?;
    let checked = Checked {
        report,
        breaks: status.breaks,
        kept: status.kept,
        anchored: true,
    };
    Ok((checked, chain))
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let settings = super::settings()?;
    let path = settings
        .state_dir
        .join(collie_actors::state_files::AUDIT_LOG);
    match cmd {
        Cmd::Tail { n, crew: false } => {
            for line in audit::tail(&path, n.min(100_000))? {
                outln!("{line}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Tail { n, crew: true } => {
            for (deputy, line) in crate::app::deputy::lines::kept(&path, n.min(100_000))? {
                outln!("{deputy} {line}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify {
            json,
            witnessed: true,
        } => witnessed::run(&settings, json),
        Cmd::Verify { json, .. } => {
            let checked = check(&settings)?;
            if json {
                super::print_json(&Verified::of(&checked))?;
            } else {
                print_checked(&checked)?;
            }
            Ok(if checked.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Acknowledge { seq } => {
            let answer = super::ask::<Acknowledged>(&Request::AuditAcknowledge { seq });
            match answer {
                Ok(_) => {
                    outln!("acknowledged the break at seq {seq}; it stays on record")?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
    }
}

/// `collie audit verify --json`.
#[derive(serde::Serialize)]
pub(super) struct Verified<'a> {
    pub(super) ok: bool,
    records: u64,
    last_seq: Option<u64>,
    interrupted: &'a [u64],
    failure: Option<String>,
    breaks: &'a [BreakRecord],
    kept: usize,
}

impl<'a> Verified<'a> {
    pub(super) fn of(checked: &'a Checked) -> Self {
        Verified {
            ok: checked.is_ok(),
            records: checked.report.records,
            last_seq: checked.report.last_seq,
            interrupted: &checked.report.interrupted,
            failure: checked.report.failure.as_ref().map(ToString::to_string),
            breaks: &checked.breaks,
            kept: checked.kept,
        }
    }
}

pub(super) fn print_checked(checked: &Checked) -> std::io::Result<()> {
    let report = &checked.report;
    let last = report
        .last_seq
        .map_or_else(|| "-".to_owned(), |s| s.to_string());
    let open = checked.open_breaks().count();
    match &report.failure {
        None if open == 0 => outln!(
            "audit log ok: {} lines, last seq {last}",
            report.records
        )?,
        None => outln!(
            "audit log NOT ok: the chain is intact ({} lines, last seq {last}), but {open} recorded break(s) are not acknowledged",
            report.records
        )?,
        Some(f) => outln!("audit log broken at {f}")?,
    }
    if !checked.anchored {
        outln!("no store found: the end of the log could not be checked")?;
    }
    if !report.interrupted.is_empty() {
        let lines: Vec<String> = report.interrupted.iter().map(u64::to_string).collect();
        outln!("interrupted writes skipped at line(s) {}", lines.join(", "))?;
    }
    for b in &checked.breaks {
        if b.acknowledged.is_some() {
            outln!("acknowledged {b}")?;
        } else {
            outln!("BROKEN: {b}")?;
            outln!(
                "  look at the log and the machine, then: collie audit acknowledge {}",
                b.seq
            )?;
        }
    }
    if checked.kept > 0 {
        outln!(
            "{} line(s) wait in the store until the log can be written",
            checked.kept
        )?;
    }
    Ok(())
}
