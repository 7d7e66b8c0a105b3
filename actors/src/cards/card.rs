//! What a card is (SPEC §10.1), and `shown`: the SHA-256 of exactly what the phone renders.
//!
//! **Why a hash of what is shown.** A tap answers what the person read. If the card's title,
//! items or options change between the phone drawing them and the tap arriving (a new card under
//! the same id, a screen prompt whose lines moved), the answer must not apply: the phone sends the
//! hash of what it drew, and a different hash is 409 `card changed`. The hash covers the title,
//! the items and the options — nothing the phone does not render — as canonical JSON: keys in
//! byte order (the structs below declare their fields in that order), no whitespace, serde_json's
//! string escaping.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most options a card may offer.
pub const MAX_OPTIONS: usize = 8;
/// Most body items a card may hold.
pub const MAX_ITEMS: usize = 32;
/// Longest title, in bytes.
pub const MAX_TITLE: usize = 512;
/// Longest item text, in bytes (a whole command or diff is shown; a longer one is cut by the
/// opener and says so).
pub const MAX_ITEM: usize = 64 * 1024;

/// Who asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Source {
    /// Claude Code's PermissionRequest hook.
    Claude,
    /// Codex's PermissionRequest hook.
    Codex,
    /// A dialog recognized on a pane's screen.
    Screen,
    /// A durable agent, by its attached name.
    Durable(String),
}

impl From<Source> for String {
    fn from(s: Source) -> String {
        match s {
            Source::Claude => "claude".to_owned(),
            Source::Codex => "codex".to_owned(),
            Source::Screen => "screen".to_owned(),
            Source::Durable(name) => format!("durable:{name}"),
        }
    }
}

impl TryFrom<String> for Source {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "claude" => Ok(Source::Claude),
            "codex" => Ok(Source::Codex),
            "screen" => Ok(Source::Screen),
            other => match other.strip_prefix("durable:") {
                Some(name) if !name.is_empty() => Ok(Source::Durable(name.to_owned())),
                _ => Err(format!("unknown card source: {other}")),
            },
        }
    }
}

/// One body item, rendered as text by the phone (never as HTML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Item {
    /// A paragraph.
    Text {
        /// The text.
        text: String,
    },
    /// A command or code, shown monospaced and whole.
    Code {
        /// The code.
        text: String,
    },
    /// A unified diff.
    Diff {
        /// The diff.
        text: String,
    },
    /// A link (`https://` only; the phone shows anything else as text).
    Link {
        /// The URL.
        url: String,
    },
}

impl Item {
    /// The bytes of its text (what counts against the waiting cards' budget).
    pub fn text_len(&self) -> usize {
        match self {
            Item::Text { text } | Item::Code { text } | Item::Diff { text } => text.len(),
            Item::Link { url } => url.len(),
        }
    }
}

/// One answer a card offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardOption {
    /// What the phone sends back (`allow`, `deny`, `always`, or a screen option's number).
    pub id: String,
    /// What the button says.
    pub label: String,
}

/// Where a card is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CardState {
    /// Waiting for a tap.
    #[serde(rename = "waiting")]
    Waiting,
    /// A device answered it.
    #[serde(rename = "answered")]
    Answered,
    /// The question was answered at the machine first (the hook's process ended).
    #[serde(rename = "answered elsewhere")]
    AnsweredElsewhere,
    /// The hold deadline passed; the agent shows its own dialog.
    #[serde(rename = "expired")]
    Expired,
    /// The asker took it back (a screen prompt that left the screen, a bridge stopping).
    #[serde(rename = "withdrawn")]
    Withdrawn,
}

