//! A scripted stand-in for Anthropic's Messages API on loopback, so the real Claude Code runs here
//! with no network. This is the one mock of the agent tests: the model cannot run here. Everything
//! else — Claude Code, its permission dialog, its hook, the bridge — is real.
//!
//! The script: a request that offers the `Bash` tool and whose last message does not end with a
//! `tool_result` is answered with one `tool_use` of `Bash` running [`ModelApi`]'s command; every
//! other request (the turn after the tool ran, or a side request such as a title) with the text
//! `Done.`. Streamed
//! (`"stream": true`, Server-Sent Events) or not, as asked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};

/// The stand-in; stops when dropped.
pub struct ModelApi {
    pub port: u16,
    command: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ModelApi {
    /// Listens on an OS-chosen loopback port; the tool call runs `command`.
    pub fn start(command: &str) -> ModelApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the model stand-in");
        let port = listener.local_addr().expect("addr").port();
        let command = Arc::new(Mutex::new(command.to_owned()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (Arc::clone(&command), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            // Drop wakes this accept with a connection of its own after setting `stop`.
            while let Ok((stream, _)) = listener.accept() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let c = Arc::clone(&c);
                std::thread::spawn(move || serve(stream, &c));
            }
        });
        ModelApi {
            port,
            command,
            stop,
            thread: Some(thread),
        }
    }

    /// The command the next tool call runs.
    pub fn set_command(&self, command: &str) {
        *self.command.lock().expect("lock") = command.to_owned();
    }

    /// `ANTHROPIC_BASE_URL` for it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ModelApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves requests on one keep-alive connection until the client closes it.
fn serve(stream: TcpStream, command: &Mutex<String>) {
    let Ok(mut write) = stream.try_clone() else {
        return;
    };
    let mut read = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if read.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if read.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length.min(64 * 1024 * 1024)];
        if read.read_exact(&mut body).is_err() {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/");
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let command = command.lock().map(|c| c.clone()).unwrap_or_default();
        let (content_type, reply) = answer(path, &request, &command);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if write.write_all(head.as_bytes()).is_err() || write.write_all(&reply).is_err() {
            return;
        }
    }
}

/// The reply to one request: (content type, body).
fn answer(path: &str, request: &Value, command: &str) -> (&'static str, Vec<u8>) {
    if !path.starts_with("/v1/messages") || path.contains("count_tokens") {
        return (
            "application/json",
            json!({"input_tokens": 10}).to_string().into_bytes(),
        );
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
        return ("application/json", message.to_string().into_bytes());
    }
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
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
    ("text/event-stream", out.into_bytes())
}
