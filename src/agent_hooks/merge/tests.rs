use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::agent_hooks::command::recognise;

const EVENT: &str = "PermissionRequest";
const OLD: &str = "/old/bin/collie hook claude-permission";
const NEW: &str = "/new/bin/collie hook claude-permission";

fn ours(command: &str) -> bool {
    recognise(command, "claude-permission").is_some()
}

fn hook(command: &str) -> Hook<'_> {
    Hook {
        event: EVENT,
        matcher: "*",
        command,
        timeout: 660,
    }
}

fn entry(command: &str) -> Value {
    json!({ "type": "command", "command": command, "timeout": 660 })
}

/// The document's text: unlike `Value`'s `==`, it sees the order of keys.
fn text(v: &Value) -> String {
    serde_json::to_string(v).expect("a Value serializes")
}

fn user_group(matcher: &str, command: &str) -> Value {
    json!({ "matcher": matcher, "hooks": [ { "type": "command", "command": command } ] })
}

/// A settings file as a person has it: other keys around `hooks`, other events around ours.
fn busy() -> Value {
    json!({
        "model": "opus",
        "hooks": {
            "PreToolUse": [ user_group("Bash", "./check.sh") ],
            "PermissionRequest": [
                user_group("Bash", "./before.sh"),
                user_group("*", "./also-before.sh"),
            ],
            "Stop": [ user_group("", "./done.sh") ],
        },
        "permissions": { "allow": ["Bash(ls)"] },
    })
}

#[test]
fn an_empty_document_gets_hooks_the_event_and_one_group() {
    let mut doc = json!({});
    assert_eq!(install(&mut doc, &hook(NEW), &ours), Ok(Installed::Added));
    assert_eq!(
        text(&doc),
        text(
            &json!({ "hooks": { "PermissionRequest": [ { "matcher": "*", "hooks": [ entry(NEW) ] } ] } })
        )
    );
    assert_eq!(
        text(&doc),
        r#"{"hooks":{"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"/new/bin/collie hook claude-permission","timeout":660}]}]}}"#
    );
}

#[test]
fn the_users_hooks_before_and_after_ours_keep_their_order() {
    let mut doc = busy();
    assert_eq!(install(&mut doc, &hook(OLD), &ours), Ok(Installed::Added));
    let mut expected = busy();
    expected["hooks"][EVENT]
        .as_array_mut()
        .unwrap()
        .push(json!({ "matcher": "*", "hooks": [ entry(OLD) ] }));
    assert_eq!(text(&doc), text(&expected));

    // The user adds a hook after ours; the binary moves; install again.
    doc["hooks"][EVENT]
        .as_array_mut()
        .unwrap()
        .push(user_group("Edit", "./after.sh"));
    assert_eq!(
        install(&mut doc, &hook(NEW), &ours),
        Ok(Installed::Replaced)
    );
    let list = doc["hooks"][EVENT].as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(text(&list[0]), text(&user_group("Bash", "./before.sh")));
    assert_eq!(text(&list[1]), text(&user_group("*", "./also-before.sh")));
    assert_eq!(
        text(&list[2]),
        text(&json!({ "matcher": "*", "hooks": [ entry(NEW) ] }))
    );
    assert_eq!(text(&list[3]), text(&user_group("Edit", "./after.sh")));
    // Everything else is as it was, keys in their order.
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "permissions"]);
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["PreToolUse", "PermissionRequest", "Stop"]);
    assert_eq!(text(&doc["hooks"]["Stop"]), text(&busy()["hooks"]["Stop"]));
}

#[test]
fn a_second_install_changes_nothing() {
    let mut doc = busy();
    install(&mut doc, &hook(NEW), &ours).unwrap();
    let once = text(&doc);
    assert_eq!(
        install(&mut doc, &hook(NEW), &ours),
        Ok(Installed::Unchanged)
    );
    assert_eq!(text(&doc), once);
}

