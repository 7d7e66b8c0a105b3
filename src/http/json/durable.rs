//! Durable agents as the phone API answers them (`GET /api/durable`, SPEC §10.3). Empty texts and
//! absent values are left out where the phone expects them left out.

use collie_actors::durable::agent::Status;
use collie_actors::durable::receipts::Receipt as AppReceipt;
use collie_actors::durable::view::{
    ButtonView, ConversationState, ConversationView, ItemKind, ItemView, QuestionView, Role,
};
use serde::Serialize;

use crate::app::durable::{DurableAgent as AppAgent, DurableList as AppList};

/// Every agent of the crew and the receipts of the phone's writes.
#[derive(Debug, Serialize)]
pub struct DurableList {
    agents: Vec<Agent>,
    receipts: Vec<Receipt>,
}

/// One agent: where it is attached, how it is doing, its state.
#[derive(Debug, Serialize)]
pub struct Agent {
    machine: String,
    name: String,
    transport: String,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    polled: Option<u64>,
    conversations: Vec<Conversation>,
    starters: Vec<Button>,
}

/// One conversation.
#[derive(Debug, Serialize)]
pub struct Conversation {
    id: String,
    title: String,
    state: &'static str,
    updated: u64,
    items: Vec<Item>,
    questions: Vec<Question>,
    actions: Vec<Button>,
}

/// One item.
#[derive(Debug, Serialize)]
pub struct Item {
    id: String,
    kind: &'static str,
    role: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    text: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    output: String,
    at: u64,
}

/// An open question.
#[derive(Debug, Serialize)]
pub struct Question {
    id: String,
    title: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    reason: String,
    items: Vec<Item>,
    options: Vec<Button>,
    shortened: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    card: Option<String>,
}

/// An option, an action or a starter.
#[derive(Debug, Serialize)]
pub struct Button {
    id: String,
    label: String,
}

/// One write a device made.
#[derive(Debug, Serialize)]
pub struct Receipt {
    at: u64,
    machine: String,
    agent: String,
    conversation: String,
    verb: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    choice: Option<String>,
    device: String,
    request_id: String,
}

impl From<AppList> for DurableList {
    fn from(list: AppList) -> Self {
        DurableList {
            agents: list.agents.into_iter().map(Agent::from).collect(),
            receipts: list
                .receipts
                .into_iter()
                .map(|r: AppReceipt| Receipt {
                    at: r.at,
                    machine: r.machine,
                    agent: r.agent,
                    conversation: r.conversation,
                    verb: r.verb,
                    choice: r.choice,
                    device: r.device,
                    request_id: r.request_id,
                })
                .collect(),
        }
    }
}

impl From<AppAgent> for Agent {
    fn from(a: AppAgent) -> Self {
        let s = a.agent;
        Agent {
            machine: a.machine,
            name: s.name,
            transport: s.transport,
            status: match s.status {
                Status::New => "new",
                Status::Up => "up",
                Status::Down => "down",
                Status::Refused => "refused",
                Status::Private => "private",
                Status::Missing => "missing",
            },
            error: s.error,
            polled: s.polled,
            conversations: s.view.conversations.into_iter().map(conversation).collect(),
            starters: s.view.starters.into_iter().map(button).collect(),
        }
    }
}

fn conversation(c: ConversationView) -> Conversation {
    Conversation {
        id: c.id,
        title: c.title,
        state: match c.state {
            ConversationState::Working => "working",
            ConversationState::Idle => "idle",
            ConversationState::Closed => "closed",
        },
        updated: c.updated,
        items: c.items.into_iter().map(item).collect(),
        questions: c.questions.into_iter().map(question).collect(),
        actions: c.actions.into_iter().map(button).collect(),
    }
}

fn question(q: QuestionView) -> Question {
    Question {
        id: q.id,
        title: q.title,
        reason: q.reason,
        items: q.items.into_iter().map(item).collect(),
        options: q.options.into_iter().map(button).collect(),
        shortened: q.shortened,
        card: q.card,
    }
}

fn item(i: ItemView) -> Item {
    Item {
        id: i.id,
        kind: match i.kind {
            ItemKind::Text => "text",
            ItemKind::Markdown => "markdown",
            ItemKind::Code => "code",
            ItemKind::Diff => "diff",
            ItemKind::Link => "link",
            ItemKind::Tool => "tool",
        },
        role: match i.role {
            Role::User => "user",
            Role::Agent => "agent",
            Role::Tool => "tool",
        },
        text: i.text,
        url: i.url,
        summary: i.summary,
        output: i.output,
        at: i.at,
    }
}

fn button(b: ButtonView) -> Button {
    Button {
        id: b.id,
        label: b.label,
    }
}

#[cfg(test)]
mod tests {
    use collie_actors::durable::agent::Snapshot;
    use collie_actors::durable::view::View;

    use super::*;

    fn item_of(kind: ItemKind, role: Role, full: bool) -> ItemView {
        let text = |s: &str| if full { s.to_owned() } else { String::new() };
        ItemView {
            id: "i1".into(),
            kind,
            role,
            text: text("t"),
            url: text("https://x"),
            summary: text("s"),
            output: text("o"),
            at: 4,
        }
    }

    #[test]
    fn a_durable_list_is_the_json_it_was() {
        let statuses = [
            Status::New,
            Status::Up,
            Status::Down,
            Status::Refused,
            Status::Private,
            Status::Missing,
        ];
        let kinds = [
            ItemKind::Text,
            ItemKind::Markdown,
            ItemKind::Code,
            ItemKind::Diff,
            ItemKind::Link,
            ItemKind::Tool,
        ];
        let roles = [Role::User, Role::Agent, Role::Tool];
        let states = [
            ConversationState::Working,
            ConversationState::Idle,
            ConversationState::Closed,
        ];
        for full in [false, true] {
            let button = || ButtonView {
                id: "b".into(),
                label: "B".into(),
            };
            let conversations: Vec<ConversationView> = states
                .iter()
                .map(|state| ConversationView {
                    id: "c".into(),
                    title: "T".into(),
                    state: *state,
                    updated: 9,
                    items: kinds
                        .iter()
                        .zip(roles.iter().cycle())
                        .map(|(k, r)| item_of(*k, *r, full))
                        .collect(),
                    questions: vec![QuestionView {
                        id: "q".into(),
                        title: "Q".into(),
                        reason: if full { "why".into() } else { String::new() },
                        items: vec![item_of(ItemKind::Code, Role::Agent, full)],
                        options: vec![button()],
                        shortened: full,
                        card: full.then(|| "card".to_owned()),
                    }],
                    actions: vec![button()],
                })
                .collect();
            let list = AppList {
                agents: statuses
                    .iter()
                    .map(|status| AppAgent {
                        machine: "web-1".into(),
                        agent: Snapshot {
                            name: "a".into(),
                            transport: "socket".into(),
                            status: *status,
                            error: full.then(|| "down".to_owned()),
                            polled: full.then_some(5),
                            view: View {
                                conversations: if *status == Status::Up {
                                    conversations.clone()
                                } else {
                                    vec![]
                                },
                                starters: vec![button()],
                            },
                        },
                    })
                    .collect(),
                receipts: vec![AppReceipt {
                    at: 1,
                    machine: "local".into(),
                    agent: "a".into(),
                    conversation: "c".into(),
                    verb: "send".into(),
                    choice: full.then(|| "x".to_owned()),
                    device: "phone".into(),
                    request_id: "r".into(),
                }],
            };
            let before = serde_json::to_string(&list).unwrap();
            assert_eq!(
                serde_json::to_string(&DurableList::from(list)).unwrap(),
                before
            );
        }
    }
}
