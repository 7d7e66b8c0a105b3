//! The in-memory transport, for tests and the simulations (feature `test-utils`).
//!
//! A [`MemoryNetwork`] is a registry of endpoints by name. [`MemoryNetwork::lead`] registers a
//! listening endpoint, [`MemoryNetwork::member`] one that only dials. A dial performs the checks the
//! TLS handshake would: the lead's pin must be the one dialled, and a lead admitting
//! [`ClientAdmission::PinnedOnly`] refuses a dialer its pin set does not hold. Endpoints present
//! a [`Pin`] rather than a certificate — nothing here signs — so a simulation can create thousands
//! of machines cheaply.
//!
//! A stream direction is a bounded channel of byte chunks ([`PIPE_CHUNKS`] of at most
//! [`PIPE_CHUNK`] bytes, like a QUIC receive window), read through the same
//! [`FrameDecoder`] as QUIC, so size limits, truncation and garbage behave as on the wire;
//! [`MemorySend::send_raw`] puts arbitrary bytes on a stream to test that. The exporter value is
//! a hash of the connection's number and both pins: deterministic, equal on both ends, different
//! for every connection.
//!
//! **Faults** are explicit calls, so a seeded simulation replays exactly:
//! [`partition`](MemoryNetwork::partition) ends the connections between two endpoints and makes
//! dials between them fail until [`heal`](MemoryNetwork::heal);
//! [`disconnect`](MemoryNetwork::disconnect) ends the current connections only;
//! [`refuse_dials`](MemoryNetwork::refuse_dials) makes dials to an endpoint fail (a lead that is
//! down). A lost connection fails at once ([`Closed::Lost`]) — the moment a real link would notice
//! at its idle timeout; a simulation that wants the delay waits before calling the fault.
//!
//! Unlike quinn, a connection closes when its last [`MemoryConnection`] handle is dropped even if
//! streams of it are still held: keep a handle while using its streams.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch};

use super::{Closed, Connection, RecvFrames, SendFrames, Transport, TransportError};
use crate::hello::{Exporter, EXPORTER_CONTEXT, EXPORTER_LABEL};
use crate::pin::Pin;
use crate::tls::{ClientAdmission, PeerStatus, PinCheck};
use crate::wire::{self, FrameDecoder, WireError, MAX_FRAME};

/// The most bytes one chunk of a stream carries.
pub const PIPE_CHUNK: usize = 64 * 1024;

/// Chunks a stream direction holds before the sender waits (a 1 MiB window).
pub const PIPE_CHUNKS: usize = 16;

/// Connections a lead holds before it accepts them; further dials are refused.
pub const ACCEPT_QUEUE: usize = 64;

/// Streams a side holds before it accepts them; further opens wait.
pub const STREAM_QUEUE: usize = 64;

/// A simulated network of crew endpoints. Clones share the network.
#[derive(Debug, Clone, Default)]
pub struct MemoryNetwork {
    state: Arc<Mutex<NetState>>,
}

#[derive(Debug, Default)]
struct NetState {
    endpoints: HashMap<String, Registered>,
    /// Unordered pairs of names, stored smaller first.
    partitions: BTreeSet<(String, String)>,
    refusing: BTreeSet<String>,
    links: Vec<Weak<Link>>,
    next_id: u64,
}

#[derive(Debug)]
struct Registered {
    id: u64,
    pin: Pin,
    listener: Option<ListenerEntry>,
}

struct ListenerEntry {
    pins: PinCheck,
    admission: ClientAdmission,
    queue: mpsc::Sender<MemoryConnection>,
}

impl std::fmt::Debug for ListenerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerEntry")
            .field("admission", &self.admission)
            .finish_non_exhaustive()
    }
}

fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

impl NetState {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The live links matching `pred`; forgets dead ones.
    fn links_where(&mut self, pred: impl Fn(&Link) -> bool) -> Vec<Arc<Link>> {
        self.links.retain(|weak| weak.strong_count() > 0);
        self.links
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|link| link.closure.borrow().is_none() && pred(link))
            .collect()
    }
}

impl MemoryNetwork {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a lead named `name` presenting `pin`, admitting dialers by `pins` and `admission`.
    /// Fails if the name is taken.
    pub fn lead(
        &self,
        name: &str,
        pin: Pin,
        pins: PinCheck,
        admission: ClientAdmission,
    ) -> Result<MemoryEndpoint, TransportError> {
        let (queue, accepted) = mpsc::channel(ACCEPT_QUEUE);
        let listener = ListenerEntry {
            pins,
            admission,
            queue,
        };
        self.register(name, pin, Some(listener), Some(accepted))
    }

