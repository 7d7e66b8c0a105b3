//! The QUIC transport: quinn on tokio, with the pinned mutual-TLS configurations of [`crate::tls`].
//!
//! A lead's [`QuicEndpoint`] runs one owned accept task: it takes each incoming connection attempt,
//! drives its handshake in a child task (so one slow handshake does not hold up the others; at most
//! [`MAX_HANDSHAKES`] at a time, more are refused), and queues the connections that completed for
//! [`Transport::accept`]. Dropping the endpoint aborts the accept task and with it every handshake
//! in progress. A member's endpoint only dials.
//!
//! Streams read through a [`FrameDecoder`], so a frame's length prefix is checked against the 16 MiB
//! limit before its bytes are buffered, and a bad frame stops that stream only
//! ([`STREAM_MALFORMED`]).

use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use quinn::{ConnectionError, ReadError, VarInt, WriteError};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

use super::{
    Closed, Connection, RecvFrames, SendFrames, Transport, TransportError, CLOSE_CODE,
    STREAM_MALFORMED,
};
use crate::hello::{Exporter, EXPORTER_CONTEXT, EXPORTER_LABEL, EXPORTER_LEN};
use crate::identity::Identity;
use crate::pin::Pin;
use crate::tls::{self, ClientAdmission, PeerStatus, PinCheck, SERVER_NAME};
use crate::wire::{self, FrameDecoder, WireError};

/// The most handshakes a lead drives at once; further connection attempts are refused.
pub const MAX_HANDSHAKES: usize = 64;

/// Connections whose handshake completed but that the lead has not accepted yet; handshakes wait
/// for room.
const ACCEPT_QUEUE: usize = 16;

/// The most bytes taken from a QUIC stream per read.
const READ_CHUNK: usize = 64 * 1024;

/// A crew endpoint on a UDP socket. Must be created inside a tokio runtime.
#[derive(Debug)]
pub struct QuicEndpoint {
    endpoint: quinn::Endpoint,
    identity: Arc<Identity>,
    /// The lead's pin set and the queue of accepted connections; `None` on a member.
    listener: Option<Listener>,
}

#[derive(Debug)]
struct Listener {
    accepted: tokio::sync::Mutex<mpsc::Receiver<QuicConnection>>,
    /// The accept task; aborted (with every handshake in progress) when the endpoint is dropped.
    _task: AbortOnDropHandle<()>,
    /// The admission in force; serializes server-config swaps.
    admission: Mutex<ClientAdmission>,
    /// The server configuration of each admission, built once. Every connection keeps the
    /// configuration it was accepted under (quinn and rustls hold it for the connection's life),
    /// so a configuration built afresh at each swap would stay alive once per connection: an
    /// invite and a join swap twice, and members that joined one after the other each kept a
    /// rustls configuration of their own on the lead (docs/PERFORMANCE.md, "Lead memory per
    /// member"). Built once, all connections share the two.
    configs: ServerConfigs,
}

/// The lead's two server configurations, one per [`ClientAdmission`].
struct ServerConfigs {
    pinned_only: quinn::ServerConfig,
    join_allowed: quinn::ServerConfig,
}

impl ServerConfigs {
    fn new(identity: &Identity, pins: &PinCheck) -> Result<Self, TransportError> {
        Ok(Self {
            pinned_only: tls::server_config(identity, pins.clone(), ClientAdmission::PinnedOnly)?,
            join_allowed: tls::server_config(identity, pins.clone(), ClientAdmission::JoinAllowed)?,
        })
    }

    /// The configuration of `admission` (a cheap clone: its parts are shared).
    fn of(&self, admission: ClientAdmission) -> quinn::ServerConfig {
        match admission {
            ClientAdmission::PinnedOnly => self.pinned_only.clone(),
            ClientAdmission::JoinAllowed => self.join_allowed.clone(),
        }
    }
}

impl std::fmt::Debug for ServerConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerConfigs")
    }
}

