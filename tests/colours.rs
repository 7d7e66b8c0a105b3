//! Colours and attributes on the phone (SPEC §5 "Colours", issue 15; decision 0043): a hosted
//! pane and a tmux mirror printing SGR colours give `attrs` runs and `styles` in the snapshot and
//! on the stream; a masked secret inside a coloured run keeps its columns (here and re-masked by
//! the lead); a member's pane through the lead has the same colours; a program painting thousands
//! of colours cannot make a snapshot or an event carry more than the caps. Real bridges, real tmux
//! on private sockets, a real crew on loopback.

mod support;

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use support::{crew_bridge, url_encode, wait_for, TestBridge};

/// What the shell prints: red, a 256-colour orange, true colour, bold, italic, underline,
/// inverse and a green background, each reset after.
const SGR: &str = r"\033[31mRED1\033[0m \033[38;5;208mORG2\033[0m \033[38;2;10;20;30mTRU3\033[0m \033[1mB\033[0m \033[3mI\033[0m \033[4mU\033[0m \033[7mV\033[0m \033[42mG\033[0m\n";

/// The runs `SGR` must give, with their styles resolved.
fn expected() -> Vec<(u64, u64, Value)> {
    vec![
        (0, 4, json!({"fg": 1})),
        (5, 4, json!({"fg": 208})),
        (10, 4, json!({"fg": "#0a141e"})),
        (15, 1, json!({"bold": true})),
        (17, 1, json!({"italic": true})),
        (19, 1, json!({"underline": true})),
        (21, 1, json!({"inverse": true})),
        (23, 1, json!({"bg": 2})),
    ]
}

/// `runs` (`[[start, len, style], …]`) with each style looked up in `styles`.
fn resolved(runs: &Value, styles: &serde_json::Map<String, Value>) -> Vec<(u64, u64, Value)> {
    runs.as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|r| {
            let style = styles
                .get(&r[2].as_u64().expect("style number").to_string())
                .unwrap_or_else(|| panic!("style {} is not in the table {styles:?}", r[2]))
                .clone();
            (
                r[0].as_u64().expect("as the test wrote it"),
                r[1].as_u64().expect("as the test wrote it"),
                style,
            )
        })
        .collect()
}

fn snapshot(b: &TestBridge, token: &str, machine: &str, pane: &str) -> Value {
    let (s, v) = b.get(
        &format!("/api/panes/{machine}/{}", url_encode(pane)),
        Some(token),
    );
    assert_eq!(s, 200, "{v}");
    v
}

/// Waits until a row of `pane`'s snapshot starts with `start`; returns the snapshot and the row.
fn snapshot_with(
    b: &TestBridge,
    token: &str,
    machine: &str,
    pane: &str,
    start: &str,
) -> (Value, usize) {
    wait_for(Duration::from_secs(15), || {
        let v = snapshot(b, token, machine, pane);
        let row = v["lines"]
            .as_array()?
            .iter()
            .position(|l| l.as_str().is_some_and(|l| l.starts_with(start)))?;
        Some((v, row))
    })
    .unwrap_or_else(|| panic!("no row starting {start:?} on {machine}/{pane}"))
}

fn assert_snapshot_colours(v: &Value, row: usize) {
    let styles = v["styles"].as_object().expect("styles in the snapshot");
    assert_eq!(resolved(&v["attrs"][row], styles), expected(), "{v}");
    assert_eq!(
        v["attrs"].as_array().expect("attrs").len(),
        v["lines"].as_array().expect("lines").len(),
        "one list of runs per row"
    );
}

/// A phone's stream of a pane, with the style table as the phone keeps it.
struct Watch {
    events: mpsc::Receiver<(String, Value)>,
    styles: serde_json::Map<String, Value>,
}

fn watch(b: &TestBridge, token: &str, machine: &str, pane: &str) -> Watch {
    let path = format!("/api/panes/{machine}/{}/stream", url_encode(pane));
    Watch {
        events: b.sse(&path, token),
        styles: serde_json::Map::new(),
    }
}

