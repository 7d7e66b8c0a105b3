//! Cards (SPEC §10.1) between the Cards actor's types and the relay's.

use collie_actors::cards::actor::CardList;
use collie_actors::cards::card::{Card, CardOption, CardState, Item, Source};
use collie_actors::cards::core::Receipt;
use collie_crew::relay::cards as wire;
use collie_crew::relay::CardAnswered;

use crate::app::cards::Answered;
use crate::app::AppError;

/// This machine's cards and receipts, for a lead.
pub fn list(list: CardList) -> wire::CardList {
    wire::CardList {
        cards: list.cards.into_iter().map(card).collect(),
        receipts: list.receipts.into_iter().map(receipt).collect(),
    }
}

/// One card of this machine, for a lead.
pub fn card(c: Card) -> wire::Card {
    wire::Card {
        id: c.id,
        pane: c.pane,
        pane_name: c.pane_name,
        source: String::from(c.source),
        conversation: c.conversation,
        title: c.title,
        items: c.items.into_iter().map(item).collect(),
        options: c
            .options
            .into_iter()
            .map(|o| wire::CardOption {
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

/// What a tap on one of this machine's cards did, for a lead.
pub fn answered(a: Answered) -> CardAnswered {
    match a {
        Answered::Confirm(token) => CardAnswered::Confirm(token),
        Answered::Done { delivered } => CardAnswered::Done { delivered },
    }
}

/// A member's cards and receipts, named by its crew name `machine`.
pub fn list_of(machine: &str, list: wire::CardList) -> Result<CardList, AppError> {
    Ok(CardList {
        cards: list
            .cards
            .into_iter()
            .map(|c| card_of(machine, c))
            .collect::<Result<_, _>>()?,
        receipts: list
            .receipts
            .into_iter()
            .map(|r| receipt_of(machine, r))
            .collect::<Result<_, _>>()?,
    })
}

/// One card of a member, named by its crew name `machine`.
pub fn card_of(machine: &str, c: wire::Card) -> Result<Card, AppError> {
    Ok(Card {
        id: c.id,
        machine: machine.to_owned(),
        pane: c.pane,
        pane_name: c.pane_name,
        source: source_of(c.source)?,
        conversation: c.conversation,
        title: c.title,
        items: c.items.into_iter().map(item_of).collect(),
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
        state: state_of(c.state),
        shown: c.shown,
        question: c.question,
        shortened: c.shortened,
        hidden_characters: c.hidden_characters,
        masked: c.masked,
        not_shown: c.not_shown,
    })
}

fn receipt(r: Receipt) -> wire::CardReceipt {
    wire::CardReceipt {
        card: r.card,
        source: String::from(r.source),
        title: r.title,
        state: state(r.state),
        option: r.option,
        device: r.device,
        at: r.at,
    }
}

fn receipt_of(machine: &str, r: wire::CardReceipt) -> Result<Receipt, AppError> {
    Ok(Receipt {
        card: r.card,
        machine: machine.to_owned(),
        source: source_of(r.source)?,
        title: r.title,
        state: state_of(r.state),
        option: r.option,
        device: r.device,
        at: r.at,
    })
}

fn source_of(s: String) -> Result<Source, AppError> {
    Source::try_from(s).map_err(|_| AppError::MemberUnreadable)
}

fn item(i: Item) -> wire::CardItem {
    match i {
        Item::Text { text } => wire::CardItem::Text(text),
        Item::Code { text } => wire::CardItem::Code(text),
        Item::Diff { text } => wire::CardItem::Diff(text),
        Item::Link { url } => wire::CardItem::Link(url),
    }
}

fn item_of(i: wire::CardItem) -> Item {
    match i {
        wire::CardItem::Text(text) => Item::Text { text },
        wire::CardItem::Code(text) => Item::Code { text },
        wire::CardItem::Diff(text) => Item::Diff { text },
        wire::CardItem::Link(url) => Item::Link { url },
    }
}

fn state(s: CardState) -> wire::CardState {
    match s {
        CardState::Waiting => wire::CardState::Waiting,
        CardState::Answered => wire::CardState::Answered,
        CardState::AnsweredElsewhere => wire::CardState::AnsweredElsewhere,
        CardState::Expired => wire::CardState::Expired,
        CardState::Withdrawn => wire::CardState::Withdrawn,
    }
}

fn state_of(s: wire::CardState) -> CardState {
    match s {
        wire::CardState::Waiting => CardState::Waiting,
        wire::CardState::Answered => CardState::Answered,
        wire::CardState::AnsweredElsewhere => CardState::AnsweredElsewhere,
        wire::CardState::Expired => CardState::Expired,
        wire::CardState::Withdrawn => CardState::Withdrawn,
    }
}
