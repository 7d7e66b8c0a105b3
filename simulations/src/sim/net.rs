//! The network model. A connection carries streams numbered as QUIC numbers them (`crate::stream`);
//! each stream is reliable and ordered in each direction, and streams are independent: a frame held
//! up on one stream delays nothing on another, as QUIC's per-stream delivery promises. Every frame
//! gets a latency of 1–20 ms, and with the loss probability a retransmission delay of 0.2–2.5 s on
//! top — which can carry an answer past its deadline — and nothing overtakes an earlier frame of the
//! same stream and direction. Each frame arrives in one to three pieces, so the frame decoders see
//! split headers and payloads. The end of a stream (finished, stopped or dropped) travels behind its
//! last frame.
//!
//! Bytes are lost only with their connection: a partition, a restart or a close kills the
//! connection and drops everything still in flight on it. A side told of it (a close, or a lead
//! restart's stateless reset) notices after a short delay; after a partition or a member's crash
//! nothing is told, and each side notices the silence of the other's heartbeat (the link cores'
//! `LEAD_SILENCE` and `MEMBER_SILENCE`). Losses stop when the run drains. Dials fail while the
//! member is partitioned or the lead is down, and the lead's TLS refuses a certificate it neither
//! pinned nor admits for a join; members redial with exponential backoff and jitter. TLS itself is
//! modelled: the dialer's pin is handed to the lead as the pinned verifier would report it, and the
//! exporter value is derived from the seed and the connection number.

use std::collections::BTreeMap;

use collie_actors::crew_link::reach::DEPUTY_REDIAL;
use collie_crew::hello::Exporter;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use super::{Ev, World};
use crate::checker::Check;
use crate::relay::{at, ms};

/// Which side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Lead,
    Member,
}

/// One connection as the network sees it.
#[derive(Debug)]
pub(super) struct NetConn {
    /// The member (by index) that dialed it.
    pub(super) m: usize,
    pub(super) alive: bool,
    /// The last scheduled delivery on each stream, towards each side.
    last: BTreeMap<(u64, bool), u64>,
}

impl World {
    pub(super) fn deliver(&mut self, conn: u64, stream: u64, to: Side, bytes: &[u8]) -> Check {
        let Some(c) = self.conns.get(&conn).filter(|c| c.alive) else {
            return Ok(());
        };
        let m = c.m;
        match to {
            Side::Lead => {
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_bytes(conn, stream, bytes, self.now);
                self.apply_lead(outs)
            }
            Side::Member => {
                let outs = self.members[m].on_bytes(conn, stream, bytes, self.now, &mut self.rng);
                self.apply_member(m, outs)
            }
        }
    }

    pub(super) fn stream_end(&mut self, conn: u64, stream: u64, to: Side) -> Check {
        let Some(c) = self.conns.get(&conn).filter(|c| c.alive) else {
            return Ok(());
        };
        let m = c.m;
        match to {
            Side::Lead => {
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_stream_end(conn, stream);
                self.apply_lead(outs)
            }
            Side::Member => {
                let outs = self.members[m].on_stream_end(conn, stream);
                self.apply_member(m, outs)
            }
        }
    }

    pub(super) fn lost(&mut self, conn: u64, side: Side) -> Check {
        match side {
            Side::Lead => {
                if !self.lead.up {
                    return Ok(());
                }
                if self.lead.conns.contains_key(&conn) {
                    self.log(format!("lead notices loss of {conn}"));
                }
                let outs = self.lead.on_conn_lost(conn);
                self.apply_lead(outs)
            }
            Side::Member => {
                let Some(m) = self.conns.get(&conn).map(|c| c.m) else {
                    return Ok(());
                };
                if self.members[m].on_lost(conn, self.now) {
                    self.log(format!("{} notices loss of {conn}", self.members[m].name));
                    self.redial(m);
                }
                Ok(())
            }
        }
    }

    /// Schedules the next dial of member `m` when its link's [`Dialer`] says (the shipped backoff,
    /// its jitter drawn from the seed).
    ///
    /// [`Dialer`]: collie_actors::crew_link::link::dialer::Dialer
    pub(super) fn redial(&mut self, m: usize) {
        let jitter: f64 = self.rng.gen();
        let member = &mut self.members[m];
        if !member.up || !member.wants_to_dial() {
            return;
        }
        let incarnation = member.incarnation;
        // A deputy redials a lost lead at least every `DEPUTY_REDIAL`, to step back soon.
        let when = if member.deputy {
            ms(member
                .dialer
                .lost_within(at(self.now), jitter, DEPUTY_REDIAL))
        } else {
            ms(member.dialer.lost(at(self.now), jitter))
        };
        self.schedule(when, Ev::Dial { m, incarnation });
    }

