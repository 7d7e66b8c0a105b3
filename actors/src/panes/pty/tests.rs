//! Tests of hosted panes against real processes under real ptys. Every pane is dropped (and so
//! killed) at the end of its test, on pass or fail; commands run in temp directories.

use std::time::{Duration, Instant};

use super::*;

const DEADLINE: Duration = Duration::from_secs(15);

fn no_mask(line: &str) -> String {
    line.to_owned()
}

fn opts(command: &[&str], dir: &tempfile::TempDir) -> SpawnOptions {
    SpawnOptions {
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        cwd: Some(dir.path().to_path_buf()),
        ..SpawnOptions::default()
    }
}

fn shell(dir: &tempfile::TempDir) -> HostedPane {
    HostedPane::spawn(opts(&["/bin/sh"], dir)).unwrap()
}

/// Polls `cond` every few milliseconds until it holds or the deadline passes.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Like [`wait_until`], showing the pane's screen when the deadline passes.
fn wait_for_screen(pane: &HostedPane, what: &str, mut cond: impl FnMut(&[String]) -> bool) {
    let start = Instant::now();
    loop {
        let lines = pane.snapshot(0, &no_mask).lines;
        if cond(&lines) {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}; screen:\n{}\nraw: {:?}",
            lines.join("\n"),
            String::from_utf8_lossy(&pane.raw_output())
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn screen_text(pane: &HostedPane) -> String {
    pane.snapshot(100, &no_mask).lines.join("\n")
}

/// Whether `line` shows `output` printed by a command, not the typed command line. Input typed
/// before the shell's prompt appears is echoed first, so the output may follow the prompt.
fn is_output_line(line: &str, output: &str) -> bool {
    let line = line.trim_end();
    line.ends_with(output) && !line.contains("echo") && !line.contains("stty")
}

/// Whether `pid` no longer runs (gone, or a zombie nobody has reaped yet).
fn process_gone(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X"),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        kill(Pid::from_raw(pid as i32), None).is_err()
    }
}

/// The process group of `pid`, from `/proc/<pid>/stat` (fields after the name: state, ppid, pgrp).
#[cfg(target_os = "linux")]
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
use nix::{sys::signal::kill, unistd::Pid};

fn marker() -> String {
    format!("hi-{}", rand::random::<u32>())
}

#[test]
fn typed_command_output_reaches_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    assert!(pane.is_alive());
    let mark = marker();
    pane.write_text(&format!("echo {mark}")).unwrap();
    pane.write_key(NamedKey::Enter).unwrap();
    wait_for_screen(&pane, "the echo output", |lines| {
        lines.iter().any(|l| is_output_line(l, &mark))
    });
    let snap = pane.snapshot(10, &no_mask);
    assert_eq!((snap.rows, snap.cols), (24, 80));
    assert!(snap.seq > 0);
    assert_eq!(snap.lines.len(), 24);
    let raw = String::from_utf8_lossy(&pane.raw_output()).into_owned();
    assert!(raw.contains(&mark));
}

#[test]
fn write_input_types_text_then_keys() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    let mark = marker();
    // Text, then a Backspace that removes its last character, then Enter.
    pane.write_input(
        &format!("echo {mark}X"),
        &[NamedKey::Backspace, NamedKey::Enter],
    )
    .unwrap();
    wait_for_screen(&pane, "the echo output", |lines| {
        lines.iter().any(|l| is_output_line(l, &mark))
    });
}

#[test]
fn mask_is_applied_to_lines() {
    let dir = tempfile::tempdir().unwrap();
    let pane = HostedPane::spawn(opts(
        &["sh", "-c", "echo secret-value; exec sleep 30"],
        &dir,
    ))
    .unwrap();
    wait_until("output", || screen_text(&pane).contains("secret-value"));
    let masked = pane.snapshot(0, &|l: &str| l.replace("secret-value", "****"));
    assert!(masked.lines.iter().any(|l| l == "****"));
    assert!(!masked.lines.concat().contains("secret"));
}

