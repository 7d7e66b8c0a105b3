//! The lead's side of the relay over a live connection: one QUIC stream per request.
//!
//! **Why a stream per request.** QUIC streams are cheap (opening one costs no round trip) and each
//! has its own flow control, so a slow phone on one subscription back-pressures only that
//! subscription's stream, never the other requests to the same member, and no request waits behind
//! another one's large answer. It also makes "answered exactly once" structural: a request's answer
//! is the first frame on its own stream, and nothing is ever re-sent (a timed-out request's stream
//! is dropped, and the member sees it stopped).
//!
//! **Bookkeeping.** Which requests wait, their ids and deadlines, the limits and the answer each
//! frame gets are decided by a [`Ledger`] (sans I/O, shared with the crew simulations); this
//! client only moves the frames and waits on tokio's clock.
//!
//! **Bounds.** A [`RelayClient`] allows at most [`Limits::max_requests`] requests waiting for their
//! answer, [`Limits::max_streams`] subscriptions and [`Limits::max_transfers`] uploads open at
//! once; past any of them the request is refused at once with `resource limit`. Each frame a member sends is at most 16 MiB (the codec's
//! limit, checked before allocation), and QUIC's receive windows (`crate::tls::config`) bound what a
//! member can have in flight towards the lead, so neither a slow phone nor a chatty member grows the
//! lead's memory past those bounds.
//!
//! **Errors** are [`RelayError`]s, whose `Display` is the phone-facing string: `capability missing`
//! before anything is sent, `member unreachable` when the link is down or the answer does not come
//! within [`Limits::answer_within`], `member response unreadable` when a frame does not decode or
//! does not fit the request.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::ledger::{Ledger, Reply};
use super::{Card, RelayRequest, StreamEvent};
use super::{ColourEvent, EventAttrs, MemberMessage, RelayError, RelayKind, RelayOk};
use crate::hello::Capability;
use crate::transport::{Connection, RecvFrames, SendFrames, TransportError};

pub use super::ledger::{Limits, ANSWER_WITHIN, TRANSFER_WITHIN};

/// Relays requests to one member over its connection. Cheap to share (`Arc`); every method takes
/// `&self`.
#[derive(Debug)]
pub struct RelayClient<C: Connection> {
    conn: C,
    ledger: Arc<Mutex<Ledger>>,
    /// The origin of the ledger's clock.
    origin: Instant,
}

/// A request's place in the ledger: dropping it frees the place (a subscription's, when the
/// subscription is dropped).
#[derive(Debug)]
struct Held {
    ledger: Arc<Mutex<Ledger>>,
    id: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        lock(&self.ledger).finish(self.id);
    }
}

/// The ledger, even if a panic elsewhere poisoned its lock (every change to it is one call, so
/// it is never left half-changed).
fn lock(ledger: &Mutex<Ledger>) -> MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Who a request is for: the phone's label and the lead's request id, for the member's audit line,
/// and the device's identity, which what it owns on the member is bound to.
#[derive(Debug, Clone, Copy)]
pub struct On<'a> {
    /// The device label.
    pub device: &'a str,
    /// The lead's request id.
    pub request_id: &'a str,
    /// The device's identity ([`super::RelayRequest::device_id`]); `None` for the lead's CLI.
    pub device_id: Option<&'a str>,
}

impl<C: Connection> RelayClient<C> {
    /// A client for the member on `conn`, which declared `capabilities` in its hello.
    pub fn new(conn: C, capabilities: BTreeSet<Capability>, limits: Limits) -> Self {
        Self {
            conn,
            ledger: Arc::new(Mutex::new(Ledger::new(capabilities, limits))),
            origin: Instant::now(),
        }
    }

    /// The member's connection.
    pub fn connection(&self) -> &C {
        &self.conn
    }

    /// Whether the member declared what `kind` needs.
    pub fn allows(&self, kind: &RelayKind) -> Result<(), RelayError> {
        lock(&self.ledger).allows(kind)
    }

    /// Whether the member declared `capability` (checked before a request is built, so nothing
    /// is made up to ask it).
    pub fn has(&self, capability: Capability) -> Result<(), RelayError> {
        lock(&self.ledger).has(capability)
    }

    /// Sends one request and waits for its answer. For a subscription use [`Self::subscribe`].
    pub async fn call(&self, on: On<'_>, kind: RelayKind) -> Result<RelayOk, RelayError> {
        if kind.is_subscribe() {
            return Err(RelayError::BadInput("use subscribe for streams".to_owned()));
        }
        let (ok, ..) = self.exchange(on, kind, Duration::ZERO).await?;
        Ok(ok)
    }

    /// [`Self::call`] for a request the member works on for up to `works` before it answers (a
    /// tool's own time limit): the answer deadline is that long beyond the usual one, so a command
    /// that is still running is never reported `member unreachable`. An offline member is still
    /// found at once (its connection is closed).
    pub async fn call_working(
        &self,
        on: On<'_>,
        kind: RelayKind,
        works: Duration,
    ) -> Result<RelayOk, RelayError> {
        if kind.is_subscribe() {
            return Err(RelayError::BadInput("use subscribe for streams".to_owned()));
        }
        let (ok, ..) = self.exchange(on, kind, works).await?;
        Ok(ok)
    }

    /// Opens a stream of screen changes of `pane`, with their colours when the member declared
    /// `pane_colour` (see [`Subscription::next_colour`]). The subscription holds one of the
    /// member's stream slots until it is dropped; dropping it ends the stream on the member.
    pub async fn subscribe(
        &self,
        on: On<'_>,
        pane: String,
        last_seq: Option<u64>,
    ) -> Result<Subscription<C>, RelayError> {
        let colour = RelayKind::SubscribeColour {
            pane: pane.clone(),
            last_seq,
        };
        let kind = if self.allows(&colour).is_ok() {
            colour
        } else {
            RelayKind::Subscribe { pane, last_seq }
        };
        let (_, send, recv, held) = self.exchange(on, kind, Duration::ZERO).await?;
        Ok(Subscription {
            _send: send,
            recv,
            _held: held,
            ended: false,
        })
    }

