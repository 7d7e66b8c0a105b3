//! A pane's chat as the phone API answers it (`GET /api/panes/{m}/{p}/chat`, SPEC §3.3).

use collie_actors::chat::{Agent, Chat as AppChat, Kind, Role};
use serde::Serialize;

/// The chat: its agent (`claude`, `codex` or `null`), the session, the turns, the next cursor.
#[derive(Debug, Serialize)]
pub struct Chat {
    agent: Option<&'static str>,
    session: Option<String>,
    turns: Vec<Turn>,
    cursor: String,
}

/// One turn.
#[derive(Debug, Serialize)]
pub struct Turn {
    id: String,
    /// `user`, `assistant` or `tool`.
    role: &'static str,
    /// `text`, `tool_call` or `tool_result`.
    kind: &'static str,
    text: String,
    at: Option<String>,
}

impl From<AppChat> for Chat {
    fn from(c: AppChat) -> Self {
        Chat {
            agent: c.agent.map(|a| match a {
                Agent::Claude => "claude",
                Agent::Codex => "codex",
            }),
            session: c.session,
            turns: c
                .turns
                .into_iter()
                .map(|t| Turn {
                    id: t.id,
                    role: match t.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::Tool => "tool",
                    },
                    kind: match t.kind {
                        Kind::Text => "text",
                        Kind::ToolCall => "tool_call",
                        Kind::ToolResult => "tool_result",
                    },
                    text: t.text,
                    at: t.at,
                })
                .collect(),
            cursor: c.cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use collie_actors::chat::Turn as AppTurn;

    use super::*;

    #[test]
    fn a_chat_is_the_json_it_was() {
        let roles = [Role::User, Role::Assistant, Role::Tool];
        let kinds = [Kind::Text, Kind::ToolCall, Kind::ToolResult];
        for agent in [None, Some(Agent::Claude), Some(Agent::Codex)] {
            let chat = AppChat {
                agent,
                session: agent.map(|_| "s-1".to_owned()),
                turns: roles
                    .iter()
                    .zip(kinds)
                    .map(|(role, kind)| AppTurn {
                        id: "12:0".into(),
                        role: *role,
                        kind,
                        text: "hi\n\"there\"".into(),
                        at: Some("2026-12-06T09:00:00Z".into()),
                    })
                    .collect(),
                cursor: "s-1:12".into(),
            };
            let before = serde_json::to_string(&chat).unwrap();
            assert_eq!(serde_json::to_string(&Chat::from(chat)).unwrap(), before);
        }
    }
}
