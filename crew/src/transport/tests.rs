//! The transport contract over real QUIC on loopback, and the exchange both transports must carry
//! (shared with the in-memory tests).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::quic::{QuicConnection, QuicEndpoint};
use super::*;
use crate::hello::{
    CrewSecret, Hello, HelloConfig, LeadHandshake, MemberHandshake, Opening, PROTOCOL,
};
use crate::identity::Identity;
use crate::relay::{MemberMessage, PaneInfo, RelayKind, RelayOk, RelayRequest, RelayResponse};
use crate::tls::PinSet;
use crate::wire::MAX_FRAME;

/// Every wait in these tests is bounded by this; nothing is timed.
pub(super) const DEADLINE: Duration = Duration::from_secs(10);

pub(super) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

fn hello_config(name: &str) -> HelloConfig {
    HelloConfig::new(
        name.to_owned(),
        "0.1.0".to_owned(),
        CrewSecret::from([42u8; 32]),
    )
}

fn pane() -> PaneInfo {
    PaneInfo {
        machine: "web-1".to_owned(),
        pane: "t0-1".to_owned(),
        token: "ab12".to_owned(),
        name: "build".to_owned(),
        backend: "tmux".to_owned(),
        alive: true,
        cols: 80,
        rows: 24,
        last_activity: None,
        asking_password: false,
        at_shell: false,
        activity: Default::default(),
    }
}

/// The first exchange of a crew link over one connection, `lead` and `member` being its two ends:
/// the member opens a stream with its hello, both run the hello state machines over the
/// connection's exporter value, then the lead opens a second stream and relays one request.
pub(super) async fn hello_and_relay<C: Connection>(lead: &C, member: &C) {
    let exporter = lead.exporter().unwrap();
    assert_eq!(
        member.exporter().unwrap(),
        exporter,
        "one connection, one exporter value"
    );

    let member_side = async {
        let (mut send, mut recv) = member.open_bi().await.unwrap();
        let mut handshake = MemberHandshake::new(hello_config("web-1"), member.exporter().unwrap());
        send.send_message(&Opening::Hello(handshake.hello()))
            .await
            .unwrap();
        let reply: Hello = recv.recv_message().await.unwrap().unwrap();
        assert_eq!(handshake.on_hello(&reply).unwrap().name, "laptop");

        let (mut send, mut recv) = member.accept_bi().await.unwrap();
        let request: RelayRequest = recv.recv_message().await.unwrap().unwrap();
        assert_eq!(request.kind, RelayKind::PaneList);
        let response = MemberMessage::Response(RelayResponse {
            id: request.id,
            result: Ok(RelayOk::PaneList(vec![pane()])),
        });
        send.send_message(&response).await.unwrap();
        // The lead finishes the stream after its answer.
        assert!(recv.recv().await.unwrap().is_none());
    };

    let lead_side = async {
        let (mut send, mut recv) = lead.accept_bi().await.unwrap();
        let Opening::Hello(hello) = recv.recv_message().await.unwrap().unwrap() else {
            panic!("expected a hello");
        };
        let mut handshake = LeadHandshake::new(
            hello_config("laptop"),
            "web-1".to_owned(),
            lead.exporter().unwrap(),
        );
        let reply = handshake.on_hello(&hello).unwrap();
        send.send_message(&reply).await.unwrap();
        let peer = handshake.member().unwrap().clone();
        assert_eq!(peer.protocol, PROTOCOL);
        peer.allows(&RelayKind::PaneList).unwrap();

        let (mut send, mut recv) = lead.open_bi().await.unwrap();
        let request = RelayRequest {
            id: 1,
            device: "phone".to_owned(),
            request_id: "r-1".to_owned(),
            device_id: None,
            kind: RelayKind::PaneList,
        };
        send.send_message(&request).await.unwrap();
        let answer: MemberMessage = recv.recv_message().await.unwrap().unwrap();
        assert_eq!(
            answer,
            MemberMessage::Response(RelayResponse {
                id: 1,
                result: Ok(RelayOk::PaneList(vec![pane()])),
            })
        );
        send.finish().unwrap();
    };

    within("the hello and relay exchange", async {
        tokio::join!(member_side, lead_side)
    })
    .await;
}

/// A stream on which the peer announced a frame of [`MAX_FRAME`] + 1 bytes is refused and stopped;
/// `second` then still carries frames. `first_recv` is the lead's half of the poisoned stream.
pub(super) async fn oversized_frame_is_refused<R: RecvFrames>(first_recv: &mut R) {
    let error = within("the oversized frame refusal", first_recv.recv())
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            TransportError::Frame(WireError::TooLarge { len }) if len == MAX_FRAME as u64 + 1
        ),
        "{error:?}"
    );
}