    /// Registers a member named `name` presenting `pin`; it dials and accepts nothing. Fails if the
    /// name is taken.
    pub fn member(&self, name: &str, pin: Pin) -> Result<MemoryEndpoint, TransportError> {
        self.register(name, pin, None, None)
    }

    fn register(
        &self,
        name: &str,
        pin: Pin,
        listener: Option<ListenerEntry>,
        accepted: Option<mpsc::Receiver<MemoryConnection>>,
    ) -> Result<MemoryEndpoint, TransportError> {
        let mut state = self.state.lock();
        if state.endpoints.contains_key(name) {
            return Err(std::io::Error::from(std::io::ErrorKind::AddrInUse).into());
        }
        let id = state.next_id();
        state
            .endpoints
            .insert(name.to_owned(), Registered { id, pin, listener });
        Ok(MemoryEndpoint {
            network: self.clone(),
            name: name.to_owned(),
            id,
            pin,
            accepted: accepted.map(tokio::sync::Mutex::new),
            closed: AtomicBool::new(false),
        })
    }

    /// Cuts `a` off from `b`: their connections are lost and dials between them fail until
    /// [`heal`](Self::heal).
    pub fn partition(&self, a: &str, b: &str) {
        let links = {
            let mut state = self.state.lock();
            state.partitions.insert(pair(a, b));
            state.links_where(|link| link.joins(a, b))
        };
        for link in links {
            link.close(None, "partitioned");
        }
    }

    /// Ends the partition between `a` and `b`.
    pub fn heal(&self, a: &str, b: &str) {
        self.state.lock().partitions.remove(&pair(a, b));
    }

    /// Ends every partition.
    pub fn heal_all(&self) {
        self.state.lock().partitions.clear();
    }

    /// Ends the current connections between `a` and `b` (as lost); new dials succeed. Returns how
    /// many were ended.
    pub fn disconnect(&self, a: &str, b: &str) -> usize {
        let links = self.state.lock().links_where(|link| link.joins(a, b));
        for link in &links {
            link.close(None, "connection dropped");
        }
        links.len()
    }

    /// Makes dials to `name` fail (`true`) or work again (`false`).
    pub fn refuse_dials(&self, name: &str, refuse: bool) {
        let mut state = self.state.lock();
        if refuse {
            state.refusing.insert(name.to_owned());
        } else {
            state.refusing.remove(name);
        }
    }

    /// Open connections on the network.
    pub fn connection_count(&self) -> usize {
        self.state.lock().links_where(|_| true).len()
    }
}

/// An endpoint of a [`MemoryNetwork`]; its address is its name. Dropping it frees the name (its
/// connections live on, as with quinn); [`Transport::close`] also ends them.
#[derive(Debug)]
pub struct MemoryEndpoint {
    network: MemoryNetwork,
    name: String,
    id: u64,
    pin: Pin,
    accepted: Option<tokio::sync::Mutex<mpsc::Receiver<MemoryConnection>>>,
    closed: AtomicBool,
}

impl MemoryEndpoint {
    /// The pin this endpoint presents.
    pub fn pin(&self) -> Pin {
        self.pin
    }

    fn unregister(&self) {
        let mut state = self.network.state.lock();
        if state.endpoints.get(&self.name).map(|r| r.id) == Some(self.id) {
            state.endpoints.remove(&self.name);
        }
    }

    fn dial_now(&self, addr: &str, lead: Pin) -> Result<MemoryConnection, TransportError> {
        let fail = |reason: &str| TransportError::Dial {
            addr: addr.to_owned(),
            reason: reason.to_owned(),
        };
        if self.closed.load(Ordering::Acquire) {
            return Err(TransportError::EndpointClosed);
        }
        let (target_id, target_pin, pins, admission, queue) = {
            let state = self.network.state.lock();
            if state.partitions.contains(&pair(&self.name, addr)) {
                return Err(fail("unreachable (partitioned)"));
            }
            if state.refusing.contains(addr) {
                return Err(fail("refused"));
            }
            let Some(target) = state.endpoints.get(addr) else {
                return Err(fail("no such endpoint"));
            };
            let Some(listener) = &target.listener else {
                return Err(fail("not listening"));
            };
            (
                target.id,
                target.pin,
                listener.pins.clone(),
                listener.admission,
                listener.queue.clone(),
            )
        };
        // What the pinned verifiers would refuse in the TLS handshake.
        if target_pin != lead {
            return Err(fail("TLS: the lead presented another pin"));
        }
        if admission == ClientAdmission::PinnedOnly && !pins(&self.pin) {
            return Err(fail("TLS: the lead does not pin this endpoint"));
        }
        let link = {
            let mut state = self.network.state.lock();
            let id = state.next_id();
            let link = Link::new(
                id,
                [self.name.clone(), addr.to_owned()],
                [self.id, target_id],
                [self.pin, target_pin],
            );
            state.links.push(Arc::downgrade(&link.0));
            link
        };
        let (link, [dialer_streams, listener_streams]) = link;
        let dialer = MemoryConnection::new(link.clone(), Side::Dialer, dialer_streams, {
            let only_lead: PinCheck = Arc::new(move |pin| *pin == lead);
            only_lead
        });
        let listener = MemoryConnection::new(link, Side::Listener, listener_streams, pins);
        queue
            .try_send(listener)
            .map_err(|_| fail("the lead's accept queue is full"))?;
        Ok(dialer)
    }
}

