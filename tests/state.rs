//! Black-box tests of what the bridge keeps on disk: file modes, the store across restarts and
//! crashes, the audit log (fail closed, verify), expiry and label takeover, and the CLI without a
//! bridge.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use collie_actors::pairing::Device;
use collie_actors::store::{Store, Table};
use serde_json::{json, Value};
use support::{wait_for, Opts, TestBridge};

fn walk(dir: &Path, out: &mut Vec<(std::path::PathBuf, u32, bool)>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let meta = std::fs::symlink_metadata(e.path()).expect("meta");
        let mode = meta.permissions().mode() & 0o777;
        out.push((e.path(), mode, meta.is_dir()));
        if meta.is_dir() {
            walk(&e.path(), out);
        }
    }
}

#[test]
fn every_file_in_the_state_dir_is_private() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let (s, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"keys": ["Enter"]}),
    );
    assert_eq!(s, 200);
    let state = b.state();
    assert_eq!(
        std::fs::metadata(&state)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let mut files = Vec::new();
    walk(&state, &mut files);
    let names: Vec<String> = files
        .iter()
        .map(|(p, _, _)| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for must in ["audit.log", "local-secret", "bridge.sock", "db"] {
        assert!(names.iter().any(|n| n == must), "{must} exists: {names:?}");
    }
    for (path, mode, is_dir) in files {
        let want = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(mode & !want, 0, "{} has mode {mode:o}", path.display());
    }
}

#[test]
fn store_files_are_private_from_creation() {
    let mut b = TestBridge::start_with(support::Opts::default());
    b.pair("phone", "full");
    b.cli_ok(&["devices", "set-expiry", "phone", "30d"]);
    b.stop();
    // With no bridge running, the CLI opens the store itself (and sled writes its snapshot when
    // the CLI closes it): those files must be private from the moment they exist, not only after
    // the next bridge start tightens them.
    b.cli_ok(&["audit", "verify"]);
    let _ = b.cli(&["doctor"]);
    let mut files = Vec::new();
    walk(&b.state(), &mut files);
    assert!(
        files.iter().any(|(p, _, _)| p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("snap."))),
        "the store wrote a snapshot: {files:?}"
    );
    for (path, mode, is_dir) in files {
        let want = if is_dir { 0o700 } else { 0o600 };
        assert_eq!(mode & !want, 0, "{} has mode {mode:o}", path.display());
    }
}

#[test]
fn clean_exit_removes_the_secret_and_socket() {
    let mut b = TestBridge::start_with(Opts::default());
    assert!(b.state().join("local-secret").exists());
    let st = b.stop().expect("exit status");
    assert!(st.success(), "clean exit: {st:?}");
    assert!(!b.state().join("local-secret").exists());
    assert!(!b.state().join("bridge.sock").exists());
}

#[test]
fn cli_without_a_bridge_says_so_in_one_line() {
    let mut b = TestBridge::start_with(Opts::default());
    b.stop();
    for args in [&["panes"][..], &["pair"], &["devices", "list"]] {
        let out = b.cli(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("collie bridge"),
            "names the command that starts it: {err}"
        );
    }
    let out = b.cli(&["pair", "--tier", "root"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn a_reader_that_leaves_early_ends_the_output_quietly() {
    // `collie devices list | head -1`: the reader is gone before everything is written. Rust
    // ignores SIGPIPE, so the write fails with EPIPE; the command must stop there, quietly and
    // successfully, rather than panic with "failed printing to stdout". The pipe's read end is
    // closed before the command starts, so the first write already fails.
    let b = TestBridge::start_with(Opts::default());
    b.pair("phone", "read");
    for args in [
        &["devices", "list"][..],
        &["version"],
        &["devices", "list", "--json"],
    ] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = b
            .command()
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .output()
            .expect("run collie");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} says nothing: {err}");
    }
}

#[test]
fn tokens_and_pane_tokens_survive_a_restart() {
    let mut b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let (_, before) = b.get("/api/panes", Some(&token));
    b.stop();
    b.launch();
    let pane2 = b.first_tmux_pane(&token);
    assert_eq!(pane, pane2);
    let (_, after) = b.get("/api/panes", Some(&token));
    assert_eq!(
        before["panes"][0]["token"], after["panes"][0]["token"],
        "pane token stable across restart"
    );
}

#[test]
fn pane_token_changes_when_the_id_is_reused() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let (_, v) = b.get("/api/panes", Some(&token));
    let tok1 = v["panes"][0]["token"].as_str().expect("token").to_string();
    // A new tmux server reuses %0 for a different pane instance.
    let tmux = b.tmux.as_ref().expect("tmux");
    let _ = tmux.cmd().arg("kill-server").output();
    // The old server may take a moment to let go of its socket.
    let started = wait_for(Duration::from_secs(10), || {
        let out = tmux
            .cmd()
            .args(["new-session", "-d", "-s", "main", "-x", "100", "-y", "30"])
            .output()
            .expect("tmux");
        out.status.success().then_some(())
    });
    assert!(started.is_some(), "a new tmux server started");
    let tok2 = wait_for(Duration::from_secs(15), || {
        let (_, v) = b.get("/api/panes", Some(&token));
        let p = v["panes"]
            .as_array()?
            .iter()
            .find(|p| p["pane"] == pane.as_str())?
            .clone();
        let t = p["token"].as_str()?.to_string();
        (t != tok1).then_some(t)
    });
    assert!(tok2.is_some(), "token changed after the id was reused");
}

