//! Tests of the zellij backend against a real zellij (the pinned one `scripts/setup` builds into
//! `tools/zellij-<version>/`, or `COLLIE_ZELLIJ_BIN`), each with its own socket folder, home and
//! configuration in a temp dir, so the user's sessions are never seen or touched. Every session a
//! test starts is killed by a guard on drop (`kill-all-sessions` in its socket folder), pass or
//! fail.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use super::*;

const SALT: &[u8] = b"test-salt";
const DEADLINE: Duration = Duration::from_secs(20);

#[test]
fn pane_ids_are_canonical_z_numbers() {
    assert_eq!(parse_pane_id("z0-3"), Some((0, 3)));
    assert_eq!(parse_pane_id("z12-0"), Some((12, 0)));
    for bad in [
        "z01-3", "z0-03", "z-3", "z0-", "t0-3", "z0_3", "Z0-3", "z0-3x", "",
    ] {
        assert_eq!(parse_pane_id(bad), None, "{bad}");
    }
}

/// The zellij the tests run.
fn zellij_program() -> PathBuf {
    std::env::var_os("COLLIE_ZELLIJ_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tools/zellij-0.45.1/bin/zellij"),
        PathBuf::from,
    )
}

/// A private zellij: its own socket folder, home and configuration; every session killed on drop.
struct Zellij {
    dir: tempfile::TempDir,
}

