//! Unit and property tests of [`View::from_wire`]: one test per rule of SPEC §10.3, with the
//! worst inputs for it, and a property test that ids are kept byte for byte or dropped.

use proptest::prelude::*;

use super::*;

fn button(id: &str, label: &str) -> wire::Button {
    wire::Button {
        id: id.to_owned(),
        label: label.to_owned(),
    }
}

fn text_item(id: &str, text: &str) -> wire::Item {
    wire::Item {
        id: id.to_owned(),
        kind: "text".to_owned(),
        text: text.to_owned(),
        ..wire::Item::default()
    }
}

fn link_item(id: &str, url: &str) -> wire::Item {
    wire::Item {
        id: id.to_owned(),
        kind: "link".to_owned(),
        url: url.to_owned(),
        ..wire::Item::default()
    }
}

fn question(id: &str, title: &str) -> wire::Question {
    wire::Question {
        id: id.to_owned(),
        title: title.to_owned(),
        options: vec![button("yes", "Yes"), button("no", "No")],
        ..wire::Question::default()
    }
}

fn conversation(id: &str, updated: u64) -> wire::Conversation {
    wire::Conversation {
        id: id.to_owned(),
        title: format!("title of {id}"),
        updated: Some(updated),
        ..wire::Conversation::default()
    }
}

fn one(c: wire::Conversation) -> (ConversationView, Vec<Dropped>) {
    let (view, dropped) = View::from_wire(wire::State {
        conversations: vec![c],
        starters: Vec::new(),
    });
    let mut conversations = view.conversations;
    assert_eq!(conversations.len(), 1);
    (conversations.remove(0), dropped)
}

#[test]
fn bad_and_repeated_ids_drop_their_objects_in_one_count() {
    let mut c = conversation("c1", 1);
    c.items = vec![
        text_item("i1", "first"),
        text_item("i1", "repeat"),
        text_item("a/b", "slash"),
        text_item("", "empty"),
        text_item("i\u{202E}2", "override"),
        text_item("i 3", "space"),
    ];
    let mut q = question("q1", "Run it?");
    q.options = vec![
        button("yes", "Yes"),
        button("yes", "Yes again"),
        button("n#o", "No"),
    ];
    c.questions = vec![q, question("q1", "again"), question("q?", "query")];
    c.actions = vec![button(&"x".repeat(129), "Too long"), button("ok", "OK")];
    let state = wire::State {
        conversations: vec![c, conversation("c1", 5), conversation("c\u{85}", 2)],
        starters: vec![button("s\t", "Tab"), button("s", "Start")],
    };
    let (view, dropped) = View::from_wire(state);
    assert_eq!(dropped, vec![Dropped::BadIds { count: 13 }]);
    let [c] = view.conversations.as_slice() else {
        panic!("one conversation: {:?}", view.conversations);
    };
    assert_eq!(c.id, "c1");
    assert_eq!(c.updated, 1, "the first c1 is kept, not the newer repeat");
    let ids: Vec<&str> = c.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["i1"]);
    assert_eq!(c.items[0].text, "first");
    assert_eq!(c.questions.len(), 1);
    assert_eq!(c.questions[0].title, "Run it?");
    assert_eq!(
        c.questions[0].options,
        [ButtonView {
            id: "yes".into(),
            label: "Yes".into()
        }]
    );
    assert_eq!(
        c.actions,
        [ButtonView {
            id: "ok".into(),
            label: "OK".into()
        }]
    );
    assert_eq!(
        view.starters,
        [ButtonView {
            id: "s".into(),
            label: "Start".into()
        }]
    );
}

#[test]
fn blank_titles_show_the_id_and_mark_a_question_shortened() {
    let mut c = conversation("conv-7", 1);
    c.title = "\u{200B}\u{202E}\u{FEFF}".to_owned();
    let mut plain = question("q-plain", "");
    plain.reason = "Because\nthe tests\tfail".to_owned();
    let mut hidden = question("q-hidden", "\u{2066}\u{2069}");
    hidden.reason = String::new();
    let mut spaces = question("q-spaces", "   ");
    spaces.reason = "ok".to_owned();
    let mut long = question("q-long", &"é".repeat(300));
    long.reason = "r".repeat(limits::REASON + 1);
    let reason_only = {
        let mut q = question("q-reason", "Title");
        q.reason = "fine\u{1B}[2J".to_owned();
        q
    };
    c.questions = vec![plain, hidden, spaces, long, reason_only];
    let (c, dropped) = one(c);
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_eq!(c.title, "conv-7");
    let q = &c.questions;
    assert_eq!((q[0].title.as_str(), q[0].shortened), ("q-plain", false));
    assert_eq!(q[0].reason, "Because\nthe tests\tfail");
    assert_eq!((q[1].title.as_str(), q[1].shortened), ("q-hidden", true));
    assert_eq!((q[2].title.as_str(), q[2].shortened), ("q-spaces", false));
    assert!(q[3].shortened);
    assert!(q[3].title.len() <= limits::QUESTION && q[3].title.ends_with('…'));
    assert!(q[3].reason.len() <= limits::REASON && q[3].reason.ends_with('…'));
    assert_eq!((q[4].reason.as_str(), q[4].shortened), ("fine[2J", true));
    assert!(q.iter().all(|q| q.card.is_none()));
}

