//! Fuzz tests of the hook JSON (docs/decisions/0063): the bridge reads one [`HookRequest`] line
//! from `collie hook …` (at most [`MAX_REQUEST`] bytes, cut before it is parsed), and makes a card
//! of the agent's input it carries ([`Ask::parse`], [`Ask::card`], [`Ask::output`]); the hook
//! reads one [`HookReply`] line back (at most [`MAX_REPLY`]). Arbitrary bytes and damaged valid
//! lines: never a panic, a card that comes out passes the cards core's check or is refused by
//! it, and a valid line reads back as itself.

use collie_actors::cards::actor::Decision;
use collie_actors::cards::card::CardOption;
use collie_crew::relay::PaneInfo;
use proptest::prelude::*;
use serde_json::Value;

use super::wire::{HookReply, HookRequest, MAX_REPLY, MAX_REQUEST};
use crate::app::permission::ask::Ask;
use crate::fuzzing::{arbitrary, mutated};

/// A Claude Code request with rules to always allow, and a Codex one, as the hook sends them.
const REQUESTS: &[&str] = &[
    r#"{"agent":"claude","input":{"session_id":"s-1","cwd":"/home/u/p","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"Clean"},"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build"}],"behavior":"allow","destination":"localSettings"},{"type":"addDirectories","directories":["/tmp"],"destination":"session"},{"type":"setMode","mode":"acceptEdits","destination":"session"}]}}"#,
    r#"{"agent":"codex","input":{"session_id":"c-9","hook_event_name":"PermissionRequest","tool_name":"apply_patch","tool_input":{"file_path":"src/a.rs","old_string":"a","new_string":"b"}}}"#,
    r#"{"agent":"claude","input":{"hook_event_name":"PermissionRequest","tool_name":"WebFetch","tool_input":{"url":"https://example.com/"}}}"#,
];

const REPLIES: &[&str] = &[
    r#"{"print":{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no"}}}}"#,
];

fn pane() -> PaneInfo {
    PaneInfo {
        machine: "laptop".into(),
        pane: "t0-3".into(),
        token: "ab12".into(),
        name: "agent".into(),
        backend: "tmux".into(),
        alive: true,
        cols: 80,
        rows: 24,
        last_activity: None,
        asking_password: false,
        at_shell: false,
        activity: Default::default(),
    }
}

/// What the bridge does with a line it read whole: parse it, make the card, answer each option.
fn serve(line: &[u8]) {
    assert!(line.len() <= MAX_REQUEST + 1);
    let Ok(request) = serde_json::from_slice::<HookRequest>(line) else {
        return;
    };
    let Ok(ask) = Ask::parse(request.agent, &request.input) else {
        return;
    };
    let card = ask.card("laptop", &pane());
    let _ = card.check();
    for option in &card.options {
        let decision = Decision {
            option: CardOption {
                id: option.id.clone(),
                label: option.label.clone(),
            },
            device: "pixel".into(),
        };
        let out = ask.output(&decision);
        assert!(out.is_object(), "the agent reads an object: {out}");
    }
}

fn damaged(lines: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(lines).prop_flat_map(|line| mutated(line.as_bytes().to_vec()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_lines_never_panic(bytes in arbitrary(256)) {
        serve(&bytes);
        let _ = serde_json::from_slice::<HookReply>(&bytes);
    }

    #[test]
    fn damaged_requests_make_a_card_or_are_refused(line in damaged(REQUESTS)) {
        serve(&line);
    }

    #[test]
    fn damaged_replies_parse_or_are_refused(line in damaged(REPLIES)) {
        prop_assert!(line.len() <= MAX_REPLY);
        let _ = serde_json::from_slice::<HookReply>(&line);
    }
}

/// Every valid line reads back as itself and makes a card the cards core accepts.
#[test]
fn valid_lines_round_trip() {
    for line in REQUESTS {
        let request: HookRequest = serde_json::from_str(line).expect(line);
        let sent: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(serde_json::to_value(&request).expect("encodes"), sent);
        let ask = Ask::parse(request.agent, &request.input).expect(line);
        assert!(ask.card("laptop", &pane()).check().is_ok(), "{line}");
    }
    for line in REPLIES {
        let reply: HookReply = serde_json::from_str(line).expect(line);
        let sent: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(serde_json::to_value(&reply).expect("encodes"), sent);
    }
}
