//! Stable-toolchain fuzzing of what a durable agent's reply goes through (SPEC §10.3): bytes →
//! `serde_json::from_slice::<wire::State>` → `View::from_wire`. Nothing may panic, and whatever
//! parses must come out obeying every rule, checked here against oracles written apart from the
//! sanitizer (the list of removed characters, the id rule, the counts).
//!
//! Two generators, both from a seeded RNG so a failure names the case that replays it:
//! - *bytes*: valid replies (hand-written and generated) mutated at the byte level — flips,
//!   inserted JSON tokens and escapes, invalid UTF-8, deleted and duplicated ranges — plus plain
//!   random bytes;
//! - *structured*: `wire::State` values built from adversarial pools (every removed character,
//!   multi-byte text at the limits, refused ids and links, repeated ids, lists past every bound),
//!   sent through JSON and back.
//!
//! `COLLIE_FUZZ_SEED=<n>` replays one run; `COLLIE_FUZZ_CASES=<n>` runs longer (the defaults keep
//! a debug run to a few seconds).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use collie_actors::durable::view::{
    self, limits, ButtonView, ConversationView, ItemKind, ItemView, QuestionView, View,
};
use collie_actors::durable::{sanitize, wire};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The characters SPEC §10.3 removes, as ranges (`\n` and `\t` are allowed in multi-line fields).
const REMOVED: &[(u32, u32)] = &[
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0x061C, 0x061C),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2060),
    (0x2066, 0x2069),
    (0xFEFF, 0xFEFF),
    (0xE0000, 0xE007F),
];

fn listed(c: char) -> bool {
    REMOVED
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&u32::from(c)))
}

fn seed() -> u64 {
    std::env::var("COLLIE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5a17_1e55_c011_1e00)
}

fn cases(default: usize) -> usize {
    std::env::var("COLLIE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs one case, turning a panic or a broken rule into a failure that names how to replay it.
fn run_case(name: &str, run_seed: u64, case: usize, body: impl FnOnce()) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(body)) {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        panic!("{name}: case {case} failed (replay with COLLIE_FUZZ_SEED={run_seed}): {what}");
    }
}

// --- The rules, checked on a view -----------------------------------------------------------

fn text_field(s: &str, multi_line: bool, limit: usize, what: &str) {
    assert!(s.len() <= limit, "{what}: {} bytes over {limit}", s.len());
    for c in s.chars() {
        let allowed = multi_line && (c == '\n' || c == '\t');
        assert!(
            !listed(c) || allowed,
            "{what}: holds U+{:04X}",
            u32::from(c)
        );
    }
}

fn good_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id
            .chars()
            .any(|c| listed(c) || c.is_whitespace() || matches!(c, '/' | '?' | '#'))
}

fn distinct<'a>(ids: impl Iterator<Item = &'a str>, what: &str) {
    let mut seen = HashSet::new();
    for id in ids {
        assert!(good_id(id), "{what}: bad id {id:?}");
        assert!(seen.insert(id), "{what}: repeated id {id:?}");
    }
}

fn buttons(list: &[ButtonView], max: usize, what: &str) {
    assert!(list.len() <= max, "{what}: {} over {max}", list.len());
    distinct(list.iter().map(|b| b.id.as_str()), what);
    for b in list {
        text_field(&b.label, false, limits::LABEL, what);
        assert!(!b.label.trim().is_empty(), "{what}: blank label");
    }
}

fn item(i: &ItemView) {
    text_field(&i.text, true, limits::TEXT, "item text");
    text_field(
        &i.summary,
        limits::SUMMARY_MULTI_LINE,
        limits::SUMMARY,
        "tool summary",
    );
    text_field(&i.output, true, limits::TEXT, "tool output");
    if i.kind == ItemKind::Link {
        assert!(sanitize::link(&i.url), "link {:?}", i.url);
        let rest = i.url.strip_prefix("https://").unwrap_or_default();
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        assert!(
            !authority.is_empty() && !authority.contains('@'),
            "{:?}",
            i.url
        );
        assert!(i.url.chars().count() <= limits::LINK_CHARS);
        assert!(!i.url.chars().any(|c| listed(c) || c.is_whitespace()));
        assert!(i.text.is_empty());
    } else {
        assert!(i.url.is_empty(), "a {:?} item with an address", i.kind);
    }
    if i.kind != ItemKind::Tool {
        assert!(i.summary.is_empty() && i.output.is_empty());
    }
}

