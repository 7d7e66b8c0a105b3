//! The lead's relay to one member link, stepped by the harness. Its bookkeeping — limits, request
//! ids, deadlines and the answer each frame gets — is the shipped
//! [`collie_crew::relay::ledger::Ledger`], which `RelayClient` drives on tokio; this file only does
//! what the client's I/O does:
//! - **One stream per request.** Each request opens a stream of its own and sends one
//!   [`RelayRequest`]; its answer is the first frame the member sends on that stream, read through
//!   that stream's own [`FrameDecoder`]. Nothing is ever sent twice: a stream that is done — answered,
//!   timed out, unreadable, or a subscription the phone left — is dropped, and the member sees it end.
//! - **Deadlines** on the virtual clock: [`RelayLink::expire`] at the ledger's deadlines, as the
//!   client's `tokio::time::timeout` does.
//! - **Subscriptions**: a running subscription's events are decoded and handed on until the member
//!   ends the stream or a frame is bad; a malformed or oversized frame ends its own stream only.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use collie_crew::hello::Capability;
use collie_crew::relay::client::Limits;
use collie_crew::relay::ledger::{Ledger, Reply};
use collie_crew::relay::{MemberMessage, RelayError, RelayKind, RelayOk, RelayRequest};
use collie_crew::wire::{self, FrameDecoder};

use crate::stream;

/// Virtual milliseconds of a duration of the real code.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Who gets a request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiter {
    /// The phone's request with this number.
    Phone(u64),
    /// A second copy of phone request `n`, sent by the [`crate::Bug::ResendWriteOnTimeout`] lead;
    /// nobody waits for its answer.
    Copy(u64),
    /// The lead's copy of its registry for the deputy, of this version.
    Push(u64),
}

/// What the relay asks its connection to do.
#[derive(Debug)]
pub(crate) enum RelayOut {
    /// Put a frame on a stream (opening it if it is new).
    Send { stream: u64, frame: Vec<u8> },
    /// Drop a stream: the member sees it end.
    Drop { stream: u64 },
    /// A request's one answer.
    Answer {
        waiter: Waiter,
        kind: Box<RelayKind>,
        result: Result<RelayOk, RelayError>,
    },
    /// A subscription is running on this stream (the phone will leave it).
    Subscribed { stream: u64 },
    /// A frame was malformed or oversized (its stream was dropped).
    BadFrame,
    /// Call [`RelayLink::expire`] at this virtual time.
    Timer { at: u64 },
}

/// A request sent, waiting for the first frame on its stream.
#[derive(Debug)]
struct Waiting {
    id: u64,
    waiter: Waiter,
    decoder: FrameDecoder,
}

/// The lead's relay to one member, from its accepted hello to the end of its connection.
#[derive(Debug)]
pub(crate) struct RelayLink {
    ledger: Ledger,
    opened: u64,
    /// Requests waiting for their answer, by stream.
    waiting: BTreeMap<u64, Waiting>,
    /// Running subscriptions, by stream: the ledger's id and the stream's decoder.
    subscriptions: BTreeMap<u64, (u64, FrameDecoder)>,
}

pub(crate) fn at(now: u64) -> Duration {
    Duration::from_millis(now)
}

impl RelayLink {
    /// A relay to the member that declared `capabilities` in its hello.
    pub(crate) fn new(capabilities: BTreeSet<Capability>, limits: Limits) -> Self {
        Self {
            ledger: Ledger::new(capabilities, limits),
            opened: 0,
            waiting: BTreeMap::new(),
            subscriptions: BTreeMap::new(),
        }
    }

    /// Requests waiting for their answer (as the ledger counts them).
    pub(crate) fn waiting(&self) -> usize {
        self.ledger.waiting()
    }

    /// Subscription slots taken (as the ledger counts them).
    pub(crate) fn stream_slots(&self) -> usize {
        self.ledger.stream_slots()
    }

    /// Every frame decoder the relay holds (one per open stream).
    pub(crate) fn decoders(&self) -> impl Iterator<Item = &FrameDecoder> {
        let waiting = self.waiting.values().map(|w| &w.decoder);
        waiting.chain(self.subscriptions.values().map(|(_, d)| d))
    }

