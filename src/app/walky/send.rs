//! `collie walky send` (SPEC §9): the sender's side.
//!
//! The sender is the pane the command runs in; the message gets a 128-bit random id and this
//! machine's clock. Then, by where it goes:
//! - a pane of this machine: delivered here, nothing is signed (a solo bridge signs nothing and
//!   sends nothing off the machine);
//! - on a member, a pane elsewhere in the crew: signed with the member's crew key and handed to the
//!   lead on an uplink stream; the lead answers with the result;
//! - on the lead, a member's pane: signed with the lead's key and relayed to the member, which
//!   answers with the result.
//!
//! The message is logged (`sent`) and audited (`walky.sent`) before it leaves; the result is logged
//! when it comes back. A member accepts a result only from its lead (it arrives on the lead's
//! connection) and only for a message it logged.

use collie_actors::audit::AuditEventKind;
use collie_actors::crew_link::CrewRole;
use collie_actors::walky::actor::WalkyMsg;
use collie_actors::walky::log::Kind;
use collie_crew::relay::client::On;
use collie_crew::relay::{RelayKind, RelayOk};
use collie_crew::transport::{Connection, RecvFrames, SendFrames};
use collie_crew::uplink::{Uplink, UplinkAnswer};
use collie_crew::walky::{
    accept_result, Address, Message, MessageId, Outcome, WalkyResult, MAX_BODY,
};

use super::deliver::{self, audit_record};
use super::sender::{self, PaneEnv};
use super::views::Sent;
use super::{append, entry, log_result, now, outcome_text, RESULT_WITHIN};
use crate::app::machine::{Machine, Member};
use crate::app::App;
use crate::app::AppError;

/// The pane `env` runs in (and the token `COLLIE_PANE` carried): named by its variables, or, in a
/// zellij pane, the pane whose process the asking command (`peer`) descends from.
pub(super) async fn own_pane(
    ctx: &App,
    env: &PaneEnv,
    peer: Option<u32>,
) -> Result<(String, Option<String>), sender::SenderError> {
    let here = ctx.crew.view.load().name.clone();
    match sender::pane_of(env, &here, &ctx.panes.tmux_sockets) {
        Err(sender::SenderError::NotInPane) if env.zellij_pane.is_some() => {
            let chain = peer
                .map(collie_actors::panes::foreground::ancestry)
                .unwrap_or_default();
            match ctx.pane_holding(chain).await {
                Ok(Some(p)) => Ok((p.pane, None)),
                _ => Err(sender::SenderError::NotInPane),
            }
        }
        other => other,
    }
}

