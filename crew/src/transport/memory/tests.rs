//! The in-memory transport: the same exchange as over QUIC, the pin checks a dial stands in for,
//! and the injected faults.

use super::*;
use crate::relay::RelayRequest;
use crate::tls::PinSet;
use crate::transport::tests::{
    hello_and_relay, oversized_frame_is_refused, oversized_header, within,
};

const LEAD: &str = "laptop";
const MEMBER: &str = "web-1";

fn pin(n: u8) -> Pin {
    Pin::from([n; 32])
}

struct Net {
    network: MemoryNetwork,
    pins: PinSet,
    lead: MemoryEndpoint,
    member: MemoryEndpoint,
}

impl Net {
    fn new(pinned: bool, admission: ClientAdmission) -> Self {
        let network = MemoryNetwork::new();
        let pins = PinSet::new();
        if pinned {
            pins.insert(pin(2));
        }
        let lead = network.lead(LEAD, pin(1), pins.check(), admission).unwrap();
        let member = network.member(MEMBER, pin(2)).unwrap();
        Self {
            network,
            pins,
            lead,
            member,
        }
    }

    async fn connect(&self) -> (MemoryConnection, MemoryConnection) {
        let member = self.member.dial(&LEAD.to_owned(), pin(1)).await.unwrap();
        let lead = within("the accept", self.lead.accept()).await.unwrap();
        (lead, member)
    }
}

#[tokio::test]
async fn memory_carries_the_hello_and_a_relay_exchange() {
    let net = Net::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = net.connect().await;
    assert_eq!(lead.peer_status(), PeerStatus::Pinned(pin(2)));
    assert_eq!(member.peer_status(), PeerStatus::Pinned(pin(1)));
    assert_eq!(lead.peer_name(), MEMBER);
    hello_and_relay(&lead, &member).await;

    let (lead_2, member_2) = net.connect().await;
    assert_eq!(lead_2.exporter().unwrap(), member_2.exporter().unwrap());
    assert_ne!(lead_2.exporter().unwrap(), lead.exporter().unwrap());
    hello_and_relay(&lead_2, &member_2).await;
    assert_eq!(net.network.connection_count(), 2);

    net.pins.remove(&pin(2));
    assert_eq!(lead.peer_status(), PeerStatus::Unpinned(pin(2)));
}

#[tokio::test]
async fn memory_an_oversized_or_garbage_frame_closes_only_its_stream() {
    let net = Net::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = net.connect().await;

    let (mut raw, _raw_recv) = member.open_bi().await.unwrap();
    raw.send_raw(&oversized_header()).await.unwrap();
    let (_first_send, mut first_recv) = lead.accept_bi().await.unwrap();
    oversized_frame_is_refused(&mut first_recv).await;
    assert!(matches!(
        raw.send_raw(b"more").await,
        Err(TransportError::StreamStopped)
    ));

    // Garbage that frames correctly but does not decode.
    let (mut send, _recv) = member.open_bi().await.unwrap();
    send.send(&[0xff; 3]).await.unwrap();
    let (_lead_send, mut lead_recv) = lead.accept_bi().await.unwrap();
    assert!(matches!(
        lead_recv.recv_message::<RelayRequest>().await,
        Err(TransportError::Frame(WireError::Malformed(_)))
    ));
    assert!(matches!(
        send.send(b"more").await,
        Err(TransportError::StreamStopped)
    ));

    // A stream finished inside a frame is truncated.
    let (mut send, _recv) = member.open_bi().await.unwrap();
    send.send_raw(&[0, 0, 0, 9, 1, 2]).await.unwrap();
    send.finish().unwrap();
    let (_lead_send, mut lead_recv) = lead.accept_bi().await.unwrap();
    assert!(matches!(
        lead_recv.recv().await,
        Err(TransportError::Frame(WireError::Truncated))
    ));

    // A frame split over many chunks arrives whole, and the connection is untouched.
    let (mut send, mut recv) = member.open_bi().await.unwrap();
    let big = vec![7u8; 3 * PIPE_CHUNK + 5];
    let (mut lead_send, mut lead_recv) = lead.accept_bi().await.unwrap();
    let (sent, received) = tokio::join!(send.send(&big), lead_recv.recv());
    sent.unwrap();
    assert_eq!(received.unwrap().unwrap(), big);
    lead_send.send(b"ok").await.unwrap();
    assert_eq!(recv.recv().await.unwrap().unwrap(), b"ok");
    assert!(lead.close_reason().is_none());

    // A reset is seen as such.
    lead_send.reset().unwrap();
    assert!(matches!(
        recv.recv().await,
        Err(TransportError::StreamReset)
    ));
}

