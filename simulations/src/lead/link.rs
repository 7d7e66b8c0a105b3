//! The I/O of the lead's link tasks (`actors/src/crew_link/link.rs`) for one connection, stream by
//! stream; every deadline, and what each frame on stream 0 means, is the shipped [`Accepted`]
//! core's, as the task's. Stream 0 carries the
//! opening (a join request or a hello) and then the link's heartbeat, where any well-framed frame
//! is a sign of life (echoed, as the task echoes it) and a malformed one — or the stream's end —
//! ends the link; the streams the lead opens carry relayed requests ([`RelayLink`]);
//! the streams the member opens after its hello are uplinks, one request each, answered or dropped
//! within `REQUEST_WITHIN`. A malformed frame on a relay or uplink stream ends that stream only.

use std::collections::{BTreeMap, BTreeSet};

use collie_actors::crew_link::link::accepted::{reason, Accepted, Heard, Phase};
use collie_actors::crew_link::link::LinkFrame;
use collie_crew::hello::{Exporter, Opening};
use collie_crew::pin::Pin;
use collie_crew::relay::server::REQUEST_WITHIN;
use collie_crew::relay::{RelayKind, RelayOk};
use collie_crew::uplink::{Uplink, UplinkAnswer};
use collie_crew::wire::{self, FrameDecoder};

use super::{Lead, LeadOut};
use crate::relay::{at, ms, RelayLink, RelayOut, Waiter};
use crate::stream;
use crate::Bug;

/// Where one connection stands.
#[derive(Debug)]
pub(crate) enum LinkState {
    /// Waiting for the opening (a join request or a hello) on stream 0.
    Opening,
    /// A join was answered; the member closes and comes back with a hello.
    Joined,
    /// Hello accepted: a member link. `core_conn` is the core's number for it (`None` only for a
    /// peer the [`Bug::ServeUnpinned`] shell served behind the core's back).
    Established {
        name: String,
        core_conn: Option<u64>,
        relay: Box<RelayLink>,
    },
}

/// A stream the member opened after its hello.
#[derive(Debug)]
pub(crate) struct UplinkStream {
    pub(crate) decoder: FrameDecoder,
    deadline: u64,
}

/// The lead's side of one connection.
#[derive(Debug)]
pub(crate) struct LeadConn {
    pub(crate) pin: Pin,
    pub(super) exporter: Exporter,
    /// The link task's deadlines for this connection.
    pub(crate) clock: Accepted,
    /// Stream 0: the opening, then the link's heartbeat.
    link: FrameDecoder,
    pub(crate) state: LinkState,
    /// Uplink streams being read.
    pub(crate) uplinks: BTreeMap<u64, UplinkStream>,
    /// Uplink streams already done with (later bytes on them are discarded).
    uplinks_done: BTreeSet<u64>,
}

impl LeadConn {
    /// Every frame decoder the connection holds.
    pub(crate) fn decoders(&self) -> Vec<&FrameDecoder> {
        let mut all = vec![&self.link];
        all.extend(self.uplinks.values().map(|u| &u.decoder));
        if let LinkState::Established { relay, .. } = &self.state {
            all.extend(relay.decoders());
        }
        all
    }
}

impl Lead {
    /// A peer finished the TLS handshake (see [`Lead::tls_admits`]) presenting `pin`.
    pub(crate) fn on_connect(
        &mut self,
        conn: u64,
        pin: Pin,
        exporter: Exporter,
        now: u64,
    ) -> Vec<LeadOut> {
        self.conns.insert(
            conn,
            LeadConn {
                pin,
                exporter,
                clock: Accepted::new(at(now)),
                link: FrameDecoder::new(),
                state: LinkState::Opening,
                uplinks: BTreeMap::new(),
                uplinks_done: BTreeSet::new(),
            },
        );
        vec![LeadOut::Timer {
            conn,
            at: now + ms(collie_actors::crew_link::link::OPENING_TIMEOUT),
        }]
    }

    /// Bytes arrived on a stream of a connection.
    pub(crate) fn on_bytes(
        &mut self,
        conn: u64,
        stream: u64,
        bytes: &[u8],
        now: u64,
    ) -> Vec<LeadOut> {
        self.clock = now;
        let mut outs = Vec::new();
        if stream == stream::OPENING {
            self.on_link_bytes(conn, bytes, now, &mut outs);
        } else if stream::is_lead_opened(stream) {
            if let Some(LeadConn {
                state: LinkState::Established { relay, .. },
                ..
            }) = self.conns.get_mut(&conn)
            {
                let mut r = Vec::new();
                relay.on_bytes(stream, bytes, &mut r);
                self.relay_outs(conn, r, &mut outs);
            }
        } else {
            self.on_uplink_bytes(conn, stream, bytes, now, &mut outs);
        }
        outs
    }

