//! A walky message's card from a member's log (SPEC §9): the answer to
//! [`super::RelayKind::WalkyCard`], typed rather than JSON text (see [`super::cards`]). The lead
//! masks the name and the body again.

use serde::{Deserialize, Serialize};

/// A walky message as the phone shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkyCard {
    /// The message id.
    pub id: String,
    /// What happened on the member.
    pub kind: WalkyKind,
    /// The sender's address.
    pub from: String,
    /// The sender's pane name, masked.
    pub name: String,
    /// The receiver's address.
    pub to: String,
    /// RFC 3339, the sender's clock.
    pub sent_at: Option<String>,
    /// RFC 3339, the member's clock.
    pub logged_at: Option<String>,
    /// The body, masked (none on a rejection line).
    pub body: Option<String>,
    /// `delivered` or `rejected: why`, when known.
    pub outcome: Option<String>,
}

/// What happened to a message on the machine whose log it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WalkyKind {
    /// A pane of the machine sent it.
    Sent,
    /// It was delivered to a pane of the machine.
    Received,
    /// The lead passed it on.
    Forwarded,
    /// Its result.
    Result,
}