/// What an opener says about a new card; the core adds the id, the times, the state and `shown`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCard {
    /// The machine the question is on.
    pub machine: String,
    /// The pane, when known.
    pub pane: Option<String>,
    /// The pane's user-given name, when known (shown on the card).
    pub pane_name: Option<String>,
    /// Who asked.
    pub source: Source,
    /// The agent's session id, when it gave one.
    pub conversation: Option<String>,
    /// The question, one line.
    pub title: String,
    /// What is being decided, in full.
    pub items: Vec<Item>,
    /// The answers offered.
    pub options: Vec<CardOption>,
    /// A durable agent's question: its id (a push judges each question once).
    pub question: Option<String>,
    /// Sanitizing changed the title or the reason (SPEC §10.3), or a text was too long for the
    /// card (§10.1): the phone says `Text shortened`.
    pub shortened: bool,
    /// Masking (§6, as a card masks) changed some of its text: the card says so.
    pub masked: bool,
}

impl NewCard {
    /// Checks the bounds above; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.title.is_empty() || self.title.len() > MAX_TITLE {
            return Err(format!("card title must be 1 to {MAX_TITLE} bytes"));
        }
        if self.items.len() > MAX_ITEMS {
            return Err(format!("at most {MAX_ITEMS} card items"));
        }
        if self.items.iter().any(|i| i.text_len() > MAX_ITEM) {
            return Err(format!("a card item is over {MAX_ITEM} bytes"));
        }
        if self.options.is_empty() || self.options.len() > MAX_OPTIONS {
            return Err(format!("a card offers 1 to {MAX_OPTIONS} options"));
        }
        for (i, o) in self.options.iter().enumerate() {
            if o.id.is_empty() || self.options[..i].iter().any(|p| p.id == o.id) {
                return Err("card option ids must be non-empty and distinct".to_owned());
            }
        }
        Ok(())
    }
}

/// A card as the phone and the CLI see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// 128-bit random, hex.
    pub id: String,
    /// The machine the question is on.
    pub machine: String,
    /// The pane, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// The pane's user-given name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_name: Option<String>,
    /// Who asked.
    pub source: Source,
    /// The agent's session id, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// The question.
    pub title: String,
    /// What is being decided.
    pub items: Vec<Item>,
    /// The answers offered.
    pub options: Vec<CardOption>,
    /// Unix milliseconds.
    pub created: u64,
    /// Unix milliseconds; past it the card expires.
    pub expires: u64,
    /// Where it is in its life.
    pub state: CardState,
    /// SHA-256 (hex) of what the phone renders; an answer must carry it.
    pub shown: String,
    /// A durable agent's question: its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Sanitizing changed the title or the reason, or a text was cut: the phone says `Text
    /// shortened` (and, with [`Card::not_shown`], how much is not shown).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shortened: bool,
    /// Its text holds control, invisible or direction characters, shown as `⟨…⟩` escapes
    /// (SPEC §10.1; [`super::visible`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden_characters: bool,
    /// Some of its text is masked (`•`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub masked: bool,
    /// Bytes of a held permission's texts not shown (past the card's limits); when not 0 the
    /// card offers only Deny.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_shown: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Exactly what the phone renders, in canonical field order (byte order of the keys). The notes
/// (hidden characters, masked, shortened) are left out when they do not apply, so a card without
/// them hashes as it did before they existed.
#[derive(Serialize)]
struct Shown<'a> {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hidden_characters: bool,
    items: &'a [Item],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    masked: bool,
    #[serde(skip_serializing_if = "is_zero")]
    not_shown: u64,
    options: &'a [CardOption],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shortened: bool,
    title: &'a str,
}

