//! Walky-talky (SPEC §9): agents in panes message each other.
//!
//! - [`sender`]: which pane a `collie walky` command runs in.
//! - [`send`]: the sender's side — local delivery, or signing and handing the message to the lead
//!   (a member), or forwarding it to the member (the lead's own panes); waits for the result.
//! - [`deliver`]: the receiver's last step on every path (checks, log, audit, header typed).
//! - [`prompt`]: a header is never typed where it would answer a prompt.
//! - [`forward`]: the lead's side of a member's message — verify, attest, forward, answer the
//!   result — and of `who`.
//! - [`inbox`]: `inbox`, `who` and `log` as the CLI and the phone see them.
//! - [`header`]: the header line and the inbox's framing.
//! - [`views`]: the typed answers.
//!
//! The state (log, crew key, replay guards, the lead's result records) is the walky actor's
//! (`collie_actors::walky`); the rules are `collie_crew::walky`'s.

pub mod deliver;
pub mod forward;
pub mod header;
pub mod inbox;
pub mod prompt;
pub mod send;
pub mod sender;
pub mod views;
pub mod wire;

use collie_actors::walky::actor::WalkyMsg;
use collie_actors::walky::log::{Entry, Kind};
use collie_crew::pin::Pin;
use collie_crew::walky::{public_key_of, Message, MessageId, Outcome};
use ed25519_dalek::VerifyingKey;

pub use collie_crew::walky::MAX_BODY;

use crate::app::App;

/// How long `collie walky send` waits for the result (SPEC §9).
pub const RESULT_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Unix seconds now.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The log line of `message` on this machine: `kind`, with the body if `with_body`.
pub fn entry(message: &Message, kind: Kind, with_body: bool, outcome: Option<String>) -> Entry {
    Entry {
        id: message.id.to_string(),
        at: now(),
        kind,
        from: message.from.to_string(),
        from_name: message.from_name.clone(),
        to: message.to.to_string(),
        sent_at: message.sent_at,
        body: with_body.then(|| message.body.clone()),
        outcome,
    }
}

/// `delivered` or `rejected: why`.
pub fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Delivered => "delivered".to_owned(),
        Outcome::Rejected(why) => format!("rejected: {why}"),
    }
}

/// Logs a result without waiting for the disk: the answer it goes with is not held back by it.
pub fn log_result(ctx: &App, id: &MessageId, outcome: &Outcome) {
    let entry = Entry {
        id: id.to_string(),
        at: now(),
        kind: Kind::Result,
        from: String::new(),
        from_name: String::new(),
        to: String::new(),
        sent_at: 0,
        body: None,
        outcome: Some(outcome_text(outcome)),
    };
    if ctx
        .crew
        .walky
        .cast(WalkyMsg::AppendLater(Box::new(entry)))
        .is_err()
    {
        tracing::warn!("walky: cannot log a result (the walky actor is restarting)");
    }
}

/// Appends a line to the walky log (synced before this returns `Ok`).
pub async fn append(ctx: &App, entry: Entry) -> Result<(), String> {
    match ctx
        .crew
        .walky
        .call(|r| WalkyMsg::Append(Box::new(entry), r))
        .await
    {
        Ok(written) => written.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// On a member: the lead's key, from the certificate of the live link, checked against the pin
/// stored at join. `None` while the link is down (nothing can arrive from the lead then anyway).
pub fn lead_key(ctx: &App) -> Option<(String, VerifyingKey)> {
    let view = ctx.crew.view.load();
    let lead = view.lead.as_ref()?;
    let pinned: Pin = lead.pin.parse().ok()?;
    let conn = ctx.crew.lead_link.load_full()?;
    let cert = conn.peer_certificate()?;
    let (pin, key) = public_key_of(&cert).ok()?;
    (pin == pinned).then(|| (lead.name.clone(), key))
}