/// The header of a frame announcing one byte more than the limit.
pub(super) fn oversized_header() -> [u8; 4] {
    u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes()
}

const LOOPBACK: &str = "127.0.0.1:0";

struct Crew {
    lead_identity: Arc<Identity>,
    member_identity: Arc<Identity>,
    pins: PinSet,
    lead: QuicEndpoint,
    member: QuicEndpoint,
    address: SocketAddr,
}

impl Crew {
    /// A lead and a member endpoint on loopback; the member is pinned on the lead if `pinned`.
    fn new(pinned: bool, admission: ClientAdmission) -> Self {
        let lead_identity = Arc::new(Identity::generate().unwrap());
        let member_identity = Arc::new(Identity::generate().unwrap());
        let pins = PinSet::new();
        if pinned {
            pins.insert(member_identity.pin());
        }
        let loopback: SocketAddr = LOOPBACK.parse().unwrap();
        let lead =
            QuicEndpoint::lead(lead_identity.clone(), loopback, pins.check(), admission).unwrap();
        let member = QuicEndpoint::member(member_identity.clone(), loopback).unwrap();
        let address = lead.local_addr().unwrap();
        Self {
            lead_identity,
            member_identity,
            pins,
            lead,
            member,
            address,
        }
    }

    /// Dials the lead and returns (lead side, member side).
    async fn connect(&self) -> (QuicConnection, QuicConnection) {
        within("a connection", async {
            let member = self
                .member
                .dial(&self.address, self.lead_identity.pin())
                .await
                .unwrap();
            let lead = self.lead.accept().await.unwrap();
            (lead, member)
        })
        .await
    }
}

#[tokio::test]
async fn quic_carries_the_hello_and_a_relay_exchange_between_pinned_peers() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = crew.connect().await;
    assert_eq!(lead.peer_pin(), crew.member_identity.pin());
    assert_eq!(member.peer_pin(), crew.lead_identity.pin());
    assert_eq!(
        lead.peer_status(),
        PeerStatus::Pinned(crew.member_identity.pin())
    );
    assert_eq!(
        member.peer_status(),
        PeerStatus::Pinned(crew.lead_identity.pin())
    );
    hello_and_relay(&lead, &member).await;

    // A second connection has its own exporter value, so a proof cannot be replayed across them.
    let (lead_2, member_2) = crew.connect().await;
    assert_eq!(lead_2.exporter().unwrap(), member_2.exporter().unwrap());
    assert_ne!(lead_2.exporter().unwrap(), lead.exporter().unwrap());
    hello_and_relay(&lead_2, &member_2).await;

    // Unpinning applies to a live connection at the next check.
    crew.pins.remove(&crew.member_identity.pin());
    assert_eq!(
        lead.peer_status(),
        PeerStatus::Unpinned(crew.member_identity.pin())
    );
}

#[tokio::test]
async fn quic_an_oversized_frame_closes_only_its_stream() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = crew.connect().await;

    // A raw stream announcing 16 MiB + 1, followed by some bytes of it.
    let (mut raw, _raw_recv) = member.quinn().open_bi().await.unwrap();
    raw.write_all(&oversized_header()).await.unwrap();
    raw.write_all(&[0u8; 4096]).await.unwrap();
    let (_first_send, mut first_recv) = within("the raw stream", lead.accept_bi()).await.unwrap();
    oversized_frame_is_refused(&mut first_recv).await;
    let code = within("the stop", raw.stopped()).await.unwrap();
    assert_eq!(code, Some(quinn::VarInt::from_u32(STREAM_MALFORMED)));

    // The connection and a new stream still work, both ways.
    let (mut send, mut recv) = member.open_bi().await.unwrap();
    send.send(b"still here").await.unwrap();
    let (mut lead_send, mut lead_recv) = within("a second stream", lead.accept_bi()).await.unwrap();
    assert_eq!(
        within("a frame", lead_recv.recv()).await.unwrap().unwrap(),
        b"still here"
    );
    lead_send.send(b"and here").await.unwrap();
    assert_eq!(
        within("a frame", recv.recv()).await.unwrap().unwrap(),
        b"and here"
    );
    assert!(lead.close_reason().is_none());
    assert!(member.close_reason().is_none());

    // A well-framed payload that is not the expected message also stops only its stream.
    send.send(&[0xff; 3]).await.unwrap();
    let error = lead_recv.recv_message::<RelayRequest>().await.unwrap_err();
    assert!(
        matches!(error, TransportError::Frame(WireError::Malformed(_))),
        "{error:?}"
    );
    let error = within("the stop", async {
        loop {
            if let Err(e) = send.send(b"more").await {
                break e;
            }
        }
    })
    .await;
    assert!(matches!(error, TransportError::StreamStopped), "{error:?}");
    assert!(lead.close_reason().is_none());

    // Sending more than the limit is refused before anything is sent.
    let (mut send, _recv) = member.open_bi().await.unwrap();
    let too_big = vec![0u8; MAX_FRAME + 1];
    assert!(matches!(
        send.send(&too_big).await,
        Err(TransportError::Frame(WireError::TooLarge { .. }))
    ));
}

