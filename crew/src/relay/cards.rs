//! A member's cards as the relay carries them (SPEC §10.1): the answer to [`super::RelayKind::Cards`]
//! and each [`super::MemberMessage::CardChange`].
//!
//! Typed rather than JSON text, so that a change to what a card holds is a change the compiler
//! shows on both sides. The bridge's own card type has a JSON shape (items tagged by `kind`,
//! notes left out when they do not apply) that the binary codec cannot carry; the bridge converts
//! between the two. The machine is not sent: the lead names a member's cards by the member's crew
//! name. These enums do not end in `Unknown`: they sit inside lists, where bincode could not skip a
//! newer variant's payload, so a new item kind or state bumps the hello's protocol.

use serde::{Deserialize, Serialize};

/// A member's waiting cards and last receipts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardList {
    /// Waiting, oldest first.
    pub cards: Vec<Card>,
    /// Newest first.
    pub receipts: Vec<CardReceipt>,
}

/// One card, as the member shows it (masked by the member; the lead masks and hashes again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    /// 128-bit random, hex.
    pub id: String,
    /// The pane, when known.
    pub pane: Option<String>,
    /// The pane's user-given name, when known.
    pub pane_name: Option<String>,
    /// Who asked: `claude`, `codex`, `screen` or `durable:<name>`.
    pub source: String,
    /// The agent's session id, when it gave one.
    pub conversation: Option<String>,
    /// The question.
    pub title: String,
    /// What is being decided.
    pub items: Vec<CardItem>,
    /// The answers offered.
    pub options: Vec<CardOption>,
    /// Unix milliseconds.
    pub created: u64,
    /// Unix milliseconds; past it the card expires.
    pub expires: u64,
    /// Where it is in its life.
    pub state: CardState,
    /// The member's `shown` hash (what a relayed answer carries back).
    pub shown: String,
    /// A durable agent's question: its id.
    pub question: Option<String>,
    /// Some text was shortened.
    pub shortened: bool,
    /// Some text holds characters shown as escapes.
    pub hidden_characters: bool,
    /// Some text is masked.
    pub masked: bool,
    /// Bytes of a held permission's texts not shown.
    pub not_shown: u64,
}

/// One body item of a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CardItem {
    /// A paragraph.
    Text(String),
    /// A command or code.
    Code(String),
    /// A unified diff.
    Diff(String),
    /// A link (its URL).
    Link(String),
}

/// One answer a card offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardOption {
    /// What a tap sends back.
    pub id: String,
    /// What the button says.
    pub label: String,
}

/// Where a card is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CardState {
    /// Waiting for a tap.
    Waiting,
    /// A device answered it.
    Answered,
    /// Answered at the machine first.
    AnsweredElsewhere,
    /// Its hold deadline passed.
    Expired,
    /// The asker took it back.
    Withdrawn,
}

/// What was decided about a card, by whom, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardReceipt {
    /// The card's id.
    pub card: String,
    /// Who asked (as [`Card::source`]).
    pub source: String,
    /// The card's title.
    pub title: String,
    /// How it ended.
    pub state: CardState,
    /// The option chosen, for an answered card.
    pub option: Option<String>,
    /// The device that answered, for an answered card.
    pub device: Option<String>,
    /// Unix milliseconds.
    pub at: u64,
}
