//! The relay client and server over real QUIC on loopback, with pinned certificates on both sides.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::client::{Limits, On, RelayClient};
use super::server::{self, Events, Handler};
use super::*;
use crate::hello::Capability;
use crate::identity::Identity;
use crate::tls::{ClientAdmission, PinSet};
use crate::transport::quic::{QuicConnection, QuicEndpoint};
use crate::transport::{Connection, RecvFrames, SendFrames, Transport};

const WAIT: Duration = Duration::from_secs(10);

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

/// What the test member does.
#[derive(Default)]
struct Member {
    /// Requests seen, as (device, request_id, kind).
    seen: Mutex<Vec<(String, String, RelayKind)>>,
    /// Never answer (to test the deadline).
    silent: AtomicBool,
    /// Answer `Done` to everything (to test the shape check).
    wrong_shape: AtomicBool,
    /// Screen changes to hand out to a subscription.
    events: Mutex<Option<mpsc::Receiver<StreamEvent>>>,
    /// Subscriptions whose events were dropped (the lead left).
    left: Arc<AtomicUsize>,
}

struct Follow {
    rx: mpsc::Receiver<StreamEvent>,
    left: Arc<AtomicUsize>,
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.left.fetch_add(1, Ordering::SeqCst);
    }
}

impl Events for Follow {
    async fn next(&mut self) -> Option<StreamEvent> {
        self.rx.recv().await
    }
}

impl Handler for Arc<Member> {
    type Events = Follow;

    async fn handle(&self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        self.seen.lock().unwrap().push((
            request.device.clone(),
            request.request_id.clone(),
            request.kind.clone(),
        ));
        if self.silent.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if self.wrong_shape.load(Ordering::SeqCst) {
            return Ok(RelayOk::Done);
        }
        match &request.kind {
            RelayKind::PaneList => Ok(RelayOk::PaneList(vec![pane("t0-1")])),
            RelayKind::Snapshot { pane, .. } if pane == "t0-1" => Ok(RelayOk::Snapshot(snap())),
            RelayKind::Snapshot { .. } => Err(RelayError::NoSuchPane),
            _ => Ok(RelayOk::Done),
        }
    }

    async fn subscribe(&self, request: &RelayRequest, pane: &str) -> Result<Follow, RelayError> {
        self.seen.lock().unwrap().push((
            request.device.clone(),
            request.request_id.clone(),
            request.kind.clone(),
        ));
        if pane != "t0-1" {
            return Err(RelayError::NoSuchPane);
        }
        let rx = self
            .events
            .lock()
            .unwrap()
            .take()
            .unwrap_or_else(|| mpsc::channel(1).1);
        Ok(Follow {
            rx,
            left: Arc::clone(&self.left),
        })
    }
}

fn pane(id: &str) -> PaneInfo {
    PaneInfo {
        machine: "m1".into(),
        pane: id.into(),
        token: "ab12".into(),
        name: "build".into(),
        backend: "tmux".into(),
        alive: true,
        cols: 80,
        rows: 24,
        last_activity: None,
        asking_password: false,
        at_shell: false,
        activity: Default::default(),
    }
}

fn snap() -> PaneSnapshot {
    PaneSnapshot {
        machine: "m1".into(),
        pane: "t0-1".into(),
        token: "ab12".into(),
        name: "build".into(),
        cols: 80,
        rows: 2,
        cursor: Cursor { x: 0, y: 1 },
        lines: vec!["$ echo hi".into(), "hi".into()],
        scrollback: Vec::new(),
        seq: 7,
    }
}

fn event(seq: u64) -> StreamEvent {
    StreamEvent {
        stream: 0,
        seq,
        cursor: Cursor { x: 0, y: 0 },
        cols: 80,
        height: 2,
        full: seq == 1,
        rows: BTreeMap::from([(0, format!("line {seq}"))]),
    }
}

/// A lead and a member connected over QUIC on loopback; the member serves every stream the lead
/// opens with `member`, or, given none, leaves its side to the test.
struct Link {
    _lead: QuicEndpoint,
    _member_endpoint: QuicEndpoint,
    lead_side: QuicConnection,
    member_side: QuicConnection,
}