#[test]
fn a_new_timeout_rewrites_the_entry_in_place() {
    let mut doc = busy();
    install(&mut doc, &hook(NEW), &ours).unwrap();
    let longer = Hook {
        timeout: 900,
        ..hook(NEW)
    };
    assert_eq!(install(&mut doc, &longer, &ours), Ok(Installed::Replaced));
    assert_eq!(doc["hooks"][EVENT][2]["hooks"][0]["timeout"], json!(900));
}

#[test]
fn our_entry_in_a_users_group_keeps_the_group_its_matcher_and_neighbours() {
    let mut doc = json!({ "hooks": { "PermissionRequest": [ {
        "matcher": "Bash",
        "hooks": [
            { "type": "command", "command": "./mine.sh" },
            { "type": "command", "command": OLD, "timeout": 5 },
            { "type": "command", "command": "./mine-too.sh" },
        ],
    } ] } });
    assert_eq!(
        install(&mut doc, &hook(NEW), &ours),
        Ok(Installed::Replaced)
    );
    assert_eq!(
        text(&doc),
        text(&json!({ "hooks": { "PermissionRequest": [ {
            "matcher": "Bash",
            "hooks": [
                { "type": "command", "command": "./mine.sh" },
                entry(NEW),
                { "type": "command", "command": "./mine-too.sh" },
            ],
        } ] } }))
    );
}

#[test]
fn further_entries_of_ours_are_collapsed_into_the_first() {
    let mut doc = json!({ "hooks": { "PermissionRequest": [
        { "matcher": "*", "hooks": [ entry(OLD) ] },
        user_group("Bash", "./mine.sh"),
        { "matcher": "*", "hooks": [ entry(OLD) ] },
        { "matcher": "Edit", "hooks": [ entry(NEW), { "type": "command", "command": "./keep.sh" } ] },
    ] } });
    assert_eq!(
        install(&mut doc, &hook(NEW), &ours),
        Ok(Installed::Replaced)
    );
    assert_eq!(
        text(&doc),
        text(&json!({ "hooks": { "PermissionRequest": [
            { "matcher": "*", "hooks": [ entry(NEW) ] },
            user_group("Bash", "./mine.sh"),
            { "matcher": "Edit", "hooks": [ { "type": "command", "command": "./keep.sh" } ] },
        ] } }))
    );
}

#[test]
fn uninstall_removes_exactly_ours_and_the_groups_it_emptied() {
    let mut doc = json!({ "hooks": { "PermissionRequest": [
        user_group("Bash", "./mine.sh"),
        { "matcher": "*", "hooks": [ entry(OLD) ] },
        { "matcher": "Own", "hooks": [] },
        { "matcher": "Edit", "hooks": [ entry(NEW), { "type": "command", "command": "./keep.sh" } ] },
    ] } });
    assert_eq!(uninstall(&mut doc, EVENT, &ours), Ok(2));
    assert_eq!(
        text(&doc),
        text(&json!({ "hooks": { "PermissionRequest": [
            user_group("Bash", "./mine.sh"),
            { "matcher": "Own", "hooks": [] },
            { "matcher": "Edit", "hooks": [ { "type": "command", "command": "./keep.sh" } ] },
        ] } }))
    );
}

#[test]
fn uninstall_of_a_document_without_ours_changes_nothing_and_says_so() {
    for doc in [
        json!({}),
        json!({ "model": "x" }),
        json!({ "hooks": {} }),
        json!({ "hooks": { "PermissionRequest": [] } }),
        busy(),
    ] {
        let mut after = doc.clone();
        assert_eq!(uninstall(&mut after, EVENT, &ours), Ok(0), "{doc}");
        assert_eq!(text(&after), text(&doc));
    }
}

