//! A starter or a shell opened as a new window of a chosen tmux session (issue 14, SPEC §12,
//! decision 0042), against real `collie` processes and a real private tmux server: the window
//! exists in tmux (named, in the folder chosen, running the pinned executable), the answer is the
//! mirrored pane, `pane.create` names the session; unknown and malformed sessions and a changed
//! executable open nothing; through the lead on a member likewise.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge, Tmux};

/// The private tmux server's sessions are on socket 1 (0 is the default socket, with no server
/// in the tests).
const MAIN: &str = "t1:main";

/// A program of the test's own at `<dir>/agent`: prints its argument and its folder, then waits.
fn agent_script(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let agent = dir.join("agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\necho \"STARTED-$1 IN $(pwd)\"\nexec sleep 600\n",
    )
    .expect("write");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    agent
}

fn starter_config(agent: &Path) -> String {
    format!(
        "[[starters]]\nname = \"Agent\"\nexec = \"{}\"\nargs = [\"hello\"]\n",
        agent.display()
    )
}

/// A bridge with a private tmux server and the applied starter `Agent`, and a full device.
fn bridge() -> (TestBridge, String, PathBuf) {
    let mut b = TestBridge::start_with(Opts {
        with_tmux: true,
        ..Opts::default()
    });
    b.stop();
    let home = b.dir.path().join("home");
    let agent = agent_script(&home.join("bin"));
    // The same program without arguments, at a path a shell would split and expand.
    let bare = agent_script(&home.join("my bin $(x)"));
    b.configure(&format!(
        "{}[[starters]]\nname = \"Bare\"\nexec = \"{}\"\n",
        starter_config(&agent),
        bare.display()
    ));
    b.launch();
    let token = b.pair("phone", "full");
    (b, token, agent)
}

/// `list-windows` of session `main`: (window name, pane id, folder, command) per window.
fn windows(tmux: &Tmux) -> Vec<(String, String, String, String)> {
    let out = tmux
        .cmd()
        .args([
            "list-windows",
            "-t",
            "main",
            "-F",
            "#{pane_id}\t#{pane_current_path}\t#{pane_start_command}\t#{window_name}",
        ])
        .output()
        .expect("list-windows");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(4, '\t');
            let (id, path, cmd, name) = (f.next()?, f.next()?, f.next()?, f.next()?);
            Some((name.into(), id.into(), path.into(), cmd.into()))
        })
        .collect()
}

/// The tmux pane id (`%n`) of a bridge pane id `t<i>-<n>`.
fn tmux_id(pane: &str) -> String {
    format!("%{}", pane.rsplit('-').next().expect("pane number"))
}

fn create(b: &TestBridge, token: &str, body: &Value) -> (u16, Value) {
    b.post("/api/panes", Some(token), body)
}

