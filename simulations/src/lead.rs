//! The lead model: the real pure cores of `collie-crew` ([`LeadHandshake`], [`validate_join`],
//! [`InFlight`], [`FrameDecoder`]) wired the way the lead's crew actor wires them, with the I/O
//! replaced by a list of [`LeadOut`] effects the harness applies.
//!
//! What is modelled rather than real: the pin check the TLS verifier makes (the harness tells the
//! lead the dialer's pin), the pin store and invites (in memory, kept across a lead restart as sled
//! would keep them), one relay stream per connection (so a malformed frame, which stops its stream,
//! ends the link here), and the phone's HTTP request (a `phone` number and a target machine).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use collie_crew::hello::{
    validate_join, CrewSecret, Exporter, HelloConfig, Invite, JoinContext, JoinReply,
    LeadHandshake, Opening, Peer,
};
use collie_crew::pin::Pin;
use collie_crew::relay::{
    Answer, InFlight, MemberMessage, RelayError, RelayKind, RelayOk, RelayRequest,
};
use collie_crew::wire::{self, FrameDecoder};

use crate::Bug;

/// Requests one member link may have waiting for an answer.
pub(crate) const MAX_REQUESTS: usize = 16;
/// Streams one member link may have open or being opened.
pub(crate) const MAX_STREAMS: usize = 4;
/// Connections that have not finished their opening (join or hello) at any time.
pub(crate) const MAX_OPENING: usize = 8;
/// A relayed request's deadline (SPEC §8: `member unreachable` within 2 s).
pub(crate) const REQUEST_TIMEOUT_MS: u64 = 2_000;
/// How long a connection may take to send its opening before the lead closes it.
pub(crate) const HANDSHAKE_TIMEOUT_MS: u64 = 5_000;

/// Whom an answer goes to.
#[derive(Debug, Clone)]
pub(crate) enum Waiter {
    /// A phone request; `resend` marks a copy made by the [`Bug::ResendWriteOnTimeout`] lead,
    /// whose answer nobody waits for.
    Phone {
        id: u64,
        kind: RelayKind,
        resend: bool,
    },
    /// The lead's own `Unsubscribe` after the phone left a stream.
    Internal,
}

/// An effect of the lead model, applied by the harness.
#[derive(Debug)]
pub(crate) enum LeadOut {
    /// Put a frame on the connection (towards the member).
    Send { conn: u64, frame: Vec<u8> },
    /// Close the connection.
    Close { conn: u64, reason: String },
    /// Answer a phone request.
    Answer {
        phone: u64,
        result: Result<RelayOk, RelayError>,
    },
    /// A hello was accepted: the peer with this pin is now served as `name`.
    Served { pin: Pin, name: String },
    /// A phone request was sent to the member with this pin, as `machine`.
    Relayed {
        pin: Pin,
        machine: String,
        phone: u64,
    },
    /// A join was accepted and the pin stored.
    Joined { name: String },
    /// A stream opened (the phone will leave it some time later).
    Subscribed { conn: u64, stream: u64 },
    /// Call [`Lead::on_timer`] at this virtual time.
    Timer { at: u64 },
}

/// Where one connection stands.
#[derive(Debug)]
pub(crate) enum LinkState {
    /// Waiting for the opening frame.
    Opening { deadline: u64 },
    /// A join was answered; the member closes and comes back with a hello.
    Joined { deadline: u64 },
    /// Hello accepted: relaying.
    Established {
        name: String,
        peer: Peer,
        inflight: Box<InFlight<Waiter>>,
    },
}

/// The lead's side of one connection.
#[derive(Debug)]
pub(crate) struct LeadConn {
    pin: Pin,
    exporter: Exporter,
    pub(crate) decoder: FrameDecoder,
    pub(crate) state: LinkState,
}

/// The lead bridge.
#[derive(Debug)]
pub(crate) struct Lead {
    pub(crate) name: String,
    secret: CrewSecret,
    /// Pin → member name (the store; survives restarts).
    pub(crate) pins: BTreeMap<Pin, String>,
    /// Issued invites (the store; survives restarts).
    invites: Vec<Invite>,
    pub(crate) up: bool,
    pub(crate) conns: BTreeMap<u64, LeadConn>,
    bug: Option<Bug>,
    /// Virtual time 0 as an `Instant` (InFlight takes `Instant`s; only their order matters).
    base: Instant,
    /// Connections closed because a frame was malformed or too large.
    pub(crate) bad_frames: u64,
    /// Openings refused (unpinned hello, bad proof, refused join, handshake timeout, too many).
    pub(crate) refused: u64,
}

impl Lead {
    pub(crate) fn new(name: String, secret: CrewSecret, bug: Option<Bug>, base: Instant) -> Self {
        Self {
            name,
            secret,
            pins: BTreeMap::new(),
            invites: Vec::new(),
            up: true,
            conns: BTreeMap::new(),
            bug,
            base,
            bad_frames: 0,
            refused: 0,
        }
    }