fn question(q: &QuestionView) {
    text_field(&q.title, false, limits::QUESTION, "question title");
    assert!(!q.title.trim().is_empty(), "blank question title");
    text_field(&q.reason, true, limits::REASON, "question reason");
    assert!(q.items.len() <= view::MAX_QUESTION_ITEMS);
    distinct(q.items.iter().map(|i| i.id.as_str()), "question items");
    q.items.iter().for_each(item);
    assert!(!q.options.is_empty(), "a question without options");
    buttons(&q.options, view::MAX_OPTIONS, "options");
    assert!(q.card.is_none());
}

fn conversation(c: &ConversationView) {
    text_field(&c.title, false, limits::TITLE, "conversation title");
    assert!(!c.title.trim().is_empty(), "blank conversation title");
    assert!(c.items.len() <= view::MAX_ITEMS);
    distinct(c.items.iter().map(|i| i.id.as_str()), "items");
    c.items.iter().for_each(item);
    assert!(c.questions.len() <= view::MAX_QUESTIONS);
    distinct(c.questions.iter().map(|q| q.id.as_str()), "questions");
    c.questions.iter().for_each(question);
    buttons(&c.actions, view::MAX_ACTIONS, "actions");
}

/// Every rule of SPEC §10.3 that can be seen on the view alone.
fn check(v: &View) {
    assert!(v.conversations.len() <= view::MAX_CONVERSATIONS);
    distinct(
        v.conversations.iter().map(|c| c.id.as_str()),
        "conversations",
    );
    assert!(v
        .conversations
        .windows(2)
        .all(|w| w[0].updated >= w[1].updated));
    v.conversations.iter().for_each(conversation);
    buttons(&v.starters, view::MAX_STARTERS, "starters");
}

/// Parses and converts; checks the view when the bytes were a reply. Returns whether they were.
fn through(bytes: &[u8]) -> bool {
    let Ok(state) = serde_json::from_slice::<wire::State>(bytes) else {
        return false;
    };
    let (v, dropped) = View::from_wire(state);
    check(&v);
    for d in dropped {
        // Lines name counts and checked ids only.
        let line = d.to_string();
        assert!(!line.chars().any(listed), "{line:?}");
    }
    true
}

// --- Bytes ----------------------------------------------------------------------------------

/// A reply that uses every field, with escapes the sanitizer must see through.
const HAND_WRITTEN: &str = r#"{"conversations":[
 {"id":"c1","title":"Fix \u202etxt.exe\u202c the \u200bbuild","state":"working","updated":1700000000000,
  "items":[{"id":"i1","kind":"text","role":"user","text":"line\none\r\n\u0000\u001b[2J\u0085","at":1},
   {"id":"i2","kind":"link","url":"https://example.com/a?b#c"},
   {"id":"i3","kind":"link","url":"https://u@example.com/"},
   {"id":"i4","kind":"tool","summary":"cargo\ttest\n","output":"ok\n\ud83d\udc69\u200d\ud83d\udcbb"},
   {"id":"i5","kind":"diff","text":"@@ -1 +1 @@\n-a\n+b\n"}],
  "questions":[{"id":"q1","title":"\udb40\udc41\udb40\udc42Allow?","reason":"because\n","items":[
    {"id":"qi","kind":"code","text":"rm -rf ~ \u2067# safe\u2069"}],
   "options":[{"id":"yes","label":"Yes"},{"id":"no","label":"\ufeff"}]}],
  "actions":[{"id":"a1","label":"Retry"}]},
 {"id":"c/2","title":"bad id"},
 {"id":"c3","title":"","state":"closed","updated":null,"items":[],"questions":[],"actions":[]}],
 "starters":[{"id":"s1","label":"New chat"},{"id":"s1","label":"again"}],
 "unknown":{"kept":"out"}}"#;

/// Tokens inserted by the mutator: structure, escapes, numbers at the edges, raw UTF-8 of removed
/// characters, and bytes that are not UTF-8.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"\\u202e",
    b"\\u0000",
    b"\\ud800",
    b"\\udb40\\udc41",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"true",
    b"-1",
    b"1e400",
    b"18446744073709551616",
    b"0.5",
    b"\"id\":\"x\",",
    b"\"kind\":\"link\",",
    b"\"url\":\"https://a@b\",",
    b"\"options\":[{\"id\":\"o\",\"label\":\"L\"}],",
    "\u{202E}".as_bytes(),
    "\u{200D}".as_bytes(),
    "\u{E0041}".as_bytes(),
    "日本".as_bytes(),
    b"\xC2\x85",
    b"\xFF",
    b"\xED\xA0\x80",
    b"\xF3\xA0",
];

