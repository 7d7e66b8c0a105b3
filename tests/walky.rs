//! Black-box tests of walky-talky (SPEC §9): real bridges, real tmux panes, the real `collie`
//! CLI typed into those panes (so the sender is found from tmux's own `TMUX`/`TMUX_PANE`).

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{collie_bin, crew_bridge, json_of, wait_for, TestBridge};

/// A bridge with a private tmux server and an OS-chosen crew port. Its window `main` runs `sh`
/// (where the tests type `collie walky send`, as a person would); its window `agent` runs `cat`, a
/// program that reads what is typed into it, as an agent does — messages go there, since a pane
/// at a shell prompt refuses them.
fn bridge_with(env: &[(&str, &str)]) -> TestBridge {
    let b = crew_bridge(true, env);
    let out = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["new-window", "-d", "-n", "agent", "cat"])
        .output()
        .expect("tmux new-window");
    assert!(out.status.success(), "{out:?}");
    b
}

/// A lead (`testbox`) and members `web-1` and `web-2`, each a `bridge_with(&[])`, all online.
fn crew_of_three() -> (TestBridge, TestBridge, TestBridge) {
    let lead = bridge_with(&[]);
    let web1 = bridge_with(&[]);
    let web2 = bridge_with(&[]);
    lead.cli_ok(&["crew", "init"]);
    web1.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    web2.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-2"]);
    assert!(
        wait_for(Duration::from_secs(10), || online(
            &lead,
            &["web-1", "web-2"]
        )
        .then_some(()))
        .is_some(),
        "members did not come online"
    );
    (lead, web1, web2)
}

fn online(lead: &TestBridge, names: &[&str]) -> bool {
    let status = json_of(&lead.cli_ok(&["crew", "status", "--json"]));
    names.iter().all(|n| {
        status["members"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["name"] == *n && m["online"] == true))
    })
}

/// The address of `machine`'s agent pane (a tmux pane not at a shell prompt) in `who --json` as
/// `asker` sees it.
fn address(asker: &TestBridge, machine: &str) -> String {
    let mut last = Value::Null;
    wait_for(Duration::from_secs(10), || {
        let who = json_of(&asker.cli_ok(&["walky", "who", "--json"]));
        last = who.clone();
        who["panes"].as_array()?.iter().find_map(|p| {
            (p["machine"] == machine
                && p["pane"].as_str()?.starts_with('t')
                && p["at_shell"] == false)
                .then(|| p["address"].as_str().map(str::to_owned))
                .flatten()
        })
    })
    .unwrap_or_else(|| panic!("who does not list {machine}'s agent pane: {last}"))
}

/// Types `line` into the bridge's tmux pane and presses Enter, the way a person or an agent would.
fn type_in_pane(b: &TestBridge, line: &str) {
    let tmux = b.tmux.as_ref().expect("tmux");
    let out = tmux
        .cmd()
        .args(["send-keys", "-t", "main", "-l", line])
        .output()
        .expect("send-keys");
    assert!(out.status.success());
    let out = tmux
        .cmd()
        .args(["send-keys", "-t", "main", "Enter"])
        .output()
        .expect("send-keys");
    assert!(out.status.success());
}

/// The text of window `window` with its history, wrapped lines joined (`capture-pane -J`).
fn window_text(b: &TestBridge, window: &str) -> String {
    let out = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["capture-pane", "-p", "-J", "-S", "-", "-t", window])
        .output()
        .expect("capture");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The shell pane's text (where sends are typed and their output shows).
fn screen(b: &TestBridge) -> String {
    window_text(b, "main")
}

/// The agent pane's text (where headers arrive).
fn agent_screen(b: &TestBridge) -> String {
    window_text(b, "agent")
}

/// Runs `collie walky send TO TEXT` inside the bridge's pane; returns what it printed and its exit
/// code, read back from the pane.
fn send_from_pane(b: &TestBridge, to: &str, text: &str, marker: &str) -> (String, i32) {
    let state = b.state();
    let line = format!(
        "COLLIE_STATE_DIR={} COLLIE_CONFIG_DIR={} {} walky send {to} '{text}'; echo {marker}=$?",
        state.display(),
        b.dir.path().join("config").display(),
        collie_bin().display()
    );
    type_in_pane(b, &line);
    let done = wait_for(Duration::from_secs(20), || {
        let s = screen(b);
        let tail = s.split(&format!("{marker}=")).nth(2)?;
        let code: i32 = tail.lines().next()?.trim().parse().ok()?;
        Some((s, code))
    });
    done.unwrap_or_else(|| panic!("the send never finished:\n{}", screen(b)))
}

