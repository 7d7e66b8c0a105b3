//! The copy of the lead's device registry that the lead pushes to its deputy (SPEC §13): what the
//! deputy's standby door checks a phone's token against while the lead cannot be reached.
//!
//! It carries each device's token *hash*, label, tier and expiry — never a token — so a stolen
//! deputy disk gives an attacker nothing to present. The tier travels as its name (`read`,
//! `files`, `full`): the crew crate knows no tiers, and the deputy refuses a copy naming one it
//! does not know rather than guess.

use serde::{Deserialize, Serialize};

/// The most devices a copy may carry; a lead with more is refused by the deputy (its own pairing
/// is bounded far below this).
pub const MAX_COPIED_DEVICES: usize = 4096;

/// One device of the lead's registry, as the deputy keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopiedDevice {
    /// The device's label on the lead (what audit lines on the deputy name).
    pub label: String,
    /// Its tier's name.
    pub tier: String,
    /// The SHA-256 of its token.
    pub token_hash: [u8; 32],
    /// When it expires, in Unix seconds; `None` never.
    pub expires_at: Option<i64>,
}

/// The lead's registry as of `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryCopy {
    /// Grows with each copy the lead makes whose devices differ from the last (milliseconds since
    /// the epoch when the lead made the first of its run, then one more per change), so both
    /// machines can show whether the deputy's copy is the lead's current one.
    pub version: u64,
    /// The lead's crew name.
    pub lead: String,
    /// The URL phones open on the lead: what the standby door points a phone back to.
    pub lead_url: String,
    /// Every device, expired ones included (they are refused with `device expired`).
    pub devices: Vec<CopiedDevice>,
}

impl RegistryCopy {
    /// Whether the copy is within its limits ([`MAX_COPIED_DEVICES`]).
    pub fn fits(&self) -> bool {
        self.devices.len() <= MAX_COPIED_DEVICES
    }
}
