//! The witnessed audit log (issue 28) as the application runs it.
//!
//! **On a member**, [`run`] sends the audit log's head (`seq`, `hash` of its last line) to the
//! lead on an uplink stream whenever [`HeadSchedule`] says it is due — the first of each run with
//! the `seq`s of the lead's heads this log does not hold — and [`App::send_final_head`]
//! sends it once more as the bridge stops cleanly. [`App::audit_witnessed`] asks the lead which
//! heads it keeps of this log, for `collie audit verify --witnessed`.
//!
//! **On the lead**, the uplink adapter hands a member's head to [`App::keep_audit_head`] and its
//! question to [`App::witnessed_heads`]; the crew actor keeps and audits them
//! (`collie_actors::crew_link`'s `lead_witness.rs`). The member is named by its connection,
//! never by the message.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use collie_actors::audit::witness::{check_head, HeadSchedule};
use collie_actors::audit::{verify_at, AuditStatus, ChainTail};
use collie_actors::crew_link::{CrewError, CrewMsg, CrewRole};
use collie_crew::transport::{Connection, RecvFrames, SendFrames};
use collie_crew::uplink::{AuditHead, Uplink, UplinkAnswer, WitnessedHead};
use tokio::time::Instant;

use super::{App, AppError};

/// How long the lead has to answer a head or a question about the heads.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The most `contradicted` seqs a head may carry: the lead keeps no more heads than this.
const MAX_CONTRADICTED: usize = collie_actors::audit::witness::MAX_HEADS;

/// How long a stopping bridge waits for the lead to keep its last head.
pub const FINAL_WITHIN: Duration = Duration::from_secs(2);

