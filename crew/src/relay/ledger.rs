//! The relay client's bookkeeping for one member link, without I/O: which requests wait for their
//! answer and until when, which subscriptions hold a stream slot, which uploads are in flight, the
//! request ids, and the decisions `resource limit`, `capability missing`, `member unreachable` and
//! `member response unreadable`.
//!
//! **Why apart from `RelayClient` (`client.rs`).** The client runs on tokio and a QUIC
//! connection; the crew simulations run the same rules on a virtual clock, one event at a time.
//! Both drive this one [`Ledger`], so the limits and answers the simulations check are the shipped
//! ones, not a copy. Time is passed in as a [`Duration`] since an origin the caller picks (the
//! client: when it was made; the simulations: the start of the run); nothing here reads a clock,
//! sleeps or spawns.
//!
//! **Life of a request.** [`Ledger::start`] admits it (or refuses it before anything is sent) and
//! gives its id and deadline; exactly one [`Ledger::answer`] (or [`Ledger::expire`], or
//! [`Ledger::close`]) later decides its outcome and frees its request slot; a subscription that
//! was answered keeps its stream slot until [`Ledger::finish`]. `finish` also forgets a request
//! its caller gave up on (a dropped future), so no slot outlives its holder.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::time::Duration;

use super::{requires, MemberMessage, RelayError, RelayKind, RelayOk};
use crate::hello::Capability;

/// A relayed request that gets no answer in this time fails with `member unreachable` (SPEC §8: an
/// offline member answers within 2 s, so this leaves room for the phone's own round trip).
pub const ANSWER_WITHIN: Duration = Duration::from_millis(1_500);

/// An upload carries up to 10 MiB, which a slow link cannot move in [`ANSWER_WITHIN`]; it gets
/// this long instead. A member that is offline is still found at once (its link is gone).
pub const TRANSFER_WITHIN: Duration = Duration::from_secs(30);

/// Per-member bounds of a relay client (`client::RelayClient`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests waiting for their answer at once.
    pub max_requests: usize,
    /// Subscriptions open at once. As many as the lead's phones may have open in all (256, the
    /// stream cap of `collie bridge`): a lead's phones may all follow one member's panes, and a
    /// member's subscription costs the lead no more than a local stream costs it.
    pub max_streams: usize,
    /// How long a request may wait for its answer.
    pub answer_within: Duration,
    /// How long an upload ([`RelayKind::Blob`]) may take, its bytes' transfer included.
    pub transfer_within: Duration,
    /// Uploads in flight at once: each holds up to 10 MiB twice (the bytes and their frame)
    /// until the member answers, so they are bounded apart from the other requests.
    pub max_transfers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_requests: 64,
            max_streams: 256,
            answer_within: ANSWER_WITHIN,
            transfer_within: TRANSFER_WITHIN,
            max_transfers: 2,
        }
    }
}

/// A request the ledger admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// The id its [`super::RelayRequest`] carries and its answer must name.
    pub id: u64,
    /// How long it may wait for its answer.
    pub within: Duration,
    /// When it stops waiting (`now` at its start plus `within`).
    pub deadline: Duration,
}

/// What came back on a request's stream, as its first frame.
#[derive(Debug)]
pub enum Reply {
    /// A frame that decoded (boxed: the other outcomes carry nothing).
    Message(Box<MemberMessage>),
    /// A frame that did not decode, or was too large.
    Garbled,
    /// No frame: the stream ended, the link went, or the deadline passed.
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Sent, waiting for its answer until the deadline.
    Waiting { deadline: Duration },
    /// An answered subscription: holds a stream slot until finished.
    Streaming,
}

#[derive(Debug)]
struct Entry {
    kind: RelayKind,
    phase: Phase,
    transfer: bool,
}

/// The bookkeeping of one member link (see the module docs).
#[derive(Debug)]
pub struct Ledger {
    capabilities: BTreeSet<Capability>,
    limits: Limits,
    next_id: u64,
    entries: BTreeMap<u64, Entry>,
    waiting: usize,
    streams: usize,
    transfers: usize,
    closed: bool,
}