impl Drop for MemoryEndpoint {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl Transport for MemoryEndpoint {
    type Addr = String;
    type Connection = MemoryConnection;

    fn local_addr(&self) -> Result<String, TransportError> {
        Ok(self.name.clone())
    }

    async fn dial(&self, addr: &String, lead: Pin) -> Result<MemoryConnection, TransportError> {
        self.dial_now(addr, lead)
    }

    async fn accept(&self) -> Option<MemoryConnection> {
        let accepted = self.accepted.as_ref()?;
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let connection = accepted.lock().await.recv().await?;
        // Queued before the endpoint closed: already ended, not handed out.
        (!self.closed.load(Ordering::Acquire)).then_some(connection)
    }

    fn set_admission(&self, admission: ClientAdmission) -> Result<(), TransportError> {
        let mut state = self.network.state.lock();
        if let Some(registered) = state.endpoints.get_mut(&self.name) {
            if registered.id == self.id {
                if let Some(listener) = &mut registered.listener {
                    listener.admission = admission;
                }
            }
        }
        Ok(())
    }

    fn close(&self, reason: &str) {
        self.closed.store(true, Ordering::Release);
        self.unregister();
        let links = self
            .network
            .state
            .lock()
            .links_where(|link| link.endpoints.contains(&self.id));
        for link in links {
            let side = if link.endpoints[0] == self.id {
                Side::Dialer
            } else {
                Side::Listener
            };
            link.close(Some(side), reason);
        }
    }
}

/// Which end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Dialer,
    Listener,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::Dialer => 0,
            Side::Listener => 1,
        }
    }

    fn other(self) -> Side {
        match self {
            Side::Dialer => Side::Listener,
            Side::Listener => Side::Dialer,
        }
    }
}

/// How a link ended: by which side (`None`: the network) and why.
#[derive(Debug, Clone)]
struct Closure {
    by: Option<Side>,
    reason: String,
}

type StreamPair = (MemorySend, MemoryRecv);

/// What both ends of one connection share.
#[derive(Debug)]
struct Link {
    names: [String; 2],
    endpoints: [u64; 2],
    pins: [Pin; 2],
    exporter: Exporter,
    closure: watch::Sender<Option<Closure>>,
    /// `streams[i]` delivers streams opened by the other side to side `i`.
    streams: [mpsc::Sender<StreamPair>; 2],
}

impl Link {
    fn new(
        id: u64,
        names: [String; 2],
        endpoints: [u64; 2],
        pins: [Pin; 2],
    ) -> (Arc<Link>, [mpsc::Receiver<StreamPair>; 2]) {
        let mut hash = Sha256::new();
        hash.update(b"collie-crew memory exporter\0");
        hash.update(id.to_be_bytes());
        hash.update(pins[0].as_bytes());
        hash.update(pins[1].as_bytes());
        hash.update(EXPORTER_LABEL);
        hash.update(EXPORTER_CONTEXT);
        let (to_dialer, dialer_streams) = mpsc::channel(STREAM_QUEUE);
        let (to_listener, listener_streams) = mpsc::channel(STREAM_QUEUE);
        let link = Link {
            names,
            endpoints,
            pins,
            exporter: hash.finalize().into(),
            closure: watch::Sender::new(None),
            streams: [to_dialer, to_listener],
        };
        (Arc::new(link), [dialer_streams, listener_streams])
    }

    fn joins(&self, a: &str, b: &str) -> bool {
        let [x, y] = &self.names;
        (x == a && y == b) || (x == b && y == a)
    }

