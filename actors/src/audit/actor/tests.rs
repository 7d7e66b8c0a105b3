//! The audit actor under a paused clock: its timer, not a caller, brings kept lines to the log.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use ractor::Actor;

use super::*;

fn args(dir: &std::path::Path) -> AuditArgs {
    AuditArgs {
        path: dir.join("audit.log"),
        store: Store::open(&dir.join("db")).expect("store"),
        mode: ContentMode::default(),
        mask: Arc::new(|s: &str| s.to_owned()),
        machine: MachineName::new("web-1"),
        open_breaks: Arc::new(AtomicU64::new(0)),
        head: Arc::new(watch::channel(None).0),
    }
}

async fn started(
    dir: &std::path::Path,
) -> (
    ractor::ActorRef<AuditMsg>,
    ractor::concurrency::JoinHandle<()>,
) {
    Actor::spawn(None, AuditActor, args(dir))
        .await
        .expect("spawn")
}

/// Sends `n` appends without waiting, so all of them are in the mailbox before the first commit.
fn append_all(
    actor: &ractor::ActorRef<AuditMsg>,
    n: usize,
) -> Vec<ractor::concurrency::OneshotReceiver<Result<ChainTail, AuditError>>> {
    (0..n)
        .map(|n| {
            let (tx, rx) = ractor::concurrency::oneshot();
            actor
                .cast(AuditMsg::Append(typed(n), tx.into()))
                .expect("cast");
            rx
        })
        .collect()
}

fn revoked() -> AuditRecord {
    AuditRecord::new(AuditEventKind::DeviceRevoked, "web-1").with_detail("label", "phone")
}

fn logged(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("audit.log")).unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_kept_line_reaches_the_log_at_the_next_tick_once_the_log_is_writable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (actor, handle) = started(dir.path()).await;
    // A directory in the log's place: the revocation is kept in the store, not lost.
    std::fs::create_dir(dir.path().join("audit.log")).expect("mkdir");
    let kept = ractor::call!(actor, |r| AuditMsg::AppendOrKeep(revoked(), r))
        .expect("answers")
        .expect("kept");
    assert_eq!(kept, Kept::Kept);

    // The log is writable again, but no tick has come: the line still waits.
    std::fs::remove_dir(dir.path().join("audit.log")).expect("rmdir");
    let status = ractor::call!(actor, AuditMsg::Status).expect("status");
    assert_eq!(status.kept, 1);
    assert!(!logged(dir.path()).contains("device.revoked"));

    // One tick later it is in the log and gone from the store.
    tokio::time::advance(TICK).await;
    // Let the timer's task put the tick in the mailbox before the next question.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let status = ractor::call!(actor, AuditMsg::Status).expect("status");
    assert_eq!(status.kept, 0);
    assert!(logged(dir.path()).contains("device.revoked"));

    actor.stop(None);
    handle.await.expect("stopped");
}

#[tokio::test(start_paused = true)]
async fn refusals_counted_in_a_window_are_written_when_the_actor_stops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (actor, handle) = started(dir.path()).await;
    let denial = || {
        Box::new(Denial {
            source: "10.0.0.9".into(),
            reason: "device not paired".into(),
            record: AuditRecord::new(AuditEventKind::SecurityDenied, "web-1"),
        })
    };
    for _ in 0..5 {
        actor.cast(AuditMsg::Denied(denial())).expect("cast");
    }
    // Ticks pass inside the minute: the first refusal's line only.
    tokio::time::advance(TICK * 3).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let _ = ractor::call!(actor, AuditMsg::Status).expect("status");
    assert_eq!(logged(dir.path()).matches("security.denied").count(), 1);
    // A stop writes what the window counted since.
    actor.stop(None);
    handle.await.expect("stopped");
    let log = logged(dir.path());
    assert_eq!(log.matches("security.denied").count(), 2, "{log}");
    assert!(log.contains("\"count\":4"), "{log}");
}

fn typed(n: usize) -> AuditRecord {
    AuditRecord::new(AuditEventKind::PaneInput, "web-1").with_detail("n", n as u64)
}

#[tokio::test(start_paused = true)]
async fn appends_arriving_together_are_committed_together_in_their_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (actor, handle) = started(dir.path()).await;
    // Twenty writers whose appends are all in the mailbox before the first commit runs, and a
    // status question behind them: it is answered only after their batch is on disk.
    let answers = append_all(&actor, 20);
    let status = ractor::call!(actor, AuditMsg::Status).expect("status");
    let mut seqs = Vec::new();
    for rx in answers {
        seqs.push(rx.await.expect("answered").expect("appended").seq);
    }
    assert_eq!(
        seqs,
        (1..=20).collect::<Vec<u64>>(),
        "one seq each, in order"
    );
    assert_eq!(status.anchor.last.as_ref().map(|t| t.seq), Some(20));

    // The file holds them in the order they were sent, and the chain verifies against what the
    // store vouches for.
    let log = logged(dir.path());
    let order: Vec<u64> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["detail"]["n"]
                .as_u64()
                .expect("n")
        })
        .collect();
    assert_eq!(order, (0..20).collect::<Vec<u64>>());
    let report = crate::audit::verify(&dir.path().join("audit.log"), Some(&status.anchor), None)
        .expect("verify");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.records, 20);

    actor.stop(None);
    handle.await.expect("stopped");
}

#[tokio::test(start_paused = true)]
async fn a_batch_the_log_refuses_is_refused_to_every_writer_and_the_next_one_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (actor, handle) = started(dir.path()).await;
    std::fs::create_dir(dir.path().join("audit.log")).expect("mkdir");
    let answers = append_all(&actor, 5);
    for rx in answers {
        let refused = rx.await.expect("answered");
        assert!(refused.is_err(), "{refused:?}");
    }
    std::fs::remove_dir(dir.path().join("audit.log")).expect("rmdir");
    let tail = ractor::call!(actor, |r| AuditMsg::Append(typed(5), r))
        .expect("answers")
        .expect("appended");
    assert_eq!(tail.seq, 1, "nothing of the refused batch was committed");
    assert_eq!(logged(dir.path()).lines().count(), 1);

    actor.stop(None);
    handle.await.expect("stopped");
}

#[tokio::test]
async fn the_head_is_published_after_each_commit_and_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = args(dir.path());
    let head = a.head.subscribe();
    let (actor, handle) = Actor::spawn(None, AuditActor, a).await.expect("spawn");
    assert_eq!(*head.borrow(), None, "an empty log has no head");
    let mut last = None;
    for rx in append_all(&actor, 3) {
        last = Some(rx.await.expect("answer").expect("appended"));
    }
    let _ = ractor::call!(actor, AuditMsg::Status).expect("status");
    assert_eq!(*head.borrow(), last);
    assert_eq!(last.as_ref().map(|t| t.seq), Some(3));
    actor.stop(None);
    handle.await.expect("stopped");

    // A restarted actor publishes where the log stands before any line.
    let a = args(dir.path());
    let head = a.head.subscribe();
    let (actor, handle) = Actor::spawn(None, AuditActor, a).await.expect("spawn");
    assert_eq!(*head.borrow(), last);
    actor.stop(None);
    handle.await.expect("stopped");
}