    /// Stream 0: the opening, then (after the hello) the heartbeat, where any well-framed frame is
    /// a sign of life and a malformed one ends the link.
    fn on_link_bytes(&mut self, conn: u64, bytes: &[u8], now: u64, outs: &mut Vec<LeadOut>) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let mut pushed = c.link.push(bytes);
        loop {
            let Some(c) = self.conns.get_mut(&conn) else {
                return;
            };
            let popped = pushed.and_then(|()| c.link.pop());
            pushed = Ok(());
            match popped {
                Ok(None) => return,
                Ok(Some(payload)) => match c.clock.frame(at(now), &payload) {
                    Heard::Opening(Opening::Hello(hello)) => self.on_hello(conn, &hello, now, outs),
                    Heard::Opening(Opening::Join(request)) => {
                        self.on_join(conn, &request, now, outs)
                    }
                    Heard::Opening(_) => self.refuse(conn, reason::UNKNOWN_OPENING, outs),
                    Heard::Echo => {
                        outs.push(LeadOut::Timer {
                            conn,
                            at: ms(c.clock.deadline()),
                        });
                        if let Ok(frame) = wire::encode_frame(&LinkFrame::Beat) {
                            let stream = stream::OPENING;
                            outs.push(LeadOut::Send {
                                conn,
                                stream,
                                frame,
                            });
                        }
                    }
                    Heard::Nothing => {}
                    // A well-framed opening of an unknown kind is refused; one that does not decode
                    // is a bad frame.
                    Heard::Close(reason::UNKNOWN_OPENING) => {
                        self.refuse(conn, reason::UNKNOWN_OPENING, outs)
                    }
                    Heard::Close(why) => {
                        self.bad_frames += 1;
                        self.close(conn, why, outs);
                    }
                },
                Err(_) => {
                    self.bad_frames += 1;
                    let reason = c.clock.stream_ended().unwrap_or(reason::LINK_ENDED);
                    return self.close(conn, reason, outs);
                }
            }
        }
    }

    /// A stream the member opened after its hello: one [`Uplink`] request, answered on it.
    fn on_uplink_bytes(
        &mut self,
        conn: u64,
        stream: u64,
        bytes: &[u8],
        now: u64,
        outs: &mut Vec<LeadOut>,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        // Streams are accepted only after the hello (the link task's loop), once each.
        if !matches!(c.state, LinkState::Established { .. }) || c.uplinks_done.contains(&stream) {
            return;
        }
        let uplink = c.uplinks.entry(stream).or_insert_with(|| {
            let deadline = now + ms(REQUEST_WITHIN);
            outs.push(LeadOut::Timer { conn, at: deadline });
            UplinkStream {
                decoder: FrameDecoder::new(),
                deadline,
            }
        });
        let first = uplink
            .decoder
            .push(bytes)
            .and_then(|()| uplink.decoder.pop());
        let request = match first {
            Ok(None) => return,
            Ok(Some(payload)) => wire::decode::<Uplink>(&payload).ok(),
            Err(_) => None,
        };
        c.uplinks.remove(&stream);
        c.uplinks_done.insert(stream);
        match request {
            // The harness's members send no uplink request of their own; any that decodes is
            // answered, as the bridge answers one it does not know.
            Some(_) => {
                let answer = UplinkAnswer::Refused("unknown request".to_owned());
                if let Ok(frame) = wire::encode_frame(&answer) {
                    outs.push(LeadOut::Send {
                        conn,
                        stream,
                        frame,
                    });
                }
            }
            None => self.bad_frames += 1,
        }
        outs.push(LeadOut::EndStream { conn, stream });
    }

    /// The member ended one of the connection's streams.
    pub(crate) fn on_stream_end(&mut self, conn: u64, stream: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let Some(c) = self.conns.get_mut(&conn) else {
            return outs;
        };
        if stream == stream::OPENING {
            if let Some(reason) = c.clock.stream_ended() {
                self.close(conn, reason, &mut outs);
            }
        } else if stream::is_lead_opened(stream) {
            if let LinkState::Established { relay, .. } = &mut c.state {
                let mut r = Vec::new();
                relay.on_end(stream, &mut r);
                self.relay_outs(conn, r, &mut outs);
            }
        } else if c.uplinks.remove(&stream).is_some() {
            c.uplinks_done.insert(stream);
        }
        outs
    }

    /// Hands what a connection's relay did to the harness.
    pub(super) fn relay_outs(&mut self, conn: u64, relay: Vec<RelayOut>, outs: &mut Vec<LeadOut>) {
        for out in relay {
            match out {
                RelayOut::Send { stream, frame } => outs.push(LeadOut::Send {
                    conn,
                    stream,
                    frame,
                }),
                RelayOut::Drop { stream } => outs.push(LeadOut::EndStream { conn, stream }),
                RelayOut::Answer {
                    waiter: Waiter::Phone(phone),
                    result,
                    kind,
                } => {
                    // The application writes a relayed write's line on the lead once the member
                    // answered that it did it (decision 0052); a line the log refuses is kept
                    // and written later, so it is never lost.
                    if kind.is_write() && matches!(result, Ok(RelayOk::Done)) {
                        let request_id = phone.to_string();
                        let times = if self.bug == Some(Bug::AuditTwice) {
                            2
                        } else {
                            1
                        };
                        for _ in 0..times {
                            self.disk.relayed.push(request_id.clone());
                            let request_id = request_id.clone();
                            outs.push(LeadOut::Audited { request_id });
                        }
                    }
                    outs.push(LeadOut::Answer { phone, result });
                }
                RelayOut::Answer {
                    waiter: Waiter::Copy(_),
                    ..
                } => {}
                RelayOut::Answer {
                    waiter: Waiter::Push(version),
                    result,
                    ..
                } => {
                    let ok = matches!(result, Ok(RelayOk::DeputyDoor { .. }));
                    let retry = self.pushed(version, ok, self.clock);
                    outs.push(LeadOut::Pushed { version, ok, retry });
                }
                RelayOut::Subscribed { stream } => outs.push(LeadOut::Subscribed { conn, stream }),
                RelayOut::BadFrame => self.bad_frames += 1,
                RelayOut::Timer { at } => outs.push(LeadOut::Timer { conn, at }),
            }
        }
    }

    /// The phone left the subscription on `stream`.
    pub(crate) fn on_leave(&mut self, conn: u64, stream: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        if let Some(LeadConn {
            state: LinkState::Established { relay, .. },
            ..
        }) = self.conns.get_mut(&conn)
        {
            let mut r = Vec::new();
            relay.leave(stream, &mut r);
            self.relay_outs(conn, r, &mut outs);
        }
        outs
    }

    /// Deadlines of one connection: its opening, a silent link, uplink requests and relayed
    /// requests at or past theirs.
    pub(crate) fn on_timer(&mut self, conn: u64, now: u64) -> Vec<LeadOut> {
        self.clock = now;
        let mut outs = Vec::new();
        let bug = self.bug;
        {
            let Some(c) = self.conns.get_mut(&conn) else {
                return outs;
            };
            if let Some(reason) = c.clock.due(at(now)) {
                match c.clock.phase() {
                    Phase::Opening => self.refuse(conn, reason, &mut outs),
                    Phase::Joined | Phase::Linked => self.close(conn, reason, &mut outs),
                }
                return outs;
            }
            let LinkState::Established { relay, .. } = &mut c.state else {
                return outs;
            };
            let due: Vec<u64> = c
                .uplinks
                .iter()
                .filter(|(_, u)| u.deadline <= now)
                .map(|(s, _)| *s)
                .collect();
            for stream in due {
                c.uplinks.remove(&stream);
                c.uplinks_done.insert(stream);
                outs.push(LeadOut::EndStream { conn, stream });
            }
            let mut r = Vec::new();
            if bug != Some(Bug::IgnoreDeadlines) {
                relay.expire(now, &mut r);
            }
            if bug == Some(Bug::ResendWriteOnTimeout) {
                let writes: Vec<(u64, RelayKind)> = r
                    .iter()
                    .filter_map(|out| match out {
                        RelayOut::Answer {
                            waiter: Waiter::Phone(id),
                            kind,
                            ..
                        } if kind.is_write() => Some((*id, RelayKind::clone(kind))),
                        _ => None,
                    })
                    .collect();
                for (id, kind) in writes {
                    // A second stream with the same write; nobody waits for its answer.
                    let _ = relay.start(kind, Waiter::Copy(id), id.to_string(), now, &mut r);
                }
            }
            self.relay_outs(conn, r, &mut outs);
        }
        outs
    }

    /// The connection was lost (noticed by its idle timeout).
    pub(crate) fn on_conn_lost(&mut self, conn: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let effects = self.end(conn, &mut outs);
        self.apply(effects, &mut outs);
        outs
    }
}
