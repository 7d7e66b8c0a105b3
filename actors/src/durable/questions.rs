//! Which of an agent's open questions have a card, and what to do after a read (pure).
//!
//! Each open question `(conversation, question)` is asked by exactly one waiting card. After a
//! read, [`Questions::plan`] compares the questions now open with the cards asked so far:
//!
//! - a new question → open a card;
//! - a question whose shown text changed → withdraw its card and open a new one (a tap answers
//!   what the person read, never a moved question);
//! - a question that is gone → its card becomes `answered elsewhere` (answered in the agent's own
//!   interface, or withdrawn by it);
//! - a question whose card the Cards actor no longer knows (it restarted, or the card expired)
//!   → open a new card. A card that was answered is still known (a receipt) and is not asked
//!   again: the agent is told the answer before the card is released, so a question that stays
//!   open after it is the agent's own business.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::cards::card::{CardOption, CardState, Item, NewCard, Source};

use super::view::{ItemKind, ItemView, QuestionView, View};

/// A question: its conversation's id and its own.
pub type Key = (String, String);

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Open a card for this question, then call [`Questions::opened`].
    Open {
        /// The question.
        key: Key,
        /// Its fingerprint.
        fingerprint: String,
        /// The card.
        card: Box<NewCard>,
    },
    /// End this card.
    Close {
        /// Card id.
        card: String,
        /// How.
        state: CardState,
    },
}

#[derive(Debug, Clone)]
struct Asked {
    card: String,
    fingerprint: String,
}

/// The cards asked for one agent's questions.
#[derive(Debug, Default)]
pub struct Questions {
    asked: HashMap<Key, Asked>,
}

