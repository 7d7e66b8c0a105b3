//! The control socket's replies that are not the application's own types: what the dispatcher
//! answers and the CLI reads, one struct each (the CLI never reads a reply by string key). A reply
//! never carries an actor's or the crew wire's type as is: the adapter has its own
//! (`panes`, `crew`, `audit`), converted from the application's results in the dispatcher,
//! so a change to an actor type shows up as a compile error here, not as a changed CLI output.

mod audit;
mod crew;
mod panes;

use serde::{Deserialize, Serialize};

pub use self::audit::{Acknowledged, Witnessed};
pub use self::crew::{Crew, Machine, Role};
pub use self::panes::{At, Pane, Panes, Screen};

use crate::app::devices::DeviceView;

/// A one-line confirmation (`revoked phone-1`, `removed web-2 from the crew`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// What happened, for a person.
    pub message: String,
}

impl Message {
    /// `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// `collie pair`: a new pairing code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairCode {
    /// `ABCD-EFGH`.
    pub code: String,
    /// RFC 3339.
    pub code_expires_at: Option<String>,
    /// The web app's address with the code in its fragment (for the QR code).
    pub pair_url: String,
}

/// `collie devices list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Devices {
    /// Every paired device.
    pub devices: Vec<DeviceView>,
}

/// `collie show`: the starter rows phones added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterRows {
    /// Every row of a paired device.
    pub rows: Vec<crate::app::rows::RowShown>,
}

/// `collie crew invite`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    /// The one-time invite string.
    pub invite: String,
    /// How long it stays valid.
    pub expires_in_secs: u64,
}
