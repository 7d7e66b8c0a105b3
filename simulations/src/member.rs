//! The member model: a bridge that joins with an invite, then dials the lead, proves the crew
//! secret with the real [`MemberHandshake`] and answers [`RelayRequest`]s from its own pane model
//! (a few panes of text lines) through the real wire codec, appending every executed write to its
//! write log (the member's audit log, kept across restarts).
//!
//! Two misbehaving kinds share the type: a machine that holds the crew secret but whose certificate
//! is not pinned (it sends a valid hello; the lead must never serve it), and a garbage peer that
//! sends random bytes, oversized length prefixes, a 16 MiB announcement followed by a few bytes,
//! and frames of the wrong type.

use std::collections::{BTreeMap, BTreeSet};

use collie_crew::hello::{
    Capability, CrewSecret, Exporter, Hello, HelloConfig, JoinReply, JoinRequest, JoinSecret,
    MemberHandshake, Opening,
};
use collie_crew::pin::Pin;
use collie_crew::relay::{
    Cursor, MemberMessage, PaneInfo, PaneSnapshot, RelayError, RelayKind, RelayOk, RelayRequest,
    RelayResponse, StreamEvent,
};
use collie_crew::wire::{self, FrameDecoder, FRAME_HEADER, MAX_FRAME};
use rand::rngs::StdRng;
use rand::{Rng, RngCore};

/// The first redial delay after a loss, and after every successful hello.
pub(crate) const BACKOFF_MIN_MS: u64 = 100;
/// The longest redial delay.
pub(crate) const BACKOFF_MAX_MS: u64 = 4_000;

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

/// The member's current connection.
#[derive(Debug)]
pub(crate) struct MemberConn {
    pub(crate) id: u64,
    decoder: FrameDecoder,
    state: MState,
}

/// An effect of the member model.
#[derive(Debug)]
pub(crate) enum MemberOut {
    /// Put bytes on the connection (towards the lead).
    Send { conn: u64, bytes: Vec<u8> },
    /// Close the connection.
    Close { conn: u64 },
    /// A relayed write ran here (`request_id` as the lead sent it).
    Executed { request_id: String },
    /// The join was accepted; the member now holds the crew secret.
    Joined,
    /// The hello exchange completed.
    Ready,
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
    pub(crate) backoff_ms: u64,
    streams: BTreeSet<u64>,
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
            backoff_ms: BACKOFF_MIN_MS,
            streams: BTreeSet::new(),
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

    /// The process dies: the connection and the streams are gone; panes and the log stay.
    pub(crate) fn crash(&mut self) {
        self.up = false;
        self.incarnation += 1;
        self.conn = None;
        self.streams.clear();
    }