#[test]
fn install_then_uninstall_gives_back_the_document() {
    for doc in [json!({}), json!({ "model": "x", "env": {} }), busy()] {
        let mut after = doc.clone();
        install(&mut after, &hook(NEW), &ours).unwrap();
        assert_eq!(uninstall(&mut after, EVENT, &ours), Ok(1));
        assert_eq!(text(&after), text(&doc));
    }
    // Containers Collie created are removed again, in the middle of others too.
    let doc = json!({ "a": 1, "hooks": { "PreToolUse": [], "Stop": [] }, "z": 2 });
    let mut after = doc.clone();
    install(&mut after, &hook(NEW), &ours).unwrap();
    uninstall(&mut after, EVENT, &ours).unwrap();
    assert_eq!(text(&after), text(&doc));
}

#[test]
fn a_users_empty_list_that_held_only_ours_goes_with_it() {
    // Documented in `uninstall`: an empty list means the same as none.
    let mut doc = json!({ "hooks": { "PermissionRequest": [] }, "x": 1 });
    install(&mut doc, &hook(NEW), &ours).unwrap();
    uninstall(&mut doc, EVENT, &ours).unwrap();
    assert_eq!(text(&doc), text(&json!({ "x": 1 })));
}

#[test]
fn other_events_are_never_touched() {
    // Even a Collie command under another event is not ours to change there.
    let mut doc = json!({ "hooks": {
        "PreToolUse": [ { "matcher": "*", "hooks": [ entry(OLD) ] } ],
    } });
    let before = doc["hooks"]["PreToolUse"].clone();
    install(&mut doc, &hook(NEW), &ours).unwrap();
    assert_eq!(text(&doc["hooks"]["PreToolUse"]), text(&before));
    assert_eq!(uninstall(&mut doc, EVENT, &ours), Ok(1));
    assert_eq!(text(&doc["hooks"]["PreToolUse"]), text(&before));
}

#[test]
fn groups_and_entries_of_unknown_shape_are_left_alone() {
    let doc = json!({ "hooks": { "PermissionRequest": [
        "oops",
        { "matcher": "*" },
        { "hooks": "not a list" },
        { "hooks": [ 7, { "command": 3 }, { "type": "command" } ] },
    ] } });
    let mut after = doc.clone();
    assert_eq!(install(&mut after, &hook(NEW), &ours), Ok(Installed::Added));
    assert_eq!(after["hooks"][EVENT].as_array().unwrap().len(), 5);
    assert_eq!(uninstall(&mut after, EVENT, &ours), Ok(1));
    assert_eq!(text(&after), text(&doc));
}

#[test]
fn wrong_shapes_are_refused_and_change_nothing() {
    let cases = [
        (json!([]), ShapeError::NotAnObject("a list")),
        (json!("x"), ShapeError::NotAnObject("a string")),
        (json!(null), ShapeError::NotAnObject("null")),
        (json!({ "hooks": "x" }), ShapeError::Hooks("a string")),
        (json!({ "hooks": [] }), ShapeError::Hooks("a list")),
        (
            json!({ "hooks": { "PermissionRequest": {} } }),
            ShapeError::Event {
                event: EVENT.to_owned(),
                kind: "an object",
            },
        ),
        (
            json!({ "hooks": { "PermissionRequest": 1 } }),
            ShapeError::Event {
                event: EVENT.to_owned(),
                kind: "a number",
            },
        ),
    ];
    for (doc, error) in cases {
        let mut after = doc.clone();
        assert_eq!(install(&mut after, &hook(NEW), &ours), Err(error.clone()));
        assert_eq!(text(&after), text(&doc));
        assert_eq!(uninstall(&mut after, EVENT, &ours), Err(error.clone()));
        assert_eq!(text(&after), text(&doc));
        assert_eq!(find(&doc, EVENT, &ours), Err(error));
    }
    assert_eq!(
        ShapeError::Hooks("a string").to_string(),
        "`hooks` is a string, not an object"
    );
}

