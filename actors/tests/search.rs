//! `start_search` / `get_more_search_results` / `stop_search` (SPEC §11, seed 003 §8.12 and
//! red-team item 13) on real files in temp dirs, through `Searches` — the interface the
//! application layer calls. Each test tries to break one rule: .gitignore and hidden files, the
//! caller's `allowed` predicate, symlinks, every bound (depth, results, bytes, time, searches at
//! once, the global IO bound, file size, binary files), cancellation (threads gone), ids that
//! cannot be probed, and an audit line that never holds the pattern or a matched line.
//!
//! Where a search must stay running long enough to be stopped or refused, its `allowed`
//! predicate takes a few milliseconds per entry: it stands in for a slow disk (no real disk here
//! can be made slow on demand). Tests wait for conditions by polling with a deadline.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use collie_actors::tools::search::{
    CutShort, GetMoreSearchResultsArgs, SearchLimits, SearchPage, SearchType, Searches,
    StartSearchArgs, StopSearchArgs,
};
use collie_actors::tools::ToolError;
use serde_json::json;
use tempfile::TempDir;

type Allowed = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

fn all() -> Allowed {
    Arc::new(|_: &Path| true)
}

/// Stands for a slow disk: each entry the walker asks about costs `ms` milliseconds.
fn slow(ms: u64) -> Allowed {
    Arc::new(move |_: &Path| {
        std::thread::sleep(Duration::from_millis(ms));
        true
    })
}

fn content(pattern: &str) -> StartSearchArgs {
    args(json!({"path": ".", "pattern": pattern, "searchType": "content", "contextLines": 0}))
}

fn names(pattern: &str) -> StartSearchArgs {
    args(json!({"path": ".", "pattern": pattern}))
}

