//! Message ids: 128 random bits, written as 32 lowercase hex digits in headers, logs and the CLI.
//!
//! Random rather than counted so that no machine needs to coordinate with another, and so that an
//! id cannot be guessed: the phone shows a message card only when a machine's log holds the id, and
//! an agent that prints a made-up header cannot hit a real one.

use std::fmt;
use std::str::FromStr;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::{quote, WalkyError};

/// Length of an id's text form.
pub const ID_HEX_LEN: usize = 32;

/// A walky message id. `Display` and `FromStr` use 32 lowercase hex digits; serde (the crew wire)
/// uses the 16 raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MessageId([u8; 16]);

impl MessageId {
    /// A fresh id from the operating system's random source.
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The 16 raw bytes (what [`super::Message::canonical`] signs).
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl From<[u8; 16]> for MessageId {
    fn from(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }
}

impl FromStr for MessageId {
    type Err = WalkyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Lower case only, so that one id has one spelling in headers, logs and the CLI.
        let lower_hex = s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let mut bytes = [0u8; 16];
        if s.len() != ID_HEX_LEN || !lower_hex || hex::decode_to_slice(s, &mut bytes).is_err() {
            return Err(WalkyError::InvalidId(quote(s)));
        }
        Ok(Self(bytes))
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses_lowercase_hex() {
        let id = MessageId::from([0xab; 16]);
        let text = id.to_string();
        assert_eq!(text, "ab".repeat(16));
        assert_eq!(text.parse::<MessageId>().unwrap(), id);
        assert_eq!(format!("{id:?}"), format!("MessageId({text})"));
    }

    #[test]
    fn refuses_wrong_length_upper_case_and_non_hex() {
        for bad in [
            "",
            "ab",
            &"ab".repeat(17),
            &"AB".repeat(16),
            &"gg".repeat(16),
            &"é".repeat(16),
        ] {
            let err = bad.parse::<MessageId>().unwrap_err();
            assert!(matches!(err, WalkyError::InvalidId(_)), "{bad:?}: {err:?}");
        }
        let err = "xyz".parse::<MessageId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid message id \"xyz\": an id is 32 lowercase hex digits, as printed in the walky header"
        );
    }

    #[test]
    fn random_ids_differ() {
        assert_ne!(MessageId::random(), MessageId::random());
    }
}
