//! Process sessions and `exec_command` (SPEC §11, seed 003 §7.5–§8.13) with the real tool guard
//! of the built `collie` binary: ownership, the output ring and caps under endless output, time
//! limits, kill scope, and that no process outlives its session or the table.

mod support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use collie_actors::tools::exec::ExecCommandArgs;
use collie_actors::tools::sessions::{
    InteractWithProcessArgs, KillProcessArgs, Launcher, ReadProcessOutputArgs, SessionLimits,
    Sessions, StartProcessArgs,
};
use collie_actors::tools::ToolError;
use support::collie_bin;
use support::procs::{self, DEADLINE};

/// A table whose commands run under the real guard. Its `Drop` (the last handle) kills every
/// group a failing test left.
fn table(limits: SessionLimits) -> Sessions {
    Sessions::new(
        limits,
        Launcher {
            program: collie_bin(),
            args: vec![OsString::from("__tool-guard")],
            sandbox: Vec::new(),
        },
    )
}

fn here() -> PathBuf {
    std::env::temp_dir()
}

fn start(cmd: &str) -> StartProcessArgs {
    StartProcessArgs {
        command: cmd.into(),
        timeout_ms: Some(200),
    }
}

fn exec(cmd: &str, timeout_ms: Option<u64>) -> ExecCommandArgs {
    ExecCommandArgs {
        command: cmd.into(),
        timeout_ms,
        cwd: None,
    }
}

fn read(session: &str, offset: Option<u64>) -> ReadProcessOutputArgs {
    ReadProcessOutputArgs {
        session: session.into(),
        offset,
        length: None,
    }
}

fn session(id: &str) -> KillProcessArgs {
    KillProcessArgs { session: id.into() }
}

/// Polls `f` (async) every 20 ms until it returns `Some` or [`DEADLINE`] passes.
async fn until<T, F: std::future::Future<Output = Option<T>>>(
    mut f: impl FnMut() -> F,
) -> Option<T> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The one tool guard this test process runs now.
async fn the_guard() -> i32 {
    until(|| async {
        match procs::guards_of(procs::me()).as_slice() {
            [g] => Some(*g),
            _ => None,
        }
    })
    .await
    .expect("one tool guard runs")
}

