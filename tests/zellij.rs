//! zellij panes through a real bridge (issue 34, decision 0083), with a real zellij
//! (`support/zellij.rs`): the pane is listed, read masked, typed into, renamed (its tab) and
//! closed by a `full` device, never by a `read` one; followed with its colours; a hook in it is a
//! card; a member's is reached through the lead; walky reaches it. Agents in zellij panes (screen prompts, chat, MCP) are in `zellij_agents.rs`.

#[path = "support/hook.rs"]
mod hook;
mod support;
#[path = "support/zellij.rs"]
mod zellij;

use std::time::Duration;

use hook::{bash_request, card_named};
use serde_json::json;
use support::{crew_bridge, wait_for};
use zellij::{bridge, pane_text, type_into, walky_from, zellij_panes, zellij_path, Sessions};

#[test]
fn a_zellij_pane_is_listed_read_masked_typed_into_renamed_and_closed() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("work");
    let token = b.pair("phone", "full");

    let panes = wait_for(Duration::from_secs(15), || {
        let p = zellij_panes(&b, &token);
        (!p.is_empty()).then_some(p)
    })
    .expect("the zellij pane listed");
    assert_eq!(panes.len(), 1, "plugin panes are not listed: {panes:?}");
    let pane = &panes[0];
    assert_eq!(pane["pane"], "z0-0");
    assert_eq!(pane["name"], "Tab #1");
    assert_eq!(pane["machine"], "testbox");
    assert_eq!(pane["alive"], true);
    assert_eq!(pane["token"].as_str().map(str::len), Some(4));

    // Typed from the phone: text and Enter reach the shell, whose answer holds a token that
    // leaves the machine masked. (The typed line is longer than the pane is wide: zellij wraps
    // it, and the mirror masks the wrapped halves as one line.)
    let secret = "ghp_aB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s";
    type_into(
        &b,
        &token,
        "z0-0",
        &json!({ "text": format!("echo zz-{secret} ."), "keys": ["Enter"] }),
    );
    // Audited like any write (SPEC §7), naming the zellij pane, the secret never in the log.
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "pane.input")
        .expect("the write audited");
    assert_eq!(line["device"], "phone", "{line}");
    assert!(line.to_string().contains("z0-0"), "{line}");
    assert!(!line.to_string().contains(secret), "{line}");
    let screen = wait_for(Duration::from_secs(15), || {
        let (_, snap) = b.get("/api/panes/testbox/z0-0", Some(&token));
        let lines: Vec<String> = snap["lines"]
            .as_array()?
            .iter()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect();
        lines
            .iter()
            .any(|l| l.starts_with("zz-") && !l.contains("echo"))
            .then_some(lines)
    })
    .unwrap_or_else(|| {
        let (_, snap) = b.get("/api/panes/testbox/z0-0", Some(&token));
        panic!("the answer never showed: {snap}")
    });
    let all = screen.join("\n");
    assert!(!all.contains(secret), "the token left the machine: {all}");
    assert!(all.contains("zz-ghp_"), "{all}");
    assert!(
        !all.contains("6R7s"),
        "neither half of the wrapped token: {all}"
    );

    // A `read` device may do neither.
    let reader = b.pair("tablet", "read");
    let (status, _) = b.post(
        "/api/panes/testbox/z0-0/rename",
        Some(&reader),
        &json!({ "name": "nope" }),
    );
    assert_eq!(status, 403);
    let (status, _) = b.request(
        "DELETE",
        "/api/panes/testbox/z0-0",
        Some(&reader),
        None,
        &[],
    );
    assert_eq!(status, 403);

    // Renamed from the phone: the tab it is named by is renamed (a leading `-` stays a name),
    // audited as a tmux window's rename is.
    let (status, body) = b.post(
        "/api/panes/testbox/z0-0/rename",
        Some(&token),
        &json!({ "name": "-build x" }),
    );
    assert_eq!(status, 200, "{body}");
    wait_for(Duration::from_secs(15), || {
        zellij_panes(&b, &token)
            .iter()
            .any(|p| p["pane"] == "z0-0" && p["name"] == "-build x")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("not renamed: {:?}", zellij_panes(&b, &token)));
    let tabs = z.run(&["--session", "work", "action", "query-tab-names"]);
    assert_eq!(
        String::from_utf8_lossy(&tabs.stdout).trim(),
        "-build x",
        "{tabs:?}"
    );
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "tab.rename")
        .expect("the rename audited");
    assert_eq!(line["detail"]["pane"], "z0-0", "{line}");

    // Closed from the phone: a second pane goes at once, in zellij too.
    let out = z.run(&["--session", "work", "action", "new-pane", "--", "cat"]);
    assert!(out.status.success(), "new-pane: {out:?}");
    let second = wait_for(Duration::from_secs(15), || {
        zellij_panes(&b, &token)
            .into_iter()
            .find(|p| p["pane"] != "z0-0")
            .and_then(|p| p["pane"].as_str().map(str::to_owned))
    })
    .expect("the second pane listed");
    let (status, body) = b.request(
        "DELETE",
        &format!("/api/panes/testbox/{second}"),
        Some(&token),
        None,
        &[],
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        zellij_panes(&b, &token)
            .iter()
            .all(|p| p["pane"] != second.as_str()),
        "still listed: {:?}",
        zellij_panes(&b, &token)
    );
    let listed = z.run(&["--session", "work", "action", "list-panes", "--json"]);
    let n: u64 = second
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("number");
    let in_zellij: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert!(
        in_zellij
            .as_array()
            .expect("panes")
            .iter()
            .all(|p| p["is_plugin"] == true || p["id"] != n),
        "zellij still has it: {in_zellij}"
    );
    assert!(b
        .audit_lines()
        .iter()
        .any(|l| l["event"] == "pane.close" && l["detail"]["pane"] == second.as_str()));
    // An unknown zellij id is no pane.
    let (status, _) = b.get("/api/panes/testbox/z0-7", Some(&token));
    assert_eq!(status, 404);

    // The session ends: its pane goes.
    let out = z.run(&["kill-session", "work"]);
    assert!(out.status.success(), "kill-session: {out:?}");
    wait_for(Duration::from_secs(15), || {
        zellij_panes(&b, &token).is_empty().then_some(())
    })
    .expect("the pane gone");
}