fn args(v: serde_json::Value) -> StartSearchArgs {
    serde_json::from_value(v).expect("valid arguments")
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

/// `n` files of a few lines each under `root/tree`, spread over folders of 50.
fn tree(root: &Path, n: usize, needle_every: usize) {
    for i in 0..n {
        let mut text = format!("file {i}\nsome ordinary words here\n");
        if needle_every > 0 && i % needle_every == 0 {
            text.push_str("the NEEDLE is here\n");
        }
        write(root, &format!("tree/d{}/f{i}.txt", i / 50), &text);
    }
}

/// Polls the search until it has ended (a search finishing is what the test waits for).
fn wait_complete(s: &Searches, owner: &str, id: &str) -> SearchPage {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let page = s
            .more(
                owner,
                GetMoreSearchResultsArgs {
                    session_id: id.to_owned(),
                    offset: 0,
                    length: Some(10_000),
                },
            )
            .expect("the search is known")
            .answer;
        if page.is_complete {
            return page;
        }
        assert!(Instant::now() < deadline, "search {id} did not end");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls until no search thread is alive.
fn wait_threads_gone(s: &Searches, within: Duration) {
    let deadline = Instant::now() + within;
    while s.live_threads() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} search threads still alive",
            s.live_threads()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn run_to_end(s: &Searches, root: &Path, allowed: Allowed, a: StartSearchArgs) -> SearchPage {
    let first = s
        .start("phone", root.to_path_buf(), allowed, a)
        .await
        .expect("started")
        .answer;
    wait_complete(s, "phone", &first.session_id)
}

fn files(page: &SearchPage, root: &Path) -> HashSet<String> {
    page.results
        .iter()
        .map(|h| {
            Path::new(&h.file)
                .strip_prefix(root)
                .expect("inside the root")
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

fn set(items: &[&str]) -> HashSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn finds_content_honouring_gitignore_and_hidden_files() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "a.txt", "one\nfind ME here\ntwo\n");
    write(root, "sub/b.rs", "fn main() { /* find me */ }\n");
    write(root, ".gitignore", "ignored/\n*.log\n");
    write(root, "ignored/c.txt", "find me\n");
    write(root, "d.log", "find me\n");
    write(root, ".hidden/e.txt", "find me\n");
    write(root, ".git/config", "find me\n");
    let s = Searches::new(SearchLimits::default());

    // Not a git repository, and still .gitignore is honoured; hidden files are not searched.
    let page = run_to_end(&s, root, all(), content("find me")).await;
    assert_eq!(files(&page, root), set(&["a.txt", "sub/b.rs"]));
    let hit = page
        .results
        .iter()
        .find(|h| h.file.ends_with("a.txt"))
        .expect("a.txt");
    assert_eq!(hit.line, Some(2));
    assert_eq!(hit.text.as_deref(), Some("find ME here"));
    assert_eq!(page.cut_short, None);

    // includeHidden adds hidden files, but never .git; ignoreCase false is exact.
    let a = args(
        json!({"path": ".", "pattern": "find me", "searchType": "content",
                        "includeHidden": true, "ignoreCase": false}),
    );
    let page = run_to_end(&s, root, all(), a).await;
    assert_eq!(files(&page, root), set(&["sub/b.rs", ".hidden/e.txt"]));
}

#[tokio::test]
async fn context_lines_and_literal_search() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "x.txt", "l1\nl2\nfn (x) {\nl4\nl5\n");
    let s = Searches::new(SearchLimits::default());
    let a = args(
        json!({"path": ".", "pattern": "fn (x) {", "searchType": "content",
                        "literalSearch": true, "contextLines": 1}),
    );
    let page = run_to_end(&s, root, all(), a).await;
    assert_eq!(page.results.len(), 1);
    let hit = &page.results[0];
    assert_eq!(
        (hit.before.as_slice(), hit.after.as_slice()),
        (&["l2".to_owned()][..], &["l4".to_owned()][..])
    );

    // The same text as a regex is refused in one clean sentence naming the problem, before
    // any thread is started.
    wait_threads_gone(&s, Duration::from_secs(5));
    let a = args(json!({"path": ".", "pattern": "fn (x) {", "searchType": "content"}));
    let err = s
        .start("phone", root.to_path_buf(), all(), a)
        .await
        .expect_err("a bad regex is refused");
    let ToolError::BadArgument(m) = err else {
        panic!("BadArgument expected, got {err:?}");
    };
    assert!(
        m.starts_with("pattern is not a valid regular expression ("),
        "{m}"
    );
    assert!(!m.contains('\n') && !m.contains("regex parse error"), "{m}");
    assert_eq!(s.live_threads(), 0, "nothing was started");
}

#[tokio::test]
async fn name_search_with_file_pattern_and_early_termination() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "src/main.rs", "");
    write(root, "src/domain.rs", "");
    write(root, "src/main.toml", "");
    write(root, "docs/Main.md", "");
    let s = Searches::new(SearchLimits::default());

    let page = run_to_end(&s, root, all(), names("main")).await;
    assert_eq!(
        files(&page, root),
        set(&[
            "src/main.rs",
            "src/domain.rs",
            "src/main.toml",
            "docs/Main.md"
        ])
    );
    let a = args(json!({"path": ".", "pattern": "main", "filePattern": "*.rs|*.md"}));
    let page = run_to_end(&s, root, all(), a).await;
    assert_eq!(
        files(&page, root),
        set(&["src/main.rs", "src/domain.rs", "docs/Main.md"])
    );
    let page = run_to_end(&s, root, all(), names("*.toml")).await;
    assert_eq!(files(&page, root), set(&["src/main.toml"]));

    // An exact name ends a name search at once.
    let page = run_to_end(&s, root, all(), names("main.rs")).await;
    assert_eq!(page.cut_short, Some(CutShort::EarlyTermination));
    // (domain.rs also holds "main.rs" and may be found first, depending on the walk's order.)
    assert!(files(&page, root).contains("src/main.rs"));
    assert!(page.total_results <= 2);
}

#[tokio::test]
async fn refused_entries_are_neither_listed_nor_read_nor_entered() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "ok.txt", "secret word\n");
    for i in 0..10 {
        write(root, &format!(".collie/state{i}.txt"), "secret word\n");
        write(root, &format!("private/f{i}.txt"), "secret word\n");
    }
    write(root, "private/.gitignore", "ok.txt\n");
    let s = Searches::new(SearchLimits::default());
    let refused = root.join("private");
    let allowed: Allowed = Arc::new(move |p: &Path| !p.starts_with(&refused));
    let a = args(
        json!({"path": ".", "pattern": "secret", "searchType": "content",
                        "includeHidden": true}),
    );
    let before = s.io_stats().reads;
    let page = run_to_end(&s, root, allowed, a).await;
    // .collie is hidden-but-included here and allowed, so it is searched; private/ is not.
    assert!(files(&page, root).contains("ok.txt"));
    assert!(!page.results.iter().any(|h| h.file.contains("private")));
    assert_eq!(
        s.io_stats().reads - before,
        11,
        "only allowed files were read"
    );

    // A refused root is refused outright.
    let deny: Allowed = Arc::new(|_: &Path| false);
    let err = s
        .start("phone", root.to_path_buf(), deny, content("x"))
        .await
        .err();
    assert_eq!(err, Some(ToolError::PathNotAllowed));
}

