//! Tests of the tmux backend against real tmux servers on private sockets in temp dirs.
//!
//! Each test starts its own server (`-f /dev/null`, `SHELL=/bin/sh`, `TMUX` removed) through a
//! guard whose `Drop` runs `kill-server`; the temp dir goes with it. The user's default server is
//! never touched: the default-socket test points `TMUX_TMPDIR` at a temp dir.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use rand::Rng;

use super::*;
use crate::panes::token::pane_token;

const SALT: &[u8] = b"test-salt";
const DEADLINE: Duration = Duration::from_secs(15);

/// A private tmux server, killed on drop.
struct TmuxServer {
    dir: tempfile::TempDir,
    /// `Some` for an explicit socket; `None` for the default socket under `TMUX_TMPDIR=dir`.
    socket: Option<PathBuf>,
}

impl TmuxServer {
    fn start_on_path() -> TmuxServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = Some(dir.path().join("sock"));
        TmuxServer::start(dir, socket)
    }

    fn start_default() -> TmuxServer {
        let dir = tempfile::tempdir().expect("temp dir");
        TmuxServer::start(dir, None)
    }

    fn start(dir: tempfile::TempDir, socket: Option<PathBuf>) -> TmuxServer {
        let server = TmuxServer { dir, socket };
        let out = server.tmux(&["new-session", "-d", "-s", "t1", "-x", "80", "-y", "24"]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        server
    }

    fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("TMUX_TMPDIR".into(), self.dir.path().as_os_str().to_owned()),
            ("SHELL".into(), "/bin/sh".into()),
        ]
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("tmux");
        cmd.env_remove("TMUX")
            .envs(self.env())
            .arg("-f")
            .arg("/dev/null");
        if let Some(socket) = &self.socket {
            cmd.arg("-S").arg(socket);
        }
        cmd.args(args).output().expect("run tmux")
    }

    fn tmux_text(&self, args: &[&str]) -> String {
        let out = self.tmux(args);
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn options(&self) -> TmuxOptions {
        TmuxOptions {
            env: self.env(),
            retry: Duration::from_millis(200),
            ..TmuxOptions::default()
        }
    }

    fn socket_spec(&self) -> TmuxSocket {
        match &self.socket {
            Some(path) => TmuxSocket::Path(path.clone()),
            None => TmuxSocket::Default,
        }
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// Polls `cond` every 20 ms until it holds or [`DEADLINE`] passes.
async fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn plain(s: &str) -> String {
    s.to_owned()
}

/// The pane's screen, without its token and name.
fn screen(
    backend: &TmuxBackend,
    id: &str,
    scrollback: usize,
    mask: &dyn Fn(&str) -> String,
) -> Option<ScreenSnapshot> {
    backend.snapshot(id, scrollback, mask).map(|(_, _, s)| s)
}

fn random_word() -> String {
    let n: u64 = rand::thread_rng().gen();
    format!("{n:016x}")
}

/// Whether the shell has printed its prompt (any non-empty row), so typed keys reach it.
fn prompt_shown(backend: &TmuxBackend, id: &str) -> bool {
    screen(backend, id, 0, &plain).is_some_and(|s| s.lines.iter().any(|l| !l.is_empty()))
}

fn screen_has_line(backend: &TmuxBackend, id: &str, line: &str) -> bool {
    screen(backend, id, 100, &plain)
        .is_some_and(|s| s.lines.iter().chain(&s.scrollback).any(|l| l == line))
}

/// Masks `ghp_` + 36 alphanumerics, keeping five characters (the redact module's rule shape).
fn mask_ghp(s: &str) -> String {
    let re = regex::Regex::new("ghp_[A-Za-z0-9]{36}").expect("static regex");
    re.replace_all(s, |c: &regex::Captures<'_>| {
        let m = &c[0];
        format!("{}{}", &m[..5], "•".repeat(m.len() - 5))
    })
    .into_owned()
}

#[test]
fn pane_ids_parse() {
    assert_eq!(parse_pane_id("t0-3"), Some((0, 3)));
    assert_eq!(parse_pane_id("t12-0"), Some((12, 0)));
    for bad in [
        "p1",
        "t-1",
        "t1-",
        "t1-x",
        "t1-+2",
        "t1",
        "x0-1",
        "t1-99999999999",
        // Aliases of real ids are not ids.
        "t01-0",
        "t1-00",
        "t00-3",
        "t0-03",
    ] {
        assert_eq!(parse_pane_id(bad), None, "{bad}");
    }
}

#[test]
fn quoting_is_single_words() {
    assert_eq!(quote("a b").expect("ok"), "'a b'");
    assert_eq!(quote("it's $HOME").expect("ok"), r#"'it'"'"'s $HOME'"#);
    assert!(quote("two\nlines").is_err());
    assert_eq!(parse_new_pane("%12\n").expect("id"), 12);
    assert!(parse_new_pane("oops").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_types_and_follows_panes_on_explicit_socket() {
    let first = TmuxServer::start_on_path();
    let server = TmuxServer::start_on_path();
    let backend = TmuxBackend::start(
        vec![first.socket_spec(), server.socket_spec()],
        SALT,
        server.options(),
    );

    // The pane of the explicit socket at index 1 appears as t1-<n>.
    assert!(
        wait_for(|| backend.list().iter().any(|p| p.id.starts_with("t1-"))).await,
        "pane never appeared"
    );
    let pane_n = server.tmux_text(&["display", "-p", "-t", "t1", "#{pane_id}"]);
    let id = format!("t1-{}", pane_n.trim_start_matches('%'));
    let list: Vec<TmuxPaneInfo> = backend
        .list()
        .into_iter()
        .filter(|p| p.id.starts_with("t1-"))
        .collect();
    assert_eq!(list.len(), 1, "{list:?}");
    let info = &list[0];
    assert_eq!(info.id, id);
    assert_eq!((info.cols, info.rows), (80, 24));
    assert!(info.alive);
    let pids = server.tmux_text(&["display", "-p", "-t", &pane_n, "#{pid} #{pane_pid}"]);
    let (server_pid, pane_pid) = pids.split_once(' ').expect("two pids");
    assert_eq!(
        info.token,
        pane_token(SALT, &format!("tmux:{server_pid}:{pane_n}:{pane_pid}"))
    );

    // Typing reaches the shell and its output reaches the mirror.
    assert!(wait_for(|| prompt_shown(&backend, &id)).await, "no prompt");
    let mut rx = backend.subscribe(&id).expect("subscribe");
    let seq0 = *rx.borrow_and_update();
    let word = format!("hello-{}", random_word());
    backend
        .send_text(&id, &format!("echo {word}"))
        .await
        .expect("send text");
    backend
        .send_key(&id, NamedKey::parse("Enter").expect("key"))
        .await
        .expect("send key");
    assert!(
        wait_for(|| screen_has_line(&backend, &id, &word)).await,
        "output never shown"
    );
    assert!(rx.has_changed().expect("open"));
    let (token, _, snap) = backend.snapshot(&id, 10, &plain).expect("snapshot");
    assert!(snap.seq > seq0);
    assert_eq!(snap.lines.len(), 24);
    assert_eq!(token, info.token);

    // Text with quotes, `$`, `;` and non-ASCII is typed literally.
    let tricky = format!("echo '{word} ; $HOME \"é\"'");
    backend.send_text(&id, &tricky).await.expect("send text");
    backend
        .send_key(&id, NamedKey::parse("Enter").expect("key"))
        .await
        .expect("send key");
    let expect = format!("{word} ; $HOME \"é\"");
    assert!(
        wait_for(|| screen_has_line(&backend, &id, &expect)).await,
        "tricky text mangled"
    );

    // A new window (in the first session of the first socket), renamed, then killed.
    let argv = vec!["sh".to_owned()];
    let new_id = backend
        .new_window(Some("work"), Some(&argv))
        .await
        .expect("new window");
    assert!(new_id.starts_with("t0-"), "{new_id}");
    assert_eq!(
        first
            .tmux_text(&["list-windows", "-t", "t1", "-F", "#{window_name}"])
            .lines()
            .count(),
        2
    );
    assert!(
        wait_for(|| backend
            .list()
            .iter()
            .any(|p| p.id == new_id && p.name == "work"))
        .await,
        "new window not mirrored: {:?}",
        backend.list()
    );
    backend
        .rename(&new_id, "it's renamed")
        .await
        .expect("rename");
    assert!(
        wait_for(|| backend
            .list()
            .iter()
            .any(|p| p.id == new_id && p.name == "it's renamed"))
        .await,
        "rename not seen: {:?}",
        backend.list()
    );
    let mut new_rx = backend.subscribe(&new_id).expect("subscribe new");
    backend.kill(&new_id).await.expect("kill");
    assert!(
        wait_for(|| screen(&backend, &new_id, 0, &plain).is_none()).await,
        "kill not seen"
    );
    assert!(backend.list().iter().all(|p| p.id != new_id));
    // Its change channel closes with it.
    while new_rx.changed().await.is_ok() {}
    assert!(matches!(
        backend.kill(&new_id).await,
        Err(TmuxError::NoSuchPane)
    ));
    assert!(matches!(
        backend.send_text("t7-0", "x").await,
        Err(TmuxError::NoSuchPane)
    ));
    assert!(matches!(
        backend.send_text("t1-999", "x").await,
        Err(TmuxError::NoSuchPane)
    ));

    // A session created after start is followed.
    server.tmux_text(&["new-session", "-d", "-s", "later", "-x", "100", "-y", "30"]);
    let later_n = server.tmux_text(&["display", "-p", "-t", "later", "#{pane_id}"]);
    let later_id = format!("t1-{}", later_n.trim_start_matches('%'));
    assert!(
        wait_for(|| backend.list().iter().any(|p| p.id == later_id)).await,
        "second session not followed"
    );
    assert!(
        wait_for(|| prompt_shown(&backend, &later_id)).await,
        "no prompt"
    );
    let word2 = format!("later-{}", random_word());
    backend
        .send_text(&later_id, &format!("echo {word2}\r"))
        .await
        .expect("send");
    assert!(
        wait_for(|| screen_has_line(&backend, &later_id, &word2)).await,
        "no output from later session"
    );

    // Killing a server drops its mirrors; the other socket's stay.
    server.tmux_text(&["kill-server"]);
    assert!(
        wait_for(|| backend.list().iter().all(|p| p.id.starts_with("t0-"))).await,
        "mirrors kept after server exit"
    );
    assert!(!backend.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_existing_content_and_masks_wrapped_secret_in_narrow_pane() {
    let server = TmuxServer::start_on_path();
    let word = format!("before-{}", random_word());
    let prompt = wait_for(|| {
        !server
            .tmux_text(&["capture-pane", "-p", "-t", "t1"])
            .is_empty()
    })
    .await;
    assert!(prompt, "no prompt");
    server.tmux_text(&["send-keys", "-t", "t1", &format!("echo {word}"), "Enter"]);
    // Let the shell print it before the backend starts, so it must come from the seed capture.
    let printed = wait_for(|| {
        server
            .tmux_text(&["capture-pane", "-p", "-t", "t1"])
            .lines()
            .any(|l| l == word)
    })
    .await;
    assert!(printed);
    let backend = TmuxBackend::start(vec![server.socket_spec()], SALT, server.options());
    assert!(wait_for(|| !backend.list().is_empty()).await);
    let id = backend.list()[0].id.clone();
    assert!(id.starts_with("t0-"), "{id}");
    assert!(
        wait_for(|| screen_has_line(&backend, &id, &word)).await,
        "seed lacks old output"
    );
    // The cursor was seeded too: it sits after the prompt on the last non-empty line.
    let cursor = server.tmux_text(&["display", "-p", "-t", "t1", "#{cursor_x} #{cursor_y}"]);
    assert!(
        wait_for(|| {
            screen(&backend, &id, 0, &plain)
                .is_some_and(|s| format!("{} {}", s.cursor.0, s.cursor.1) == cursor)
        })
        .await,
        "cursor not seeded"
    );

    // Narrow the window; the mirror follows.
    server.tmux_text(&["resize-window", "-t", "t1", "-x", "20", "-y", "10"]);
    assert!(
        wait_for(|| screen(&backend, &id, 0, &plain).is_some_and(|s| s.cols == 20 && s.rows == 10))
            .await,
        "resize not mirrored"
    );
    let secret = "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7";
    let token = format!("ghp_{}", &secret[..36]);
    let done = format!("done-{}", &random_word()[..8]);
    backend
        .send_text(&id, &format!("clear; echo xx{token}; echo {done}\r"))
        .await
        .expect("send");
    assert!(
        wait_for(|| screen_has_line(&backend, &id, &done)).await,
        "output never shown"
    );
    let raw = screen(&backend, &id, 100, &plain).expect("snapshot");
    // The token really is wrapped across rows (so this checks logical-line masking).
    let raw_rows: Vec<&String> = raw.lines.iter().chain(&raw.scrollback).collect();
    assert!(raw_rows.iter().all(|l| !l.contains(&token)), "{raw_rows:?}");
    assert!(
        raw_rows.iter().any(|l| l.contains(&token[20..30])),
        "{raw_rows:?}"
    );
    let masked = screen(&backend, &id, 100, &mask_ghp).expect("snapshot");
    let text = masked
        .lines
        .iter()
        .chain(&masked.scrollback)
        .cloned()
        .collect::<Vec<_>>();
    for window in secret.as_bytes()[1..36].windows(6) {
        let part = std::str::from_utf8(window).expect("ascii");
        assert!(
            text.iter().all(|l| !l.contains(part)),
            "{part} leaked: {text:?}"
        );
    }
    assert!(text.iter().any(|l| l.contains("ghp_a•")), "{text:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_socket_honours_tmux_tmpdir_and_new_window_starts_a_server() {
    let server = TmuxServer::start_default();
    let backend = TmuxBackend::start(vec![TmuxSocket::Default], SALT, server.options());
    assert!(wait_for(|| backend.list().iter().any(|p| p.id.starts_with("t0-"))).await);

    // With no server on the socket, new_window starts a session; the backend finds it.
    server.tmux_text(&["kill-server"]);
    assert!(wait_for(|| backend.list().is_empty()).await);
    // The killed server may still be shutting down ("server exited unexpectedly"): retry until a
    // new one starts, within the deadline.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let id = loop {
        match backend.new_window(Some("fresh"), None).await {
            Ok(id) => break id,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "retrying new_window");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("new session: {e}"),
        }
    };
    assert!(
        wait_for(|| backend
            .list()
            .iter()
            .any(|p| p.id == id && p.name == "fresh"))
        .await,
        "{:?}",
        backend.list()
    );
    assert!(backend.allocated_bytes() > 0);
}

/// Lines of the mirror's scrollback (asking for more than any limit).
fn scrollback_of(backend: &TmuxBackend, id: &str) -> Option<Vec<String>> {
    screen(backend, id, 10_000, &plain).map(|s| s.scrollback)
}

/// Whether `lines` are consecutive numbers (what `seq` prints), so nothing was lost or mangled.
fn consecutive(lines: &[String]) -> bool {
    let nums: Vec<u64> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    nums.len() == lines.len() && nums.windows(2).all(|w| w[1] == w[0] + 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrollback_limit_rebuilds_mirrors_and_applies_to_new_ones() {
    let server = TmuxServer::start_on_path();
    let prompt = wait_for(|| {
        !server
            .tmux_text(&["capture-pane", "-p", "-t", "t1"])
            .is_empty()
    })
    .await;
    assert!(prompt, "no prompt");
    // Fill tmux's history (2,000 lines by default) before the backend starts, so the mirror's
    // scrollback comes from its seed.
    server.tmux_text(&["send-keys", "-t", "t1", "seq 1 3000", "Enter"]);
    let filled = wait_for(|| {
        server
            .tmux_text(&["display", "-p", "-t", "t1", "#{history_size}"])
            .parse::<usize>()
            .is_ok_and(|n| n >= 1900)
    })
    .await;
    assert!(filled, "tmux history never filled");

    let backend = TmuxBackend::start(vec![server.socket_spec()], SALT, server.options());
    assert_eq!(backend.scrollback_limit(), 2000);
    assert!(wait_for(|| !backend.list().is_empty()).await);
    let id = backend.list()[0].id.clone();
    assert!(
        wait_for(|| scrollback_of(&backend, &id).is_some_and(|s| s.len() >= 1500)).await,
        "seed lacks the history: {:?}",
        scrollback_of(&backend, &id).map(|s| s.len())
    );
    let full_bytes = backend.allocated_bytes();
    assert_eq!(
        backend.scrollback_line_bytes(),
        80 * std::mem::size_of::<vt100::Cell>()
    );

    // Lower the limit: the mirror is rebuilt with at most 100 lines, the newest ones.
    backend.set_scrollback_limit(100);
    assert_eq!(backend.scrollback_limit(), 100);
    assert!(
        wait_for(
            || scrollback_of(&backend, &id).is_some_and(|s| s.len() <= 100)
                && backend.allocated_bytes() < full_bytes
        )
        .await,
        "mirror kept its scrollback: {:?} lines, {} bytes",
        scrollback_of(&backend, &id).map(|s| s.len()),
        backend.allocated_bytes()
    );
    let kept = scrollback_of(&backend, &id).expect("mirror");
    assert_eq!(kept.len(), 100, "{kept:?}");
    assert!(consecutive(&kept), "{kept:?}");
    let visible = screen(&backend, &id, 0, &plain).expect("mirror").lines;
    let first_visible: u64 = visible[0].parse().expect("a number on the first row");
    assert_eq!(
        kept.last().map(String::as_str),
        Some(&*(first_visible - 1).to_string())
    );

    // Output after the change stays within the limit.
    let word = format!("after-{}", random_word());
    backend
        .send_text(&id, &format!("seq 1 500; echo {word}\r"))
        .await
        .expect("send");
    assert!(
        wait_for(|| screen_has_line(&backend, &id, &word)).await,
        "output never shown"
    );
    assert!(scrollback_of(&backend, &id).is_some_and(|s| s.len() <= 100));

    // A new mirror starts with the current limit.
    backend.set_scrollback_limit(0);
    assert!(
        wait_for(|| scrollback_of(&backend, &id).is_some_and(|s| s.is_empty())).await,
        "mirror not emptied"
    );
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        "seq 1 300; exec sh".to_owned(),
    ];
    let new_id = backend
        .new_window(Some("fresh"), Some(&argv))
        .await
        .expect("new window");
    assert!(
        wait_for(|| screen_has_line(&backend, &new_id, "300")).await,
        "new window output never shown"
    );
    assert_eq!(scrollback_of(&backend, &new_id), Some(Vec::new()));

    // Raising the limit (clamped to the configured 2,000) brings the history back from tmux.
    backend.set_scrollback_limit(usize::MAX);
    assert_eq!(backend.scrollback_limit(), 2000);
    assert!(
        wait_for(
            || scrollback_of(&backend, &new_id).is_some_and(|s| s.len() >= 270)
                && scrollback_of(&backend, &id).is_some_and(|s| s.len() > 100)
        )
        .await,
        "history not restored: {:?} / {:?}",
        scrollback_of(&backend, &new_id).map(|s| s.len()),
        scrollback_of(&backend, &id).map(|s| s.len())
    );
    assert!(backend.allocated_bytes() > full_bytes / 2);
}
