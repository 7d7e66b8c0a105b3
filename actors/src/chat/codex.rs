//! One line of a Codex rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`) into turns.
//!
//! Codex writes each exchange twice: as the items it sent to or got from the model
//! (`response_item`, where the user's messages also carry the environment and instructions Codex
//! adds) and as the events its interface showed (`event_msg`). The person's and the agent's
//! words are taken from the events (`user_message`, `agent_message`; in Codex 0.171
//! `item_completed` of a `UserMessage` or `AgentMessage`), the tools from the items
//! (`function_call`, `local_shell_call`, `custom_tool_call` and their outputs), so nothing shows
//! twice and nothing Codex added for the model shows at all.

use serde_json::Value;

use super::{summarize, Kind, RawTurn, Role};

/// The turns of one rollout line.
pub fn turns(line: &Value) -> Vec<RawTurn> {
    let at = line["timestamp"].as_str().map(str::to_owned);
    let p = &line["payload"];
    let one = |role, kind, text: String| {
        vec![RawTurn {
            role,
            kind,
            text,
            at: at.clone(),
        }]
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let out = match (line["type"].as_str(), p["type"].as_str()) {
        (Some("event_msg"), Some("user_message")) => {
            one(Role::User, Kind::Text, text(&p["message"]))
        }
        (Some("event_msg"), Some("agent_message")) => {
            one(Role::Assistant, Kind::Text, text(&p["message"]))
        }
        // Codex 0.171 records what its interface showed as completed items.
        (Some("event_msg"), Some("item_completed")) => match p["item"]["type"].as_str() {
            Some("UserMessage") => one(Role::User, Kind::Text, item_text(&p["item"])),
            Some("AgentMessage") => one(Role::Assistant, Kind::Text, item_text(&p["item"])),
            _ => Vec::new(),
        },
        (Some("response_item"), Some("function_call")) => {
            let name = p["name"].as_str().unwrap_or("tool");
            // The arguments are JSON in a string.
            let args = p["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_else(|| p["arguments"].clone());
            one(Role::Assistant, Kind::ToolCall, summarize(name, &args))
        }
        (Some("response_item"), Some("custom_tool_call")) => {
            let name = p["name"].as_str().unwrap_or("tool");
            one(
                Role::Assistant,
                Kind::ToolCall,
                summarize(name, &p["input"]),
            )
        }
        (Some("response_item"), Some("local_shell_call")) => one(
            Role::Assistant,
            Kind::ToolCall,
            summarize("shell", &p["action"]),
        ),
        (Some("response_item"), Some("function_call_output" | "custom_tool_call_output")) => {
            one(Role::Tool, Kind::ToolResult, output_text(&p["output"]))
        }
        _ => Vec::new(),
    };
    out.into_iter()
        .filter(|t| !t.text.trim().is_empty())
        .collect()
}

/// The text blocks of a completed item, one after another.
fn item_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool output: a string (sometimes JSON holding `output`), or `{content}`.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => o
                .get("output")
                .and_then(Value::as_str)
                .map_or_else(|| s.clone(), str::to_owned),
            _ => s.clone(),
        },
        Value::Object(o) => o
            .get("content")
            .or_else(|| o.get("output"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}
