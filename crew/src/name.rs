//! Machine names (SPEC §3.1): the one grammar every part of Collie checks them against — the
//! bridge's own name (`--name`, `name` in config.toml, the host name), a member's name in a join
//! request, the machine of a walky address.
//!
//! A name is `[a-z0-9-]{1,32}` and never `local`, which is only a route alias for "the bridge that
//! answers". Names are inert by construction: no character a shell, a terminal or a URL gives
//! meaning to can be part of one.

/// The longest name.
pub const MAX_LEN: usize = 32;

/// The route alias no machine may be called.
pub const RESERVED: &str = "local";

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Not `[a-z0-9-]{1,32}`, or `local`.
    #[error("invalid machine name {0:?}: use 1-32 of a-z, 0-9 and - (and not `local`)")]
    Invalid(String),
}

/// Whether `name` is a machine name.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name != RESERVED
}

/// Checks a machine name; the error quotes at most its first 40 characters.
pub fn check(name: &str) -> Result<(), NameError> {
    if is_valid(name) {
        Ok(())
    } else {
        Err(NameError::Invalid(name.chars().take(40).collect()))
    }
}

/// The name a host name gives: lowercased, every other character turned into `-`, cut to
/// [`MAX_LEN`]; `machine` when nothing is left (or it would be `local`).
pub fn from_host(host: &str) -> String {
    let name: String = host
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .take(MAX_LEN)
        .collect();
    if is_valid(&name) {
        name
    } else {
        "machine".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar() {
        for good in ["web-1", "a", "laptop", &"x".repeat(MAX_LEN), "0-0"] {
            assert!(check(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "local",
            "Web",
            "web_1",
            "web.1",
            "web 1",
            "$(x)",
            "a/b",
            "é",
            &"x".repeat(MAX_LEN + 1),
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check("Web").unwrap_err().to_string(),
            "invalid machine name \"Web\": use 1-32 of a-z, 0-9 and - (and not `local`)"
        );
    }

    #[test]
    fn host_names_become_names() {
        assert_eq!(from_host("My_Laptop.local"), "my-laptop-local");
        assert_eq!(from_host(""), "machine");
        assert_eq!(from_host("LOCAL"), "machine");
        assert_eq!(from_host(&"x".repeat(40)).len(), MAX_LEN);
        assert!(is_valid(&from_host("a$(b)`c`")));
    }
}
