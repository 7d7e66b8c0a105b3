//! A walky message never answers a prompt (SPEC §9, §10.1): the header is typed into the receiving
//! pane followed by Enter, and in a pane that shows an agent's permission dialog that Enter would
//! choose the dialog's highlighted option. Only a person's tap answers a prompt, so a message is
//! refused — `rejected: <machine>/<pane> is showing a prompt` — while the pane shows a dialog the
//! screen-prompt recognizer knows (here the real Claude Code's, against the scripted model
//! stand-in) or has a waiting card (here a held permission), on this machine, from a member to the
//! lead's pane and from the lead to a member's. Once the prompt is gone, messages arrive again.

#[path = "support/claude.rs"]
mod claude;
#[path = "support/hook.rs"]
mod hook;
mod support;

use std::path::Path;
use std::time::Duration;

use claude::{Claude, DIALOG};
use serde_json::{json, Value};
use support::model_api::ModelApi;
use support::{collie_bin, crew_bridge, json_of, wait_for, TestBridge};

/// Types `line` and Enter into the bridge's window `main` (a plain `sh`), as a person would.
fn type_in_main(b: &TestBridge, line: &str) {
    let tmux = b.tmux.as_ref().expect("tmux");
    for args in [
        vec!["send-keys", "-t", "main:0", "-l", line],
        vec!["send-keys", "-t", "main:0", "Enter"],
    ] {
        let out = tmux.cmd().args(&args).output().expect("send-keys");
        assert!(out.status.success(), "{out:?}");
    }
}

/// The text of window `main:0` with its history, wrapped lines joined.
fn main_text(b: &TestBridge) -> String {
    let out = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["capture-pane", "-p", "-J", "-S", "-", "-t", "main:0"])
        .output()
        .expect("capture");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `collie walky send TO hello` in `b`'s window `main` (so the sender is that pane); returns
/// what it printed and its exit code, read back from the pane after `marker=`.
fn send_from_main(b: &TestBridge, to: &str, marker: &str) -> (String, i32) {
    let line = format!(
        "COLLIE_STATE_DIR={} COLLIE_CONFIG_DIR={} {} walky send {to} hello; echo {marker}=$?",
        b.state().display(),
        b.dir.path().join("config").display(),
        collie_bin().display()
    );
    type_in_main(b, &line);
    wait_for(Duration::from_secs(30), || {
        let s = main_text(b);
        // The first `marker=` is the typed command line, the second the echo.
        let tail = s.split(&format!("{marker}=")).nth(2)?;
        let code: i32 = tail.lines().next()?.trim().parse().ok()?;
        Some((s, code))
    })
    .unwrap_or_else(|| panic!("the send never finished:\n{}", main_text(b)))
}

/// `machine`'s pane named `name` as `asker`'s `walky who --json` lists it: its address and the
/// `machine/pane` a refusal names.
fn who(asker: &TestBridge, machine: &str, name: &str) -> (String, String) {
    let mut last = Value::Null;
    let entry = wait_for(Duration::from_secs(15), || {
        let who = json_of(&asker.cli_ok(&["walky", "who", "--json"]));
        last = who.clone();
        who["panes"]
            .as_array()?
            .iter()
            .find(|p| p["machine"] == machine && p["name"] == name)
            .cloned()
    })
    .unwrap_or_else(|| panic!("who does not list {machine}'s {name} pane: {last}"));
    let address = entry["address"].as_str().expect("address").to_owned();
    let pane = address.split('#').next().expect("machine/pane").to_owned();
    (address, pane)
}

/// A refused send: exit code 1 and SPEC §9's words.
fn assert_refused(out: &str, code: i32, pane: &str) {
    assert_eq!(code, 1, "the send was not refused:\n{out}");
    let want = format!("rejected: {pane} is showing a prompt");
    assert!(out.contains(&want), "no {want:?} in:\n{out}");
}

/// A delivered send: exit code 0 and a `delivered` line.
fn assert_delivered(out: &str, code: i32) {
    assert_eq!(code, 0, "the send was refused:\n{out}");
    assert!(
        out.lines().any(|l| l.trim().starts_with("delivered ")),
        "{out}"
    );
}

/// `b` audited a `walky.rejected` line saying the pane shows a prompt.
fn assert_audited_refusal(b: &TestBridge) {
    let lines = b.audit_lines();
    assert!(
        lines.iter().any(
            |l| l["event"] == "walky.rejected" && l.to_string().contains("is showing a prompt")
        ),
        "no walky.rejected line: {lines:?}"
    );
}

/// A lead (`testbox`) and a member `web-1`, both with tmux, online.
fn crew_of_two() -> (TestBridge, TestBridge) {
    let lead = crew_bridge(true, &[]);
    let web1 = crew_bridge(true, &[]);
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    (lead, web1)
}

/// The waiting card of pane `pane_name` on `machine`, as `token` sees it on `b`.
fn card_of(b: &TestBridge, token: &str, machine: &str, pane_name: &str) -> Value {
    wait_for(Duration::from_secs(60), || {
        let (_, v) = b.get("/api/cards", Some(token));
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["machine"] == machine && c["pane_name"] == pane_name)
            .cloned()
    })
    .unwrap_or_else(|| panic!("no card from {machine}'s {pane_name} pane"))
}

