//! Device labels (SPEC §4.4): 1–64 characters of `[A-Za-z0-9._-]`, chosen by the phone when it pairs.
//!
//! Labels name devices in the registry, the audit log and `collie devices`; they are case-sensitive
//! (`Phone` and `phone` are two labels).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The longest label, in characters (all ASCII, so also bytes).
pub const MAX_LABEL_LEN: usize = 64;

/// A valid device label.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Label(String);

impl Label {
    /// Checks `s` against `[A-Za-z0-9._-]{1,64}`.
    pub fn parse(s: &str) -> Result<Label, InvalidLabel> {
        let ok = (1..=MAX_LABEL_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Label(s.to_owned()))
        } else {
            Err(InvalidLabel)
        }
    }

    /// The label text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Label {
    type Error = InvalidLabel;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Label::parse(&s)
    }
}

impl From<Label> for String {
    fn from(l: Label) -> String {
        l.0
    }
}

// Derived Eq/Ord/Hash are those of the inner String, so lookups by `&str` agree with `Label` keys.
impl std::borrow::Borrow<str> for Label {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Label {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A label outside `[A-Za-z0-9._-]{1,64}`; its message is the §3.2 string `invalid label`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid label")]
pub struct InvalidLabel;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_allowed_characters() {
        for ok in [
            "a",
            "Z",
            "0",
            ".",
            "_",
            "-",
            "pixel-8",
            "iPhone_15.pro",
            "A.b-C_9",
        ] {
            assert_eq!(Label::parse(ok).expect(ok).as_str(), ok);
        }
        let longest = "x".repeat(64);
        assert!(Label::parse(&longest).is_ok());
    }

    #[test]
    fn refuses_empty_long_and_other_characters() {
        let too_long = "x".repeat(65);
        for bad in [
            "",
            too_long.as_str(),
            "my phone",
            "a/b",
            "a:b",
            "tablet#1",
            "é",
            "a\nb",
            "a\0",
            "😀",
        ] {
            assert_eq!(Label::parse(bad), Err(InvalidLabel), "{bad:?}");
        }
        assert_eq!(InvalidLabel.to_string(), "invalid label");
    }

    #[test]
    fn serde_checks_the_shape() {
        let l: Label = serde_json::from_str("\"phone\"").expect("valid");
        assert_eq!(l.to_string(), "phone");
        assert_eq!(serde_json::to_string(&l).expect("serializes"), "\"phone\"");
        assert!(serde_json::from_str::<Label>("\"my phone\"").is_err());
    }
}
