//! Text cut to a byte limit without splitting a character: the one way every part of the bridge
//! shortens a string it keeps, shows or audits (a card's text, a search hit's line, a command
//! line, an agent's field). `str::floor_char_boundary` does the same, but is newer than the
//! workspace's minimum Rust version.

/// The largest character boundary of `s` at or below `at` (`s.len()` when `at` is past the end).
pub fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    // A character is at most 4 bytes: this steps back at most 3 times.
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub fn cut(s: &str, max: usize) -> &str {
    &s[..floor_boundary(s, max)]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_character_is_never_split() {
        assert_eq!(cut("ééé", 3), "é");
        assert_eq!(cut("ééé", 4), "éé");
        assert_eq!(cut("a😀", 4), "a");
        assert_eq!(cut("a😀", 5), "a😀");
        assert_eq!(cut("abc", 0), "");
        assert_eq!(cut("abc", 99), "abc");
        assert_eq!(floor_boundary("é", 1), 0);
        assert_eq!(floor_boundary("é", 7), 2);
    }

    proptest! {
        /// The cut is the longest prefix of whole characters that fits.
        #[test]
        fn the_cut_is_the_longest_prefix_that_fits(s in "\\PC{0,40}", max in 0usize..200) {
            let kept = cut(&s, max);
            prop_assert!(kept.len() <= max);
            prop_assert!(s.starts_with(kept));
            let longest = s
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .take_while(|end| *end <= max)
                .last()
                .unwrap_or(0);
            prop_assert_eq!(kept.len(), longest);
        }
    }
}
