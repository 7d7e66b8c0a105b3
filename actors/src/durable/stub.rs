//! TEMPORARY until the sanitizer lands (removed at its merge).
use super::view::*;
use super::wire;
impl View {
    /// Temporary.
    pub fn from_wire(state: wire::State) -> (View, Vec<Dropped>) {
        let b = |b: wire::Button| ButtonView {
            id: b.id,
            label: b.label,
        };
        let it = |i: wire::Item| ItemView {
            id: i.id,
            kind: match i.kind.as_str() {
                "markdown" => ItemKind::Markdown,
                "code" => ItemKind::Code,
                "diff" => ItemKind::Diff,
                "link" => ItemKind::Link,
                "tool" => ItemKind::Tool,
                _ => ItemKind::Text,
            },
            role: match i.role.as_str() {
                "user" => Role::User,
                "tool" => Role::Tool,
                _ => Role::Agent,
            },
            text: i.text,
            url: i.url,
            summary: i.summary,
            output: i.output,
            at: i.at.unwrap_or(0),
        };
        let view = View {
            conversations: state
                .conversations
                .into_iter()
                .map(|c| ConversationView {
                    id: c.id,
                    title: c.title,
                    state: match c.state.as_str() {
                        "working" => ConversationState::Working,
                        "closed" => ConversationState::Closed,
                        _ => ConversationState::Idle,
                    },
                    updated: c.updated.unwrap_or(0),
                    items: c.items.into_iter().map(it).collect(),
                    questions: c
                        .questions
                        .into_iter()
                        .map(|q| QuestionView {
                            id: q.id,
                            title: q.title,
                            reason: q.reason,
                            items: q.items.into_iter().map(it).collect(),
                            options: q.options.into_iter().map(b).collect(),
                            shortened: false,
                            card: None,
                        })
                        .collect(),
                    actions: c.actions.into_iter().map(b).collect(),
                })
                .collect(),
            starters: state.starters.into_iter().map(b).collect(),
        };
        (view, vec![])
    }
}