/// The runs of `row` of a stream event, each style looked up in `styles`.
fn runs(
    ev: &serde_json::Value,
    row: &str,
    styles: &serde_json::Map<String, serde_json::Value>,
) -> Vec<(u64, u64, serde_json::Value)> {
    ev["attrs"][row]
        .as_array()
        .map(|runs| {
            runs.iter()
                .filter_map(|r| {
                    let style = styles.get(&r[2].as_u64()?.to_string())?.clone();
                    Some((r[0].as_u64()?, r[1].as_u64()?, style))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_zellij_pane_is_followed_live_with_colours_scrollback_and_named_keys() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("live");
    let token = b.pair("phone", "full");
    wait_for(Duration::from_secs(15), || {
        (!zellij_panes(&b, &token).is_empty()).then_some(())
    })
    .expect("the zellij pane listed");
    let events = b.sse("/api/panes/testbox/z0-0/stream", &token);
    type_into(
        &b,
        &token,
        "z0-0",
        &json!({ "text": r"printf '\033[31mZRED\033[0m \033[1mB\033[0m\n'; seq 1 80", "keys": ["Enter"] }),
    );

    // Followed: the stream carries the coloured row (its styles as the phone keeps them), then
    // the last line printed.
    let mut styles = serde_json::Map::new();
    let mut coloured = None;
    loop {
        let (_, ev) = events
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("the stream never showed 80 (coloured row: {coloured:?})"));
        if ev["full"] == true {
            styles.clear();
        }
        if let Some(s) = ev["styles"].as_object() {
            styles.extend(s.clone());
        }
        let Some(rows) = ev["rows"].as_object() else {
            continue;
        };
        for (row, line) in rows {
            if line.as_str().is_some_and(|l| l.starts_with("ZRED")) {
                coloured = Some(runs(&ev, row, &styles));
            }
        }
        if rows.values().any(|l| l == "80") {
            break;
        }
    }
    // Printed at once, more than a screen came between two updates: the history is read again
    // from zellij within a poll, every line in order (and the coloured row, if it scrolled by
    // between two updates, is there).
    let (snap, history) = wait_for(Duration::from_secs(15), || {
        let (_, snap) = b.get("/api/panes/testbox/z0-0?scrollback=200", Some(&token));
        let history: Vec<String> = snap["scrollback"]
            .as_array()?
            .iter()
            .chain(snap["lines"].as_array()?)
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect();
        let numbers: Vec<u32> = history.iter().filter_map(|l| l.parse().ok()).collect();
        (numbers == (1..=80).collect::<Vec<_>>()).then_some((snap, history))
    })
    .unwrap_or_else(|| {
        let (_, snap) = b.get("/api/panes/testbox/z0-0?scrollback=200", Some(&token));
        panic!("the whole history never came: {snap}")
    });
    if let Some(runs) = coloured {
        assert_eq!(
            runs,
            vec![(0, 4, json!({"fg": 1})), (5, 1, json!({"bold": true}))],
            "the row's colours"
        );
    } else {
        let row = history
            .iter()
            .position(|l| l.starts_with("ZRED"))
            .expect("the coloured row kept");
        assert!(
            row < snap["scrollback"].as_array().map_or(0, Vec::len),
            "{snap}"
        );
    }
    // The snapshot carries the colours of the rows on screen (the same `attrs` runs as tmux's).
    b.post(
        "/api/panes/testbox/z0-0/input",
        Some(&token),
        &json!({ "text": r"clear; printf '\033[31mZRED\033[0m \033[1mB\033[0m\n'", "keys": ["Enter"] }),
    );
    let (snap, row) = wait_for(Duration::from_secs(15), || {
        let (_, snap) = b.get("/api/panes/testbox/z0-0", Some(&token));
        let row = snap["lines"]
            .as_array()?
            .iter()
            .position(|l| l.as_str().is_some_and(|l| l.starts_with("ZRED")))?;
        Some((snap, row))
    })
    .expect("the coloured row on screen");
    let styles = snap["styles"].as_object().cloned().unwrap_or_default();
    assert_eq!(
        runs(
            &json!({"attrs": {"r": snap["attrs"][row].clone()}}),
            "r",
            &styles
        ),
        vec![(0, 4, json!({"fg": 1})), (5, 1, json!({"bold": true}))],
        "{snap}"
    );

    // Named keys: Ctrl-C ends a program that would run for a minute.
    type_into(
        &b,
        &token,
        "z0-0",
        &json!({ "text": "sleep 60", "keys": ["Enter"] }),
    );
    type_into(&b, &token, "z0-0", &json!({ "keys": ["C-c"] }));
    type_into(
        &b,
        &token,
        "z0-0",
        &json!({ "text": "echo after-ctrl-c", "keys": ["Enter"] }),
    );
    wait_for(Duration::from_secs(10), || {
        pane_text(&b, &token, "z0-0")
            .lines()
            .any(|l| l == "after-ctrl-c")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "Ctrl-C did not end the sleep: {}",
            pane_text(&b, &token, "z0-0")
        )
    });
}

#[test]
fn a_zellij_pane_keeps_its_token_across_a_bridge_restart_and_a_new_session_gets_another() {
    let Some(mut b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("keep");
    let token = b.pair("phone", "full");
    let first = |b: &support::TestBridge| {
        wait_for(Duration::from_secs(15), || {
            zellij_panes(b, &token).first().map(|p| p["token"].clone())
        })
        .expect("the zellij pane listed")
    };
    let before = first(&b);
    // The sessions outlive the bridge (only `Sessions`' drop ends them).
    b.stop();
    b.launch();
    assert_eq!(first(&b), before, "the same pane, the same token");

    // The session ends and one of the same name starts: the same id, another token.
    let out = z.run(&["kill-session", "keep"]);
    assert!(out.status.success(), "{out:?}");
    wait_for(Duration::from_secs(15), || {
        zellij_panes(&b, &token).is_empty().then_some(())
    })
    .expect("the pane gone");
    z.start("keep");
    let again = first(&b);
    assert_ne!(again, before, "a new session's pane has a new token");
}

#[test]
fn a_hook_in_a_zellij_pane_is_placed_in_it_and_answered_from_the_phone() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("agents");
    let token = b.pair("phone", "full");
    wait_for(Duration::from_secs(15), || {
        (!zellij_panes(&b, &token).is_empty()).then_some(())
    })
    .expect("the zellij pane listed");

    // Claude Code's hook, run in the zellij pane: the bridge finds the pane it runs in by its
    // process (the pane's shell, a child of the session's server with ZELLIJ_PANE_ID).
    let dir = b.dir.path();
    let input = dir.join("request.json");
    std::fs::write(&input, bash_request("s-z", "rm -rf build").to_string()).expect("input");
    let (out, done) = (dir.join("hook.out"), dir.join("hook.done"));
    let script = hook::script(&b, &input, &out, &done);
    type_into(
        &b,
        &token,
        "z0-0",
        &json!({ "text": script, "keys": ["Enter"] }),
    );
    let card = card_named(&b, &token, "Tab #1");
    assert_eq!(card["pane"], "z0-0", "{card}");
    assert_eq!(card["machine"], "testbox");
    let (status, v) = b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(&token),
        &json!({"option": "deny", "shown": card["shown"]}),
    );
    assert_eq!(status, 200, "{v}");
    let code = wait_for(Duration::from_secs(20), || {
        std::fs::read_to_string(&done)
            .ok()
            .filter(|c| c.ends_with('\n'))
    })
    .expect("the hook returned");
    assert_eq!(code.trim(), "0");
    let said: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("hook out")).expect("json");
    assert_eq!(
        said["hookSpecificOutput"]["decision"]["behavior"], "deny",
        "{said}"
    );
}