    /// The phone requests still waiting (for a lead that dies with them).
    pub(crate) fn phones_waiting(&self) -> impl Iterator<Item = u64> + '_ {
        self.waiting.values().filter_map(|w| match w.waiter {
            Waiter::Phone(id) => Some(id),
            Waiter::Copy(_) | Waiter::Push(_) => None,
        })
    }

    /// Sends a request on a stream of its own; `request_id` is the lead's id for the audit lines.
    /// Refused at once (nothing sent) when the ledger refuses it.
    pub(crate) fn start(
        &mut self,
        kind: RelayKind,
        waiter: Waiter,
        request_id: String,
        now: u64,
        out: &mut Vec<RelayOut>,
    ) -> Result<(), RelayError> {
        let ticket = self.ledger.start(&kind, Duration::ZERO, at(now))?;
        let request = RelayRequest {
            id: ticket.id,
            device: "phone".to_owned(),
            request_id,
            kind,
            device_id: None,
        };
        // The harness's requests are a few bytes; one too large to send fails its send in the real
        // client, which answers `member unreachable`.
        let Ok(frame) = wire::encode_frame(&request) else {
            self.ledger.finish(ticket.id);
            return Err(RelayError::Unreachable);
        };
        let stream = stream::lead_opened(self.opened);
        self.opened += 1;
        let decoder = FrameDecoder::new();
        let id = ticket.id;
        self.waiting.insert(
            stream,
            Waiting {
                id,
                waiter,
                decoder,
            },
        );
        out.push(RelayOut::Send { stream, frame });
        out.push(RelayOut::Timer {
            at: ms(ticket.deadline),
        });
        Ok(())
    }

    /// Decides a waiting request with the ledger and hands its answer on.
    /// `drop` is whether the stream is still there to be dropped.
    fn decide(&mut self, stream: u64, reply: Reply, drop: bool, out: &mut Vec<RelayOut>) {
        let Some(w) = self.waiting.remove(&stream) else {
            return;
        };
        let kind = Box::new(
            self.ledger
                .kind(w.id)
                .cloned()
                .unwrap_or(RelayKind::Unknown),
        );
        let Some(result) = self.ledger.answer(w.id, reply) else {
            return;
        };
        let running = kind.is_subscribe() && result.is_ok();
        out.push(RelayOut::Answer {
            waiter: w.waiter,
            kind,
            result,
        });
        if running {
            self.subscriptions.insert(stream, (w.id, w.decoder));
            out.push(RelayOut::Subscribed { stream });
            // Events already read with the answer.
            self.on_events(stream, &[], out);
        } else if drop {
            out.push(RelayOut::Drop { stream });
        }
    }

    /// Bytes from the member on one of the relay's streams. Bytes for a stream already dropped are
    /// discarded.
    pub(crate) fn on_bytes(&mut self, stream: u64, bytes: &[u8], out: &mut Vec<RelayOut>) {
        if let Some(w) = self.waiting.get_mut(&stream) {
            let first = w.decoder.push(bytes).and_then(|()| w.decoder.pop());
            let reply = match first {
                Ok(None) => return,
                Ok(Some(payload)) => match wire::decode::<MemberMessage>(&payload) {
                    Ok(message) => Reply::Message(Box::new(message)),
                    Err(_) => Reply::Garbled,
                },
                Err(_) => Reply::Garbled,
            };
            if matches!(reply, Reply::Garbled) {
                out.push(RelayOut::BadFrame);
            }
            self.decide(stream, reply, true, out);
        } else if self.subscriptions.contains_key(&stream) {
            self.on_events(stream, bytes, out);
        }
    }

    /// A running subscription's events: handed to the phone (here: dropped after decoding) until
    /// the member ends the stream or a frame is bad, which ends the subscription.
    fn on_events(&mut self, stream: u64, bytes: &[u8], out: &mut Vec<RelayOut>) {
        let Some((_, decoder)) = self.subscriptions.get_mut(&stream) else {
            return;
        };
        if decoder.push(bytes).is_err() {
            out.push(RelayOut::BadFrame);
            return self.end(stream, out);
        }
        loop {
            match decoder.pop() {
                Ok(None) => return,
                Ok(Some(payload)) => match wire::decode::<MemberMessage>(&payload) {
                    Ok(MemberMessage::Event(_) | MemberMessage::ColourEvent(_)) => {}
                    Ok(_) => return self.end(stream, out),
                    Err(_) => {
                        out.push(RelayOut::BadFrame);
                        return self.end(stream, out);
                    }
                },
                Err(_) => {
                    out.push(RelayOut::BadFrame);
                    return self.end(stream, out);
                }
            }
        }
    }

    fn end(&mut self, stream: u64, out: &mut Vec<RelayOut>) {
        if let Some((id, _)) = self.subscriptions.remove(&stream) {
            self.ledger.finish(id);
            out.push(RelayOut::Drop { stream });
        }
    }

    /// The member ended one of the relay's streams: a request still waiting gets `member
    /// unreachable`, a subscription ends.
    pub(crate) fn on_end(&mut self, stream: u64, out: &mut Vec<RelayOut>) {
        self.decide(stream, Reply::Lost, false, out);
        if let Some((id, _)) = self.subscriptions.remove(&stream) {
            self.ledger.finish(id);
        }
    }

    /// The phone left a subscription: its stream is dropped and its slot freed.
    pub(crate) fn leave(&mut self, stream: u64, out: &mut Vec<RelayOut>) {
        self.end(stream, out);
    }

    /// Answers `member unreachable` to every request whose deadline (the ledger's) is at or before
    /// `now`, and drops their streams.
    pub(crate) fn expire(&mut self, now: u64, out: &mut Vec<RelayOut>) {
        let due: BTreeMap<u64, RelayKind> = self.ledger.expire(at(now)).into_iter().collect();
        let streams: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| due.contains_key(&w.id))
            .map(|(s, _)| *s)
            .collect();
        for stream in streams {
            if let Some(w) = self.waiting.remove(&stream) {
                let kind = due.get(&w.id).cloned().unwrap_or(RelayKind::Unknown);
                out.push(RelayOut::Answer {
                    waiter: w.waiter,
                    kind: Box::new(kind),
                    result: Err(RelayError::Unreachable),
                });
                out.push(RelayOut::Drop { stream });
            }
        }
    }

    /// The connection is gone: every waiting request gets `member unreachable`, every subscription
    /// ends, and nothing more is sent.
    pub(crate) fn close(&mut self, out: &mut Vec<RelayOut>) {
        let decided: BTreeSet<u64> = self.ledger.close().into_iter().collect();
        self.subscriptions.clear();
        for (_, w) in std::mem::take(&mut self.waiting) {
            if decided.contains(&w.id) {
                out.push(RelayOut::Answer {
                    waiter: w.waiter,
                    kind: Box::new(RelayKind::Unknown),
                    result: Err(RelayError::Unreachable),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use collie_crew::relay::client::ANSWER_WITHIN;
    use collie_crew::relay::{RelayResponse, StreamEvent};

    use super::*;
    use crate::checker::PHONE_DEADLINE_MS;

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

    fn link() -> RelayLink {
        RelayLink::new(Capability::ALL.into_iter().collect(), Limits::default())
    }

    fn sent(out: &[RelayOut]) -> Vec<u64> {
        out.iter()
            .filter_map(|o| match o {
                RelayOut::Send { stream, .. } => Some(*stream),
                _ => None,
            })
            .collect()
    }

    fn frame(message: &MemberMessage) -> Vec<u8> {
        wire::encode_frame(message).expect("encodes")
    }

    #[test]
    fn the_lead_gives_up_before_the_phone_does() {
        assert!(ms(Limits::default().answer_within) < PHONE_DEADLINE_MS);
        assert_eq!(ms(ANSWER_WITHIN), ms(Limits::default().answer_within));
    }

    #[test]
    fn each_request_has_its_own_stream_and_the_limits_are_the_shipped_ones() {
        let limits = Limits::default();
        let mut relay = link();
        let mut out = Vec::new();
        for n in 0..limits.max_requests as u64 {
            relay
                .start(snapshot(), Waiter::Phone(n), n.to_string(), 0, &mut out)
                .expect("within the limit");
        }
        let streams = sent(&out);
        assert_eq!(streams.len(), limits.max_requests);
        assert_eq!(
            streams.iter().collect::<BTreeSet<_>>().len(),
            streams.len(),
            "one stream each"
        );
        assert_eq!(
            relay.start(snapshot(), Waiter::Phone(999), "999".into(), 0, &mut out),
            Err(RelayError::ResourceLimit)
        );
    }

    #[test]
    fn subscriptions_hold_a_slot_until_the_phone_leaves() {
        let limits = Limits::default();
        let mut relay = link();
        let mut out = Vec::new();
        let mut first = None;
        for n in 0..limits.max_streams as u64 {
            out.clear();
            relay
                .start(subscribe(), Waiter::Phone(n), n.to_string(), 0, &mut out)
                .expect("within the limit");
            let stream = sent(&out)[0];
            if first.is_none() {
                first = Some(stream);
                continue;
            }
            // Answered at once but the first, so they wait no more (more subscriptions may be
            // open than requests may wait) and keep their stream slots.
            let subscribed = MemberMessage::Response(RelayResponse {
                id: n + 1,
                result: Ok(RelayOk::Subscribed),
            });
            relay.on_bytes(stream, &frame(&subscribed), &mut out);
        }
        assert_eq!(
            relay.start(
                subscribe(),
                Waiter::Phone(u64::MAX),
                "past".into(),
                0,
                &mut out
            ),
            Err(RelayError::ResourceLimit)
        );
        let first = first.expect("a first subscription");
        out.clear();
        let subscribed = MemberMessage::Response(RelayResponse {
            id: 1,
            result: Ok(RelayOk::Subscribed),
        });
        relay.on_bytes(first, &frame(&subscribed), &mut out);
        assert!(matches!(
            out.as_slice(),
            [
                RelayOut::Answer {
                    result: Ok(RelayOk::Subscribed),
                    ..
                },
                RelayOut::Subscribed { .. }
            ]
        ));
        assert_eq!(relay.stream_slots(), limits.max_streams);
        // Events go on, then the phone leaves: the stream is dropped and the slot free.
        let event = MemberMessage::Event(StreamEvent {
            stream: 1,
            seq: 1,
            cursor: collie_crew::relay::Cursor { x: 0, y: 0 },
            cols: 80,
            height: 24,
            full: true,
            rows: BTreeMap::new(),
        });
        out.clear();
        relay.on_bytes(first, &frame(&event), &mut out);
        assert!(out.is_empty());
        relay.leave(first, &mut out);
        assert!(matches!(out.as_slice(), [RelayOut::Drop { .. }]));
        assert_eq!(relay.stream_slots(), limits.max_streams - 1);
    }

    #[test]
    fn a_bad_frame_ends_its_own_stream_only() {
        let mut relay = link();
        let mut out = Vec::new();
        for n in 0..2 {
            relay
                .start(snapshot(), Waiter::Phone(n), n.to_string(), 0, &mut out)
                .expect("room");
        }
        let streams = sent(&out);
        out.clear();
        let oversized = u32::MAX.to_be_bytes();
        relay.on_bytes(streams[0], &oversized, &mut out);
        assert!(matches!(
            out.as_slice(),
            [
                RelayOut::BadFrame,
                RelayOut::Answer {
                    waiter: Waiter::Phone(0),
                    result: Err(RelayError::Unreadable),
                    ..
                },
                RelayOut::Drop { .. }
            ]
        ));
        assert_eq!(relay.waiting(), 1, "the other request still waits");
        out.clear();
        relay.expire(ms(ANSWER_WITHIN) - 1, &mut out);
        assert!(out.is_empty());
        relay.expire(ms(ANSWER_WITHIN), &mut out);
        assert!(matches!(
            out.as_slice(),
            [
                RelayOut::Answer {
                    waiter: Waiter::Phone(1),
                    result: Err(RelayError::Unreachable),
                    ..
                },
                RelayOut::Drop { .. }
            ]
        ));
    }
}
