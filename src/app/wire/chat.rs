//! A pane's chat (SPEC §3.3) between the chat reader's types and the relay's.

use collie_actors::chat::{Agent, Chat, Kind, Role, Turn};
use collie_crew::relay::chat as wire;

/// This machine's pane's chat, for a lead.
pub fn chat(c: Chat) -> wire::Chat {
    wire::Chat {
        agent: c.agent.map(|a| match a {
            Agent::Claude => wire::ChatAgent::Claude,
            Agent::Codex => wire::ChatAgent::Codex,
        }),
        session: c.session,
        turns: c
            .turns
            .into_iter()
            .map(|t| wire::Turn {
                id: t.id,
                role: match t.role {
                    Role::User => wire::TurnRole::User,
                    Role::Assistant => wire::TurnRole::Assistant,
                    Role::Tool => wire::TurnRole::Tool,
                },
                kind: match t.kind {
                    Kind::Text => wire::TurnKind::Text,
                    Kind::ToolCall => wire::TurnKind::ToolCall,
                    Kind::ToolResult => wire::TurnKind::ToolResult,
                },
                text: t.text,
                at: t.at,
            })
            .collect(),
        cursor: c.cursor,
    }
}

/// A member's pane's chat, as this machine's reader would give it (the caller masks it again).
pub fn chat_of(c: wire::Chat) -> Chat {
    Chat {
        agent: c.agent.map(|a| match a {
            wire::ChatAgent::Claude => Agent::Claude,
            wire::ChatAgent::Codex => Agent::Codex,
        }),
        session: c.session,
        turns: c
            .turns
            .into_iter()
            .map(|t| Turn {
                id: t.id,
                role: match t.role {
                    wire::TurnRole::User => Role::User,
                    wire::TurnRole::Assistant => Role::Assistant,
                    wire::TurnRole::Tool => Role::Tool,
                },
                kind: match t.kind {
                    wire::TurnKind::Text => Kind::Text,
                    wire::TurnKind::ToolCall => Kind::ToolCall,
                    wire::TurnKind::ToolResult => Kind::ToolResult,
                },
                text: t.text,
                at: t.at,
            })
            .collect(),
        cursor: c.cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_crosses_the_relay_whole() {
        let roles = [Role::User, Role::Assistant, Role::Tool];
        let kinds = [Kind::Text, Kind::ToolCall, Kind::ToolResult];
        for agent in [None, Some(Agent::Claude), Some(Agent::Codex)] {
            let c = Chat {
                agent,
                session: Some("s".into()),
                turns: roles
                    .into_iter()
                    .zip(kinds)
                    .map(|(role, kind)| Turn {
                        id: "1:0".into(),
                        role,
                        kind,
                        text: "t".into(),
                        at: Some("2026-12-06T09:00:00Z".into()),
                    })
                    .collect(),
                cursor: "s:1".into(),
            };
            assert_eq!(chat_of(chat(c.clone())), c);
        }
    }
}