fn mutate(rng: &mut StdRng, doc: &mut Vec<u8>) {
    let at = rng.gen_range(0..=doc.len());
    match rng.gen_range(0..5) {
        0 if !doc.is_empty() => {
            let i = rng.gen_range(0..doc.len());
            doc[i] = rng.gen();
        }
        1 => {
            let token = TOKENS[rng.gen_range(0..TOKENS.len())];
            doc.splice(at..at, token.iter().copied());
        }
        2 if !doc.is_empty() => {
            let end = (at + rng.gen_range(1..16)).min(doc.len());
            doc.drain(at.min(end)..end);
        }
        3 if !doc.is_empty() => {
            let from = rng.gen_range(0..doc.len());
            let to = (from + rng.gen_range(1..256)).min(doc.len());
            let piece = doc[from..to].to_vec();
            doc.splice(at..at, piece);
        }
        _ => {
            let n = rng.gen_range(1..4);
            let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            doc.splice(at..at, bytes);
        }
    }
}

#[test]
fn mutated_and_random_bytes_never_panic_and_keep_the_rules() {
    let run_seed = seed();
    let mut rng = StdRng::seed_from_u64(run_seed);
    let mut bases: Vec<Vec<u8>> = vec![HAND_WRITTEN.as_bytes().to_vec()];
    // Small generated replies (a mutant of a long one mostly costs parsing time).
    while bases.len() < 9 {
        let doc = serde_json::to_vec(&random_state(&mut rng, false)).unwrap_or_default();
        if doc.len() <= 8 * 1024 {
            bases.push(doc);
        }
    }
    assert!(
        through(HAND_WRITTEN.as_bytes()),
        "the hand-written reply parses"
    );
    let n = cases(100_000);
    let mut parsed = 0;
    for case in 0..n {
        let case_seed = rng.gen::<u64>();
        run_case("bytes", run_seed, case, || {
            let mut rng = StdRng::seed_from_u64(case_seed);
            let doc = if case % 10 == 9 {
                let len = rng.gen_range(0..512);
                (0..len).map(|_| rng.gen()).collect()
            } else {
                let mut doc = bases[rng.gen_range(0..bases.len())].clone();
                for _ in 0..rng.gen_range(1..4) {
                    mutate(&mut rng, &mut doc);
                }
                doc
            };
            parsed += usize::from(through(&doc));
        });
    }
    eprintln!("{parsed} of {n} cases parsed");
    // Enough mutants still parse for `from_wire` to be what is fuzzed, not only the parser.
    assert!(parsed * 10 >= n, "only {parsed} of {n} cases parsed");
}

// --- Structured -----------------------------------------------------------------------------

/// Pieces of agent text: every removed character, their neighbours that stay, multi-byte
/// characters, emoji joined by U+200D, JSON-significant characters.
fn random_piece(rng: &mut StdRng) -> String {
    const KEPT: &[&str] = &[
        "a",
        "word ",
        "日本語",
        "é",
        "😀",
        "👩\u{200D}💻",
        "\u{A0}",
        "\u{2010}",
        "\u{2029}",
        "\u{206A}",
        "\u{061B}",
        "\u{E0100}",
        "\u{FFFD}",
        "\u{10FFFF}",
        "א",
        "…",
        "\"",
        "\\",
        "<b>",
        "\n",
        "\t",
        "\r\n",
    ];
    match rng.gen_range(0..20) {
        0..=7 => KEPT[rng.gen_range(0..KEPT.len())].to_owned(),
        8..=13 => {
            let (lo, hi) = REMOVED[rng.gen_range(0..REMOVED.len())];
            char::from_u32(rng.gen_range(lo..=hi))
                .map(String::from)
                .unwrap_or_default()
        }
        14 | 15 => char::from_u32(rng.gen_range(0..0x11_0000))
            .map(String::from)
            .unwrap_or_default(),
        // A long run, to cross every field's limit with a multi-byte character at the cut.
        16 => ["x", "é", "日", "😀"][rng.gen_range(0..4)].repeat(rng.gen_range(1..6000)),
        _ => String::new(),
    }
}

fn random_string(rng: &mut StdRng) -> String {
    (0..rng.gen_range(0..8))
        .map(|_| random_piece(rng))
        .collect()
}

/// Ids from a small pool (so repeats happen), half of them refused.
fn random_id(rng: &mut StdRng) -> String {
    const POOL: &[&str] = &[
        "a",
        "b",
        "c",
        "d",
        "e",
        "日本",
        "😀",
        "x-1",
        "",
        " ",
        "a b",
        "a/b",
        "?",
        "#x",
        "\u{200B}",
        "a\u{202E}",
        "\u{85}",
        "\t",
        "a\u{A0}",
        "x\u{E0041}",
    ];
    match rng.gen_range(0..10) {
        0 => "k".repeat(rng.gen_range(120..136)),
        1 => format!("id{}", rng.gen::<u16>()),
        _ => POOL[rng.gen_range(0..POOL.len())].to_owned(),
    }
}