#[test]
fn a_starter_and_a_shell_open_as_named_windows_of_a_mirrored_session() {
    let (b, token, agent) = bridge();
    let tmux = b.tmux.as_ref().expect("tmux");
    let proj = b.dir.path().join("home").join("proj");
    std::fs::create_dir_all(&proj).expect("mkdir");

    // The sessions the bridge mirrors, named as a create names them.
    let (s, v) = b.get("/api/sessions/local", Some(&token));
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v,
        json!({"machine": "testbox", "sessions": [{"session": MAIN, "name": "main", "socket": 1}]})
    );
    let reader = b.pair("reader", "read");
    assert_eq!(b.get("/api/sessions/local", Some(&reader)).0, 403);

    let (s, v) = create(
        &b,
        &token,
        &json!({"machine": "local", "starter": "Agent", "session": MAIN,
                "name": "agent-win", "folder": "~/proj"}),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["backend"].as_str(), v["name"].as_str()),
        (Some("tmux"), Some("agent-win"))
    );
    let pane = v["pane"].as_str().expect("pane").to_owned();
    assert!(pane.starts_with("t1-"), "{pane}");
    let id = tmux_id(&pane);
    let proj = std::fs::canonicalize(&proj).expect("proj");
    let win = windows(tmux)
        .into_iter()
        .find(|w| w.1 == id)
        .expect("tmux lists the new window");
    assert_eq!(win.0, "agent-win");
    assert!(win.3.contains(&agent.display().to_string()), "{win:?}");
    let ran = wait_for(Duration::from_secs(10), || {
        tmux.capture(&id)
            .contains(&format!("STARTED-hello IN {}", proj.display()))
            .then_some(())
    });
    assert!(
        ran.is_some(),
        "the pinned exec ran with its args in the folder: {}",
        tmux.capture(&id)
    );
    // The answer is the mirrored pane: the bridge reads it.
    let (s, _) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
    assert_eq!(s, 200);
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "pane.create")
        .expect("pane.create");
    assert_eq!(line["detail"]["session"], MAIN);
    assert_eq!(line["detail"]["starter"], "Agent");
    assert_eq!(line["detail"]["pane"], pane.as_str());
    assert_eq!(line["detail"]["folder"], proj.display().to_string());
    assert_eq!(line["device"], "phone");

    // A one-word command (a starter without arguments) runs as its path, never as shell text.
    let (s, v) = create(
        &b,
        &token,
        &json!({"machine": "local", "starter": "Bare", "session": MAIN}),
    );
    assert_eq!(s, 200, "{v}");
    let id = tmux_id(v["pane"].as_str().expect("pane"));
    let ran = wait_for(Duration::from_secs(10), || {
        tmux.capture(&id).contains("STARTED- IN").then_some(())
    });
    assert!(ran.is_some(), "the bare starter ran: {}", tmux.capture(&id));

    // The user's shell, named with what tmux would expand: the name stays as written.
    let (s, v) = create(
        &b,
        &token,
        &json!({"machine": "local", "session": MAIN, "name": "sh #{session_name} #(id)"}),
    );
    assert_eq!(s, 200, "{v}");
    let id = tmux_id(v["pane"].as_str().expect("pane"));
    let win = windows(tmux)
        .into_iter()
        .find(|w| w.1 == id)
        .expect("tmux lists the shell's window");
    assert_eq!(win.0, "sh #{session_name} #(id)");
    assert_eq!(win.3, "", "no command: the session's default shell");
    assert_eq!(v["name"], "sh #{session_name} #(id)");
}

#[test]
fn the_cli_lists_the_sessions_and_opens_a_window_or_a_pane_in_a_folder() {
    let (b, _token, _agent) = bridge();
    let tmux = b.tmux.as_ref().expect("tmux");
    let proj = b.dir.path().join("home").join("proj");
    std::fs::create_dir_all(&proj).expect("mkdir");
    let proj = std::fs::canonicalize(&proj).expect("proj");

    assert_eq!(b.cli_ok(&["panes", "sessions"]).trim(), MAIN);
    let out = b.cli_ok(&[
        "panes",
        "new",
        "--json",
        "--session",
        MAIN,
        "--name",
        "cli-win",
        "--folder",
        "~/proj",
        "--",
        "sh",
        "-c",
        "echo IN-$PWD; exec cat",
    ]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (v["backend"].as_str(), v["name"].as_str()),
        (Some("tmux"), Some("cli-win"))
    );
    let id = tmux_id(v["pane"].as_str().expect("pane"));
    let win = windows(tmux)
        .into_iter()
        .find(|w| w.1 == id)
        .expect("tmux lists the window");
    assert_eq!(win.0, "cli-win");
    let ran = wait_for(Duration::from_secs(10), || {
        tmux.capture(&id)
            .contains(&format!("IN-{}", proj.display()))
            .then_some(())
    });
    assert!(ran.is_some(), "ran in the folder: {}", tmux.capture(&id));
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "pane.create" && l["detail"]["session"] == MAIN)
        .expect("pane.create");
    assert_eq!(line["detail"]["folder"], proj.display().to_string());

    // Without --session: a hosted pane, in the folder.
    let out = b.cli_ok(&[
        "panes",
        "new",
        "--json",
        "--folder",
        "~/proj",
        "--",
        "sh",
        "-c",
        "echo AT-$PWD; exec cat",
    ]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["backend"], "pty", "a hosted pane");
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let seen = wait_for(Duration::from_secs(10), || {
        let screen = b.cli_ok(&["panes", "read", &pane]);
        screen
            .contains(&format!("AT-{}", proj.display()))
            .then_some(())
    });
    assert!(seen.is_some(), "the hosted pane started in the folder");

    // An unknown session or a folder outside the workspaces opens nothing and says why.
    let before = windows(tmux).len();
    let out = b.cli(&["panes", "new", "--session", "t1:nope"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = b.cli(&["panes", "new", "--session", MAIN, "--folder", "/"]);
    assert!(!out.status.success());
    assert_eq!(windows(tmux).len(), before, "no window was opened");
}

#[test]
fn unknown_or_malformed_sessions_and_a_changed_exec_open_no_window() {
    let (b, token, agent) = bridge();
    let tmux = b.tmux.as_ref().expect("tmux");
    let before = windows(tmux).len();
    let refusal = |body: Value| {
        let (s, v) = create(&b, &token, &body);
        (s, v["error"].as_str().unwrap_or_default().to_owned())
    };
    for session in ["t1:nope", "t7:main", "t0:main", "t1:mai"] {
        assert_eq!(
            refusal(json!({"machine": "local", "session": session})),
            (404, "no such session".to_owned()),
            "{session}"
        );
    }
    for session in ["main", "t1:ma.in", "t01:main", "t1:", "t1:a\nb"] {
        let (s, e) = refusal(json!({"machine": "local", "session": session}));
        assert_eq!(s, 400, "{session}: {e}");
        assert!(e.starts_with("invalid session"), "{e}");
    }
    let long = format!("t1:{}", "m".repeat(300));
    assert_eq!(refusal(json!({"machine": "local", "session": long})).0, 400);
    assert_eq!(
        refusal(json!({"machine": "local", "session": MAIN, "folder": "/etc"})),
        (403, "path outside the workspace".to_owned())
    );

    // Changed on disk after apply: refused just before the spawn, nothing opened.
    std::fs::write(&agent, "#!/bin/sh\necho EVIL\nexec sleep 600\n").expect("write");
    assert_eq!(
        refusal(json!({"machine": "local", "starter": "Agent", "session": MAIN})),
        (409, "starter changed".to_owned())
    );
    assert_eq!(windows(tmux).len(), before, "no window was opened");
    assert!(b.audit_lines().iter().all(|l| l["event"] != "pane.create"));
}

#[test]
fn a_window_whose_audit_line_cannot_be_written_is_closed_again() {
    let (b, token, _) = bridge();
    let tmux = b.tmux.as_ref().expect("tmux");
    let before = windows(tmux).len();
    let log = b.state().join("audit.log");
    std::fs::remove_file(&log).expect("remove the log");
    std::fs::create_dir(&log).expect("a directory in the log's place");
    let (s, v) = create(&b, &token, &json!({"machine": "local", "session": MAIN}));
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("audit unavailable")),
        "{v}"
    );
    let closed = wait_for(Duration::from_secs(10), || {
        (windows(tmux).len() == before).then_some(())
    });
    assert!(
        closed.is_some(),
        "the window was killed again: {:?}",
        windows(tmux)
    );
    std::fs::remove_dir(&log).expect("remove the directory");
}

