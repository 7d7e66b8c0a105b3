//! The member model: a bridge that joins with an invite, then dials the lead, proves the crew
//! secret with the real [`MemberHandshake`], keeps its link with the shipped [`Dialer`] (dial and
//! hello deadline, heartbeats, the lead's silence, backoff with jitter drawn from the seed) and
//! serves the relay streams the lead opens — one
//! [`RelayRequest`] each, answered on its own stream as `collie_crew::relay::server::serve` does,
//! from its own pane model (a few panes of text lines) through the real wire codec — appending every
//! executed write to its write log (the member's audit log, kept across restarts). A subscription's
//! stream carries the pane's changes until the lead drops it.
//!
//! Two misbehaving kinds share the type: a machine that holds the crew secret but whose certificate
//! is not pinned (it sends a valid hello; the lead must never serve it), and a garbage peer that
//! sends random bytes, oversized length prefixes, a 16 MiB announcement followed by a few bytes,
//! and frames of the wrong type — in its opening, on an uplink stream of its own and, once served,
//! as its answers to relayed requests.

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use collie_actors::crew_link::link::dialer::{Dialer, Due};
use collie_actors::crew_link::link::LinkFrame;
use collie_crew::hello::{
    Capability, CrewSecret, Exporter, Hello, HelloConfig, JoinError, JoinReply, JoinRequest,
    JoinSecret, MemberHandshake, Opening,
};
use collie_crew::pin::Pin;
use collie_crew::relay::{
    Cursor, MemberMessage, PaneInfo, PaneSnapshot, RelayError, RelayKind, RelayOk, RelayRequest,
    RelayResponse, StreamEvent,
};
use collie_crew::wire::{self, FrameDecoder, FRAME_HEADER, MAX_FRAME};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};

use crate::relay::{at, ms};
use crate::stream;

/// How a machine behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Joins (if invited), says hello, answers requests.
    Honest,
    /// After its opening (a hello if it holds the secret), sends garbage.
    Garbage,
}

/// Lines a pane keeps.
const PANE_LINES: usize = 8;

#[derive(Debug)]
struct Pane {
    name: String,
    lines: Vec<String>,
    seq: u64,
}

#[derive(Debug)]
enum MState {
    Joining,
    Handshaking(Box<MemberHandshake>),
    Ready,
    Silent,
}

/// A stream the lead opened: one relayed request, then (for a subscription) the pane's changes.
#[derive(Debug, Default)]
struct RelayStream {
    decoder: FrameDecoder,
    /// The request was read (and answered).
    served: bool,
    /// The subscription's id and pane, while it runs.
    follows: Option<(u64, String)>,
}

/// The member's current connection.
#[derive(Debug)]
pub(crate) struct MemberConn {
    pub(crate) id: u64,
    /// Stream 0: the opening and the link.
    link: FrameDecoder,
    state: MState,
    /// The lead's relay streams, by stream number.
    relays: BTreeMap<u64, RelayStream>,
    /// Streams this side opened, stream 0 included.
    opened: u64,
}

/// An effect of the member model.
#[derive(Debug)]
pub(crate) enum MemberOut {
    /// Put bytes on a stream of the connection (towards the lead).
    Send {
        conn: u64,
        stream: u64,
        bytes: Vec<u8>,
    },
    /// The member is done with a stream (finished or stopped it).
    EndStream { conn: u64, stream: u64 },
    /// Close the connection.
    Close { conn: u64 },
    /// A relayed write ran here (`request_id` as the lead sent it).
    Executed { request_id: String },
    /// The join was accepted; the member now holds the crew secret.
    Joined,
    /// The hello exchange completed.
    Ready,
    /// Call [`Member::on_timer`] at this virtual time.
    Timer { conn: u64, at: u64 },
}

/// One machine.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) pin: Pin,
    secret: Option<CrewSecret>,
    join: Option<JoinSecret>,
    capabilities: BTreeSet<Capability>,
    pub(crate) behaviour: Behaviour,
    panes: BTreeMap<String, Pane>,
    /// Request ids of the writes executed here, in order (the member's audit log).
    pub(crate) write_log: Vec<String>,
    pub(crate) up: bool,
    pub(crate) incarnation: u64,
    pub(crate) conn: Option<MemberConn>,
    /// The link task's decisions: when to dial, beat and give up, and the backoff.
    pub(crate) dialer: Dialer,
}