    pub(crate) fn add_invite(&mut self, invite: Invite) {
        self.invites.push(invite);
    }

    fn instant(&self, ms: u64) -> Instant {
        self.base + Duration::from_millis(ms)
    }

    /// Wall-clock time of virtual time `ms` (for invite expiry), from a fixed epoch.
    pub(crate) fn wall_clock(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms)
    }

    fn config(&self) -> HelloConfig {
        HelloConfig::new(self.name.clone(), "sim".to_owned(), self.secret.clone())
    }

    /// A dial reached the lead (the TLS handshake passed: the peer presented `pin`).
    pub(crate) fn on_connect(
        &mut self,
        conn: u64,
        pin: Pin,
        exporter: Exporter,
        now: u64,
    ) -> Vec<LeadOut> {
        let opening = self
            .conns
            .values()
            .filter(|c| !matches!(c.state, LinkState::Established { .. }))
            .count();
        if opening >= MAX_OPENING {
            self.refused += 1;
            return vec![LeadOut::Close {
                conn,
                reason: "too many handshakes".to_owned(),
            }];
        }
        let deadline = now + HANDSHAKE_TIMEOUT_MS;
        self.conns.insert(
            conn,
            LeadConn {
                pin,
                exporter,
                decoder: FrameDecoder::new(),
                state: LinkState::Opening { deadline },
            },
        );
        vec![LeadOut::Timer { at: deadline }]
    }

    /// Bytes arrived on a connection.
    pub(crate) fn on_bytes(&mut self, conn: u64, bytes: &[u8], now: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let Some(c) = self.conns.get_mut(&conn) else {
            return outs;
        };
        if let Err(e) = c.decoder.push(bytes) {
            self.bad_frames += 1;
            self.close(conn, e.to_string(), &mut outs);
            return outs;
        }
        while let Some(c) = self.conns.get_mut(&conn) {
            match c.decoder.pop() {
                Ok(Some(payload)) => self.on_frame(conn, &payload, now, &mut outs),
                Ok(None) => break,
                Err(e) => {
                    self.bad_frames += 1;
                    self.close(conn, e.to_string(), &mut outs);
                    break;
                }
            }
        }
        outs
    }

    fn on_frame(&mut self, conn: u64, payload: &[u8], now: u64, outs: &mut Vec<LeadOut>) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        match c.state {
            LinkState::Opening { .. } => match wire::decode::<Opening>(payload) {
                Ok(Opening::Hello(hello)) => self.on_hello(conn, &hello, outs),
                Ok(Opening::Join(request)) => self.on_join(conn, &request, now, outs),
                Ok(_) => self.refuse(conn, "unknown opening", outs),
                Err(e) => {
                    self.bad_frames += 1;
                    self.close(conn, e.to_string(), outs);
                }
            },
            LinkState::Joined { .. } => self.refuse(conn, "frame after join", outs),
            LinkState::Established { .. } => match wire::decode::<MemberMessage>(payload) {
                Ok(message) => self.on_message(conn, message, outs),
                Err(e) => {
                    self.bad_frames += 1;
                    self.close(conn, e.to_string(), outs);
                }
            },
        }
    }

    fn on_hello(&mut self, conn: u64, hello: &collie_crew::hello::Hello, outs: &mut Vec<LeadOut>) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let (pin, exporter) = (c.pin, c.exporter);
        let name = match self.pins.get(&pin) {
            Some(name) => name.clone(),
            None if self.bug == Some(Bug::ServeUnpinned) => hello.name.clone(),
            None => return self.refuse(conn, "certificate not pinned", outs),
        };
        let mut handshake = LeadHandshake::new(self.config(), name.clone(), exporter);
        let reply = match handshake.on_hello(hello) {
            Ok(reply) => reply,
            Err(e) => return self.refuse(conn, &e.to_string(), outs),
        };
        let Some(peer) = handshake.member().cloned() else {
            return self.refuse(conn, "handshake not established", outs);
        };
        // A member coming back replaces its old link (which may not have noticed the loss yet).
        let old: Vec<u64> = self
            .conns
            .iter()
            .filter(|(id, c)| {
                **id != conn
                    && matches!(&c.state, LinkState::Established { name: n, .. } if *n == name)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in old {
            self.close(id, "replaced by a new connection".to_owned(), outs);
        }
        let Ok(frame) = wire::encode_frame(&reply) else {
            return self.refuse(conn, "cannot encode hello", outs);
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.state = LinkState::Established {
                name: name.clone(),
                peer,
                inflight: Box::new(InFlight::new(MAX_REQUESTS, MAX_STREAMS)),
            };
        }
        outs.push(LeadOut::Send { conn, frame });
        outs.push(LeadOut::Served { pin, name });
    }

    fn on_join(
        &mut self,
        conn: u64,
        request: &collie_crew::hello::JoinRequest,
        now: u64,
        outs: &mut Vec<LeadOut>,
    ) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let pin = c.pin;
        let hash = request.join_secret.hash();
        let index = self.invites.iter().position(|i| i.secret_hash == hash);
        let pins = &self.pins;
        let name_taken = |n: &str| pins.values().any(|v| v == n);
        let pinned_as = self.pins.get(&pin).map(String::as_str);
        let repeat = pinned_as.is_some();
        let ctx = JoinContext {
            invite: index.and_then(|i| self.invites.get(i)),
            peer_pin: &pin,
            lead_name: &self.name,
            name_taken: &name_taken,
            pinned_as,
            crew_secret: &self.secret,
            now: Self::wall_clock(now),
        };
        let reply = match validate_join(request, &ctx) {
            Ok(accepted) if repeat => JoinReply::Accepted(accepted),
            Ok(accepted) => {
                if let Some(invite) = index.and_then(|i| self.invites.get_mut(i)) {
                    invite.used = true;
                }
                self.pins.insert(pin, request.name.clone());
                outs.push(LeadOut::Joined {
                    name: request.name.clone(),
                });
                JoinReply::Accepted(accepted)
            }
            Err(e) => {
                self.refused += 1;
                JoinReply::Refused(e)
            }
        };
        let deadline = now + HANDSHAKE_TIMEOUT_MS;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.state = LinkState::Joined { deadline };
        }
        match wire::encode_frame(&reply) {
            Ok(frame) => outs.push(LeadOut::Send { conn, frame }),
            Err(e) => self.close(conn, e.to_string(), outs),
        }
    }

    fn on_message(&mut self, conn: u64, message: MemberMessage, outs: &mut Vec<LeadOut>) {
        let Some(LeadConn {
            state: LinkState::Established { inflight, .. },
            ..
        }) = self.conns.get_mut(&conn)
        else {
            return;
        };
        match message {
            MemberMessage::Response(response) => {
                if let Some(answer) = inflight.on_response(response) {
                    Self::hand_out(conn, answer, outs);
                }
            }
            // Events of unknown streams are dropped (a real lead would also unsubscribe).
            MemberMessage::Event(_) => {}
            MemberMessage::End(end) => {
                inflight.end_stream(end.stream);
            }
            _ => {}
        }
    }

    /// Gives an answer to whoever waits for it.
    fn hand_out(conn: u64, answer: Answer<Waiter>, outs: &mut Vec<LeadOut>) {
        match answer.waiter {
            Waiter::Phone { resend: true, .. } | Waiter::Internal => {}
            Waiter::Phone { id, .. } => {
                if matches!(answer.result, Ok(RelayOk::Subscribed)) {
                    outs.push(LeadOut::Subscribed {
                        conn,
                        stream: answer.id,
                    });
                }
                outs.push(LeadOut::Answer {
                    phone: id,
                    result: answer.result,
                });
            }
        }
    }

    /// A phone request for a pane on `machine`.
    pub(crate) fn on_phone(
        &mut self,
        phone: u64,
        machine: &str,
        kind: RelayKind,
        now: u64,
    ) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let misroute = self.bug == Some(Bug::Misroute);
        let link = self.conns.iter().find_map(|(id, c)| match &c.state {
            LinkState::Established { name, .. } if misroute || name == machine => Some(*id),
            _ => None,
        });
        let Some(conn) = link else {
            outs.push(LeadOut::Answer {
                phone,
                result: Err(RelayError::Unreachable),
            });
            return outs;
        };
        let waiter = Waiter::Phone {
            id: phone,
            kind: kind.clone(),
            resend: false,
        };
        self.start(conn, phone, Some(machine), kind, waiter, now, &mut outs);
        outs
    }

    /// Starts a request on an established link and sends it. `target` is the machine the phone
    /// named (`None`: the link's own member, for the lead's own requests).
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        conn: u64,
        phone: u64,
        target: Option<&str>,
        kind: RelayKind,
        waiter: Waiter,
        now: u64,
        outs: &mut Vec<LeadOut>,
    ) {
        let deadline = now + REQUEST_TIMEOUT_MS;
        let at = self.instant(deadline);
        let Some(LeadConn {
            pin,
            state:
                LinkState::Established {
                    name,
                    peer,
                    inflight,
                },
            ..
        }) = self.conns.get_mut(&conn)
        else {
            return;
        };
        let answer_to = match &waiter {
            Waiter::Phone { id, resend, .. } if !resend => Some(*id),
            _ => None,
        };
        if let Err(e) = peer.allows(&kind) {
            if let Some(id) = answer_to {
                outs.push(LeadOut::Answer {
                    phone: id,
                    result: Err(e),
                });
            }
            return;
        }
        match inflight.start(&kind, at, waiter) {
            Ok(id) => {
                let request = RelayRequest {
                    id,
                    device: "phone".to_owned(),
                    request_id: phone.to_string(),
                    kind,
                };
                // The model's requests are small; were one too large to encode, its deadline
                // would answer it.
                if let Ok(frame) = wire::encode_frame(&request) {
                    outs.push(LeadOut::Send { conn, frame });
                }
                outs.push(LeadOut::Relayed {
                    pin: *pin,
                    machine: target.unwrap_or(name).to_owned(),
                    phone,
                });
                outs.push(LeadOut::Timer { at: deadline });
            }
            Err(refused) => {
                if let Some(id) = answer_to {
                    outs.push(LeadOut::Answer {
                        phone: id,
                        result: Err(refused.error.into()),
                    });
                }
            }
        }
    }

    /// The phone left a stream: free its slot and tell the member.
    pub(crate) fn on_leave(&mut self, conn: u64, stream: u64, now: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        if let Some(LeadConn {
            state: LinkState::Established { inflight, .. },
            ..
        }) = self.conns.get_mut(&conn)
        {
            if inflight.end_stream(stream) {
                let kind = RelayKind::Unsubscribe { stream };
                self.start(conn, 0, None, kind, Waiter::Internal, now, &mut outs);
            }
        }
        outs
    }

    /// Deadlines: requests at or past their deadline, openings past theirs.
    pub(crate) fn on_timer(&mut self, now: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let at = self.instant(now);
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for conn in ids {
            let ignore = self.bug == Some(Bug::IgnoreDeadlines);
            let answers = match self.conns.get_mut(&conn).map(|c| &mut c.state) {
                Some(LinkState::Opening { deadline } | LinkState::Joined { deadline }) => {
                    if *deadline <= now {
                        self.refuse(conn, "handshake timeout", &mut outs);
                    }
                    continue;
                }
                Some(LinkState::Established { inflight, .. }) if !ignore => inflight.expire(at),
                _ => continue,
            };
            for answer in answers {
                let resend = match (&answer.waiter, self.bug) {
                    (
                        Waiter::Phone {
                            id,
                            kind,
                            resend: false,
                        },
                        Some(Bug::ResendWriteOnTimeout),
                    ) if kind.is_write() => Some((*id, kind.clone())),
                    _ => None,
                };
                Self::hand_out(conn, answer, &mut outs);
                if let Some((id, kind)) = resend {
                    let waiter = Waiter::Phone {
                        id,
                        kind: kind.clone(),
                        resend: true,
                    };
                    self.start(conn, id, None, kind, waiter, now, &mut outs);
                }
            }
        }
        outs
    }

    /// The transport reported the connection lost.
    pub(crate) fn on_conn_lost(&mut self, conn: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        if let Some(c) = self.conns.remove(&conn) {
            if let LinkState::Established { mut inflight, .. } = c.state {
                for answer in inflight.close() {
                    Self::hand_out(conn, answer, &mut outs);
                }
            }
        }
        outs
    }

    /// `collie crew remove NAME`: unpin, and close its connections at once.
    pub(crate) fn remove_member(&mut self, name: &str) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let removed: Vec<Pin> = self
            .pins
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(p, _)| *p)
            .collect();
        self.pins.retain(|_, n| n != name);
        let ids: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| removed.contains(&c.pin))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.close(id, "removed from the crew".to_owned(), &mut outs);
        }
        outs
    }

    /// The lead process dies: every connection and in-memory request is gone. Returns the phone
    /// requests that were waiting (their HTTP connections break; they get no relay answer).
    pub(crate) fn crash(&mut self) -> (Vec<u64>, Vec<u64>) {
        self.up = false;
        let mut phones = Vec::new();
        let conns: Vec<u64> = self.conns.keys().copied().collect();
        for (_, c) in std::mem::take(&mut self.conns) {
            if let LinkState::Established { mut inflight, .. } = c.state {
                for answer in inflight.close() {
                    if let Waiter::Phone {
                        id, resend: false, ..
                    } = answer.waiter
                    {
                        phones.push(id);
                    }
                }
            }
        }
        (phones, conns)
    }

    fn refuse(&mut self, conn: u64, reason: &str, outs: &mut Vec<LeadOut>) {
        self.refused += 1;
        self.close(conn, reason.to_owned(), outs);
    }

    /// Closes a connection, answering everything waiting on it `member unreachable`.
    fn close(&mut self, conn: u64, reason: String, outs: &mut Vec<LeadOut>) {
        outs.extend(self.on_conn_lost(conn));
        outs.push(LeadOut::Close { conn, reason });
    }
}