impl App {
    /// On a member: the lead's answer to `request`, on a stream of its own.
    async fn ask_lead(&self, request: &Uplink) -> Result<UplinkAnswer, String> {
        if self.crew.view.load().role != CrewRole::Member {
            return Err("this bridge is not a member of a crew".to_owned());
        }
        let Some(conn) = self.crew.lead_link.load_full() else {
            return Err("the lead is unreachable (no link to it now)".to_owned());
        };
        let exchange = async {
            let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
            send.send_message(request)
                .await
                .map_err(|e| e.to_string())?;
            let _ = send.finish();
            match recv.recv_message::<UplinkAnswer>().await {
                Ok(Some(answer)) => Ok(answer),
                Ok(None) => Err("the lead sent no answer".to_owned()),
                Err(e) => Err(e.to_string()),
            }
        };
        match tokio::time::timeout(ANSWER_WITHIN, exchange).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("the lead is unreachable ({e})")),
            Err(_) => Err(format!(
                "the lead did not answer within {} s",
                ANSWER_WITHIN.as_secs()
            )),
        }
    }

    /// On a member: sends `head` to the lead (with the `seq`s of the lead's heads this log
    /// contradicts); `Ok` once the lead kept it.
    pub async fn send_audit_head(
        &self,
        head: &ChainTail,
        stopping: bool,
        contradicted: Vec<u64>,
    ) -> Result<(), String> {
        let request = Uplink::AuditHead(AuditHead {
            seq: head.seq,
            hash: head.hash.clone(),
            stopping,
            contradicted,
        });
        match self.ask_lead(&request).await? {
            UplinkAnswer::HeadKept => Ok(()),
            UplinkAnswer::Refused(why) => Err(format!("the lead refused the head: {why}")),
            _ => Err("the lead does not witness audit heads (an older version?)".to_owned()),
        }
    }

    /// On a member, as the bridge stops cleanly: the log's head, once more, within
    /// [`FINAL_WITHIN`] (a lead that does not answer in time does not hold the stop up).
    pub async fn send_final_head(&self) {
        if self.crew.view.load().role != CrewRole::Member {
            return;
        }
        let head = self.core.audit_head.borrow().clone();
        let Some(head) = head else { return };
        match tokio::time::timeout(FINAL_WITHIN, self.send_audit_head(&head, true, Vec::new()))
            .await
        {
            Ok(Ok(())) => tracing::debug!(seq = head.seq, "the lead keeps the audit head"),
            Ok(Err(why)) => tracing::warn!(%why, "the last audit head did not reach the lead"),
            Err(_) => tracing::warn!("the lead did not keep the last audit head in time"),
        }
    }

    /// On a member: the heads of this machine's audit log the lead keeps, then the log's state
    /// here — in that order, so every head names a line already written when the state was
    /// taken. An unreachable lead is an error, never an empty answer.
    pub async fn audit_witnessed(&self) -> Result<(Vec<WitnessedHead>, AuditStatus), AppError> {
        let heads = match self.ask_lead(&Uplink::Witnessed).await {
            Ok(UplinkAnswer::Witnessed(heads)) => heads,
            Ok(UplinkAnswer::Refused(why)) => {
                return Err(AppError::BadRequest(format!("the lead refused: {why}")))
            }
            Ok(_) => {
                return Err(AppError::BadRequest(
                    "the lead does not witness audit logs (an older version?)".to_owned(),
                ))
            }
            Err(why) => return Err(AppError::BadRequest(why)),
        };
        Ok((heads, self.audit_status().await?))
    }

    /// On the lead: member `member` sent `head`.
    pub async fn keep_audit_head(&self, member: &str, head: AuditHead) -> Result<(), String> {
        if !head.is_well_formed() {
            return Err("the hash is not 64 lowercase hex digits".to_owned());
        }
        if head.contradicted.len() > MAX_CONTRADICTED {
            return Err(format!(
                "at most {MAX_CONTRADICTED} contradicted heads (the lead keeps no more)"
            ));
        }
        let tail = ChainTail {
            seq: head.seq,
            hash: head.hash,
        };
        let kept = self
            .crew
            .actor
            .call(|reply| CrewMsg::KeepHead {
                member: member.to_owned(),
                head: tail,
                stopping: head.stopping,
                contradicted: head.contradicted,
                reply,
            })
            .await;
        match kept {
            Ok(Ok(())) => Ok(()),
            Ok(Err(CrewError::AuditUnavailable)) => Err("audit unavailable".to_owned()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("restarting, try again".to_owned()),
        }
    }

    /// On the lead: the heads of `member`'s log it keeps.
    pub async fn witnessed_heads(&self, member: &str) -> Result<Vec<WitnessedHead>, String> {
        let kept = self
            .crew
            .actor
            .call(|reply| CrewMsg::Witnessed {
                member: member.to_owned(),
                reply,
            })
            .await;
        match kept {
            Ok(Ok(heads)) => Ok(heads
                .into_iter()
                .map(|k| WitnessedHead {
                    seq: k.head.seq,
                    hash: k.head.hash,
                    at: time::OffsetDateTime::from_unix_timestamp(k.at)
                        .ok()
                        .and_then(collie_actors::rfc3339::format)
                        .unwrap_or_default(),
                })
                .collect()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("restarting, try again".to_owned()),
        }
    }
}

/// On a member (and idle elsewhere): sends the audit log's head to the lead when it is due
/// ([`HeadSchedule`]). Waits on the audit actor's published head and, while a head is due
/// later, on a timer; an idle log wakes nothing. Started once the actors are up, so the crew's
/// role is known: a member sends its head at once (retried until the link is up), with its
/// log (`log`) checked against the heads the lead already keeps.
pub async fn run(app: App, log: PathBuf) {
    let mut heads = app.core.audit_head.clone();
    let first = heads.borrow_and_update().clone();
    let mut schedule = HeadSchedule::start(first, Instant::now().into_std());
    let mut was_member = true;
    // The first head of a run carries this log's check against the lead's heads.
    let mut checked = false;
    loop {
        let now = Instant::now().into_std();
        let member = app.crew.view.load().role == CrewRole::Member;
        if member && !was_member {
            // Joined a crew: this is the start of what the lead witnesses.
            schedule = HeadSchedule::start(heads.borrow().clone(), now);
            checked = false;
        }
        was_member = member;
        if let Some(head) = schedule.to_send(now) {
            if !member {
                // Nothing to witness here.
                schedule.sent(head, now);
                continue;
            }
            let contradicted = if checked {
                Ok(Vec::new())
            } else {
                contradicted(&app, &log).await
            };
            let sent = match contradicted {
                Ok(contradicted) => {
                    if !contradicted.is_empty() {
                        tracing::error!(
                            seqs = ?contradicted,
                            "this audit log does not hold heads the lead witnessed: it was rewritten, cut or replaced (`collie audit verify --witnessed`)"
                        );
                    }
                    app.send_audit_head(&head, false, contradicted).await
                }
                Err(why) => Err(why),
            };
            match sent {
                Ok(()) => {
                    checked = true;
                    schedule.sent(head, Instant::now().into_std());
                }
                Err(why) => {
                    tracing::debug!(%why, "audit head not sent; trying again later");
                    schedule.failed(Instant::now().into_std());
                }
            }
            continue;
        }
        let due = schedule.due().map(Instant::from_std);
        tokio::select! {
            changed = heads.changed() => {
                if changed.is_err() {
                    return;
                }
                let head = heads.borrow_and_update().clone();
                schedule.line(head, Instant::now().into_std());
            }
            () = sleep_until(due) => {}
        }
    }
}

/// The `seq`s of the heads the lead keeps that the log at `log` does not hold with their hash
/// (the check of `collie audit verify --witnessed`, made by the member at the start of a run so
/// the lead holds the evidence even if nobody asks).
async fn contradicted(app: &App, log: &Path) -> Result<Vec<u64>, String> {
    let (heads, status) = app.audit_witnessed().await.map_err(|e| e.to_string())?;
    if heads.is_empty() {
        return Ok(Vec::new());
    }
    let seqs: BTreeSet<u64> = heads.iter().map(|h| h.seq).collect();
    let log = log.to_owned();
    let (report, chain) = tokio::task::spawn_blocking(move || {
        verify_at(&log, Some(&status.anchor), status.len, &seqs)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(heads
        .into_iter()
        .filter(|h| {
            let tail = ChainTail {
                seq: h.seq,
                hash: h.hash.clone(),
            };
            !check_head(&tail, report.last_seq, &chain).is_ok()
        })
        .map(|h| h.seq)
        .collect())
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
