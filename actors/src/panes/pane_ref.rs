//! Which backend a pane id belongs to, decided once per request.
//!
//! A pane id names its backend by its spelling: `p<n>` is hosted pane `n`, `t<i>-<n>` is tmux
//! pane `%n` of socket `i`, and `z<i>-<n>` is zellij's `terminal_<n>` of session `i`. The Panes actor turns the id of every request into a [`PaneRef`] as
//! the request arrives, and each operation matches on it once, so the rule is written here and
//! nowhere else.
//!
//! Only the canonical spelling is an id: `p01` would name the same pane as `p1`, and an id that
//! reaches an audit line or a walky address must be the one the pane list shows. An id that is
//! not a hosted one goes to the tmux backend, which resolves it itself
//! ([`super::tmux::parse_pane_id`]) and answers `no such pane` for anything it does not mirror —
//! an alias, a typo, or `p01`.

use std::fmt;

/// A pane id, resolved to the backend that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneRef<'a> {
    /// Any id that is not a hosted or a zellij pane's: the tmux backend looks it up (`t<i>-<n>`).
    Tmux(&'a str),
    /// An id that starts with `z`: the zellij backend looks it up (`z<i>-<n>`).
    Zellij(&'a str),
    /// Hosted pane `p<n>`.
    Hosted(u32),
}

impl<'a> PaneRef<'a> {
    /// Resolves `id`: [`PaneRef::Hosted`] for a canonical `p<n>`, [`PaneRef::Zellij`] for an id
    /// that starts with `z`, [`PaneRef::Tmux`] otherwise.
    pub fn parse(id: &'a str) -> PaneRef<'a> {
        if id.starts_with('z') {
            return PaneRef::Zellij(id);
        }
        id.strip_prefix('p')
            .filter(|n| canonical_number(n))
            .and_then(|n| n.parse().ok())
            .map_or(PaneRef::Tmux(id), PaneRef::Hosted)
    }
}

impl fmt::Display for PaneRef<'_> {
    /// The id as the pane list shows it (for a hosted pane, the one place `p<n>` is spelled).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PaneRef::Tmux(id) | PaneRef::Zellij(id) => f.write_str(id),
            PaneRef::Hosted(n) => write!(f, "p{n}"),
        }
    }
}

/// Splits `<prefix><i>-<n>` into `(i, n)`, both canonical numbers: the shape of tmux's and
/// zellij's pane ids (`t0-3`, `z1-0`). An alias (`t01-0`) is no id: an id that reaches an audit
/// line or a walky address must be the one the pane list shows.
pub fn indexed_id(prefix: char, id: &str) -> Option<(usize, u32)> {
    let (index, pane) = id.strip_prefix(prefix)?.split_once('-')?;
    if !canonical_number(index) || !canonical_number(pane) {
        return None;
    }
    Some((index.parse().ok()?, pane.parse().ok()?))
}

/// Decimal digits without a leading zero (but `0` itself), at most 9 of them: the numbers of
/// both kinds of pane id.
pub fn canonical_number(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 9
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_ids_are_canonical_p_numbers() {
        assert_eq!(PaneRef::parse("p1"), PaneRef::Hosted(1));
        assert_eq!(PaneRef::parse("p0"), PaneRef::Hosted(0));
        assert_eq!(PaneRef::parse("p123456789"), PaneRef::Hosted(123_456_789));
        // Everything else is left to the tmux backend, which knows no such pane.
        for other in [
            "t0-3",
            "p01",
            "p00",
            "p",
            "p-1",
            "p+1",
            "p1x",
            "P1",
            "p1234567890",
            "",
        ] {
            assert_eq!(PaneRef::parse(other), PaneRef::Tmux(other), "{other}");
        }
    }

    #[test]
    fn zellij_ids_go_to_the_zellij_backend() {
        for id in ["z0-3", "z12-0", "z01-3", "z"] {
            assert_eq!(PaneRef::parse(id), PaneRef::Zellij(id), "{id}");
        }
    }

    #[test]
    fn an_id_is_shown_as_it_was_given() {
        for id in ["p7", "t0-3", "t12-0", "z1-4"] {
            assert_eq!(PaneRef::parse(id).to_string(), id);
        }
        assert_eq!(PaneRef::Hosted(42).to_string(), "p42");
    }
}