fn count(rng: &mut StdRng, usual: usize, max: usize, big: bool) -> usize {
    if big && rng.gen_range(0..4) == 0 {
        rng.gen_range(max..max + 8)
    } else {
        rng.gen_range(0..=usual)
    }
}

fn random_button(rng: &mut StdRng) -> wire::Button {
    wire::Button {
        id: random_id(rng),
        label: random_string(rng),
    }
}

fn random_item(rng: &mut StdRng) -> wire::Item {
    const KINDS: &[&str] = &[
        "text", "markdown", "code", "diff", "link", "tool", "html", "",
    ];
    const ROLES: &[&str] = &["user", "agent", "tool", "system"];
    const URLS: &[&str] = &[
        "https://example.com/",
        "https://[::1]/",
        "https://a@b/",
        "https:///x",
        "HTTPS://x",
        "https://x\u{200B}y",
        "https://bücher.example/",
        "",
    ];
    wire::Item {
        id: random_id(rng),
        kind: KINDS[rng.gen_range(0..KINDS.len())].to_owned(),
        role: ROLES[rng.gen_range(0..ROLES.len())].to_owned(),
        text: random_string(rng),
        url: if rng.gen_range(0..4) == 0 {
            format!("https://example.com/{}", random_string(rng))
        } else {
            URLS[rng.gen_range(0..URLS.len())].to_owned()
        },
        summary: random_string(rng),
        output: random_string(rng),
        at: rng.gen_range(0..2).eq(&0).then(|| rng.gen()),
    }
}

/// A state; when `big`, either the conversations or some of the lists inside them go past their
/// bounds.
fn random_state(rng: &mut StdRng, big: bool) -> wire::State {
    let many = big && rng.gen_range(0..4) == 0;
    let big = big && !many;
    let conversations = (0..count(rng, 4, view::MAX_CONVERSATIONS, many))
        .map(|_| {
            if many {
                // Past the bound, what is checked is the cut: ids, titles and times only.
                return wire::Conversation {
                    id: random_id(rng),
                    title: random_string(rng),
                    updated: rng.gen_range(0..8).ne(&0).then(|| rng.gen_range(0..1000)),
                    ..wire::Conversation::default()
                };
            }
            wire::Conversation {
                id: random_id(rng),
                title: random_string(rng),
                state: ["working", "idle", "closed", "open"][rng.gen_range(0..4)].to_owned(),
                updated: rng.gen_range(0..3).ne(&0).then(|| rng.gen_range(0..5)),
                items: (0..count(rng, 4, view::MAX_ITEMS, big))
                    .map(|_| random_item(rng))
                    .collect(),
                questions: (0..count(rng, 3, view::MAX_QUESTIONS, big))
                    .map(|_| wire::Question {
                        id: random_id(rng),
                        title: random_string(rng),
                        reason: random_string(rng),
                        items: (0..count(rng, 2, view::MAX_QUESTION_ITEMS, big))
                            .map(|_| random_item(rng))
                            .collect(),
                        options: (0..count(rng, 3, view::MAX_OPTIONS, big))
                            .map(|_| random_button(rng))
                            .collect(),
                    })
                    .collect(),
                actions: (0..count(rng, 2, view::MAX_ACTIONS, big))
                    .map(|_| random_button(rng))
                    .collect(),
            }
        })
        .collect();
    wire::State {
        conversations,
        starters: (0..count(rng, 3, view::MAX_STARTERS, big))
            .map(|_| random_button(rng))
            .collect(),
    }
}

#[test]
fn adversarial_states_keep_the_rules_through_json() {
    let run_seed = seed();
    let mut rng = StdRng::seed_from_u64(run_seed ^ 0x5757);
    for case in 0..cases(800) {
        let case_seed = rng.gen::<u64>();
        run_case("structured", run_seed, case, || {
            let mut rng = StdRng::seed_from_u64(case_seed);
            // One case in ten with lists past their bounds (slow in debug builds).
            let state = random_state(&mut rng, case % 10 == 0);
            let bytes = serde_json::to_vec(&state).unwrap_or_default();
            let back: wire::State = serde_json::from_slice(&bytes).unwrap_or_default();
            assert_eq!(back, state, "the wire round-trips through JSON");
            let (v, _) = View::from_wire(state);
            check(&v);
        });
    }
}