#[test]
fn doctor_says_whether_zellij_panes_are_served_and_why_not() {
    let Some(b) = bridge() else { return };
    let doctor = b.cli(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(said.contains("ok    zellij 0.45.1 found"), "{said}");

    // An older zellij first on PATH: said, with why.
    let old = b.dir.path().join("old-zellij");
    std::fs::create_dir_all(&old).expect("dir");
    let fake = old.join("zellij");
    std::fs::write(&fake, "#!/bin/sh\necho 'zellij 0.43.1'\n").expect("fake");
    let mut perms = std::fs::metadata(&fake).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).expect("chmod");
    let path = format!(
        "{}:{}",
        old.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = b
        .command()
        .env("PATH", &path)
        .arg("doctor")
        .output()
        .expect("doctor");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("warn  zellij 0.43.1 is older than 0.44.0: its panes are not served"),
        "{said}"
    );

    // None at all (a PATH with nothing on it: this machine may have a zellij of its own).
    let out = b
        .command()
        .env("PATH", b.dir.path().join("nothing"))
        .arg("doctor")
        .output()
        .expect("doctor");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("ok    zellij not found: no zellij panes"),
        "{said}"
    );
}

#[test]
fn a_member_s_zellij_pane_is_read_and_typed_into_through_the_lead() {
    let Some(path) = zellij_path() else { return };
    let lead = crew_bridge(false, &[]);
    let member = crew_bridge(false, &[("PATH", &path)]);
    let z = Sessions::of(&member);
    z.start("remote");
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let token = lead.pair("phone", "full");

    let pane = wait_for(Duration::from_secs(20), || {
        let (_, list) = lead.get("/api/panes", Some(&token));
        list["panes"]
            .as_array()?
            .iter()
            .find(|p| p["machine"] == "web-1" && p["backend"] == "zellij")
            .cloned()
    })
    .expect("the member's zellij pane on the lead");
    assert_eq!(pane["pane"], "z0-0");
    let (status, _) = lead.post(
        "/api/panes/web-1/z0-0/input",
        Some(&token),
        &json!({ "text": "echo through-the-lead", "keys": ["Enter"] }),
    );
    assert_eq!(status, 200);
    wait_for(Duration::from_secs(20), || {
        let (_, snap) = lead.get("/api/panes/web-1/z0-0", Some(&token));
        snap["lines"]
            .as_array()?
            .iter()
            .any(|l| l == "through-the-lead")
            .then_some(())
    })
    .expect("the answer read through the lead");
}