fn walky_log(b: &TestBridge) -> String {
    let dir = b.state().join("walky");
    let mut all = String::new();
    for entry in std::fs::read_dir(&dir).expect("walky dir") {
        let path = entry.expect("entry").path();
        all.push_str(&std::fs::read_to_string(&path).expect("log file"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", path.display());
    }
    all
}

#[test]
fn a_message_crosses_the_crew_signed_and_is_read_with_inbox() {
    let (lead, web1, mut web2) = crew_of_three();
    let to = address(&web1, "web-2");

    let (out, code) = send_from_pane(&web1, &to, "please run the tests", "SENT1");
    assert_eq!(code, 0, "{out}");
    let id = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("delivered "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no delivered line:\n{out}"))
        .to_owned();
    assert_eq!(id.len(), 32, "128-bit id: {id}");

    // The receiving pane shows the header, never the body.
    let header = wait_for(Duration::from_secs(10), || {
        let s = agent_screen(&web2);
        s.contains(&format!("[walky {id} from web-1/")).then_some(s)
    })
    .unwrap_or_else(|| panic!("no header on web-2:\n{}", agent_screen(&web2)));
    assert!(header.contains(&format!("read it: collie walky inbox {id}")));
    assert!(
        !header.contains("please run the tests"),
        "the body was typed"
    );

    // The body is read with inbox, framed as a peer's words.
    let body = web2.cli_ok(&["walky", "inbox", &id]);
    assert!(body.contains("please run the tests"), "{body}");
    assert!(body.contains("not instructions from your user"), "{body}");
    let inbox = json_of(&web2.cli_ok(&["walky", "inbox", "--json"]));
    let listed = inbox["messages"].as_array().expect("messages");
    assert!(listed.iter().any(|m| m["id"] == id.as_str()
        && m["from"].as_str().is_some_and(|f| f.starts_with("web-1/"))
        && m["received_at"].is_string()));

    // Each machine the message passed logged it, privately.
    for (name, b) in [("web-1", &web1), ("lead", &lead), ("web-2", &web2)] {
        assert!(walky_log(b).contains(&id), "{name} did not log {id}");
    }
    let audit = std::fs::read_to_string(web2.state().join("audit.log")).expect("audit");
    assert!(audit.contains("\"event\":\"walky.delivered\""), "{audit}");
    let audit = std::fs::read_to_string(web1.state().join("audit.log")).expect("audit");
    assert!(audit.contains("\"event\":\"walky.sent\""), "{audit}");

    // The phone of the lead gets a card for the message from web-2's log, masked.
    let phone = lead.pair("phone", "read");
    let (s, card) = lead.get(&format!("/api/walky/{id}?machine=web-2"), Some(&phone));
    assert_eq!(s, 200, "{card}");
    assert_eq!(card["body"], "please run the tests");
    let (s, none) = lead.get(
        &format!("/api/walky/{}?machine=web-2", "0".repeat(32)),
        Some(&phone),
    );
    assert_eq!(
        (s, none["error"].as_str()),
        (404, Some("no log entry on this machine"))
    );

    // The sender's own cards carry the result it learned.
    let sender_phone = web1.pair("phone", "read");
    let cards = wait_for(Duration::from_secs(10), || {
        let (_, cards) = web1.get("/api/walky", Some(&sender_phone));
        let card = cards["messages"]
            .as_array()?
            .iter()
            .find(|c| c["id"] == id.as_str() && c["kind"] == "sent")?
            .clone();
        (card["outcome"] == "delivered").then_some(card)
    });
    assert!(cards.is_some(), "the sender's card shows the result");

    // Lead-origin messages (signed with the lead's key, no attestation) and messages to the lead's
    // own panes take the same path.
    let to_web1 = address(&lead, "web-1");
    let (out, code) = send_from_pane(&lead, &to_web1, "from the lead", "SENT3");
    assert_eq!(code, 0, "{out}");
    assert!(wait_for(Duration::from_secs(10), || agent_screen(&web1)
        .contains("[walky ")
        .then_some(()))
    .is_some());
    let to_lead = address(&web2, "testbox");
    let (out, code) = send_from_pane(&web2, &to_lead, "to the lead", "SENT4");
    assert_eq!(code, 0, "{out}");
    assert!(wait_for(Duration::from_secs(10), || agent_screen(&lead)
        .contains("from web-2/")
        .then_some(()))
    .is_some());

    // With walky off on web-2 the sender learns why, and the send exits 1.
    web2.stop();
    let gone = wait_for(Duration::from_secs(10), || {
        (!online(&lead, &["web-2"])).then_some(())
    });
    assert!(gone.is_some(), "the lead did not notice web-2 stop");
    web2.extra_env.push(("COLLIE_WALKY".into(), "off".into()));
    web2.launch();
    assert!(
        wait_for(Duration::from_secs(10), || online(&lead, &["web-2"])
            .then_some(()))
        .is_some(),
        "web-2 did not come back"
    );
    let to = address(&web1, "web-2");
    let (out, code) = send_from_pane(&web1, &to, "are you there", "SENT2");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("rejected: walky off on web-2"), "{out}");
    assert!(!agent_screen(&web2).contains("are you there"));
    // Its own CLI can still send.
    let to = address(&web2, "web-1");
    let (out, code) = send_from_pane(&web2, &to, "still talking", "SENT5");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn local_messages_need_no_crew_and_stale_tokens_are_refused() {
    let b = bridge_with(&[]);
    let token = b.pair("phone", "full");
    // A second pane (hosted, running a program that reads its input) to write to.
    let created = b.hosted("reviewer", &["cat"]);
    let to = format!(
        "{}#{}",
        created["pane"].as_str().unwrap(),
        created["token"].as_str().unwrap()
    );
    let (out, code) = send_from_pane(&b, &to, "look at PR 7", "L1");
    assert_eq!(code, 0, "{out}");
    let pane = created["pane"].as_str().unwrap();
    let header = wait_for(Duration::from_secs(10), || {
        let (_, snap) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
        let text: String = snap["lines"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        text.contains("[walky ").then_some(text)
    });
    assert!(header.is_some(), "no header in the hosted pane");
    let id = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("delivered "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("delivered line")
        .to_owned();
    // The receiving pane reads it; another pane (here the sender's) cannot.
    let read_as = |pane: &str| {
        b.command()
            .env("COLLIE_PANE", pane)
            .args(["walky", "inbox", &id])
            .output()
            .expect("run collie")
    };
    let own = read_as(pane);
    assert!(own.status.success());
    assert!(String::from_utf8_lossy(&own.stdout).contains("look at PR 7"));
    let other = read_as(&b.first_tmux_pane(&token));
    assert_eq!(other.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&other.stdout).contains("look at PR 7"));
    // A solo bridge signs nothing and has no crew key.
    assert!(!b.state().join("crew").exists());

    // The same pane id with another token is another instance: refused.
    let stale = format!("{}#aaaa", created["pane"].as_str().unwrap());
    let (out, code) = send_from_pane(&b, &stale, "hello", "L2");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stale address"), "{out}");

    // Outside any pane, send is refused with a clear message; the body limit holds.
    let outside = b.cli(&["walky", "send", &to, "hi"]);
    assert_eq!(outside.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("not inside a pane"));
    let big = "x".repeat(16 * 1024 + 1);
    let too_long = b.cli(&["walky", "send", &to, &big]);
    assert_eq!(too_long.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&too_long.stderr).contains("at most 16 KiB"));
}

/// Adds a window `bash` running an interactive bash at its prompt (no rc files), the kind of pane
/// a walky header must never be typed into.
fn add_bash_window(b: &TestBridge) {
    let out = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args([
            "new-window",
            "-d",
            "-n",
            "bash",
            "bash --norc --noprofile -i",
        ])
        .output()
        .expect("tmux new-window");
    assert!(out.status.success(), "{out:?}");
}

/// `machine`'s pane named `name` as `asker`'s `who --json` lists it.
fn who_entry(asker: &TestBridge, machine: &str, name: &str) -> Value {
    let mut last = Value::Null;
    wait_for(Duration::from_secs(10), || {
        let who = json_of(&asker.cli_ok(&["walky", "who", "--json"]));
        last = who.clone();
        who["panes"]
            .as_array()?
            .iter()
            .find(|p| p["machine"] == machine && p["name"] == name)
            .cloned()
    })
    .unwrap_or_else(|| panic!("who does not list {machine}'s {name} pane: {last}"))
}

/// Renames the sending pane's tmux window, as any program in that pane can do to itself.
fn rename_own_window(b: &TestBridge, name: &str) {
    let out = b
        .tmux
        .as_ref()
        .expect("tmux")
        .cmd()
        .args(["rename-window", "-t", "main:0", name])
        .output()
        .expect("tmux rename-window");
    assert!(out.status.success(), "{out:?}");
}

/// Names that would run `touch <marker>` if a shell ever read them, one per character a shell
/// gives meaning to (and a newline).
fn hostile_names(markers: &std::path::Path) -> Vec<(String, std::path::PathBuf)> {
    let payloads = [
        "$(touch {})",
        "(touch {})",
        ")touch {}(",
        "`touch {}`",
        "x; touch {}",
        "x| touch {}",
        "x& touch {}",
        "<(touch {})",
        "x>{}",
        "{touch,{}}",
        "}touch {}",
        "x\\\"; touch {}; \\\"",
        "\"; touch {}; \"",
        "'; touch {}; '",
        "x\ntouch {}",
    ];
    payloads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let marker = markers.join(format!("m{i}"));
            (p.replace("{}", &marker.display().to_string()), marker)
        })
        .collect()
}

/// Sends from `sender` (its window renamed to each hostile name) to `bash_to` and `agent_to`:
/// the bash pane refuses every one, the agent pane gets an inert header for each, and nothing
/// runs anywhere.
fn hostile_names_run_nothing(
    sender: &TestBridge,
    receiver: &TestBridge,
    receiver_name: &str,
    bash_to: &str,
    agent_to: &str,
) {
    let markers = tempfile::tempdir().expect("marker dir");
    let bash_pane = bash_to
        .split_once('/')
        .map_or(bash_to, |(_, p)| p)
        .split('#')
        .next()
        .expect("pane");
    let names = hostile_names(markers.path());
    for (i, (name, _)) in names.iter().enumerate() {
        rename_own_window(sender, name);
        let (out, code) = send_from_pane(sender, bash_to, "hello", &format!("HB{i}X"));
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(&format!(
                "rejected: {receiver_name}/{bash_pane} is at a shell prompt"
            )),
            "{out}"
        );
        let (out, code) = send_from_pane(sender, agent_to, "hello", &format!("HA{i}X"));
        assert_eq!(code, 0, "{out}");
    }
    rename_own_window(sender, "sender");
    // Every header reached the agent pane (the terminal echoes it and `cat` prints it again),
    // and each is inert.
    let headers = wait_for(Duration::from_secs(10), || {
        let text = agent_screen(receiver);
        let headers: std::collections::BTreeSet<String> = text
            .lines()
            .filter(|l| l.starts_with("[walky "))
            .map(str::to_owned)
            .collect();
        (headers.len() >= names.len()).then_some(headers)
    })
    .unwrap_or_else(|| panic!("headers missing:\n{}", agent_screen(receiver)));
    for h in &headers {
        let quoted = h.split('"').nth(1).expect("a quoted name");
        assert!(
            quoted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ' ' | '-')),
            "{h}"
        );
        assert_eq!(h.matches('"').count(), 2, "{h}");
    }
    // The bash pane never saw a header.
    assert!(!window_text(receiver, "bash").contains("[walky"));
    for (name, marker) in &names {
        assert!(
            !marker.exists(),
            "{name:?} ran: {} exists",
            marker.display()
        );
    }
}

