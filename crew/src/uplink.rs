//! Requests a member sends the lead (the other way from [`crate::relay`]), one QUIC stream each,
//! opened by the member after its hello on its link connection.
//!
//! The member sends one [`Uplink`]; the lead answers with one [`UplinkAnswer`] on the same stream.
//! The lead knows who asks from the connection (its pinned certificate), never from the message.
//! Enums end in an `Unknown` variant so a newer peer's additions decode (see `crate::wire`).

use serde::{Deserialize, Serialize};

use crate::walky::{Signed, WalkyResult};

/// What a member asks of the lead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Uplink {
    /// Verify, attest and forward this walky message; answer with its result.
    Walky(Box<Signed>),
    /// The crew's addressable panes.
    Who,
    /// The head of this member's audit chain, for the lead to witness (answered
    /// [`UplinkAnswer::HeadKept`]).
    AuditHead(AuditHead),
    /// The heads of this member's audit chain the lead keeps (answered
    /// [`UplinkAnswer::Witnessed`]).
    Witnessed,
    /// A request this side does not know.
    #[serde(other)]
    Unknown,
}

/// The lead's answer to an [`Uplink`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum UplinkAnswer {
    /// The result of a walky message: delivered, or rejected and why.
    Walky(WalkyResult),
    /// The crew's addressable panes, and the machines that did not answer.
    Who {
        /// Panes, the lead's and every online member's.
        panes: Vec<WhoPane>,
        /// Members whose panes are missing.
        unreachable: Vec<String>,
    },
    /// The lead cannot do it; the text says why.
    Refused(String),
    /// The lead keeps the head it was sent.
    HeadKept,
    /// The heads of the asking member's audit chain the lead keeps, oldest first.
    Witnessed(Vec<WitnessedHead>),
    /// An answer this side does not know.
    #[serde(other)]
    Unknown,
}

/// One addressable pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoPane {
    /// The machine's crew name.
    pub machine: String,
    /// Pane id.
    pub pane: String,
    /// The pane instance's token.
    pub token: String,
    /// The pane's name (masked).
    pub name: String,
    /// Its foreground process is a shell: messages to it are refused (SPEC §9).
    #[serde(default)]
    pub at_shell: bool,
}

/// The last line of a member's audit log, as the member reports it (SPEC §7: `seq` and `hash`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    /// The line's `seq`.
    pub seq: u64,
    /// The line's `hash`: 64 lowercase hex digits.
    pub hash: String,
    /// Sent as the member's bridge stops cleanly.
    pub stopping: bool,
    /// The `seq`s of heads the lead keeps that this log does not hold with their hash (checked
    /// by the member at the first head of each run; empty otherwise). Last, so an older lead
    /// reads the head without it.
    #[serde(default)]
    pub contradicted: Vec<u64>,
}

impl AuditHead {
    /// Whether `hash` is 64 lowercase hex digits (the lead keeps nothing else).
    pub fn is_well_formed(&self) -> bool {
        self.hash.len() == 64
            && self
                .hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

/// A head of a member's audit chain the lead keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessedHead {
    /// The line's `seq`.
    pub seq: u64,
    /// The line's `hash`.
    pub hash: String,
    /// When the lead received it (RFC 3339, the lead's clock).
    pub at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    fn head(hash: &str) -> AuditHead {
        AuditHead {
            seq: 12,
            hash: hash.to_owned(),
            stopping: true,
            contradicted: vec![1, 11],
        }
    }

    #[test]
    fn audit_heads_and_witnessed_heads_round_trip() {
        let ask = Uplink::AuditHead(head(&"a".repeat(64)));
        let bytes = wire::encode(&ask).expect("encode");
        assert_eq!(wire::decode::<Uplink>(&bytes).expect("decode"), ask);
        let answer = UplinkAnswer::Witnessed(vec![WitnessedHead {
            seq: 12,
            hash: "b".repeat(64),
            at: "2026-12-06T15:00:00Z".to_owned(),
        }]);
        let bytes = wire::encode(&answer).expect("encode");
        assert_eq!(
            wire::decode::<UplinkAnswer>(&bytes).expect("decode"),
            answer
        );
    }

    #[test]
    fn only_64_lowercase_hex_digits_are_a_hash() {
        assert!(head(&"0123456789abcdef".repeat(4)).is_well_formed());
        assert!(!head(&"A".repeat(64)).is_well_formed());
        assert!(!head(&"a".repeat(63)).is_well_formed());
        assert!(!head(&format!("{}g", "a".repeat(63))).is_well_formed());
    }
}
