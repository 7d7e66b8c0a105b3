//! Durable agents (SPEC §10.3) between the Durable actor's types and the relay's.

use collie_actors::durable::agent::{Snapshot, Status};
use collie_actors::durable::receipts::Receipt;
use collie_actors::durable::view::{
    ButtonView, ConversationState, ConversationView, ItemKind, ItemView, QuestionView, Role, View,
};
use collie_actors::durable::wire::Write;
use collie_crew::relay::durable as wire;

use super::{DurableAgent, DurableList};

/// This machine's agents and receipts, for a lead.
pub fn list(list: DurableList) -> wire::DurableList {
    wire::DurableList {
        agents: list.agents.into_iter().map(|a| agent(a.agent)).collect(),
        receipts: list.receipts.into_iter().map(receipt).collect(),
    }
}

/// A member's agents and receipts, named by its crew name `machine` (the caller masks them
/// again).
pub fn list_of(machine: &str, list: wire::DurableList) -> DurableList {
    DurableList {
        agents: list
            .agents
            .into_iter()
            .map(|a| DurableAgent {
                machine: machine.to_owned(),
                agent: agent_of(a),
            })
            .collect(),
        receipts: list
            .receipts
            .into_iter()
            .map(|r| receipt_of(machine, r))
            .collect(),
    }
}

/// A device's write, for a member.
pub fn write(w: Write) -> wire::DurableWrite {
    match w {
        Write::Answer { question, option } => wire::DurableWrite::Answer { question, option },
        Write::Send { text } => wire::DurableWrite::Send { text },
        Write::Abort => wire::DurableWrite::Abort,
        Write::Action { action } => wire::DurableWrite::Action { action },
        Write::Rename { title } => wire::DurableWrite::Rename { title },
        Write::Close => wire::DurableWrite::Close,
        Write::Reopen => wire::DurableWrite::Reopen,
        Write::Starter { starter } => wire::DurableWrite::Starter { starter },
    }
}

/// A write a lead relayed.
pub fn write_of(w: wire::DurableWrite) -> Write {
    match w {
        wire::DurableWrite::Answer { question, option } => Write::Answer { question, option },
        wire::DurableWrite::Send { text } => Write::Send { text },
        wire::DurableWrite::Abort => Write::Abort,
        wire::DurableWrite::Action { action } => Write::Action { action },
        wire::DurableWrite::Rename { title } => Write::Rename { title },
        wire::DurableWrite::Close => Write::Close,
        wire::DurableWrite::Reopen => Write::Reopen,
        wire::DurableWrite::Starter { starter } => Write::Starter { starter },
    }
}

fn agent(s: Snapshot) -> wire::DurableAgent {
    wire::DurableAgent {
        name: s.name,
        transport: s.transport,
        status: match s.status {
            Status::New => wire::AgentStatus::New,
            Status::Up => wire::AgentStatus::Up,
            Status::Down => wire::AgentStatus::Down,
            Status::Refused => wire::AgentStatus::Refused,
            Status::Private => wire::AgentStatus::Private,
            Status::Missing => wire::AgentStatus::Missing,
        },
        error: s.error,
        polled: s.polled,
        conversations: s.view.conversations.into_iter().map(conversation).collect(),
        starters: s.view.starters.into_iter().map(button).collect(),
    }
}

fn agent_of(a: wire::DurableAgent) -> Snapshot {
    Snapshot {
        name: a.name,
        transport: a.transport,
        status: match a.status {
            wire::AgentStatus::New => Status::New,
            wire::AgentStatus::Up => Status::Up,
            wire::AgentStatus::Down => Status::Down,
            wire::AgentStatus::Refused => Status::Refused,
            wire::AgentStatus::Private => Status::Private,
            wire::AgentStatus::Missing => Status::Missing,
        },
        error: a.error,
        polled: a.polled,
        view: View {
            conversations: a.conversations.into_iter().map(conversation_of).collect(),
            starters: a.starters.into_iter().map(button_of).collect(),
        },
    }
}

fn conversation(c: ConversationView) -> wire::Conversation {
    wire::Conversation {
        id: c.id,
        title: c.title,
        state: match c.state {
            ConversationState::Working => wire::ConversationState::Working,
            ConversationState::Idle => wire::ConversationState::Idle,
            ConversationState::Closed => wire::ConversationState::Closed,
        },
        updated: c.updated,
        items: c.items.into_iter().map(item).collect(),
        questions: c
            .questions
            .into_iter()
            .map(|q| wire::Question {
                id: q.id,
                title: q.title,
                reason: q.reason,
                items: q.items.into_iter().map(item).collect(),
                options: q.options.into_iter().map(button).collect(),
                shortened: q.shortened,
                card: q.card,
            })
            .collect(),
        actions: c.actions.into_iter().map(button).collect(),
    }
}

fn conversation_of(c: wire::Conversation) -> ConversationView {
    ConversationView {
        id: c.id,
        title: c.title,
        state: match c.state {
            wire::ConversationState::Working => ConversationState::Working,
            wire::ConversationState::Idle => ConversationState::Idle,
            wire::ConversationState::Closed => ConversationState::Closed,
        },
        updated: c.updated,
        items: c.items.into_iter().map(item_of).collect(),
        questions: c
            .questions
            .into_iter()
            .map(|q| QuestionView {
                id: q.id,
                title: q.title,
                reason: q.reason,
                items: q.items.into_iter().map(item_of).collect(),
                options: q.options.into_iter().map(button_of).collect(),
                shortened: q.shortened,
                card: q.card,
            })
            .collect(),
        actions: c.actions.into_iter().map(button_of).collect(),
    }
}