#[tokio::test]
async fn symlinks_are_never_followed() {
    let outside = TempDir::new().expect("tempdir");
    write(outside.path(), "target.txt", "outside secret\n");
    write(outside.path(), "dir/inner.txt", "outside secret\n");
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "in.txt", "inside secret\n");
    std::os::unix::fs::symlink(outside.path().join("target.txt"), root.join("link.txt"))
        .expect("symlink");
    std::os::unix::fs::symlink(outside.path().join("dir"), root.join("linkdir")).expect("symlink");
    let s = Searches::new(SearchLimits::default());
    let page = run_to_end(&s, root, all(), content("secret")).await;
    assert_eq!(files(&page, root), set(&["in.txt"]));
    let page = run_to_end(&s, root, all(), names("txt")).await;
    assert_eq!(files(&page, root), set(&["in.txt"]));
}

#[tokio::test]
async fn depth_file_size_and_binary_files_are_bounded() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "a/b/shallow.txt", "needle\n");
    write(root, "a/b/c/d/deep.txt", "needle\n");
    write(root, "big.txt", &format!("needle\n{}", "x".repeat(5_000)));
    fs::write(root.join("bin.dat"), b"needle\n\0\x01\x02 binary").expect("write");
    let limits = SearchLimits {
        max_depth: 3,
        max_file_size: 4_096,
        ..SearchLimits::default()
    };
    let s = Searches::new(limits);
    let page = run_to_end(&s, root, all(), content("needle")).await;
    assert_eq!(files(&page, root), set(&["a/b/shallow.txt"]));
    assert!(page.skipped_files >= 1, "the binary file counts as skipped");
    // A name search still lists the big file (it reads no contents), not the deep one.
    let page = run_to_end(&s, root, all(), names("txt")).await;
    assert_eq!(files(&page, root), set(&["a/b/shallow.txt", "big.txt"]));
}

#[tokio::test]
async fn results_stop_at_the_count_cap_and_the_byte_cap() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    tree(root, 400, 1);
    let s = Searches::new(SearchLimits::default());
    let a = args(
        json!({"path": ".", "pattern": "needle", "searchType": "content",
                        "maxResults": 7}),
    );
    let page = run_to_end(&s, root, all(), a).await;
    assert_eq!(page.total_results, 7);
    assert_eq!(page.cut_short, Some(CutShort::MaxResults));

    let max_bytes = 2_000;
    let s = Searches::new(SearchLimits {
        max_result_bytes: max_bytes,
        ..SearchLimits::default()
    });
    let page = run_to_end(&s, root, all(), content("needle")).await;
    let held: usize = page
        .results
        .iter()
        .map(|h| h.file.len() + h.text.as_ref().map_or(0, String::len))
        .sum();
    assert!(page.total_results < 400 && page.total_results > 0);
    assert!(held <= max_bytes, "{held} bytes held");
    assert_eq!(page.cut_short, Some(CutShort::MaxResults));
}

#[tokio::test]
async fn a_search_ends_itself_at_its_time_limit() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    tree(root, 2_000, 10);
    let s = Searches::new(SearchLimits::default());
    let a = args(
        json!({"path": ".", "pattern": "needle", "searchType": "content",
                        "timeout_ms": 100}),
    );
    let started = Instant::now();
    // 2,000 entries at 5 ms each cannot be walked in 100 ms on any number of threads here.
    let page = run_to_end(&s, root, slow(5), a).await;
    assert_eq!(page.cut_short, Some(CutShort::Timeout));
    assert!(started.elapsed() < Duration::from_secs(10));
    wait_threads_gone(&s, Duration::from_secs(5));
}

