//! Agents in zellij panes (issue 34): everything a tmux pane gives an agent, a zellij pane gives
//! too. The real Claude Code in a zellij tab, against the scripted model stand-in: its own
//! permission dialog becomes a screen card (SPEC §10.2) that a walky message may not answer
//! (§9) and a tap does, and its chat is read from its transcript (§3.3). A zellij pane tells a
//! password prompt and whether its program works; `collie mcp` started inside a zellij pane sends
//! as that pane. zellij as in `zellij.rs` (`support/zellij.rs`).

#[path = "support/chat_view.rs"]
mod chat_view;
#[path = "support/claude.rs"]
mod claude;
mod support;
#[path = "support/zellij.rs"]
mod zellij;

use std::path::Path;
use std::time::Duration;

use chat_view::{chat_when, texts};
use claude::DIALOG;
use serde_json::{json, Value};
use support::model_api::ModelApi;
use support::{collie_bin, json_of, wait_for, TestBridge};
use zellij::{bridge, pane_text, type_into, walky_from, write_program, zellij_panes, Sessions};

/// The id of the zellij pane named `name`, once listed.
fn pane_named(b: &TestBridge, token: &str, name: &str) -> String {
    wait_for(Duration::from_secs(20), || {
        zellij_panes(b, token)
            .into_iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["pane"].as_str().map(str::to_owned))
    })
    .unwrap_or_else(|| panic!("no zellij pane {name}: {:?}", zellij_panes(b, token)))
}

/// Types `text` into `pane` from the phone, then (once the text shows, as a person's Enter
/// comes: an agent takes text and Enter in one burst for a paste) Enter.
fn type_line(b: &TestBridge, token: &str, pane: &str, text: &str) {
    let path = format!("/api/panes/testbox/{pane}/input");
    let (status, v) = b.post(&path, Some(token), &json!({ "text": text }));
    assert_eq!(status, 200, "{v}");
    wait_for(Duration::from_secs(10), || {
        pane_text(b, token, pane)
            .replace('\n', "")
            .contains(text)
            .then_some(())
    })
    .unwrap_or_else(|| panic!("{text:?} did not show:\n{}", pane_text(b, token, pane)));
    let (status, v) = b.post(&path, Some(token), &json!({ "keys": ["Enter"] }));
    assert_eq!(status, 200, "{v}");
}

/// Starts the real Claude Code as the one pane of a new session `claude` (a background session
/// is 50 columns wide; a second pane would halve that), in `work`; its tab is named `claude`.
/// (The session's environment is the test's own already; zellij's variables stay, as they do
/// for an agent a person starts in a zellij pane: they are how the bridge places its process.)
fn start_claude(z: &Sessions, work: &Path, home: &Path, model: &ModelApi) {
    let script = z.dir.join("run-claude.sh");
    let body = format!(
        "#!/bin/sh\ncd {work} && exec env PATH={path} HOME={home} TERM=xterm-256color \
         ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={key} DISABLE_TELEMETRY=1 \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {program}\n",
        work = work.display(),
        path = std::env::var("PATH").unwrap_or_default(),
        home = home.display(),
        url = model.url(),
        key = claude::API_KEY,
        program = claude::binary().display(),
    );
    write_program(&script, &body);
    z.start_running("claude", &script);
    let out = z.run(&[
        "--session",
        "claude",
        "action",
        "rename-tab",
        "--tab-id",
        "0",
        "claude",
    ]);
    assert!(out.status.success(), "rename-tab: {out:?}");
}

