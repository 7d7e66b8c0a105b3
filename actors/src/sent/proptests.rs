//! Property tests of the exclusion rules: whatever surrounds a secret, a line holding it is not
//! kept; whatever a kept line is, the masker has nothing to mask in it; splitting input into
//! lines never leaves a line break inside a line.

use std::sync::LazyLock;

use proptest::prelude::*;

use super::lines::sent_lines;
use super::rules::{
    check, has_secret_word, has_url_password, sets_variable, MAX_LINE_CHARS, SECRET_WORDS,
};
use crate::panes::keys::NamedKey;
use crate::redact::Masker;

static MASKER: LazyLock<Masker> = LazyLock::new(|| Masker::new(true));

/// Ordinary command-line text: words, flags, paths, quotes and separators.
fn text() -> impl Strategy<Value = String> {
    "[a-z0-9 ./_:@'\"|;&-]{0,60}"
}

/// A secret word in a random mix of cases.
fn secret_word() -> impl Strategy<Value = String> {
    (prop::sample::select(SECRET_WORDS), any::<u64>()).prop_map(|(w, bits)| {
        w.chars()
            .enumerate()
            .map(|(i, c)| {
                if bits >> (i % 64) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_leading_blank_keeps_any_line_out(blank in prop::sample::select(vec![" ", "\t"]), rest in text()) {
        let line = format!("{blank}{rest}");
        prop_assert!(check(&line, &MASKER).is_err());
    }

    #[test]
    fn a_secret_word_anywhere_keeps_the_line_out(a in text(), w in secret_word(), b in text()) {
        let line = format!("x{a}{w}{b}");
        prop_assert!(check(&line, &MASKER).is_err());
    }

    #[test]
    fn an_assignment_anywhere_keeps_the_line_out(
        a in text(),
        name in "[A-Za-z_][A-Za-z0-9_]{0,12}",
        value in "[A-Za-z0-9]{0,12}",
        b in text(),
    ) {
        let line = format!("x{a} {name}={value} {b}");
        prop_assert!(check(&line, &MASKER).is_err(), "{line:?}");
    }

    #[test]
    fn a_url_password_keeps_the_line_out(
        a in text(),
        scheme in "[a-z]{2,8}",
        user in "[a-z0-9]{1,8}",
        pass in "[A-Za-z0-9]{1,12}",
        host in "[a-z0-9.]{1,12}",
        b in text(),
    ) {
        let line = format!("x{a} {scheme}://{user}:{pass}@{host}/{b}");
        prop_assert!(check(&line, &MASKER).is_err(), "{line:?}");
    }

    #[test]
    fn an_overlong_line_is_never_kept(n in (MAX_LINE_CHARS + 1)..(MAX_LINE_CHARS + 64), c in "[a-z]") {
        prop_assert!(check(&c.repeat(n), &MASKER).is_err());
    }

    #[test]
    fn a_kept_line_has_nothing_to_mask(line in "\\PC{0,80}") {
        if check(&line, &MASKER).is_ok() {
            let masked = MASKER.mask(&line);
            prop_assert_eq!(masked.as_ref(), line.as_str());
            prop_assert!(!has_secret_word(&line));
            prop_assert!(!line.starts_with([' ', '\t']));
            prop_assert!(!has_url_password(&line));
            prop_assert!(!sets_variable(&line));
        }
    }

    #[test]
    fn lines_hold_no_line_break(t in "[a-z \r\n]{0,40}", enter in any::<bool>()) {
        let keys = if enter { vec![NamedKey::Enter] } else { vec![] };
        for line in sent_lines(&t, &keys) {
            prop_assert!(!line.is_empty());
            prop_assert!(!line.contains(['\r', '\n']));
        }
    }
}