/// Every connection keeps the configuration it was accepted under, so an admission swap (an
/// invite, a join) must not build a new one: the lead would keep a rustls configuration per
/// member that joined (docs/PERFORMANCE.md, "Lead memory per member").
#[tokio::test]
async fn quic_an_admission_swap_reuses_the_configuration_of_that_admission() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let pinned_only = crew.lead.handshake_crypto().unwrap();
    crew.lead
        .set_admission(ClientAdmission::JoinAllowed)
        .unwrap();
    let join_allowed = crew.lead.handshake_crypto().unwrap();
    assert!(!Arc::ptr_eq(&pinned_only, &join_allowed));
    crew.lead
        .set_admission(ClientAdmission::PinnedOnly)
        .unwrap();
    assert!(Arc::ptr_eq(
        &pinned_only,
        &crew.lead.handshake_crypto().unwrap()
    ));
    crew.lead
        .set_admission(ClientAdmission::JoinAllowed)
        .unwrap();
    assert!(Arc::ptr_eq(
        &join_allowed,
        &crew.lead.handshake_crypto().unwrap()
    ));
    // A member still connects under the configuration swapped back in.
    crew.lead
        .set_admission(ClientAdmission::PinnedOnly)
        .unwrap();
    let (lead, _member) = crew.connect().await;
    assert_eq!(
        lead.peer_status(),
        PeerStatus::Pinned(crew.member_identity.pin())
    );
}

#[tokio::test]
async fn quic_an_unpinned_dialer_is_reported_unpinned_in_join_mode() {
    let crew = Crew::new(false, ClientAdmission::JoinAllowed);
    let (lead, member) = crew.connect().await;
    assert_eq!(
        lead.peer_status(),
        PeerStatus::Unpinned(crew.member_identity.pin())
    );
    // The member still verified the lead.
    assert_eq!(
        member.peer_status(),
        PeerStatus::Pinned(crew.lead_identity.pin())
    );

    // Once the invite is gone the lead admits pinned members only: the next handshake fails.
    crew.lead
        .set_admission(ClientAdmission::PinnedOnly)
        .unwrap();
    let refused = within("the refused dial", async {
        match crew
            .member
            .dial(&crew.address, crew.lead_identity.pin())
            .await
        {
            Err(error) => matches!(error, TransportError::Dial { .. }),
            // TLS 1.3: the client may finish before the server checked its certificate.
            Ok(connection) => matches!(connection.closed().await, Closed::Lost(_)),
        }
    })
    .await;
    assert!(refused);
    // The lead never hands out the refused connection; the earlier one is unaffected.
    assert!(lead.close_reason().is_none());
}

#[tokio::test]
async fn quic_a_dial_with_the_wrong_lead_pin_fails() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let stranger = Identity::generate().unwrap();
    let error = within(
        "the failed dial",
        crew.member.dial(&crew.address, stranger.pin()),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, TransportError::Dial { .. }), "{error:?}");
}

#[tokio::test]
async fn quic_the_peer_sees_the_close_reason() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = crew.connect().await;
    let (mut send, mut recv) = member.open_bi().await.unwrap();
    send.send(b"hello").await.unwrap();
    let (_lead_send, mut lead_recv) = lead.accept_bi().await.unwrap();
    assert_eq!(lead_recv.recv().await.unwrap().unwrap(), b"hello");

    lead.close("member removed");
    assert_eq!(
        within("the close", member.closed()).await,
        Closed::ByPeer("member removed".to_owned())
    );
    assert_eq!(lead.close_reason(), Some(Closed::Locally));
    let error = within("the failed recv", recv.recv()).await.unwrap_err();
    assert!(
        matches!(&error, TransportError::ConnectionClosed(Closed::ByPeer(r)) if r == "member removed"),
        "{error:?}"
    );
    assert!(matches!(
        member.open_bi().await,
        Err(TransportError::ConnectionClosed(_))
    ));

    // Closing the endpoint ends accepting.
    crew.lead.close("lead shutting down");
    assert!(within("the end of accepting", crew.lead.accept())
        .await
        .is_none());
}

