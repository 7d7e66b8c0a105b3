//! A scripted stand-in for Anthropic's Messages API on loopback, so the real Claude Code runs here
//! with no network. This is the one mock of the agent tests: the model cannot run here. Everything
//! else — Claude Code, its permission dialog, its hook, the bridge — is real.
//!
//! The script: a request that offers the `Bash` tool and whose last message does not end with a
//! `tool_result` is answered with one `tool_use` of `Bash` running [`ModelApi`]'s command; every
//! other request (the turn after the tool ran, or a side request such as a title) with the text
//! `Done.`. Streamed
//! (`"stream": true`, Server-Sent Events) or not, as asked.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::loopback::{Loopback, Reply, Request};

/// The stand-in; stops when dropped.
pub struct ModelApi {
    server: Loopback,
    command: Arc<Mutex<String>>,
}

impl ModelApi {
    /// Listens on an OS-chosen loopback port; the tool call runs `command`.
    pub fn start(command: &str) -> ModelApi {
        let command = Arc::new(Mutex::new(command.to_owned()));
        let c = Arc::clone(&command);
        let server = Loopback::start(move |request| {
            let command = c.lock().map(|c| c.clone()).unwrap_or_default();
            answer(request, &command)
        });
        ModelApi { server, command }
    }

    /// The command the next tool call runs.
    pub fn set_command(&self, command: &str) {
        *self.command.lock().expect("lock") = command.to_owned();
    }

    /// `ANTHROPIC_BASE_URL` for it.
    pub fn url(&self) -> String {
        self.server.url()
    }
}

/// The reply to one request.
fn answer(http: &Request, command: &str) -> Reply {
    let (path, request) = (http.path.as_str(), &http.body);
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return Reply::json(&json!({"input_tokens": 10}));
    }
    let offers_bash = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
    // The turn after a tool ran ends the exchange; a new prompt — which Claude Code may put in
    // the same message, after the tool's result — asks for the tool again.
    let has_result = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|last| last["content"].as_array())
        .and_then(|blocks| blocks.last())
        .is_some_and(|block| block["type"] == "tool_result");
    let tool = offers_bash && !has_result;
    let input = json!({"command": command, "description": "Run the scripted command"});
    let model = request["model"].as_str().unwrap_or("claude-standin");
    let mut message = json!({
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}
    });
    if request["stream"] != true {
        if tool {
            message["content"] = json!([{"type": "tool_use", "id": "toolu_standin", "name": "Bash", "input": input}]);
            message["stop_reason"] = json!("tool_use");
        } else {
            message["content"] = json!([{"type": "text", "text": "Done."}]);
            message["stop_reason"] = json!("end_turn");
        }
        return Reply::json(&message);
    }
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut event = |name: &str, data: Value| events.push((name.to_owned(), data));
    event(
        "message_start",
        json!({"type": "message_start", "message": message}),
    );
    let (block, delta, stop) = if tool {
        (
            json!({"type": "tool_use", "id": "toolu_standin", "name": "Bash", "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": "Done."}),
            "end_turn",
        )
    };
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    );
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    );
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    Reply::sse(&events)
}
