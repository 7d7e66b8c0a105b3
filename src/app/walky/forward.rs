//! The lead's side of a member's walky message and of `who` for the whole crew (the requests
//! members send on uplink streams, decoded by [`crate::relay::uplink`]).
//!
//! A member's message is checked against what the lead knows from the connection, never from the
//! message: the certificate the member presented (its pin must be the one stored for that member)
//! and the member's name. Then the lead attests it, logs it (`forwarded`, or `received` for one of
//! its own panes), forwards it, keeps the result for 10 minutes (bounded) and answers the member.

use collie_actors::walky::actor::WalkyMsg;
use collie_actors::walky::log::Kind;
use collie_crew::pin::Pin;
use collie_crew::walky::{Outcome, Signed, WalkyResult};

use super::send::relay_walky;
use super::{append, deliver, entry};
use crate::app::machine::Machine;
use crate::app::App;

/// Checks, attests and forwards a member's message; returns its result (also kept for 10 minutes).
pub async fn forward(
    ctx: &App,
    member: &str,
    certificate: Option<Vec<u8>>,
    signed: Signed,
) -> WalkyResult {
    let id = signed.message.id;
    let outcome = match try_forward(ctx, member, certificate, signed).await {
        Ok(outcome) => outcome,
        Err(why) => Outcome::Rejected(why),
    };
    WalkyResult { id, outcome }
}

async fn try_forward(
    ctx: &App,
    member: &str,
    certificate: Option<Vec<u8>>,
    signed: Signed,
) -> Result<Outcome, String> {
    let view = ctx.crew.view.load();
    let pinned: Pin = view
        .members
        .iter()
        .find(|m| m.name == member)
        .and_then(|m| m.pin.parse().ok())
        .ok_or_else(|| format!("{member} is not a member of this crew"))?;
    let certificate = certificate.ok_or("the member's certificate is unknown")?;
    let forwarded = ctx
        .crew
        .walky
        .call(|r| WalkyMsg::Attest {
            signed: Box::new(signed),
            certificate,
            pinned,
            member: member.to_owned(),
            reply: r,
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let message = forwarded.signed.message.clone();
    let lead_name = view.name.clone();
    if message.to.machine == lead_name {
        // For one of the lead's own panes: checked like any receiver would (the lead's key
        // attested it), then delivered here.
        let Some(key) = own_key(ctx).await else {
            return Err("the lead's key is unavailable".into());
        };
        let checked = ctx
            .crew
            .walky
            .call(|r| WalkyMsg::Receive {
                forwarded: Box::new(forwarded),
                lead_key: key,
                lead_machine: lead_name.clone(),
                reply: r,
            })
            .await
            .map_err(|e| e.to_string())?;
        return match checked {
            Ok(message) => Ok(deliver::deliver(ctx, &message).await),
            Err(e) => {
                let why = e.to_string();
                deliver::reject(ctx, &message, &why).await;
                Ok(Outcome::Rejected(why))
            }
        };
    }
    let line = entry(&message, Kind::Forwarded, true, None);
    match ctx.machine(&message.to.machine) {
        Ok(Machine::Member(to)) => {
            // Logged while it travels: the lead's line is its own record, not what the sender
            // waits for, and a failure to write it is reported in the lead's log.
            let (logged, outcome) = tokio::join!(
                append(ctx, line),
                relay_walky(ctx, &to, forwarded, &message.id)
            );
            if let Err(e) = logged {
                tracing::error!(error = %e, "walky: the lead cannot log a forwarded message");
            }
            Ok(outcome)
        }
        Ok(Machine::Local) => Err("misrouted".into()),
        Err(crate::app::AppError::MemberUnreachable) => Ok(Outcome::Rejected(format!(
            "{} is unreachable",
            message.to.machine
        ))),
        Err(_) => Ok(Outcome::Rejected(format!(
            "no machine {} in this crew",
            message.to.machine
        ))),
    }
}

/// Keeps the result of a member's message for 10 minutes and logs it, once the member has heard
/// it (the member's wait is not held back by the lead's own record).
pub fn settle(ctx: &App, result: &WalkyResult) {
    if ctx
        .crew
        .walky
        .cast(WalkyMsg::Record(result.clone()))
        .is_err()
    {
        tracing::warn!("walky: cannot keep a result (the walky actor is restarting)");
    }
    super::log_result(ctx, &result.id, &result.outcome);
}

/// The lead's own verifying key.
async fn own_key(ctx: &App) -> Option<ed25519_dalek::VerifyingKey> {
    ctx.crew.walky.call(WalkyMsg::OwnKey).await.ok()?.ok()
}
