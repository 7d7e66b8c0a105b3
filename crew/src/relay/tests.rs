use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::wire::{decode, encode};

fn snapshot_kind() -> RelayKind {
    RelayKind::Snapshot {
        pane: "t0-3".to_owned(),
        scrollback: Some(100),
    }
}

fn subscribe_kind() -> RelayKind {
    RelayKind::Subscribe {
        pane: "p1".to_owned(),
        last_seq: None,
    }
}

fn input_kind() -> RelayKind {
    RelayKind::Input {
        pane: "p1".to_owned(),
        text: Some("ls".to_owned()),
        keys: vec!["Enter".to_owned()],
    }
}

fn snapshot() -> PaneSnapshot {
    PaneSnapshot {
        machine: "web-1".to_owned(),
        pane: "t0-3".to_owned(),
        token: "ab12".to_owned(),
        name: "build".to_owned(),
        cols: 80,
        rows: 24,
        cursor: Cursor { x: 2, y: 0 },
        lines: vec!["$ ".to_owned()],
        scrollback: vec![],
        seq: 9,
    }
}

fn ok(id: u64, result: RelayOk) -> RelayResponse {
    RelayResponse {
        id,
        result: Ok(result),
    }
}

#[test]
fn messages_round_trip() {
    let request = RelayRequest {
        id: 3,
        device: "phone".to_owned(),
        request_id: "r-77".to_owned(),
        kind: input_kind(),
    };
    assert_eq!(
        decode::<RelayRequest>(&encode(&request).unwrap()).unwrap(),
        request
    );

    let messages = [
        MemberMessage::Response(ok(3, RelayOk::Snapshot(snapshot()))),
        MemberMessage::Response(RelayResponse {
            id: 4,
            result: Err(RelayError::BadInput("unknown key: Foo".to_owned())),
        }),
        MemberMessage::Event(StreamEvent {
            stream: 5,
            seq: 10,
            cursor: Cursor { x: 0, y: 1 },
            cols: 80,
            height: 24,
            full: false,
            rows: BTreeMap::from([(1, "hello".to_owned())]),
        }),
        MemberMessage::End(StreamEnd {
            stream: 5,
            error: Some(RelayError::NoSuchPane),
        }),
    ];
    for m in messages {
        assert_eq!(decode::<MemberMessage>(&encode(&m).unwrap()).unwrap(), m);
    }
}

#[test]
fn errors_display_the_spec_strings() {
    let cases = [
        (RelayError::NoSuchPane, "no such pane"),
        (RelayError::ResourceLimit, "resource limit"),
        (RelayError::AuditUnavailable, "audit unavailable"),
        (RelayError::CapabilityMissing, "capability missing"),
        (
            RelayError::BadInput("text too long".to_owned()),
            "text too long",
        ),
        (RelayError::Restarting, "restarting, try again"),
        (RelayError::Unreachable, "member unreachable"),
        (RelayError::Unreadable, "member response unreadable"),
        (RelayError::Unknown, "member response unreadable"),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
}

#[test]
fn an_unknown_kind_from_a_newer_lead_decodes_as_unknown() {
    // A newer lead's request: same fields, a kind index this side does not have (one past every
    // kind it knows, `Unknown` included), with a payload.
    #[derive(serde::Serialize)]
    enum NewerKind {
        #[allow(dead_code)]
        A,
        #[allow(dead_code)]
        B,
        #[allow(dead_code)]
        C,
        #[allow(dead_code)]
        D,
        #[allow(dead_code)]
        E,
        #[allow(dead_code)]
        F,
        #[allow(dead_code)]
        G,
        #[allow(dead_code)]
        H,
        #[allow(dead_code)]
        I,
        #[allow(dead_code)]
        J,
        #[allow(dead_code)]
        K,
        Resize {
            cols: u16,
            rows: u16,
        },
    }
    #[derive(serde::Serialize)]
    struct NewerRequest {
        id: u64,
        device: String,
        request_id: String,
        kind: NewerKind,
    }
    let newer = NewerRequest {
        id: 8,
        device: "phone".to_owned(),
        request_id: "r".to_owned(),
        kind: NewerKind::Resize {
            cols: 100,
            rows: 30,
        },
    };
    let got: RelayRequest = decode(&encode(&newer).unwrap()).unwrap();
    assert_eq!(got.id, 8);
    assert_eq!(got.kind, RelayKind::Unknown);
}

#[test]
fn responses_are_matched_once_and_unknown_ids_dropped() {
    let now = Instant::now();
    let mut f = InFlight::new(4, 2);
    let a = f
        .start(&snapshot_kind(), now + Duration::from_secs(2), "a")
        .unwrap();
    let b = f
        .start(&input_kind(), now + Duration::from_secs(2), "b")
        .unwrap();
    assert_ne!(a, b);
    assert_eq!(f.in_flight(), 2);

    let answer = f.on_response(ok(b, RelayOk::Done)).unwrap();
    assert_eq!(
        (answer.id, answer.waiter, answer.result),
        (b, "b", Ok(RelayOk::Done))
    );
    assert!(
        f.on_response(ok(b, RelayOk::Done)).is_none(),
        "duplicate dropped"
    );
    assert!(
        f.on_response(ok(999, RelayOk::Done)).is_none(),
        "unknown id dropped"
    );

    let answer = f.on_response(ok(a, RelayOk::Snapshot(snapshot()))).unwrap();
    assert_eq!(answer.waiter, "a");
    assert_eq!(f.in_flight(), 0);
}

#[test]
fn an_outcome_that_does_not_fit_is_unreadable() {
    let now = Instant::now();
    let mut f = InFlight::new(4, 2);
    let id = f.start(&input_kind(), now, ()).unwrap();
    let answer = f
        .on_response(ok(id, RelayOk::Snapshot(snapshot())))
        .unwrap();
    assert_eq!(answer.result, Err(RelayError::Unreadable));
    let id = f.start(&input_kind(), now, ()).unwrap();
    let answer = f.on_response(ok(id, RelayOk::Unknown)).unwrap();
    assert_eq!(answer.result, Err(RelayError::Unreadable));
}

#[test]
fn requests_time_out_at_their_deadline_and_late_answers_are_dropped() {
    let t0 = Instant::now();
    let mut f = InFlight::new(4, 2);
    let early = f
        .start(&snapshot_kind(), t0 + Duration::from_secs(1), 1)
        .unwrap();
    let late = f
        .start(&snapshot_kind(), t0 + Duration::from_secs(2), 2)
        .unwrap();
    assert_eq!(f.next_deadline(), Some(t0 + Duration::from_secs(1)));
    assert!(f.expire(t0 + Duration::from_millis(999)).is_empty());

    let expired = f.expire(t0 + Duration::from_secs(1));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, early);
    assert_eq!(expired[0].result, Err(RelayError::Unreachable));
    assert!(f
        .on_response(ok(early, RelayOk::Snapshot(snapshot())))
        .is_none());
    assert_eq!(f.next_deadline(), Some(t0 + Duration::from_secs(2)));
    assert!(f
        .on_response(ok(late, RelayOk::Snapshot(snapshot())))
        .is_some());
    assert_eq!(f.next_deadline(), None);
}

