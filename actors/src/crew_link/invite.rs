//! The invite string `collie crew invite` prints and `collie crew join` reads:
//! `collie-crew:<lead pin>:<join secret>:<lead address>` — the pin and the secret as 64 lowercase
//! hex digits each, the address as `HOST:PORT` (IPv6 in brackets). One copyable line.

use std::fmt;

use collie_crew::hello::JoinSecret;
use collie_crew::pin::Pin;

const PREFIX: &str = "collie-crew:";

/// Why an invite string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InviteError {
    /// Not of the invite's shape.
    #[error("not a crew invite: expected collie-crew:<pin>:<secret>:<host:port>")]
    Malformed,
    /// The pin part is not a pin.
    #[error("the invite's lead pin is not 64 lowercase hex digits")]
    BadPin,
    /// The secret part is not 32 bytes of hex.
    #[error("the invite's join secret is not 64 hex digits")]
    BadSecret,
    /// The address is longer than any `HOST:PORT` can be, or holds a space or a control
    /// character.
    #[error("the invite's lead address is not a HOST:PORT")]
    BadAddress,
}

/// The longest address an invite may carry: a 253-byte DNS name (or a bracketed IPv6 address),
/// `:` and a 5-digit port. Checked before the address goes to the resolver.
pub const MAX_ADDRESS: usize = 261;

/// Whether `address` may stand in an invite: at most [`MAX_ADDRESS`] bytes, printable ASCII
/// without spaces.
pub fn address_fits(address: &str) -> bool {
    address.len() <= MAX_ADDRESS && address.bytes().all(|b| b.is_ascii_graphic())
}

/// A parsed invite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InviteCode {
    /// The lead's pin.
    pub lead_pin: Pin,
    /// The one-time join secret.
    pub secret: JoinSecret,
    /// Where the lead listens.
    pub address: String,
}

impl InviteCode {
    /// Parses an invite string (surrounding whitespace ignored).
    pub fn parse(s: &str) -> Result<Self, InviteError> {
        let rest = s
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(InviteError::Malformed)?;
        let mut parts = rest.splitn(3, ':');
        let (Some(pin), Some(secret), Some(address)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(InviteError::Malformed);
        };
        if address.is_empty() {
            return Err(InviteError::Malformed);
        }
        if !address_fits(address) {
            return Err(InviteError::BadAddress);
        }
        let lead_pin: Pin = pin.parse().map_err(|_| InviteError::BadPin)?;
        let bytes: [u8; 32] = hex::decode(secret)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or(InviteError::BadSecret)?;
        Ok(Self {
            lead_pin,
            secret: JoinSecret::from(bytes),
            address: address.to_owned(),
        })
    }
}

impl fmt::Display for InviteCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}:{}",
            self.lead_pin,
            hex::encode(self.secret.as_bytes()),
            self.address
        )
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::fuzzing::{arbitrary, mutated, text_of};

    #[test]
    fn round_trips_and_refuses_garbage() {
        let code = InviteCode {
            lead_pin: Pin::of_spki(b"x"),
            secret: JoinSecret::random(),
            address: "[::1]:7421".into(),
        };
        assert_eq!(InviteCode::parse(&code.to_string()), Ok(code.clone()));
        assert_eq!(InviteCode::parse("nope"), Err(InviteError::Malformed));
        let bad = code
            .to_string()
            .replacen("collie-crew:", "collie-crew:z", 1);
        assert_eq!(InviteCode::parse(&bad), Err(InviteError::BadPin));
        let with = |address: String| {
            let mut c = code.clone();
            c.address = address;
            InviteCode::parse(&c.to_string())
        };
        let longest = format!("{}:7421", "a".repeat(MAX_ADDRESS - 5));
        assert!(with(longest.clone()).is_ok());
        assert_eq!(with(format!("a{longest}")), Err(InviteError::BadAddress));
        assert_eq!(with("lead host:7421".into()), Err(InviteError::BadAddress));
        assert_eq!(with("lead\u{7}:7421".into()), Err(InviteError::BadAddress));
    }

    fn code(pin: [u8; 32], secret: [u8; 32], address: String) -> InviteCode {
        InviteCode {
            lead_pin: Pin::from(pin),
            secret: JoinSecret::from(secret),
            address,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever is pasted, the answer is an invite or one of the three errors (decision 0063).
        #[test]
        fn arbitrary_text_never_panics(bytes in arbitrary(200)) {
            let _ = InviteCode::parse(&text_of(bytes));
        }

        /// A damaged invite reads as an invite or is refused; one that reads prints back as
        /// what it read.
        #[test]
        fn damaged_invites_read_or_are_refused(
            bytes in mutated(code([3; 32], [9; 32], "[::1]:7421".into()).to_string().into_bytes()),
        ) {
            if let Ok(read) = InviteCode::parse(&text_of(bytes)) {
                prop_assert_eq!(InviteCode::parse(&read.to_string()), Ok(read));
            }
        }

        #[test]
        fn valid_invites_round_trip(
            pin in any::<[u8; 32]>(),
            secret in any::<[u8; 32]>(),
            address in "[a-z0-9.:\\[\\]-]{1,40}",
        ) {
            let c = code(pin, secret, address);
            prop_assert_eq!(InviteCode::parse(&c.to_string()), Ok(c));
        }
    }
}
