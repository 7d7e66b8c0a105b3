//! Pane addresses: `machine/pane#token` (SPEC §9).
//!
//! The token names the pane *instance*: tmux reuses pane ids after a restart, and a message meant
//! for the agent that was there must not reach whatever runs there now (SPEC §5). Every part has a
//! small, fixed alphabet, so an address is one unambiguous word in a header typed into a pane and
//! in a log line.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{quote, WalkyError};
use crate::hello::{validate_name, MAX_NAME_LEN};

/// The longest pane id.
pub const MAX_PANE_LEN: usize = 32;

/// The length of a pane token.
pub const TOKEN_LEN: usize = 4;

/// What is wrong with an address; part of [`WalkyError::InvalidAddress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressProblem {
    /// No `#token` part.
    #[error("no #token: write pane#token or machine/pane#token (`collie walky who` lists them)")]
    MissingToken,
    /// The machine name is not a crew machine name.
    #[error("the machine must be 1 to {MAX_NAME_LEN} of a-z 0-9 - (not `local`)")]
    Machine,
    /// The pane id is empty, too long or holds other characters.
    #[error("the pane must be 1 to {MAX_PANE_LEN} of A-Z a-z 0-9 . _ -")]
    Pane,
    /// The token is not four characters of the base32 alphabet.
    #[error(
        "the token must be exactly {TOKEN_LEN} of a-z and 2-7 (`collie walky who` lists them)"
    )]
    Token,
}

/// A pane instance on a crew machine. `Display` is `machine/pane#token`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Address {
    /// The machine's crew name.
    pub machine: String,
    /// The pane id on that machine.
    pub pane: String,
    /// The pane instance's token.
    pub token: String,
}

impl Address {
    /// A checked address.
    pub fn new(
        machine: impl Into<String>,
        pane: impl Into<String>,
        token: impl Into<String>,
    ) -> Result<Self, WalkyError> {
        let address = Self {
            machine: machine.into(),
            pane: pane.into(),
            token: token.into(),
        };
        address.validate()?;
        Ok(address)
    }

    /// Parses `machine/pane#token`, or `pane#token` for a pane on `local_machine`.
    pub fn parse(text: &str, local_machine: &str) -> Result<Self, WalkyError> {
        let invalid = |problem| WalkyError::InvalidAddress {
            address: quote(text),
            problem,
        };
        let (place, token) = text
            .split_once('#')
            .ok_or_else(|| invalid(AddressProblem::MissingToken))?;
        let (machine, pane) = place.split_once('/').unwrap_or((local_machine, place));
        let address = Self {
            machine: machine.to_owned(),
            pane: pane.to_owned(),
            token: token.to_owned(),
        };
        address.problem().map_or(Ok(address), |p| Err(invalid(p)))
    }

    /// Checks every part (addresses decoded from the wire were never through [`Address::new`]).
    pub fn validate(&self) -> Result<(), WalkyError> {
        match self.problem() {
            None => Ok(()),
            Some(problem) => Err(WalkyError::InvalidAddress {
                address: quote(&self.to_string()),
                problem,
            }),
        }
    }

    fn problem(&self) -> Option<AddressProblem> {
        if validate_name(&self.machine).is_err() {
            return Some(AddressProblem::Machine);
        }
        let pane_ok = (1..=MAX_PANE_LEN).contains(&self.pane.len())
            && self
                .pane
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !pane_ok {
            return Some(AddressProblem::Pane);
        }
        let token_ok = self.token.len() == TOKEN_LEN
            && self
                .token
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'2'..=b'7'));
        if !token_ok {
            return Some(AddressProblem::Token);
        }
        None
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}#{}", self.machine, self.pane, self.token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem_of(text: &str) -> AddressProblem {
        match Address::parse(text, "laptop") {
            Err(WalkyError::InvalidAddress { problem, .. }) => problem,
            other => panic!("{text:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn parses_full_and_local_forms() {
        let full = Address::parse("web-1/t0-3#ab2z", "laptop").unwrap();
        assert_eq!(full, Address::new("web-1", "t0-3", "ab2z").unwrap());
        assert_eq!(full.to_string(), "web-1/t0-3#ab2z");
        let local = Address::parse("p7#qq77", "laptop").unwrap();
        assert_eq!(local.machine, "laptop");
        assert_eq!(local.to_string(), "laptop/p7#qq77");
    }

    #[test]
    fn names_what_is_wrong() {
        assert_eq!(problem_of("web-1/p1"), AddressProblem::MissingToken);
        assert_eq!(problem_of("/p1#abcd"), AddressProblem::Machine);
        assert_eq!(problem_of("local/p1#abcd"), AddressProblem::Machine);
        assert_eq!(
            problem_of(&format!("{}/p1#abcd", "m".repeat(MAX_NAME_LEN + 1))),
            AddressProblem::Machine
        );
        assert_eq!(problem_of("web-1/#abcd"), AddressProblem::Pane);
        assert_eq!(problem_of("web-1/%3#abcd"), AddressProblem::Pane);
        assert_eq!(problem_of("a/b/c#abcd"), AddressProblem::Pane);
        assert_eq!(
            problem_of(&format!("{}#abcd", "p".repeat(MAX_PANE_LEN + 1))),
            AddressProblem::Pane
        );
        assert_eq!(problem_of("p1#abc"), AddressProblem::Token);
        assert_eq!(problem_of("p1#abcde"), AddressProblem::Token);
        assert_eq!(problem_of("p1#ABCD"), AddressProblem::Token);
        assert_eq!(problem_of("p1#ab18"), AddressProblem::Token);
        assert_eq!(problem_of("p1#ab#cd"), AddressProblem::Token);
        let err = Address::parse("p1#ab18", "laptop").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid address \"p1#ab18\": the token must be exactly 4 of a-z and 2-7 (`collie walky who` lists them)"
        );
    }

    #[test]
    fn a_long_address_is_quoted_cut() {
        let long = "p".repeat(10_000);
        let err = Address::parse(&long, "laptop").unwrap_err().to_string();
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn validate_checks_decoded_addresses() {
        let mut address = Address::new("web-1", "p1", "abcd").unwrap();
        assert!(address.validate().is_ok());
        address.token = "a\nb".into();
        assert!(matches!(
            address.validate(),
            Err(WalkyError::InvalidAddress {
                problem: AddressProblem::Token,
                ..
            })
        ));
    }
}