impl Member {
    pub(crate) fn new(
        name: String,
        pin: Pin,
        secret: Option<CrewSecret>,
        join: Option<JoinSecret>,
        behaviour: Behaviour,
    ) -> Self {
        let panes = ["p0", "p1"]
            .into_iter()
            .map(|p| {
                let pane = Pane {
                    name: format!("{p}-name"),
                    lines: vec![format!("{name} {p} $")],
                    seq: 0,
                };
                (p.to_owned(), pane)
            })
            .collect();
        Self {
            name,
            pin,
            secret,
            join,
            capabilities: Capability::ALL.into_iter().collect(),
            behaviour,
            panes,
            write_log: Vec::new(),
            up: true,
            incarnation: 0,
            conn: None,
            dialer: Dialer::new(Duration::ZERO),
        }
    }

    /// Declares fewer capabilities (the lead must answer `capability missing` for the rest).
    pub(crate) fn without(mut self, capability: Capability) -> Self {
        self.capabilities.remove(&capability);
        self
    }

    /// Whether the member still has a way in (a secret or an unused invite).
    pub(crate) fn wants_to_dial(&self) -> bool {
        self.secret.is_some() || self.join.is_some() || self.behaviour == Behaviour::Garbage
    }

    /// The process dies: the connection and its streams are gone; panes and the log stay.
    pub(crate) fn crash(&mut self) {
        self.up = false;
        self.incarnation += 1;
        self.conn = None;
    }

    /// A dial succeeded: the opening goes out on stream 0.
    pub(crate) fn on_connected(
        &mut self,
        conn: u64,
        exporter: Exporter,
        now: u64,
        rng: &mut StdRng,
    ) -> Vec<MemberOut> {
        let deadline = ms(self.dialer.dial(at(now)));
        let mut outs = vec![MemberOut::Timer { conn, at: deadline }];
        let (state, opening) = if let Some(secret) = &self.secret {
            let mut config = HelloConfig::new(self.name.clone(), "sim".to_owned(), secret.clone());
            config.capabilities = self.capabilities.clone();
            let handshake = MemberHandshake::new(config, exporter);
            let hello = handshake.hello();
            (
                MState::Handshaking(Box::new(handshake)),
                Some(Opening::Hello(hello)),
            )
        } else if let Some(join_secret) = &self.join {
            let request = JoinRequest {
                join_secret: join_secret.clone(),
                name: self.name.clone(),
                member_pin: self.pin,
            };
            (MState::Joining, Some(Opening::Join(request)))
        } else {
            (MState::Silent, None)
        };
        self.conn = Some(MemberConn {
            id: conn,
            link: FrameDecoder::new(),
            state,
            relays: BTreeMap::new(),
            opened: 1,
        });
        let stream = stream::OPENING;
        if let Some(opening) = opening {
            if let Ok(bytes) = wire::encode_frame(&opening) {
                outs.push(MemberOut::Send {
                    conn,
                    stream,
                    bytes,
                });
            }
        }
        if self.behaviour == Behaviour::Garbage && self.secret.is_none() && self.join.is_none() {
            let bytes = garbage(rng);
            outs.push(MemberOut::Send {
                conn,
                stream,
                bytes,
            });
        }
        outs
    }

    /// The connection was lost (or closed by the lead).
    pub(crate) fn on_lost(&mut self, conn: u64) -> bool {
        if self.conn.as_ref().is_some_and(|c| c.id == conn) {
            self.conn = None;
            return true;
        }
        false
    }

    fn close(&mut self, conn: u64, outs: &mut Vec<MemberOut>) {
        self.on_lost(conn);
        outs.push(MemberOut::Close { conn });
    }