#[test]
fn collie_pane_is_in_the_environment_and_cwd_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(
        &[
            "sh",
            "-c",
            "echo \"pane=$COLLIE_PANE term=$TERM\"; pwd; exec sleep 30",
        ],
        &dir,
    );
    o.env.push(("COLLIE_PANE".into(), "local/p7#ab3d".into()));
    let pane = HostedPane::spawn(o).unwrap();
    wait_until("the environment line", || {
        screen_text(&pane).contains("pane=local/p7#ab3d term=xterm-256color")
    });
    let dir_name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    wait_until("the working directory", || {
        screen_text(&pane).contains(&dir_name)
    });
}

#[test]
fn subscribers_see_new_output() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut rx = pane.subscribe();
    let before = pane.seq();
    let typed_at = OffsetDateTime::now_utc();
    rx.mark_unchanged();
    pane.write_text("echo x\r").unwrap();
    rt.block_on(async {
        tokio::time::timeout(DEADLINE, rx.changed())
            .await
            .expect("no change notified")
            .unwrap();
    });
    assert!(*rx.borrow() > before);
    // Activity is kept in whole milliseconds.
    let activity = pane.last_activity();
    assert!(activity + Duration::from_millis(1) >= typed_at);
    assert!(activity <= OffsetDateTime::now_utc());
}

#[test]
fn ring_keeps_only_the_last_bytes_after_a_flood() {
    let dir = tempfile::tempdir().unwrap();
    let ring_bytes = 64 * 1024;
    let mut o = opts(
        &[
            "sh",
            "-c",
            "head -c 3000000 /dev/zero | tr '\\0' a; printf 'END-OF-FLOOD'; exec sleep 30",
        ],
        &dir,
    );
    o.ring_bytes = ring_bytes;
    o.scrollback = 100;
    let pane = HostedPane::spawn(o).unwrap();
    wait_until("the end of the flood", || {
        pane.raw_output().ends_with(b"END-OF-FLOOD")
    });
    let raw = pane.raw_output();
    assert_eq!(raw.len(), ring_bytes);
    assert!(raw[..ring_bytes - 12].iter().all(|&b| b == b'a'));
    let allocated = pane.allocated_bytes();
    let screen_bound = (24 + 100) * 80 * std::mem::size_of::<vt100::Cell>();
    assert!(
        allocated <= ring_bytes + screen_bound,
        "allocated {allocated} > ring {ring_bytes} + screen {screen_bound}"
    );
    assert!(allocated >= ring_bytes);
}

#[test]
fn echo_off_is_asking_password() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    let mark = marker();
    // Wait for the shell to be ready and idle before reading the terminal mode.
    pane.write_text(&format!("echo {mark}\r")).unwrap();
    wait_for_screen(&pane, "the shell", |lines| {
        lines.iter().any(|l| is_output_line(l, &mark))
    });
    // A shell with line editing may itself turn echo off while it reads; /bin/sh reads lines
    // canonically, so at its prompt echo is on.
    assert!(!pane.asking_password());
    pane.write_text("stty -echo; printf 'code: '; read x\r")
        .unwrap();
    wait_until("asking_password", || pane.asking_password());
    pane.write_text("abc\r").unwrap();
}

#[test]
fn full_screen_raw_mode_is_not_asking_password() {
    let dir = tempfile::tempdir().unwrap();
    let pane = HostedPane::spawn(opts(
        &["sh", "-c", "stty raw -echo; echo RAW-READY; exec sleep 30"],
        &dir,
    ))
    .unwrap();
    wait_until("raw mode", || screen_text(&pane).contains("RAW-READY"));
    assert!(!pane.asking_password());
}

