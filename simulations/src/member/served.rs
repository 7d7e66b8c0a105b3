//! One relay stream the lead opened, served by the shipped `collie_crew::relay::server::serve`
//! over in-memory halves and stepped by the simulation.
//!
//! **The halves.** [`SimRecv`] reads what the network delivered on the stream through the shipped
//! [`FrameDecoder`]; the lead's end of the stream (a finish, stop or drop: the network model has one
//! kind of end) reads as `Ok(None)` between frames and as a truncated frame inside one, as the
//! in-memory transport of `collie-crew` does. [`SimSend`] frames each payload with the wire's
//! length prefix and keeps it for the member to put on the network; a finish, reset or drop of the
//! half becomes the end of the member's side.
//!
//! **Stepping.** The server's future is stored with the stream and polled with a no-op waker
//! whenever something that could wake it happened: bytes or the end of its stream, or a pane
//! change (a subscription sends it). Nothing here ever waits for a waker, so nothing is missed. The
//! arrivals are handed to the server one at a time, each followed by a poll, and the server is
//! polled once before the first: then no poll ever finds two of its `select!` branches ready at once
//! (a pane change the server has not sent yet and the lead's end, say), and the branch tokio picks
//! at random cannot decide anything — the same seed gives the same run.
//!
//! **Time.** `serve` waits [`REQUEST_WITHIN`] for the request with `tokio::time::timeout`, which
//! needs a runtime with a time driver when it starts: each poll enters the simulation's
//! current-thread runtime. That runtime is never driven, so its timers never fire; none needs to,
//! because the lead sends a stream's request as it opens it and the network delivers it with the
//! stream. The simulation's time is its virtual clock, not tokio's.
//!
//! [`REQUEST_WITHIN`]: collie_crew::relay::server::REQUEST_WITHIN

use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use collie_crew::relay::server;
use collie_crew::transport::{RecvFrames, SendFrames, TransportError};
use collie_crew::wire::{self, FrameDecoder, WireError};
use tokio::runtime::Handle;

use super::panes::{lock, Panes};

/// What the lead's side of the stream delivered and the server has not read yet.
#[derive(Debug, Default)]
struct Inbox {
    decoder: FrameDecoder,
    /// The lead ended the stream.
    ended: bool,
    /// The server stopped reading (a malformed frame): what comes later is dropped.
    stopped: bool,
}

impl Inbox {
    fn frame(&mut self) -> Poll<Result<Option<Vec<u8>>, TransportError>> {
        if self.stopped {
            return Poll::Ready(Err(TransportError::StreamClosed));
        }
        let refused = match self.decoder.pop() {
            Ok(Some(payload)) => return Poll::Ready(Ok(Some(payload))),
            Ok(None) if !self.ended => return Poll::Pending,
            Ok(None) if self.decoder.buffered() == 0 => return Poll::Ready(Ok(None)),
            Ok(None) => WireError::Truncated,
            Err(e) => e,
        };
        self.stop();
        Poll::Ready(Err(TransportError::Frame(refused)))
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.decoder = FrameDecoder::new();
    }
}

/// The receiving half the server reads the lead's request from.
#[derive(Debug)]
struct SimRecv(Arc<Mutex<Inbox>>);

impl RecvFrames for SimRecv {
    async fn recv(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        poll_fn(|_| lock(&self.0).frame()).await
    }

    fn stop(&mut self) {
        lock(&self.0).stop();
    }
}

/// What the server sent, for the member to put on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Sent {
    /// A whole frame: length prefix and payload.
    Frame(Vec<u8>),
    /// The member's side of the stream ended (finished, reset or dropped).
    End,
}

#[derive(Debug, Default)]
struct Outbox {
    sent: Vec<Sent>,
    ended: bool,
}

impl Outbox {
    fn end(&mut self) -> Result<(), TransportError> {
        if self.ended {
            return Err(TransportError::StreamClosed);
        }
        self.ended = true;
        self.sent.push(Sent::End);
        Ok(())
    }
}