#[test]
fn audit_fails_closed_when_the_log_cannot_be_written() {
    let b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    let log = b.state().join("audit.log");
    std::fs::remove_file(&log).expect("remove log");
    std::fs::create_dir(&log).expect("a directory in the log's place");
    let (s, v) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&token),
        &json!({"text": "echo must-not-run-$((1+1))", "keys": ["Enter"]}),
    );
    assert_eq!((s, v["error"].as_str()), (503, Some("audit unavailable")));
    // Type a marker straight into tmux; once its output shows, anything the bridge had typed before
    // would show too.
    let tmux = b.tmux.as_ref().expect("tmux");
    let out = tmux
        .cmd()
        .args(["send-keys", "-t", "main", "echo marker-$((2+3))", "Enter"])
        .output()
        .expect("tmux send-keys");
    assert!(out.status.success());
    let screen = wait_for(Duration::from_secs(10), || {
        let text = tmux.capture("main");
        text.contains("marker-5").then_some(text)
    })
    .expect("the marker ran");
    assert!(
        !screen.contains("must-not-run"),
        "nothing was typed: {screen}"
    );
    // Pairing is a write too.
    let code = b.code("full");
    let (s, v) = b.post("/api/pair", None, &json!({"code": code, "label": "second"}));
    assert_eq!((s, v["error"].as_str()), (503, Some("audit unavailable")));
}