#[tokio::test]
async fn stop_and_stop_all_end_the_walker_threads() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    tree(root, 3_000, 10);
    let s = Searches::new(SearchLimits::default());
    let first = s
        .start("phone", root.to_path_buf(), slow(3), content("needle"))
        .await
        .expect("started")
        .answer;
    assert!(!first.is_complete);
    assert!(
        s.live_threads() >= 2,
        "the search's thread and its workers run"
    );
    let stopped = s
        .stop(
            "phone",
            StopSearchArgs {
                session_id: first.session_id.clone(),
            },
        )
        .expect("stopped")
        .answer;
    assert!(!stopped.was_complete);
    wait_threads_gone(&s, Duration::from_secs(5));
    let page = wait_complete(&s, "phone", &first.session_id);
    assert_eq!(page.cut_short, Some(CutShort::Stopped));

    // stop_all: two devices' searches, all threads gone.
    for owner in ["phone", "laptop"] {
        s.start(owner, root.to_path_buf(), slow(3), content("needle"))
            .await
            .expect("started");
    }
    assert!(s.live_threads() >= 4);
    s.stop_all();
    wait_threads_gone(&s, Duration::from_secs(5));
}

#[tokio::test]
async fn one_search_more_than_allowed_is_refused() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    tree(root, 3_000, 10);
    let s = Searches::new(SearchLimits {
        max_concurrent: 3,
        max_concurrent_per_owner: 2,
        ..SearchLimits::default()
    });
    let start = |owner: &'static str| {
        let s = s.clone();
        let root: PathBuf = root.to_path_buf();
        async move {
            s.start(owner, root, slow(3), content("needle"))
                .await
                .map(|d| d.answer.session_id)
        }
    };
    let a1 = start("a").await.expect("a's first");
    start("a").await.expect("a's second");
    assert_eq!(
        start("a").await.err(),
        Some(ToolError::ResourceLimit("searches"))
    );
    start("b").await.expect("b's first");
    assert_eq!(
        start("c").await.err(),
        Some(ToolError::ResourceLimit("searches")),
        "the global cap holds for a device with none running"
    );
    // A stopped search frees its place once it has ended.
    s.stop(
        "a",
        StopSearchArgs {
            session_id: a1.clone(),
        },
    )
    .expect("stopped");
    wait_complete(&s, "a", &a1);
    start("c").await.expect("room again");
    s.stop_all();
    wait_threads_gone(&s, Duration::from_secs(5));
}

#[tokio::test]
async fn the_global_io_bound_holds_with_every_search_running() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    // Files big enough that reading one takes a while, so threads contend for permits.
    let filler = "lorem ipsum dolor sit amet ".repeat(2_000);
    for i in 0..300 {
        write(
            root,
            &format!("d{}/f{i}.txt", i / 30),
            &format!("{filler}\nneedle {i}\n"),
        );
    }
    let limits = SearchLimits {
        max_concurrent: 4,
        max_concurrent_per_owner: 4,
        threads_per_search: 4,
        io_permits: 2,
        ..SearchLimits::default()
    };
    let s = Searches::new(limits);
    let mut ids = Vec::new();
    for _ in 0..4 {
        let page = s
            .start("phone", root.to_path_buf(), all(), content("needle"))
            .await
            .expect("started")
            .answer;
        ids.push(page.session_id);
    }
    for id in &ids {
        let page = wait_complete(&s, "phone", id);
        assert_eq!(
            page.total_results, 300,
            "the bound slows searches, never drops results"
        );
    }
    let io = s.io_stats();
    assert_eq!(io.permits, 2);
    assert!(io.peak <= 2, "{io:?}");
    assert_eq!(io.reads, 4 * 300);
    assert!(
        io.waits > 0,
        "16 walker threads had to queue for 2 permits: {io:?}"
    );
    assert_eq!(io.in_use, 0);
}

#[tokio::test]
async fn another_devices_search_is_answered_like_an_unknown_one() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "a.txt", "x\n");
    let s = Searches::new(SearchLimits::default());
    let id = s
        .start("phone", root.to_path_buf(), all(), names("a"))
        .await
        .expect("started")
        .answer
        .session_id;
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let more = |owner: &str, id: &str| {
        s.more(
            owner,
            GetMoreSearchResultsArgs {
                session_id: id.to_owned(),
                offset: 0,
                length: None,
            },
        )
        .err()
    };
    assert_eq!(more("laptop", &id), Some(ToolError::NoSuchSearch));
    assert_eq!(more("laptop", &id), more("laptop", "0123"));
    let stop = s
        .stop(
            "laptop",
            StopSearchArgs {
                session_id: id.clone(),
            },
        )
        .err();
    assert_eq!(stop, Some(ToolError::NoSuchSearch));
    assert_eq!(more("phone", &id), None);
}