#[tokio::test]
async fn memory_a_partition_ends_connections_and_dials_until_healed() {
    let net = Net::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = net.connect().await;
    let (mut send, mut recv) = member.open_bi().await.unwrap();
    send.send(b"hello").await.unwrap();
    let (_lead_send, mut lead_recv) = lead.accept_bi().await.unwrap();
    assert_eq!(lead_recv.recv().await.unwrap().unwrap(), b"hello");

    // A receive waiting when the partition comes ends.
    let waiting = recv.recv();
    let (received, ()) = tokio::join!(waiting, async { net.network.partition(MEMBER, LEAD) });
    assert!(matches!(
        received,
        Err(TransportError::ConnectionClosed(Closed::Lost(ref why))) if why == "partitioned"
    ));
    assert_eq!(
        within("the loss", lead.closed()).await,
        Closed::Lost("partitioned".to_owned())
    );
    assert!(matches!(
        lead_recv.recv().await,
        Err(TransportError::ConnectionClosed(_))
    ));
    assert!(matches!(
        net.member.dial(&LEAD.to_owned(), pin(1)).await,
        Err(TransportError::Dial { .. })
    ));
    assert_eq!(net.network.connection_count(), 0);

    net.network.heal(LEAD, MEMBER);
    let (lead, member) = net.connect().await;
    hello_and_relay(&lead, &member).await;

    // A dropped connection can be redialled at once.
    assert_eq!(net.network.disconnect(LEAD, MEMBER), 1);
    assert!(matches!(member.closed().await, Closed::Lost(_)));
    let (lead, member) = net.connect().await;

    // A lead that refuses dials.
    net.network.refuse_dials(LEAD, true);
    assert!(net.member.dial(&LEAD.to_owned(), pin(1)).await.is_err());
    net.network.refuse_dials(LEAD, false);
    drop((lead, member));
    net.connect().await;
}

#[tokio::test]
async fn memory_dials_check_pins_like_the_tls_handshake() {
    let net = Net::new(false, ClientAdmission::PinnedOnly);
    // Unpinned and the lead admits pinned members only.
    assert!(matches!(
        net.member.dial(&LEAD.to_owned(), pin(1)).await,
        Err(TransportError::Dial { .. })
    ));
    // Join mode lets it in, reported unpinned.
    net.lead
        .set_admission(ClientAdmission::JoinAllowed)
        .unwrap();
    let (lead, _member) = net.connect().await;
    assert_eq!(lead.peer_status(), PeerStatus::Unpinned(pin(2)));
    // The wrong lead pin, an unknown address, a member that does not listen.
    for (addr, lead_pin) in [(LEAD, pin(9)), ("nowhere", pin(1)), (MEMBER, pin(2))] {
        assert!(matches!(
            net.lead.dial(&addr.to_owned(), lead_pin).await,
            Err(TransportError::Dial { .. })
        ));
    }
    // Names are unique while registered.
    assert!(net.network.member(MEMBER, pin(3)).is_err());
}

#[tokio::test]
async fn memory_close_reasons_reach_the_peer() {
    let net = Net::new(true, ClientAdmission::PinnedOnly);
    let (lead, member) = net.connect().await;
    lead.close("member removed");
    assert_eq!(
        member.closed().await,
        Closed::ByPeer("member removed".to_owned())
    );
    assert_eq!(lead.close_reason(), Some(Closed::Locally));
    assert!(matches!(
        member.open_bi().await,
        Err(TransportError::ConnectionClosed(Closed::ByPeer(_)))
    ));

    // Dropping every handle of a side closes with an empty reason.
    let (lead, member) = net.connect().await;
    drop(lead);
    assert_eq!(member.closed().await, Closed::ByPeer(String::new()));

    // Closing the endpoint ends its connections and its accepting.
    let (_lead, member) = net.connect().await;
    net.lead.close("lead shutting down");
    assert_eq!(
        member.closed().await,
        Closed::ByPeer("lead shutting down".to_owned())
    );
    assert!(net.lead.accept().await.is_none());
    assert!(net.member.dial(&LEAD.to_owned(), pin(1)).await.is_err());

    // A dropped endpoint frees its name (a restart).
    drop(net.member);
    assert!(net.network.member(MEMBER, pin(2)).is_ok());
}