#[test]
fn walky_reaches_a_zellij_pane_running_a_program_and_never_one_at_a_shell() {
    let Some(b) = bridge() else { return };
    let z = Sessions::of(&b);
    z.start("crew");
    // A second pane that reads its input (not a shell): where a walky header may be typed.
    let out = z.run(&["--session", "crew", "action", "new-pane", "--", "cat"]);
    assert!(out.status.success(), "new-pane: {out:?}");
    // And a second shell: a pane at its prompt that must never get a header.
    let out = z.run(&["--session", "crew", "action", "new-pane"]);
    assert!(out.status.success(), "new-pane: {out:?}");
    let token = b.pair("phone", "full");

    // `walky who` lists both, each at a shell or not, once their processes are found.
    let who = wait_for(Duration::from_secs(20), || {
        let who = support::json_of(&b.cli_ok(&["walky", "who", "--json"]));
        let panes: Vec<serde_json::Value> = who["panes"]
            .as_array()?
            .iter()
            .filter(|p| p["pane"].as_str().is_some_and(|id| id.starts_with('z')))
            .cloned()
            .collect();
        (panes.len() == 3
            && panes.iter().filter(|p| p["at_shell"] == false).count() == 1
            && panes.iter().filter(|p| p["at_shell"] == true).count() == 2)
            .then_some(panes)
    })
    .expect("the three zellij panes in walky who, two at a shell");
    let mut shells = who.iter().filter(|p| p["at_shell"] == true);
    let shell = shells.next().expect("the sending shell");
    let other_shell = shells.next().expect("the other shell");
    let reader = who.iter().find(|p| p["at_shell"] == false).expect("reader");
    // The one not at a shell is the one zellij says runs `cat` (which of the two zellij numbers
    // first depends on its start-up).
    // (zellij's `list-panes` answers nothing now and then under load: asked again.)
    let listed: serde_json::Value = wait_for(Duration::from_secs(10), || {
        let out = z.run(&["--session", "crew", "action", "list-panes", "--json"]);
        serde_json::from_slice(&out.stdout).ok()
    })
    .expect("list-panes");
    let cat = listed
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|p| p["is_plugin"] == false && p["title"] == "cat")
        })
        .and_then(|p| p["id"].as_u64())
        .expect("the cat pane");
    assert_eq!(reader["pane"], format!("z0-{cat}"), "{who:?}");
    let shell_pane = shell["pane"].as_str().expect("pane").to_owned();
    let reader_pane = reader["pane"].as_str().expect("pane").to_owned();
    let to = reader["address"].as_str().expect("address").to_owned();
    let to_shell = other_shell["address"].as_str().expect("address").to_owned();

    // Sent from inside the first zellij pane: the sender is found by its process, the header
    // lands in the reader's pane, and the shell pane is refused.
    let (text, code) = walky_from(&b, &token, &shell_pane, &to, "W1");
    assert_eq!(code, 0, "{text}");
    wait_for(Duration::from_secs(10), || {
        pane_text(&b, &token, &reader_pane)
            .contains("[walky ")
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "no header in the reader's pane: {}",
            pane_text(&b, &token, &reader_pane)
        )
    });
    let (text, code) = walky_from(&b, &token, &shell_pane, &to_shell, "W2");
    assert_eq!(code, 1, "{text}");
    // (The pane is narrow: the refusal wraps over rows.)
    assert!(
        text.replace('\n', "").contains("is at a shell prompt"),
        "{text}"
    );
    let other = other_shell["pane"].as_str().expect("pane");
    assert!(
        !pane_text(&b, &token, other).contains("[walky "),
        "a header reached a shell: {}",
        pane_text(&b, &token, other)
    );
}
