//! Builders for the crew's rustls and quinn configurations: TLS 1.3 only, ALPN [`ALPN`] on both
//! sides, client certificates required, the [`PinnedVerifier`] on both sides, no session
//! resumption, and a QUIC transport whose keep-alive comes well inside the idle timeout.
//!
//! The rustls builders are separate from the quinn wrappers so a caller (or a test) can inspect or
//! adjust the TLS configuration before it is frozen into QUIC.

use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::client::Resumption;
use rustls::server::NoServerSessionStorage;

use crate::identity::Identity;
use crate::pin::Pin;
use crate::tls::verifier::{ClientAdmission, PinnedVerifier};
use crate::tls::{crypto_provider, PinCheck, TlsError, ALPN};

const IDLE_TIMEOUT_MS: u32 = 30_000;

/// A connection silent this long is closed (on both sides; QUIC uses the smaller of the two).
pub const IDLE_TIMEOUT: Duration = Duration::from_millis(IDLE_TIMEOUT_MS as u64);

/// How often an otherwise idle side sends a keep-alive: under half the idle timeout, so one lost
/// keep-alive does not end the connection.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

const _: () = assert!(KEEP_ALIVE_INTERVAL.as_millis() * 2 < IDLE_TIMEOUT.as_millis());

/// The rustls configuration of a member dialling the lead: presents `identity`, accepts only the
/// lead's pin.
pub fn rustls_client_config(
    identity: &Identity,
    lead: Pin,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = crypto_provider();
    let verifier = PinnedVerifier::trusting_lead(lead, &provider);
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_auth_cert(vec![identity.certificate().clone()], identity.private_key())?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    // A resumed session skips certificate verification; always do a full handshake.
    config.resumption = Resumption::disabled();
    config.enable_early_data = false;
    Ok(config)
}

/// The rustls configuration of the lead: presents `identity`, requires a client certificate and
/// admits clients by `pins` (consulted at every handshake) and `admission`.
pub fn rustls_server_config(
    identity: &Identity,
    pins: PinCheck,
    admission: ClientAdmission,
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = crypto_provider();
    let verifier = PinnedVerifier::trusting_members(pins, admission, &provider);
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(vec![identity.certificate().clone()], identity.private_key())?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    // No tickets, no session cache: every connection verifies the client's pin afresh.
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    config.max_early_data_size = 0;
    Ok(config)
}

/// What one stream may have in flight towards this side before the sender waits.
pub const STREAM_WINDOW: u32 = 1024 * 1024;

/// What one connection may have in flight towards this side, over all its streams. With the
/// lead's per-member stream limit this bounds what a member (or a slow phone behind it) can make
/// the lead hold.
pub const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// Streams the lead may have open towards a member at once: its relay streams, whose per-member
/// request and stream limits (`relay::client::Limits`, 64 + 256) fit under this with room for the
/// streams of requests that timed out and are still being closed. Were it below them, a request
/// the relay client admitted would wait for QUIC's stream credit and fail as `member unreachable`
/// instead of being refused at once.
pub const MAX_STREAMS: u32 = 384;

/// Streams a member may have open towards the lead at once: the link's heartbeat stream and its
/// uplinks (walky sends and inbox reads), which the lead serves through a bounded queue anyway. A
/// member past this waits for streams to end (QUIC flow control; quinn gives the allowance back
/// once an eighth of it is free), it is not refused.
pub const LEAD_MAX_STREAMS: u32 = 32;

/// The QUIC transport parameters a member's side of a link uses.
///
/// The windows are limits, not allocations; the stream limit is, though: quinn reserves the
/// bookkeeping for every stream the peer may open as soon as the connection exists.
pub fn transport_config() -> TransportConfig {
    let mut transport = TransportConfig::default();
    transport.max_idle_timeout(Some(IdleTimeout::from(VarInt::from_u32(IDLE_TIMEOUT_MS))));
    transport.keep_alive_interval(Some(KEEP_ALIVE_INTERVAL));
    transport.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
    transport.receive_window(VarInt::from_u32(CONNECTION_WINDOW));
    transport.send_window(u64::from(CONNECTION_WINDOW));
    transport.max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS));
    transport.max_concurrent_uni_streams(VarInt::from_u32(0));
    transport
}

/// The lead's side of a link: one connection per member, mostly heartbeats, so what it keeps per
/// connection is what the lead pays per member (docs/PERFORMANCE.md, "Lead memory"). It reserves
/// bookkeeping for [`LEAD_MAX_STREAMS`] member-opened streams instead of [`MAX_STREAMS`]: about
/// 84 bytes a stream, 19 KiB of the 50 KiB quinn and rustls held per connection before.
pub fn lead_transport_config() -> TransportConfig {
    let mut transport = transport_config();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(LEAD_MAX_STREAMS));
    transport
}

/// Wraps a member's rustls configuration for quinn, with [`transport_config`].
pub fn quic_client_config(tls: rustls::ClientConfig) -> Result<quinn::ClientConfig, TlsError> {
    let crypto = QuicClientConfig::try_from(Arc::new(tls))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport_config()));
    Ok(config)
}

/// Wraps the lead's rustls configuration for quinn, with [`lead_transport_config`].
pub fn quic_server_config(tls: rustls::ServerConfig) -> Result<quinn::ServerConfig, TlsError> {
    let crypto = QuicServerConfig::try_from(Arc::new(tls))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(lead_transport_config()));
    Ok(config)
}

/// The quinn configuration of a member dialling the lead whose pin is `lead`. Dial with
/// [`SERVER_NAME`](crate::tls::SERVER_NAME).
pub fn client_config(identity: &Identity, lead: Pin) -> Result<quinn::ClientConfig, TlsError> {
    quic_client_config(rustls_client_config(identity, lead)?)
}

/// The quinn configuration of the lead.
pub fn server_config(
    identity: &Identity,
    pins: PinCheck,
    admission: ClientAdmission,
) -> Result<quinn::ServerConfig, TlsError> {
    quic_server_config(rustls_server_config(identity, pins, admission)?)
}