impl Questions {
    /// The effects of reading `view` of agent `agent` on `machine`; `known(card)` says whether
    /// the Cards actor still knows a card (waiting, or answered with a receipt).
    pub fn plan(
        &mut self,
        agent: &str,
        machine: &str,
        view: &View,
        known: &dyn Fn(&str) -> bool,
    ) -> Vec<Effect> {
        let mut effects = Vec::new();
        let mut open: Vec<Key> = Vec::new();
        for conversation in &view.conversations {
            for question in &conversation.questions {
                let key = (conversation.id.clone(), question.id.clone());
                let fingerprint = fingerprint(question);
                open.push(key.clone());
                match self.asked.get(&key) {
                    Some(a) if a.fingerprint == fingerprint && known(&a.card) => continue,
                    Some(a) if a.fingerprint != fingerprint => effects.push(Effect::Close {
                        card: a.card.clone(),
                        state: CardState::Withdrawn,
                    }),
                    _ => {}
                }
                self.asked.remove(&key);
                effects.push(Effect::Open {
                    key,
                    fingerprint,
                    card: Box::new(card(agent, machine, &conversation.id, question)),
                });
            }
        }
        let gone: Vec<Key> = self
            .asked
            .keys()
            .filter(|k| !open.contains(k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(a) = self.asked.remove(&key) {
                effects.push(Effect::Close {
                    card: a.card,
                    state: CardState::AnsweredElsewhere,
                });
            }
        }
        effects
    }

    /// A card was opened for `key`.
    pub fn opened(&mut self, key: Key, fingerprint: String, card: String) {
        self.asked.insert(key, Asked { card, fingerprint });
    }

    /// The question card `card` asks.
    pub fn find(&self, card: &str) -> Option<&Key> {
        self.asked
            .iter()
            .find(|(_, a)| a.card == card)
            .map(|(k, _)| k)
    }

    /// The card asking `key`.
    pub fn card_of(&self, key: &Key) -> Option<&str> {
        self.asked.get(key).map(|a| a.card.as_str())
    }

    /// Every card asked (to withdraw them when the agent is detached).
    pub fn cards(&self) -> impl Iterator<Item = &str> {
        self.asked.values().map(|a| a.card.as_str())
    }
}

/// The SHA-256 of what the card of `question` shows.
fn fingerprint(question: &QuestionView) -> String {
    let mut q = question.clone();
    q.card = None;
    let json = serde_json::to_vec(&q).unwrap_or_default();
    hex::encode(Sha256::digest(&json))
}

/// The card of `question`: the reason first, then what is decided; the options as given.
pub fn card(agent: &str, machine: &str, conversation: &str, question: &QuestionView) -> NewCard {
    let mut items = Vec::new();
    if !question.reason.is_empty() {
        items.push(Item::Text {
            text: question.reason.clone(),
        });
    }
    items.extend(question.items.iter().map(item));
    NewCard {
        machine: machine.to_owned(),
        pane: None,
        pane_name: None,
        source: Source::Durable(agent.to_owned()),
        conversation: Some(conversation.to_owned()),
        title: question.title.clone(),
        items,
        options: question
            .options
            .iter()
            .map(|o| CardOption {
                id: o.id.clone(),
                label: o.label.clone(),
            })
            .collect(),
        question: Some(question.id.clone()),
        shortened: question.shortened,
        masked: false,
    }
}

fn item(item: &ItemView) -> Item {
    match item.kind {
        ItemKind::Text | ItemKind::Markdown => Item::Text {
            text: item.text.clone(),
        },
        ItemKind::Code => Item::Code {
            text: item.text.clone(),
        },
        ItemKind::Diff => Item::Diff {
            text: item.text.clone(),
        },
        ItemKind::Link => Item::Link {
            url: item.url.clone(),
        },
        ItemKind::Tool => Item::Code {
            text: [item.summary.as_str(), item.output.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::view::{ButtonView, ConversationView};

    fn view(questions: &[(&str, &str, &str)]) -> View {
        let mut conversations: Vec<ConversationView> = Vec::new();
        for (conv, id, title) in questions {
            let q = QuestionView {
                id: (*id).into(),
                title: (*title).into(),
                options: vec![ButtonView {
                    id: "yes".into(),
                    label: "Yes".into(),
                }],
                ..QuestionView::default()
            };
            match conversations.iter_mut().find(|c| c.id == *conv) {
                Some(c) => c.questions.push(q),
                None => conversations.push(ConversationView {
                    id: (*conv).into(),
                    questions: vec![q],
                    ..ConversationView::default()
                }),
            }
        }
        View {
            conversations,
            starters: vec![],
        }
    }

    /// Applies the plan as the actor would, naming cards c1, c2, …
    fn apply(q: &mut Questions, effects: &[Effect], next: &mut u32) -> Vec<String> {
        let mut log = Vec::new();
        for e in effects {
            match e {
                Effect::Open {
                    key,
                    fingerprint,
                    card,
                } => {
                    *next += 1;
                    assert_eq!(card.source, Source::Durable("ops".into()));
                    assert_eq!(card.question.as_deref(), Some(key.1.as_str()));
                    q.opened(key.clone(), fingerprint.clone(), format!("c{next}"));
                    log.push(format!("open c{next} {}", key.1));
                }
                Effect::Close { card, state } => log.push(format!("close {card} {state:?}")),
            }
        }
        log
    }

    #[test]
    fn new_changed_gone_and_forgotten_questions() {
        let mut q = Questions::default();
        let mut n = 0;
        let all = |_: &str| true;
        let e = q.plan("ops", "m", &view(&[("a", "q1", "Deploy?")]), &all);
        assert_eq!(apply(&mut q, &e, &mut n), ["open c1 q1"]);
        let e = q.plan("ops", "m", &view(&[("a", "q1", "Deploy?")]), &all);
        assert!(e.is_empty(), "an unchanged question keeps its card");
        let e = q.plan("ops", "m", &view(&[("a", "q1", "Deploy now?")]), &all);
        assert_eq!(
            apply(&mut q, &e, &mut n),
            ["close c1 Withdrawn", "open c2 q1"]
        );
        assert_eq!(q.find("c2"), Some(&("a".to_owned(), "q1".to_owned())));
        let e = q.plan("ops", "m", &view(&[("a", "q1", "Deploy now?")]), &|_| false);
        assert_eq!(
            apply(&mut q, &e, &mut n),
            ["open c3 q1"],
            "a forgotten card is asked again"
        );
        let e = q.plan("ops", "m", &view(&[]), &all);
        assert_eq!(apply(&mut q, &e, &mut n), ["close c3 AnsweredElsewhere"]);
        assert_eq!(q.cards().count(), 0);
    }
}