/// Sends `body` from the pane of `env` to `to`; with `wait`, waits for the result. The outcome is
/// `delivered`, `sent` (not waited for) or `rejected: why`.
pub async fn send(
    ctx: &App,
    env: &PaneEnv,
    peer: Option<u32>,
    to: &str,
    body: String,
    wait: bool,
) -> Result<Sent, AppError> {
    if body.len() > MAX_BODY {
        return Err(AppError::BadRequest(format!(
            "the message is too long: {} bytes, at most 16 KiB ({MAX_BODY} bytes)",
            body.len()
        )));
    }
    let here = ctx.crew.view.load().name.clone();
    let (pane, token) = own_pane(ctx, env, peer)
        .await
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let info = match ctx.pane_info(&pane).await {
        Ok(info) => info,
        Err(AppError::NoSuchPane) => {
            return Err(AppError::BadRequest(format!(
                "the pane this runs in ({pane}) is not one the bridge knows"
            )))
        }
        Err(e) => return Err(e),
    };
    if token.as_ref().is_some_and(|t| *t != info.token) {
        return Err(AppError::BadRequest(format!(
            "COLLIE_PANE names an older instance of {pane}; it is #{} now",
            info.token
        )));
    }
    let from = Address::new(&here, &info.pane, &info.token)
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let to = Address::parse(to, &here).map_err(|e| AppError::BadRequest(e.to_string()))?;
    // The sending command is its own pane's foreground while the header is delivered, so the
    // shell check would pass and the header reach the pane's shell (or its agent's input) once
    // the command ends: a pane never messages itself.
    if to.machine == from.machine && to.pane == from.pane {
        return Err(AppError::BadRequest(format!(
            "{} is the pane this runs in: a pane cannot message itself",
            to.pane
        )));
    }
    let from_name = ctx
        .core
        .masker
        .mask(&super::header::inert_name(&info.name))
        .into_owned();
    let message = Message::new(MessageId::random(), from, from_name, to, now(), body)
        .map_err(|e| AppError::BadRequest(e.to_string()))?;

    let view = ctx.crew.view.load();
    let outcome = if message.to.machine == here {
        log_sent(ctx, &message).await?;
        Some(deliver::deliver(ctx, &message).await)
    } else {
        match view.role {
            CrewRole::Member => via_lead(ctx, &message, wait).await?,
            CrewRole::Lead => to_member(ctx, &message).await?,
            CrewRole::Solo => {
                return Err(AppError::BadRequest(format!(
                    "no machine {}: this bridge is not in a crew",
                    message.to.machine
                )))
            }
        }
    };
    if let Some(outcome) = &outcome {
        log_result(ctx, &message.id, outcome);
    }
    Ok(Sent {
        id: message.id.to_string(),
        to: message.to.to_string(),
        outcome: outcome.map_or_else(|| "sent".to_owned(), |o| outcome_text(&o)),
    })
}

async fn log_sent(ctx: &App, message: &Message) -> Result<(), AppError> {
    let line = entry(message, Kind::Sent, true, None);
    // Both must be on disk before the message leaves; they go to two actors, so at once.
    let (logged, audited) = tokio::join!(
        append(ctx, line),
        ctx.audit(audit_record(ctx, AuditEventKind::WalkySent, message))
    );
    logged.map_err(|e| AppError::backend("walky: cannot log the message", e))?;
    audited
}

/// On a member: sign, hand to the lead, and (with `wait`) read the result it answers.
async fn via_lead(ctx: &App, message: &Message, wait: bool) -> Result<Option<Outcome>, AppError> {
    let signed = ctx
        .crew
        .walky
        .call(|r| WalkyMsg::Sign(Box::new(message.clone()), r))
        .await?
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let Some(conn) = ctx.crew.lead_link.load_full() else {
        return Ok(Some(Outcome::Rejected("the lead is unreachable".into())));
    };
    log_sent(ctx, message).await?;
    let (mut send, mut recv) = match conn.open_bi().await {
        Ok(halves) => halves,
        Err(_) => return Ok(Some(Outcome::Rejected("the lead is unreachable".into()))),
    };
    if send
        .send_message(&Uplink::Walky(Box::new(signed)))
        .await
        .is_err()
    {
        return Ok(Some(Outcome::Rejected("the lead is unreachable".into())));
    }
    let _ = send.finish();
    let ctx2 = ctx.clone();
    let id = message.id;
    let answer = async move {
        let answer = tokio::time::timeout(RESULT_WITHIN, recv.recv_message::<UplinkAnswer>()).await;
        let outcome = match answer {
            Ok(Ok(Some(UplinkAnswer::Walky(result)))) => {
                let logged = ctx2
                    .crew
                    .walky
                    .call(|r| WalkyMsg::Sent(result.id, r))
                    .await
                    .unwrap_or(false);
                // It came on the lead's connection: from the lead.
                match accept_result(&result, true, |i| *i == id && logged) {
                    Ok(()) => result.outcome,
                    Err(e) => Outcome::Rejected(format!("result refused: {e}")),
                }
            }
            Ok(Ok(Some(UplinkAnswer::Refused(why)))) => Outcome::Rejected(why),
            Ok(_) => Outcome::Rejected("the lead sent no result".into()),
            Err(_) => Outcome::Rejected("no result within 10 s".into()),
        };
        outcome
    };
    if wait {
        Ok(Some(answer.await))
    } else {
        let ctx3 = ctx.clone();
        ctx.spawn(async move {
            let outcome = answer.await;
            log_result(&ctx3, &id, &outcome);
        });
        Ok(None)
    }
}