#[test]
fn claude_code_in_a_zellij_pane_has_its_dialog_as_a_card_and_its_chat() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("agents");
    let phone = b.pair("pixel", "full");
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let marker = work.join("tool-ran");
    let model = ModelApi::start(&format!("touch {}", marker.display()));
    let home = claude::home(&b, "claude-home", &work);
    let shell = pane_named(&b, &phone, "Tab #1");
    start_claude(&z, &work, &home, &model);
    let pane = pane_named(&b, &phone, "claude");
    wait_for(Duration::from_secs(60), || {
        pane_text(&b, &phone, &pane)
            .contains("for shortcuts")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Claude Code did not reach its prompt:\n{}",
            pane_text(&b, &phone, &pane)
        )
    });
    // The chat view knows the agent by the pane's process (found at the backend's next look).
    chat_when(&b, &phone, &pane, |c| c["agent"] == "claude");

    // Asked from the phone; Claude Code's own dialog (no hook installed) is a screen card.
    type_line(&b, &phone, &pane, "make the marker");
    let card = wait_for(Duration::from_secs(60), || {
        let (_, v) = b.get("/api/cards", Some(&phone));
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["pane"] == pane.as_str())
            .cloned()
    })
    .unwrap_or_else(|| panic!("no card for the dialog:\n{}", pane_text(&b, &phone, &pane)));
    assert_eq!(card["source"], "screen", "{card}");
    assert_eq!(card["title"], DIALOG, "{card}");
    assert_eq!(card["pane_name"], "claude", "{card}");

    // A walky message from the shell pane may not answer it.
    let who = json_of(&b.cli_ok(&["walky", "who", "--json"]));
    let to = who["panes"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["pane"] == pane.as_str()))
        .and_then(|p| p["address"].as_str())
        .unwrap_or_else(|| panic!("who lists no {pane}: {who}"))
        .to_owned();
    let (out, code) = walky_from(&b, &phone, &shell, &to, "P1");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("rejected: testbox/{pane} is showing a prompt")),
        "{out}"
    );
    assert!(!marker.exists(), "the message answered the dialog");

    // The tap answers it: the tool runs, the turn ends.
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&phone),
        &json!({"option": "1", "shown": card["shown"]}),
    );
    assert_eq!(status, 200, "{v}");
    wait_for(Duration::from_secs(30), || marker.exists().then_some(()))
        .unwrap_or_else(|| panic!("the tap ran nothing:\n{}", pane_text(&b, &phone, &pane)));
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "card.answered")
        .expect("card.answered audited");
    assert_eq!(line["detail"]["pane"], pane.as_str(), "{line}");

    // The chat: the prompt, the tool call and its result, the answer.
    let chat = chat_when(&b, &phone, &pane, |c| {
        texts(c, "assistant", "text").iter().any(|t| t == "Done.")
    });
    assert_eq!(
        texts(&chat, "user", "text"),
        ["make the marker"],
        "{chat:#}"
    );
    let calls = texts(&chat, "assistant", "tool_call");
    assert_eq!(calls.len(), 1, "{chat:#}");
    assert!(calls[0].starts_with("Bash: touch "), "{}", calls[0]);
    assert_eq!(texts(&chat, "tool", "tool_result").len(), 1, "{chat:#}");
}

/// The `asking_password` and `activity` of zellij pane `pane`, as the list has them.
fn state_of(b: &TestBridge, token: &str, pane: &str) -> (Value, Value) {
    zellij_panes(b, token)
        .into_iter()
        .find(|p| p["pane"] == pane)
        .map(|p| (p["asking_password"].clone(), p["activity"].clone()))
        .unwrap_or_default()
}

