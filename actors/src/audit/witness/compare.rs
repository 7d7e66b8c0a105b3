//! One head the lead witnessed, against this machine's chain (`collie audit verify --witnessed`).

use std::collections::BTreeMap;
use std::fmt;

use crate::audit::anchor::short;
use crate::audit::ChainTail;

/// How a witnessed head stands in the local chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeadCheck {
    /// A line of the chain has this `seq` and this hash.
    Matches,
    /// The chain ends before the head's `seq`: lines the lead saw are gone.
    Ahead {
        /// The chain's last `seq` (`None`: an empty log).
        end: Option<u64>,
    },
    /// No line of the chain has this `seq` (the chain skips it, or breaks before it).
    NotInChain,
    /// The chain's line of this `seq` has another hash: the history up to it was rewritten.
    Differs {
        /// The local line's hash.
        local: String,
    },
}

impl HeadCheck {
    /// Whether the head vouches for the local chain.
    pub fn is_ok(&self) -> bool {
        matches!(self, HeadCheck::Matches)
    }
}

impl fmt::Display for HeadCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadCheck::Matches => f.write_str("matches"),
            HeadCheck::Ahead { end: None } => {
                f.write_str("the log here holds no line (lines removed)")
            }
            HeadCheck::Ahead { end: Some(end) } => {
                write!(f, "the log here ends at seq {end} (lines removed)")
            }
            HeadCheck::NotInChain => f.write_str("no line of the chain here has this seq"),
            HeadCheck::Differs { local } => write!(
                f,
                "the line here has hash {} (history rewritten)",
                short(local)
            ),
        }
    }
}

/// Checks `head` against the local chain: `end` is its last `seq`, `chain` the hashes of its
/// lines at the `seq`s asked for (lines that are part of the verified chain only).
pub fn check_head(head: &ChainTail, end: Option<u64>, chain: &BTreeMap<u64, String>) -> HeadCheck {
    if end.is_none_or(|end| head.seq > end) {
        return HeadCheck::Ahead { end };
    }
    match chain.get(&head.seq) {
        None => HeadCheck::NotInChain,
        Some(hash) if *hash == head.hash => HeadCheck::Matches,
        Some(hash) => HeadCheck::Differs {
            local: hash.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(seq: u64, tag: char) -> ChainTail {
        ChainTail {
            seq,
            hash: tag.to_string().repeat(64),
        }
    }

    fn chain(lines: &[(u64, char)]) -> BTreeMap<u64, String> {
        lines
            .iter()
            .map(|(s, t)| (*s, t.to_string().repeat(64)))
            .collect()
    }

    #[test]
    fn a_head_that_is_a_line_with_its_hash_matches() {
        let local = chain(&[(5, 'a'), (9, 'b')]);
        assert!(check_head(&tail(5, 'a'), Some(12), &local).is_ok());
        assert!(check_head(&tail(9, 'b'), Some(9), &local).is_ok());
    }

    #[test]
    fn another_hash_at_the_seq_is_a_rewrite() {
        let local = chain(&[(5, 'a')]);
        assert_eq!(
            check_head(&tail(5, 'z'), Some(12), &local),
            HeadCheck::Differs {
                local: "a".repeat(64)
            }
        );
    }

    #[test]
    fn a_head_past_the_end_is_removed_lines_even_with_its_hash_nowhere() {
        assert_eq!(
            check_head(&tail(13, 'a'), Some(12), &BTreeMap::new()),
            HeadCheck::Ahead { end: Some(12) }
        );
        assert_eq!(
            check_head(&tail(1, 'a'), None, &BTreeMap::new()),
            HeadCheck::Ahead { end: None }
        );
    }

    #[test]
    fn a_seq_the_chain_does_not_hold_is_not_a_match() {
        assert_eq!(
            check_head(&tail(7, 'a'), Some(12), &chain(&[(5, 'a')])),
            HeadCheck::NotInChain
        );
    }
}