    /// Bytes arrived from the lead on a stream.
    pub(crate) fn on_bytes(
        &mut self,
        conn: u64,
        stream: u64,
        bytes: &[u8],
        now: u64,
        rng: &mut StdRng,
    ) -> Vec<MemberOut> {
        let mut outs = Vec::new();
        let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
            return outs;
        };
        if stream == stream::OPENING {
            self.on_link_bytes(conn, bytes, now, rng, &mut outs);
        } else if stream::is_lead_opened(stream) {
            let relay = c.relays.entry(stream).or_default();
            if relay.decoder.push(bytes).is_err() {
                // A malformed request stops its stream, unanswered.
                c.relays.remove(&stream);
                outs.push(MemberOut::EndStream { conn, stream });
            } else if matches!(c.state, MState::Ready) {
                self.serve_stream(conn, stream, rng, &mut outs);
            }
        }
        // The lead's answers on uplink streams: nothing to do with them.
        outs
    }

    /// The lead ended a stream: a subscription on it stops.
    pub(crate) fn on_stream_end(&mut self, conn: u64, stream: u64) {
        if let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) {
            c.relays.remove(&stream);
        }
    }

    fn on_link_bytes(
        &mut self,
        conn: u64,
        bytes: &[u8],
        now: u64,
        rng: &mut StdRng,
        outs: &mut Vec<MemberOut>,
    ) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if c.link.push(bytes).is_err() {
            return self.close(conn, outs);
        }
        loop {
            let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
                return;
            };
            match c.link.pop() {
                Ok(Some(payload)) => {
                    if !self.on_link_frame(conn, &payload, now, rng, outs) {
                        return self.close(conn, outs);
                    }
                }
                Ok(None) => return,
                Err(_) => return self.close(conn, outs),
            }
        }
    }

    /// Handles one frame on stream 0; `false` closes the connection.
    fn on_link_frame(
        &mut self,
        conn: u64,
        payload: &[u8],
        now: u64,
        rng: &mut StdRng,
        outs: &mut Vec<MemberOut>,
    ) -> bool {
        let Some(c) = self.conn.as_mut() else {
            return false;
        };
        match &mut c.state {
            MState::Joining => match wire::decode::<JoinReply>(payload) {
                Ok(JoinReply::Accepted(accepted)) => {
                    self.secret = Some(accepted.crew_secret);
                    self.join = None;
                    outs.push(MemberOut::Joined);
                    false
                }
                // Refused for a reason of the lead's own (its store or audit log failed): the
                // operator runs the join again.
                Ok(JoinReply::Refused(JoinError::Unknown)) => false,
                // Refused: the invite is spent or wrong; the machine gives up.
                _ => {
                    self.join = None;
                    false
                }
            },
            MState::Handshaking(handshake) => match wire::decode::<Hello>(payload) {
                Ok(hello) if handshake.on_hello(&hello).is_ok() => {
                    c.state = MState::Ready;
                    self.dialer.linked(at(now));
                    outs.push(MemberOut::Ready);
                    outs.push(MemberOut::Timer {
                        conn,
                        at: ms(self.dialer.next()),
                    });
                    if self.behaviour == Behaviour::Garbage {
                        self.misbehave(conn, rng, outs);
                    }
                    // Relay streams that arrived before the hello's answer are served now.
                    let waiting: Vec<u64> = self
                        .conn
                        .as_ref()
                        .map(|c| c.relays.keys().copied().collect())
                        .unwrap_or_default();
                    for stream in waiting {
                        self.serve_stream(conn, stream, rng, outs);
                    }
                    true
                }
                _ => false,
            },
            // The lead's heartbeats: signs of life.
            MState::Ready => {
                self.dialer.heard(at(now));
                true
            }
            MState::Silent => true,
        }
    }

    /// The link task's clock at `now`: a heartbeat to send, or the attempt or link given up (the
    /// connection closes). Timers of an older connection are ignored.
    pub(crate) fn on_timer(&mut self, conn: u64, now: u64) -> Vec<MemberOut> {
        let mut outs = Vec::new();
        if self.conn.as_ref().is_none_or(|c| c.id != conn) {
            return outs;
        }
        match self.dialer.due(at(now)) {
            Due::Beat => {
                self.dialer.beat_sent(at(now));
                if let Ok(bytes) = wire::encode_frame(&LinkFrame::Beat) {
                    let stream = stream::OPENING;
                    outs.push(MemberOut::Send {
                        conn,
                        stream,
                        bytes,
                    });
                }
            }
            Due::GiveUp(_) => {
                self.close(conn, &mut outs);
                return outs;
            }
            Due::Dial | Due::Nothing => {}
        }
        let at = ms(self.dialer.next());
        outs.push(MemberOut::Timer { conn, at });
        outs
    }

    /// A garbage peer, once served: a burst on an uplink stream of its own and, one time in four,
    /// a malformed frame on the link's stream 0 (the lead ends the link for that).
    fn misbehave(&mut self, conn: u64, rng: &mut StdRng, outs: &mut Vec<MemberOut>) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        let stream = stream::member_opened(c.opened);
        c.opened += 1;
        let bytes = garbage(rng);
        outs.push(MemberOut::Send {
            conn,
            stream,
            bytes,
        });
        if rng.gen_ratio(1, 4) {
            let stream = stream::OPENING;
            let bytes = vec![0xff; FRAME_HEADER];
            outs.push(MemberOut::Send {
                conn,
                stream,
                bytes,
            });
        }
    }

    /// Reads the request on one of the lead's streams, if it has arrived whole, and answers it.
    fn serve_stream(
        &mut self,
        conn: u64,
        stream: u64,
        rng: &mut StdRng,
        outs: &mut Vec<MemberOut>,
    ) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        let Some(relay) = c.relays.get_mut(&stream).filter(|r| !r.served) else {
            return;
        };
        let request = match relay.decoder.pop() {
            Ok(None) => return,
            Ok(Some(payload)) => wire::decode::<RelayRequest>(&payload),
            Err(_) => {
                c.relays.remove(&stream);
                outs.push(MemberOut::EndStream { conn, stream });
                return;
            }
        };
        relay.served = true;
        let Ok(request) = request else {
            // `server::serve`: a request that does not decode stops the stream, unanswered.
            c.relays.remove(&stream);
            outs.push(MemberOut::EndStream { conn, stream });
            return;
        };
        if self.behaviour == Behaviour::Garbage {
            return garbage_answer(conn, stream, &request, rng, outs);
        }
        self.serve(conn, stream, request, outs);
    }

    /// Runs one relayed request against the pane model and answers it on its stream.
    fn serve(&mut self, conn: u64, stream: u64, request: RelayRequest, outs: &mut Vec<MemberOut>) {
        let mut event = None;
        let result = match &request.kind {
            RelayKind::PaneList => Ok(RelayOk::PaneList(
                self.panes.iter().map(|(id, p)| self.info(id, p)).collect(),
            )),
            RelayKind::Snapshot { pane, .. } => match self.panes.get(pane) {
                Some(p) => Ok(RelayOk::Snapshot(PaneSnapshot {
                    machine: self.name.clone(),
                    pane: pane.clone(),
                    token: "abcd".to_owned(),
                    name: p.name.clone(),
                    cols: 80,
                    rows: 24,
                    cursor: Cursor { x: 0, y: 0 },
                    lines: p.lines.clone(),
                    scrollback: Vec::new(),
                    seq: p.seq,
                })),
                None => Err(RelayError::NoSuchPane),
            },
            RelayKind::Subscribe { pane, .. } => match self.panes.get(pane) {
                Some(p) => {
                    event = Some(screen(request.id, p, true));
                    Ok(RelayOk::Subscribed)
                }
                None => Err(RelayError::NoSuchPane),
            },
            // Kept in the protocol, answered `Done`; the lead drops the stream instead.
            RelayKind::Unsubscribe { .. } => Ok(RelayOk::Done),
            RelayKind::Input { pane, text, keys } => {
                let line = format!("{}{}", text.as_deref().unwrap_or(""), keys.join(" "));
                self.write(conn, pane, &request.request_id, outs, |p| {
                    p.lines.push(line);
                    if p.lines.len() > PANE_LINES {
                        p.lines.remove(0);
                    }
                })
            }
            RelayKind::Rename { pane, name } => {
                let name = name.clone();
                self.write(conn, pane, &request.request_id, outs, |p| p.name = name)
            }
            RelayKind::Close { pane } => {
                self.write(conn, pane, &request.request_id, outs, |p| p.lines.clear())
            }
            _ => Err(RelayError::UnknownKind),
        };
        let following = match (&request.kind, &result) {
            (RelayKind::Subscribe { pane, .. }, Ok(_)) => Some((request.id, pane.clone())),
            _ => None,
        };
        let response = MemberMessage::Response(RelayResponse {
            id: request.id,
            result,
        });
        for message in std::iter::once(response).chain(event.map(MemberMessage::Event)) {
            if let Ok(bytes) = wire::encode_frame(&message) {
                outs.push(MemberOut::Send {
                    conn,
                    stream,
                    bytes,
                });
            }
        }
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        match following {
            Some(follows) => {
                if let Some(relay) = c.relays.get_mut(&stream) {
                    relay.follows = Some(follows);
                }
            }
            None => {
                c.relays.remove(&stream);
                outs.push(MemberOut::EndStream { conn, stream });
            }
        }
    }

    /// Executes a write on a pane, logs it, and sends the change to the pane's subscriptions.
    fn write(
        &mut self,
        conn: u64,
        pane: &str,
        request_id: &str,
        outs: &mut Vec<MemberOut>,
        change: impl FnOnce(&mut Pane),
    ) -> Result<RelayOk, RelayError> {
        let Some(p) = self.panes.get_mut(pane) else {
            return Err(RelayError::NoSuchPane);
        };
        change(p);
        p.seq += 1;
        self.write_log.push(request_id.to_owned());
        outs.push(MemberOut::Executed {
            request_id: request_id.to_owned(),
        });
        let Some(c) = self.conn.as_ref() else {
            return Ok(RelayOk::Done);
        };
        for (stream, relay) in &c.relays {
            if let Some((id, _)) = relay.follows.as_ref().filter(|(_, f)| f == pane) {
                let event = MemberMessage::Event(screen(*id, p, false));
                if let Ok(bytes) = wire::encode_frame(&event) {
                    outs.push(MemberOut::Send {
                        conn,
                        stream: *stream,
                        bytes,
                    });
                }
            }
        }
        Ok(RelayOk::Done)
    }

    fn info(&self, id: &str, pane: &Pane) -> PaneInfo {
        PaneInfo {
            machine: self.name.clone(),
            pane: id.to_owned(),
            token: "abcd".to_owned(),
            name: pane.name.clone(),
            backend: "tmux".to_owned(),
            alive: true,
            cols: 80,
            rows: 24,
            last_activity: None,
            asking_password: false,
            at_shell: false,
        }
    }
}

