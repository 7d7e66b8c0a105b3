//! Real TLS 1.3 handshakes over quinn on loopback, with the configurations of [`super::config`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn::{Connection, ConnectionError, Endpoint};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use super::*;
use crate::identity::Identity;

const DEADLINE: Duration = Duration::from_secs(10);

/// Runs one handshake between a fresh server endpoint and a fresh client endpoint; returns both
/// sides' outcomes (client first) and the endpoints, kept alive by the caller.
async fn handshake(
    server: quinn::ServerConfig,
    client: quinn::ClientConfig,
) -> (
    Result<Connection, ConnectionError>,
    Result<Connection, ConnectionError>,
    [Endpoint; 2],
) {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server_endpoint = Endpoint::server(server, loopback).unwrap();
    let address = server_endpoint.local_addr().unwrap();
    let client_endpoint = Endpoint::client(loopback).unwrap();
    let connecting = client_endpoint
        .connect_with(client, address, SERVER_NAME)
        .unwrap();
    let accepting = async {
        let incoming = server_endpoint.accept().await.unwrap();
        incoming.await
    };
    let (client_side, server_side) =
        tokio::time::timeout(DEADLINE, async { tokio::join!(connecting, accepting) })
            .await
            .expect("the handshake neither completed nor failed in time");
    (client_side, server_side, [server_endpoint, client_endpoint])
}

/// Asserts the handshake failed `because` (a fragment of the TLS error, which both sides see): the
/// server never got a connection, and the client either failed or (in TLS 1.3 the client finishes
/// before the server has checked its certificate) is closed.
async fn assert_refused(
    client_side: Result<Connection, ConnectionError>,
    server_side: Result<Connection, ConnectionError>,
    because: &str,
) {
    let Err(error) = server_side else {
        panic!("the server accepted a connection it should have refused");
    };
    assert!(format!("{error:?}").contains(because), "{error:?}");
    if let Ok(connection) = client_side {
        let reason = tokio::time::timeout(DEADLINE, connection.closed())
            .await
            .expect("a refused client connection stayed open");
        assert!(
            matches!(
                reason,
                ConnectionError::TransportError(_) | ConnectionError::ConnectionClosed(_)
            ),
            "{reason:?}"
        );
    }
}

fn lead_config(lead: &Identity, pins: &PinSet, admission: ClientAdmission) -> quinn::ServerConfig {
    server_config(lead, pins.check(), admission).unwrap()
}

fn pinned(pins: &[Pin]) -> PinSet {
    let set = PinSet::new();
    for pin in pins {
        set.insert(*pin);
    }
    set
}

/// A certificate presented with a key that is not its own: what someone holding a copy of a
/// pinned certificate could do.
fn stolen(certificate_of: &Identity, key_of: &Identity) -> Arc<SingleCertAndKey> {
    let PrivateKeyDer::Pkcs8(key) = key_of.private_key() else {
        panic!("crew keys are PKCS#8");
    };
    let signer = rustls::crypto::ring::sign::any_eddsa_type(&PrivatePkcs8KeyDer::from(
        key.secret_pkcs8_der().to_vec(),
    ))
    .unwrap();
    Arc::new(SingleCertAndKey::from(CertifiedKey::new(
        vec![certificate_of.certificate().clone()],
        signer,
    )))
}

#[tokio::test]
async fn pinned_both_ways_succeeds_and_carries_data() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let pins = pinned(&[member.pin()]);
    let (client_side, server_side, _endpoints) = handshake(
        lead_config(&lead, &pins, ClientAdmission::PinnedOnly),
        client_config(&member, lead.pin()).unwrap(),
    )
    .await;
    let to_lead = client_side.unwrap();
    let to_member = server_side.unwrap();

    assert_eq!(peer_pin(&to_lead).unwrap(), lead.pin());
    assert_eq!(
        peer_status(&to_member, &pins.check()).unwrap(),
        PeerStatus::Pinned(member.pin())
    );
    for connection in [&to_lead, &to_member] {
        let data = connection
            .handshake_data()
            .unwrap()
            .downcast::<quinn::crypto::rustls::HandshakeData>()
            .unwrap();
        assert_eq!(data.protocol.as_deref(), Some(ALPN));
    }

    let echo = tokio::spawn(async move {
        let (mut send, mut recv) = to_member.accept_bi().await.unwrap();
        let got = recv.read_to_end(64).await.unwrap();
        send.write_all(&got).await.unwrap();
        send.finish().unwrap();
        to_member
    });
    let (mut send, mut recv) = to_lead.open_bi().await.unwrap();
    send.write_all(b"hello lead").await.unwrap();
    send.finish().unwrap();
    assert_eq!(recv.read_to_end(64).await.unwrap(), b"hello lead");
    let _to_member = echo.await.unwrap();
}