#[test]
fn password_prompt_on_screen_is_asking_password() {
    let dir = tempfile::tempdir().unwrap();
    let pane = HostedPane::spawn(opts(
        &["sh", "-c", "printf 'Password: '; exec sleep 30"],
        &dir,
    ))
    .unwrap();
    wait_until("the prompt", || pane.asking_password());
}

#[test]
fn kill_ends_the_child_and_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    let pid = pane.pid().unwrap();
    // A background job in a process group of its own (job control on), so killing the child's
    // group alone would miss it.
    pane.write_text("set -m; sleep 1000 & echo JOB=$!\r")
        .unwrap();
    let mut job = None;
    wait_for_screen(&pane, "the job pid", |lines| {
        job = lines
            .iter()
            .filter(|l| !l.contains("echo"))
            .find_map(|l| l.split("JOB=").nth(1)?.trim().parse::<u32>().ok());
        job.is_some()
    });
    let job = job.unwrap();
    assert!(!process_gone(job));
    #[cfg(target_os = "linux")]
    assert_ne!(
        process_group(job),
        Some(pid),
        "the job shares the child's group"
    );
    pane.kill();
    assert!(!pane.is_alive());
    assert!(process_gone(pid), "child {pid} survived kill");
    wait_until("the job to die", || process_gone(job));
    wait_until("the pty to close", || pane.output_closed());
    assert!(matches!(pane.write_text("x"), Err(PtyError::NotAlive)));
    // Killing twice is harmless.
    pane.kill();
}

#[test]
fn drop_kills() {
    let dir = tempfile::tempdir().unwrap();
    let pane = HostedPane::spawn(opts(&["sleep", "1000"], &dir)).unwrap();
    let pid = pane.pid().unwrap();
    assert!(!process_gone(pid));
    drop(pane);
    assert!(process_gone(pid), "child {pid} survived drop");
}

#[test]
fn exited_child_stays_listed_as_not_alive() {
    let dir = tempfile::tempdir().unwrap();
    let pane = HostedPane::spawn(opts(&["sh", "-c", "echo bye"], &dir)).unwrap();
    wait_until("the child to exit", || !pane.is_alive());
    wait_until("the pty to close", || pane.output_closed());
    assert!(screen_text(&pane).contains("bye"));
    assert!(matches!(
        pane.write_key(NamedKey::Enter),
        Err(PtyError::NotAlive)
    ));
}

#[test]
fn resize_changes_the_terminal_size() {
    let dir = tempfile::tempdir().unwrap();
    let pane = shell(&dir);
    pane.resize(30, 100).unwrap();
    let snap = pane.snapshot(0, &no_mask);
    assert_eq!((snap.rows, snap.cols), (30, 100));
    pane.write_text("stty size\r").unwrap();
    wait_for_screen(&pane, "stty to report the new size", |lines| {
        lines.iter().any(|l| is_output_line(l, "30 100"))
    });
}

#[test]
fn bad_commands_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = HostedPane::spawn(opts(&[], &dir)).unwrap_err();
    assert_eq!(err.to_string(), "empty command");
    let missing = dir.path().join("no-such-program");
    let err = HostedPane::spawn(opts(&[missing.to_str().unwrap()], &dir)).unwrap_err();
    assert!(matches!(err, PtyError::Spawn { .. }), "{err}");
}

#[test]
fn input_backlog_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // `sleep` never reads its input, so the pty's input buffer fills and the queue backs up.
    let pane = HostedPane::spawn(opts(&["sleep", "1000"], &dir)).unwrap();
    let chunk = "x".repeat(crate::panes::keys::MAX_TEXT_BYTES);
    let mut refused = false;
    for _ in 0..200 {
        match pane.write_text(&chunk) {
            Ok(()) => {}
            Err(PtyError::InputBacklog) => {
                refused = true;
                break;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(refused, "12 MiB of unread input was all accepted");
}

#[test]
fn hosted_pane_can_be_shared_across_tasks() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<HostedPane>();
}