#[test]
fn a_member_s_session_gets_a_window_through_the_lead() {
    let lead = support::crew_bridge(false, &[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = agent_script(dir.path());
    let member = support::crew_bridge_configured(true, &[], Some(&starter_config(&agent)));
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    lead.wait_member_online("web-1");
    let phone = lead.pair("phone", "full");
    let tmux = member.tmux.as_ref().expect("member tmux");

    let (s, v) = lead.get("/api/sessions/web-1", Some(&phone));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["machine"], "web-1");
    assert_eq!(v["sessions"][0]["session"], MAIN);

    let (s, v) = create(
        &lead,
        &phone,
        &json!({"machine": "web-1", "starter": "Agent", "session": MAIN, "name": "remote"}),
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["machine"].as_str(), v["backend"].as_str()),
        (Some("web-1"), Some("tmux"))
    );
    let pane = v["pane"].as_str().expect("pane").to_owned();
    let id = tmux_id(&pane);
    assert!(windows(tmux).iter().any(|w| w.1 == id && w.0 == "remote"));
    let ran = wait_for(Duration::from_secs(10), || {
        tmux.capture(&id).contains("STARTED-hello").then_some(())
    });
    assert!(ran.is_some(), "the member ran its own pinned starter");
    for (who, lines) in [
        ("lead", lead.audit_lines()),
        ("member", member.audit_lines()),
    ] {
        let line = lines
            .into_iter()
            .find(|l| l["event"] == "pane.create")
            .unwrap_or_else(|| panic!("{who}: pane.create"));
        assert_eq!(line["detail"]["session"], MAIN, "{who}: {line}");
        assert_eq!(line["machine"], "web-1", "{who}: {line}");
    }

    // The member checks its own sessions; its refusal comes back in the same words.
    let (s, v) = create(
        &lead,
        &phone,
        &json!({"machine": "web-1", "session": "t1:nope"}),
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (404, Some("no such session")),
        "{v}"
    );
    let (s, v) = create(
        &lead,
        &phone,
        &json!({"machine": "web-1", "session": "nope"}),
    );
    assert_eq!(s, 400, "checked on the lead before a round trip: {v}");
}