#[test]
fn audit_lines_mask_typed_text_and_verify_detects_tampering() {
    let mut b = TestBridge::start();
    let token = b.pair("phone", "full");
    let pane = b.first_tmux_pane(&token);
    for i in 0..3 {
        let (s, _) = b.post(
            &format!("/api/panes/local/{pane}/input"),
            Some(&token),
            &json!({"text": format!("echo secret-typing-{i}"), "keys": ["Enter"]}),
        );
        assert_eq!(s, 200);
    }
    let log_path = b.state().join("audit.log");
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        !log.contains("secret-typing"),
        "typed characters are never written"
    );
    assert!(
        log.contains("\"pane.input\"") && log.contains("Enter"),
        "named keys readable"
    );
    let out = b.cli_ok(&["audit", "verify"]);
    assert!(out.contains("ok"), "{out}");
    let tail = b.cli_ok(&["audit", "tail", "-n", "2"]);
    assert_eq!(tail.lines().count(), 2);

    b.stop();
    // Alter the third line.
    let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
    let third: Value = serde_json::from_str(&lines[2]).expect("json");
    let seq = third["seq"].as_u64().expect("seq");
    lines[2] = lines[2]
        .replacen("\"pane.input\"", "\"pane.close\"", 1)
        .replacen("\"device.paired\"", "\"device.revoked\"", 1);
    std::fs::write(&log_path, lines.join("\n") + "\n").expect("write");
    let out = b.cli(&["audit", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("seq {seq}")),
        "names the first bad seq: {text}"
    );

    // Remove the last line: the store's tail catches it.
    let original: Vec<&str> = log.lines().collect();
    std::fs::write(&log_path, original[..original.len() - 1].join("\n") + "\n").expect("write");
    let out = b.cli(&["audit", "verify"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn expired_device_gets_403_and_its_label_can_be_taken_over() {
    let mut b = TestBridge::start_with(Opts::default());
    let token = b.pair("phone", "full");
    b.cli_ok(&["devices", "set-expiry", "phone", "1h"]);
    let out = b.cli_ok(&["devices", "list", "--json"]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert!(v["devices"][0]["expires_at"].is_string());
    b.stop();
    {
        // Move the expiry into the past, as if time had passed.
        let store = Store::open(&b.state().join("db")).expect("store");
        let raw = store
            .get(Table::Devices, "phone")
            .expect("get")
            .expect("device");
        let mut d: Device = serde_json::from_slice(&raw).expect("device json");
        d.expires_at = Some(time::OffsetDateTime::now_utc() - time::Duration::minutes(1));
        store
            .put(
                Table::Devices,
                "phone",
                &serde_json::to_vec(&d).expect("json"),
            )
            .expect("put");
    }
    b.launch();
    let (s, v) = b.get("/api/panes", Some(&token));
    assert_eq!((s, v["error"].as_str()), (403, Some("device expired")));
    // The label of an expired device is taken over; the old token is revoked and that is audited.
    let token2 = b.pair("phone", "read");
    let (s, _) = b.get("/api/panes", Some(&token2));
    assert_eq!(s, 200);
    let (s, v) = b.get("/api/panes", Some(&token));
    assert_eq!((s, v["error"].as_str()), (403, Some("device not paired")));
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("log");
    assert!(log.contains("\"device.revoked\""), "takeover audited");
    // clear-expiry works on the new device.
    b.cli_ok(&["devices", "clear-expiry", "phone"]);
}

#[test]
fn acknowledged_changes_survive_sigkill() {
    let mut b = TestBridge::start_with(Opts::default());
    // A burst of pairings from varying sources, plus revocations and tier changes, killed midway.
    let mut acked: Vec<(String, String)> = Vec::new(); // (label, token)
    let mut revoked: Vec<String> = Vec::new();
    let mut tiers: Vec<(String, &str)> = Vec::new();
    for i in 0..40 {
        let code = b.code("full");
        let label = format!("dev{i}");
        let xff = format!("198.51.100.{}", i + 1);
        let (s, _, body) = b.raw(
            "POST",
            "/api/pair",
            None,
            Some(&json!({"code": code, "label": label})),
            &[("X-Forwarded-For", &xff)],
        );
        assert_eq!(s, 200, "{body}");
        let v: Value = serde_json::from_str(&body).expect("json");
        acked.push((
            label.clone(),
            v["token"].as_str().expect("token").to_string(),
        ));
        if i % 5 == 1 {
            b.cli_ok(&["devices", "revoke", &label]);
            revoked.push(label.clone());
        } else if i % 5 == 3 {
            b.cli_ok(&["devices", "set-tier", &label, "read"]);
            tiers.push((label.clone(), "read"));
        }
    }
    b.kill_hard();
    b.launch();
    for (label, token) in &acked {
        let (s, v) = b.get("/api/panes", Some(token));
        if revoked.contains(label) {
            assert_eq!(
                (s, v["error"].as_str()),
                (403, Some("device not paired")),
                "{label}"
            );
        } else {
            assert_eq!(s, 200, "{label} survived: {v}");
        }
    }
    let out = b.cli_ok(&["devices", "list", "--json"]);
    let v: Value = serde_json::from_str(&out).expect("json");
    let list = v["devices"].as_array().expect("devices");
    assert_eq!(list.len(), acked.len() - revoked.len());
    for (label, tier) in &tiers {
        let d = list
            .iter()
            .find(|d| d["label"] == label.as_str())
            .expect("listed");
        assert_eq!(d["tier"], *tier);
    }
}

#[test]
fn hosted_panes_and_the_resource_cap() {
    let b = TestBridge::start_with(Opts::default());
    let token = b.pair("phone", "full");
    let out = b.cli_ok(&[
        "panes",
        "new",
        "--name",
        "job",
        "--",
        "sh",
        "-c",
        "echo pane=$COLLIE_PANE; exec cat",
    ]);
    let addr = out.trim().to_string();
    assert!(addr.starts_with("testbox/p"), "{addr}");
    let pane = addr
        .split('/')
        .nth(1)
        .and_then(|p| p.split('#').next())
        .expect("id")
        .to_string();
    let shown = wait_for(Duration::from_secs(10), || {
        let (_, v) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
        let t: String = v["lines"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n");
        t.contains("pane=testbox/").then_some(t)
    });
    assert!(shown
        .expect("COLLIE_PANE shown")
        .contains(&format!("pane={addr}")));
    b.cli_ok(&["panes", "send", &pane, "typed-through-cli", "--enter"]);
    let read = wait_for(Duration::from_secs(10), || {
        let out = b.cli_ok(&["panes", "read", &pane]);
        out.contains("typed-through-cli").then_some(out)
    });
    assert!(read.is_some());
    b.cli_ok(&["panes", "rename", &pane, "renamed"]);
    let (_, v) = b.get("/api/panes", Some(&token));
    assert!(v["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .any(|p| p["name"] == "renamed"));

    // Fill up to the cap: the next one is refused and audited.
    let mut refused = None;
    for i in 0..70 {
        let (s, v) = b.post(
            "/api/panes",
            Some(&token),
            &json!({"machine": "local", "name": format!("n{i}")}),
        );
        if s != 200 {
            refused = Some((s, v));
            break;
        }
    }
    let (s, v) = refused.expect("a cap was reached");
    assert_eq!((s, v["error"].as_str()), (503, Some("resource limit")));
    let log = std::fs::read_to_string(b.state().join("audit.log")).expect("log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let denied = lines
        .iter()
        .find(|l| l["event"] == "resource.denied")
        .expect("resource.denied");
    // It names who asked and which request (SPEC §7), and the refused create wrote no
    // pane.create: a line is written for what happened.
    assert_eq!(denied["device"], "phone", "{denied}");
    assert!(
        denied["request_id"].as_str().is_some_and(|r| r.len() == 32),
        "{denied}"
    );
    let created = lines.iter().filter(|l| l["event"] == "pane.create").count();
    let listed = b.get("/api/panes", Some(&token)).1["panes"]
        .as_array()
        .expect("panes")
        .iter()
        .filter(|p| p["backend"] == "pty")
        .count();
    assert_eq!(created, listed, "one pane.create per pane made");
    b.cli_ok(&["panes", "close", &pane]);
    let (s, _) = b.get(&format!("/api/panes/local/{pane}"), Some(&token));
    assert_eq!(s, 404);
}

#[test]
fn redact_filter_and_doctor() {
    let b = TestBridge::start_with(Opts::default());
    let input = b.dir.path().join("log.txt");
    std::fs::write(
        &input,
        "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\nplain line\n",
    )
    .expect("write");
    let out = b.cli_ok(&["redact", input.to_str().expect("utf-8")]);
    assert!(
        !out.contains("abcdefghijklmnopqrstuvwxyz0123456789"),
        "{out}"
    );
    assert!(out.contains("plain line"));
    assert_eq!(out.lines().count(), 2);

    let out = b.cli(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bridge running"), "{text}");
    assert!(text.contains("no paired devices"), "{text}");
    assert!(text.contains("masking on"), "{text}");
    assert!(text.contains("audit chain ok"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

#[test]
fn an_unreadable_device_store_answers_pairing_unavailable_and_recovers() {
    let mut b = TestBridge::start_with(Opts::default());
    let token = b.pair("phone", "full");
    b.stop();
    let good = {
        let store = Store::open(&b.state().join("db")).expect("store");
        let good = store
            .get(Table::Devices, "phone")
            .expect("get")
            .expect("device");
        store
            .put(Table::Devices, "phone", b"{ half-written")
            .expect("put");
        good
    };
    b.launch();
    let (s, v) = b.get("/api/panes", Some(&token));
    assert_eq!((s, v["error"].as_str()), (503, Some("pairing unavailable")));
    let (s, v) = b.get(
        "/api/panes",
        Some("collie_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    );
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("pairing unavailable")),
        "no token is judged"
    );
    let code = b.code("full");
    let (s, v) = b.post("/api/pair", None, &json!({"code": code, "label": "other"}));
    assert_eq!((s, v["error"].as_str()), (503, Some("pairing unavailable")));
    let (s, _) = b.get("/api/health", None);
    assert_eq!(s, 200, "the bridge itself keeps serving");
    let out = b.cli(&["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("device store cannot be read"));
    b.stop();
    {
        let store = Store::open(&b.state().join("db")).expect("store");
        store.put(Table::Devices, "phone", &good).expect("put");
    }
    b.launch();
    let (s, _) = b.get("/api/panes", Some(&token));
    assert_eq!(s, 200, "the phone kept its token and it works again");
}

/// Starts `collie bridge` in a new tmux window of `tmux` (a real terminal), with `extra` in its
/// environment; returns the window's screen, escape sequences included, once a log line showed.
fn bridge_log_in_a_terminal(tmux: &support::Tmux, dir: &Path, name: &str, extra: &str) -> String {
    let state = dir.join(format!("state-{name}"));
    let line = format!(
        "env -i PATH=\"$PATH\" HOME={home} COLLIE_STATE_DIR={state} COLLIE_CONFIG_DIR={config} \
         COLLIE_LOG=info {extra} {bin} bridge --port 0 --crew-port 0 --name {name}",
        home = dir.join("home").display(),
        state = state.display(),
        config = dir.join("config").display(),
        bin = support::collie_bin().display(),
    );
    let out = tmux
        .cmd()
        .args(["new-window", "-d", "-n", name, &line])
        .output()
        .expect("tmux new-window");
    assert!(out.status.success(), "{out:?}");
    let screen = wait_for(Duration::from_secs(10), || {
        let out = tmux
            .cmd()
            .args(["capture-pane", "-p", "-e", "-J", "-t", name])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("device store read").then_some(text)
    })
    .unwrap_or_else(|| panic!("no log line from the bridge in window {name}"));
    let _ = tmux.cmd().args(["kill-window", "-t", name]).output();
    screen
}

#[test]
fn logs_are_coloured_only_for_a_person_at_a_terminal() {
    // Into a file or a pipe: plain text.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(support::collie_bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("COLLIE_STATE_DIR", dir.path().join("state"))
        .env("COLLIE_CONFIG_DIR", dir.path().join("config"))
        .env("COLLIE_LOG", "info")
        .env("COLLIE_UPDATE_CHECK", "off")
        .env("ZELLIJ_SOCKET_DIR", dir.path().join("zellij"))
        .args([
            "bridge",
            "--port",
            "0",
            "--crew-port",
            "0",
            "--name",
            "piped",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut reader = std::io::BufReader::new(stderr);
    let mut seen = String::new();
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) > 0 {
        seen.push_str(&line);
        if line.contains("device store read") {
            break;
        }
        line.clear();
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.contains("device store read"), "{seen}");
    assert!(!seen.contains('\x1b'), "ANSI codes in a pipe: {seen:?}");

    // At a terminal: colour, unless NO_COLOR is set.
    let b = TestBridge::start();
    let tmux = b.tmux.as_ref().expect("tmux");
    let coloured = bridge_log_in_a_terminal(tmux, b.dir.path(), "tty", "");
    assert!(
        coloured.contains("\x1b["),
        "colour at a terminal: {coloured:?}"
    );
    let plain = bridge_log_in_a_terminal(tmux, b.dir.path(), "nocolor", "NO_COLOR=1");
    let log_lines: Vec<&str> = plain
        .lines()
        .filter(|l| l.contains("INFO") || l.contains("WARN"))
        .collect();
    assert!(!log_lines.is_empty(), "{plain:?}");
    assert!(
        log_lines.iter().all(|l| !l.contains('\x1b')),
        "NO_COLOR: {log_lines:?}"
    );
}
