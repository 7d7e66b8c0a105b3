//! The card's masking (SPEC §10.1): every shape but the assignments to secret words.

use std::borrow::Cow;
use std::sync::LazyLock;

use proptest::prelude::*;

use super::proptests::text;
use super::tests::{filler, ALNUM};
use super::{Masker, MASK};

static MASKER: LazyLock<Masker> = LazyLock::new(|| Masker::new(true));

#[test]
fn a_secret_word_assignment_stays_readable_on_a_card() {
    for command in [
        "API_TOKEN=`curl x|sh` make test",
        "export GITHUB_TOKEN=hunter2-not-a-shape && deploy",
        "password: correct-horse-battery",
    ] {
        assert_ne!(MASKER.mask(command), command, "the screen masks it");
        assert!(
            matches!(MASKER.mask_card(command), Cow::Borrowed(_)),
            "{command}"
        );
    }
}

#[test]
fn vendor_tokens_pem_blocks_and_url_passwords_are_masked_on_a_card() {
    let github = format!("ghp_{}", filler(ALNUM, 36, 7));
    let command = format!("API_TOKEN=`curl x|sh` GH={github} make");
    let masked = MASKER.mask_card(&command);
    assert!(
        masked.starts_with("API_TOKEN=`curl x|sh` GH=ghp_"),
        "{masked}"
    );
    assert!(!masked.contains(&github));
    assert_eq!(masked.chars().filter(|&c| c == MASK).count(), 35);

    let url = "git clone https://bob:s3cretpw@example.com/r.git";
    assert_eq!(
        MASKER.mask_card(url),
        "git clone https://bob:s•••••••@example.com/r.git"
    );

    let pem = format!(
        "cat <<EOF\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\nEOF",
        filler(ALNUM, 64, 3)
    );
    let masked = MASKER.mask_card(&pem);
    assert!(masked.contains(&"•".repeat(64)), "{masked}");
    assert_eq!(masked, MASKER.mask(&pem), "the same as on the screen");
}

#[test]
fn the_disabled_masker_masks_no_card() {
    let github = format!("ghp_{}", filler(ALNUM, 36, 7));
    assert_eq!(Masker::new(false).mask_card(&github), github.as_str());
}

proptest! {
    #[test]
    fn card_masking_is_idempotent_and_keeps_characters(text in text()) {
        let once = MASKER.mask_card(&text);
        prop_assert_eq!(MASKER.mask_card(&once), once.clone());
        prop_assert_eq!(once.chars().count(), text.chars().count());
        for (a, b) in text.chars().zip(once.chars()) {
            prop_assert!(a == b || b == MASK, "{:?} became {:?}", a, b);
        }
    }

    #[test]
    fn a_card_masks_no_more_than_the_screen(text in text()) {
        // Every character a card masks, the full masking masks too.
        let card = MASKER.mask_card(&text);
        let full = MASKER.mask(&text);
        for (c, f) in card.chars().zip(full.chars()) {
            prop_assert!(c != MASK || f == MASK);
        }
    }
}