#[test]
fn limits_refuse_and_hand_the_waiter_back() {
    let now = Instant::now();
    let mut f = InFlight::new(2, 1);
    let s = f.start(&subscribe_kind(), now, "s").unwrap();
    let refused = f.start(&subscribe_kind(), now, "s2").unwrap_err();
    assert_eq!(
        (refused.error.clone(), refused.waiter),
        (InFlightError::TooManyStreams, "s2")
    );
    assert_eq!(RelayError::from(refused.error), RelayError::ResourceLimit);
    f.start(&snapshot_kind(), now, "r").unwrap();
    let refused = f.start(&snapshot_kind(), now, "r2").unwrap_err();
    assert_eq!(refused.error, InFlightError::TooManyRequests);

    // The confirmed stream keeps its slot after its request is answered...
    f.on_response(ok(s, RelayOk::Subscribed)).unwrap();
    assert!(f.is_stream(s));
    assert_eq!(f.streams(), 1);
    assert_eq!(
        f.start(&subscribe_kind(), now, "s3").unwrap_err().error,
        InFlightError::TooManyStreams
    );
    // ...until it ends.
    assert!(f.end_stream(s));
    assert!(!f.is_stream(s));
    f.start(&subscribe_kind(), now, "s4").unwrap();
}

#[test]
fn a_refused_or_timed_out_subscription_frees_its_slot() {
    let now = Instant::now();
    let mut f = InFlight::new(4, 1);
    let s = f.start(&subscribe_kind(), now, ()).unwrap();
    let answer = f
        .on_response(RelayResponse {
            id: s,
            result: Err(RelayError::NoSuchPane),
        })
        .unwrap();
    assert_eq!(answer.result, Err(RelayError::NoSuchPane));
    assert_eq!(f.streams(), 0);
    let s = f.start(&subscribe_kind(), now, ()).unwrap();
    assert_eq!(f.expire(now).len(), 1);
    assert_eq!(f.streams(), 0);
    assert!(f.on_response(ok(s, RelayOk::Subscribed)).is_none());
    assert!(!f.is_stream(s), "a late confirmation opens nothing");
}

#[test]
fn close_answers_everything_and_refuses_more() {
    let now = Instant::now();
    let mut f = InFlight::new(4, 2);
    let s = f.start(&subscribe_kind(), now, 1).unwrap();
    f.on_response(ok(s, RelayOk::Subscribed)).unwrap();
    f.start(&snapshot_kind(), now, 2).unwrap();
    f.start(&input_kind(), now, 3).unwrap();
    let answers = f.close();
    assert_eq!(answers.len(), 2);
    assert!(answers
        .iter()
        .all(|a| a.result == Err(RelayError::Unreachable)));
    assert_eq!((f.in_flight(), f.streams()), (0, 0));
    assert_eq!(
        f.start(&snapshot_kind(), now, 4).unwrap_err().error,
        InFlightError::Closed
    );
    assert_eq!(
        f.start(&RelayKind::Unknown, now, 5).unwrap_err().error,
        InFlightError::Closed
    );
}

