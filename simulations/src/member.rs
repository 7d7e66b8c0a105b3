//! The member model: a bridge that joins with an invite, then dials the lead, proves the crew
//! secret with the real [`MemberHandshake`], keeps its link with the shipped [`Dialer`] (dial and
//! hello deadline, heartbeats, the lead's silence, backoff with jitter drawn from the seed) and
//! serves the relay streams the lead opens with the shipped `collie_crew::relay::server::serve`
//! (`served.rs`: in-memory stream halves, the server's future stepped by the simulation) and a
//! stand-in for the pane backend (`panes.rs`: a few panes of text lines; every executed write is
//! appended to the member's write log, its audit log, kept across restarts).
//!
//! Two misbehaving kinds share the type: a machine that holds the crew secret but whose certificate
//! is not pinned (it sends a valid hello; the lead must never serve it), and a garbage peer that
//! sends random bytes, oversized length prefixes, a 16 MiB announcement followed by a few bytes,
//! and frames of the wrong type — in its opening, on an uplink stream of its own and, once served,
//! as its answers to relayed requests. The garbage peer is an attacker, not a bridge: its answers
//! are hand-written here rather than served.

pub(crate) mod panes;
mod served;

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use collie_actors::crew_link::link::dialer::{Dialer, Due};
use collie_actors::crew_link::link::LinkFrame;
use collie_crew::hello::{
    Capability, CrewSecret, Exporter, Hello, HelloConfig, JoinError, JoinReply, JoinRequest,
    JoinSecret, MemberHandshake, Opening,
};
use collie_crew::pin::Pin;
use collie_crew::relay::{MemberMessage, RelayOk, RelayRequest, RelayResponse};
use collie_crew::wire::{self, FrameDecoder, FRAME_HEADER, MAX_FRAME};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};
use tokio::runtime::Handle;

use crate::relay::{at, ms};
use crate::stream;
use panes::Panes;
use served::{Sent, Served};

/// How a machine behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Joins (if invited), says hello, answers requests.
    Honest,
    /// After its opening (a hello if it holds the secret), sends garbage.
    Garbage,
}

#[derive(Debug)]
enum MState {
    Joining,
    Handshaking(Box<MemberHandshake>),
    Ready,
    Silent,
}

/// The member's current connection.
#[derive(Debug)]
pub(crate) struct MemberConn {
    pub(crate) id: u64,
    /// Stream 0: the opening and the link.
    link: FrameDecoder,
    state: MState,
    /// The lead's relay streams, by stream number, each with the server serving it (a garbage
    /// peer's: the decoder its request is read with).
    relays: BTreeMap<u64, Served>,
    hostile: BTreeMap<u64, FrameDecoder>,
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
    /// The stand-in for the pane backend, shared with the servers of the relay streams.
    panes: Panes,
    /// The simulation's runtime, entered while a server is polled (see `served.rs`).
    runtime: Handle,
    pub(crate) up: bool,
    pub(crate) incarnation: u64,
    pub(crate) conn: Option<MemberConn>,
    /// The link task's decisions: when to dial, beat and give up, and the backoff.
    pub(crate) dialer: Dialer,
    /// Whether the link to the lead is up and since when (virtual ms), as the link task writes
    /// the bridge's `LeadReach`: up once the lead answered the hello, down once the member noticed
    /// the link ended, down since its start for a process that starts.
    pub(crate) reach: (bool, u64),
    /// Whether this member is the crew's deputy (it redials its lead at least every
    /// `DEPUTY_REDIAL`).
    pub(crate) deputy: bool,
}

