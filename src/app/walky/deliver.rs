//! Delivering a message to one of this machine's panes (SPEC §9): the last step on every path —
//! a local send, a message the lead forwarded to a member, a member's message to one of the lead's
//! own panes. The message has been verified by then (or never left the machine).
//!
//! In order: walky must be on here, the pane must exist with the token the sender addressed (a
//! reused pane id has another token: the message is refused, never typed into a stranger's pane),
//! the pane's foreground process must not be a shell (a shell would run the typed line: refused
//! with `<machine>/<pane> is at a shell prompt`), the pane must not be showing a prompt (the Enter
//! would answer it: refused with `<machine>/<pane> is showing a prompt`, see [`super::prompt`]),
//! the header must pass its grammar, the message is logged (synced) and audited, the pane's cards
//! are looked at again, and only then is the header typed, followed by Enter — by the panes
//! actor, which checks the foreground and the screen once more in the same turn. The body is never
//! typed: the agent reads it with `collie walky inbox ID`.

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::panes::actor::PaneError;
use collie_actors::panes::foreground::at_prompt;
use collie_actors::panes::PanesMsg;
use collie_actors::walky::actor::WalkyMsg;
use collie_actors::walky::log::Kind;
use collie_crew::walky::{check_walky_on, Forwarded, Message, Outcome};

use super::{append, entry, header, prompt};
use crate::app::App;

/// Delivers `message` to its pane on this machine and says how it went. Every refusal is logged
/// and audited as `walky.rejected`.
pub async fn deliver(ctx: &App, message: &Message) -> Outcome {
    match try_deliver(ctx, message).await {
        Ok(()) => Outcome::Delivered,
        Err(why) => {
            reject(ctx, message, &why).await;
            Outcome::Rejected(why)
        }
    }
}

/// On a member, a message the lead forwarded: checked against the pinned lead's key (attestation,
/// then the sender's signature), then delivered to the pane it names.
pub async fn from_lead(app: &App, forwarded: Forwarded) -> Outcome {
    let message = forwarded.signed.message.clone();
    let Some((lead_machine, lead_key)) = super::lead_key(app) else {
        let why = "the lead's key is not known here".to_owned();
        reject(app, &message, &why).await;
        return Outcome::Rejected(why);
    };
    let checked = app
        .crew
        .walky
        .call(|r| WalkyMsg::Receive {
            forwarded: Box::new(forwarded),
            lead_key,
            lead_machine,
            reply: r,
        })
        .await;
    match checked {
        Ok(Ok(message)) => deliver(app, &message).await,
        Ok(Err(e)) => {
            let why = e.to_string();
            reject(app, &message, &why).await;
            Outcome::Rejected(why)
        }
        Err(_) => Outcome::Rejected("restarting, try again".into()),
    }
}

/// Records a refused message for this machine's panes (log and audit, best effort).
pub async fn reject(ctx: &App, message: &Message, why: &str) {
    let line = entry(
        message,
        Kind::Received,
        false,
        Some(format!("rejected: {why}")),
    );
    if let Err(e) = append(ctx, line).await {
        tracing::warn!(error = %e, "walky: cannot log a rejection");
    }
    let _ = ctx
        .audit(
            audit_record(ctx, AuditEventKind::WalkyRejected, message)
                .with_detail("reason", why.to_owned()),
        )
        .await;
}

/// The audit line of a walky event about `message` on this machine.
pub fn audit_record(ctx: &App, event: AuditEventKind, message: &Message) -> AuditRecord {
    AuditRecord::new(event, ctx.core.machine.get())
        .with_detail("id", message.id.to_string())
        .with_detail("from", message.from.to_string())
        .with_detail("to", message.to.to_string())
}

async fn try_deliver(ctx: &App, message: &Message) -> Result<(), String> {
    let here = ctx.crew.view.load().name.clone();
    check_walky_on(ctx.crew.walky_on, &here).map_err(|e| e.to_string())?;
    if message.to.machine != here {
        return Err(format!("{} is not on {here}", message.to));
    }
    let pane = ctx
        .pane_info(&message.to.pane)
        .await
        .map_err(|_| format!("no pane {} on {here}", message.to.pane))?;
    if pane.token != message.to.token {
        return Err(format!(
            "stale address: pane {} on {here} is another instance now (token #{}); ask `collie walky who`",
            message.to.pane, pane.token
        ));
    }
    let address = format!("{here}/{}", message.to.pane);
    let foreground = ctx
        .panes
        .actor
        .call(|reply| PanesMsg::Foreground {
            pane: message.to.pane.clone(),
            reply,
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| refusal(&address, &e))?;
    match foreground {
        Some(names) if !at_prompt(&names) => {}
        Some(_) => return Err(refusal(&address, &PaneError::AtShell)),
        None => return Err(refusal(&address, &PaneError::ForegroundUnknown)),
    }
    prompt::check(ctx, &message.to.pane, &address).await?;
    let line = header::header(&message.id, &message.from, &message.from_name)
        .map_err(|e| e.to_string())?;
    let logged_line = entry(message, Kind::Received, true, Some("delivered".into()));
    // Both on disk before the header is typed; two actors, so at once.
    let (logged, audited) = tokio::join!(
        append(ctx, logged_line),
        ctx.audit(audit_record(ctx, AuditEventKind::WalkyDelivered, message))
    );
    logged.map_err(|e| format!("cannot log the message on {here}: {e}"))?;
    audited.map_err(|_| format!("audit unavailable on {here}"))?;
    // Looked at again as late as each can be: a card here, the foreground and the screen by the
    // panes actor in the turn it types.
    let typed = match prompt::no_waiting_card(ctx, &message.to.pane, &address).await {
        Ok(()) => ctx
            .panes
            .actor
            .call(|reply| PanesMsg::Deliver {
                pane: message.to.pane.clone(),
                line,
                showing_prompt: prompt::showing_prompt,
                reply,
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| refusal(&address, &e)),
        Err(why) => Err(why),
    };
    if let Err(why) = typed {
        // The pane went back to its shell or began to ask between the check and the typing:
        // nothing was typed; the log says so after its `delivered` line.
        super::log_result(ctx, &message.id, &Outcome::Rejected(why.clone()));
        return Err(why);
    }
    Ok(())
}

/// Why a message is refused for `address`, in the words of SPEC §9.
fn refusal(address: &str, e: &PaneError) -> String {
    match e {
        PaneError::AtShell | PaneError::ForegroundUnknown | PaneError::ShowingPrompt => {
            format!("{address} {e}")
        }
        PaneError::NoSuchPane => format!("no pane {address}"),
        other => {
            tracing::warn!(error = %other, "walky: cannot type into {address}");
            format!("cannot type into {address}")
        }
    }
}
