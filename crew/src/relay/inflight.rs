//! The lead's bookkeeping of one member link: requests in flight, open streams, deadlines.
//!
//! Pure: the shell passes deadlines and `now`, and owns the waiters' transport (`W` is whatever the
//! shell answers a phone request through, e.g. a oneshot sender). Each waiter handed to
//! [`InFlight::start`] comes back exactly once, in an [`Answer`] — from [`InFlight::on_response`],
//! [`InFlight::expire`] or [`InFlight::close`] — and never after that: ids are never reused on a
//! link, and a response for an id that is not waiting (unknown, late, or a duplicate) is dropped.
//! One `InFlight` per connection; a reconnect starts a fresh one, so nothing is ever re-sent.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{RelayError, RelayKind, RelayOk, RelayResponse};

/// Why a request could not be started on this link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InFlightError {
    /// The link already has its maximum of requests in flight.
    #[error("too many requests in flight to this member")]
    TooManyRequests,
    /// The link already has its maximum of streams open (or being opened).
    #[error("too many streams open to this member")]
    TooManyStreams,
    /// [`RelayKind::Unknown`] is only ever received, never sent.
    #[error("unknown request kind")]
    UnknownKind,
    /// The link was closed.
    #[error("member link closed")]
    Closed,
}

impl From<InFlightError> for RelayError {
    fn from(e: InFlightError) -> Self {
        match e {
            InFlightError::TooManyRequests | InFlightError::TooManyStreams => {
                RelayError::ResourceLimit
            }
            InFlightError::UnknownKind => RelayError::UnknownKind,
            InFlightError::Closed => RelayError::Unreachable,
        }
    }
}

/// A refused [`InFlight::start`]: the reason, and the waiter handed back so the caller can answer
/// it.
#[derive(Debug)]
pub struct Refused<W> {
    /// Why.
    pub error: InFlightError,
    /// The waiter that was passed in.
    pub waiter: W,
}

/// The one answer to a request: its waiter and the outcome to hand it.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer<W> {
    /// The request's id.
    pub id: u64,
    /// The waiter passed to [`InFlight::start`].
    pub waiter: W,
    /// The member's outcome, or `member unreachable` (deadline, link closed), or `member response
    /// unreadable` (an outcome that does not fit the request).
    pub result: Result<RelayOk, RelayError>,
}

/// The outcome a request kind expects, to refuse a response that does not fit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    PaneList,
    Snapshot,
    Subscribed,
    Created,
    Walky,
    WalkyCard,
    Done,
}

impl Expect {
    pub(super) fn of(kind: &RelayKind) -> Self {
        match kind {
            RelayKind::PaneList => Expect::PaneList,
            RelayKind::Snapshot { .. } => Expect::Snapshot,
            RelayKind::Subscribe { .. } => Expect::Subscribed,
            RelayKind::Create { .. } => Expect::Created,
            RelayKind::Walky { .. } => Expect::Walky,
            RelayKind::WalkyCard { .. } => Expect::WalkyCard,
            _ => Expect::Done,
        }
    }

    pub(super) fn fits(self, ok: &RelayOk) -> bool {
        matches!(
            (self, ok),
            (Expect::PaneList, RelayOk::PaneList(_))
                | (Expect::Snapshot, RelayOk::Snapshot(_))
                | (Expect::Subscribed, RelayOk::Subscribed)
                | (Expect::Created, RelayOk::Created(_))
                | (Expect::Walky, RelayOk::Walky(_))
                | (Expect::WalkyCard, RelayOk::WalkyCard(_))
                | (Expect::Done, RelayOk::Done)
        )
    }
}

#[derive(Debug)]
struct Pending<W> {
    deadline: Instant,
    expect: Expect,
    waiter: W,
}

/// Requests in flight and streams open on one member link, with per-link limits.
#[derive(Debug)]
pub struct InFlight<W> {
    max_requests: usize,
    max_streams: usize,
    next_id: u64,
    pending: BTreeMap<u64, Pending<W>>,
    deadlines: BTreeSet<(Instant, u64)>,
    /// Subscribe requests still waiting for their answer (each holds a stream slot).
    opening: BTreeSet<u64>,
    /// Streams the member confirmed and nobody ended yet.
    open: BTreeSet<u64>,
    closed: bool,
}

impl<W> InFlight<W> {
    /// Bookkeeping for a new link: at most `max_requests` requests waiting for an answer and at
    /// most `max_streams` streams open or being opened at any time.
    pub fn new(max_requests: usize, max_streams: usize) -> Self {
        Self {
            max_requests,
            max_streams,
            next_id: 1,
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            opening: BTreeSet::new(),
            open: BTreeSet::new(),
            closed: false,
        }
    }

