//! The tools' resource bounds tried through the real doors (SPEC §11, seed 003 §8.13 items 13
//! and 14): a real bridge, its phone API (`POST /api/tools/{tool}`) and MCP (`POST /mcp`), real
//! searches over real files, real processes, and the bridge's resident memory read from `/proc`.
//!
//! - Search cannot take the disk without limit: more searches than the global and per-device caps
//!   are refused `resource limit` and audited `resource.denied`, the running ones are not
//!   disturbed, and once they end new ones are accepted.
//! - Sessions cannot grow the bridge's memory past the cap: every ring full, the count caps
//!   reached, forty more attempts refused without the bridge growing, and killing a session frees
//!   its slot.
//! - Request bodies: 24 MiB on `/api/tools/*` and `/mcp`, 512 KiB elsewhere, refused from the
//!   declared length before a byte of the body is sent.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{json_of, procs, wait_for, Opts, TestBridge};

const MIB: usize = 1024 * 1024;

fn bridge() -> TestBridge {
    TestBridge::start_with(Opts {
        log_to_file: true,
        ..Opts::default()
    })
}

fn home(b: &TestBridge) -> std::path::PathBuf {
    b.dir.path().join("home")
}

fn pid(b: &TestBridge) -> i32 {
    let child = b.child.as_ref().expect("the bridge runs");
    i32::try_from(child.id()).expect("a pid fits in i32")
}

/// `POST /api/tools/{name}` with `args`.
fn tool(b: &TestBridge, token: &str, name: &str, args: Value) -> (u16, Value) {
    b.post(&format!("/api/tools/{name}"), Some(token), &args)
}

