//! A scripted stand-in for OpenAI's Responses API on loopback, so the real Codex runs here with no
//! network (a `model_provider` with `base_url` pointing here and `wire_api = "responses"`). Like
//! `model_api` for Claude Code, this is the one mock of the agent tests: the model cannot run here.
//!
//! What Codex reads, from its source (openai/codex, `codex-rs/codex-api/src/sse/responses.rs`): a
//! `POST …/responses` with `"stream": true` answered as Server-Sent Events whose `data` is a JSON
//! object with a `type`; it acts on `response.output_item.done` (an `item` as in the API's output:
//! a `message` with `output_text` content, or a `function_call` with `name`, `arguments` as a JSON
//! string and `call_id`) and needs a `response.completed` (with the response's `id` and `usage`)
//! before the stream ends, or it treats the turn as failed and retries.
//!
//! The script: a request that offers the `exec_command` tool (Codex's shell) and whose last input
//! item is not a `function_call_output` is answered with one `exec_command` call of
//! [`ResponsesApi`]'s command, asking to run it outside the sandbox (`sandbox_permissions:
//! "require_escalated"` with a `justification`: with `approval_policy = "on-request"` that is what
//! makes Codex ask for approval, and what runs its `PermissionRequest` hook). Every other request —
//! the turn after the command's output came back, or a side request such as the title Codex asks
//! for with a JSON schema and no tools — gets text: `Done.`, or `{"title": …}` when a schema asks
//! for one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::loopback::{Loopback, Reply, Request};

/// The stand-in; stops when dropped.
pub struct ResponsesApi {
    server: Loopback,
    command: Arc<Mutex<String>>,
}

impl ResponsesApi {
    /// Listens on an OS-chosen loopback port; the tool call runs `command`.
    pub fn start(command: &str) -> ResponsesApi {
        let command = Arc::new(Mutex::new(command.to_owned()));
        let c = Arc::clone(&command);
        // Each reply's ids are new, as the real API's are.
        let serial = AtomicU64::new(0);
        let server = Loopback::start(move |request| {
            let command = c.lock().map(|c| c.clone()).unwrap_or_default();
            answer(request, &command, serial.fetch_add(1, Ordering::Relaxed))
        });
        ResponsesApi { server, command }
    }

    /// The command the next tool call runs.
    pub fn set_command(&self, command: &str) {
        *self.command.lock().expect("lock") = command.to_owned();
    }

    /// The provider's `base_url` for it.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }
}

/// The reply to one request.
fn answer(http: &Request, command: &str, serial: u64) -> Reply {
    let request = &http.body;
    if http.method != "POST" || !http.path.ends_with("/responses") {
        // Anything else Codex may ask (a model list): nothing to offer.
        return Reply::json(&json!({"data": [], "models": []}));
    }
    let offers_shell = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "exec_command"));
    let after_output = request["input"]
        .as_array()
        .and_then(|items| items.last())
        .is_some_and(|last| last["type"] == "function_call_output");
    let id = format!("resp_standin_{serial}");
    let item = if offers_shell && !after_output {
        let arguments = json!({
            "cmd": command,
            "sandbox_permissions": "require_escalated",
            "justification": "Run the scripted command",
        });
        json!({
            "type": "function_call",
            "id": format!("fc_standin_{serial}"),
            "call_id": format!("call_standin_{serial}"),
            "name": "exec_command",
            "arguments": arguments.to_string(),
        })
    } else {
        let asks_title = request["text"]["format"]["schema"]["properties"]["title"].is_object();
        let text = if asks_title {
            json!({"title": "Scripted turn"}).to_string()
        } else {
            "Done.".to_owned()
        };
        json!({
            "type": "message",
            "id": format!("msg_standin_{serial}"),
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })
    };
    let event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        (kind.to_owned(), data)
    };
    Reply::sse(&[
        event(
            "response.created",
            json!({"response": {"id": id, "status": "in_progress"}}),
        ),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        event(
            "response.completed",
            json!({"response": {"id": id, "status": "completed", "usage": {
                "input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }}}),
        ),
    ])
}