/// A quinn endpoint on `bind` whose stateless resets and connection ids derive from `identity`
/// ([`Identity::reset_key`], [`Identity::connection_id_key`]): after a restart it still knows the
/// ids of the connections it lost as its own and answers their peers' next packet with a reset
/// they recognise, so they reconnect at once.
fn endpoint(
    identity: &Identity,
    server: Option<quinn::ServerConfig>,
    bind: SocketAddr,
) -> Result<quinn::Endpoint, TransportError> {
    let mut config = quinn::EndpointConfig::default();
    config.reset_key(Arc::new(identity.reset_key()));
    let cid_key = identity.connection_id_key();
    config.cid_generator(move || {
        Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
    });
    let socket = std::net::UdpSocket::bind(bind)?;
    let runtime =
        quinn::default_runtime().ok_or_else(|| std::io::Error::other("no async runtime found"))?;
    Ok(quinn::Endpoint::new(config, server, socket, runtime)?)
}

impl QuicEndpoint {
    /// A lead listening on `bind`, presenting `identity`, admitting clients by `pins` (consulted at
    /// every handshake and by [`Connection::peer_status`]) and `admission`.
    pub fn lead(
        identity: Arc<Identity>,
        bind: SocketAddr,
        pins: PinCheck,
        admission: ClientAdmission,
    ) -> Result<Self, TransportError> {
        let configs = ServerConfigs::new(&identity, &pins)?;
        let endpoint = endpoint(&identity, Some(configs.of(admission)), bind)?;
        let (queue, accepted) = mpsc::channel(ACCEPT_QUEUE);
        let task = tokio::spawn(accept_loop(endpoint.clone(), pins.clone(), queue));
        Ok(Self {
            endpoint,
            identity,
            listener: Some(Listener {
                accepted: tokio::sync::Mutex::new(accepted),
                _task: AbortOnDropHandle::new(task),
                admission: Mutex::new(admission),
                configs,
            }),
        })
    }

    /// A member endpoint on `bind` (e.g. `0.0.0.0:0`) that dials with `identity` and accepts
    /// nothing.
    pub fn member(identity: Arc<Identity>, bind: SocketAddr) -> Result<Self, TransportError> {
        let endpoint = endpoint(&identity, None, bind)?;
        Ok(Self {
            endpoint,
            identity,
            listener: None,
        })
    }

    /// The underlying quinn endpoint.
    pub fn quinn(&self) -> &quinn::Endpoint {
        &self.endpoint
    }

    /// The TLS configuration a handshake starting now gets; `None` on a member.
    #[cfg(test)]
    pub(crate) fn handshake_crypto(&self) -> Option<Arc<dyn quinn::crypto::ServerConfig>> {
        let listener = self.listener.as_ref()?;
        let admission = *listener.admission.lock();
        Some(listener.configs.of(admission).crypto)
    }

    /// Waits until every connection of the endpoint is closed and its close has been sent (call
    /// after [`Transport::close`] before exiting, so peers see the reason).
    pub async fn wait_idle(&self) {
        self.endpoint.wait_idle().await;
    }
}

/// Accepts connection attempts until the endpoint closes; each handshake runs in a child task.
async fn accept_loop(
    endpoint: quinn::Endpoint,
    pins: PinCheck,
    queue: mpsc::Sender<QuicConnection>,
) {
    let mut handshakes = JoinSet::new();
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                if handshakes.len() >= MAX_HANDSHAKES {
                    tracing::debug!(remote = %incoming.remote_address(), "too many handshakes; refused");
                    incoming.refuse();
                    continue;
                }
                let pins = pins.clone();
                let queue = queue.clone();
                handshakes.spawn(async move {
                    let remote = incoming.remote_address();
                    let connection = match incoming.await {
                        Ok(connection) => connection,
                        Err(error) => {
                            tracing::debug!(%remote, %error, "crew handshake failed");
                            return;
                        }
                    };
                    match QuicConnection::new(connection, pins) {
                        // The lead no longer accepting is the endpoint closing: nothing to do.
                        Ok(connection) => drop(queue.send(connection).await),
                        Err(error) => tracing::debug!(%remote, %error, "crew peer unidentifiable"),
                    }
                });
            }
            Some(_) = handshakes.join_next(), if !handshakes.is_empty() => {}
        }
    }
}

impl Transport for QuicEndpoint {
    type Addr = SocketAddr;
    type Connection = QuicConnection;

    fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        Ok(self.endpoint.local_addr()?)
    }

    async fn dial(&self, addr: &SocketAddr, lead: Pin) -> Result<QuicConnection, TransportError> {
        let dial_error = |reason: String| TransportError::Dial {
            addr: addr.to_string(),
            reason,
        };
        let config = tls::client_config(&self.identity, lead)?;
        let connecting = self
            .endpoint
            .connect_with(config, *addr, SERVER_NAME)
            .map_err(|e| dial_error(e.to_string()))?;
        let connection = connecting.await.map_err(|e| dial_error(e.to_string()))?;
        let only_lead: PinCheck = Arc::new(move |pin| *pin == lead);
        let connection = QuicConnection::new(connection, only_lead)?;
        // The verifier accepted only `lead`; checked again rather than trusted.
        if connection.peer != lead {
            connection.close("wrong lead pin");
            return Err(dial_error("the lead presented another pin".to_owned()));
        }
        Ok(connection)
    }

    async fn accept(&self) -> Option<QuicConnection> {
        let listener = self.listener.as_ref()?;
        let mut accepted = listener.accepted.lock().await;
        loop {
            let connection = accepted.recv().await?;
            // Closed while queued (by the peer, or the endpoint closing): not worth handing out.
            if connection.close_reason().is_none() {
                return Some(connection);
            }
        }
    }

    fn set_admission(&self, admission: ClientAdmission) -> Result<(), TransportError> {
        let Some(listener) = &self.listener else {
            return Ok(());
        };
        let mut current = listener.admission.lock();
        if *current != admission {
            self.endpoint
                .set_server_config(Some(listener.configs.of(admission)));
            *current = admission;
        }
        Ok(())
    }

    fn close(&self, reason: &str) {
        self.endpoint
            .close(VarInt::from_u32(CLOSE_CODE), reason.as_bytes());
    }
}

/// A crew connection over QUIC.
#[derive(Clone)]
pub struct QuicConnection {
    inner: quinn::Connection,
    peer: Pin,
    pins: PinCheck,
}

impl std::fmt::Debug for QuicConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicConnection")
            .field("remote", &self.inner.remote_address())
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl QuicConnection {
    fn new(inner: quinn::Connection, pins: PinCheck) -> Result<Self, TransportError> {
        match tls::peer_pin(&inner) {
            Ok(peer) => Ok(Self { inner, peer, pins }),
            Err(e) => {
                inner.close(VarInt::from_u32(CLOSE_CODE), b"no usable certificate");
                Err(e.into())
            }
        }
    }

    /// The underlying quinn connection (for statistics, or raw streams in tests).
    pub fn quinn(&self) -> &quinn::Connection {
        &self.inner
    }

    /// The certificate (DER) the peer presented in the handshake: its pin is
    /// [`Connection::peer_pin`], so it carries the key the handshake proved the peer holds (walky
    /// checks signatures against it).
    pub fn peer_certificate(&self) -> Option<Vec<u8>> {
        let identity = self.inner.peer_identity()?;
        let certs = identity
            .downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
            .ok()?;
        match certs.as_slice() {
            [only] => Some(only.as_ref().to_vec()),
            _ => None,
        }
    }

    /// The peer's UDP address.
    pub fn remote_address(&self) -> SocketAddr {
        self.inner.remote_address()
    }

    fn halves((send, recv): (quinn::SendStream, quinn::RecvStream)) -> (QuicSend, QuicRecv) {
        (
            QuicSend { inner: send },
            QuicRecv {
                inner: recv,
                decoder: FrameDecoder::new(),
                ended: false,
            },
        )
    }
}

impl Connection for QuicConnection {
    type Send = QuicSend;
    type Recv = QuicRecv;

    async fn open_bi(&self) -> Result<(QuicSend, QuicRecv), TransportError> {
        let pair = self.inner.open_bi().await.map_err(connection_closed)?;
        Ok(Self::halves(pair))
    }

    async fn accept_bi(&self) -> Result<(QuicSend, QuicRecv), TransportError> {
        let pair = self.inner.accept_bi().await.map_err(connection_closed)?;
        Ok(Self::halves(pair))
    }

    fn peer_pin(&self) -> Pin {
        self.peer
    }

    fn peer_status(&self) -> PeerStatus {
        if (self.pins)(&self.peer) {
            PeerStatus::Pinned(self.peer)
        } else {
            PeerStatus::Unpinned(self.peer)
        }
    }