/// On the lead: sign with the lead's key and relay to the member, which answers the result.
async fn to_member(ctx: &App, message: &Message) -> Result<Option<Outcome>, AppError> {
    let member = match ctx.machine(&message.to.machine) {
        Ok(Machine::Member(m)) => m,
        // `here` is the lead's own name and the message is for another machine.
        Ok(Machine::Local) => return Err(AppError::Internal),
        Err(AppError::MemberUnreachable) => {
            return Ok(Some(Outcome::Rejected(format!(
                "{} is unreachable",
                message.to.machine
            ))))
        }
        Err(e) => {
            return Err(AppError::BadRequest(format!(
                "no machine {} in this crew ({e})",
                message.to.machine
            )))
        }
    };
    let forwarded = ctx
        .crew
        .walky
        .call(|r| WalkyMsg::ForwardOwn(Box::new(message.clone()), r))
        .await?
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    log_sent(ctx, message).await?;
    let outcome = relay_walky(ctx, &member, forwarded, &message.id).await;
    ctx.crew.walky.cast(WalkyMsg::Record(WalkyResult {
        id: message.id,
        outcome: outcome.clone(),
    }))?;
    Ok(Some(outcome))
}

/// Test-only (feature `fault-injection`): sends the last message this lead forwarded to member
/// `to` again, as a compromised lead replaying captured bytes would; answers the member's outcome.
#[cfg(feature = "fault-injection")]
pub async fn replay_last(ctx: &App, to: &str) -> Result<Sent, AppError> {
    let last = ctx.crew.last_forwarded.lock().ok().and_then(|l| l.clone());
    let Some((member, forwarded)) = last.filter(|(m, _)| m == to) else {
        return Err(AppError::BadRequest(format!(
            "nothing forwarded to {to} yet"
        )));
    };
    let Machine::Member(target) = ctx.machine(&member)? else {
        return Err(AppError::NoSuchMachine);
    };
    let id = forwarded.signed.message.id;
    let on = On {
        device: "walky",
        request_id: &id.to_string(),
        device_id: None,
    };
    let kind = RelayKind::Walky {
        forwarded: Box::new(forwarded),
    };
    let outcome = match target.call(on, kind).await {
        Ok(RelayOk::Walky(outcome)) => outcome,
        Ok(_) => Outcome::Rejected("member response unreadable".into()),
        Err(e) => Outcome::Rejected(e.to_string()),
    };
    Ok(Sent {
        id: id.to_string(),
        to: to.to_owned(),
        outcome: outcome_text(&outcome),
    })
}

/// Relays a forwarded message to a member and reads its outcome.
pub async fn relay_walky(
    ctx: &App,
    member: &Member,
    forwarded: collie_crew::walky::Forwarded,
    id: &MessageId,
) -> Outcome {
    #[cfg(feature = "fault-injection")]
    if let Ok(mut last) = ctx.crew.last_forwarded.lock() {
        *last = Some((member.name().to_owned(), forwarded.clone()));
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = ctx;
    let request_id = id.to_string();
    let on = On {
        device: "walky",
        request_id: &request_id,
        device_id: None,
    };
    let kind = RelayKind::Walky {
        forwarded: Box::new(forwarded),
    };
    match member.call(on, kind).await {
        Ok(RelayOk::Walky(outcome)) => outcome,
        Ok(_) => Outcome::Rejected(format!("{}: member response unreadable", member.name())),
        Err(e) => Outcome::Rejected(format!("{}: {e}", member.name())),
    }
}
