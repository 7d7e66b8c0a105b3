//! One line of a Claude Code transcript (`~/.claude/projects/<folder>/<session>.jsonl`) into
//! turns. Lines of other types (summaries, system notes, file snapshots) and meta messages Claude
//! Code adds itself are no turns; a line of an unknown shape gives none.

use serde_json::Value;

use super::{summarize, Kind, RawTurn, Role};

/// The turns of one transcript line.
pub fn turns(line: &Value) -> Vec<RawTurn> {
    let at = line["timestamp"].as_str().map(str::to_owned);
    let turn = |role, kind, text: String| RawTurn {
        role,
        kind,
        text,
        at: at.clone(),
    };
    let content = &line["message"]["content"];
    let mut out = Vec::new();
    match line["type"].as_str() {
        Some("user") if line["isMeta"] != true => {
            if let Some(text) = content.as_str() {
                out.push(turn(Role::User, Kind::Text, text.to_owned()));
            }
            for block in content.as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => {
                        if let Some(text) = block["text"].as_str() {
                            out.push(turn(Role::User, Kind::Text, text.to_owned()));
                        }
                    }
                    Some("tool_result") => {
                        out.push(turn(
                            Role::Tool,
                            Kind::ToolResult,
                            result_text(&block["content"]),
                        ));
                    }
                    _ => {}
                }
            }
        }
        Some("assistant") => {
            for block in content.as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => {
                        if let Some(text) = block["text"].as_str() {
                            out.push(turn(Role::Assistant, Kind::Text, text.to_owned()));
                        }
                    }
                    Some("tool_use") => {
                        let name = block["name"].as_str().unwrap_or("tool");
                        out.push(turn(
                            Role::Assistant,
                            Kind::ToolCall,
                            summarize(name, &block["input"]),
                        ));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out.retain(|t| !t.text.trim().is_empty());
    out
}

/// A tool result's text: a string, or the text blocks of a list.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