async fn link(member: impl Into<Option<Arc<Member>>>) -> Link {
    let member: Option<Arc<Member>> = member.into();
    let lead_id = Arc::new(Identity::generate().unwrap());
    let member_id = Arc::new(Identity::generate().unwrap());
    let pins = PinSet::new();
    pins.insert(member_id.pin());
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let lead = QuicEndpoint::lead(
        lead_id.clone(),
        loopback,
        pins.check(),
        ClientAdmission::PinnedOnly,
    )
    .unwrap();
    let member_endpoint = QuicEndpoint::member(member_id, loopback).unwrap();
    let addr = lead.local_addr().unwrap();
    let (dialled, accepted) = within("the connection", async {
        tokio::join!(member_endpoint.dial(&addr, lead_id.pin()), lead.accept())
    })
    .await;
    let member_side = dialled.unwrap();
    let lead_side = accepted.unwrap();
    if let Some(member) = member {
        let serving = member_side.clone();
        tokio::spawn(async move {
            while let Ok((send, recv)) = serving.accept_bi().await {
                let member = Arc::clone(&member);
                tokio::spawn(async move { server::serve(send, recv, &member).await });
            }
        });
    }
    Link {
        _lead: lead,
        _member_endpoint: member_endpoint,
        lead_side,
        member_side,
    }
}

fn all() -> BTreeSet<Capability> {
    Capability::ALL.into_iter().collect()
}

const ON: On<'static> = On {
    device: "phone-1",
    request_id: "req-1",
    device_id: None,
};

#[tokio::test]
async fn requests_are_answered_and_carry_the_device_and_request_id() {
    let member = Arc::new(Member::default());
    let link = link(Arc::clone(&member)).await;
    let client = RelayClient::new(link.lead_side.clone(), all(), Limits::default());

    let list = within("pane list", client.call(ON, RelayKind::PaneList)).await;
    assert_eq!(list, Ok(RelayOk::PaneList(vec![pane("t0-1")])));
    let kind = RelayKind::Snapshot {
        pane: "t0-1".into(),
        scrollback: None,
    };
    assert_eq!(
        within("snapshot", client.call(ON, kind)).await,
        Ok(RelayOk::Snapshot(snap()))
    );
    let missing = RelayKind::Snapshot {
        pane: "t9-9".into(),
        scrollback: None,
    };
    assert_eq!(
        within("missing pane", client.call(ON, missing)).await,
        Err(RelayError::NoSuchPane)
    );
    let input = RelayKind::Input {
        pane: "t0-1".into(),
        text: Some("ls".into()),
        keys: vec!["Enter".into()],
    };
    assert_eq!(
        within("input", client.call(ON, input.clone())).await,
        Ok(RelayOk::Done)
    );
    let seen = member.seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "each request reached the member once");
    assert_eq!(
        seen.last().unwrap(),
        &("phone-1".to_owned(), "req-1".to_owned(), input)
    );
}

#[tokio::test]
async fn an_undeclared_capability_is_refused_without_reaching_the_member() {
    let member = Arc::new(Member::default());
    let link = link(Arc::clone(&member)).await;
    let read_only: BTreeSet<_> = [Capability::PaneList, Capability::PaneRead].into();
    let client = RelayClient::new(link.lead_side.clone(), read_only, Limits::default());
    let input = RelayKind::Input {
        pane: "t0-1".into(),
        text: Some("rm -rf /".into()),
        keys: Vec::new(),
    };
    assert_eq!(
        client.call(ON, input).await,
        Err(RelayError::CapabilityMissing)
    );
    assert_eq!(
        client.subscribe(ON, "t0-1".into(), None).await.err(),
        Some(RelayError::CapabilityMissing)
    );
    assert_eq!(
        within("pane list", client.call(ON, RelayKind::PaneList)).await,
        Ok(RelayOk::PaneList(vec![pane("t0-1")]))
    );
    assert_eq!(
        member.seen.lock().unwrap().len(),
        1,
        "only the list arrived"
    );
}

#[tokio::test]
async fn a_silent_member_is_unreachable_at_the_deadline_and_holds_no_slot_after() {
    let member = Arc::new(Member::default());
    member.silent.store(true, Ordering::SeqCst);
    let link = link(Arc::clone(&member)).await;
    let limits = Limits {
        max_requests: 1,
        max_streams: 1,
        answer_within: Duration::from_millis(200),
        ..Limits::default()
    };
    let client = RelayClient::new(link.lead_side.clone(), all(), limits);
    let first = within("the deadline", client.call(ON, RelayKind::PaneList)).await;
    assert_eq!(first, Err(RelayError::Unreachable));
    member.silent.store(false, Ordering::SeqCst);
    let again = within("a second request", client.call(ON, RelayKind::PaneList)).await;
    assert!(
        matches!(again, Ok(RelayOk::PaneList(_))),
        "the timed-out request gave its slot back: {again:?}"
    );
}