#[test]
fn buttons_without_a_label_go_and_a_question_without_options_goes() {
    let mut c = conversation("c", 1);
    let mut empty = question("q-empty", "Nothing to press");
    empty.options = vec![
        button("a", ""),
        button("b", "\u{200B}"),
        button("c", " \u{3000} "),
        button("d", "\u{E0041}\u{E0042}"),
    ];
    let mut none = question("q-none", "No options at all");
    none.options.clear();
    let mut some = question("q-some", "One left");
    some.options = vec![button("a", "\u{202E}"), button("b", "\u{202E}Allow")];
    c.questions = vec![empty, none, some];
    c.actions = vec![button("x", "\n\t"), button("y", "Retry\n")];
    let (view, dropped) = View::from_wire(wire::State {
        conversations: vec![c],
        starters: vec![button("s1", "\u{2060}"), button("s2", "New")],
    });
    assert_eq!(
        dropped,
        vec![Dropped::Questions {
            conversation: "c".to_owned(),
            count: 2
        }]
    );
    let c = &view.conversations[0];
    let [q] = c.questions.as_slice() else {
        panic!("{:?}", c.questions);
    };
    assert_eq!(q.id, "q-some");
    assert_eq!(
        q.options,
        [ButtonView {
            id: "b".into(),
            label: "Allow".into()
        }]
    );
    assert_eq!(
        c.actions,
        [ButtonView {
            id: "y".into(),
            label: "Retry".into()
        }]
    );
    assert_eq!(
        view.starters,
        [ButtonView {
            id: "s2".into(),
            label: "New".into()
        }]
    );
}

#[test]
fn questions_past_the_limit_are_dropped_and_counted_with_the_optionless() {
    let mut c = conversation("c", 1);
    c.questions = (0..MAX_QUESTIONS + 3)
        .map(|n| question(&format!("q{n}"), "Go?"))
        .collect();
    c.questions[0].options.clear();
    let (c, dropped) = one(c);
    assert_eq!(c.questions.len(), MAX_QUESTIONS);
    assert_eq!(c.questions[0].id, "q1");
    assert_eq!(
        dropped,
        vec![Dropped::Questions {
            conversation: "c".to_owned(),
            count: 3
        }]
    );
}

#[test]
fn refused_links_are_dropped_with_one_line_per_conversation() {
    let mut a = conversation("a", 2);
    a.items = vec![
        link_item("l1", "https://example.com/ok"),
        link_item("l2", "https://user@example.com/"),
        link_item("l3", "http://example.com/"),
        link_item("l4", ""),
        text_item("t", "https://user@example.com/ is fine as text"),
    ];
    let mut q = question("q", "Open?");
    q.items = vec![
        link_item("ql1", "https://x\u{200B}y/"),
        link_item("ql2", "https://docs.rs/"),
    ];
    a.questions = vec![q];
    let mut b = conversation("b", 1);
    b.items = vec![link_item("l", "HTTPS://EXAMPLE.COM")];
    let (view, dropped) = View::from_wire(wire::State {
        conversations: vec![b, a],
        starters: Vec::new(),
    });
    assert_eq!(
        dropped,
        vec![
            Dropped::Links {
                conversation: "a".to_owned(),
                count: 4
            },
            Dropped::Links {
                conversation: "b".to_owned(),
                count: 1
            },
        ]
    );
    let a = &view.conversations[0];
    let ids: Vec<&str> = a.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["l1", "t"]);
    assert_eq!(a.items[0].url, "https://example.com/ok");
    assert_eq!(a.questions[0].items.len(), 1);
    assert_eq!(a.questions[0].items[0].url, "https://docs.rs/");
    assert!(view.conversations[1].items.is_empty());
}

