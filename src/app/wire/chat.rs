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
