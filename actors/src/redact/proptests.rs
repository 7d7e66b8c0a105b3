//! Property tests: idempotence, per-line character counts, no panics, the disabled masker, and
//! the prefilter never changing a result.

use std::sync::LazyLock;

use proptest::prelude::*;

use super::tests::{assignment_values_by_regex, filler, ALNUM, B64URL, HEX};
use super::{Masker, MASK};

static MASKER: LazyLock<Masker> = LazyLock::new(|| Masker::new(true));
static EVERY_SHAPE: LazyLock<Masker> = LazyLock::new(Masker::without_prefilter);

/// Pieces that secrets, near-secrets and their surroundings are made of.
fn fragment() -> impl Strategy<Value = String> {
    let fixed: Vec<String> = [
        "ghp_",
        "sk-",
        "sk-ant-",
        "AKIA",
        "xoxb-",
        "eyJ",
        "collie_",
        "key-",
        "://",
        "@",
        ":",
        "=",
        ":=",
        "\"",
        "'",
        "`",
        " ",
        "\t",
        "\n",
        "\r\n",
        ",",
        "&",
        "$",
        "${",
        "(",
        "password",
        "Token",
        "API_KEY",
        "auth",
        "Authorization: Bearer ",
        "secret",
        "passwd",
        "user:",
        "postgres://u:",
        "https://",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----END RSA PRIVATE KEY-----\n",
        "Proc-Type: 4,ENCRYPTED\n",
        "•",
        "••••",
        "ü",
        "日本",
        "null",
        "get_token()",
        "Bearer ",
        "token ",
        "Basic\t",
        "=>",
        "\\",
        "\\\"",
        "let ",
        "self.",
        "//",
        "x-access-token:",
        "-----BEGIN PRIVATE KEY-----",
        "PASS",
        "pass",
        "Pass",
        "pwd",
        "PWD",
        "Pwd",
        "OLDPWD=",
        "COM",
        "_",
        ".",
        "--- PASS: ",
        "SK",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
        "-----END PGP PRIVATE KEY BLOCK-----\n",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n",
        "Version: GnuPG v2\n",
        "=AbCd\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    prop_oneof![
        4 => proptest::sample::select(fixed),
        2 => "[a-zA-Z0-9_./+=-]{1,12}",
        1 => "\\PC{0,6}",
        1 => (0u64..1000).prop_map(|s| format!("ghp_{}", filler(ALNUM, 36, s))),
        1 => (0u64..1000).prop_map(|s| format!("collie_{}", filler(B64URL, 43, s))),
        1 => (0u64..1000).prop_map(|s| format!("dop_v1_{}", filler(HEX, 64, s))),
        1 => (0u64..1000).prop_map(|s| format!("SK{}", filler(HEX, 32, s))),
        1 => (0u64..1000).prop_map(|s| format!("AKIA{}", filler(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, s))),
        1 => (0u64..1000).prop_map(|s| format!("{}\n", filler(ALNUM, 64, s))),
    ]
}

pub(super) fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 0..24).prop_map(|parts| parts.concat())
}

fn line_lengths(s: &str) -> Vec<usize> {
    s.split('\n').map(|line| line.chars().count()).collect()
}

proptest! {
    #[test]
    fn masking_is_idempotent(text in text()) {
        let once = MASKER.mask(&text);
        prop_assert_eq!(MASKER.mask(&once), once.clone());
    }

    #[test]
    fn masking_keeps_lines_and_their_character_counts(text in text()) {
        let masked = MASKER.mask(&text);
        prop_assert_eq!(line_lengths(&masked), line_lengths(&text));
        // Only bullets are added, and only where a character was.
        for (a, b) in text.chars().zip(masked.chars()) {
            prop_assert!(a == b || b == MASK, "{:?} became {:?}", a, b);
        }
    }

    #[test]
    fn the_prefilter_never_changes_the_result(text in text()) {
        prop_assert_eq!(MASKER.mask(&text), EVERY_SHAPE.mask(&text));
    }

    #[test]
    fn assignment_values_are_found_where_the_regex_groups_are(text in text()) {
        for line in text.split('\n') {
            prop_assert_eq!(MASKER.assignment_values(line), assignment_values_by_regex(line));
        }
    }

    #[test]
    fn arbitrary_strings_do_not_panic_and_stay_idempotent(text in any::<String>()) {
        let once = MASKER.mask(&text);
        prop_assert_eq!(line_lengths(&once), line_lengths(&text));
        prop_assert_eq!(MASKER.mask(&once), once.clone());
    }

    #[test]
    fn the_disabled_masker_is_the_identity(text in text()) {
        prop_assert_eq!(Masker::new(false).mask(&text), text.as_str());
    }
}
