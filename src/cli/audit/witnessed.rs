//! `collie audit verify --witnessed` (issue 28): the plain check of [`super`], then every
//! head of this log the crew's lead keeps, each of which must be a line of the local chain with
//! that exact hash, at or before its end.
//!
//! The question goes to the lead through the running bridge (its link). No bridge, no link, a
//! lead that does not answer or that keeps no head of this log: exit 1 with the reason — never a
//! pass. Exit 0 only when the plain check passes and every head matches.

use std::collections::BTreeSet;
use std::process::ExitCode;

use collie_actors::audit::anchor::short;
use collie_actors::audit::witness::{check_head, HeadCheck};
use collie_actors::audit::ChainTail;
use collie_crew::uplink::WitnessedHead;

use super::{check_at, print_checked, Checked, Verified};
use crate::config::Settings;
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;
use crate::control::replies::Witnessed;

/// Each witnessed head and how it stands here.
struct Compared {
    heads: Vec<(WitnessedHead, HeadCheck)>,
}

impl Compared {
    fn of(
        heads: Vec<WitnessedHead>,
        checked: &Checked,
        chain: &std::collections::BTreeMap<u64, String>,
    ) -> Self {
        let end = checked.report.last_seq;
        let heads = heads
            .into_iter()
            .map(|h| {
                let tail = ChainTail {
                    seq: h.seq,
                    hash: h.hash.clone(),
                };
                let check = check_head(&tail, end, chain);
                (h, check)
            })
            .collect();
        Compared { heads }
    }

    fn is_ok(&self) -> bool {
        !self.heads.is_empty() && self.heads.iter().all(|(_, c)| c.is_ok())
    }

    /// The highest `seq` among the heads that match.
    fn latest_match(&self) -> Option<&WitnessedHead> {
        self.heads
            .iter()
            .filter(|(_, c)| c.is_ok())
            .map(|(h, _)| h)
            .max_by_key(|h| h.seq)
    }
}

/// `"witnessed"` of `--json`.
#[derive(serde::Serialize)]
struct WitnessedJson<'a> {
    ok: bool,
    heads: Vec<HeadJson<'a>>,
    /// Lines after the latest matching head: not witnessed yet.
    unwitnessed_lines: u64,
}

#[derive(serde::Serialize)]
struct HeadJson<'a> {
    seq: u64,
    hash: &'a str,
    at: &'a str,
    matches: bool,
    problem: Option<String>,
}

#[derive(serde::Serialize)]
struct VerifiedWitnessed<'a> {
    #[serde(flatten)]
    verified: Verified<'a>,
    witnessed: WitnessedJson<'a>,
}

/// Runs the check; the exit code as the module says.
pub(super) fn run(settings: &Settings, json: bool) -> anyhow::Result<ExitCode> {
    let answer = match client::ask::<Witnessed>(
        &settings.control_socket(),
        &Request::AuditWitnessed,
    ) {
        Ok(answer) => answer,
        Err(ClientError::NotRunning) => {
            eprintln!(
                "collie: --witnessed asks the crew's lead through the running bridge, and no bridge is running for this state dir; start one with `collie bridge`"
            );
            return Ok(ExitCode::from(1));
        }
        Err(e) => {
            eprintln!("collie: cannot check the audit log against the lead's witness: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let seqs: BTreeSet<u64> = answer.heads.iter().map(|h| h.seq).collect();
    let (checked, chain) = check_at(settings, answer.status, &seqs)?;
    let compared = Compared::of(answer.heads, &checked, &chain);
    let ok = checked.is_ok() && compared.is_ok();
    let last = checked.report.last_seq.unwrap_or(0);
    let unwitnessed = last.saturating_sub(compared.latest_match().map_or(0, |h| h.seq));
    if json {
        let mut verified = Verified::of(&checked);
        verified.ok = ok;
        crate::cli::print_json(&VerifiedWitnessed {
            verified,
            witnessed: WitnessedJson {
                ok: compared.is_ok(),
                heads: compared
                    .heads
                    .iter()
                    .map(|(h, c)| HeadJson {
                        seq: h.seq,
                        hash: &h.hash,
                        at: &h.at,
                        matches: c.is_ok(),
                        problem: (!c.is_ok()).then(|| c.to_string()),
                    })
                    .collect(),
                unwitnessed_lines: unwitnessed,
            },
        })?;
    } else {
        print_checked(&checked)?;
        print_compared(&compared, unwitnessed)?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_compared(compared: &Compared, unwitnessed: u64) -> std::io::Result<()> {
    if compared.heads.is_empty() {
        outln!(
            "NOT witnessed: the lead keeps no head of this log yet (a member sends one every 10 lines, a minute after a line, and as its bridge stops)"
        )?;
        return Ok(());
    }
    for (h, c) in compared.heads.iter().filter(|(_, c)| !c.is_ok()) {
        outln!(
            "NOT witnessed: the lead saw seq {} with hash {} ({}); {c}",
            h.seq,
            short(&h.hash),
            h.at
        )?;
    }
    if compared.is_ok() {
        if let Some(latest) = compared.latest_match() {
            outln!(
                "witnessed: the lead's {} head(s) of this log match it, the latest seq {} ({})",
                compared.heads.len(),
                latest.seq,
                latest.at
            )?;
        }
    } else {
        outln!(
            "audit log NOT ok: it does not match what the lead witnessed ({} of {} head(s) differ)",
            compared.heads.iter().filter(|(_, c)| !c.is_ok()).count(),
            compared.heads.len()
        )?;
    }
    if compared.is_ok() && unwitnessed > 0 {
        outln!("{unwitnessed} line(s) after the latest witnessed head are not witnessed yet")?;
    }
    Ok(())
}