/// A pane's screen as a stream event: every row when `full`, else the last one.
fn screen(stream: u64, pane: &Pane, full: bool) -> StreamEvent {
    let mut rows = pane
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (u16::try_from(i).unwrap_or(u16::MAX), l.clone()));
    StreamEvent {
        stream,
        seq: pane.seq,
        cursor: Cursor { x: 0, y: 0 },
        cols: 80,
        height: 24,
        full,
        rows: if full {
            rows.collect()
        } else {
            rows.next_back().into_iter().collect()
        },
    }
}

/// One burst of hostile bytes, chosen by the seed.
fn garbage(rng: &mut StdRng) -> Vec<u8> {
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes().to_vec();
    match rng.gen_range(0..6) {
        // Random bytes.
        0 => {
            let mut b = vec![0u8; rng.gen_range(1..64)];
            rng.fill_bytes(&mut b);
            b
        }
        // A 4 GiB length prefix.
        1 => vec![0xff; FRAME_HEADER],
        // One byte past the limit.
        2 => len(MAX_FRAME + 1),
        // A frame announced at the limit, then ten bytes, then nothing.
        3 => {
            let mut b = len(MAX_FRAME);
            b.extend_from_slice(&[7u8; 10]);
            b
        }
        // A well-framed payload of random bytes (never a `MemberMessage::Response`, whose index is
        // 0, so it can never pass for an answer).
        4 => {
            let mut payload = vec![0u8; rng.gen_range(1..32)];
            rng.fill_bytes(&mut payload);
            payload[0] = rng.gen_range(1..=u8::MAX);
            let mut b = len(payload.len());
            b.extend_from_slice(&payload);
            b
        }
        // A well-formed frame of a type the lead does not expect here.
        _ => wire::encode_frame(&JoinReply::Refused(JoinError::WrongSecret)).unwrap_or_default(),
    }
}

/// A garbage peer's "answer" to a relayed request: garbage, an answer to another request, or
/// nothing at all (it ends the stream, or leaves it hanging).
fn garbage_answer(
    conn: u64,
    stream: u64,
    request: &RelayRequest,
    rng: &mut StdRng,
    outs: &mut Vec<MemberOut>,
) {
    let bytes = match rng.gen_range(0..9) {
        0..=5 => garbage(rng),
        6 => {
            let other = MemberMessage::Response(RelayResponse {
                id: request.id.wrapping_add(1),
                result: Ok(RelayOk::Done),
            });
            wire::encode_frame(&other).unwrap_or_default()
        }
        7 => return outs.push(MemberOut::EndStream { conn, stream }),
        _ => return,
    };
    outs.push(MemberOut::Send {
        conn,
        stream,
        bytes,
    });
}