    /// Ends the link (once; later calls change nothing).
    fn close(&self, by: Option<Side>, reason: &str) {
        self.closure.send_if_modified(|closure| {
            if closure.is_some() {
                return false;
            }
            *closure = Some(Closure {
                by,
                reason: reason.to_owned(),
            });
            true
        });
    }

    fn view(closure: &Closure, side: Side) -> Closed {
        match closure.by {
            Some(by) if by == side => Closed::Locally,
            Some(_) => Closed::ByPeer(closure.reason.clone()),
            None => Closed::Lost(closure.reason.clone()),
        }
    }

    fn close_reason(&self, side: Side) -> Option<Closed> {
        self.closure
            .borrow()
            .as_ref()
            .map(|closure| Self::view(closure, side))
    }

    async fn closed(&self, side: Side) -> Closed {
        let mut watcher = self.closure.subscribe();
        let closure = match watcher.wait_for(Option::is_some).await {
            Ok(closure) => closure.clone(),
            // The sender lives in `self`: not reachable.
            Err(_) => None,
        };
        match closure {
            Some(closure) => Self::view(&closure, side),
            None => Closed::Lost(String::new()),
        }
    }

    fn check_open(&self, side: Side) -> Result<(), TransportError> {
        match self.close_reason(side) {
            Some(closed) => Err(TransportError::ConnectionClosed(closed)),
            None => Ok(()),
        }
    }
}

/// One side of a connection; the link closes when the last handle of a side is dropped.
struct Half {
    link: Arc<Link>,
    side: Side,
    incoming: tokio::sync::Mutex<mpsc::Receiver<StreamPair>>,
    pins: PinCheck,
}

impl Drop for Half {
    fn drop(&mut self) {
        self.link.close(Some(self.side), "");
    }
}

/// A connection on a [`MemoryNetwork`].
#[derive(Clone)]
pub struct MemoryConnection {
    half: Arc<Half>,
}

impl std::fmt::Debug for MemoryConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConnection")
            .field("local", &self.half.link.names[self.half.side.index()])
            .field("peer", &self.peer_name())
            .finish_non_exhaustive()
    }
}

impl MemoryConnection {
    fn new(
        link: Arc<Link>,
        side: Side,
        incoming: mpsc::Receiver<StreamPair>,
        pins: PinCheck,
    ) -> Self {
        Self {
            half: Arc::new(Half {
                link,
                side,
                incoming: tokio::sync::Mutex::new(incoming),
                pins,
            }),
        }
    }

    /// The name of the endpoint at the other end.
    pub fn peer_name(&self) -> &str {
        &self.half.link.names[self.half.side.other().index()]
    }

    fn pipe(link: &Arc<Link>, from: Side) -> (MemorySend, MemoryRecv) {
        let (tx, rx) = mpsc::channel(PIPE_CHUNKS);
        let reset = Arc::new(AtomicBool::new(false));
        (
            MemorySend {
                link: link.clone(),
                side: from,
                tx: Some(tx),
                reset: reset.clone(),
            },
            MemoryRecv {
                link: link.clone(),
                side: from.other(),
                rx,
                decoder: FrameDecoder::new(),
                reset,
                stopped: false,
            },
        )
    }
}

impl Connection for MemoryConnection {
    type Send = MemorySend;
    type Recv = MemoryRecv;

    async fn open_bi(&self) -> Result<(MemorySend, MemoryRecv), TransportError> {
        let Half { link, side, .. } = &*self.half;
        link.check_open(*side)?;
        let (my_send, their_recv) = Self::pipe(link, *side);
        let (their_send, my_recv) = Self::pipe(link, side.other());
        tokio::select! {
            biased;
            closed = link.closed(*side) => Err(TransportError::ConnectionClosed(closed)),
            sent = link.streams[side.other().index()].send((their_send, their_recv)) => match sent {
                Ok(()) => Ok((my_send, my_recv)),
                Err(_) => Err(TransportError::ConnectionClosed(
                    link.close_reason(*side).unwrap_or(Closed::Lost(String::new())),
                )),
            },
        }
    }

    async fn accept_bi(&self) -> Result<(MemorySend, MemoryRecv), TransportError> {
        let Half {
            link,
            side,
            incoming,
            ..
        } = &*self.half;
        link.check_open(*side)?;
        let mut incoming = incoming.lock().await;
        tokio::select! {
            biased;
            closed = link.closed(*side) => Err(TransportError::ConnectionClosed(closed)),
            pair = incoming.recv() => pair.ok_or(TransportError::ConnectionClosed(
                Closed::Lost(String::new()),
            )),
        }
    }

