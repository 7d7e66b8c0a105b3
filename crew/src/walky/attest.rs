//! The lead's attestation of a member's message, and the checks of the lead and the receiver.
//!
//! Receivers pin the lead only (SPEC §8), so a member's signature means nothing to them until the
//! lead says whose key it is. The [`Attestation`] says exactly that for exactly one message: the
//! lead signs the message id, the sender's machine name, the pin of the sender's certificate, and
//! hashes of the signed bytes and of the sender's signature. An attestation lifted onto another
//! message, another sender or another certificate therefore does not verify.

use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::message::{put_field, verifies};
use super::{public_key_of, Message, ReplayGuard, Signed, Signer, WalkyError};
use crate::pin::Pin;

/// The first bytes of every attestation the lead signs.
pub const ATTEST_DOMAIN: &[u8] = b"collie-walky/1 attest\0";

/// The lead's statement that `sender_certificate` belongs to crew member `sender_machine` and that
/// it signed the message this attestation travels with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attestation {
    /// The sender's certificate (DER), as the lead pinned it.
    pub sender_certificate: Vec<u8>,
    /// The sender's crew name.
    pub sender_machine: String,
    /// The lead's ed25519 signature over [`ATTEST_DOMAIN`], the message id, the sender machine,
    /// the certificate's pin and hashes of the message's canonical bytes and of its signature.
    pub signature: Vec<u8>,
}

/// What the lead forwards to the receiving machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forwarded {
    /// The message and its sender's signature.
    pub signed: Signed,
    /// The lead's attestation; `None` only when the lead itself signed the message.
    pub attestation: Option<Attestation>,
}

/// The bytes the lead signs for an attestation: [`ATTEST_DOMAIN`], the 16-byte message id, the
/// sender machine (`u32` big-endian length and bytes), the 32-byte pin of the sender certificate,
/// SHA-256 of the message's canonical bytes and SHA-256 of the sender's signature. Every part but
/// the machine has a fixed length, so the concatenation is unambiguous.
pub(super) fn attested_bytes(signed: &Signed, sender_machine: &str, sender_pin: &Pin) -> Vec<u8> {
    let mut out = Vec::with_capacity(ATTEST_DOMAIN.len() + 16 + 4 + sender_machine.len() + 96);
    out.extend_from_slice(ATTEST_DOMAIN);
    out.extend_from_slice(signed.message.id.as_bytes());
    put_field(&mut out, sender_machine.as_bytes());
    out.extend_from_slice(sender_pin.as_bytes());
    out.extend_from_slice(&Sha256::digest(signed.message.canonical()));
    out.extend_from_slice(&Sha256::digest(&signed.signature));
    out
}

/// The lead's checks of a member's message, then its attestation.
///
/// - `sender_certificate` is the certificate of the connection the message came on, and its pin
///   must be `pinned`, the one the lead stored for `sender_machine`;
/// - the message must name `sender_machine` as its machine (a member speaks only for itself);
/// - the message must be well-formed and its signature verify against the certificate's key;
/// - `sent_at` within [`super::MAX_SKEW_SECS`] of `now`, and the id new to `replay`.
///
/// Only when all pass is the id remembered and the attestation signed with `lead`.
pub fn attest(
    signed: &Signed,
    sender_certificate: &[u8],
    pinned: &Pin,
    sender_machine: &str,
    lead: &Signer,
    replay: &mut ReplayGuard,
    now: i64,
) -> Result<Forwarded, WalkyError> {
    let message = &signed.message;
    message.validate()?;
    if message.from.machine != sender_machine {
        return Err(WalkyError::SenderMismatch {
            claimed: message.from.machine.clone(),
            actual: sender_machine.to_owned(),
        });
    }
    let (pin, key) = public_key_of(sender_certificate)?;
    if pin != *pinned {
        return Err(WalkyError::PinMismatch {
            machine: sender_machine.to_owned(),
            pinned: *pinned,
            presented: pin,
        });
    }
    signed.verify(&key)?;
    replay.admit(message.id, message.sent_at, now)?;
    let signature = lead.sign_bytes(&attested_bytes(signed, sender_machine, &pin));
    Ok(Forwarded {
        signed: signed.clone(),
        attestation: Some(Attestation {
            sender_certificate: sender_certificate.to_vec(),
            sender_machine: sender_machine.to_owned(),
            signature,
        }),
    })
}

/// A message from one of the lead's own panes: signed with the lead key, forwarded without an
/// attestation (the receiver pins that key already).
pub fn forward_own(lead: &Signer, message: Message) -> Forwarded {
    Forwarded {
        signed: lead.sign(message),
        attestation: None,
    }
}

/// The receiver's checks of a forwarded message; the message on success.
///
/// With an attestation: it must verify against `lead_key` for this message, the attached
/// certificate's pin and the attested machine — which must be the message's `from.machine` — and
/// the sender's signature must verify against the certificate's key. Without one: the message must
/// come from `lead_machine` and be signed with `lead_key`. Then `sent_at` must be within
/// [`super::MAX_SKEW_SECS`] of `now` and the id new to `replay` (remembered only now, after every
/// other check passed).
///
/// The caller still checks that `to` names one of its panes, with that pane's current token.
pub fn receive(
    fwd: &Forwarded,
    lead_key: &VerifyingKey,
    lead_machine: &str,
    replay: &mut ReplayGuard,
    now: i64,
) -> Result<Message, WalkyError> {
    let signed = &fwd.signed;
    let message = &signed.message;
    message.validate()?;
    match &fwd.attestation {
        Some(attestation) => {
            // The certificate is parsed first only because its pin is part of what was attested;
            // nothing it says is trusted before the attestation verifies.
            let (pin, sender_key) = public_key_of(&attestation.sender_certificate)?;
            let attested = attested_bytes(signed, &attestation.sender_machine, &pin);
            if !verifies(lead_key, &attested, &attestation.signature) {
                return Err(WalkyError::AttestationInvalid { id: message.id });
            }
            if message.from.machine != attestation.sender_machine {
                return Err(WalkyError::SenderMismatch {
                    claimed: message.from.machine.clone(),
                    actual: attestation.sender_machine.clone(),
                });
            }
            signed.verify(&sender_key)?;
        }
        None => {
            if message.from.machine != lead_machine {
                return Err(WalkyError::NotFromLead {
                    id: message.id,
                    machine: message.from.machine.clone(),
                    lead: lead_machine.to_owned(),
                });
            }
            signed.verify(lead_key)?;
        }
    }
    replay.admit(message.id, message.sent_at, now)?;
    Ok(message.clone())
}