#[test]
fn unknown_kind_is_never_sent() {
    let mut f = InFlight::new(4, 2);
    assert_eq!(
        f.start(&RelayKind::Unknown, Instant::now(), ())
            .unwrap_err()
            .error,
        InFlightError::UnknownKind
    );
}

#[derive(Debug, Clone)]
enum Op {
    Start { subscribe: bool, ttl_ms: u64 },
    Respond { pick: usize, success: bool },
    RespondUnknown { id: u64 },
    Advance { ms: u64 },
    EndStream { pick: usize },
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), 0u64..50)
            .prop_map(|(subscribe, ttl_ms)| Op::Start { subscribe, ttl_ms }),
        4 => (any::<usize>(), any::<bool>())
            .prop_map(|(pick, success)| Op::Respond { pick, success }),
        1 => (0u64..64).prop_map(|id| Op::RespondUnknown { id }),
        2 => (0u64..30).prop_map(|ms| Op::Advance { ms }),
        1 => any::<usize>().prop_map(|pick| Op::EndStream { pick }),
        1 => Just(Op::Close),
    ]
}

proptest! {
    /// Random interleavings of sends, responses (right, duplicate, unknown), timeouts, stream ends
    /// and a close: every request is answered exactly once and the limits always hold.
    #[test]
    fn every_request_is_answered_exactly_once(
        max_requests in 0usize..6,
        max_streams in 0usize..4,
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        let t0 = Instant::now();
        let mut now = t0;
        let mut f: InFlight<u64> = InFlight::new(max_requests, max_streams);
        // Waiter values are the ids they were started with; answered ids are recorded.
        let mut started: Vec<u64> = Vec::new();
        let mut answered: BTreeMap<u64, usize> = BTreeMap::new();
        let mut deadline_of: BTreeMap<u64, Instant> = BTreeMap::new();
        let mut next_waiter = 0u64;
        let record = |answers: Vec<Answer<u64>>, answered: &mut BTreeMap<u64, usize>| {
            for a in answers {
                *answered.entry(a.waiter).or_default() += 1;
            }
        };
        let kinds = |subscribe: bool| if subscribe { subscribe_kind() } else { input_kind() };
        let mut subscribe_of: BTreeMap<u64, bool> = BTreeMap::new();
        let mut id_of_waiter: BTreeMap<u64, u64> = BTreeMap::new();

        for op in ops {
            match op {
                Op::Start { subscribe, ttl_ms } => {
                    let waiter = next_waiter;
                    next_waiter += 1;
                    let deadline = now + Duration::from_millis(ttl_ms);
                    match f.start(&kinds(subscribe), deadline, waiter) {
                        Ok(id) => {
                            prop_assert!(!id_of_waiter.values().any(|i| *i == id), "id reused");
                            started.push(waiter);
                            id_of_waiter.insert(waiter, id);
                            subscribe_of.insert(id, subscribe);
                            deadline_of.insert(id, deadline);
                        }
                        Err(refused) => prop_assert_eq!(refused.waiter, waiter),
                    }
                }
                Op::Respond { pick, success } => {
                    if started.is_empty() { continue; }
                    let waiter = started[pick % started.len()];
                    let id = id_of_waiter[&waiter];
                    let result = match (success, subscribe_of[&id]) {
                        (true, true) => Ok(RelayOk::Subscribed),
                        (true, false) => Ok(RelayOk::Done),
                        (false, _) => Err(RelayError::NoSuchPane),
                    };
                    if let Some(a) = f.on_response(RelayResponse { id, result }) {
                        prop_assert_eq!(a.id, id);
                        record(vec![a], &mut answered);
                    }
                }
                Op::RespondUnknown { id } => {
                    let response = RelayResponse { id, result: Ok(RelayOk::Done) };
                    if let Some(a) = f.on_response(response) {
                        record(vec![a], &mut answered);
                    }
                }
                Op::Advance { ms } => {
                    now += Duration::from_millis(ms);
                    let expired = f.expire(now);
                    for a in &expired {
                        prop_assert!(deadline_of[&a.id] <= now, "expired before its deadline");
                        prop_assert_eq!(&a.result, &Err(RelayError::Unreachable));
                    }
                    record(expired, &mut answered);
                    prop_assert!(f.next_deadline().is_none_or(|d| d > now));
                }
                Op::EndStream { pick } => {
                    if started.is_empty() { continue; }
                    let id = id_of_waiter[&started[pick % started.len()]];
                    f.end_stream(id);
                }
                Op::Close => {
                    let answers = f.close();
                    record(answers, &mut answered);
                }
            }
            prop_assert!(f.in_flight() <= max_requests);
            prop_assert!(f.streams() <= max_streams);
            prop_assert!(answered.values().all(|n| *n == 1), "answered twice: {:?}", answered);
        }
        // Whatever is still waiting is answered when the link closes: each exactly once overall.
        record(f.close(), &mut answered);
        for waiter in &started {
            prop_assert_eq!(answered.get(waiter), Some(&1), "waiter {} answered", waiter);
        }
        prop_assert_eq!(answered.len(), started.len());
    }
}
