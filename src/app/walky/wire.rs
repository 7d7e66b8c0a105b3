//! A walky message's card (SPEC §9) between the phone's view and the relay's type.

use collie_actors::walky::log::Kind;
use collie_crew::relay::{WalkyCard, WalkyKind};

use super::views::Card;

/// A card of this machine's log, for a lead.
pub fn card(c: Card) -> WalkyCard {
    WalkyCard {
        id: c.id,
        kind: match c.kind {
            Kind::Sent => WalkyKind::Sent,
            Kind::Received => WalkyKind::Received,
            Kind::Forwarded => WalkyKind::Forwarded,
            Kind::Result => WalkyKind::Result,
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

/// A card of a member's log (the caller masks it again).
pub fn card_of(c: WalkyCard) -> Card {
    Card {
        id: c.id,
        kind: match c.kind {
            WalkyKind::Sent => Kind::Sent,
            WalkyKind::Received => Kind::Received,
            WalkyKind::Forwarded => Kind::Forwarded,
            WalkyKind::Result => Kind::Result,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walky_card_crosses_the_relay_whole() {
        for kind in [Kind::Sent, Kind::Received, Kind::Forwarded, Kind::Result] {
            let c = Card {
                id: "ab".repeat(16),
                kind,
                from: "web-1/t0-1#ab12".into(),
                name: "n".into(),
                to: "t0-2#cd34".into(),
                sent_at: Some("a".into()),
                logged_at: Some("b".into()),
                body: Some("c".into()),
                outcome: None,
            };
            assert_eq!(card_of(card(c.clone())), c);
        }
    }
}