    /// Opens a stream of the member's card changes (JSON text each). Holds one of the member's
    /// stream slots until it is dropped.
    pub async fn watch_cards(&self, on: On<'_>) -> Result<Subscription<C>, RelayError> {
        let kind = RelayKind::CardsWatch;
        let (_, send, recv, held) = self.exchange(on, kind, Duration::ZERO).await?;
        Ok(Subscription {
            _send: send,
            recv,
            _held: held,
            ended: false,
        })
    }

    /// Opens a stream, sends the request and reads the answer, within the deadline (extended by
    /// `works`, the time the member may spend on it). The ledger admits the request and decides
    /// what its first frame means.
    async fn exchange(
        &self,
        on: On<'_>,
        kind: RelayKind,
        works: Duration,
    ) -> Result<(RelayOk, C::Send, C::Recv, Held), RelayError> {
        let ticket = {
            let mut ledger = lock(&self.ledger);
            if self.conn.close_reason().is_some() {
                ledger.close();
            }
            ledger.start(&kind, works, self.origin.elapsed())?
        };
        let held = Held {
            ledger: Arc::clone(&self.ledger),
            id: ticket.id,
        };
        let request = RelayRequest {
            id: ticket.id,
            device: on.device.to_owned(),
            request_id: on.request_id.to_owned(),
            kind,
            device_id: on.device_id.map(str::to_owned),
        };
        let exchanged = tokio::time::timeout(ticket.within, async {
            let (mut send, mut recv) = self.conn.open_bi().await.map_err(unreachable)?;
            send.send_message(&request).await.map_err(unreachable)?;
            let reply = match recv.recv_message::<MemberMessage>().await {
                Ok(Some(message)) => Reply::Message(Box::new(message)),
                Ok(None) => Reply::Lost,
                Err(e) => match unreadable_or_unreachable(e) {
                    RelayError::Unreadable => Reply::Garbled,
                    _ => Reply::Lost,
                },
            };
            Ok::<_, RelayError>((reply, send, recv))
        })
        .await;
        let (reply, streams) = match exchanged {
            Ok(Ok((reply, send, recv))) => (reply, Some((send, recv))),
            Ok(Err(_)) | Err(_) => (Reply::Lost, None),
        };
        let decided = lock(&self.ledger).answer(ticket.id, reply);
        let ok = decided.unwrap_or(Err(RelayError::Unreachable))?;
        let (send, recv) = streams.ok_or(RelayError::Unreachable)?;
        Ok((ok, send, recv, held))
    }
}

fn unreachable(e: TransportError) -> RelayError {
    tracing::debug!(error = %e, "relay: member unreachable");
    RelayError::Unreachable
}

fn unreadable_or_unreachable(e: TransportError) -> RelayError {
    match e {
        TransportError::Frame(e) => {
            tracing::warn!(error = %e, "relay: member response unreadable");
            RelayError::Unreadable
        }
        other => unreachable(other),
    }
}

/// A running stream of screen changes from a member.
#[derive(Debug)]
pub struct Subscription<C: Connection> {
    /// Kept so the member sees the stream open; dropped (finished) when the subscription is.
    _send: C::Send,
    recv: C::Recv,
    /// The stream slot, freed when the subscription is dropped.
    _held: Held,
    ended: bool,
}

impl<C: Connection> Subscription<C> {
    /// The next card change of a [`RelayClient::watch_cards`] stream; `Ok(None)` when the member
    /// ended it. Cancel-safe.
    pub async fn next_card(&mut self) -> Result<Option<Card>, RelayError> {
        self.next_as(|m| match m {
            MemberMessage::CardChange(card) => Some(card),
            _ => None,
        })
        .await
    }

    /// The next change; `Ok(None)` when the member ended the stream (the pane closed). A frame
    /// that does not decode ends the stream with `member response unreadable`, a lost link with
    /// `member unreachable`. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<StreamEvent>, RelayError> {
        Ok(self.next_colour().await?.map(|change| change.event))
    }

    /// The next change with its colours (none from a member that sends plain events); otherwise
    /// as [`Subscription::next`]. Cancel-safe.
    pub async fn next_colour(&mut self) -> Result<Option<ColourEvent>, RelayError> {
        self.next_as(|m| match m {
            MemberMessage::Event(event) => Some(ColourEvent {
                event,
                attrs: EventAttrs::default(),
            }),
            MemberMessage::ColourEvent(change) => Some(change),
            _ => None,
        })
        .await
    }

    /// The next message this stream carries, as `pick` reads it; an `End`, the stream's end or a
    /// message `pick` does not take ends the stream (the last as `member response unreadable`).
    async fn next_as<T>(
        &mut self,
        pick: impl FnOnce(MemberMessage) -> Option<T>,
    ) -> Result<Option<T>, RelayError> {
        if self.ended {
            return Ok(None);
        }
        let outcome = match self.recv.recv_message::<MemberMessage>().await {
            Ok(Some(MemberMessage::End(end))) => end.error.map_or(Ok(None), Err),
            Ok(Some(message)) => match pick(message) {
                Some(item) => return Ok(Some(item)),
                None => Err(RelayError::Unreadable),
            },
            Ok(None) => Ok(None),
            Err(e) => Err(unreadable_or_unreachable(e)),
        };
        self.ended = true;
        outcome
    }
}
