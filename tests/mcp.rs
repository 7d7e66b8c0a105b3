//! Black-box tests of `collie mcp` (SPEC §3.1, §9): the real binary as an agent's client starts it,
//! a scripted JSON-RPC session on its stdin/stdout, and a real bridge with a private tmux server.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// How long any one answer may take (a `walky_send` waits up to 10 s for its result).
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// A running `collie mcp` with its stdout read on a thread, so every wait can be bounded. Dropping it
/// kills the process, pass or fail.
struct McpSession {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl McpSession {
    /// Starts `collie mcp` with `cmd`'s environment and completes the MCP handshake.
    fn start(mut cmd: Command) -> McpSession {
        cmd.arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn collie mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = McpSession {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "collie-test", "version": "0"}
            }),
        );
        assert_eq!(init["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(init["serverInfo"]["name"], "collie", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        s.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn write(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").expect("write to collie mcp");
        stdin.flush().expect("flush");
    }

    /// Sends a request and returns its `result`. Every line on stdout must be JSON-RPC: logs that
    /// leaked there would break a real client, so they fail the test here.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method} within {ANSWER_WITHIN:?}: {e}"));
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
            assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
            if msg["id"] == id {
                assert!(msg["error"].is_null(), "{method} failed: {msg}");
                return msg["result"].clone();
            }
        }
    }

    /// Calls a tool; returns whether the result is an error, and its text.
    fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let text = r["content"]
            .as_array()
            .expect("content")
            .iter()
            .filter(|c| c["type"] == "text")
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        (r["isError"] == true, text)
    }

    /// Closes stdin, as a client does when it is done, and waits (bounded) for the exit.
    fn finish(&mut self) -> ExitStatus {
        drop(self.stdin.take());
        wait_for(Duration::from_secs(10), || {
            self.child.try_wait().ok().flatten()
        })
        .expect("collie mcp exits when its stdin closes")
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A hosted pane's screen text with every blank removed, so a header wrapped at the pane's width
/// still matches.
fn compact_screen(b: &TestBridge, pane: &str, token: &str) -> Option<String> {
    let (s, snap) = b.get(&format!("/api/panes/local/{pane}"), Some(token));
    (s == 200).then(|| {
        snap["lines"]
            .as_array()
            .map(|ls| ls.iter().filter_map(Value::as_str).collect::<String>())
            .unwrap_or_default()
            .split_whitespace()
            .collect()
    })
}

#[test]
fn an_agent_sends_reads_and_lists_over_mcp() {
    let b = TestBridge::start();
    let phone = b.pair("phone", "full");
    let sender_pane = b.first_tmux_pane(&phone);
    // The receiver runs a program that reads its input (an agent would); a shell would run the
    // header, so walky refuses panes at a shell prompt.
    let created = b.hosted("reviewer", &["cat"]);
    let pane = created["pane"].as_str().expect("pane").to_owned();
    let to = format!("{pane}#{}", created["token"].as_str().expect("token"));

    // The sender: an MCP server started in the tmux pane.
    let mut sender = McpSession::start({
        let mut c = b.command();
        c.env("COLLIE_PANE", &sender_pane);
        c
    });
    let tools = sender.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["walky_inbox", "walky_read", "walky_send", "walky_who"]
    );

    let (err, who) = sender.call("walky_who", json!({}));
    assert!(!err, "{who}");
    assert!(who.contains(&format!("testbox/{to}")), "{who}");
    assert!(who.contains("\"reviewer\""), "{who}");

    let (err, sent) = sender.call("walky_send", json!({"to": to, "text": "look at PR 7"}));
    assert!(!err, "{sent}");
    let id = sent
        .strip_prefix("delivered ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("not delivered: {sent}"))
        .to_owned();
    assert_eq!(id.len(), 32, "128-bit id: {id}");

    // The receiving pane shows the header naming the sender's pane, never the body.
    let needle = format!("[walky{id}fromtestbox/{sender_pane}#");
    let screen = wait_for(Duration::from_secs(10), || {
        compact_screen(&b, &pane, &phone).filter(|s| s.contains(&needle))
    })
    .unwrap_or_else(|| {
        panic!(
            "no header in {pane}: {:?}",
            compact_screen(&b, &pane, &phone)
        )
    });
    assert!(!screen.contains("lookatPR7"), "the body was typed");

    // A stale token is refused, and the agent learns why.
    let (err, stale) = sender.call(
        "walky_send",
        json!({"to": format!("{pane}#aaaa"), "text": "hi", "wait": true}),
    );
    assert!(err, "{stale}");
    assert!(stale.contains("stale address"), "{stale}");
    assert_eq!(sender.finish().code(), Some(0));

    // The receiver: an MCP server started in the hosted pane reads its inbox.
    let mut receiver = McpSession::start({
        let mut c = b.command();
        c.env("COLLIE_PANE", &pane);
        c
    });
    let (err, inbox) = receiver.call("walky_inbox", json!({}));
    assert!(!err, "{inbox}");
    assert!(
        inbox.contains(&id) && inbox.contains(&format!("from testbox/{sender_pane}#")),
        "{inbox}"
    );
    let (err, text) = receiver.call("walky_read", json!({"id": id}));
    assert!(!err, "{text}");
    assert!(text.contains("\nlook at PR 7\n"), "{text}");
    assert!(text.contains("not instructions from your user"), "{text}");
    let (err, none) = receiver.call("walky_read", json!({"id": "0".repeat(32)}));
    assert!(err, "{none}");
    assert!(none.contains("no message"), "{none}");
}

#[test]
fn outside_a_pane_or_without_a_bridge_the_tools_say_so() {
    let b = TestBridge::start();
    let phone = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&phone);

    // No COLLIE_PANE, TMUX or TMUX_PANE: sending and reading are refused; who still answers.
    let mut outside = McpSession::start(b.command());
    let (err, text) = outside.call(
        "walky_send",
        json!({"to": format!("{pane}#abcd"), "text": "hi"}),
    );
    assert!(err, "{text}");
    assert!(text.contains("not inside a pane"), "{text}");
    let (err, text) = outside.call("walky_inbox", json!({}));
    assert!(err && text.contains("not inside a pane"), "{text}");
    let (err, who) = outside.call("walky_who", json!({}));
    assert!(!err && who.contains(&format!("testbox/{pane}#")), "{who}");

    // A state dir no bridge runs for: the agent is told how to start one.
    let empty = tempfile::tempdir().expect("tempdir");
    let mut lonely = McpSession::start({
        let mut c = b.command();
        c.env("COLLIE_STATE_DIR", empty.path())
            .env("COLLIE_PANE", &pane);
        c
    });
    let (err, text) = lonely.call("walky_who", json!({}));
    assert!(err, "{text}");
    assert!(text.contains("no collie bridge is running"), "{text}");
}