impl Watch {
    /// Reads events (keeping the style table as the phone does: afresh on a full event, added to
    /// otherwise) until one carries a row starting with `start`; returns that event and the row.
    fn until_row(&mut self, start: &str) -> (Value, String) {
        loop {
            let (_, ev) = self
                .events
                .recv_timeout(Duration::from_secs(15))
                .unwrap_or_else(|_| panic!("no event with a row starting {start:?}"));
            if ev["full"] == true {
                self.styles.clear();
            }
            if let Some(s) = ev["styles"].as_object() {
                self.styles.extend(s.clone());
            }
            let found = ev["rows"].as_object().and_then(|rows| {
                rows.iter()
                    .find(|(_, l)| l.as_str().is_some_and(|l| l.starts_with(start)))
                    .map(|(k, _)| k.clone())
            });
            if let Some(row) = found {
                return (ev, row);
            }
        }
    }

    fn assert_colours(&mut self, start: &str) {
        let (ev, row) = self.until_row(start);
        assert_eq!(
            resolved(&ev["attrs"][&row], &self.styles),
            expected(),
            "{ev}"
        );
    }
}

/// Types `printf '<format>'` and Enter into `target` of `b`'s tmux.
fn tmux_printf(b: &TestBridge, target: &str, format: &str) {
    let tmux = b.tmux.as_ref().expect("tmux");
    for keys in [vec!["-l", &format!("printf '{format}'")[..]], vec!["Enter"]] {
        let out = tmux
            .cmd()
            .args(["send-keys", "-t", target])
            .args(keys)
            .output()
            .expect("send-keys");
        assert!(out.status.success(), "{out:?}");
    }
}

fn hosted_printf(b: &TestBridge, name: &str, format: &str) -> String {
    let info = b.hosted(
        name,
        &["sh", "-c", &format!("printf '{format}'; exec sleep 600")],
    );
    info["pane"].as_str().expect("pane id").to_owned()
}

#[test]
fn a_hosted_pane_and_a_tmux_mirror_show_sgr_colours_in_snapshots_and_streams() {
    let mut b = TestBridge::start();
    let token = b.pair("phone", "full");

    // A hosted pane: the snapshot and the stream's first (full) event.
    let hosted = hosted_printf(&b, "colours", SGR);
    let (v, row) = snapshot_with(&b, &token, "local", &hosted, "RED1");
    assert_snapshot_colours(&v, row);
    let mut w = watch(&b, &token, "local", &hosted);
    w.assert_colours("RED1");

    // A tmux mirror: a stream that is already running gets the coloured row and its styles.
    let tmux_pane = b.first_tmux_pane(&token);
    let mut w = watch(&b, &token, "local", &tmux_pane);
    let _ = w.until_row("");
    tmux_printf(&b, "main", SGR);
    w.assert_colours("RED1");
    let (v, row) = snapshot_with(&b, &token, "local", &tmux_pane, "RED1");
    assert_snapshot_colours(&v, row);

    // A bridge started on a screen that is already coloured seeds its mirror with the colours.
    b.stop();
    tmux_printf(&b, "main", &SGR.replace("RED1", "SEED"));
    wait_for(Duration::from_secs(10), || {
        let t = b.tmux.as_ref()?;
        t.capture("main")
            .lines()
            .any(|l| l.starts_with("SEED"))
            .then_some(())
    })
    .expect("tmux printed it");
    b.launch();
    let tmux_pane = b.first_tmux_pane(&token);
    let (v, row) = snapshot_with(&b, &token, "local", &tmux_pane, "SEED");
    assert_snapshot_colours(&v, row);
}

/// A GitHub token inside a red run: 4 + 40 + 4 columns, all of them red.
const RED_SECRET: &str = r"\033[31mkey=ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5 end\033[0m\n";

fn assert_masked_run(line: &str, runs: &Value, styles: &serde_json::Map<String, Value>) {
    assert!(line.starts_with("key=ghp_a•"), "masked: {line}");
    assert!(!line.contains("aB3dE"), "leaked: {line}");
    let width = line.chars().count() as u64;
    assert_eq!(width, 48, "masking keeps the width: {line}");
    assert_eq!(
        resolved(runs, styles),
        vec![(0, width, json!({"fg": 1}))],
        "the run still covers the whole masked text"
    );
}