#[tokio::test]
async fn the_request_limit_refuses_past_the_bound() {
    let member = Arc::new(Member::default());
    member.silent.store(true, Ordering::SeqCst);
    let link = link(Arc::clone(&member)).await;
    let limits = Limits {
        max_requests: 2,
        max_streams: 1,
        answer_within: Duration::from_secs(5),
        ..Limits::default()
    };
    let client = Arc::new(RelayClient::new(link.lead_side.clone(), all(), limits));
    let hanging: Vec<_> = (0..2)
        .map(|_| {
            let c = Arc::clone(&client);
            tokio::spawn(async move { c.call(ON, RelayKind::PaneList).await })
        })
        .collect();
    within("both requests reach the member", async {
        while member.seen.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(
        client.call(ON, RelayKind::PaneList).await,
        Err(RelayError::ResourceLimit)
    );
    for h in hanging {
        h.abort();
    }
}

#[tokio::test]
async fn uploads_past_the_transfer_bound_are_refused_and_other_requests_still_pass() {
    let member = Arc::new(Member::default());
    member.silent.store(true, Ordering::SeqCst);
    let link = link(Arc::clone(&member)).await;
    let limits = Limits {
        max_transfers: 1,
        transfer_within: Duration::from_secs(5),
        ..Limits::default()
    };
    let client = Arc::new(RelayClient::new(link.lead_side.clone(), all(), limits));
    let blob = || RelayKind::Blob {
        pane: "p1".to_owned(),
        name: "a.bin".to_owned(),
        bytes: vec![7; 1024],
    };
    let c = Arc::clone(&client);
    let hanging = tokio::spawn(async move { c.call(ON, blob()).await });
    within("the upload reaches the member", async {
        while member.seen.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(
        client.call(ON, blob()).await,
        Err(RelayError::ResourceLimit)
    );
    // The bound is the uploads' own: a pane list still goes (and waits, the member is silent).
    let c = Arc::clone(&client);
    let list = tokio::spawn(async move { c.call(ON, RelayKind::PaneList).await });
    within("the pane list reaches the member", async {
        while member.seen.lock().unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    hanging.abort();
    list.abort();
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_request_is_unreadable() {
    let member = Arc::new(Member::default());
    member.wrong_shape.store(true, Ordering::SeqCst);
    let link = link(Arc::clone(&member)).await;
    let client = RelayClient::new(link.lead_side.clone(), all(), Limits::default());
    let snapshot = RelayKind::Snapshot {
        pane: "t0-1".into(),
        scrollback: None,
    };
    assert_eq!(
        within("snapshot", client.call(ON, snapshot)).await,
        Err(RelayError::Unreadable),
        "Done is no answer to a snapshot"
    );
}

#[tokio::test]
async fn garbage_from_the_member_is_unreadable() {
    let link = link(None).await;
    let client = RelayClient::new(link.lead_side.clone(), all(), Limits::default());
    let member = link.member_side.clone();
    let garbage = tokio::spawn(async move {
        let (mut send, mut recv) = member.accept_bi().await.unwrap();
        let _ = recv.recv().await;
        send.send(&[0xff; 40]).await.unwrap();
        // Keep the stream open until the lead has read the frame.
        let _ = recv.recv().await;
    });
    assert_eq!(
        within("the garbage answer", client.call(ON, RelayKind::PaneList)).await,
        Err(RelayError::Unreadable)
    );
    garbage.abort();
}

#[tokio::test]
async fn a_subscription_streams_events_and_leaving_ends_it_on_the_member() {
    let member = Arc::new(Member::default());
    let (tx, rx) = mpsc::channel(8);
    *member.events.lock().unwrap() = Some(rx);
    let link = link(Arc::clone(&member)).await;
    let limits = Limits {
        max_streams: 1,
        ..Limits::default()
    };
    let client = RelayClient::new(link.lead_side.clone(), all(), limits);
    let mut sub = within("subscribe", client.subscribe(ON, "t0-1".into(), None))
        .await
        .unwrap();
    assert_eq!(
        client.subscribe(ON, "t0-1".into(), None).await.err(),
        Some(RelayError::ResourceLimit),
        "one stream slot"
    );
    for seq in 1..=3 {
        tx.send(event(seq)).await.unwrap();
        let got = within("an event", sub.next()).await.unwrap().unwrap();
        assert_eq!(got.seq, seq);
        assert_eq!(got.rows.get(&0), Some(&format!("line {seq}")));
        assert!(got.stream > 0, "the stream id is the request's");
    }
    drop(sub);
    within("the member sees the lead leave", async {
        while member.left.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let mut again = within("subscribe again", client.subscribe(ON, "t0-1".into(), None))
        .await
        .expect("the slot was given back");
    // The member's events for this one were taken by the first: it ends at once.
    assert_eq!(within("the end", again.next()).await, Ok(None));
}

#[tokio::test]
async fn a_colour_member_is_asked_for_colours_and_an_older_one_for_plain_events() {
    let older: BTreeSet<Capability> = all()
        .into_iter()
        .filter(|c| *c != Capability::PaneColour)
        .collect();
    for (capabilities, colour) in [(all(), true), (older, false)] {
        let member = Arc::new(Member::default());
        let (tx, rx) = mpsc::channel(4);
        *member.events.lock().unwrap() = Some(rx);
        let link = link(Arc::clone(&member)).await;
        let client = RelayClient::new(link.lead_side.clone(), capabilities, Limits::default());
        let mut sub = within("subscribe", client.subscribe(ON, "t0-1".into(), None))
            .await
            .unwrap();
        tx.send(event(1)).await.unwrap();
        // This member keeps no colours: its colour events carry none, and plain ones read alike.
        let got = within("an event", sub.next_colour())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.event.seq, 1);
        assert_eq!(got.attrs, EventAttrs::default());
        let kind = member.seen.lock().unwrap().last().unwrap().2.clone();
        assert_eq!(
            matches!(kind, RelayKind::SubscribeColour { .. }),
            colour,
            "{kind:?}"
        );
        assert!(matches!(
            kind,
            RelayKind::SubscribeColour { .. } | RelayKind::Subscribe { .. }
        ));
    }
}

#[tokio::test]
async fn a_closed_connection_is_unreachable() {
    let member = Arc::new(Member::default());
    let link = link(member).await;
    let client = RelayClient::new(link.lead_side.clone(), all(), Limits::default());
    link.member_side.close("gone");
    within("the close", link.lead_side.closed()).await;
    assert_eq!(
        client.call(ON, RelayKind::PaneList).await,
        Err(RelayError::Unreachable)
    );
}

#[tokio::test]
async fn an_unknown_request_kind_is_answered_with_an_error() {
    // SPEC §8: unknown request kinds are answered with an error, and the member keeps serving.
    let member = Arc::new(Member::default());
    let link = link(Arc::clone(&member)).await;
    let (mut send, mut recv) = link.lead_side.open_bi().await.unwrap();
    let request = RelayRequest {
        id: 9,
        device: "phone-1".into(),
        request_id: "req-9".into(),
        device_id: None,
        kind: RelayKind::Unknown,
    };
    send.send_message(&request).await.unwrap();
    let answer: MemberMessage = within("the answer", recv.recv_message())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        MemberMessage::Response(RelayResponse {
            id: 9,
            result: Err(RelayError::UnknownKind),
        })
    );
    assert!(
        member.seen.lock().unwrap().is_empty(),
        "the handler never saw it"
    );
    let client = RelayClient::new(link.lead_side.clone(), all(), Limits::default());
    assert!(matches!(
        within("a list after it", client.call(ON, RelayKind::PaneList)).await,
        Ok(RelayOk::PaneList(_))
    ));
}

/// A member of an older build, emulated with that build's own (shorter) enums: it knows the
/// relay kinds up to `Snapshot` and the capabilities up to `PaneRead`, reads requests and writes
/// answers with those enums, and serves them on a real stream. Every kind, answer, error and
/// capability appended since must leave it working for what it knows and refused for the rest.
mod older {
    use serde::{Deserialize, Serialize};

    use super::{PaneInfo, PaneSnapshot};

    #[derive(Debug, Deserialize)]
    pub(super) enum Kind {
        PaneList,
        Snapshot {
            pane: String,
            #[allow(dead_code)]
            scrollback: Option<u32>,
        },
        #[serde(other)]
        Unknown,
    }

    #[derive(Debug, Deserialize)]
    pub(super) struct Request {
        pub(super) id: u64,
        #[allow(dead_code)]
        pub(super) device: String,
        #[allow(dead_code)]
        pub(super) request_id: String,
        pub(super) kind: Kind,
    }

    #[derive(Serialize)]
    pub(super) enum Ok {
        PaneList(Vec<PaneInfo>),
        Snapshot(PaneSnapshot),
    }

    #[derive(Serialize)]
    pub(super) enum Error {
        NoSuchPane,
        #[allow(dead_code)]
        ResourceLimit,
        #[allow(dead_code)]
        AuditUnavailable,
        #[allow(dead_code)]
        CapabilityMissing,
        #[allow(dead_code)]
        BadInput(String),
        #[allow(dead_code)]
        Restarting,
        UnknownKind,
    }

    #[derive(Serialize)]
    pub(super) struct Response {
        pub(super) id: u64,
        pub(super) result: Result<Ok, Error>,
    }

    #[derive(Serialize)]
    pub(super) enum Message {
        Response(Response),
    }

    #[derive(Serialize)]
    pub(super) enum Capability {
        PaneList,
        PaneRead,
    }
}

/// Serves `conn` as the older member does; counts the requests it read.
fn serve_as_older_member(conn: QuicConnection, seen: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        while let Ok((mut send, mut recv)) = conn.accept_bi().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let Ok(Some(request)) = recv.recv_message::<older::Request>().await else {
                    return;
                };
                seen.fetch_add(1, Ordering::SeqCst);
                let result = match request.kind {
                    older::Kind::PaneList => Ok(older::Ok::PaneList(vec![pane("t0-1")])),
                    older::Kind::Snapshot { pane, .. } if pane == "t0-1" => {
                        Ok(older::Ok::Snapshot(snap()))
                    }
                    older::Kind::Snapshot { .. } => Err(older::Error::NoSuchPane),
                    older::Kind::Unknown => Err(older::Error::UnknownKind),
                };
                let answer = older::Message::Response(older::Response {
                    id: request.id,
                    result,
                });
                let _ = send.send_message(&answer).await;
                let _ = send.finish();
            });
        }
    });
}

#[tokio::test]
async fn an_older_member_serves_the_kinds_it_knows_and_a_newer_kind_is_capability_missing() {
    let link = link(None).await;
    let seen = Arc::new(AtomicUsize::new(0));
    serve_as_older_member(link.member_side.clone(), Arc::clone(&seen));
    // What its hello declares, read by this build's enum: only what it knows.
    let declared: BTreeSet<Capability> = crate::wire::decode(
        &crate::wire::encode(&vec![
            older::Capability::PaneList,
            older::Capability::PaneRead,
        ])
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        declared,
        [Capability::PaneList, Capability::PaneRead].into()
    );
    let client = RelayClient::new(link.lead_side.clone(), declared, Limits::default());

    // The kinds it knows keep working, its answers read by this build's enums.
    assert_eq!(
        within("pane list", client.call(ON, RelayKind::PaneList)).await,
        Ok(RelayOk::PaneList(vec![pane("t0-1")]))
    );
    let snapshot = |pane: &str| RelayKind::Snapshot {
        pane: pane.into(),
        scrollback: Some(10),
    };
    assert_eq!(
        within("snapshot", client.call(ON, snapshot("t0-1"))).await,
        Ok(RelayOk::Snapshot(snap()))
    );
    assert_eq!(
        within("missing pane", client.call(ON, snapshot("t9-9"))).await,
        Err(RelayError::NoSuchPane)
    );
    assert_eq!(seen.load(Ordering::SeqCst), 3);

    // A kind appended after its time — the newest one included — is refused by the lead
    // without reaching it.
    let newer = [
        RelayKind::Chat {
            pane: "t0-1".into(),
            after: String::new(),
        },
        RelayKind::DeviceEnded {
            device_id: "ab".repeat(16),
        },
        RelayKind::Input {
            pane: "t0-1".into(),
            text: Some("ls".into()),
            keys: vec![],
        },
    ];
    for kind in newer.clone() {
        assert_eq!(
            client.call(ON, kind.clone()).await,
            Err(RelayError::CapabilityMissing),
            "{kind:?}"
        );
    }
    assert_eq!(seen.load(Ordering::SeqCst), 3, "nothing more reached it");

    // A lead that sends one anyway (no gate) gets the older member's error for a kind it does
    // not know — which the bridge shows as `capability missing` too — and the member goes on.
    for (id, kind) in (40..).zip(newer) {
        let (mut send, mut recv) = link.lead_side.open_bi().await.unwrap();
        let request = RelayRequest {
            id,
            device: "phone-1".into(),
            request_id: "req-40".into(),
            kind,
            device_id: Some("cd".repeat(16)),
        };
        send.send_message(&request).await.unwrap();
        let answer: MemberMessage = within("the answer", recv.recv_message())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            answer,
            MemberMessage::Response(RelayResponse {
                id,
                result: Err(RelayError::UnknownKind),
            })
        );
    }
    assert_eq!(
        within("a list after them", client.call(ON, RelayKind::PaneList)).await,
        Ok(RelayOk::PaneList(vec![pane("t0-1")]))
    );
}
