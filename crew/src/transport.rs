//! The crew's transports: how a member reaches the lead and how frames travel between them, behind
//! a few small traits so that the link code runs unchanged over real QUIC ([`quic`]) and over an
//! in-memory network for tests and the simulations (`memory`, behind the `test-utils` feature).
//!
//! **Shape.** A [`Transport`] is one endpoint: a member [`dial`](Transport::dial)s the lead's
//! address with the lead's pin, the lead [`accept`](Transport::accept)s. Either yields a
//! [`Connection`]: a cloneable handle that opens and accepts bi-directional streams, tells who the
//! peer is ([`Connection::peer_pin`], [`Connection::peer_status`], re-evaluated at each call so
//! that an unpin applies at once), gives the channel-binding value for the hello proof
//! ([`Connection::exporter`]) and closes with a reason the peer sees. A stream is a pair of halves,
//! [`SendFrames`] and [`RecvFrames`], that carry whole frames (`crate::wire`): the transports do
//! the framing, so no caller ever touches a length prefix, and the one frame decoder of the crate
//! ([`FrameDecoder`](crate::wire::FrameDecoder)) applies the 16 MiB limit before anything is
//! allocated, on both transports alike.
//!
//! **Frames, not byte streams.** Halves carry frames rather than exposing `AsyncRead`/`AsyncWrite`
//! so that the in-memory transport can stay a plain channel of bytes with no poll-level code, and
//! so that [`RecvFrames::recv`] is cancel-safe on both transports (it keeps partial frames in its
//! decoder; a `select!` on it and a timer loses nothing). [`SendFrames::send`] is not cancel-safe:
//! a send abandoned half-way leaves the stream out of step, so drop the stream then.
//!
//! **Errors are per stream.** A malformed or oversized frame makes `recv` fail with
//! [`TransportError::Frame`] and stops that stream (the peer's next send on it fails with
//! [`TransportError::StreamStopped`]); the connection and every other stream go on (SPEC §8: a
//! malformed frame closes the stream, never the bridge). Only [`Connection::close`], the peer, the
//! network or the idle timeout end a connection; every operation on it then fails with
//! [`TransportError::ConnectionClosed`], saying [`Closed`] how.
//!
//! **Streams appear on first frame.** With QUIC the peer learns of a stream only when data arrives
//! on it, so the side that opens a stream sends first (the member's opening, the lead's request).
//! The in-memory transport delivers a stream at open, which is indistinguishable for code that
//! follows that rule.
//!
//! **Static dispatch.** The traits use `async fn`-style methods returning `impl Future + Send`, so
//! the link code is generic over `T: Transport` and its tasks can be spawned. Nothing needs `dyn`
//! today; a boxed adapter can be added when something does.

pub mod quic;

#[cfg(feature = "test-utils")]
pub mod memory;

#[cfg(test)]
mod tests;

use std::fmt;
use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::hello::Exporter;
use crate::pin::Pin;
use crate::tls::{ClientAdmission, PeerStatus, TlsError};
use crate::wire::{self, WireError};

/// The application error code a stream is stopped with after a malformed or oversized frame.
pub const STREAM_MALFORMED: u32 = 1;

/// The application error code of every connection close; the reason text says why.
pub const CLOSE_CODE: u32 = 0;

/// How a connection ended, as one side sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Closed {
    /// This side closed it ([`Connection::close`], the endpoint closing, or every handle dropped).
    Locally,
    /// The peer closed it, with this reason (empty if the peer just dropped it).
    ByPeer(String),
    /// It was lost: idle timeout, reset, TLS or protocol failure, or (in memory) a network fault.
    Lost(String),
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Closed::Locally => f.write_str("closed by this side"),
            Closed::ByPeer(reason) if reason.is_empty() => f.write_str("closed by the peer"),
            Closed::ByPeer(reason) => write!(f, "closed by the peer: {reason}"),
            Closed::Lost(why) => write!(f, "connection lost: {why}"),
        }
    }
}

/// Transport failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A malformed or oversized frame: the stream was stopped, the connection goes on. Also a value
    /// too large to send (nothing was sent).
    #[error("frame refused: {0}")]
    Frame(WireError),
    /// The peer stopped reading this stream (e.g. it refused one of our frames).
    #[error("stream stopped by the peer")]
    StreamStopped,
    /// The peer abandoned this stream.
    #[error("stream reset by the peer")]
    StreamReset,
    /// This side already finished, reset or stopped the stream.
    #[error("stream already closed")]
    StreamClosed,
    /// The connection has ended.
    #[error("{0}")]
    ConnectionClosed(Closed),
    /// A dial did not produce a connection (unreachable, refused, wrong pin on either side).
    #[error("cannot connect to {addr}: {reason}")]
    Dial {
        /// The address dialled.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The endpoint was closed (or, in memory, its name is taken).
    #[error("endpoint closed")]
    EndpointClosed,
    /// Building a TLS configuration or identifying the peer failed.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The TLS exporter value could not be derived.
    #[error("cannot derive the TLS exporter value")]
    Exporter,
    /// Binding a socket or another local I/O failure.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// One endpoint of the crew network: a member dials, the lead accepts.
pub trait Transport: Send + Sync + 'static {
    /// Where an endpoint is found: a socket address for QUIC, a name in memory.
    type Addr: Clone + fmt::Debug + fmt::Display + Send + Sync + 'static;
    /// The connections this transport makes.
    type Connection: Connection;

    /// This endpoint's own address (for QUIC, with the port the OS chose).
    fn local_addr(&self) -> Result<Self::Addr, TransportError>;

    /// Connects to the lead at `addr`, accepting it only if its certificate's pin is `lead` and
    /// presenting this endpoint's identity. Fails with [`TransportError::Dial`].
    fn dial(
        &self,
        addr: &Self::Addr,
        lead: Pin,
    ) -> impl Future<Output = Result<Self::Connection, TransportError>> + Send;

    /// The next connection whose handshake completed; `None` once the endpoint is closed (and at
    /// once on an endpoint that does not listen). Handshakes that fail are not reported.
    fn accept(&self) -> impl Future<Output = Option<Self::Connection>> + Send;

    /// Changes who may finish a handshake with this (listening) endpoint, from the next handshake
    /// on (see [`crate::tls`] on joining). A no-op on an endpoint that does not listen.
    fn set_admission(&self, admission: ClientAdmission) -> Result<(), TransportError>;

    /// Closes every connection of the endpoint with `reason` and stops accepting.
    fn close(&self, reason: &str);
}