/// The sending half the server answers on.
#[derive(Debug)]
struct SimSend(Arc<Mutex<Outbox>>);

impl SendFrames for SimSend {
    async fn send(&mut self, payload: &[u8]) -> Result<(), TransportError> {
        let mut frame = Vec::with_capacity(wire::FRAME_HEADER + payload.len());
        wire::write_frame(&mut frame, payload)
            .await
            .map_err(TransportError::Frame)?;
        let mut outbox = lock(&self.0);
        if outbox.ended {
            return Err(TransportError::StreamClosed);
        }
        outbox.sent.push(Sent::Frame(frame));
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TransportError> {
        lock(&self.0).end()
    }

    fn reset(&mut self) -> Result<(), TransportError> {
        lock(&self.0).end()
    }
}

impl Drop for SimSend {
    /// A dropped half finishes its stream, as a QUIC send stream does.
    fn drop(&mut self) {
        let _ = lock(&self.0).end();
    }
}

/// Something the network delivered on the stream, not yet handed to the server.
#[derive(Debug)]
enum Arrival {
    Bytes(Vec<u8>),
    End,
}

/// A relay stream and the shipped server serving it.
pub(super) struct Served {
    inbox: Arc<Mutex<Inbox>>,
    outbox: Arc<Mutex<Outbox>>,
    arrivals: VecDeque<Arrival>,
    /// `serve`'s future; `None` once it returned (its halves are dropped with it).
    task: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("inbox", &self.inbox)
            .field("outbox", &self.outbox)
            .field("arrivals", &self.arrivals)
            .field("running", &self.task.is_some())
            .finish()
    }
}

impl Served {
    /// A stream the lead opened, to be served with `panes`.
    pub(super) fn new(panes: &Panes) -> Self {
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let outbox = Arc::new(Mutex::new(Outbox::default()));
        let recv = SimRecv(Arc::clone(&inbox));
        let send = SimSend(Arc::clone(&outbox));
        let panes = panes.clone();
        let task = Box::pin(async move { server::serve(send, recv, &panes).await });
        Self {
            inbox,
            outbox,
            arrivals: VecDeque::new(),
            task: Some(task),
        }
    }

    /// Bytes arrived on the stream (handed to the server at the next [`Served::step`]).
    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        self.arrivals.push_back(Arrival::Bytes(bytes.to_vec()));
    }

    /// The lead ended the stream (the server learns of it at the next [`Served::step`]).
    pub(super) fn end(&mut self) {
        self.arrivals.push_back(Arrival::End);
    }

    /// Whether the server is done with the stream.
    pub(super) fn done(&self) -> bool {
        self.task.is_none()
    }

    /// Polls the server, then hands it what arrived, one arrival and one poll at a time; returns
    /// what it sent meanwhile.
    pub(super) fn step(&mut self, runtime: &Handle) -> Vec<Sent> {
        self.poll(runtime);
        while let Some(arrival) = self.arrivals.pop_front() {
            {
                let mut inbox = lock(&self.inbox);
                match arrival {
                    Arrival::Bytes(_) if inbox.stopped => {}
                    // A refused push poisons the decoder; the server's next read fails with it.
                    Arrival::Bytes(bytes) => {
                        let _ = inbox.decoder.push(&bytes);
                    }
                    Arrival::End => inbox.ended = true,
                }
            }
            self.poll(runtime);
        }
        std::mem::take(&mut lock(&self.outbox).sent)
    }

    fn poll(&mut self, runtime: &Handle) {
        let Some(task) = self.task.as_mut() else {
            return;
        };
        let _entered = runtime.enter();
        let mut cx = Context::from_waker(Waker::noop());
        if task.as_mut().poll(&mut cx).is_ready() {
            self.task = None;
        }
    }
}