/// The `shown` hash of `card`: its title, items and options and the notes the phone shows.
pub fn shown_hash(card: &Card) -> String {
    let shown = Shown {
        hidden_characters: card.hidden_characters,
        items: &card.items,
        masked: card.masked,
        not_shown: card.not_shown,
        options: &card.options,
        shortened: card.shortened,
        title: &card.title,
    };
    // Serializing plain strings and vectors cannot fail; an empty hash would match nothing.
    let json = serde_json::to_vec(&shown).unwrap_or_default();
    hex::encode(Sha256::digest(&json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<CardOption> {
        vec![
            CardOption {
                id: "allow".into(),
                label: "Allow".into(),
            },
            CardOption {
                id: "deny".into(),
                label: "Deny".into(),
            },
        ]
    }

    fn card(title: &str, items: Vec<Item>, options: Vec<CardOption>) -> Card {
        Card {
            id: "c".into(),
            machine: "m".into(),
            pane: None,
            pane_name: None,
            source: Source::Claude,
            conversation: None,
            title: title.into(),
            items,
            options,
            created: 0,
            expires: 0,
            state: CardState::Waiting,
            shown: String::new(),
            question: None,
            shortened: false,
            hidden_characters: false,
            masked: false,
            not_shown: 0,
        }
    }

    fn hash(title: &str, items: &[Item], options: &[CardOption]) -> String {
        shown_hash(&card(title, items.to_vec(), options.to_vec()))
    }

    #[test]
    fn the_hash_is_of_canonical_json_with_sorted_keys() {
        let items = vec![Item::Code {
            text: "rm -rf build".into(),
        }];
        let json = r#"{"items":[{"kind":"code","text":"rm -rf build"}],"options":[{"id":"allow","label":"Allow"},{"id":"deny","label":"Deny"}],"title":"Bash"}"#;
        assert_eq!(
            hash("Bash", &items, &options()),
            hex::encode(Sha256::digest(json.as_bytes()))
        );
        let mut noted = card("Bash", items, options());
        noted.hidden_characters = true;
        noted.masked = true;
        noted.not_shown = 7;
        noted.shortened = true;
        let json = r#"{"hidden_characters":true,"items":[{"kind":"code","text":"rm -rf build"}],"masked":true,"not_shown":7,"options":[{"id":"allow","label":"Allow"},{"id":"deny","label":"Deny"}],"shortened":true,"title":"Bash"}"#;
        assert_eq!(
            shown_hash(&noted),
            hex::encode(Sha256::digest(json.as_bytes()))
        );
    }

    #[test]
    fn any_rendered_change_changes_the_hash() {
        let items = vec![Item::Code { text: "ls".into() }];
        let base = hash("Bash", &items, &options());
        assert_ne!(base, hash("Bash ", &items, &options()));
        assert_ne!(
            base,
            hash("Bash", &[Item::Text { text: "ls".into() }], &options())
        );
        let mut swapped = options();
        swapped.swap(0, 1);
        assert_ne!(base, hash("Bash", &items, &swapped));
        let mut masked = card("Bash", items, options());
        masked.masked = true;
        assert_ne!(
            base,
            shown_hash(&masked),
            "a note the phone shows counts too"
        );
    }

    #[test]
    fn sources_read_and_write_as_the_spec_names_them() {
        for (s, text) in [
            (Source::Claude, "claude"),
            (Source::Codex, "codex"),
            (Source::Screen, "screen"),
            (Source::Durable("ci".into()), "durable:ci"),
        ] {
            assert_eq!(String::from(s.clone()), text);
            assert_eq!(Source::try_from(text.to_owned()), Ok(s));
        }
        assert!(Source::try_from("durable:".to_owned()).is_err());
        assert!(Source::try_from("phone".to_owned()).is_err());
        let state = serde_json::to_string(&CardState::AnsweredElsewhere).unwrap();
        assert_eq!(state, "\"answered elsewhere\"");
    }

    #[test]
    fn a_new_card_is_bounded() {
        let good = NewCard {
            machine: "m".into(),
            pane: None,
            pane_name: None,
            source: Source::Claude,
            conversation: None,
            title: "Bash".into(),
            items: vec![],
            options: options(),
            question: None,
            shortened: false,
            masked: false,
        };
        assert!(good.check().is_ok());
        let mut dup = good.clone();
        dup.options[1].id = "allow".into();
        assert!(dup.check().is_err());
        let mut none = good.clone();
        none.options.clear();
        assert!(none.check().is_err());
        let mut long = good;
        long.items = vec![Item::Code {
            text: "x".repeat(MAX_ITEM + 1),
        }];
        assert!(long.check().is_err());
    }
}
