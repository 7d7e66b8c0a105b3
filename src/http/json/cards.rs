//! Cards as the phone API answers them (`GET /api/cards`, the card stream's events, SPEC §10.1).
//! A note that does not apply is left out (`shortened`, `masked`, …), as the phone expects.

use collie_actors::cards::actor::CardList as AppCardList;
use collie_actors::cards::card::{Card as AppCard, CardState, Item as AppItem};
use collie_actors::cards::core::Receipt as AppReceipt;
use serde::Serialize;

/// The waiting cards and the last receipts.
#[derive(Debug, Serialize)]
pub struct CardList {
    cards: Vec<Card>,
    receipts: Vec<Receipt>,
}

/// One card.
#[derive(Debug, Serialize)]
pub struct Card {
    id: String,
    machine: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pane: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pane_name: Option<String>,
    source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    conversation: Option<String>,
    title: String,
    items: Vec<Item>,
    options: Vec<CardOption>,
    created: u64,
    expires: u64,
    state: &'static str,
    shown: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shortened: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hidden_characters: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    masked: bool,
    #[serde(skip_serializing_if = "is_zero")]
    not_shown: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One body item, tagged by `kind`.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Item {
    /// A paragraph.
    Text {
        /// The text.
        text: String,
    },
    /// Code.
    Code {
        /// The code.
        text: String,
    },
    /// A diff.
    Diff {
        /// The diff.
        text: String,
    },
    /// A link.
    Link {
        /// The URL.
        url: String,
    },
}

/// One answer a card offers.
#[derive(Debug, Serialize)]
pub struct CardOption {
    id: String,
    label: String,
}

/// What was decided about a card.
#[derive(Debug, Serialize)]
pub struct Receipt {
    card: String,
    machine: String,
    source: String,
    title: String,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    option: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<String>,
    at: u64,
}

fn state(s: CardState) -> &'static str {
    match s {
        CardState::Waiting => "waiting",
        CardState::Answered => "answered",
        CardState::AnsweredElsewhere => "answered elsewhere",
        CardState::Expired => "expired",
        CardState::Withdrawn => "withdrawn",
    }
}

impl From<AppCardList> for CardList {
    fn from(list: AppCardList) -> Self {
        CardList {
            cards: list.cards.into_iter().map(Card::from).collect(),
            receipts: list.receipts.into_iter().map(Receipt::from).collect(),
        }
    }
}

impl From<AppCard> for Card {
    fn from(c: AppCard) -> Self {
        Card {
            id: c.id,
            machine: c.machine,
            pane: c.pane,
            pane_name: c.pane_name,
            source: String::from(c.source),
            conversation: c.conversation,
            title: c.title,
            items: c
                .items
                .into_iter()
                .map(|i| match i {
                    AppItem::Text { text } => Item::Text { text },
                    AppItem::Code { text } => Item::Code { text },
                    AppItem::Diff { text } => Item::Diff { text },
                    AppItem::Link { url } => Item::Link { url },
                })
                .collect(),
            options: c
                .options
                .into_iter()
                .map(|o| CardOption {
                    id: o.id,
                    label: o.label,
                })
                .collect(),
            created: c.created,
            expires: c.expires,
            state: state(c.state),
            shown: c.shown,
            question: c.question,
            shortened: c.shortened,
            hidden_characters: c.hidden_characters,
            masked: c.masked,
            not_shown: c.not_shown,
        }
    }
}

impl From<AppReceipt> for Receipt {
    fn from(r: AppReceipt) -> Self {
        Receipt {
            card: r.card,
            machine: r.machine,
            source: String::from(r.source),
            title: r.title,
            state: state(r.state),
            option: r.option,
            device: r.device,
            at: r.at,
        }
    }
}

#[cfg(test)]
mod tests {
    use collie_actors::cards::card::{CardOption as AppOption, Source};

    use super::*;

    fn card(full: bool, state: CardState, source: Source) -> AppCard {
        let some = |s: &str| full.then(|| s.to_owned());
        AppCard {
            id: "c1".into(),
            machine: "web-1".into(),
            pane: some("t0-1"),
            pane_name: some("build"),
            source,
            conversation: some("sess"),
            title: "Run \"ls\"?".into(),
            items: vec![
                AppItem::Text { text: "t".into() },
                AppItem::Code { text: "ls".into() },
                AppItem::Diff { text: "+a".into() },
                AppItem::Link {
                    url: "https://x".into(),
                },
            ],
            options: vec![AppOption {
                id: "allow".into(),
                label: "Allow".into(),
            }],
            created: 1,
            expires: 2,
            state,
            shown: "ab".into(),
            question: some("q1"),
            shortened: full,
            hidden_characters: full,
            masked: full,
            not_shown: u64::from(full) * 7,
        }
    }

    #[test]
    fn a_card_list_is_the_json_it_was() {
        let states = [
            CardState::Waiting,
            CardState::Answered,
            CardState::AnsweredElsewhere,
            CardState::Expired,
            CardState::Withdrawn,
        ];
        let sources = [
            Source::Claude,
            Source::Codex,
            Source::Screen,
            Source::Durable("a".into()),
            Source::Claude,
        ];
        for full in [false, true] {
            let list = AppCardList {
                cards: states
                    .iter()
                    .zip(sources.clone())
                    .map(|(s, src)| card(full, *s, src))
                    .collect(),
                receipts: states
                    .iter()
                    .zip(sources.clone())
                    .map(|(s, src)| AppReceipt {
                        card: "c1".into(),
                        machine: "local".into(),
                        source: src,
                        title: "t".into(),
                        state: *s,
                        option: full.then(|| "allow".to_owned()),
                        device: full.then(|| "phone".to_owned()),
                        at: 3,
                    })
                    .collect(),
            };
            let before = serde_json::to_string(&list).unwrap();
            assert_eq!(
                serde_json::to_string(&CardList::from(list)).unwrap(),
                before
            );
        }
    }
}