impl Zellij {
    /// A private zellij; `None` (the test says it is skipped) only when `COLLIE_ZELLIJ=0` asks to
    /// leave zellij out, as `scripts/setup` does then.
    fn new() -> Option<Zellij> {
        if std::env::var_os("COLLIE_ZELLIJ").is_some_and(|v| v == "0") {
            eprintln!("skipped: COLLIE_ZELLIJ=0");
            return None;
        }
        let z = Zellij {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        let config = z.dir.path().join("config/zellij");
        std::fs::create_dir_all(&config).expect("config dir");
        std::fs::write(config.join("config.kdl"), "show_startup_tips false\n").expect("config");
        std::fs::create_dir_all(z.dir.path().join("home")).expect("home");
        assert!(
            zellij_program().exists(),
            "no zellij at {} (scripts/setup builds it; COLLIE_ZELLIJ_BIN names another)",
            zellij_program().display()
        );
        Some(z)
    }

    fn env(&self) -> Vec<(OsString, OsString)> {
        let d = self.dir.path();
        vec![
            ("ZELLIJ_SOCKET_DIR".into(), d.join("sock").into()),
            ("HOME".into(), d.join("home").into()),
            ("XDG_CONFIG_HOME".into(), d.join("config").into()),
            ("XDG_CACHE_HOME".into(), d.join("cache").into()),
            ("XDG_DATA_HOME".into(), d.join("data").into()),
            ("XDG_RUNTIME_DIR".into(), d.join("run").into()),
            ("SHELL".into(), "/bin/sh".into()),
        ]
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(zellij_program())
            .env_remove("ZELLIJ")
            .env_remove("ZELLIJ_SESSION_NAME")
            .envs(self.env())
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .expect("zellij runs")
    }

    fn start_session(&self, name: &str) {
        let out = self.run(&["attach", "--create-background", name]);
        assert!(out.status.success(), "zellij attach: {out:?}");
    }

    fn options(&self) -> ZellijOptions {
        ZellijOptions {
            program: zellij_program(),
            env: self.env(),
            scrollback: 200,
            poll: Duration::from_millis(300),
        }
    }
}

impl Drop for Zellij {
    fn drop(&mut self) {
        let _ = self.run(&["kill-all-sessions", "--yes"]);
    }
}

/// Polls `f` until it gives `Some`, at most [`DEADLINE`].
async fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text(backend: &ZellijBackend, id: &str) -> Vec<String> {
    backend
        .snapshot(id, 0, &|s: &str| s.to_owned())
        .map(|(_, _, s)| s.lines)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_session_is_listed_read_followed_and_typed_into() {
    let Some(z) = Zellij::new() else { return };
    z.start_session("work");
    let backend = ZellijBackend::start(SALT, z.options());
    let pane = eventually("the pane listed", || backend.list().into_iter().next()).await;
    assert!(matches!(backend.status(), ZellijStatus::Ready(v) if v >= cli::MIN_VERSION));
    assert_eq!(pane.id, "z0-0");
    assert_eq!(pane.session, "work");
    assert_eq!(pane.name, "Tab #1");
    assert!(pane.alive);
    assert_eq!(pane.token.len(), 4);
    assert_eq!(backend.list().len(), 1, "plugin panes are not listed");
    // Its first process is found: the session's shell.
    let pid = eventually("the pane's process", || {
        backend.info("z0-0").and_then(|p| p.pid)
    })
    .await;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).expect("comm");
    assert_eq!(comm.trim(), "sh");

    // Typed text and a named key reach the shell; its answer, in colour, reaches the mirror.
    let mut seq = backend.subscribe("z0-0").expect("subscribe");
    backend
        .send_text("z0-0", "printf '\\033[31mred\\033[0m %s\\n' done")
        .await
        .expect("text");
    backend
        .send_key("z0-0", NamedKey::Enter)
        .await
        .expect("key");
    eventually("the answer", || {
        text(&backend, "z0-0")
            .iter()
            .any(|l| l == "red done")
            .then_some(())
    })
    .await;
    assert!(seq.has_changed().unwrap_or(false), "the seq moved");
    let (_, _, snap) = backend
        .snapshot("z0-0", 0, &|s: &str| s.to_owned())
        .expect("snapshot");
    let row = snap
        .lines
        .iter()
        .position(|l| l == "red done")
        .expect("row");
    assert!(
        !snap.attrs.rows[row].is_empty(),
        "the red word keeps its colour"
    );
    // Masking is the caller's, applied to what the mirror holds.
    let (_, _, masked) = backend
        .snapshot("z0-0", 0, &|s: &str| s.replace("done", "••••"))
        .expect("snapshot");
    assert!(masked.lines.iter().any(|l| l == "red ••••"));
    seq.mark_unchanged();

    assert!(matches!(
        backend.send_text("z0-9", "x").await,
        Err(ZellijError::NoSuchPane)
    ));
    assert!(backend
        .snapshot("z9-0", 0, &|s: &str| s.to_owned())
        .is_none());
}

#[tokio::test]
async fn lines_that_scroll_off_are_kept_and_new_and_closed_panes_follow() {
    let Some(z) = Zellij::new() else { return };
    z.start_session("logs");
    let backend = ZellijBackend::start(SALT, z.options());
    eventually("the pane listed", || backend.list().into_iter().next()).await;
    backend.send_text("z0-0", "seq 1 120").await.expect("text");
    backend
        .send_key("z0-0", NamedKey::Enter)
        .await
        .expect("key");
    eventually("120 on screen", || {
        text(&backend, "z0-0")
            .iter()
            .any(|l| l == "120")
            .then_some(())
    })
    .await;
    // More than a screen came at once: the history is read again within a poll.
    let end = tokio::time::Instant::now() + DEADLINE;
    let snap = loop {
        let (_, _, snap) = backend
            .snapshot("z0-0", 200, &|s: &str| s.to_owned())
            .expect("snapshot");
        if snap.scrollback.iter().any(|l| l == "1") {
            break snap;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "the history never came: {:?} / {:?}",
            snap.scrollback,
            snap.lines
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let all: Vec<&String> = snap.scrollback.iter().chain(&snap.lines).collect();
    let numbers: Vec<u32> = all.iter().filter_map(|l| l.parse().ok()).collect();
    let from = numbers.first().copied().unwrap_or(0);
    assert_eq!(
        numbers,
        (from..=120).collect::<Vec<_>>(),
        "every line between, none lost or doubled"
    );
    assert_eq!(from, 1, "from the first line on");

    // A new pane shows within a poll or two; closed, it goes.
    let out = z.run(&["--session", "logs", "action", "new-pane"]);
    assert!(out.status.success(), "new-pane: {out:?}");
    let two = eventually("two panes", || {
        (backend.list().len() == 2).then(|| backend.list())
    })
    .await;
    assert_eq!(two[1].id, "z0-1");
    assert_eq!(
        two.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["Tab #1.0", "Tab #1.1"]
    );
    let out = z.run(&[
        "--session",
        "logs",
        "action",
        "close-pane",
        "--pane-id",
        "terminal_1",
    ]);
    assert!(out.status.success(), "close-pane: {out:?}");
    eventually("one pane again", || {
        (backend.list().len() == 1).then_some(())
    })
    .await;

    // The session ends: its panes go.
    let out = z.run(&["kill-session", "logs"]);
    assert!(out.status.success(), "kill-session: {out:?}");
    eventually("no pane", || backend.list().is_empty().then_some(())).await;
}

#[tokio::test]
async fn without_zellij_there_are_no_panes_and_the_status_says_why() {
    let backend = ZellijBackend::start(
        SALT,
        ZellijOptions {
            program: PathBuf::from("/nonexistent/zellij"),
            ..ZellijOptions::default()
        },
    );
    let why = eventually("the status", || match backend.status() {
        ZellijStatus::Unavailable(why) => Some(why),
        _ => None,
    })
    .await;
    assert!(why.contains("not found"), "{why}");
    assert!(backend.list().is_empty());
}

/// How many times the zellij behind `log` was asked `list-sessions`.
fn list_sessions_asked(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("list-sessions"))
        .count()
}

/// The real zellij behind a two-line wrapper that writes down each command it is given: an idle
/// bridge looks at the socket folder, and asks zellij (a process) only when a session came or went.
#[tokio::test]
async fn an_idle_backend_asks_zellij_only_when_a_session_comes_or_goes() {
    let Some(z) = Zellij::new() else { return };
    let (wrapper, log) = (z.dir.path().join("zellij"), z.dir.path().join("asked"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            zellij_program().display()
        ),
    )
    .expect("wrapper");
    let mut perms = std::fs::metadata(&wrapper).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&wrapper, perms).expect("chmod");
    let poll = Duration::from_millis(100);
    let backend = ZellijBackend::start(
        SALT,
        ZellijOptions {
            program: wrapper,
            poll,
            ..z.options()
        },
    );
    eventually("zellij's version read", || {
        matches!(backend.status(), ZellijStatus::Ready(_)).then_some(())
    })
    .await;
    // Twenty polls with no session: asked at the start and once more, not at every poll.
    tokio::time::sleep(poll * 20).await;
    let idle = list_sessions_asked(&log);
    assert!(
        (1..=3).contains(&idle),
        "asked {idle} times in 20 idle polls"
    );

    // A session's socket appears: it is asked for, and its pane listed well before the recheck.
    z.start_session("appears");
    eventually("the new session's pane", || {
        (!backend.list().is_empty()).then_some(())
    })
    .await;
    assert!(list_sessions_asked(&log) > idle);
    let out = z.run(&["kill-session", "appears"]);
    assert!(out.status.success(), "kill-session: {out:?}");
    eventually("the pane gone", || backend.list().is_empty().then_some(())).await;
}

/// The numbers in pane `id`'s scrollback (up to 500 lines) and screen, oldest first.
fn numbers(backend: &ZellijBackend, id: &str) -> (Vec<u32>, Vec<u32>) {
    let Some((_, _, snap)) = backend.snapshot(id, 500, &|s: &str| s.to_owned()) else {
        return (Vec::new(), Vec::new());
    };
    let parse = |ls: &[String]| ls.iter().filter_map(|l| l.parse().ok()).collect();
    (parse(&snap.scrollback), parse(&snap.lines))
}

/// Near the global buffer cap the Panes actor lowers the mirrors' scrollback (SPEC §5 "Caps"): a
/// zellij mirror keeps the newest lines of the new limit, its memory drops, and raised again it
/// reads its history back from zellij.
#[tokio::test]
async fn the_scrollback_limit_shrinks_a_mirror_and_raising_it_reads_history_back() {
    let Some(z) = Zellij::new() else { return };
    z.start_session("cap");
    let backend = ZellijBackend::start(SALT, z.options());
    eventually("the pane listed", || backend.list().into_iter().next()).await;
    backend.send_text("z0-0", "seq 1 150").await.expect("text");
    backend
        .send_key("z0-0", NamedKey::Enter)
        .await
        .expect("key");
    eventually("the whole history", || {
        numbers(&backend, "z0-0").0.contains(&1).then_some(())
    })
    .await;
    let full = backend.allocated_bytes();
    assert_eq!(backend.scrollback_limit(), 200);

    backend.set_scrollback_limit(10);
    assert_eq!(backend.scrollback_limit(), 10);
    let (kept, screen) = eventually("ten lines kept", || {
        let (kept, screen) = numbers(&backend, "z0-0");
        (kept.len() <= 10 && screen.contains(&150)).then_some((kept, screen))
    })
    .await;
    assert_eq!(kept.len(), 10, "the newest ten: {kept:?}");
    let first_on_screen = screen.first().copied().unwrap_or(0);
    assert_eq!(
        kept,
        (first_on_screen - 10..first_on_screen).collect::<Vec<_>>(),
        "the lines just above the screen"
    );
    assert!(backend.allocated_bytes() < full, "the memory dropped");

    backend.set_scrollback_limit(5000);
    assert_eq!(
        backend.scrollback_limit(),
        200,
        "never above the configured amount"
    );
    eventually("the history back", || {
        numbers(&backend, "z0-0").0.contains(&1).then_some(())
    })
    .await;
}