#[test]
fn a_walky_header_never_runs_as_a_command_locally() {
    let b = bridge_with(&[]);
    add_bash_window(&b);
    // who marks the pane at a shell prompt and lists agents first.
    let bash = who_entry(&b, "testbox", "bash");
    let agent = who_entry(&b, "testbox", "agent");
    assert_eq!(bash["at_shell"], true, "{bash}");
    assert_eq!(agent["at_shell"], false, "{agent}");
    let who = json_of(&b.cli_ok(&["walky", "who", "--json"]));
    let order: Vec<bool> = who["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .map(|p| p["at_shell"] == true)
        .collect();
    assert!(
        order.windows(2).all(|w| !w[0] || w[1]),
        "agents first: {who}"
    );
    let text = b.cli_ok(&["walky", "who"]);
    assert!(
        text.lines()
            .any(|l| l.contains("bash") && l.contains("at a shell prompt")),
        "{text}"
    );
    hostile_names_run_nothing(
        &b,
        &b,
        "testbox",
        bash["address"].as_str().expect("address"),
        agent["address"].as_str().expect("address"),
    );
}

#[test]
fn a_walky_header_never_runs_as_a_command_across_the_crew() {
    let (_lead, web1, web2) = crew_of_three();
    add_bash_window(&web2);
    let bash = who_entry(&web1, "web-2", "bash");
    let agent = who_entry(&web1, "web-2", "agent");
    assert_eq!(
        (bash["at_shell"].clone(), agent["at_shell"].clone()),
        (Value::Bool(true), Value::Bool(false))
    );
    hostile_names_run_nothing(
        &web1,
        &web2,
        "web-2",
        bash["address"].as_str().expect("address"),
        agent["address"].as_str().expect("address"),
    );
}

/// The attacker here is whoever can hand a member a message the lead once forwarded: the lead
/// itself, compromised or buggy. The test makes the real lead resend the captured message
/// (feature `fault-injection`, over its control socket); the member must refuse it — also after
/// it restarted.
#[test]
fn a_replayed_message_is_refused_after_the_receiver_restarts() {
    let (lead, web1, mut web2) = crew_of_three();
    let to = address(&web1, "web-2");
    let (out, code) = send_from_pane(&web1, &to, "deploy it", "R1");
    assert_eq!(code, 0, "{out}");
    // Distinct messages typed (the terminal echoes a header and `cat` prints it again).
    let headers = |b: &TestBridge| {
        agent_screen(b)
            .lines()
            .filter_map(|l| l.strip_prefix("[walky "))
            .filter_map(|l| l.split_whitespace().next())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    assert!(wait_for(Duration::from_secs(10), || (headers(&web2) == 1)
        .then_some(()))
    .is_some());

    let replay = |lead: &TestBridge| -> Value {
        use std::io::{BufRead, Write};
        let mut s = std::os::unix::net::UnixStream::connect(lead.state().join("bridge.sock"))
            .expect("control socket");
        s.write_all(b"{\"cmd\":\"test-replay-walky\",\"to\":\"web-2\"}\n")
            .expect("write");
        let mut line = String::new();
        std::io::BufReader::new(s)
            .read_line(&mut line)
            .expect("reply");
        json_of(&line)
    };
    let answer = replay(&lead);
    assert!(
        answer["data"]["outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("rejected") && o.contains("replay")),
        "{answer}"
    );

    // Restart the receiver: its guard must come back from its log.
    web2.stop();
    assert!(
        wait_for(Duration::from_secs(10), || (!online(&lead, &["web-2"]))
            .then_some(()))
        .is_some()
    );
    web2.launch();
    assert!(
        wait_for(Duration::from_secs(10), || online(&lead, &["web-2"])
            .then_some(()))
        .is_some()
    );
    let answer = replay(&lead);
    assert!(
        answer["data"]["outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("rejected") && o.contains("replay")),
        "{answer}"
    );
    assert_eq!(headers(&web2), 1, "typed twice:\n{}", agent_screen(&web2));
    let audit = std::fs::read_to_string(web2.state().join("audit.log")).expect("audit");
    assert!(
        audit
            .lines()
            .any(|l| l.contains("\"walky.rejected\"") && l.contains("replay")),
        "{audit}"
    );
}

/// A pane messaging itself: its own `collie walky send` is the pane's foreground while the header
/// is delivered, so the check "not at a shell" passes, and the header would reach the pane's
/// shell (or an agent's input) once the command ends. Refused before anything is written.
#[test]
fn a_pane_cannot_message_itself() {
    let b = bridge_with(&[]);
    let token = b.pair("phone", "full");
    let me = b.first_tmux_pane(&token);
    let (_, list) = b.get("/api/panes", Some(&token));
    let own_token = list["panes"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["pane"] == me.as_str()))
        .and_then(|p| p["token"].as_str())
        .expect("the pane's token")
        .to_owned();
    let (out, code) = send_from_pane(&b, &format!("{me}#{own_token}"), "hello me", "S1");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("itself"), "{out}");
    // Refused before anything was typed: no header ran as a command.
    assert!(!screen(&b).contains("[walky:"), "{}", screen(&b));
    assert!(!screen(&b).contains("not found"), "{}", screen(&b));
}