impl Member {
    pub(crate) fn new(
        name: String,
        pin: Pin,
        secret: Option<CrewSecret>,
        join: Option<JoinSecret>,
        behaviour: Behaviour,
        runtime: Handle,
    ) -> Self {
        let panes = Panes::new(&name);
        Self {
            name,
            pin,
            secret,
            join,
            capabilities: Capability::ALL.into_iter().collect(),
            behaviour,
            panes,
            runtime,
            up: true,
            incarnation: 0,
            conn: None,
            dialer: Dialer::new(Duration::ZERO),
            reach: (false, 0),
            deputy: false,
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
        self.reach = (false, 0);
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
            hostile: BTreeMap::new(),
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
    pub(crate) fn on_lost(&mut self, conn: u64, now: u64) -> bool {
        if self.conn.as_ref().is_some_and(|c| c.id == conn) {
            self.conn = None;
            if self.reach.0 {
                self.reach = (false, now);
            }
            return true;
        }
        false
    }

    fn close(&mut self, conn: u64, now: u64, outs: &mut Vec<MemberOut>) {
        self.on_lost(conn, now);
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
        } else if !stream::is_lead_opened(stream) {
            // The lead's answers on uplink streams: nothing to do with them.
        } else if self.behaviour == Behaviour::Garbage {
            let decoder = c.hostile.entry(stream).or_default();
            if decoder.push(bytes).is_err() {
                c.hostile.remove(&stream);
                outs.push(MemberOut::EndStream { conn, stream });
            } else if matches!(c.state, MState::Ready) {
                self.attack(conn, stream, rng, &mut outs);
            }
        } else {
            // A stream appears with its first bytes (the lead sends nothing after its request,
            // so a stream the server is done with gets none).
            let panes = &self.panes;
            let relay = c.relays.entry(stream).or_insert_with(|| Served::new(panes));
            relay.bytes(bytes);
            self.serve(&mut outs);
        }
        outs
    }

    /// The lead ended a stream: a request not yet answered is not answered, a subscription on it
    /// stops.
    pub(crate) fn on_stream_end(&mut self, conn: u64, stream: u64) -> Vec<MemberOut> {
        let mut outs = Vec::new();
        let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
            return outs;
        };
        c.hostile.remove(&stream);
        if let Some(relay) = c.relays.get_mut(&stream) {
            relay.end();
            self.serve(&mut outs);
        }
        outs
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
            return self.close(conn, now, outs);
        }
        loop {
            let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
                return;
            };
            match c.link.pop() {
                Ok(Some(payload)) => {
                    if !self.on_link_frame(conn, &payload, now, rng, outs) {
                        return self.close(conn, now, outs);
                    }
                }
                Ok(None) => return,
                Err(_) => return self.close(conn, now, outs),
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
                    self.reach = (true, now);
                    outs.push(MemberOut::Ready);
                    outs.push(MemberOut::Timer {
                        conn,
                        at: ms(self.dialer.next()),
                    });
                    // Relay streams that arrived before the hello's answer are served now.
                    if self.behaviour == Behaviour::Garbage {
                        self.misbehave(conn, rng, outs);
                        let waiting: Vec<u64> = self
                            .conn
                            .as_ref()
                            .map(|c| c.hostile.keys().copied().collect())
                            .unwrap_or_default();
                        for stream in waiting {
                            self.attack(conn, stream, rng, outs);
                        }
                    }
                    self.serve(outs);
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
                self.close(conn, now, &mut outs);
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

    /// Steps the servers of the relay streams, once the hello is done: each is handed what arrived
    /// on its stream, and all are stepped again while a write changed a pane, so that every
    /// subscription sends the change (the real pane backend wakes its followers). Streams go in
    /// order of their numbers; a stream whose server returned is forgotten.
    fn serve(&mut self, outs: &mut Vec<MemberOut>) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if !matches!(c.state, MState::Ready) {
            return;
        }
        let conn = c.id;
        loop {
            let changes = self.panes.changes();
            for (&stream, relay) in &mut c.relays {
                let sent = relay.step(&self.runtime);
                for request_id in self.panes.take_executed() {
                    outs.push(MemberOut::Executed { request_id });
                }
                for sent in sent {
                    outs.push(match sent {
                        Sent::Frame(bytes) => MemberOut::Send {
                            conn,
                            stream,
                            bytes,
                        },
                        Sent::End => MemberOut::EndStream { conn, stream },
                    });
                }
            }
            c.relays.retain(|_, relay| !relay.done());
            if self.panes.changes() == changes {
                return;
            }
        }
    }

