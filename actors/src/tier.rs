//! Device tiers (SPEC §11): what a paired device may do — read by the pairing policy and by the
//! tools registry, so it lives beside both rather than inside either.
//!
//! `read` (seed 003's Low) < `files` (Medium) < `full` (High). A route or tool names the least tier
//! it needs; a device may use it when its own tier is at least that. The order is the derive order of
//! the variants, so it cannot drift from the declaration.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The tier a paired device holds. Ordered `Read < Files < Full`; serialized as `read`, `files`,
/// `full`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Read panes, files and state; no writes.
    Read,
    /// `read` plus file edits (`edit_block`, `write_file`, …).
    Files,
    /// Everything, including typing into panes and running commands: as powerful as a shell login.
    Full,
}

impl Tier {
    /// All tiers, lowest first.
    pub const ALL: [Tier; 3] = [Tier::Read, Tier::Files, Tier::Full];

    /// The tier's name as the CLI, the API and the store spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Files => "files",
            Tier::Full => "full",
        }
    }

    /// Parses `read`, `files` or `full` (exactly; tiers are lowercase everywhere).
    pub fn parse(s: &str) -> Result<Tier, TierError> {
        match s {
            "read" => Ok(Tier::Read),
            "files" => Ok(Tier::Files),
            "full" => Ok(Tier::Full),
            other => Err(TierError(other.chars().take(32).collect())),
        }
    }

    /// Whether a device of this tier may do something that requires `required`.
    pub fn allows(self, required: Tier) -> bool {
        self >= required
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = TierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tier::parse(s)
    }
}

/// A tier name that is not `read`, `files` or `full`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown tier \"{0}\": use read, files or full")]
pub struct TierError(String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_ordered_read_files_full() {
        assert!(Tier::Read < Tier::Files);
        assert!(Tier::Files < Tier::Full);
        assert!(Tier::Read < Tier::Full);
        let mut shuffled = vec![Tier::Full, Tier::Read, Tier::Files];
        shuffled.sort();
        assert_eq!(shuffled, Tier::ALL.to_vec());
    }

    #[test]
    fn allows_means_at_least() {
        for have in Tier::ALL {
            for need in Tier::ALL {
                assert_eq!(have.allows(need), have >= need, "{have} needs {need}");
            }
        }
        assert!(!Tier::Read.allows(Tier::Files));
        assert!(!Tier::Files.allows(Tier::Full));
        assert!(Tier::Full.allows(Tier::Read));
    }

    #[test]
    fn parse_and_as_str_round_trip() {
        for t in Tier::ALL {
            assert_eq!(Tier::parse(t.as_str()), Ok(t));
            assert_eq!(t.to_string().parse::<Tier>(), Ok(t));
        }
    }

    #[test]
    fn parse_rejects_other_spellings() {
        for bad in ["", "Read", "FULL", "high", "low", " read", "read ", "file"] {
            let err = Tier::parse(bad).expect_err(bad);
            assert!(err.to_string().contains("use read, files or full"), "{err}");
        }
    }

    #[test]
    fn serde_uses_lowercase_strings() {
        assert_eq!(
            serde_json::to_string(&Tier::Files).expect("serializes"),
            "\"files\""
        );
        let t: Tier = serde_json::from_str("\"full\"").expect("parses");
        assert_eq!(t, Tier::Full);
        assert!(serde_json::from_str::<Tier>("\"Full\"").is_err());
        assert!(serde_json::from_str::<Tier>("\"high\"").is_err());
    }
}
