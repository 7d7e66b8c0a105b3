//! Which card changes are new questions (SPEC §10.4: old or replayed events never push). Pure:
//! `now` and the masking come in.
//!
//! A change is a question only if the card is `waiting` and was created less than [`STALE_MS`]
//! ago by its own clock — so a feed that replays old cards, or a member whose clock lags far
//! behind, cannot push them. Whoever follows the cards follows *changes* (never a list), so a
//! restart or a reconnecting member never looks like a new question; the limiter then judges each
//! (machine, card) once.

use crate::cards::card::{Card, CardState, Source};

use super::payload::Payload;

/// A card created longer ago than this is never pushed.
pub const STALE_MS: u64 = 5 * 60 * 1000;

/// A new question, as the push actor judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// What makes it one question: the machine and the card id (a card is one tool call).
    pub key: String,
    /// The machine it is on.
    pub host: String,
    /// The agent's conversation (session id), else its pane, when known.
    pub conversation: Option<String>,
    /// What the push would carry.
    pub payload: Payload,
}

/// The question `card` (a change seen at `now`, Unix ms) is on `machine`, if it is one. The
/// pane's name passes `mask` before the payload reduces it.
pub fn of_card(card: &Card, machine: &str, now: u64, mask: &dyn Fn(&str) -> String) -> Option<Ask> {
    if card.state != CardState::Waiting || now.saturating_sub(card.created) > STALE_MS {
        return None;
    }
    let pane_name = card.pane_name.as_deref().map(mask);
    // A durable agent's question is one question however often its card is replaced (its text
    // changed, the card expired and was asked again): judged once per (agent, question).
    let key = match (&card.source, &card.conversation, &card.question) {
        (Source::Durable(agent), Some(conversation), Some(question)) => {
            format!("{machine}/durable:{agent}/{conversation}/{question}")
        }
        _ => format!("{machine}/{}", card.id),
    };
    Some(Ask {
        key,
        host: machine.to_owned(),
        conversation: card.conversation.clone().or_else(|| card.pane.clone()),
        payload: Payload::card(&card.source, machine, pane_name.as_deref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn card(state: CardState, created: u64) -> Card {
        Card {
            id: "c1".into(),
            machine: "ignored".into(),
            pane: Some("t0-3".into()),
            pane_name: Some("deploy ghp_abcdefghijklmnopqrstuvwxyz0123456789".into()),
            source: Source::Claude,
            conversation: None,
            title: "Claude Code asks to use Bash".into(),
            items: vec![],
            options: vec![],
            created,
            expires: created + 600_000,
            state,
            shown: String::new(),
            question: None,
            shortened: false,
            hidden_characters: false,
            masked: false,
            not_shown: 0,
        }
    }

    #[test]
    fn only_a_fresh_waiting_card_is_a_question() {
        let mask = |s: &str| s.replace("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_a•••");
        let ask = of_card(&card(CardState::Waiting, NOW - 1_000), "web-1", NOW, &mask)
            .expect("a question");
        assert_eq!(ask.key, "web-1/c1");
        assert_eq!(ask.host, "web-1");
        assert_eq!(
            ask.conversation.as_deref(),
            Some("t0-3"),
            "the pane when no session"
        );
        assert_eq!(
            ask.payload.pane.as_deref(),
            Some("deploy ghp_a___"),
            "masked, then reduced"
        );
        assert_eq!(ask.payload.machine, "web-1");
        for state in [
            CardState::Answered,
            CardState::AnsweredElsewhere,
            CardState::Expired,
            CardState::Withdrawn,
        ] {
            assert_eq!(of_card(&card(state, NOW), "m", NOW, &mask), None);
        }
        assert!(of_card(&card(CardState::Waiting, NOW - STALE_MS), "m", NOW, &mask).is_some());
        assert_eq!(
            of_card(
                &card(CardState::Waiting, NOW - STALE_MS - 1),
                "m",
                NOW,
                &mask
            ),
            None,
            "an old card is never pushed"
        );
    }

    #[test]
    fn a_durable_question_is_one_question_whatever_its_card() {
        let mut a = card(CardState::Waiting, NOW);
        a.source = Source::Durable("ops".into());
        a.conversation = Some("c1".into());
        a.question = Some("q1".into());
        let mut b = a.clone();
        b.id = "c2".into();
        let mask = |s: &str| s.to_owned();
        let (ka, kb) = (
            of_card(&a, "m", NOW, &mask).unwrap().key,
            of_card(&b, "m", NOW, &mask).unwrap().key,
        );
        assert_eq!(ka, kb);
        assert_eq!(ka, "m/durable:ops/c1/q1");
    }
}
