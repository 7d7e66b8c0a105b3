//! A walky message, its canonical byte encoding, and a signed message.
//!
//! What gets signed is [`Message::canonical`], never a serialization format: JSON has many
//! spellings of one value and bincode's layout follows the Rust types, so a signature over either
//! would break (or, worse, keep verifying for different contents) when a field or a library
//! changes. The canonical form is a domain prefix and then every field in a fixed order, each as a
//! 4-byte big-endian length and its bytes; a length prefix on every field is what makes two
//! different messages always encode differently (no field can spill into the next).

use ed25519_dalek::{Signature, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::{quote, Address, MessageId, WalkyError, MAX_BODY};

/// The first bytes of every [`Message::canonical`].
pub const MESSAGE_DOMAIN: &[u8] = b"collie-walky/1 message\0";

/// The longest sender name, in characters (a pane name, SPEC §5).
pub const MAX_FROM_NAME_CHARS: usize = 64;

/// One walky message from a pane to a pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Random; the replay guards and logs key on it.
    pub id: MessageId,
    /// The sending pane.
    pub from: Address,
    /// The sending pane's name, shown in the receiver's header.
    pub from_name: String,
    /// The receiving pane.
    pub to: Address,
    /// When the sender sent it, in unix seconds by the sender's clock.
    pub sent_at: i64,
    /// The text; read with `collie walky inbox`, never typed into the pane.
    pub body: String,
}

impl Message {
    /// A checked message: a body of at most [`MAX_BODY`] bytes, a valid sender name and addresses.
    pub fn new(
        id: MessageId,
        from: Address,
        from_name: impl Into<String>,
        to: Address,
        sent_at: i64,
        body: impl Into<String>,
    ) -> Result<Self, WalkyError> {
        let message = Self {
            id,
            from,
            from_name: from_name.into(),
            to,
            sent_at,
            body: body.into(),
        };
        message.validate()?;
        Ok(message)
    }

    /// Checks what [`Message::new`] checks. Verifiers call it too: a message decoded from the wire
    /// never went through `new`, and its sender name ends up typed into a pane.
    pub fn validate(&self) -> Result<(), WalkyError> {
        if self.body.len() > MAX_BODY {
            return Err(WalkyError::BodyTooLarge {
                len: self.body.len(),
            });
        }
        // No control characters: the name is typed into the receiving pane inside the header, and
        // a newline there would be an Enter the sender chose.
        let name_ok = self.from_name.chars().count() <= MAX_FROM_NAME_CHARS
            && !self.from_name.chars().any(char::is_control);
        if !name_ok {
            return Err(WalkyError::InvalidSenderName(quote(&self.from_name)));
        }
        self.from.validate()?;
        self.to.validate()
    }

    /// The bytes that are signed: [`MESSAGE_DOMAIN`], then id, from (machine, pane, token),
    /// from_name, to (machine, pane, token), sent_at and body, each as a `u32` big-endian length
    /// and its bytes (the id as 16 raw bytes, `sent_at` as 8 bytes big-endian two's complement).
    pub fn canonical(&self) -> Vec<u8> {
        let text_fields = [
            &self.from.machine,
            &self.from.pane,
            &self.from.token,
            &self.from_name,
            &self.to.machine,
            &self.to.pane,
            &self.to.token,
            &self.body,
        ];
        let len = MESSAGE_DOMAIN.len()
            + (4 + 16)
            + (4 + 8)
            + text_fields.iter().map(|f| 4 + f.len()).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(MESSAGE_DOMAIN);
        put_field(&mut out, self.id.as_bytes());
        for field in &text_fields[..7] {
            put_field(&mut out, field.as_bytes());
        }
        put_field(&mut out, &self.sent_at.to_be_bytes());
        put_field(&mut out, self.body.as_bytes());
        out
    }
}

/// Appends `bytes` with its `u32` big-endian length in front.
///
/// A field longer than `u32::MAX` bytes would get a saturated length and break injectivity, but no
/// such field can exist here: a body is at most [`MAX_BODY`], the other fields are short, and
/// nothing larger than a 16 MiB frame is ever decoded — verifiers [`Message::validate`] first.
pub(crate) fn put_field(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A message and its sender's ed25519 signature over [`Message::canonical`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    /// The message.
    pub message: Message,
    /// 64 bytes of ed25519 signature.
    pub signature: Vec<u8>,
}

impl Signed {
    /// Checks the signature against `key` (strict verification: no malleable or small-order
    /// signatures or keys).
    pub fn verify(&self, key: &VerifyingKey) -> Result<(), WalkyError> {
        if verifies(key, &self.message.canonical(), &self.signature) {
            Ok(())
        } else {
            Err(WalkyError::BadSignature {
                id: self.message.id,
            })
        }
    }
}

/// Whether `signature` (any bytes) is a valid strict ed25519 signature of `bytes` by `key`.
pub(crate) fn verifies(key: &VerifyingKey, bytes: &[u8], signature: &[u8]) -> bool {
    Signature::from_slice(signature)
        .and_then(|sig| key.verify_strict(bytes, &sig))
        .is_ok()
}