#[test]
fn kinds_roles_and_states_map_with_unknowns_to_the_default() {
    let kinds = [
        ("text", ItemKind::Text),
        ("markdown", ItemKind::Markdown),
        ("code", ItemKind::Code),
        ("diff", ItemKind::Diff),
        ("tool", ItemKind::Tool),
        ("html", ItemKind::Text),
        ("Markdown", ItemKind::Text),
        ("", ItemKind::Text),
    ];
    let roles = [
        ("user", Role::User),
        ("agent", Role::Agent),
        ("tool", Role::Tool),
        ("system", Role::Agent),
        ("USER", Role::Agent),
    ];
    let mut c = conversation("c", 1);
    c.items = kinds
        .iter()
        .zip(roles.iter().cycle())
        .enumerate()
        .map(|(n, ((kind, _), (role, _)))| wire::Item {
            id: format!("i{n}"),
            kind: (*kind).to_owned(),
            role: (*role).to_owned(),
            text: "x".to_owned(),
            ..wire::Item::default()
        })
        .collect();
    let (view, _) = one(c);
    for (n, item) in view.items.iter().enumerate() {
        assert_eq!(item.kind, kinds[n].1, "{}", kinds[n].0);
        assert_eq!(item.role, roles[n % roles.len()].1);
    }
    for (state, expected) in [
        ("working", ConversationState::Working),
        ("idle", ConversationState::Idle),
        ("closed", ConversationState::Closed),
        ("Closed", ConversationState::Idle),
        ("deleted", ConversationState::Idle),
    ] {
        let mut c = conversation("c", 1);
        c.state = state.to_owned();
        assert_eq!(one(c).0.state, expected, "{state}");
    }
}

#[test]
fn each_field_has_its_limit_and_its_line_rule() {
    let long = "line one\nline two\t\u{7}".repeat(2000);
    let mut c = conversation("c", 1);
    c.title = long.clone();
    c.items = vec![
        wire::Item {
            id: "tool".into(),
            kind: "tool".into(),
            text: long.clone(),
            url: "https://example.com/".into(),
            summary: long.clone(),
            output: long.clone(),
            at: Some(7),
            ..wire::Item::default()
        },
        wire::Item {
            id: "link".into(),
            kind: "link".into(),
            text: long.clone(),
            url: "https://example.com/".into(),
            summary: long.clone(),
            ..wire::Item::default()
        },
        wire::Item {
            id: "code".into(),
            kind: "code".into(),
            text: "fn main() {\n\tlet a = 1;\r\n}".into(),
            url: "https://example.com/".into(),
            summary: "s".into(),
            output: "o".into(),
            ..wire::Item::default()
        },
    ];
    let mut q = question("q", &long);
    q.reason = long.clone();
    q.options = vec![button("o", &long)];
    c.questions = vec![q];
    c.actions = vec![button("a", &long)];
    let (view, _) = View::from_wire(wire::State {
        conversations: vec![c],
        starters: vec![button("s", &long)],
    });
    let c = &view.conversations[0];
    let one_line = |s: &str, limit: usize| {
        assert!(
            s.len() <= limit && s.ends_with('…'),
            "{} > {limit}",
            s.len()
        );
        assert!(!s.contains(['\n', '\t', '\u{7}']));
    };
    let multi_line = |s: &str, limit: usize| {
        assert!(
            s.len() <= limit && s.ends_with('…'),
            "{} > {limit}",
            s.len()
        );
        assert!(s.contains('\n') && s.contains('\t') && !s.contains('\u{7}'));
    };
    one_line(&c.title, limits::TITLE);
    let tool = &c.items[0];
    multi_line(&tool.text, limits::TEXT);
    multi_line(&tool.summary, limits::SUMMARY);
    multi_line(&tool.output, limits::TEXT);
    assert_eq!((tool.url.as_str(), tool.at), ("", 7));
    let link = &c.items[1];
    assert_eq!(link.url, "https://example.com/");
    assert!(link.text.is_empty() && link.summary.is_empty());
    let code = &c.items[2];
    assert_eq!(code.text, "fn main() {\n\tlet a = 1;\n}");
    assert!(code.url.is_empty() && code.summary.is_empty() && code.output.is_empty());
    let q = &c.questions[0];
    one_line(&q.title, limits::QUESTION);
    multi_line(&q.reason, limits::REASON);
    one_line(&q.options[0].label, limits::LABEL);
    one_line(&c.actions[0].label, limits::LABEL);
    one_line(&view.starters[0].label, limits::LABEL);
}