impl Ledger {
    /// The ledger for a member that declared `capabilities` in its hello.
    pub fn new(capabilities: BTreeSet<Capability>, limits: Limits) -> Self {
        Self {
            capabilities,
            limits,
            next_id: 1,
            entries: BTreeMap::new(),
            waiting: 0,
            streams: 0,
            transfers: 0,
            closed: false,
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether the member declared `capability`.
    pub fn has(&self, capability: Capability) -> Result<(), RelayError> {
        match capability {
            Capability::Unknown => Err(RelayError::CapabilityMissing),
            needed if self.capabilities.contains(&needed) => Ok(()),
            _ => Err(RelayError::CapabilityMissing),
        }
    }

    /// Whether the member declared what `kind` needs.
    pub fn allows(&self, kind: &RelayKind) -> Result<(), RelayError> {
        self.has(requires(kind))
    }

    /// Admits a request of `kind` at `now`, or refuses it before anything is sent: `capability
    /// missing`, `resource limit` past a limit, `member unreachable` once the link is closed. The
    /// deadline is the kind's (an upload's is longer) extended by `works`, the time the member may
    /// spend on it.
    pub fn start(
        &mut self,
        kind: &RelayKind,
        works: Duration,
        now: Duration,
    ) -> Result<Ticket, RelayError> {
        self.allows(kind)?;
        let stream = kind.is_subscribe();
        if stream && self.streams >= self.limits.max_streams {
            return Err(RelayError::ResourceLimit);
        }
        if self.closed {
            return Err(RelayError::Unreachable);
        }
        if self.waiting >= self.limits.max_requests {
            return Err(RelayError::ResourceLimit);
        }
        let transfer = matches!(kind, RelayKind::Blob { .. });
        if transfer && self.transfers >= self.limits.max_transfers {
            return Err(RelayError::ResourceLimit);
        }
        let base = if transfer {
            self.limits.transfer_within
        } else {
            self.limits.answer_within
        };
        let within = base.saturating_add(works);
        let deadline = now.saturating_add(within);
        let id = self.next_id;
        self.next_id += 1;
        self.waiting += 1;
        self.streams += usize::from(stream);
        self.transfers += usize::from(transfer);
        let phase = Phase::Waiting { deadline };
        let kind = kind.clone();
        self.entries.insert(
            id,
            Entry {
                kind,
                phase,
                transfer,
            },
        );
        Ok(Ticket {
            id,
            within,
            deadline,
        })
    }

    /// The outcome of request `id` from its first frame: the member's own outcome if it answers
    /// this request with something that fits it, `member response unreadable` for any other
    /// frame, `member unreachable` for none. A subscription that succeeded keeps its stream slot;
    /// every other request is done. `None` if `id` is not waiting (already decided).
    pub fn answer(&mut self, id: u64, reply: Reply) -> Option<Result<RelayOk, RelayError>> {
        let entry = self.entries.get(&id)?;
        if entry.phase == Phase::Streaming {
            return None;
        }
        let result = match reply {
            Reply::Message(message) => match *message {
                MemberMessage::Response(response) if response.id == id => match response.result {
                    Ok(ok) if entry.kind.fits(&ok) => Ok(ok),
                    Ok(_) => Err(RelayError::Unreadable),
                    Err(e) => Err(e),
                },
                _ => Err(RelayError::Unreadable),
            },
            Reply::Garbled => Err(RelayError::Unreadable),
            Reply::Lost => Err(RelayError::Unreachable),
        };
        let streaming = entry.kind.is_subscribe() && result.is_ok();
        self.unwait(id);
        if streaming {
            if let Some(entry) = self.entries.get_mut(&id) {
                entry.phase = Phase::Streaming;
            }
        } else {
            self.finish(id);
        }
        Some(result)
    }

    /// Forgets request `id` whatever its phase (a subscription ended, or its caller gave up),
    /// freeing its slots.
    pub fn finish(&mut self, id: u64) {
        self.unwait(id);
        if let Some(entry) = self.entries.remove(&id) {
            self.streams -= usize::from(entry.kind.is_subscribe());
        }
    }

    /// Frees the request (and transfer) slot of a request that was waiting.
    fn unwait(&mut self, id: u64) {
        if let Some(entry) = self.entries.get_mut(&id) {
            if let Phase::Waiting { .. } = entry.phase {
                entry.phase = Phase::Streaming;
                self.waiting -= 1;
                self.transfers -= usize::from(entry.transfer);
                entry.transfer = false;
            }
        }
    }

    /// The requests whose deadline is at or before `now`, decided `member unreachable` and
    /// forgotten, in id order, with their kinds.
    pub fn expire(&mut self, now: Duration) -> Vec<(u64, RelayKind)> {
        let due: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Waiting { deadline } if deadline <= now))
            .map(|(id, _)| *id)
            .collect();
        due.into_iter()
            .filter_map(|id| {
                self.unwait(id);
                let entry = self.entries.remove(&id)?;
                self.streams -= usize::from(entry.kind.is_subscribe());
                Some((id, entry.kind))
            })
            .collect()
    }

