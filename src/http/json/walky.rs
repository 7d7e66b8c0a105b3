//! Walky cards as the phone API answers them (`GET /api/walky`, `GET /api/walky/{id}`, SPEC §9).

use collie_actors::walky::log::Kind;
use serde::Serialize;

use crate::app::walky::views::{Card as AppCard, Cards as AppCards};

/// Every message of this machine's log.
#[derive(Debug, Serialize)]
pub struct Cards {
    messages: Vec<Card>,
}

/// One message.
#[derive(Debug, Serialize)]
pub struct Card {
    id: String,
    /// `sent`, `received`, `forwarded` or `result`.
    kind: &'static str,
    from: String,
    name: String,
    to: String,
    sent_at: Option<String>,
    logged_at: Option<String>,
    body: Option<String>,
    outcome: Option<String>,
}

impl From<AppCards> for Cards {
    fn from(cards: AppCards) -> Self {
        Cards {
            messages: cards.messages.into_iter().map(Card::from).collect(),
        }
    }
}

impl From<AppCard> for Card {
    fn from(c: AppCard) -> Self {
        Card {
            id: c.id,
            kind: match c.kind {
                Kind::Sent => "sent",
                Kind::Received => "received",
                Kind::Forwarded => "forwarded",
                Kind::Result => "result",
            },
            from: c.from,
            name: c.name,
            to: c.to,
            sent_at: c.sent_at,
            logged_at: c.logged_at,
            body: c.body,
            outcome: c.outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walky_cards_are_the_json_they_were() {
        let kinds = [Kind::Sent, Kind::Received, Kind::Forwarded, Kind::Result];
        for full in [false, true] {
            let some = |s: &str| full.then(|| s.to_owned());
            let cards = AppCards {
                messages: kinds
                    .iter()
                    .map(|kind| AppCard {
                        id: "ab".repeat(16),
                        kind: *kind,
                        from: "web-1/t0-1#ab12".into(),
                        name: "build".into(),
                        to: "t0-2#cd34".into(),
                        sent_at: some("2026-12-06T09:00:00Z"),
                        logged_at: some("2026-12-06T09:00:01Z"),
                        body: some("hi \"x\""),
                        outcome: some("delivered"),
                    })
                    .collect(),
            };
            let before = serde_json::to_string(&cards).unwrap();
            assert_eq!(serde_json::to_string(&Cards::from(cards)).unwrap(), before);
        }
    }
}