fn item(i: ItemView) -> wire::DurableItem {
    wire::DurableItem {
        id: i.id,
        kind: match i.kind {
            ItemKind::Text => wire::ItemKind::Text,
            ItemKind::Markdown => wire::ItemKind::Markdown,
            ItemKind::Code => wire::ItemKind::Code,
            ItemKind::Diff => wire::ItemKind::Diff,
            ItemKind::Link => wire::ItemKind::Link,
            ItemKind::Tool => wire::ItemKind::Tool,
        },
        role: match i.role {
            Role::User => wire::ItemRole::User,
            Role::Agent => wire::ItemRole::Agent,
            Role::Tool => wire::ItemRole::Tool,
        },
        text: i.text,
        url: i.url,
        summary: i.summary,
        output: i.output,
        at: i.at,
    }
}

fn item_of(i: wire::DurableItem) -> ItemView {
    ItemView {
        id: i.id,
        kind: match i.kind {
            wire::ItemKind::Text => ItemKind::Text,
            wire::ItemKind::Markdown => ItemKind::Markdown,
            wire::ItemKind::Code => ItemKind::Code,
            wire::ItemKind::Diff => ItemKind::Diff,
            wire::ItemKind::Link => ItemKind::Link,
            wire::ItemKind::Tool => ItemKind::Tool,
        },
        role: match i.role {
            wire::ItemRole::User => Role::User,
            wire::ItemRole::Agent => Role::Agent,
            wire::ItemRole::Tool => Role::Tool,
        },
        text: i.text,
        url: i.url,
        summary: i.summary,
        output: i.output,
        at: i.at,
    }
}

fn button(b: ButtonView) -> wire::Button {
    wire::Button {
        id: b.id,
        label: b.label,
    }
}

fn button_of(b: wire::Button) -> ButtonView {
    ButtonView {
        id: b.id,
        label: b.label,
    }
}

fn receipt(r: Receipt) -> wire::DurableReceipt {
    wire::DurableReceipt {
        at: r.at,
        agent: r.agent,
        conversation: r.conversation,
        verb: r.verb,
        choice: r.choice,
        device: r.device,
        request_id: r.request_id,
    }
}

fn receipt_of(machine: &str, r: wire::DurableReceipt) -> Receipt {
    Receipt {
        at: r.at,
        machine: machine.to_owned(),
        agent: r.agent,
        conversation: r.conversation,
        verb: r.verb,
        choice: r.choice,
        device: r.device,
        request_id: r.request_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_and_writes_cross_the_relay_whole_and_are_named_by_the_member() {
        let button = || ButtonView {
            id: "b".into(),
            label: "B".into(),
        };
        let kinds = [
            ItemKind::Text,
            ItemKind::Markdown,
            ItemKind::Code,
            ItemKind::Diff,
            ItemKind::Link,
            ItemKind::Tool,
        ];
        let roles = [Role::User, Role::Agent, Role::Tool];
        let items: Vec<ItemView> = kinds
            .into_iter()
            .zip(roles.into_iter().cycle())
            .map(|(kind, role)| ItemView {
                id: "i".into(),
                kind,
                role,
                text: "t".into(),
                url: "u".into(),
                summary: "s".into(),
                output: "o".into(),
                at: 1,
            })
            .collect();
        let states = [
            ConversationState::Working,
            ConversationState::Idle,
            ConversationState::Closed,
        ];
        let statuses = [
            Status::New,
            Status::Up,
            Status::Down,
            Status::Refused,
            Status::Private,
            Status::Missing,
        ];
        let agents: Vec<DurableAgent> = statuses
            .into_iter()
            .map(|status| DurableAgent {
                machine: "local".into(),
                agent: Snapshot {
                    name: "a".into(),
                    transport: "socket".into(),
                    status,
                    error: Some("e".into()),
                    polled: Some(2),
                    view: View {
                        conversations: states
                            .into_iter()
                            .map(|state| ConversationView {
                                id: "c".into(),
                                title: "T".into(),
                                state,
                                updated: 3,
                                items: items.clone(),
                                questions: vec![QuestionView {
                                    id: "q".into(),
                                    title: "Q".into(),
                                    reason: "r".into(),
                                    items: items.clone(),
                                    options: vec![button()],
                                    shortened: true,
                                    card: Some("card".into()),
                                }],
                                actions: vec![button()],
                            })
                            .collect(),
                        starters: vec![button()],
                    },
                },
            })
            .collect();
        let receipt = Receipt {
            at: 5,
            machine: "local".into(),
            agent: "a".into(),
            conversation: "c".into(),
            verb: "send".into(),
            choice: Some("x".into()),
            device: "phone".into(),
            request_id: "r".into(),
        };
        let sent = list(DurableList {
            agents: agents.clone(),
            receipts: vec![receipt.clone()],
        });
        let read = list_of("web-1", sent);
        let named: Vec<DurableAgent> = agents
            .into_iter()
            .map(|a| DurableAgent {
                machine: "web-1".into(),
                ..a
            })
            .collect();
        assert_eq!(read.agents, named);
        assert_eq!(
            read.receipts,
            vec![Receipt {
                machine: "web-1".into(),
                ..receipt
            }]
        );

        let writes = [
            Write::Answer {
                question: "q".into(),
                option: "o".into(),
            },
            Write::Send { text: "t".into() },
            Write::Abort,
            Write::Action { action: "a".into() },
            Write::Rename { title: "t".into() },
            Write::Close,
            Write::Reopen,
            Write::Starter {
                starter: "s".into(),
            },
        ];
        for w in writes {
            assert_eq!(write_of(write(w.clone())), w);
        }
    }
}
