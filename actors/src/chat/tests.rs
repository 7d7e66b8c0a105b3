use serde_json::json;

use super::*;

fn masker() -> Masker {
    Masker::new(true)
}

#[test]
fn cursors_round_trip_and_junk_is_refused() {
    assert_eq!(parse_cursor(""), Ok(None));
    assert_eq!(parse_cursor("abc-1:42"), Ok(Some(("abc-1", 42))));
    assert_eq!(parse_cursor("a:b:7"), Ok(Some(("a:b", 7))));
    assert_eq!(parse_cursor("nocolon"), Err(ChatError::BadCursor));
    assert_eq!(parse_cursor("s:-1"), Err(ChatError::BadCursor));
    assert_eq!(parse_cursor(&"x".repeat(600)), Err(ChatError::BadCursor));
}

#[test]
fn claude_lines_become_turns() {
    let user = json!({"type": "user", "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "make the marker"}});
    let t = claude::turns(&user);
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].role, t[0].kind), (Role::User, Kind::Text));
    assert_eq!(t[0].text, "make the marker");
    assert_eq!(t[0].at.as_deref(), Some("2026-01-01T00:00:00Z"));

    let assistant = json!({"type": "assistant", "message": {"content": [
        {"type": "thinking", "thinking": "hm"},
        {"type": "text", "text": "Running it."},
        {"type": "tool_use", "name": "Bash", "input": {"command": "touch /w/m", "description": "x"}}
    ]}});
    let t = claude::turns(&assistant);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1].kind, Kind::ToolCall);
    assert_eq!(t[1].text, "Bash: touch /w/m");

    let result = json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": [{"type": "text", "text": "ok"}]}
    ]}});
    let t = claude::turns(&result);
    assert_eq!(
        (t[0].role, t[0].kind, t[0].text.as_str()),
        (Role::Tool, Kind::ToolResult, "ok")
    );

    let meta = json!({"type": "user", "isMeta": true, "message": {"content": "caveat"}});
    assert!(claude::turns(&meta).is_empty());
    assert!(claude::turns(&json!({"type": "summary", "summary": "x"})).is_empty());
    assert!(claude::turns(&json!([1, 2])).is_empty());
}

#[test]
fn codex_lines_become_turns_once() {
    let user = json!({"timestamp": "t", "type": "event_msg",
        "payload": {"type": "user_message", "message": "make the marker"}});
    assert_eq!(codex::turns(&user)[0].text, "make the marker");
    // The same words as a model item (with Codex's additions) are not a second turn.
    let item = json!({"type": "response_item", "payload": {"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "<environment_context>…"}]}});
    assert!(codex::turns(&item).is_empty());
    let call = json!({"type": "response_item", "payload": {"type": "function_call",
        "name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"touch m\"]}"}});
    assert_eq!(codex::turns(&call)[0].text, "shell: bash -lc touch m");
    let out = json!({"type": "response_item", "payload": {"type": "function_call_output",
        "output": "{\"output\":\"done\\n\",\"metadata\":{}}"}});
    assert_eq!(codex::turns(&out)[0].text, "done\n");
    let said =
        json!({"type": "event_msg", "payload": {"type": "agent_message", "message": "Done."}});
    assert_eq!(codex::turns(&said)[0].role, Role::Assistant);
}

#[test]
fn turns_are_masked_then_cut() {
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let raw = RawTurn {
        role: Role::Tool,
        kind: Kind::ToolResult,
        text: format!("token {secret} {}", "x".repeat(5000)),
        at: None,
    };
    let turn = raw.finish("1.0".into(), &masker());
    assert!(!turn.text.contains(secret), "{}", &turn.text[..60]);
    assert!(turn.text.starts_with("token ghp_"));
    assert_eq!(turn.text.chars().count(), MAX_RESULT_CHARS + 1);
    assert!(turn.text.ends_with('…'));
}

#[test]
fn tails_keep_complete_lines_only() {
    let buf = b"partial\n{\"a\":1}\n\n{\"b\":2}\n{\"c\"";
    let l = tail::split(buf, 100, false);
    assert_eq!(l.lines.len(), 2);
    assert_eq!(l.lines[0].offset, 108);
    assert_eq!(l.lines[1].bytes, b"{\"b\":2}");
    assert_eq!(l.end, 100 + buf.len() as u64 - 4);
    let l = tail::split(buf, 0, true);
    assert_eq!(l.lines[0].bytes, b"partial");
    assert_eq!(tail::split(b"no newline", 5, false).end, 5);
}

#[test]
fn answers_keep_the_newest_turns_within_bounds() {
    let turn = |i: usize, len: usize| Turn {
        id: i.to_string(),
        role: Role::User,
        kind: Kind::Text,
        text: "x".repeat(len),
        at: None,
    };
    let many: Vec<Turn> = (0..MAX_TURNS + 10).map(|i| turn(i, 1)).collect();
    let kept = newest_within_bounds(many);
    assert_eq!(kept.len(), MAX_TURNS);
    assert_eq!(kept[0].id, "10");
    let big: Vec<Turn> = (0..20).map(|i| turn(i, 30 * 1024)).collect();
    let kept = newest_within_bounds(big);
    assert_eq!(kept.len(), 8);
    assert_eq!(kept.last().map(|t| t.id.as_str()), Some("19"));
}

#[test]
fn claude_names_its_folder_after_the_working_folder() {
    assert_eq!(
        transcript::project_folder(std::path::Path::new("/tmp/.tmpAb1/work_x")),
        "-tmp--tmpAb1-work-x"
    );
}

#[test]
fn stat_start_times_and_environments_parse() {
    let line = "7 (a (b) c) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
    assert_eq!(agent::start_ticks(line), Some(12345));
    assert_eq!(
        agent::parse_environ(b"HOME=/h\0BAD\0X=a=b\0"),
        vec![("HOME".into(), "/h".into()), ("X".into(), "a=b".into())]
    );
}

#[test]
fn the_folder_walk_refuses_links_and_foreign_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join(".claude/projects/p")).expect("dirs");
    std::fs::write(root.join(".claude/projects/p/s.jsonl"), "{}\n").expect("file");
    std::fs::write(root.join("outside.jsonl"), "{}\n").expect("file");
    std::os::unix::fs::symlink(
        root.join("outside.jsonl"),
        root.join(".claude/projects/p/l.jsonl"),
    )
    .expect("symlink");
    std::fs::hard_link(
        root.join("outside.jsonl"),
        root.join(".claude/projects/p/h.jsonl"),
    )
    .expect("hard link");
    std::os::unix::fs::symlink(
        root.join(".claude/projects/p"),
        root.join(".claude/projects/q"),
    )
    .expect("dir symlink");
    let projects = folder::Folder::open(root, &[".claude", "projects"]).expect("projects");
    let p = projects.child("p".as_ref()).expect("p");
    assert!(p.file("s.jsonl".as_ref()).is_some());
    assert!(
        p.file("l.jsonl".as_ref()).is_none(),
        "a symlink is not followed"
    );
    assert!(
        p.file("h.jsonl".as_ref()).is_none(),
        "a second link is refused"
    );
    assert!(p.file("..".as_ref()).is_none());
    assert!(
        projects.child("q".as_ref()).is_none(),
        "a linked folder is not entered"
    );
    assert!(projects.child("..".as_ref()).is_none());
    let names: Vec<_> = p.entries(10).into_iter().map(|e| e.name).collect();
    assert!(!names.iter().any(|n| n == "l.jsonl"), "{names:?}");
}