#[test]
fn conversations_newest_first_and_cut_to_the_limit() {
    let mut conversations: Vec<wire::Conversation> = (0..MAX_CONVERSATIONS as u64 + 5)
        .map(|n| conversation(&format!("c{n}"), n))
        .collect();
    conversations.push(wire::Conversation {
        updated: None,
        ..conversation("no-time", 0)
    });
    conversations.push(conversation("tie-a", 9));
    conversations.push(conversation("tie-b", 9));
    let (view, dropped) = View::from_wire(wire::State {
        conversations,
        starters: Vec::new(),
    });
    assert_eq!(view.conversations.len(), MAX_CONVERSATIONS);
    assert_eq!(dropped, vec![Dropped::Conversations { count: 8 }]);
    let newest = format!("c{}", MAX_CONVERSATIONS + 4);
    assert_eq!(view.conversations[0].id, newest);
    assert!(view
        .conversations
        .windows(2)
        .all(|w| w[0].updated >= w[1].updated));
    let at = |id: &str| view.conversations.iter().position(|c| c.id == id);
    assert!(at("c9") < at("tie-a") && at("tie-a") < at("tie-b"));
    assert_eq!(at("no-time"), None);
    assert_eq!(at("c0"), None);
}

#[test]
fn lists_keep_their_bounded_end() {
    let mut c = conversation("c", 1);
    c.items = (0..MAX_ITEMS + 10)
        .map(|n| text_item(&format!("i{n}"), "x"))
        .collect();
    let mut q = question("q", "Which?");
    q.items = (0..MAX_QUESTION_ITEMS + 4)
        .map(|n| text_item(&format!("q{n}"), "x"))
        .collect();
    q.options = (0..MAX_OPTIONS + 2)
        .map(|n| button(&format!("o{n}"), "Pick"))
        .collect();
    c.questions = vec![q];
    c.actions = (0..MAX_ACTIONS + 2)
        .map(|n| button(&format!("a{n}"), "Do"))
        .collect();
    let (view, dropped) = View::from_wire(wire::State {
        conversations: vec![c],
        starters: (0..MAX_STARTERS + 2)
            .map(|n| button(&format!("s{n}"), "New"))
            .collect(),
    });
    assert!(dropped.is_empty());
    let c = &view.conversations[0];
    assert_eq!(c.items.len(), MAX_ITEMS);
    assert_eq!(c.items[0].id, "i10");
    assert_eq!(c.items[MAX_ITEMS - 1].id, format!("i{}", MAX_ITEMS + 9));
    let q = &c.questions[0];
    assert_eq!(q.items.len(), MAX_QUESTION_ITEMS);
    assert_eq!(q.items[0].id, "q0");
    assert_eq!(q.options.len(), MAX_OPTIONS);
    assert_eq!(q.options[0].id, "o0");
    assert_eq!(c.actions.len(), MAX_ACTIONS);
    assert_eq!(view.starters.len(), MAX_STARTERS);
}

#[test]
fn dropped_lines_name_no_agent_text() {
    let mut c = conversation("c-1", 1);
    c.items = vec![link_item("l", "https://secret-token@example.com/")];
    c.questions = vec![wire::Question {
        options: Vec::new(),
        ..question("q", "SECRET QUESTION")
    }];
    let (_, dropped) = View::from_wire(wire::State {
        conversations: vec![c],
        starters: vec![button("bad id", "x")],
    });
    let lines: Vec<String> = dropped.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "dropped 1 objects with a bad id",
            "dropped 1 links of conversation c-1",
            "dropped 1 questions of conversation c-1",
        ]
    );
}

/// Ids from a pool where about half are refused.
fn an_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{1,3}",
        prop::sample::select(vec![
            "",
            " ",
            "a b",
            "a/b",
            "a?",
            "#",
            "\u{200B}",
            "a\u{202E}",
            "\u{85}",
            "\t",
            "日本",
            "é",
            "😀",
            "x\u{E0041}",
            "a\u{A0}",
        ])
        .prop_map(String::from),
        "[a-z]{120,130}",
    ]
}

fn a_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z \n]{0,8}",
            any::<char>().prop_map(String::from),
            prop::sample::select(vec!["\u{202E}", "\u{200D}", "\u{FEFF}", "\u{E0020}", "\r"])
                .prop_map(String::from),
        ],
        0..6,
    )
    .prop_map(|v| v.concat())
}

