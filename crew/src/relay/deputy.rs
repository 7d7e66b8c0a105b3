//! The copy of the lead's device registry that the lead pushes to its deputy (SPEC §13): what the
//! deputy's standby door checks a phone's token against while the lead cannot be reached.
//!
//! It carries each device's token *hash*, label, tier and expiry — never a token — so a stolen
//! deputy disk gives an attacker nothing to present. The tier travels as its name (`read`,
//! `files`, `full`): the crew crate knows no tiers, and the deputy refuses a copy naming one it
//! does not know rather than guess.

use serde::{Deserialize, Serialize};

use crate::identity::Identity;
use crate::pin::Pin;
use crate::walky::{public_key_of, Signer};

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
    /// The crew's other members, whom the deputy admits at its door while it stands in.
    pub members: Vec<CopiedMember>,
}

/// The most members a copy may name.
pub const MAX_COPIED_MEMBERS: usize = 4096;

/// A member of the crew, as the deputy admits it: its name and the pin of its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopiedMember {
    /// Its crew name.
    pub name: String,
    /// Its pin.
    pub pin: Pin,
}

impl RegistryCopy {
    /// Whether the copy is within its limits ([`MAX_COPIED_DEVICES`], [`MAX_COPIED_MEMBERS`]).
    pub fn fits(&self) -> bool {
        self.devices.len() <= MAX_COPIED_DEVICES && self.members.len() <= MAX_COPIED_MEMBERS
    }
}

/// What a deputy notice is signed under, so the signature means nothing anywhere else.
const NOTICE_DOMAIN: &[u8] = b"collie-deputy-notice/1\0";

/// The lead's word to its members that `name` is the deputy: its pin and the address of its door,
/// signed with the lead's crew key (the key its pinned certificate carries, which travels with
/// the notice). A member admits relay requests from that machine, at that address, only while it
/// cannot reach the lead itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeputyNotice {
    /// The deputy's crew name.
    pub name: String,
    /// The pin of the deputy's certificate.
    pub pin: Pin,
    /// Where its door listens (`host:port`).
    pub address: String,
    /// The lead's certificate (DER), whose pin the member has pinned.
    pub lead_certificate: Vec<u8>,
    /// The lead's ed25519 signature over the domain and the fields above.
    pub signature: Vec<u8>,
}

/// Why a notice is not the lead's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoticeError {
    /// The signing key is not one the crew key can make.
    #[error("the lead's key cannot sign: {0}")]
    Key(String),
    /// The certificate in the notice is not the pinned lead's.
    #[error("the deputy notice is not from this crew's lead")]
    NotTheLead,
    /// The signature does not verify.
    #[error("the deputy notice's signature does not verify")]
    BadSignature,
}

impl DeputyNotice {
    /// The notice naming `name` (`pin`, at `address`), signed by the lead's `identity`.
    pub fn sign(
        identity: &Identity,
        name: String,
        pin: Pin,
        address: String,
    ) -> Result<DeputyNotice, NoticeError> {
        let signer =
            Signer::from_identity(identity).map_err(|e| NoticeError::Key(e.to_string()))?;
        let mut notice = DeputyNotice {
            name,
            pin,
            address,
            lead_certificate: identity.certificate().to_vec(),
            signature: Vec::new(),
        };
        notice.signature = signer.sign_bytes(&notice.signed_bytes());
        Ok(notice)
    }

    /// Checks that the notice is signed by the lead whose pin is `lead_pin`.
    pub fn verify(&self, lead_pin: Pin) -> Result<(), NoticeError> {
        let (pin, key) =
            public_key_of(&self.lead_certificate).map_err(|_| NoticeError::NotTheLead)?;
        if pin != lead_pin {
            return Err(NoticeError::NotTheLead);
        }
        if crate::walky::verifies(&key, &self.signed_bytes(), &self.signature) {
            Ok(())
        } else {
            Err(NoticeError::BadSignature)
        }
    }

    /// The bytes signed: the domain, then each field with its length, so no two notices share them.
    fn signed_bytes(&self) -> Vec<u8> {
        let mut out = NOTICE_DOMAIN.to_vec();
        for field in [
            self.name.as_bytes(),
            self.pin.to_string().as_bytes(),
            self.address.as_bytes(),
            &self.lead_certificate,
        ] {
            out.extend_from_slice(&u64::try_from(field.len()).unwrap_or(u64::MAX).to_be_bytes());
            out.extend_from_slice(field);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_verifies_only_for_its_lead_and_unchanged() {
        let lead = Identity::generate().expect("lead");
        let deputy = Identity::generate().expect("deputy");
        let notice =
            DeputyNotice::sign(&lead, "web-1".into(), deputy.pin(), "10.0.0.2:7421".into())
                .expect("signed");
        assert_eq!(notice.verify(lead.pin()), Ok(()));
        assert_eq!(notice.verify(deputy.pin()), Err(NoticeError::NotTheLead));
        let mut moved = notice.clone();
        moved.address = "10.0.0.66:7421".into();
        assert_eq!(moved.verify(lead.pin()), Err(NoticeError::BadSignature));
        let mut renamed = notice.clone();
        renamed.pin = lead.pin();
        assert_eq!(renamed.verify(lead.pin()), Err(NoticeError::BadSignature));
        let other = Identity::generate().expect("another lead");
        let forged = DeputyNotice::sign(&other, "web-1".into(), deputy.pin(), "x:1".into())
            .expect("signed by another");
        assert_eq!(forged.verify(lead.pin()), Err(NoticeError::NotTheLead));
    }
}
