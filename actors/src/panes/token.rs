//! Pane tokens (SPEC §5): four characters that tell pane instances apart when an id is reused.
//!
//! The token is derived, not stored: SHA-256 over a per-bridge salt and a string naming the pane
//! instance (for tmux `tmux:<server pid>:%<n>:<pane pid>`, for hosted panes whatever the caller
//! chooses). The same salt and instance give the same token across bridge restarts; a new pane
//! reusing an id has another pane pid (or server pid) and so, almost always, another token. The
//! token is not a secret; four base32 characters give 20 bits, enough to tell instances apart.

use sha2::{Digest, Sha256};

/// Lowercase RFC 4648 base32 alphabet: URL-safe and unambiguous in a header.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// The 4-character token of pane `instance` under `salt`: the first 20 bits of
/// SHA-256(salt || instance) in lowercase base32.
pub fn pane_token(salt: &[u8], instance: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(instance.as_bytes());
    let digest = hasher.finalize();
    let bits = (u32::from(digest[0]) << 16) | (u32::from(digest[1]) << 8) | u32::from(digest[2]);
    (0..4)
        .map(|i| char::from(ALPHABET[((bits >> (19 - 5 * i)) & 0x1f) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_four_lowercase_base32_chars() {
        for i in 0..200 {
            let t = pane_token(b"salt", &format!("tmux:100:%{i}:{}", 2000 + i));
            assert_eq!(t.len(), 4);
            assert!(t.bytes().all(|b| ALPHABET.contains(&b)), "{t}");
        }
    }

    #[test]
    fn token_is_stable_for_same_salt_and_instance() {
        let a = pane_token(b"bridge-salt", "tmux:4242:%3:5151");
        let b = pane_token(b"bridge-salt", "tmux:4242:%3:5151");
        assert_eq!(a, b);
    }

    #[test]
    fn token_changes_with_instance_and_salt() {
        let base = pane_token(b"bridge-salt", "tmux:4242:%3:5151");
        // Over many reuses of %3 by other pane pids, nearly all tokens differ from the first.
        let same = (0..1000)
            .filter(|pid| {
                pane_token(b"bridge-salt", &format!("tmux:4242:%3:{}", 6000 + pid)) == base
            })
            .count();
        assert!(same <= 2, "{same} collisions in 1000");
        let other_salt = (0..50)
            .filter(|i| {
                let inst = format!("tmux:1:%{i}:2");
                pane_token(b"salt-a", &inst) == pane_token(b"salt-b", &inst)
            })
            .count();
        assert!(other_salt <= 1);
    }

    #[test]
    fn token_matches_known_value() {
        // SHA-256("") starts e3 b0 c4: bits 11100 01110 11000 01100 -> 28 14 24 12 -> "4oym".
        let bits: u32 = 0xe3b0c4;
        let expect: String = (0..4)
            .map(|i| char::from(ALPHABET[((bits >> (19 - 5 * i)) & 0x1f) as usize]))
            .collect();
        assert_eq!(pane_token(b"", ""), expect);
        assert_eq!(expect, "4oym");
    }
}