    /// A garbage peer answers the request on one of the lead's streams, once it has arrived
    /// whole, with garbage (see [`garbage_answer`]).
    fn attack(&mut self, conn: u64, stream: u64, rng: &mut StdRng, outs: &mut Vec<MemberOut>) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        let Some(decoder) = c.hostile.get_mut(&stream) else {
            return;
        };
        let request = match decoder.pop() {
            Ok(None) => return,
            Ok(Some(payload)) => wire::decode::<RelayRequest>(&payload).ok(),
            Err(_) => None,
        };
        c.hostile.remove(&stream);
        match request {
            Some(request) => garbage_answer(conn, stream, &request, rng, outs),
            // A request that does not decode: it ends the stream.
            None => outs.push(MemberOut::EndStream { conn, stream }),
        }
    }

    /// The write log (the member's audit log).
    pub(crate) fn write_log(&self) -> Vec<String> {
        self.panes.write_log()
    }

    /// The pane model (the deputy's door serves through it).
    pub(crate) fn panes(&self) -> &Panes {
        &self.panes
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

#[cfg(test)]
mod tests {
    //! The member serves its relay streams through the shipped server: these fail if it answered
    //! them itself again (a copy would have to reproduce the server's colour streams and the order
    //! of its frames).

    use collie_crew::relay::{RelayKind, RelayOk};
    use rand::SeedableRng;
    use tokio::runtime::Runtime;

    use super::*;

    fn runtime() -> Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    }

    /// Member `m00` with a connection whose hello is done.
    fn ready(runtime: &Runtime) -> Member {
        let mut member = Member::new(
            "m00".to_owned(),
            Pin::from([1; 32]),
            None,
            None,
            Behaviour::Honest,
            runtime.handle().clone(),
        );
        member.conn = Some(MemberConn {
            id: 1,
            link: FrameDecoder::new(),
            state: MState::Ready,
            relays: BTreeMap::new(),
            hostile: BTreeMap::new(),
            opened: 1,
        });
        member
    }

    fn request(id: u64, kind: RelayKind) -> Vec<u8> {
        let request = RelayRequest {
            id,
            device: "phone".to_owned(),
            request_id: id.to_string(),
            kind,
            device_id: None,
        };
        wire::encode_frame(&request).expect("a small request encodes")
    }

    /// What the member did, one line each: frames decoded, ends, writes.
    fn said(outs: Vec<MemberOut>) -> Vec<String> {
        let mut lines = Vec::new();
        for out in outs {
            lines.push(match out {
                MemberOut::Send { stream, bytes, .. } => {
                    let mut decoder = FrameDecoder::new();
                    decoder.push(&bytes).expect("one whole frame");
                    let payload = decoder.pop().expect("a frame").expect("whole");
                    let message: MemberMessage = wire::decode(&payload).expect("decodes");
                    let what = match message {
                        MemberMessage::Response(r) => format!("answer {} {:?}", r.id, r.result),
                        MemberMessage::Event(e) => {
                            format!("event {} seq {} {:?}", e.stream, e.seq, e.rows)
                        }
                        MemberMessage::ColourEvent(c) => format!(
                            "colour event {} seq {} {:?}",
                            c.event.stream, c.event.seq, c.event.rows
                        ),
                        other => format!("{other:?}"),
                    };
                    format!("{stream}: {what}")
                }
                MemberOut::EndStream { stream, .. } => format!("{stream}: end"),
                MemberOut::Executed { request_id } => format!("ran {request_id}"),
                other => format!("{other:?}"),
            });
        }
        lines
    }

    #[test]
    fn a_colour_subscription_is_followed_through_the_shipped_server() {
        let runtime = runtime();
        let mut member = ready(&runtime);
        let mut rng = StdRng::seed_from_u64(1);
        let subscribe = RelayKind::SubscribeColour {
            pane: "p0".to_owned(),
            last_seq: None,
        };
        let bytes = request(7, subscribe);
        // The request arrives in two pieces: nothing is answered before it is whole.
        let (head, tail) = bytes.split_at(3);
        assert!(said(member.on_bytes(1, 1, head, 0, &mut rng)).is_empty());
        assert_eq!(
            said(member.on_bytes(1, 1, tail, 0, &mut rng)),
            [
                format!("1: answer 7 {:?}", Ok::<_, ()>(RelayOk::Subscribed)),
                "1: colour event 7 seq 0 {0: \"m00 p0 $\"}".to_owned(),
            ]
        );
        let input = RelayKind::Input {
            pane: "p0".to_owned(),
            text: Some("ls".to_owned()),
            keys: Vec::new(),
        };
        assert_eq!(
            said(member.on_bytes(1, 5, &request(8, input.clone()), 0, &mut rng)),
            [
                "ran 8".to_owned(),
                format!("5: answer 8 {:?}", Ok::<_, ()>(RelayOk::Done)),
                "5: end".to_owned(),
                "1: colour event 7 seq 1 {1: \"ls\"}".to_owned(),
            ]
        );
        // The lead leaves: the server finishes its side, and the pane's changes go nowhere.
        assert_eq!(said(member.on_stream_end(1, 1)), ["1: end"]);
        assert_eq!(
            said(member.on_bytes(1, 9, &request(9, input), 0, &mut rng)),
            [
                "ran 9".to_owned(),
                format!("9: answer 9 {:?}", Ok::<_, ()>(RelayOk::Done)),
                "9: end".to_owned(),
            ]
        );
        assert_eq!(member.write_log(), ["8", "9"]);
    }

    #[test]
    fn a_request_that_does_not_decode_stops_its_stream_unanswered() {
        let runtime = runtime();
        let mut member = ready(&runtime);
        let mut rng = StdRng::seed_from_u64(1);
        let empty = [0u8; FRAME_HEADER];
        assert_eq!(said(member.on_bytes(1, 1, &empty, 0, &mut rng)), ["1: end"]);
        assert!(member.conn.as_ref().is_some_and(|c| c.relays.is_empty()));
    }

    #[test]
    fn a_write_the_lead_left_before_the_hello_was_done_runs_once_it_is() {
        let runtime = runtime();
        let mut member = ready(&runtime);
        if let Some(c) = member.conn.as_mut() {
            c.state = MState::Silent;
        }
        let mut rng = StdRng::seed_from_u64(1);
        let rename = RelayKind::Rename {
            pane: "p1".to_owned(),
            name: "build".to_owned(),
        };
        assert!(said(member.on_bytes(1, 1, &request(3, rename), 0, &mut rng)).is_empty());
        assert!(said(member.on_stream_end(1, 1)).is_empty());
        if let Some(c) = member.conn.as_mut() {
            c.state = MState::Ready;
        }
        let mut outs = Vec::new();
        member.serve(&mut outs);
        // Read in the order it arrived: the request, then the end, which the server sees only
        // once it has answered.
        assert_eq!(
            said(outs),
            [
                "ran 3".to_owned(),
                format!("1: answer 3 {:?}", Ok::<_, ()>(RelayOk::Done)),
                "1: end".to_owned(),
            ]
        );
    }
}
