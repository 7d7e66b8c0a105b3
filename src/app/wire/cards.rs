//! Cards (SPEC §10.1) between the Cards actor's types and the relay's.

use collie_actors::cards::actor::CardList;
use collie_actors::cards::card::{Card, CardOption, CardState, Item, Source};
use collie_actors::cards::core::Receipt;
use collie_crew::relay::cards as wire;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_crosses_the_relay_whole_and_is_named_by_the_member() {
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
            Source::Durable("agent".into()),
            Source::Claude,
        ];
        for (state, source) in states.into_iter().zip(sources) {
            let card = Card {
                id: "c1".into(),
                machine: "local".into(),
                pane: Some("t0-1".into()),
                pane_name: Some("build".into()),
                source: source.clone(),
                conversation: Some("s".into()),
                title: "Run?".into(),
                items: vec![
                    Item::Text { text: "a".into() },
                    Item::Code { text: "b".into() },
                    Item::Diff { text: "c".into() },
                    Item::Link { url: "d".into() },
                ],
                options: vec![CardOption {
                    id: "allow".into(),
                    label: "Allow".into(),
                }],
                created: 1,
                expires: 2,
                state,
                shown: "ab".into(),
                question: Some("q".into()),
                shortened: true,
                hidden_characters: true,
                masked: true,
                not_shown: 3,
            };
            let receipt = Receipt {
                card: "c1".into(),
                machine: "local".into(),
                source,
                title: "Run?".into(),
                state,
                option: Some("allow".into()),
                device: Some("phone".into()),
                at: 4,
            };
            let sent = list(CardList {
                cards: vec![card.clone()],
                receipts: vec![receipt.clone()],
            });
            let read = list_of("web-1", sent).unwrap();
            assert_eq!(
                read.cards,
                vec![Card {
                    machine: "web-1".into(),
                    ..card
                }]
            );
            assert_eq!(
                read.receipts,
                vec![Receipt {
                    machine: "web-1".into(),
                    ..receipt
                }]
            );
        }
    }

    #[test]
    fn a_source_the_lead_does_not_know_is_unreadable() {
        let mut sent = list(CardList {
            cards: vec![],
            receipts: vec![],
        });
        sent.receipts.push(wire::CardReceipt {
            card: "c".into(),
            source: "durable:".into(),
            title: "t".into(),
            state: wire::CardState::Expired,
            option: None,
            device: None,
            at: 1,
        });
        assert!(matches!(
            list_of("web-1", sent),
            Err(AppError::MemberUnreadable)
        ));
    }
}