fn a_button() -> impl Strategy<Value = wire::Button> {
    (an_id(), a_string()).prop_map(|(id, label)| wire::Button { id, label })
}

fn an_item() -> impl Strategy<Value = wire::Item> {
    (
        an_id(),
        prop::sample::select(vec!["text", "link", "tool", "x"]),
        a_string(),
        prop::sample::select(vec!["https://a.b/", "https://a@b/", "", "https://[::1]"]),
    )
        .prop_map(|(id, kind, text, url)| wire::Item {
            id,
            kind: kind.to_owned(),
            summary: text.clone(),
            output: text.clone(),
            text,
            url: url.to_owned(),
            ..wire::Item::default()
        })
}

pub(crate) fn a_state() -> impl Strategy<Value = wire::State> {
    let question = (
        an_id(),
        a_string(),
        prop::collection::vec(an_item(), 0..3),
        prop::collection::vec(a_button(), 0..4),
    )
        .prop_map(|(id, title, items, options)| wire::Question {
            id,
            title,
            reason: String::new(),
            items,
            options,
        });
    let conversation = (
        an_id(),
        a_string(),
        prop::option::of(0u64..4),
        prop::collection::vec(an_item(), 0..5),
        prop::collection::vec(question, 0..4),
        prop::collection::vec(a_button(), 0..3),
    )
        .prop_map(
            |(id, title, updated, items, questions, actions)| wire::Conversation {
                id,
                title,
                state: String::new(),
                updated,
                items,
                questions,
                actions,
            },
        );
    (
        prop::collection::vec(conversation, 0..6),
        prop::collection::vec(a_button(), 0..4),
    )
        .prop_map(|(conversations, starters)| wire::State {
            conversations,
            starters,
        })
}

/// The ids a list's rule keeps: accepted by `sanitize::id`, first of their list.
fn accepted<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ids.filter(|id| sanitize::id(id) && seen.insert(*id))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Ids are never altered: every id in the view is one the input holds at the same place
    /// and accepted; every accepted id is kept unless another rule (a refused link, a blank
    /// label, no options) dropped its object.
    #[test]
    fn ids_are_kept_byte_for_byte_or_dropped(state in a_state()) {
        let (view, _) = View::from_wire(state.clone());
        let conversation_ids = accepted(state.conversations.iter().map(|c| c.id.as_str()));
        let mut seen: Vec<&str> = view.conversations.iter().map(|c| c.id.as_str()).collect();
        seen.sort_unstable();
        let mut expected = conversation_ids.clone();
        expected.sort_unstable();
        prop_assert_eq!(seen, expected);
        for c in &view.conversations {
            let raw = state.conversations.iter().find(|r| r.id == c.id);
            prop_assert!(raw.is_some());
            let Some(raw) = raw else { continue };
            let items: Vec<&str> = c.items.iter().map(|i| i.id.as_str()).collect();
            let raw_items = accepted(raw.items.iter().map(|i| i.id.as_str()));
            let linkless: Vec<&str> = raw_items
                .iter()
                .copied()
                .filter(|id| {
                    raw.items.iter().find(|i| i.id == *id).is_some_and(|i| {
                        i.kind != "link" || sanitize::link(&i.url)
                    })
                })
                .collect();
            prop_assert_eq!(items, linkless);
            let questions = accepted(raw.questions.iter().map(|q| q.id.as_str()));
            for q in &c.questions {
                prop_assert!(questions.contains(&q.id.as_str()));
                let Some(raw_q) = raw.questions.iter().find(|r| r.id == q.id) else {
                    continue;
                };
                let options = accepted(raw_q.options.iter().map(|o| o.id.as_str()));
                for o in &q.options {
                    prop_assert!(options.contains(&o.id.as_str()));
                }
                for i in &q.items {
                    prop_assert!(sanitize::id(&i.id));
                    prop_assert!(raw_q.items.iter().any(|r| r.id == i.id));
                }
            }
            let actions = accepted(raw.actions.iter().map(|a| a.id.as_str()));
            for a in &c.actions {
                prop_assert!(actions.contains(&a.id.as_str()));
            }
        }
        let starters = accepted(state.starters.iter().map(|s| s.id.as_str()));
        let kept: Vec<&str> = view.starters.iter().map(|s| s.id.as_str()).collect();
        prop_assert!(kept.iter().all(|id| starters.contains(id)));
    }
}
