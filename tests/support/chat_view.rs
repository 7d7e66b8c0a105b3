#![allow(dead_code, unreachable_pub)]
//! The chat view as a test reads it (SPEC §3.3): `GET /api/panes/local/<pane>/chat` until it shows
//! what the test waits for, and the text of its turns by role and kind.

use std::time::Duration;

use serde_json::Value;

use crate::support::{wait_for, TestBridge};

/// The chat of `pane`, once `done` holds for it.
pub fn chat_when(b: &TestBridge, token: &str, pane: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/api/panes/local/{pane}/chat");
    let mut last = Value::Null;
    wait_for(Duration::from_secs(30), || {
        let (status, v) = b.get(&path, Some(token));
        assert_eq!(status, 200, "{v}");
        last = v.clone();
        done(&v).then_some(v)
    })
    .unwrap_or_else(|| panic!("the chat did not show it; last answer: {last:#}"))
}

/// The text of every turn of `kind` from `role`.
pub fn texts(chat: &Value, role: &str, kind: &str) -> Vec<String> {
    chat["turns"]
        .as_array()
        .map(|turns| {
            turns
                .iter()
                .filter(|t| t["role"] == role && t["kind"] == kind)
                .filter_map(|t| t["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