/// At most 300 characters of `v`, for a failure message (answers may carry megabytes).
fn short(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

fn tool_ok(b: &TestBridge, token: &str, name: &str, args: Value) -> Value {
    let (status, body) = tool(b, token, name, args.clone());
    assert_eq!(status, 200, "{name} {}: {}", short(&args), short(&body));
    body
}

/// `tools/call` through MCP: (is_error, the text of its first content block, structured content).
fn mcp_call(b: &TestBridge, token: &str, name: &str, args: Value) -> (bool, String, Value) {
    let (status, _, text) = b.raw(
        "POST",
        "/mcp",
        Some(token),
        Some(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": name, "arguments": args}})),
        &[("Accept", "application/json, text/event-stream")],
    );
    assert_eq!(status, 200, "{text}");
    let result = json_of(&text)["result"].clone();
    (
        result["isError"].as_bool().unwrap_or(false),
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        result["structuredContent"].clone(),
    )
}

fn resource_limit(status: u16, body: &Value) -> bool {
    status == 503 && body["error"] == "resource limit"
}

/// The `resource.denied` lines of `tool`.
fn denied(b: &TestBridge, tool: &str) -> Vec<Value> {
    b.audit_lines()
        .into_iter()
        .filter(|l| l["event"] == "resource.denied" && l["detail"]["tool"] == tool)
        .collect()
}

// ---- search (item 13) ----

/// Words with accented letters: the Unicode `\b` of the searches' pattern then keeps the regex
/// engine off its fastest path, so a search of a few MiB takes seconds rather than milliseconds
/// (what a big workspace on a slow disk would cost) — long enough for the caps to be tried while
/// it runs.
const WORDS: [&str; 10] = [
    "alpha", "bêta", "gamma", "délta", "ëpsilon", "zeta", "éta", "thêta", "iota", "kappa",
];
/// Files of the tree, each [`FILE_BYTES`] long with one line holding a word ending in a digit.
const FILES: usize = 6;
const FILE_BYTES: usize = 4 * MIB;
/// Matches only the planted `needle<N>` words (no other word holds a digit).
const SLOW_PATTERN: &str = r"\b\w+\d\b";

fn plant_tree(root: &std::path::Path) {
    std::fs::create_dir_all(root).expect("mkdir");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for f in 0..FILES {
        let mut text = String::with_capacity(FILE_BYTES + 256);
        let mut line = 0;
        while text.len() < FILE_BYTES {
            if line == 1_000 {
                text.push_str(&format!("the needle{f} is here\n"));
            }
            for w in 0..12 {
                // xorshift: the same tree every run, no dependency needed.
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[(seed % 10) as usize]);
            }
            text.push('\n');
            line += 1;
        }
        std::fs::write(root.join(format!("f{f}.txt")), text).expect("write");
    }
}

fn start_slow_search(b: &TestBridge, token: &str) -> (u16, Value) {
    tool(
        b,
        token,
        "start_search",
        json!({"path": "tree", "pattern": SLOW_PATTERN, "searchType": "content"}),
    )
}

fn page(b: &TestBridge, token: &str, id: &str) -> Value {
    tool_ok(
        b,
        token,
        "get_more_search_results",
        json!({"sessionId": id, "offset": 0, "length": 100}),
    )
}

/// Waits for search `id` to end (its walker gone); its last page.
fn until_complete(b: &TestBridge, token: &str, id: &str) -> Value {
    // A search ends itself at 30 s at the latest; the polling waits for that condition.
    wait_for(Duration::from_secs(40), || {
        let p = page(b, token, id);
        (p["isComplete"] == true).then_some(p)
    })
    .unwrap_or_else(|| panic!("search {id} never ended"))
}

#[test]
fn searches_past_the_global_and_per_device_caps_are_refused_and_the_running_ones_finish() {
    let b = bridge();
    plant_tree(&home(&b).join("tree"));
    let alice = b.pair("alice", "read");
    let bob = b.pair("bob", "read");
    let carol = b.pair("carol", "read");

    // Alice starts her two, Bob his two: the bridge's four.
    let mut running = Vec::new();
    for (who, token) in [
        ("alice", &alice),
        ("alice", &alice),
        ("bob", &bob),
        ("bob", &bob),
    ] {
        let (status, body) = start_slow_search(&b, token);
        assert_eq!(status, 200, "{who}: {body}");
        assert_eq!(
            body["isComplete"],
            false,
            "the tree is searched too fast on this machine for the caps to be tried: {}",
            short(&body)
        );
        running.push((
            token.clone(),
            body["sessionId"].as_str().expect("id").to_owned(),
        ));
    }
    // A third for Alice (her cap), a first for Carol (the bridge's cap), at both doors.
    for token in [&alice, &carol] {
        let (status, body) = start_slow_search(&b, token);
        assert!(resource_limit(status, &body), "{status} {body}");
        let (is_error, text, _) = mcp_call(
            &b,
            token,
            "start_search",
            json!({"path": "tree", "pattern": "needle", "searchType": "content"}),
        );
        assert!(is_error, "{text}");
        assert_eq!(text, "resource limit");
    }
    // Refused, not queued: the four still run, and they were not disturbed.
    for (token, id) in &running {
        let p = page(&b, token, id);
        assert_eq!(p["isComplete"], false, "{}", short(&p));
        assert!(p["cutShort"].is_null(), "{}", short(&p));
    }
    let lines = denied(&b, "start_search");
    assert!(!lines.is_empty(), "the refusals are audited");
    assert!(
        lines.iter().all(|l| l["detail"]["reason"] == "searches"),
        "{lines:?}"
    );

    // Bob stops his; Alice's two run to their end with every planted line found.
    for (token, id) in &running[2..] {
        tool_ok(&b, token, "stop_search", json!({"sessionId": id}));
        let p = until_complete(&b, token, id);
        assert_eq!(p["cutShort"], "stopped", "{}", short(&p));
    }
    // Carol's search is accepted now that two slots are free (a literal search, quick).
    let (status, body) = tool(
        &b,
        &carol,
        "start_search",
        json!({"path": "tree", "pattern": "needle3", "searchType": "content",
               "literalSearch": true}),
    );
    assert_eq!(status, 200, "{body}");
    let carols = until_complete(&b, &carol, body["sessionId"].as_str().expect("id"));
    assert_eq!(carols["totalResults"], 1, "{}", short(&carols));
    for (token, id) in &running[..2] {
        let p = until_complete(&b, token, id);
        assert!(p["cutShort"].is_null(), "ran to its end: {}", short(&p));
        assert_eq!(p["totalResults"], FILES, "{}", short(&p));
    }
    // Nothing runs: Alice may start again, through MCP too.
    let (is_error, text, found) = mcp_call(
        &b,
        &alice,
        "start_search",
        json!({"path": "tree", "pattern": "needle0", "searchType": "content",
               "literalSearch": true}),
    );
    assert!(!is_error, "{text}");
    assert!(found["sessionId"].is_string(), "{}", short(&found));
}

// ---- sessions (item 14) ----

/// Prints `OUTPUT` bytes, then waits: a session that fills its ring and holds its slot.
const OUTPUT: u64 = 8_000_000;

fn noisy() -> Value {
    json!({"command": format!("yes | head -c {OUTPUT}; exec sleep 600"), "timeout_ms": 100})
}

fn sessions(b: &TestBridge, token: &str) -> Vec<Value> {
    tool_ok(b, token, "list_sessions", json!({}))["sessions"]
        .as_array()
        .expect("sessions")
        .clone()
}

#[test]
fn sessions_stop_at_their_caps_and_refusals_do_not_grow_the_bridge() {
    let mut b = bridge();
    let alice = b.pair("alice", "full");
    let bob = b.pair("bob", "full");
    let carol = b.pair("carol", "full");
    let bridge_pid = pid(&b);
    let before = procs::rss_kib(bridge_pid).expect("the bridge's VmRSS");

    // Six each for Alice and Bob: the bridge's twelve (decision 0032's default budget), every
    // one printing four times its ring. Alice's seventh is past her own cap.
    let mut ids = Vec::new();
    for token in [&alice, &bob] {
        for _ in 0..6 {
            let started = tool_ok(&b, token, "start_process", noisy());
            ids.push((
                token.clone(),
                started["session"].as_str().expect("id").to_owned(),
            ));
        }
        if token == &alice {
            let (status, body) = tool(&b, &alice, "start_process", noisy());
            assert!(resource_limit(status, &body), "{status} {}", body["error"]);
        }
    }
    // Wait until every byte has been pumped through the rings (the condition, not a time).
    for token in [&alice, &bob] {
        let pumped = wait_for(Duration::from_secs(60), || {
            sessions(&b, token)
                .iter()
                .all(|s| s["output_end"] == OUTPUT)
                .then_some(())
        });
        assert!(pumped.is_some(), "{:?}", sessions(&b, token));
    }
    let (token, id) = &ids[0];
    let read = tool_ok(
        &b,
        token,
        "read_process_output",
        json!({"session": id, "offset": 0, "length": 16}),
    );
    assert!(
        read["dropped"].as_u64().expect("dropped") >= OUTPUT - 2 * MIB as u64,
        "the ring kept only its 2 MiB: {read}"
    );
    let full = procs::rss_kib(bridge_pid).expect("VmRSS");
    eprintln!("bridge VmRSS: {before} KiB at start, {full} KiB with twelve full rings");
    // Twelve full 2 MiB rings and a generous margin; without the rings' cap the output alone
    // would be 96 MB.
    let rings_kib = (12 * 2 * MIB / 1024) as u64;
    assert!(
        full.saturating_sub(before) <= rings_kib + 16 * 1024,
        "{before} KiB → {full} KiB with every ring full"
    );

    // Forty more attempts, Alice's and Carol's, past the bridge's cap.
    for i in 0..40 {
        let token = if i % 2 == 0 { &alice } else { &carol };
        let (status, body) = tool(&b, token, "start_process", noisy());
        assert!(
            resource_limit(status, &body),
            "{i}: {status} {}",
            body["error"]
        );
    }
    let (is_error, text, _) = mcp_call(&b, &carol, "start_process", noisy());
    assert!(is_error && text == "resource limit", "{text}");
    let after = procs::rss_kib(bridge_pid).expect("VmRSS");
    eprintln!("bridge VmRSS: {after} KiB after forty refusals");
    assert!(
        after.saturating_sub(full) <= 8 * 1024,
        "forty refusals grew the bridge from {full} KiB to {after} KiB"
    );
    assert_eq!(sessions(&b, &carol).len(), 0, "nothing of Carol's runs");
    assert_eq!(sessions(&b, &alice).len(), 6);

    // Killing frees the slot. Alice kills one of hers and takes the slot again (her own cap);
    // the bridge is then full again, so Carol is still refused, until Bob kills one of his.
    let (token, id) = &ids[0];
    tool_ok(&b, token, "kill_process", json!({"session": id}));
    tool_ok(
        &b,
        &alice,
        "start_process",
        json!({"command": "exec sleep 600", "timeout_ms": 100}),
    );
    let (status, body) = tool(&b, &carol, "start_process", noisy());
    assert!(
        resource_limit(status, &body),
        "twelve run again: {status} {}",
        body["error"]
    );
    let (token, id) = &ids[6];
    tool_ok(&b, token, "force_terminate", json!({"session": id}));
    let (is_error, text, started) = mcp_call(
        &b,
        &carol,
        "start_process",
        json!({"command": "exec sleep 600", "timeout_ms": 100}),
    );
    assert!(!is_error, "{text}");
    assert!(started["session"].is_string(), "{}", started["session"]);

    // The refusals are audited once a minute per reason, with counts that add up once the
    // bridge stops (SPEC §7).
    b.stop();
    let lines = denied(&b, "start_process");
    let reasons: std::collections::BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l["detail"]["reason"].as_str())
        .collect();
    assert_eq!(
        reasons,
        ["sessions", "sessions per device"].into_iter().collect(),
        "{lines:?}"
    );
    let count = |reason: &str| -> u64 {
        lines
            .iter()
            .filter(|l| l["detail"]["reason"] == reason)
            .map(|l| l["detail"]["count"].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(count("sessions per device"), 1, "{lines:?}");
    assert_eq!(
        count("sessions"),
        42,
        "40, the MCP one, Carol's after Alice's kill: {lines:?}"
    );
}

// ---- request bodies ----

/// The body of a `write_file` of `content` bytes of which `newlines` are `\n` (each escaped to
/// two bytes in JSON), the rest `a`.
fn write_file_body(path: &str, content: usize, newlines: usize) -> (Vec<u8>, Vec<u8>) {
    let mut text = Vec::with_capacity(content);
    text.extend(std::iter::repeat_n(*b"a\n", newlines).flatten());
    text.resize(content, b'a');
    let body = serde_json::to_vec(&json!({
        "path": path,
        "content": String::from_utf8(text.clone()).expect("ascii"),
    }))
    .expect("json");
    (body, text)
}

#[test]
fn request_bodies_are_capped_at_24_mib_for_tools_and_512_kib_elsewhere() {
    let b = bridge();
    let token = b.pair("owner", "full");
    let tool_limit = 24 * MIB;

    // One byte over, declared: refused at once, before the body exists, in the JSON shape.
    let rss = procs::rss_kib(pid(&b)).expect("VmRSS");
    for path in ["/api/tools/write_file", "/mcp"] {
        let (status, body) = b.declare_only(path, &token, tool_limit + 1);
        assert_eq!(
            (status, body["error"].as_str()),
            (413, Some("request body too large: at most 24 MiB")),
            "{path}: {body}"
        );
    }
    let (status, body) = b.declare_only("/api/panes", &token, 512 * 1024 + 1);
    assert_eq!(
        (status, body["error"].as_str()),
        (413, Some("request body too large: at most 512 KiB")),
        "{body}"
    );
    let grown = procs::rss_kib(pid(&b)).expect("VmRSS").saturating_sub(rss);
    assert!(grown < 8 * 1024, "refusals allocated {grown} KiB");

    // Exactly the limit: a 16 MiB write whose escaped body is 24 MiB lands whole and atomically —
    // a reader polling the file meanwhile sees the old text or the new, never a part.
    std::fs::create_dir(home(&b).join("big")).expect("mkdir");
    let target = home(&b).join("big/big.txt");
    std::fs::write(&target, "old\n").expect("old");
    let overhead = write_file_body("big/big.txt", 0, 0).0.len();
    let (body, text) = write_file_body("big/big.txt", 16 * MIB, 8 * MIB - overhead);
    assert_eq!(body.len(), tool_limit);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (stop, target, text) = (std::sync::Arc::clone(&stop), target.clone(), text.clone());
        std::thread::spawn(move || {
            let (mut old, mut new) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let seen = std::fs::read(&target).expect("the file is always there");
                if seen == b"old\n" {
                    old += 1;
                } else {
                    assert!(seen == text, "a partial file of {} bytes", seen.len());
                    new += 1;
                }
            }
            (old, new)
        })
    };
    let answer = ureq::post(&b.url("/api/tools/write_file"))
        .set("Authorization", &format!("Bearer {token}"))
        .set("Content-Type", "application/json")
        .timeout(Duration::from_secs(120))
        .send_bytes(&body);
    let status = match answer {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, r)) => panic!("{s}: {}", r.into_string().unwrap_or_default()),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(status, 200);
    // The answer came after the rename: the file is the new text, whole.
    assert!(std::fs::read(&target).expect("big.txt") == text);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (old, new) = reader.join().expect("reader");
    assert!(old + new > 0);
    let names: Vec<String> = std::fs::read_dir(home(&b).join("big"))
        .expect("the folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(
        names,
        vec!["big.txt".to_owned()],
        "no temp file left behind"
    );

    // MCP takes the same size: a 16 MiB write through it works.
    let content = "b".repeat(16 * MIB);
    let (is_error, text, _) = mcp_call(
        &b,
        &token,
        "write_file",
        json!({"path": "mcp.txt", "content": content}),
    );
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::metadata(home(&b).join("mcp.txt"))
            .expect("written")
            .len(),
        16 * MIB as u64
    );
}