#[tokio::test]
async fn member_with_a_wrong_lead_pin_refuses() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let someone_else = Identity::generate().unwrap();
    let (client_side, server_side, _endpoints) = handshake(
        lead_config(&lead, &pinned(&[member.pin()]), ClientAdmission::PinnedOnly),
        client_config(&member, someone_else.pin()).unwrap(),
    )
    .await;
    assert!(client_side.is_err(), "the member accepted an unpinned lead");
    assert_refused(client_side, server_side, "Unpinned").await;
}

#[tokio::test]
async fn lead_without_the_member_pin_refuses() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let someone_else = Identity::generate().unwrap();
    let (client_side, server_side, _endpoints) = handshake(
        lead_config(
            &lead,
            &pinned(&[someone_else.pin()]),
            ClientAdmission::PinnedOnly,
        ),
        client_config(&member, lead.pin()).unwrap(),
    )
    .await;
    assert_refused(client_side, server_side, "Unpinned").await;
}

#[tokio::test]
async fn alpn_mismatch_fails() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let mut tls = rustls_client_config(&member, lead.pin()).unwrap();
    tls.alpn_protocols = vec![b"collie-crew/2".to_vec()];
    let (client_side, server_side, _endpoints) = handshake(
        lead_config(&lead, &pinned(&[member.pin()]), ClientAdmission::PinnedOnly),
        quic_client_config(tls).unwrap(),
    )
    .await;
    assert!(client_side.is_err());
    assert_refused(client_side, server_side, "any known protocol").await;
}

#[tokio::test]
async fn a_removed_pin_is_refused_at_the_next_handshake() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let pins = pinned(&[member.pin()]);
    let server = lead_config(&lead, &pins, ClientAdmission::PinnedOnly);
    let client = client_config(&member, lead.pin()).unwrap();
    let (client_side, server_side, _first) = handshake(server.clone(), client.clone()).await;
    client_side.unwrap();
    server_side.unwrap();

    pins.remove(&member.pin());
    let (client_side, server_side, _second) = handshake(server, client).await;
    assert_refused(client_side, server_side, "Unpinned").await;
}

#[tokio::test]
async fn join_mode_admits_an_unpinned_member_and_says_so() {
    let lead = Identity::generate().unwrap();
    let newcomer = Identity::generate().unwrap();
    let pins = PinSet::new();
    let (client_side, server_side, _endpoints) = handshake(
        lead_config(&lead, &pins, ClientAdmission::JoinAllowed),
        client_config(&newcomer, lead.pin()).unwrap(),
    )
    .await;
    let _to_lead = client_side.unwrap();
    let to_newcomer = server_side.unwrap();
    assert_eq!(
        peer_status(&to_newcomer, &pins.check()).unwrap(),
        PeerStatus::Unpinned(newcomer.pin())
    );
    pins.insert(newcomer.pin());
    assert_eq!(
        peer_status(&to_newcomer, &pins.check()).unwrap(),
        PeerStatus::Pinned(newcomer.pin())
    );
}

#[tokio::test]
async fn a_lead_presenting_a_stolen_certificate_is_refused() {
    let lead = Identity::generate().unwrap();
    let impostor = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let mut tls = rustls_server_config(
        &impostor,
        pinned(&[member.pin()]).check(),
        ClientAdmission::PinnedOnly,
    )
    .unwrap();
    tls.cert_resolver = stolen(&lead, &impostor);
    let (client_side, server_side, _endpoints) = handshake(
        quic_server_config(tls).unwrap(),
        client_config(&member, lead.pin()).unwrap(),
    )
    .await;
    assert!(
        client_side.is_err(),
        "the member accepted a forged handshake"
    );
    assert_refused(client_side, server_side, "BadSignature").await;
}

#[tokio::test]
async fn a_member_presenting_a_stolen_certificate_is_refused() {
    let lead = Identity::generate().unwrap();
    let member = Identity::generate().unwrap();
    let impostor = Identity::generate().unwrap();
    let mut tls = rustls_client_config(&impostor, lead.pin()).unwrap();
    tls.client_auth_cert_resolver = stolen(&member, &impostor);
    for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
        let (client_side, server_side, _endpoints) = handshake(
            lead_config(&lead, &pinned(&[member.pin()]), admission),
            quic_client_config(tls.clone()).unwrap(),
        )
        .await;
        assert_refused(client_side, server_side, "BadSignature").await;
    }
}

#[test]
fn keep_alive_is_below_half_the_idle_timeout() {
    assert!(KEEP_ALIVE_INTERVAL * 2 < IDLE_TIMEOUT);
}

#[test]
fn the_provider_offers_tls13_suites_only() {
    let provider = crypto_provider();
    assert!(!provider.cipher_suites.is_empty());
    assert!(provider
        .cipher_suites
        .iter()
        .all(|suite| suite.version() == &rustls::version::TLS13));
}