    /// The link is gone: every request still waiting is decided `member unreachable` (returned, in
    /// id order), every subscription ends, and nothing more is admitted.
    pub fn close(&mut self) -> Vec<u64> {
        self.closed = true;
        let waiting = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.phase, Phase::Waiting { .. }))
            .map(|(id, _)| *id)
            .collect();
        self.entries.clear();
        (self.waiting, self.streams, self.transfers) = (0, 0, 0);
        waiting
    }

    /// Whether [`Ledger::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The kind of request `id`, while the ledger holds it.
    pub fn kind(&self, id: u64) -> Option<&RelayKind> {
        self.entries.get(&id).map(|e| &e.kind)
    }

    /// The earliest deadline of a waiting request.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.entries
            .values()
            .filter_map(|e| match e.phase {
                Phase::Waiting { deadline } => Some(deadline),
                Phase::Streaming => None,
            })
            .min()
    }

    /// Requests waiting for their answer.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Stream slots taken: running subscriptions and subscriptions not answered yet.
    pub fn stream_slots(&self) -> usize {
        self.streams
    }

    /// Uploads in flight.
    pub fn transfers(&self) -> usize {
        self.transfers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::RelayResponse;

    fn ledger() -> Ledger {
        Ledger::new(Capability::ALL.into_iter().collect(), Limits::default())
    }

    fn snapshot() -> RelayKind {
        RelayKind::Snapshot {
            pane: "p0".to_owned(),
            scrollback: None,
        }
    }

    fn subscribe() -> RelayKind {
        RelayKind::Subscribe {
            pane: "p0".to_owned(),
            last_seq: None,
        }
    }

    fn response(id: u64, result: Result<RelayOk, RelayError>) -> Reply {
        Reply::Message(Box::new(MemberMessage::Response(RelayResponse {
            id,
            result,
        })))
    }

    #[test]
    fn past_the_request_limit_is_a_resource_limit_until_one_is_answered() {
        let mut l = ledger();
        let max = Limits::default().max_requests;
        let tickets: Vec<Ticket> = (0..max)
            .map(|_| l.start(&snapshot(), Duration::ZERO, Duration::ZERO))
            .collect::<Result<_, _>>()
            .expect("within the limit");
        let ids: BTreeSet<u64> = tickets.iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), max, "ids are distinct");
        assert_eq!(
            l.start(&snapshot(), Duration::ZERO, Duration::ZERO),
            Err(RelayError::ResourceLimit)
        );
        assert_eq!(
            l.answer(tickets[0].id, Reply::Garbled),
            Some(Err(RelayError::Unreadable))
        );
        assert_eq!(l.answer(tickets[0].id, Reply::Lost), None, "decided once");
        assert!(l.start(&snapshot(), Duration::ZERO, Duration::ZERO).is_ok());
    }

    #[test]
    fn a_subscription_holds_its_stream_slot_until_finished() {
        let mut l = ledger();
        let max = Limits::default().max_streams;
        let mut ids = Vec::new();
        for n in 0..max {
            let id = l
                .start(&subscribe(), Duration::ZERO, Duration::ZERO)
                .expect("room")
                .id;
            // Answered at once but the first, so they wait no more (more subscriptions may be
            // open than requests may wait) and keep their stream slots.
            if n > 0 {
                let ok = l.answer(id, response(id, Ok(RelayOk::Subscribed)));
                assert_eq!(ok, Some(Ok(RelayOk::Subscribed)));
            }
            ids.push(id);
        }
        assert_eq!(
            l.start(&subscribe(), Duration::ZERO, Duration::ZERO),
            Err(RelayError::ResourceLimit)
        );
        let ok = l.answer(ids[0], response(ids[0], Ok(RelayOk::Subscribed)));
        assert_eq!(ok, Some(Ok(RelayOk::Subscribed)));
        assert_eq!((l.waiting(), l.stream_slots()), (0, max));
        l.finish(ids[0]);
        assert_eq!(l.stream_slots(), max - 1);
    }

    #[test]
    fn answers_must_name_the_request_and_fit_it() {
        let mut l = ledger();
        let t = l
            .start(&snapshot(), Duration::ZERO, Duration::ZERO)
            .expect("room");
        let other = response(t.id + 1, Ok(RelayOk::Done));
        assert_eq!(l.answer(t.id, other), Some(Err(RelayError::Unreadable)));
        let t = l
            .start(&snapshot(), Duration::ZERO, Duration::ZERO)
            .expect("room");
        let misfit = response(t.id, Ok(RelayOk::Done));
        assert_eq!(l.answer(t.id, misfit), Some(Err(RelayError::Unreadable)));
        let t = l
            .start(&snapshot(), Duration::ZERO, Duration::ZERO)
            .expect("room");
        let refused = response(t.id, Err(RelayError::NoSuchPane));
        assert_eq!(l.answer(t.id, refused), Some(Err(RelayError::NoSuchPane)));
        assert_eq!(l.waiting(), 0);
    }

    #[test]
    fn deadlines_expire_and_a_closed_link_admits_nothing() {
        let mut l = ledger();
        let within = Limits::default().answer_within;
        let t = l
            .start(&snapshot(), Duration::ZERO, Duration::from_secs(1))
            .expect("room");
        assert_eq!(t.deadline, Duration::from_secs(1) + within);
        assert!(l.expire(t.deadline - Duration::from_millis(1)).is_empty());
        assert_eq!(l.expire(t.deadline), vec![(t.id, snapshot())]);
        let t = l
            .start(&snapshot(), Duration::ZERO, Duration::ZERO)
            .expect("room");
        assert_eq!(l.close(), vec![t.id]);
        assert_eq!(
            l.start(&snapshot(), Duration::ZERO, Duration::ZERO),
            Err(RelayError::Unreachable)
        );
    }

    #[test]
    fn a_missing_capability_is_refused_first() {
        let mut l = Ledger::new(BTreeSet::new(), Limits::default());
        assert_eq!(
            l.start(&snapshot(), Duration::ZERO, Duration::ZERO),
            Err(RelayError::CapabilityMissing)
        );
    }
}