#[tokio::test]
async fn quic_a_member_has_at_most_lead_max_streams_open_towards_the_lead_and_the_lead_its_relay_limits(
) {
    use crate::relay::client::Limits;
    use crate::tls::{LEAD_MAX_STREAMS, MAX_STREAMS};

    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = crew.connect().await;

    // The member fills its allowance of streams towards the lead...
    let mut open = Vec::new();
    for n in 0..LEAD_MAX_STREAMS {
        let (mut send, recv) = within("a member stream", member.open_bi()).await.unwrap();
        send.send(&n.to_be_bytes()).await.unwrap();
        let (lead_send, mut lead_recv) = within("its accept", lead.accept_bi()).await.unwrap();
        within("its frame", lead_recv.recv())
            .await
            .unwrap()
            .unwrap();
        open.push((send, recv, lead_send, lead_recv));
    }
    // ...and the next one waits for a stream to end (flow control: it is not refused).
    let mut next = Box::pin(member.open_bi());
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut next)
            .await
            .is_err(),
        "stream {} opened past the lead's limit",
        LEAD_MAX_STREAMS + 1
    );
    // Ending streams gives the allowance back (quinn announces it once an eighth is free).
    for _ in 0..=LEAD_MAX_STREAMS / 8 {
        let (mut send, mut recv, mut lead_send, mut lead_recv) = open.remove(0);
        send.finish().unwrap();
        lead_send.finish().unwrap();
        assert!(within("the member's end", lead_recv.recv())
            .await
            .unwrap()
            .is_none());
        assert!(within("the lead's end", recv.recv())
            .await
            .unwrap()
            .is_none());
    }
    within("a stream once some ended", next).await.unwrap();

    // The other way, a member lets its lead open every request and subscription its relay limits
    // allow at once.
    let limits = Limits::default();
    let wanted = limits.max_requests + limits.max_streams;
    assert!(wanted <= MAX_STREAMS as usize);
    let mut relayed = Vec::new();
    for n in 0..wanted {
        let (mut send, recv) = within("a lead stream", lead.open_bi()).await.unwrap();
        send.send(&n.to_be_bytes()).await.unwrap();
        relayed.push((send, recv));
    }
    for _ in 0..wanted {
        let (_send, mut recv) = within("a member accept", member.accept_bi()).await.unwrap();
        within("its frame", recv.recv()).await.unwrap().unwrap();
    }
}

/// A lead that restarts (killed: it sent no close) answers a member's next packet on the lost
/// connection with a stateless reset the member recognises, because both runs derive the reset
/// key from the same identity; the member learns at once that its link is gone instead of after
/// its silence rule (decision 0062). With a key drawn per run, the reset would be ignored and the
/// connection would stay open past the deadline (QUIC's idle timeout is 30 s).
#[tokio::test]
async fn quic_a_restarted_lead_resets_the_connections_it_lost() {
    let crew = Crew::new(true, ClientAdmission::PinnedOnly);
    // The member reaches "the lead's address" through a relay of datagrams whose far end the test
    // moves from the first run to the second: the first run goes silent without a close, as a
    // SIGKILL would leave it, and the second gets the member's packets at the same address.
    let outer = tokio::net::UdpSocket::bind(LOOPBACK).await.unwrap();
    let inner = tokio::net::UdpSocket::bind(LOOPBACK).await.unwrap();
    let front = outer.local_addr().unwrap();
    let (upstream_tx, mut upstream) = tokio::sync::watch::channel(crew.address);
    let relay = tokio::spawn(async move {
        let (mut a, mut b) = (vec![0u8; 65_536], vec![0u8; 65_536]);
        let mut member_at = None;
        loop {
            tokio::select! {
                Ok((n, from)) = outer.recv_from(&mut a) => {
                    member_at = Some(from);
                    let to = *upstream.borrow_and_update();
                    let _ = inner.send_to(&a[..n], to).await;
                }
                Ok((n, from)) = inner.recv_from(&mut b) => {
                    let from_upstream = from == *upstream.borrow();
                    if let (true, Some(member)) = (from_upstream, member_at) {
                        let _ = outer.send_to(&b[..n], member).await;
                    }
                }
            }
        }
    });
    let member = within(
        "a connection",
        crew.member.dial(&front, crew.lead_identity.pin()),
    )
    .await
    .unwrap();
    let _first_run = within("the accept", crew.lead.accept()).await.unwrap();
    let restarted = QuicEndpoint::lead(
        crew.lead_identity.clone(),
        LOOPBACK.parse().unwrap(),
        crew.pins.check(),
        ClientAdmission::PinnedOnly,
    )
    .unwrap();
    upstream_tx.send(restarted.local_addr().unwrap()).unwrap();
    // The member's next packet reaches the restarted lead, which knows no such connection.
    let (mut send, _recv) = member.open_bi().await.unwrap();
    let _ = send.send(b"still there?").await;
    let closed = within("the reset", member.closed()).await;
    assert!(
        matches!(&closed, Closed::Lost(why) if why.contains("reset")),
        "{closed:?}"
    );
    relay.abort();
}