    /// Registers a request to send and returns its id (put it in [`super::RelayRequest::id`]).
    ///
    /// A subscription takes a stream slot now, kept if the member confirms it. Refused (waiter
    /// handed back) when a limit is reached or the link is closed.
    pub fn start(
        &mut self,
        kind: &RelayKind,
        deadline: Instant,
        waiter: W,
    ) -> Result<u64, Refused<W>> {
        let refuse = |error, waiter| Err(Refused { error, waiter });
        if self.closed {
            return refuse(InFlightError::Closed, waiter);
        }
        if matches!(kind, RelayKind::Unknown) {
            return refuse(InFlightError::UnknownKind, waiter);
        }
        if self.pending.len() >= self.max_requests {
            return refuse(InFlightError::TooManyRequests, waiter);
        }
        if kind.is_subscribe() && self.streams() >= self.max_streams {
            return refuse(InFlightError::TooManyStreams, waiter);
        }
        let id = self.next_id;
        self.next_id += 1;
        if kind.is_subscribe() {
            self.opening.insert(id);
        }
        self.deadlines.insert((deadline, id));
        self.pending.insert(
            id,
            Pending {
                deadline,
                expect: Expect::of(kind),
                waiter,
            },
        );
        Ok(id)
    }

    /// Matches a member's response to its request. `None` when no request with that id is waiting
    /// (unknown, already timed out, or answered): the response is dropped.
    ///
    /// An outcome that does not fit the request (a snapshot for an input, an unknown variant) is
    /// answered `member response unreadable`.
    pub fn on_response(&mut self, response: RelayResponse) -> Option<Answer<W>> {
        let (_, pending) = self.take(response.id)?;
        let result = match response.result {
            Ok(ok) if pending.expect.fits(&ok) => Ok(ok),
            Ok(_) | Err(RelayError::Unknown) => Err(RelayError::Unreadable),
            // Only the lead decides these; a member claiming them is confused.
            Err(RelayError::Unreachable) => Err(RelayError::Unreadable),
            Err(e) => Err(e),
        };
        if pending.expect == Expect::Subscribed && result.is_ok() {
            self.open.insert(response.id);
        }
        Some(Answer {
            id: response.id,
            waiter: pending.waiter,
            result,
        })
    }

    /// Answers `member unreachable` to every request whose deadline is at or before `now`.
    pub fn expire(&mut self, now: Instant) -> Vec<Answer<W>> {
        let due: Vec<u64> = self
            .deadlines
            .iter()
            .take_while(|(deadline, _)| *deadline <= now)
            .map(|(_, id)| *id)
            .collect();
        due.into_iter()
            .filter_map(|id| self.take(id))
            .map(|(id, p)| Answer {
                id,
                waiter: p.waiter,
                result: Err(RelayError::Unreachable),
            })
            .collect()
    }

    /// The earliest deadline of a waiting request: when the shell should call [`InFlight::expire`].
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.first().map(|(deadline, _)| *deadline)
    }

    /// The link is gone: answers `member unreachable` to every waiting request, forgets every
    /// stream and refuses new requests.
    pub fn close(&mut self) -> Vec<Answer<W>> {
        self.closed = true;
        self.open.clear();
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        ids.into_iter()
            .filter_map(|id| self.take(id))
            .map(|(id, p)| Answer {
                id,
                waiter: p.waiter,
                result: Err(RelayError::Unreachable),
            })
            .collect()
    }

    /// Whether `stream` is an open stream: events for any other id are dropped (and the shell sends
    /// the member an `Unsubscribe` for it, e.g. after a subscription timed out but started anyway).
    pub fn is_stream(&self, stream: u64) -> bool {
        self.open.contains(&stream)
    }

    /// Ends a stream (the phone left and the lead sends `Unsubscribe`, or the member sent
    /// `StreamEnd`), freeing its slot. Returns whether it was open.
    pub fn end_stream(&mut self, stream: u64) -> bool {
        self.open.remove(&stream)
    }

    /// Requests waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Stream slots taken: open streams plus subscriptions waiting for their answer.
    pub fn streams(&self) -> usize {
        self.open.len() + self.opening.len()
    }

    /// Whether [`InFlight::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Removes a waiting request from every index.
    fn take(&mut self, id: u64) -> Option<(u64, Pending<W>)> {
        let pending = self.pending.remove(&id)?;
        self.deadlines.remove(&(pending.deadline, id));
        self.opening.remove(&id);
        Some((id, pending))
    }
}