    fn peer_pin(&self) -> Pin {
        self.half.link.pins[self.half.side.other().index()]
    }

    fn peer_status(&self) -> PeerStatus {
        let pin = self.peer_pin();
        if (self.half.pins)(&pin) {
            PeerStatus::Pinned(pin)
        } else {
            PeerStatus::Unpinned(pin)
        }
    }

    fn exporter(&self) -> Result<Exporter, TransportError> {
        Ok(self.half.link.exporter)
    }

    fn close(&self, reason: &str) {
        self.half.link.close(Some(self.half.side), reason);
    }

    async fn closed(&self) -> Closed {
        self.half.link.closed(self.half.side).await
    }

    fn close_reason(&self) -> Option<Closed> {
        self.half.link.close_reason(self.half.side)
    }
}

/// The sending half of an in-memory stream.
#[derive(Debug)]
pub struct MemorySend {
    link: Arc<Link>,
    side: Side,
    /// `None` once finished or reset.
    tx: Option<mpsc::Sender<Vec<u8>>>,
    reset: Arc<AtomicBool>,
}

impl MemorySend {
    /// Puts `bytes` on the stream as they are, with no framing: for tests and simulations of a
    /// peer that sends garbage or lies about lengths.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), TransportError> {
        self.link.check_open(self.side)?;
        let tx = self.tx.as_ref().ok_or(TransportError::StreamClosed)?;
        for chunk in bytes.chunks(PIPE_CHUNK) {
            tokio::select! {
                biased;
                closed = self.link.closed(self.side) => {
                    return Err(TransportError::ConnectionClosed(closed));
                }
                sent = tx.send(chunk.to_vec()) => {
                    sent.map_err(|_| TransportError::StreamStopped)?;
                }
            }
        }
        Ok(())
    }
}

impl SendFrames for MemorySend {
    async fn send(&mut self, payload: &[u8]) -> Result<(), TransportError> {
        if payload.len() > MAX_FRAME {
            return Err(TransportError::Frame(WireError::TooLarge {
                len: payload.len() as u64,
            }));
        }
        let mut frame = Vec::with_capacity(wire::FRAME_HEADER + payload.len());
        wire::write_frame(&mut frame, payload)
            .await
            .map_err(TransportError::Frame)?;
        self.send_raw(&frame).await
    }

    fn finish(&mut self) -> Result<(), TransportError> {
        self.tx.take().map(drop).ok_or(TransportError::StreamClosed)
    }

    fn reset(&mut self) -> Result<(), TransportError> {
        let tx = self.tx.take().ok_or(TransportError::StreamClosed)?;
        self.reset.store(true, Ordering::Release);
        drop(tx);
        Ok(())
    }
}

/// The receiving half of an in-memory stream.
#[derive(Debug)]
pub struct MemoryRecv {
    link: Arc<Link>,
    side: Side,
    rx: mpsc::Receiver<Vec<u8>>,
    decoder: FrameDecoder,
    reset: Arc<AtomicBool>,
    stopped: bool,
}

impl MemoryRecv {
    fn refuse(&mut self, error: WireError) -> TransportError {
        self.stop();
        TransportError::Frame(error)
    }
}

impl RecvFrames for MemoryRecv {
    async fn recv(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        loop {
            self.link.check_open(self.side)?;
            if self.reset.load(Ordering::Acquire) {
                return Err(TransportError::StreamReset);
            }
            if self.stopped {
                return Err(TransportError::StreamClosed);
            }
            match self.decoder.pop() {
                Ok(Some(payload)) => return Ok(Some(payload)),
                Ok(None) => {}
                Err(e) => return Err(self.refuse(e)),
            }
            let next = tokio::select! {
                biased;
                closed = self.link.closed(self.side) => {
                    return Err(TransportError::ConnectionClosed(closed));
                }
                next = self.rx.recv() => next,
            };
            match next {
                Some(bytes) => {
                    if let Err(e) = self.decoder.push(&bytes) {
                        return Err(self.refuse(e));
                    }
                }
                None if self.reset.load(Ordering::Acquire) => {
                    return Err(TransportError::StreamReset);
                }
                None if self.decoder.buffered() == 0 => return Ok(None),
                None => return Err(self.refuse(WireError::Truncated)),
            }
        }
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.rx.close();
        self.decoder = FrameDecoder::new();
    }
}

#[cfg(test)]
mod tests;
