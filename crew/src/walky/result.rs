//! Results travelling back to the sender, and the receiving machine's on/off switch.
//!
//! Only the lead writes a result back (SPEC §9): the member's link to its pinned lead is the only
//! channel a result is accepted on, so another member cannot tell a sender that its message was
//! delivered or refused. And only for a message the member sent and still logs, so a result cannot
//! create a log entry out of nothing.

use serde::{Deserialize, Serialize};

use super::{MessageId, WalkyError};

/// What became of a message at the receiving machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The header was typed into the receiving pane.
    Delivered,
    /// Refused, with the reason the sender is shown (e.g. `walky off on m2`).
    Rejected(String),
}

/// The outcome of one message, sent by the lead to the message's sender.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkyResult {
    /// The message concerned.
    pub id: MessageId,
    /// What became of it.
    pub outcome: Outcome,
}

impl WalkyResult {
    /// The result of refusing message `id` for `error` (its `Display` is the reason shown).
    pub fn rejected(id: MessageId, error: &WalkyError) -> Self {
        Self {
            id,
            outcome: Outcome::Rejected(error.to_string()),
        }
    }
}

/// A member's check of a result: it must have come from the pinned lead (`from_lead`, which the
/// caller knows from the connection it arrived on) and be for a message `sent` says this member
/// sent and still has in its log.
pub fn accept_result(
    result: &WalkyResult,
    from_lead: bool,
    sent: impl Fn(&MessageId) -> bool,
) -> Result<(), WalkyError> {
    if !from_lead {
        return Err(WalkyError::ResultNotFromLead { id: result.id });
    }
    if !sent(&result.id) {
        return Err(WalkyError::UnknownResult { id: result.id });
    }
    Ok(())
}

/// Refuses every message for this machine's panes when walky is off (`COLLIE_WALKY=off`); the
/// error's `Display` is exactly `walky off on <machine>`.
pub fn check_walky_on(on: bool, machine: &str) -> Result<(), WalkyError> {
    if on {
        Ok(())
    } else {
        Err(WalkyError::WalkyOff {
            machine: machine.to_owned(),
        })
    }
}