fn assert_masked_snapshot(b: &TestBridge, token: &str, machine: &str, pane: &str) {
    let (v, row) = snapshot_with(b, token, machine, pane, "key=");
    let styles = v["styles"].as_object().expect("styles");
    assert_masked_run(
        v["lines"][row].as_str().expect("a line"),
        &v["attrs"][row],
        styles,
    );
}

#[test]
fn a_masked_secret_inside_a_red_run_keeps_its_columns() {
    let b = TestBridge::start();
    let token = b.pair("phone", "read");
    let pane = hosted_printf(&b, "secret", RED_SECRET);
    assert_masked_snapshot(&b, &token, "local", &pane);
    let mut w = watch(&b, &token, "local", &pane);
    let (ev, row) = w.until_row("key=");
    assert_masked_run(
        ev["rows"][&row].as_str().expect("as the test wrote it"),
        &ev["attrs"][&row],
        &w.styles,
    );
}

#[test]
fn a_members_pane_has_its_colours_through_the_lead_which_masks_without_moving_runs() {
    let lead = crew_bridge(true, &[]);
    // The member masks nothing: what the phone sees masked, the lead masked.
    let member = crew_bridge(true, &[("COLLIE_REDACT", "off")]);
    lead.cli_ok(&["crew", "init"]);
    member.cli_ok(&["crew", "join", &lead.invite(), "--name", "web-1"]);
    let token = lead.pair("phone", "full");
    let pane = lead.tmux_pane_of(&token, "web-1");

    let mut w = watch(&lead, &token, "web-1", &pane);
    let _ = w.until_row("");
    tmux_printf(&member, "main", SGR);
    w.assert_colours("RED1");
    let (v, row) = snapshot_with(&lead, &token, "web-1", &pane, "RED1");
    assert_snapshot_colours(&v, row);

    tmux_printf(&member, "main", RED_SECRET);
    let (ev, row) = w.until_row("key=");
    assert_masked_run(
        ev["rows"][&row].as_str().expect("as the test wrote it"),
        &ev["attrs"][&row],
        &w.styles,
    );
    assert_masked_snapshot(&lead, &token, "web-1", &pane);
}

#[test]
fn a_program_painting_thousands_of_colours_stays_under_the_caps() {
    let b = TestBridge::start();
    let token = b.pair("phone", "read");
    // 3,000 cells, each in a colour of its own, then a marker row.
    let info = b.hosted(
        "rainbow",
        &[
            "sh",
            "-c",
            "awk 'BEGIN { for (i = 0; i < 3000; i++) printf \"\\033[38;2;%d;%d;7mx\", i % 256, int(i / 256); printf \"\\033[0m\\nDONE\\n\" }'; exec sleep 600",
        ],
    );
    let pane = info["pane"]
        .as_str()
        .expect("as the test wrote it")
        .to_owned();
    let (v, _) = snapshot_with(&b, &token, "local", &pane, "DONE");
    let cols = v["cols"].as_u64().expect("as the test wrote it");
    let styles = v["styles"].as_object().expect("as the test wrote it");
    assert_eq!(styles.len(), 256, "the table is capped at 256 styles");
    let attrs = v["attrs"].as_array().expect("as the test wrote it");
    let painted: u64 = attrs
        .iter()
        .flat_map(|r| r.as_array().expect("as the test wrote it"))
        .map(|r| r[1].as_u64().expect("as the test wrote it"))
        .sum();
    assert_eq!(
        painted, 256,
        "cells past the cap are drawn in the default style"
    );
    for runs in attrs {
        let runs = runs.as_array().expect("as the test wrote it");
        assert!(runs.len() as u64 <= cols, "at most one run per column");
        for r in runs {
            assert!(
                r[0].as_u64().expect("as the test wrote it")
                    + r[1].as_u64().expect("as the test wrote it")
                    <= cols
            );
            assert!(styles.contains_key(&r[2].to_string()));
        }
    }
    let mut w = watch(&b, &token, "local", &pane);
    let (ev, _) = w.until_row("DONE");
    assert!(
        ev["styles"]
            .as_object()
            .expect("as the test wrote it")
            .len()
            <= 256,
        "{ev}"
    );
}