/// A person's tap on `option` of `card` (a member's card names its machine).
fn tap(b: &TestBridge, token: &str, card: &Value, option: &str) {
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(token),
        &json!({"option": option, "shown": card["shown"], "machine": card["machine"]}),
    );
    assert_eq!(status, 200, "{v}");
}

/// Claude Code's dialog in `b`'s window `claude` refuses a message from `sender`'s window `main`
/// and is not answered by it; once a person's tap answered it, messages arrive again.
fn claude_s_dialog_refuses(b: &TestBridge, machine: &str, sender: &TestBridge, work: &Path) {
    let phone = b.pair("pixel", "full");
    let marker = work.join("tool-ran");
    let model = ModelApi::start(&format!("touch {}", marker.display()));
    let claude = Claude::start(b, "claude", work, &model);
    let (to, pane) = who(sender, machine, "claude");
    claude.ask_until_dialog("make the marker");

    let (out, code) = send_from_main(sender, &to, "P1");
    assert_refused(&out, code, &pane);
    assert_audited_refusal(b);
    // Nothing was typed into the dialog: it is still there, and the tool did not run — give
    // Claude Code the time a typed Enter would have taken to start it (the tap below shows how
    // long that is).
    let card = card_of(b, &phone, machine, "claude");
    assert_eq!(card["source"], "screen");
    assert!(claude.screen().contains(DIALOG), "{}", claude.screen());
    assert!(!claude.screen().contains("[walky "), "{}", claude.screen());
    assert!(!marker.exists(), "the message answered the dialog");

    // A person's tap answers it; the turn ends and the pane takes messages again.
    tap(b, &phone, &card, "1");
    wait_for(Duration::from_secs(30), || marker.exists().then_some(()))
        .unwrap_or_else(|| panic!("the tap did not run the tool:\n{}", claude.screen()));
    wait_for(Duration::from_secs(30), || {
        let s = claude.screen();
        (!s.contains(DIALOG) && s.contains("Done.")).then_some(())
    })
    .unwrap_or_else(|| panic!("the turn did not end:\n{}", claude.screen()));
    let (out, code) = send_from_main(sender, &to, "P2");
    assert_delivered(&out, code);
    wait_for(Duration::from_secs(10), || {
        claude.screen().contains("[walky ").then_some(())
    })
    .unwrap_or_else(|| panic!("no header in Claude Code's input:\n{}", claude.screen()));
}

#[test]
fn a_message_on_the_same_machine_never_answers_claude_code_s_dialog() {
    let b = TestBridge::start();
    let work = b.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    claude_s_dialog_refuses(&b, "testbox", &b, &work);
}

#[test]
fn a_member_s_message_never_answers_claude_code_s_dialog_on_the_lead() {
    let (lead, web1) = crew_of_two();
    let work = lead.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    claude_s_dialog_refuses(&lead, "testbox", &web1, &work);
}

/// Starts `collie hook claude-permission` (Claude Code's input for a Bash call on stdin) in a new
/// window `name` of `b`'s tmux server; once the hook has exited, `cat` reads the window's input,
/// as an agent would. Returns the file that appears when the hook has exited.
fn hold_in_window(b: &TestBridge, name: &str) -> std::path::PathBuf {
    let dir = b.dir.path();
    let input = dir.join(format!("{name}.json"));
    let request = hook::bash_request("walky-session", "rm -rf build");
    std::fs::write(&input, request.to_string()).expect("hook input");
    let done = dir.join(format!("{name}.done"));
    let script = format!(
        "env HOME={home} COLLIE_STATE_DIR={state} COLLIE_CONFIG_DIR={config} {collie} hook \
         claude-permission < {input} > /dev/null; touch {done}; exec cat",
        home = dir.join("home").display(),
        state = b.state().display(),
        config = dir.join("config").display(),
        collie = collie_bin().display(),
        input = input.display(),
        done = done.display(),
    );
    let status = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", name, "sh", "-c", &script])
        .status()
        .expect("tmux new-window");
    assert!(status.success());
    done
}

/// A held permission waits for a member's pane, whose screen shows no dialog: the lead's message
/// to it is refused; once the card is answered, the message arrives.
#[test]
fn a_pane_with_a_waiting_held_permission_refuses_a_message_from_the_lead() {
    let (lead, web1) = crew_of_two();
    let phone = lead.pair("pixel", "full");
    let done = hold_in_window(&web1, "held");
    let card = card_of(&lead, &phone, "web-1", "held");
    assert_eq!(card["source"], "claude");
    let (to, pane) = who(&lead, "web-1", "held");

    let (out, code) = send_from_main(&lead, &to, "H1");
    assert_refused(&out, code, &pane);
    assert_audited_refusal(&web1);
    let screen = web1.tmux.as_ref().expect("tmux").capture("main:held");
    assert!(!screen.contains("[walky "), "{screen}");
    assert!(!done.exists(), "the hook ended: {screen}");

    // Denied by a tap: the hook ends, `cat` reads the pane, and the message arrives.
    tap(&lead, &phone, &card, "deny");
    wait_for(Duration::from_secs(20), || done.exists().then_some(()))
        .expect("the hook did not end after the tap");
    let (out, code) = send_from_main(&lead, &to, "H2");
    assert_delivered(&out, code);
    wait_for(Duration::from_secs(10), || {
        let s = web1.tmux.as_ref().expect("tmux").capture("main:held");
        s.contains("[walky ").then_some(())
    })
    .expect("no header in the pane after the card was answered");
}