    fn exporter(&self) -> Result<Exporter, TransportError> {
        let mut out = [0u8; EXPORTER_LEN];
        self.inner
            .export_keying_material(&mut out, EXPORTER_LABEL, EXPORTER_CONTEXT)
            .map_err(|_| TransportError::Exporter)?;
        Ok(out)
    }

    fn close(&self, reason: &str) {
        self.inner
            .close(VarInt::from_u32(CLOSE_CODE), reason.as_bytes());
    }

    async fn closed(&self) -> Closed {
        closed_from(self.inner.closed().await)
    }

    fn close_reason(&self) -> Option<Closed> {
        self.inner.close_reason().map(closed_from)
    }
}

/// How a quinn connection error reads as a [`Closed`].
fn closed_from(error: ConnectionError) -> Closed {
    match error {
        ConnectionError::LocallyClosed => Closed::Locally,
        ConnectionError::ApplicationClosed(close) => {
            Closed::ByPeer(String::from_utf8_lossy(&close.reason).into_owned())
        }
        other => Closed::Lost(other.to_string()),
    }
}

fn connection_closed(error: ConnectionError) -> TransportError {
    TransportError::ConnectionClosed(closed_from(error))
}

/// The sending half of a QUIC stream.
#[derive(Debug)]
pub struct QuicSend {
    inner: quinn::SendStream,
}

impl SendFrames for QuicSend {
    async fn send(&mut self, payload: &[u8]) -> Result<(), TransportError> {
        match wire::write_frame(&mut self.inner, payload).await {
            Ok(()) => Ok(()),
            Err(WireError::Io(io)) => Err(write_error(io)),
            Err(other) => Err(TransportError::Frame(other)),
        }
    }

    fn finish(&mut self) -> Result<(), TransportError> {
        self.inner
            .finish()
            .map_err(|_| TransportError::StreamClosed)
    }

    fn reset(&mut self) -> Result<(), TransportError> {
        self.inner
            .reset(VarInt::from_u32(STREAM_MALFORMED))
            .map_err(|_| TransportError::StreamClosed)
    }
}

/// Recovers quinn's write error from the `io::Error` its `AsyncWrite` wraps it in.
fn write_error(io: std::io::Error) -> TransportError {
    match io.get_ref().and_then(|e| e.downcast_ref::<WriteError>()) {
        Some(WriteError::Stopped(_)) => TransportError::StreamStopped,
        Some(WriteError::ConnectionLost(e)) => connection_closed(e.clone()),
        Some(WriteError::ClosedStream) => TransportError::StreamClosed,
        Some(WriteError::ZeroRttRejected) | None => TransportError::Io(io),
    }
}

/// The receiving half of a QUIC stream.
#[derive(Debug)]
pub struct QuicRecv {
    inner: quinn::RecvStream,
    decoder: FrameDecoder,
    /// The peer finished the stream and every byte is in the decoder.
    ended: bool,
}

impl QuicRecv {
    fn refuse(&mut self, error: WireError) -> TransportError {
        self.stop();
        TransportError::Frame(error)
    }
}

impl RecvFrames for QuicRecv {
    async fn recv(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        loop {
            match self.decoder.pop() {
                Ok(Some(payload)) => return Ok(Some(payload)),
                Ok(None) => {}
                Err(e) => return Err(self.refuse(e)),
            }
            if self.ended {
                return if self.decoder.buffered() == 0 {
                    Ok(None)
                } else {
                    Err(self.refuse(WireError::Truncated))
                };
            }
            match self.inner.read_chunk(READ_CHUNK, true).await {
                Ok(Some(chunk)) => {
                    if let Err(e) = self.decoder.push(&chunk.bytes) {
                        return Err(self.refuse(e));
                    }
                }
                Ok(None) => self.ended = true,
                Err(ReadError::Reset(_)) => return Err(TransportError::StreamReset),
                Err(ReadError::ConnectionLost(e)) => return Err(connection_closed(e)),
                Err(ReadError::ClosedStream) => return Err(TransportError::StreamClosed),
                Err(e @ (ReadError::IllegalOrderedRead | ReadError::ZeroRttRejected)) => {
                    return Err(TransportError::Io(e.into()))
                }
            }
        }
    }

    fn stop(&mut self) {
        // Already stopped or finished: nothing left to refuse.
        drop(self.inner.stop(VarInt::from_u32(STREAM_MALFORMED)));
    }
}