#[test]
fn find_lists_our_commands_in_order() {
    let doc = json!({ "hooks": { "PermissionRequest": [
        user_group("Bash", "./mine.sh"),
        { "matcher": "*", "hooks": [ entry(OLD) ] },
        { "matcher": "Edit", "hooks": [ entry(NEW) ] },
    ] } });
    assert_eq!(
        find(&doc, EVENT, &ours),
        Ok(vec![OLD.to_owned(), NEW.to_owned()])
    );
    assert_eq!(find(&busy(), EVENT, &ours), Ok(vec![]));
    assert_eq!(find(&json!({}), EVENT, &ours), Ok(vec![]));
}

// --- property: whatever the user has, install then uninstall gives it back ----------------------

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z ]{0,8}".prop_map(Value::from),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A command of the user's: anything, and near misses of Collie's own.
fn user_command() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,40}",
        Just("/usr/bin/collie hook codex-permission".to_owned()),
        Just("/usr/bin/collie-dev hook claude-permission".to_owned()),
        Just("/usr/bin/collie hook claude-permission --x".to_owned()),
        Just("echo collie hook claude-permission".to_owned()),
    ]
    .prop_filter("the user's, not Collie's", |c| !ours(c))
}

fn user_entry() -> impl Strategy<Value = Value> {
    (user_command(), proptest::option::of(1u64..10_000)).prop_map(|(command, timeout)| {
        let mut e = json!({ "type": "command", "command": command });
        if let Some(t) = timeout {
            e["timeout"] = json!(t);
        }
        e
    })
}

fn user_group_any() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => ("[A-Za-z*|]{0,8}", prop::collection::vec(user_entry(), 0..3))
            .prop_map(|(matcher, hooks)| json!({ "matcher": matcher, "hooks": hooks })),
        1 => prop::collection::vec(user_entry(), 0..3).prop_map(|hooks| json!({ "hooks": hooks })),
        1 => any_json(),
    ]
}

/// A document: other keys around `hooks` (or no `hooks`), other events around the user's own
/// `PermissionRequest` groups (or none), keys in any order.
fn document() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(("[a-z]{1,6}", any_json()), 0..4),
        prop::collection::vec(
            (
                "[A-Z][a-z]{1,8}",
                prop::collection::vec(user_group_any(), 0..3),
            ),
            0..3,
        ),
        proptest::option::of(prop::collection::vec(user_group_any(), 1..4)),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(top, events, ours_event, top_at, event_at)| {
            let mut events: Vec<(String, Value)> = events
                .into_iter()
                .map(|(k, groups)| (k, Value::Array(groups)))
                .collect();
            if let Some(groups) = ours_event {
                let at = event_at.index(events.len() + 1);
                events.insert(at, (EVENT.to_owned(), Value::Array(groups)));
            }
            let mut top: Vec<(String, Value)> =
                top.into_iter().filter(|(k, _)| k != "hooks").collect();
            // No empty `hooks`: see a_users_empty_list_that_held_only_ours_goes_with_it.
            if !events.is_empty() {
                let at = top_at.index(top.len() + 1);
                let hooks = Value::Object(events.into_iter().collect());
                top.insert(at, ("hooks".to_owned(), hooks));
            }
            Value::Object(top.into_iter().collect())
        })
}

proptest! {
    #[test]
    fn install_then_uninstall_is_the_identity(doc in document()) {
        let original = text(&doc);
        let mut after = doc.clone();
        prop_assert_eq!(install(&mut after, &hook(OLD), &ours), Ok(Installed::Added));
        prop_assert_eq!(find(&after, EVENT, &ours), Ok(vec![OLD.to_owned()]));
        prop_assert_eq!(install(&mut after, &hook(OLD), &ours), Ok(Installed::Unchanged));
        prop_assert_eq!(install(&mut after, &hook(NEW), &ours), Ok(Installed::Replaced));
        prop_assert_eq!(find(&after, EVENT, &ours), Ok(vec![NEW.to_owned()]));
        prop_assert_eq!(uninstall(&mut after, EVENT, &ours), Ok(1));
        prop_assert_eq!(text(&after), original.clone());
        prop_assert_eq!(uninstall(&mut after, EVENT, &ours), Ok(0));
        prop_assert_eq!(text(&after), original);
    }
}