/// An established connection. Clones are handles to the same connection; when the last handle
/// of a side is dropped the connection closes (the peer sees [`Closed::ByPeer`] with an empty
/// reason).
pub trait Connection: Clone + fmt::Debug + Send + Sync + 'static {
    /// The sending half of a stream.
    type Send: SendFrames;
    /// The receiving half of a stream.
    type Recv: RecvFrames;

    /// Opens a bi-directional stream. Send on it first: QUIC shows the peer the stream only when
    /// its first bytes arrive.
    fn open_bi(
        &self,
    ) -> impl Future<Output = Result<(Self::Send, Self::Recv), TransportError>> + Send;

    /// The next stream the peer opened.
    fn accept_bi(
        &self,
    ) -> impl Future<Output = Result<(Self::Send, Self::Recv), TransportError>> + Send;

    /// The pin of the certificate the peer presented.
    fn peer_pin(&self) -> Pin;

    /// Whether the peer is pinned now. On the lead this re-reads the pin set, so a member removed
    /// since the handshake reports [`PeerStatus::Unpinned`]; on a member the lead is always the
    /// pin it dialled.
    fn peer_status(&self) -> PeerStatus;

    /// The connection's channel-binding value for the hello proof: with QUIC the TLS exporter
    /// over [`EXPORTER_LABEL`](crate::hello::EXPORTER_LABEL) and
    /// [`EXPORTER_CONTEXT`](crate::hello::EXPORTER_CONTEXT). Equal on both sides of one connection,
    /// different on any other.
    fn exporter(&self) -> Result<Exporter, TransportError>;

    /// Closes the connection at once; the peer sees `reason` ([`Closed::ByPeer`]). Streams of both
    /// sides fail from then on; unread data is lost.
    fn close(&self, reason: &str);

    /// Waits until the connection has ended, and says how.
    fn closed(&self) -> impl Future<Output = Closed> + Send;

    /// How the connection ended, if it has.
    fn close_reason(&self) -> Option<Closed>;
}

/// The sending half of a stream.
pub trait SendFrames: fmt::Debug + Send + Sync + 'static {
    /// Sends one frame carrying `payload` (at most [`MAX_FRAME`](wire::MAX_FRAME) bytes; a larger
    /// payload is refused with [`TransportError::Frame`] before anything is sent). Waits while the
    /// peer's receive window is full. Not cancel-safe: drop the stream after abandoning a send.
    fn send(&mut self, payload: &[u8]) -> impl Future<Output = Result<(), TransportError>> + Send;

    /// Ends the stream gracefully: the peer's `recv` returns `None` after the frames already sent.
    /// Dropping the half does the same.
    fn finish(&mut self) -> Result<(), TransportError>;

    /// Abandons the stream: the peer's `recv` fails with [`TransportError::StreamReset`].
    fn reset(&mut self) -> Result<(), TransportError>;

    /// Encodes `value` (`crate::wire`) and sends it as one frame.
    fn send_message<T: Serialize + Sync>(
        &mut self,
        value: &T,
    ) -> impl Future<Output = Result<(), TransportError>> + Send {
        async move {
            let payload = wire::encode(value).map_err(TransportError::Frame)?;
            self.send(&payload).await
        }
    }
}

/// The receiving half of a stream.
pub trait RecvFrames: fmt::Debug + Send + Sync + 'static {
    /// The next frame's payload; `None` when the peer finished the stream between frames.
    ///
    /// A malformed or oversized frame, or the stream ending inside a frame, fails with
    /// [`TransportError::Frame`] and stops the stream. Cancel-safe: bytes of a partly received
    /// frame are kept for the next call.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Vec<u8>>, TransportError>> + Send;

    /// Stops the stream: unread frames are discarded and the peer's sends fail with
    /// [`TransportError::StreamStopped`].
    fn stop(&mut self);

    /// Receives one frame and decodes it as a `T`. A frame that does not decode is malformed: the
    /// stream is stopped and the call fails with [`TransportError::Frame`].
    fn recv_message<T: DeserializeOwned>(
        &mut self,
    ) -> impl Future<Output = Result<Option<T>, TransportError>> + Send {
        async move {
            let Some(payload) = self.recv().await? else {
                return Ok(None);
            };
            match wire::decode(&payload) {
                Ok(value) => Ok(Some(value)),
                Err(e) => {
                    self.stop();
                    Err(TransportError::Frame(e))
                }
            }
        }
    }
}