    pub(super) fn dial(&mut self, m: usize, incarnation: u64) -> Check {
        let member = &self.members[m];
        if !member.up || member.incarnation != incarnation || member.conn.is_some() {
            return Ok(());
        }
        if self.partitioned.contains(&m) || !self.lead.up || self.dep.lead_cut {
            self.log(format!("{} dial fails", member.name));
            self.redial(m);
            return Ok(());
        }
        let pin = member.pin;
        if !self.lead.tls_admits(&pin) {
            self.log(format!("lead's TLS refuses {}", self.members[m].name));
            self.redial(m);
            return Ok(());
        }
        let conn = self.next_conn;
        self.next_conn += 1;
        self.connections += 1;
        let exporter = exporter(self.seed, conn);
        self.conns.insert(
            conn,
            NetConn {
                m,
                alive: true,
                last: BTreeMap::new(),
            },
        );
        self.log(format!("{} connects as {conn}", self.members[m].name));
        let outs = self.lead.on_connect(conn, pin, exporter, self.now);
        self.apply_lead(outs)?;
        let outs = self.members[m].on_connected(conn, exporter, self.now, &mut self.rng);
        self.apply_member(m, outs)
    }

    /// When something sent now on `stream` towards `to` arrives: after its latency (and a
    /// retransmission delay if it is lost once), never before what was sent on it earlier.
    fn arrival(&mut self, conn: u64, stream: u64, to: Side) -> Option<u64> {
        let mut delay = self.rng.gen_range(1..=crate::deputy::MAX_LATENCY_MS);
        // Losses stop with the other faults when the run drains.
        let loss = if self.draining { 0.0 } else { self.setup.loss };
        if self.rng.gen_bool(loss) {
            delay += self.rng.gen_range(200..=crate::deputy::MAX_RETRANSMIT_MS);
        }
        let now = self.now;
        let c = self.conns.get_mut(&conn).filter(|c| c.alive)?;
        let last = c.last.entry((stream, to == Side::Member)).or_insert(0);
        *last = (now + delay).max(*last);
        Some(*last)
    }

    /// Puts a frame on a stream of a connection towards `to`.
    pub(super) fn send(&mut self, conn: u64, stream: u64, to: Side, bytes: Vec<u8>) {
        let Some(at) = self.arrival(conn, stream, to) else {
            return;
        };
        let pieces = if bytes.len() > 2 {
            self.rng.gen_range(1..=3)
        } else {
            1
        };
        let mut rest = bytes.as_slice();
        for i in (1..=pieces).rev() {
            let take = if i == 1 {
                rest.len()
            } else {
                self.rng.gen_range(1..rest.len().max(2))
            };
            let (piece, tail) = rest.split_at(take.min(rest.len()));
            rest = tail;
            let bytes = piece.to_vec();
            self.schedule(
                at,
                Ev::Deliver {
                    conn,
                    stream,
                    to,
                    bytes,
                },
            );
        }
    }

    /// Ends a stream towards `to`, behind what was sent on it.
    pub(super) fn end_stream(&mut self, conn: u64, stream: u64, to: Side) {
        if let Some(at) = self.arrival(conn, stream, to) {
            self.schedule(at, Ev::StreamEnd { conn, stream, to });
        }
    }

    /// Ends a connection; each side given a delay notices the loss after it.
    pub(super) fn kill(&mut self, conn: u64, lead_after: Option<u64>, member_after: Option<u64>) {
        let Some(c) = self.conns.get_mut(&conn).filter(|c| c.alive) else {
            return;
        };
        c.alive = false;
        c.last.clear();
        self.dep.ghost.conn_ended(conn, self.now);
        if let Some(d) = lead_after {
            let side = Side::Lead;
            self.schedule(self.now + d, Ev::Lost { conn, side });
        }
        if let Some(d) = member_after {
            let side = Side::Member;
            self.schedule(self.now + d, Ev::Lost { conn, side });
        }
    }

    /// When a side notices a silent loss: its idle timeout, 0–3 s.
    pub(super) fn idle(&mut self) -> u64 {
        self.rng.gen_range(0..=3_000)
    }
}

pub(super) fn bytes(rng: &mut StdRng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b
}

/// The connection's TLS exporter value: deterministic, equal on both ends, distinct per
/// connection (the real one comes from the TLS session).
fn exporter(seed: u64, conn: u64) -> Exporter {
    let mut rng = StdRng::seed_from_u64(seed ^ conn.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    bytes(&mut rng)
}
