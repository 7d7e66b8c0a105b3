//! Fuzz tests of the control socket's decoders (docs/decisions/0063): the bridge reads one
//! [`Request`] line (at most [`super::MAX_REQUEST`] bytes, cut before it is parsed), the CLI one
//! [`Reply`] line (at most [`super::MAX_REPLY`]). Arbitrary bytes and damaged valid lines: never
//! a panic, a refusal is a serde error with a message, and a valid line reads back as itself.

use proptest::prelude::*;
use serde_json::Value;

use super::protocol::{Reply, Request};
use crate::fuzzing::{arbitrary, mutated, text_of};

/// Lines the CLI sends, one per shape of field (unit, numbers, strings, options, lists, a nested
/// object).
const REQUESTS: &[&str] = &[
    r#"{"cmd":"status"}"#,
    r#"{"cmd":"audit-acknowledge","seq":18446744073709551615}"#,
    r#"{"cmd":"pair","tier":"full","expires":"2w"}"#,
    r#"{"cmd":"devices-set-expiry","label":"phone","dur":"45m"}"#,
    r#"{"cmd":"panes-new","name":"build","command":["cargo","test"],"folder":null,"session":"w"}"#,
    r#"{"cmd":"panes-read","pane":"t0-3","scrollback":100}"#,
    r#"{"cmd":"panes-send","pane":"p1","text":"ls \"-la\"\n","enter":true}"#,
    r#"{"cmd":"panes-keys","pane":"p1","keys":["C-c","Enter"]}"#,
    r#"{"cmd":"crew-join","invite":"collie-crew:00:00:[::1]:7421","name":null}"#,
    r#"{"cmd":"sent-discard","id":7}"#,
];

const REPLIES: &[&str] = &[
    r#"{"ok":true,"data":{"panes":[{"pane":"p1","rows":24}],"n":null}}"#,
    r#"{"ok":false,"error":"no pane p9 on machine web-1"}"#,
    r#"{"ok":true}"#,
];

fn damaged(lines: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(lines)
        .prop_flat_map(|line| mutated(line.as_bytes().to_vec()))
        .prop_map(text_of)
}

/// What the bridge does with a line: parse it, or answer why not.
fn serve(line: &str) -> Result<(), TestCaseError> {
    if let Err(e) = serde_json::from_str::<Request>(line) {
        let answer = Reply::err(format!("bad request: {e}"))
            .error
            .unwrap_or_default();
        prop_assert!(answer.len() > "bad request: ".len(), "{}", answer);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_lines_never_panic(bytes in arbitrary(256)) {
        let line = text_of(bytes);
        serve(&line)?;
        let _ = serde_json::from_str::<Reply>(&line);
    }

    #[test]
    fn damaged_requests_parse_or_are_refused(line in damaged(REQUESTS)) {
        serve(&line)?;
    }

    #[test]
    fn damaged_replies_parse_or_are_refused(line in damaged(REPLIES)) {
        let _ = serde_json::from_str::<Reply>(&line);
    }
}

/// Every valid line reads as a request that writes back the same JSON.
#[test]
fn valid_lines_round_trip() {
    for line in REQUESTS {
        let request: Request = serde_json::from_str(line).expect(line);
        let again = serde_json::to_value(&request).expect("encodes");
        let sent: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(again, sent, "{line}");
    }
    for line in REPLIES {
        let reply: Reply = serde_json::from_str(line).expect(line);
        let sent: Value = serde_json::from_str(line).expect("JSON");
        assert_eq!(
            serde_json::to_value(&reply).expect("encodes"),
            sent,
            "{line}"
        );
    }
}