#[tokio::test]
async fn finished_searches_are_forgotten() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    write(root, "a.txt", "x\n");
    let s = Searches::new(SearchLimits {
        max_finished_per_owner: 2,
        ..SearchLimits::default()
    });
    let mut ids = Vec::new();
    for _ in 0..3 {
        let page = run_to_end(&s, root, all(), names("a")).await;
        ids.push(page.session_id);
    }
    let known = |id: &str| {
        s.more(
            "phone",
            GetMoreSearchResultsArgs {
                session_id: id.to_owned(),
                offset: 0,
                length: None,
            },
        )
        .is_ok()
    };
    assert!(!known(&ids[0]), "the oldest of three is forgotten");
    assert!(known(&ids[1]) && known(&ids[2]));

    let s = Searches::new(SearchLimits {
        keep_finished: Duration::from_millis(50),
        ..SearchLimits::default()
    });
    let page = run_to_end(&s, root, all(), names("a")).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    // Waits for the keep time to pass: forgetting is what is awaited.
    while s
        .more(
            "phone",
            GetMoreSearchResultsArgs {
                session_id: page.session_id.clone(),
                offset: 0,
                length: None,
            },
        )
        .is_ok()
    {
        assert!(Instant::now() < deadline, "never forgotten");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn pages_and_the_audit_line() {
    let dir = TempDir::new().expect("tempdir");
    let root = dir.path();
    tree(root, 120, 1);
    let s = Searches::new(SearchLimits::default());
    let started = s
        .start("phone", root.to_path_buf(), all(), content("the NEEDLE is"))
        .await
        .expect("started");
    let id = started.answer.session_id.clone();
    let all_results = wait_complete(&s, "phone", &id);
    assert_eq!(all_results.total_results, 120);
    let page = s
        .more(
            "phone",
            GetMoreSearchResultsArgs {
                session_id: id.clone(),
                offset: -10,
                length: Some(5),
            },
        )
        .expect("page");
    assert_eq!(page.answer.offset, 110);
    assert_eq!(page.answer.results, all_results.results[110..115].to_vec());
    assert_eq!(page.meta.get("resultCount"), Some(&json!(5)));

    // The audit metadata: the root, the pattern's length and the counts — never the pattern
    // nor a line or a path found.
    let meta = serde_json::to_string(&started.meta).expect("json");
    assert_eq!(started.meta.get("patternLength"), Some(&json!(13)));
    assert_eq!(
        started.meta.get("root"),
        Some(&json!(root.to_string_lossy()))
    );
    assert_eq!(started.meta.get("sessionId"), Some(&json!(id)));
    for answer_meta in [&meta, &serde_json::to_string(&page.meta).expect("json")] {
        assert!(
            !answer_meta.to_lowercase().contains("needle"),
            "{answer_meta}"
        );
        assert!(!answer_meta.contains("f1.txt"), "{answer_meta}");
    }
}

#[test]
fn arguments_use_desktop_commanders_names_and_refuse_others() {
    let a = args(
        json!({"path": "/w", "pattern": "x", "searchType": "content",
        "filePattern": "*.rs", "ignoreCase": false, "maxResults": 3, "includeHidden": true,
        "contextLines": 2, "timeout_ms": 500, "earlyTermination": false, "literalSearch": true}),
    );
    assert_eq!(a.search_type, SearchType::Content);
    assert_eq!(a.max_results, Some(3));
    let unknown = serde_json::from_value::<StartSearchArgs>(
        json!({"path": "/w", "pattern": "x", "risk": "high"}),
    );
    assert!(unknown.is_err());
    let more: GetMoreSearchResultsArgs =
        serde_json::from_value(json!({"sessionId": "ab", "offset": -5, "length": 10}))
            .expect("valid");
    assert_eq!((more.offset, more.length), (-5, Some(10)));
    assert!(serde_json::from_value::<StopSearchArgs>(json!({"sessionId": "ab", "x": 1})).is_err());
    let schema = serde_json::to_value(schemars::schema_for!(StartSearchArgs)).expect("schema");
    let props = schema["properties"].as_object().expect("properties");
    for name in [
        "path",
        "pattern",
        "searchType",
        "filePattern",
        "ignoreCase",
        "maxResults",
        "includeHidden",
        "contextLines",
        "timeout_ms",
        "earlyTermination",
        "literalSearch",
    ] {
        assert!(props.contains_key(name), "{name} missing from the schema");
    }
}