/// Waits until group `g` has no live process.
async fn group_gone(g: i32) -> bool {
    until(|| async { procs::live_in_group(g).is_empty().then_some(()) })
        .await
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_runs_reads_by_cursor_and_takes_input() {
    let t = table(SessionLimits::default());
    let started = t
        .start_process("phone", here(), start("echo ready; cat"))
        .await
        .expect("start");
    let id = started.answer.session.clone();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    let guard = the_guard().await;
    let json = serde_json::to_string(&started.answer).expect("json");
    assert!(
        !json.contains("pid") && !json.contains(&guard.to_string()),
        "{json}"
    );
    assert_eq!(started.meta.get("session"), Some(&serde_json::json!(id)));
    assert_eq!(
        started.meta.get("command"),
        Some(&serde_json::json!("echo"))
    );
    assert!(!serde_json::to_string(&started.meta)
        .expect("json")
        .contains("cat"));

    let done = t
        .interact(
            "phone",
            InteractWithProcessArgs {
                session: id.clone(),
                input: "hello".into(),
                timeout_ms: Some(5000),
            },
        )
        .await
        .expect("interact");
    assert_eq!(done.answer.output, "hello\n");
    assert!(done.answer.running);
    assert_eq!(done.meta.get("input_bytes"), Some(&serde_json::json!(6)));
    assert!(!serde_json::to_string(&done.meta)
        .expect("json")
        .contains("hello"));

    let all = t.read_output("phone", read(&id, Some(0))).expect("read");
    assert_eq!(all.answer.output, "ready\nhello\n");
    assert_eq!((all.answer.dropped, all.answer.next_offset), (0, 12));
    let tail = t.read_output("phone", read(&id, Some(6))).expect("read");
    assert_eq!(tail.answer.output, "hello\n");
    let none = t.read_output("phone", read(&id, None)).expect("read");
    assert_eq!(
        none.answer.output, "",
        "the default cursor follows the last read"
    );
    assert!(matches!(
        t.read_output("phone", read(&id, Some(13))),
        Err(ToolError::BadArgument(_))
    ));
    assert!(matches!(
        t.interact(
            "phone",
            InteractWithProcessArgs {
                session: id.clone(),
                input: "x".repeat(t.limits().max_input_bytes + 1),
                timeout_ms: None,
            },
        )
        .await,
        Err(ToolError::BadArgument(_))
    ));

    let listed = t.list("phone").answer.sessions;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].command, "echo ready; cat");
    t.shutdown().await;
    assert!(group_gone(guard).await);
    assert!(t.list("phone").answer.sessions.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_owners_session_is_answered_like_a_missing_one() {
    let t = table(SessionLimits::default());
    let id = t
        .start_process("alice", here(), start("sleep 1000"))
        .await
        .expect("start")
        .answer
        .session;
    let guard = the_guard().await;
    let missing = "0".repeat(32);
    for probe in [&id, &missing] {
        assert_eq!(
            t.read_output("mallory", read(probe, Some(0))).err(),
            Some(ToolError::NoSuchSession)
        );
        let typed = t
            .interact(
                "mallory",
                InteractWithProcessArgs {
                    session: probe.clone(),
                    input: "rm -rf /".into(),
                    timeout_ms: None,
                },
            )
            .await;
        assert_eq!(typed.err(), Some(ToolError::NoSuchSession));
        assert_eq!(
            t.kill("mallory", session(probe), true).await.err(),
            Some(ToolError::NoSuchSession)
        );
    }
    assert!(t.list("mallory").answer.sessions.is_empty());
    assert!(matches!(
        t.read_output("alice", read("12345", None)),
        Err(ToolError::BadArgument(_))
    ));
    // Alice's process did not notice any of it.
    let sleeps = procs::live_in_group(guard)
        .iter()
        .filter(|p| p.comm == "sleep")
        .count();
    assert_eq!(sleeps, 1);
    assert_eq!(t.list("alice").answer.sessions.len(), 1);
    t.shutdown().await;
    assert!(group_gone(guard).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_before_the_audit_line_refuses_what_the_tool_refuses() {
    // The application runs `Sessions::check` before it writes a session tool's line (SPEC §7):
    // it must refuse exactly where the tool would, before the tool touches anything.
    use collie_actors::tools::ToolName::{ForceTerminate, InteractWithProcess, KillProcess};
    let t = table(SessionLimits::default());
    let live = t
        .start_process("alice", here(), start("cat"))
        .await
        .expect("start")
        .answer
        .session;
    let ended = t
        .start_process("alice", here(), start("true"))
        .await
        .expect("start")
        .answer
        .session;
    let exited = until(|| async {
        let out = t.read_output("alice", read(&ended, Some(0))).ok()?;
        (!out.answer.running).then_some(())
    })
    .await;
    assert!(exited.is_some(), "`true` never ended");
    let input = |s: &str| serde_json::json!({"session": s, "input": "x"});
    let name = |s: &str| serde_json::json!({ "session": s });
    let missing = "0".repeat(32);
    for tool in [KillProcess, ForceTerminate] {
        assert_eq!(t.check("alice", tool, &name(&live)), Ok(()));
        assert_eq!(t.check("alice", tool, &name(&ended)), Ok(()), "{tool}");
        for (owner, s) in [("mallory", live.as_str()), ("alice", missing.as_str())] {
            assert_eq!(
                t.check(owner, tool, &name(s)),
                Err(ToolError::NoSuchSession)
            );
        }
        assert!(matches!(
            t.check("alice", tool, &name("12345")),
            Err(ToolError::BadArgument(_))
        ));
    }
    assert_eq!(t.check("alice", InteractWithProcess, &input(&live)), Ok(()));
    assert_eq!(
        t.check("mallory", InteractWithProcess, &input(&live)),
        Err(ToolError::NoSuchSession)
    );
    let refused = t.check("alice", InteractWithProcess, &input(&ended));
    assert!(
        matches!(refused, Err(ToolError::BadArgument(_))),
        "{refused:?}"
    );
    let tool_says = t
        .interact(
            "alice",
            InteractWithProcessArgs {
                session: ended.clone(),
                input: "x".into(),
                timeout_ms: None,
            },
        )
        .await
        .err();
    assert_eq!(refused.err(), tool_says);
    let mut extra = input(&live);
    extra["risk"] = "high".into();
    assert!(matches!(
        t.check("alice", InteractWithProcess, &extra),
        Err(ToolError::BadArgument(_))
    ));
    // Nothing was checked into being: the live session is still there and untouched.
    assert_eq!(t.list("alice").answer.sessions.len(), 2);
    t.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_output_stays_within_the_rings_and_caps_refuse_more() {
    let ring = 64 * 1024;
    let t = table(SessionLimits {
        ring_bytes: ring,
        max_sessions: 3,
        max_sessions_per_owner: 3,
        buffer_cap: 3 * ring,
        ..SessionLimits::default()
    });
    let mut ids = Vec::new();
    for _ in 0..3 {
        let s = t
            .start_process("phone", here(), start("yes"))
            .await
            .expect("start");
        ids.push(s.answer.session);
    }
    // Waits until each `yes` has printed many rings' worth.
    let far = until(|| async {
        let l = t.list("phone").answer.sessions;
        l.iter()
            .all(|s| s.output_end > 20 * ring as u64)
            .then_some(())
    })
    .await;
    assert!(
        far.is_some(),
        "the sessions did not print: {:?}",
        t.list("phone").answer
    );
    assert_eq!(
        t.buffered_bytes(),
        3 * ring,
        "every ring full, none past its cap"
    );
    let old = t
        .read_output("phone", read(&ids[0], Some(0)))
        .expect("read");
    assert!(old.answer.dropped > 0);
    assert_eq!(old.answer.offset, old.answer.dropped);
    assert!(old.answer.output.starts_with("y\n") || old.answer.output.starts_with('\n'));
    assert_eq!(
        t.start_process("phone", here(), start("yes")).await.err(),
        Some(ToolError::ResourceLimit("sessions"))
    );
    assert_eq!(
        t.start_process("other", here(), start("yes")).await.err(),
        Some(ToolError::ResourceLimit("sessions"))
    );
    assert_eq!(
        t.exec("phone", here(), exec("true", None)).await.err(),
        Some(ToolError::ResourceLimit("session buffers")),
        "an exec's output caps count against the same budget"
    );
    // Still capped a while later.
    let later = t.list("phone").answer.sessions[0].output_end;
    until(|| async {
        (t.list("phone").answer.sessions[0].output_end > later + 4 * ring as u64).then_some(())
    })
    .await
    .expect("still printing");
    assert_eq!(t.buffered_bytes(), 3 * ring);
    t.shutdown().await;
    assert_eq!(t.buffered_bytes(), 0);
    assert!(procs::guards_of(procs::me()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_owner_cap_and_a_bad_folder_leave_no_slot_taken() {
    let t = table(SessionLimits {
        max_sessions: 4,
        max_sessions_per_owner: 1,
        ..SessionLimits::default()
    });
    assert!(matches!(
        t.start_process("phone", PathBuf::from("/nonexistent/folder"), start("true"))
            .await,
        Err(ToolError::BadArgument(_))
    ));
    assert!(matches!(
        t.start_process("phone", here(), start("  ")).await,
        Err(ToolError::BadArgument(_))
    ));
    t.start_process("phone", here(), start("sleep 1000"))
        .await
        .expect("the refused starts took no slot");
    assert_eq!(
        t.start_process("phone", here(), start("sleep 1000"))
            .await
            .err(),
        Some(ToolError::ResourceLimit("sessions per device"))
    );
    t.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_are_killed_and_forgotten() {
    let t = table(SessionLimits {
        idle_timeout: Duration::from_secs(2),
        ..SessionLimits::default()
    });
    t.start_process("phone", here(), start("sleep 1000 & sleep 1000"))
        .await
        .expect("start");
    let guard = the_guard().await;
    assert!(
        group_gone(guard).await,
        "the idle session's group still runs"
    );
    let forgotten =
        until(|| async { t.list("phone").answer.sessions.is_empty().then_some(()) }).await;
    assert!(forgotten.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_still_ends_at_its_lifetime() {
    let t = table(SessionLimits {
        max_lifetime: Duration::from_secs(2),
        ..SessionLimits::default()
    });
    let id = t
        .start_process("phone", here(), start("sleep 1000"))
        .await
        .expect("start")
        .answer
        .session;
    let guard = the_guard().await;
    // Reads keep it from being idle; the lifetime ends it anyway.
    let ended = until(|| async {
        match t.read_output("phone", read(&id, None)) {
            Err(ToolError::NoSuchSession) => Some(()),
            _ => None,
        }
    })
    .await;
    assert!(ended.is_some());
    assert!(group_gone(guard).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_ends_only_the_sessions_group_with_its_grandchild() {
    let t = table(SessionLimits::default());
    // A bystander this test started itself, outside every session.
    let mut bystander = std::process::Command::new("sleep")
        .arg("1000")
        .spawn()
        .expect("start a bystander");
    let id = t
        .start_process("phone", here(), start("sleep 1000 & sleep 1000"))
        .await
        .expect("start")
        .answer
        .session;
    let guard = the_guard().await;
    until(|| async {
        (procs::live_in_group(guard)
            .iter()
            .filter(|p| p.comm == "sleep")
            .count()
            == 2)
            .then_some(())
    })
    .await
    .expect("both sleeps run");
    let killed = t.kill("phone", session(&id), false).await.expect("kill");
    assert_eq!(killed.answer.signal.as_deref(), Some("SIGTERM"));
    assert!(killed.answer.exited);
    assert_eq!(
        killed.meta.get("signal"),
        Some(&serde_json::json!("SIGTERM"))
    );
    assert!(group_gone(guard).await, "{:?}", procs::live_in_group(guard));
    assert_eq!(
        t.kill("phone", session(&id), true).await.err(),
        Some(ToolError::NoSuchSession),
        "a killed session is forgotten"
    );
    assert!(
        bystander.try_wait().expect("poll").is_none(),
        "the bystander lives"
    );

    // A session that ignores SIGTERM: force_terminate.
    let id = t
        .start_process("phone", here(), start("trap '' TERM; sleep 1000"))
        .await
        .expect("start")
        .answer
        .session;
    let guard = the_guard().await;
    let killed = t.kill("phone", session(&id), true).await.expect("force");
    assert_eq!(killed.answer.signal.as_deref(), Some("SIGKILL"));
    assert!(killed.answer.exited);
    assert!(group_gone(guard).await);

    // A session that ended by itself is not signalled again.
    let id = t
        .start_process("phone", here(), start("exit 3"))
        .await
        .expect("start")
        .answer
        .session;
    let ended = until(|| async {
        let r = t.read_output("phone", read(&id, None)).expect("read");
        (!r.answer.running).then_some(r.answer.exit_code)
    })
    .await;
    assert_eq!(ended, Some(Some(3)));
    let killed = t.kill("phone", session(&id), false).await.expect("kill");
    assert_eq!(killed.answer.signal, None);
    assert!(killed.answer.exited);

    assert!(
        bystander.try_wait().expect("poll").is_none(),
        "the bystander lives"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
    t.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_kills_the_groups() {
    let t = table(SessionLimits::default());
    t.start_process("phone", here(), start("sleep 1000 & sleep 1000"))
        .await
        .expect("start");
    let guard = the_guard().await;
    let copy = t.clone();
    drop(t);
    assert!(
        !procs::live_in_group(guard).is_empty(),
        "a clone still holds the table"
    );
    drop(copy);
    assert!(group_gone(guard).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_answers_exit_code_and_both_outputs() {
    let t = table(SessionLimits::default());
    let done = t
        .exec(
            "phone",
            here(),
            exec("echo out; echo err >&2; TOKEN=x exit 3", None),
        )
        .await
        .expect("exec");
    let a = &done.answer;
    assert_eq!(a.exit_code, Some(3));
    assert_eq!((a.stdout.as_str(), a.stderr.as_str()), ("out\n", "err\n"));
    assert!(!a.timed_out && !a.stdout_truncated && !a.stderr_truncated);
    assert_eq!(done.meta.get("command"), Some(&serde_json::json!("echo")));
    assert_eq!(done.meta.get("exit_code"), Some(&serde_json::json!(3)));
    let meta = serde_json::to_string(&done.meta).expect("json");
    assert!(
        !meta.contains("out\\n") && !meta.contains("err\\n"),
        "{meta}"
    );

    // stdin is /dev/null: `cat` ends at once.
    let done = t
        .exec("phone", here(), exec("cat", None))
        .await
        .expect("exec");
    assert_eq!(done.answer.exit_code, Some(0));

    // A background process left behind does not hold the answer until the time limit.
    let done = t
        .exec(
            "phone",
            here(),
            exec("sleep 1234.5 & echo started", Some(60_000)),
        )
        .await
        .expect("exec");
    assert!(!done.answer.timed_out);
    assert_eq!(done.answer.stdout, "started\n");
    assert!(procs::guards_of(procs::me()).is_empty());
    let left = procs::all()
        .into_iter()
        .filter(|p| p.state != 'Z' && procs::cmdline(p.pid).trim() == "sleep 1234.5")
        .count();
    assert_eq!(left, 0, "the background sleep outlived its command");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_output_is_capped_and_the_time_limit_kills_the_group() {
    let t = table(SessionLimits {
        exec_output_cap: 1000,
        ..SessionLimits::default()
    });
    let done = t
        .exec(
            "phone",
            here(),
            exec("yes | head -c 50000; yes e | head -c 3 >&2", None),
        )
        .await
        .expect("exec");
    assert_eq!(done.answer.stdout.len(), 1000);
    assert!(done.answer.stdout_truncated);
    assert_eq!(
        (done.answer.stderr.as_str(), done.answer.stderr_truncated),
        ("e\ne", false)
    );

    let task = {
        let t = t.clone();
        tokio::spawn(async move {
            t.exec("phone", here(), exec("sleep 1000 & sleep 1000", Some(3000)))
                .await
        })
    };
    let guard = the_guard().await;
    let done = task.await.expect("join").expect("exec");
    assert!(done.answer.timed_out);
    assert_eq!(done.answer.signal, Some(9));
    assert!(group_gone(guard).await);
    assert!(matches!(
        t.exec("phone", here(), exec("true", Some(0))).await,
        Err(ToolError::BadArgument(_))
    ));
    assert!(matches!(
        t.exec("phone", here(), exec("true", Some(24 * 3600 * 1000)))
            .await,
        Err(ToolError::BadArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_exec_past_the_concurrency_limit_is_refused_and_a_dropped_call_kills_its_command() {
    let t = table(SessionLimits {
        exec_concurrency_per_owner: 2,
        ..SessionLimits::default()
    });
    let running: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            tokio::spawn(async move { t.exec("phone", here(), exec("sleep 1000", None)).await })
        })
        .collect();
    let guards = until(|| async {
        let g = procs::guards_of(procs::me());
        (g.len() == 2).then_some(g)
    })
    .await
    .expect("two execs run");
    assert_eq!(
        t.exec("phone", here(), exec("sleep 1000", None))
            .await
            .err(),
        Some(ToolError::ResourceLimit("exec concurrency"))
    );
    let other = t
        .exec("laptop", here(), exec("echo mine", None))
        .await
        .expect("the limit is per owner");
    assert_eq!(other.answer.stdout, "mine\n");
    // The callers go away: their commands must not outlive them.
    for task in running {
        task.abort();
        let _ = task.await;
    }
    for g in guards {
        assert!(group_gone(g).await);
    }
    t.exec("phone", here(), exec("true", None))
        .await
        .expect("the slots came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_creation_rate_is_limited_per_owner() {
    let t = table(SessionLimits {
        creation_burst: 3,
        creation_refill: Duration::from_secs(3600),
        ..SessionLimits::default()
    });
    for _ in 0..2 {
        t.exec("phone", here(), exec("true", None))
            .await
            .expect("exec");
    }
    t.start_process("phone", here(), start("true"))
        .await
        .expect("sessions draw on the same allowance");
    assert_eq!(
        t.exec("phone", here(), exec("true", None)).await.err(),
        Some(ToolError::ResourceLimit("process creation rate"))
    );
    assert_eq!(
        t.start_process("phone", here(), start("true")).await.err(),
        Some(ToolError::ResourceLimit("process creation rate"))
    );
    t.exec("laptop", here(), exec("true", None))
        .await
        .expect("another owner has its own");
    t.shutdown().await;
}