    /// A dial succeeded.
    pub(crate) fn on_connected(
        &mut self,
        conn: u64,
        exporter: Exporter,
        rng: &mut StdRng,
    ) -> Vec<MemberOut> {
        let mut outs = Vec::new();
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
            decoder: FrameDecoder::new(),
            state,
        });
        if let Some(opening) = opening {
            if let Ok(bytes) = wire::encode_frame(&opening) {
                outs.push(MemberOut::Send { conn, bytes });
            }
        }
        if self.behaviour == Behaviour::Garbage && self.secret.is_none() && self.join.is_none() {
            outs.extend(garbage(conn, rng));
        }
        outs
    }

    /// The connection was lost (or closed by the lead).
    pub(crate) fn on_lost(&mut self, conn: u64) -> bool {
        if self.conn.as_ref().is_some_and(|c| c.id == conn) {
            self.conn = None;
            self.streams.clear();
            return true;
        }
        false
    }

    /// Bytes arrived from the lead.
    pub(crate) fn on_bytes(&mut self, conn: u64, bytes: &[u8], rng: &mut StdRng) -> Vec<MemberOut> {
        let mut outs = Vec::new();
        let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
            return outs;
        };
        if c.decoder.push(bytes).is_err() {
            return self.close(conn, outs);
        }
        loop {
            let Some(c) = self.conn.as_mut().filter(|c| c.id == conn) else {
                return outs;
            };
            match c.decoder.pop() {
                Ok(Some(payload)) => {
                    if !self.on_frame(conn, &payload, rng, &mut outs) {
                        return self.close(conn, outs);
                    }
                }
                Ok(None) => return outs,
                Err(_) => return self.close(conn, outs),
            }
        }
    }

    fn close(&mut self, conn: u64, mut outs: Vec<MemberOut>) -> Vec<MemberOut> {
        self.on_lost(conn);
        outs.push(MemberOut::Close { conn });
        outs
    }

    /// Handles one frame; `false` closes the connection.
    fn on_frame(
        &mut self,
        conn: u64,
        payload: &[u8],
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
                // Refused: the invite is spent or wrong; the machine gives up.
                _ => {
                    self.join = None;
                    false
                }
            },
            MState::Handshaking(handshake) => match wire::decode::<Hello>(payload) {
                Ok(hello) if handshake.on_hello(&hello).is_ok() => {
                    c.state = MState::Ready;
                    self.backoff_ms = BACKOFF_MIN_MS;
                    outs.push(MemberOut::Ready);
                    if self.behaviour == Behaviour::Garbage {
                        outs.extend(garbage(conn, rng));
                    }
                    true
                }
                _ => false,
            },
            MState::Ready if self.behaviour == Behaviour::Honest => {
                match wire::decode::<RelayRequest>(payload) {
                    Ok(request) => {
                        self.serve(conn, request, outs);
                        true
                    }
                    Err(_) => false,
                }
            }
            MState::Ready | MState::Silent => true,
        }
    }

    /// Runs one relayed request against the pane model and answers it.
    fn serve(&mut self, conn: u64, request: RelayRequest, outs: &mut Vec<MemberOut>) {
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
                    self.streams.insert(request.id);
                    event = Some(StreamEvent {
                        stream: request.id,
                        seq: p.seq,
                        cursor: Cursor { x: 0, y: 0 },
                        cols: 80,
                        height: 24,
                        full: true,
                        rows: p
                            .lines
                            .iter()
                            .enumerate()
                            .map(|(i, l)| (u16::try_from(i).unwrap_or(u16::MAX), l.clone()))
                            .collect(),
                    });
                    Ok(RelayOk::Subscribed)
                }
                None => Err(RelayError::NoSuchPane),
            },
            RelayKind::Unsubscribe { stream } => {
                self.streams.remove(stream);
                Ok(RelayOk::Done)
            }
            RelayKind::Input { pane, text, keys } => {
                let line = format!("{}{}", text.as_deref().unwrap_or(""), keys.join(" "));
                self.write(pane, &request.request_id, outs, |p| {
                    p.lines.push(line);
                    if p.lines.len() > PANE_LINES {
                        p.lines.remove(0);
                    }
                })
            }
            RelayKind::Rename { pane, name } => {
                let name = name.clone();
                self.write(pane, &request.request_id, outs, |p| p.name = name)
            }
            RelayKind::Close { pane } => {
                self.write(pane, &request.request_id, outs, |p| p.lines.clear())
            }
            _ => Err(RelayError::UnknownKind),
        };
        let response = MemberMessage::Response(RelayResponse {
            id: request.id,
            result,
        });
        for message in std::iter::once(response).chain(event.map(MemberMessage::Event)) {
            if let Ok(bytes) = wire::encode_frame(&message) {
                outs.push(MemberOut::Send { conn, bytes });
            }
        }
    }

    /// Executes a write on a pane and logs it.
    fn write(
        &mut self,
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

/// One burst of hostile bytes, chosen by the seed.
fn garbage(conn: u64, rng: &mut StdRng) -> Vec<MemberOut> {
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes().to_vec();
    let bytes = match rng.gen_range(0..6) {
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
        // A well-framed payload of random bytes.
        4 => {
            let mut payload = vec![0u8; rng.gen_range(1..32)];
            rng.fill_bytes(&mut payload);
            let mut b = len(payload.len());
            b.extend_from_slice(&payload);
            b
        }
        // A well-formed frame of a type the lead does not expect here.
        _ => wire::encode_frame(&JoinReply::Refused(
            collie_crew::hello::JoinError::WrongSecret,
        ))
        .unwrap_or_default(),
    };
    vec![MemberOut::Send { conn, bytes }]
}
