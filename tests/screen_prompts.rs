//! Black-box tests of screen prompts (SPEC §10.2): a real bridge watches a real pane in which a
//! program draws a permission dialog the way Claude Code does (the layout of the fixture captured
//! from Claude Code 2.1.332, `actors/src/cards/fixtures/`), offers it as a card with `source:
//! "screen"`, and a phone's tap types the option's number — only while the same lines are on
//! the screen. The program records every key it reads, so the tests see exactly what was typed.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{wait_for, TestBridge};

/// The dialog program (see its header).
const DIALOG: &str = include_str!("fixtures/screen-dialog.sh");

/// Starts the dialog program in a hosted pane; returns the pane id.
fn dialog_pane(b: &TestBridge, marker: &Path, moving: &Path) -> String {
    let script = b.dir.path().join("dialog.sh");
    std::fs::write(&script, DIALOG).expect("script");
    let pane = b.hosted(
        "agent",
        &[
            "bash",
            &script.display().to_string(),
            &marker.display().to_string(),
            &moving.display().to_string(),
        ],
    );
    pane["pane"].as_str().expect("pane id").to_owned()
}

/// The waiting screen card of `pane` (waits for it: the watcher looks once the screen is still).
fn screen_card(b: &TestBridge, token: &str, pane: &str) -> Value {
    wait_for(Duration::from_secs(10), || {
        let (status, v) = b.get("/api/cards", Some(token));
        assert_eq!(status, 200, "{v}");
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["source"] == "screen" && c["pane"] == pane)
            .cloned()
    })
    .expect("no screen card appeared")
}

fn answer(b: &TestBridge, token: &str, card: &Value, option: &str) -> (u16, Value) {
    b.post(
        &format!("/api/cards/{}/answer", card["id"].as_str().expect("id")),
        Some(token),
        &json!({"option": option, "shown": card["shown"]}),
    )
}

/// What the program has read so far (waits until it has read something).
fn typed(marker: &Path) -> String {
    wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(marker)
            .ok()
            .filter(|s| !s.is_empty())
    })
    .expect("the program read no key")
}

fn receipt_of(b: &TestBridge, token: &str, card: &Value) -> Value {
    // The card closes a moment after the answer (the watcher, the Cards actor): wait for it.
    wait_for(Duration::from_secs(10), || {
        let (_, v) = b.get("/api/cards", Some(token));
        v["receipts"]
            .as_array()?
            .iter()
            .find(|r| r["card"] == card["id"])
            .cloned()
    })
    .expect("a receipt")
}

#[test]
fn a_dialog_on_a_screen_becomes_a_card_and_a_tap_types_its_number() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let reader = b.pair("tablet", "read");
    let (marker, moving) = (b.dir.path().join("typed"), b.dir.path().join("moving"));
    let pane = dialog_pane(&b, &marker, &moving);

    let card = screen_card(&b, &phone, &pane);
    assert_eq!(card["title"], "Do you want to proceed?");
    assert_eq!(card["machine"], "testbox");
    assert_eq!(card["pane_name"], "agent");
    assert_eq!(
        card["items"],
        json!([{"kind": "code", "text": "Bash command\nMake the marker\nrm -rf build"}])
    );
    assert_eq!(
        card["options"],
        json!([
            {"id": "1", "label": "Yes"},
            {"id": "2", "label": "Yes, and don’t ask again for: rm *"},
            {"id": "3", "label": "No"}
        ])
    );
    // One card for one dialog, however often the watcher looks.
    std::thread::sleep(Duration::from_millis(600)); // two more looks of the watcher
    let (_, v) = b.get("/api/cards", Some(&phone));
    assert_eq!(v["cards"].as_array().map(Vec::len), Some(1), "{v}");

    // Who may not answer: a `read` device, an unknown option, a stale hash.
    assert_eq!(
        answer(&b, &reader, &card, "1"),
        (403, json!({"error": "insufficient tier"}))
    );
    assert_eq!(
        answer(&b, &phone, &card, "7"),
        (400, json!({"error": "unknown option: 7"}))
    );
    let mut stale = card.clone();
    stale["shown"] = json!("0".repeat(64));
    assert_eq!(
        answer(&b, &phone, &stale, "1"),
        (409, json!({"error": "card changed"}))
    );
    assert!(!marker.exists(), "nothing was typed by a refused tap");

    let (status, v) = answer(&b, &phone, &card, "3");
    assert_eq!(status, 200, "{v}");
    assert_eq!(typed(&marker), "3", "the tap typed the option's number");
    let receipt = receipt_of(&b, &phone, &card);
    assert_eq!(receipt["state"], "answered");
    assert_eq!(receipt["device"], "pixel");
    assert_eq!(
        answer(&b, &phone, &card, "1"),
        (410, json!({"error": "card closed"}))
    );
    let line = b
        .audit_lines()
        .into_iter()
        .find(|l| l["event"] == "card.answered")
        .expect("card.answered audited");
    assert_eq!(line["detail"]["source"], "screen");
    assert_eq!(line["detail"]["option"], "3");
    assert_eq!(line["detail"]["pane"], pane.as_str());
    assert_eq!(typed(&marker), "3", "typed once");
}

#[test]
fn a_tap_on_a_dialog_that_left_the_screen_types_nothing() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let (marker, moving) = (b.dir.path().join("typed"), b.dir.path().join("moving"));
    let pane = dialog_pane(&b, &marker, &moving);
    let card = screen_card(&b, &phone, &pane);

    // The dialog goes away under the card: the program draws a counter instead, and never stops.
    std::fs::write(&moving, "").expect("moving");
    wait_for(Duration::from_secs(10), || {
        let (_, v) = b.get(&format!("/api/panes/local/{pane}"), Some(&phone));
        let text = v["lines"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect::<String>();
        text.contains("working").then_some(())
    })
    .expect("the screen changed");

    assert_eq!(
        answer(&b, &phone, &card, "1"),
        (
            409,
            json!({"error": "The screen changed before that could be sent"})
        )
    );
    // Nothing was typed: the first key the program reads is the one sent now.
    let (status, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&phone),
        &json!({"text": "x"}),
    );
    assert_eq!(status, 200);
    assert_eq!(typed(&marker), "x");
    let receipt = receipt_of(&b, &phone, &card);
    assert_eq!(receipt["state"], "withdrawn");
}

#[test]
fn a_dialog_answered_at_the_machine_ends_its_card_as_answered_elsewhere() {
    let b = TestBridge::start();
    let phone = b.pair("pixel", "full");
    let (marker, moving) = (b.dir.path().join("typed"), b.dir.path().join("moving"));
    let pane = dialog_pane(&b, &marker, &moving);
    let card = screen_card(&b, &phone, &pane);

    // Someone at the keyboard answers first.
    let (status, _) = b.post(
        &format!("/api/panes/local/{pane}/input"),
        Some(&phone),
        &json!({"text": "1"}),
    );
    assert_eq!(status, 200);
    assert_eq!(typed(&marker), "1");
    let receipt = receipt_of(&b, &phone, &card);
    assert_eq!(receipt["state"], "answered elsewhere");
    assert_eq!(
        answer(&b, &phone, &card, "1"),
        (410, json!({"error": "card closed"}))
    );
    assert_eq!(typed(&marker), "1", "a late tap types nothing");
}