#[test]
fn a_zellij_pane_says_when_it_asks_for_a_password_and_when_its_program_works() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("quiet");
    let phone = b.pair("pixel", "full");
    let pane = pane_named(&b, &phone, "Tab #1");
    let becomes = |want: (Value, Value), what: &str| {
        wait_for(Duration::from_secs(15), || {
            (state_of(&b, &phone, &pane) == want).then_some(())
        })
        .unwrap_or_else(|| {
            panic!(
                "never {what}: {:?}\n{}",
                state_of(&b, &phone, &pane),
                pane_text(&b, &phone, &pane)
            )
        });
    };
    becomes((json!(false), json!("idle")), "idle at its prompt");

    // A password prompt under the cursor.
    type_into(
        &b,
        &phone,
        &pane,
        &json!({
            "text": "stty -echo; printf 'Password: '; read -r pw; stty echo; echo; echo got-${#pw}",
            "keys": ["Enter"]
        }),
    );
    becomes((json!(true), json!("idle")), "asking for a password");
    type_into(
        &b,
        &phone,
        &pane,
        &json!({ "text": "hunter2", "keys": ["Enter"] }),
    );
    wait_for(Duration::from_secs(15), || {
        pane_text(&b, &phone, &pane).contains("got-7").then_some(())
    })
    .expect("the password read");
    becomes((json!(false), json!("idle")), "past the password");

    // A program printing: working while it prints, idle once it stopped.
    type_into(
        &b,
        &phone,
        &pane,
        &json!({ "text": "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo tick-$i; sleep 0.25; done", "keys": ["Enter"] }),
    );
    becomes((json!(false), json!("working")), "working");
    wait_for(Duration::from_secs(30), || {
        pane_text(&b, &phone, &pane)
            .contains("tick-40")
            .then_some(())
    })
    .expect("the loop ended");
    becomes((json!(false), json!("idle")), "idle again");
}

/// The lines a scripted MCP client writes to `collie mcp`: the handshake, then `walky_send` to
/// `to` as request 2.
fn mcp_script(to: &str) -> String {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "collie-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "walky_send", "arguments": {"to": to, "text": "from zellij over mcp"}}}),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn collie_mcp_inside_a_zellij_pane_sends_as_that_pane() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("mcp");
    // A pane that reads its input, as an agent's would: where the header lands.
    // (A background session's new tab has no size until a client attaches: a second session.)
    let cat = b.dir.path().join("cat.sh");
    write_program(&cat, "#!/bin/sh\nexec cat\n");
    let phone = b.pair("pixel", "full");
    let shell = pane_named(&b, &phone, "Tab #1");
    z.start_running("reader", &cat);
    let reader = wait_for(Duration::from_secs(20), || {
        zellij_panes(&b, &phone)
            .into_iter()
            .find(|p| p["pane"] != shell.as_str())
            .and_then(|p| p["pane"].as_str().map(str::to_owned))
    })
    .expect("the reader's pane");
    let to = wait_for(Duration::from_secs(20), || {
        let who = json_of(&b.cli_ok(&["walky", "who", "--json"]));
        who["panes"]
            .as_array()?
            .iter()
            .find(|p| p["pane"] == reader.as_str() && p["at_shell"] == false)
            .and_then(|p| p["address"].as_str().map(str::to_owned))
    })
    .expect("the reader in walky who, not at a shell");

    // The client: the script on stdin, held open until the answer to request 2 came back.
    let dir = b.dir.path();
    let (input, answers) = (dir.join("mcp-in.jsonl"), dir.join("mcp-out.jsonl"));
    std::fs::write(&input, mcp_script(&to)).expect("script");
    let line = format!(
        "{{ cat {input}; until grep -q '\"id\":2' {answers} 2>/dev/null; do sleep 0.1; done; }} | \
         COLLIE_STATE_DIR={state} COLLIE_CONFIG_DIR={config} {collie} mcp > {answers}",
        input = input.display(),
        answers = answers.display(),
        state = b.state().display(),
        config = dir.join("config").display(),
        collie = collie_bin().display(),
    );
    type_into(
        &b,
        &phone,
        &shell,
        &json!({ "text": line, "keys": ["Enter"] }),
    );
    let answer: Value = wait_for(Duration::from_secs(30), || {
        std::fs::read_to_string(&answers)
            .ok()?
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["id"] == 2)
    })
    .unwrap_or_else(|| {
        panic!(
            "no answer to walky_send:\n{}",
            pane_text(&b, &phone, &shell)
        )
    });
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("delivered"), "{answer}");
    // The header names the zellij pane the server ran in as the sender.
    wait_for(Duration::from_secs(10), || {
        let text = pane_text(&b, &phone, &reader).replace('\n', "");
        (text.contains("[walky ") && text.contains(&format!("testbox/{shell}#"))).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "no header from {shell} in the reader:\n{}",
            pane_text(&b, &phone, &reader)
        )
    });
}
