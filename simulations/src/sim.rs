//! The world: a discrete-event loop over a virtual clock (milliseconds), the network model, the
//! phone model and the fault injector, applying the effects of the lead and member models and
//! asking the checker after every event.
//!
//! **Network model.** A connection is one reliable, ordered byte stream in each direction (a QUIC
//! stream): every frame gets a latency of 1–20 ms, and with the loss probability a retransmission
//! delay of 0.2–2.5 s on top — which can carry an answer past its deadline — and nothing overtakes
//! an earlier frame of the same direction. Each frame arrives in one to three pieces, so the frame
//! decoders see split headers and payloads. Bytes are lost only with their connection: a
//! partition, a restart or a close kills the connection, drops everything still in flight on it,
//! and each side notices after a detection delay (its idle timeout, 0–3 s), unless it closed the
//! connection itself. Dials fail while the member is partitioned or the lead is down; members
//! redial with exponential backoff and jitter.
//!
//! **Phone.** Every 5–60 ms (while the lead is up) a request for a random machine (including the
//! misbehaving ones, which the lead must answer `member unreachable`) and pane (`p2` does not
//! exist): snapshots, pane lists, inputs and renames (writes), subscriptions, which the phone
//! leaves 0.1–5 s later. Member `m01` does not declare input, so the lead must refuse writes to it.
//!
//! **Faults**, every 0.2–1.5 s: a partition of one member (healed 0.5–8 s later), a member
//! restart (back 0.2–3 s later), a lead restart (back 0.5–4 s later; pins and invites survive,
//! links and requests in flight do not), or a dropped connection.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Instant;

use collie_crew::hello::{Capability, CrewSecret, Exporter, Invite, JoinSecret};
use collie_crew::pin::Pin;
use collie_crew::relay::RelayKind;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::checker::{Check, Checker, Fail};
use crate::lead::{Lead, LeadOut, LinkState, REQUEST_TIMEOUT_MS};
use crate::member::{Behaviour, Member, MemberOut, BACKOFF_MAX_MS, BACKOFF_MIN_MS};
use crate::{Bug, Report, Scenario, ViolationKind};

/// How long a run keeps going after its step budget, with faults and phone off, for everything
/// to settle.
const DRAIN_MS: u64 = 30_000;

/// Which side of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Lead,
    Member,
}

#[derive(Debug)]
enum Ev {
    Deliver { conn: u64, to: Side, bytes: Vec<u8> },
    Lost { conn: u64, side: Side },
    Dial { m: usize, incarnation: u64 },
    LeadTimer,
    Phone,
    Leave { conn: u64, stream: u64 },
    Fault,
    Heal { m: usize },
    MemberUp { m: usize },
    LeadUp,
    Remove { m: usize },
}

#[derive(Debug)]
struct NetConn {
    m: usize,
    alive: bool,
    /// The last scheduled delivery time towards the lead and towards the member.
    last: [u64; 2],
}

/// How a scenario sets the world up.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub(crate) honest: usize,
    /// A machine with the crew secret (copied from a member) whose certificate was never pinned.
    pub(crate) intruder: bool,
    /// A garbage peer that was invited (it is pinned and completes its hello first).
    pub(crate) garbage_pinned: bool,
    /// A garbage peer without any invite or secret.
    pub(crate) garbage_unpinned: bool,
    /// Remove this honest member (by index) at this time.
    pub(crate) remove: Option<(usize, u64)>,
    /// Random partitions and restarts from this time on.
    pub(crate) faults_from: Option<u64>,
    /// Hold the faults back until every honest member has been served once (so a scenario about
    /// relaying does not trip over the join gap that [`Scenario::JoinUnderFaults`] shows).
    pub(crate) faults_after_join: bool,
    pub(crate) loss: f64,
    /// Events to run before draining.
    pub(crate) steps: u64,
    /// Whether the phone issues requests. Without a phone the run drains as soon as every honest
    /// member is served (the join scenarios).
    pub(crate) phone: bool,
}

/// One run.
pub(crate) struct World {
    scenario: Scenario,
    seed: u64,
    setup: Setup,
    rng: StdRng,
    now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Ev>,
    timers: BTreeSet<u64>,
    lead: Lead,
    members: Vec<Member>,
    conns: BTreeMap<u64, NetConn>,
    next_conn: u64,
    partitioned: BTreeSet<usize>,
    next_phone: u64,
    draining: bool,
    /// Faults waiting for every honest member to be served once, with their earliest start.
    faults_armed: Option<u64>,
    checker: Checker,
    steps: u64,
    digest: u64,
    trace: Option<Vec<String>>,
    line: String,
    served: BTreeSet<String>,
    connections: u64,
    faults: u64,
}

impl World {
    pub(crate) fn new(
        scenario: Scenario,
        seed: u64,
        setup: Setup,
        bug: Option<Bug>,
        trace: bool,
    ) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let secret = CrewSecret::from(bytes(&mut rng));
        let mut lead = Lead::new("lead".to_owned(), secret.clone(), bug, Instant::now());
        let mut checker = Checker::default();
        let mut members = Vec::new();
        let expires = Lead::wall_clock(10 * 60 * 1000);
        let mut invited = |name: String, behaviour, rng: &mut StdRng, lead: &mut Lead| {
            let pin = Pin::from(bytes(rng));
            let join = JoinSecret::from(bytes(rng));
            lead.add_invite(Invite::new(&join, expires));
            checker.trust(pin, &name);
            Member::new(name, pin, None, Some(join), behaviour)
        };
        for i in 0..setup.honest {
            let member = invited(format!("m{i:02}"), Behaviour::Honest, &mut rng, &mut lead);
            // One member does not declare input: writes to it must be refused on the lead.
            members.push(if i == 1 {
                member.without(Capability::PaneInput)
            } else {
                member
            });
        }
        if setup.garbage_pinned {
            let member = invited(
                "garbage-pinned".to_owned(),
                Behaviour::Garbage,
                &mut rng,
                &mut lead,
            );
            members.push(member);
        }
        if setup.intruder {
            let pin = Pin::from(bytes(&mut rng));
            members.push(Member::new(
                "intruder".to_owned(),
                pin,
                Some(secret.clone()),
                None,
                Behaviour::Honest,
            ));
        }
        if setup.garbage_unpinned {
            let pin = Pin::from(bytes(&mut rng));
            members.push(Member::new(
                "garbage".to_owned(),
                pin,
                None,
                None,
                Behaviour::Garbage,
            ));
        }
        let mut world = Self {
            scenario,
            seed,
            setup,
            rng,
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            timers: BTreeSet::new(),
            lead,
            members,
            conns: BTreeMap::new(),
            next_conn: 1,
            partitioned: BTreeSet::new(),
            next_phone: 1,
            draining: false,
            faults_armed: None,
            checker,
            steps: 0,
            digest: 0xcbf2_9ce4_8422_2325,
            trace: trace.then(Vec::new),
            line: String::new(),
            served: BTreeSet::new(),
            connections: 0,
            faults: 0,
        };
        for m in 0..world.members.len() {
            let at = world.rng.gen_range(0..1_000);
            world.schedule(at, Ev::Dial { m, incarnation: 0 });
        }
        if world.setup.phone {
            world.schedule(1, Ev::Phone);
        }
        match world.setup.faults_from {
            Some(at) if world.setup.faults_after_join => world.faults_armed = Some(at),
            Some(at) => world.schedule(at, Ev::Fault),
            None => {}
        }
        if let Some((m, at)) = world.setup.remove {
            world.schedule(at, Ev::Remove { m });
        }
        world
    }

    fn schedule(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at.max(self.now), self.seq), ev);
    }

    /// Adds a line to the trace (and to the digest the determinism test compares).
    fn log(&mut self, event: String) {
        self.line.clear();
        let _ = write!(self.line, "{:>8} {event}", self.now);
        for b in self.line.bytes() {
            self.digest = (self.digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        if let Some(trace) = &mut self.trace {
            trace.push(self.line.clone());
        }
    }

    fn violation(&self, fail: Fail) -> Box<crate::Violation> {
        Box::new(crate::Violation {
            scenario: self.scenario,
            seed: self.seed,
            step: self.steps,
            at_ms: self.now,
            kind: fail.kind,
            detail: fail.detail,
            trace: self.trace.clone().unwrap_or_default(),
        })
    }

    /// Runs the scenario to its end; the first broken invariant stops it.
    pub(crate) fn run(mut self) -> Result<Report, Box<crate::Violation>> {
        let mut drain_until = None;
        while let Some(((at, _), ev)) = self.queue.pop_first() {
            if drain_until.is_some_and(|end| at > end) {
                break;
            }
            self.now = at;
            self.steps += 1;
            let checked = self
                .handle(ev)
                .and_then(|()| self.checker.step(at, &self.lead));
            checked.map_err(|f| self.violation(*f))?;
            if let Some(from) = self.faults_armed {
                if self.honest_names().all(|n| self.served.contains(n)) {
                    self.faults_armed = None;
                    self.schedule(from.max(self.now), Ev::Fault);
                }
            }
            let done = if self.setup.phone {
                self.steps >= self.setup.steps
            } else {
                self.all_served() || self.steps >= self.setup.steps
            };
            if done && drain_until.is_none() {
                self.log("drain".to_owned());
                self.drain();
                drain_until = Some(self.now + DRAIN_MS);
            }
        }
        self.checker.finish().map_err(|f| self.violation(*f))?;
        for member in &self.members {
            self.checker
                .audit(&member.name, &member.write_log)
                .map_err(|f| self.violation(*f))?;
        }
        self.checker
            .audit_total(self.members.iter().map(|m| m.write_log.len()).sum())
            .map_err(|f| self.violation(*f))?;
        if !self.all_served() {
            let missing: Vec<&str> = self.honest_names().filter(|n| !self.is_served(n)).collect();
            return Err(self.violation(Fail {
                kind: ViolationKind::Liveness,
                detail: format!("members not back after the drain: {missing:?}"),
            }));
        }
        let tally = self.checker.tally;
        Ok(Report {
            scenario: self.scenario,
            seed: self.seed,
            steps: self.steps,
            virtual_ms: self.now,
            digest: self.digest,
            phone_requests: tally.issued,
            answered_ok: tally.ok,
            answered_unreachable: tally.unreachable,
            answered_other: tally.other_errors,
            aborted_by_lead_restart: tally.aborted,
            writes_executed: tally.writes,
            connections: self.connections,
            refused_openings: self.lead.refused,
            bad_frames: self.lead.bad_frames,
            joined: self.served.len() as u64,
            faults: self.faults,
            trace: self.trace.unwrap_or_default(),
        })
    }

    /// Faults and phone off, every partition healed; restarts in progress complete.
    fn drain(&mut self) {
        self.draining = true;
        let healed: Vec<usize> = std::mem::take(&mut self.partitioned).into_iter().collect();
        for m in healed {
            let incarnation = self.members[m].incarnation;
            self.schedule(self.now, Ev::Dial { m, incarnation });
        }
    }

    fn honest_names(&self) -> impl Iterator<Item = &str> {
        let removed = self.setup.remove.map(|(m, _)| m);
        self.members
            .iter()
            .enumerate()
            .filter(move |(i, m)| m.behaviour == Behaviour::Honest && Some(*i) != removed)
            .filter(|(_, m)| m.name != "intruder")
            .map(|(_, m)| m.name.as_str())
    }

    fn is_served(&self, name: &str) -> bool {
        self.lead
            .conns
            .values()
            .any(|c| matches!(&c.state, LinkState::Established { name: n, .. } if n == name))
    }

    fn all_served(&self) -> bool {
        self.honest_names().all(|n| self.is_served(n))
    }

    fn handle(&mut self, ev: Ev) -> Check {
        match ev {
            Ev::Deliver { conn, to, bytes } => self.deliver(conn, to, &bytes),
            Ev::Lost { conn, side } => self.lost(conn, side),
            Ev::Dial { m, incarnation } => self.dial(m, incarnation),
            Ev::LeadTimer => {
                self.timers.remove(&self.now);
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_timer(self.now);
                self.apply_lead(outs)
            }
            Ev::Phone => self.phone(),
            Ev::Leave { conn, stream } => {
                if !self.lead.up {
                    return Ok(());
                }
                self.log(format!("phone leaves stream {stream} on {conn}"));
                let outs = self.lead.on_leave(conn, stream, self.now);
                self.apply_lead(outs)
            }
            Ev::Fault => self.fault(),
            Ev::Heal { m } => {
                if self.partitioned.remove(&m) {
                    self.log(format!("heal {}", self.members[m].name));
                }
                Ok(())
            }
            Ev::MemberUp { m } => {
                self.log(format!("member {} up", self.members[m].name));
                let member = &mut self.members[m];
                member.up = true;
                let incarnation = member.incarnation;
                self.schedule(self.now, Ev::Dial { m, incarnation });
                Ok(())
            }
            Ev::LeadUp => {
                self.log("lead up".to_owned());
                self.lead.up = true;
                Ok(())
            }
            Ev::Remove { m } => {
                let (name, pin) = (self.members[m].name.clone(), self.members[m].pin);
                if !self.lead.up {
                    // The command needs the lead; the operator tries again shortly.
                    self.schedule(self.now + 100, Ev::Remove { m });
                    return Ok(());
                }
                self.log(format!("operator removes {name}"));
                self.checker.revoke(&pin);
                let outs = self.lead.remove_member(&name);
                self.apply_lead(outs)
            }
        }
    }

    fn deliver(&mut self, conn: u64, to: Side, bytes: &[u8]) -> Check {
        let Some(c) = self.conns.get(&conn).filter(|c| c.alive) else {
            return Ok(());
        };
        let m = c.m;
        match to {
            Side::Lead => {
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_bytes(conn, bytes, self.now);
                self.apply_lead(outs)
            }
            Side::Member => {
                let outs = self.members[m].on_bytes(conn, bytes, &mut self.rng);
                self.apply_member(m, outs)
            }
        }
    }

    fn lost(&mut self, conn: u64, side: Side) -> Check {
        match side {
            Side::Lead => {
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_conn_lost(conn);
                if !outs.is_empty() || self.lead.conns.contains_key(&conn) {
                    self.log(format!("lead notices loss of {conn}"));
                }
                self.apply_lead(outs)
            }
            Side::Member => {
                let Some(m) = self.conns.get(&conn).map(|c| c.m) else {
                    return Ok(());
                };
                if self.members[m].on_lost(conn) {
                    self.log(format!("{} notices loss of {conn}", self.members[m].name));
                    self.redial(m);
                }
                Ok(())
            }
        }
    }

    /// Schedules the next dial of member `m` after its backoff (with jitter), doubling it.
    fn redial(&mut self, m: usize) {
        let member = &mut self.members[m];
        if !member.up || !member.wants_to_dial() {
            return;
        }
        let backoff = member.backoff_ms;
        member.backoff_ms = (backoff * 2).min(BACKOFF_MAX_MS);
        let incarnation = member.incarnation;
        let delay = backoff / 2 + self.rng.gen_range(0..=backoff / 2);
        self.schedule(self.now + delay, Ev::Dial { m, incarnation });
    }

    fn dial(&mut self, m: usize, incarnation: u64) -> Check {
        let member = &self.members[m];
        if !member.up || member.incarnation != incarnation || member.conn.is_some() {
            return Ok(());
        }
        if self.partitioned.contains(&m) || !self.lead.up {
            self.log(format!("{} dial fails", member.name));
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
                last: [0; 2],
            },
        );
        let pin = member.pin;
        self.log(format!("{} connects as {conn}", member.name));
        let outs = self.lead.on_connect(conn, pin, exporter, self.now);
        self.apply_lead(outs)?;
        let outs = self.members[m].on_connected(conn, exporter, &mut self.rng);
        self.apply_member(m, outs)
    }

    /// Puts a frame on a connection towards `to`.
    fn send(&mut self, conn: u64, to: Side, bytes: Vec<u8>) {
        let Some(c) = self.conns.get(&conn).filter(|c| c.alive) else {
            return;
        };
        let dir = usize::from(to == Side::Member);
        let mut delay = self.rng.gen_range(1..=20);
        if self.rng.gen_bool(self.setup.loss) {
            delay += self.rng.gen_range(200..=2_500);
        }
        let at = (self.now + delay).max(c.last[dir]);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.last[dir] = at;
        }
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
            self.schedule(at, Ev::Deliver { conn, to, bytes });
        }
    }

    /// Ends a connection; each side given a delay notices the loss after it.
    fn kill(&mut self, conn: u64, lead_after: Option<u64>, member_after: Option<u64>) {
        let Some(c) = self.conns.get_mut(&conn).filter(|c| c.alive) else {
            return;
        };
        c.alive = false;
        if let Some(d) = lead_after {
            self.schedule(
                self.now + d,
                Ev::Lost {
                    conn,
                    side: Side::Lead,
                },
            );
        }
        if let Some(d) = member_after {
            self.schedule(
                self.now + d,
                Ev::Lost {
                    conn,
                    side: Side::Member,
                },
            );
        }
    }

    fn apply_lead(&mut self, outs: Vec<LeadOut>) -> Check {
        for out in outs {
            match out {
                LeadOut::Send { conn, frame } => self.send(conn, Side::Member, frame),
                LeadOut::Close { conn, reason } => {
                    self.log(format!("lead closes {conn}: {reason}"));
                    let notice = self.rng.gen_range(1..=20);
                    self.kill(conn, None, Some(notice));
                }
                LeadOut::Answer { phone, result } => {
                    self.log(format!("answer {phone}: {result:?}"));
                    self.checker.on_answer(phone, &result, self.now)?;
                }
                LeadOut::Served { pin, name } => {
                    self.log(format!("lead serves {name}"));
                    self.checker.on_served(&pin, &name)?;
                    self.served.insert(name);
                }
                LeadOut::Relayed {
                    pin,
                    machine,
                    phone,
                } => {
                    self.log(format!("relay {phone} to {machine}"));
                    self.checker.on_relayed(&pin, &machine, phone)?;
                }
                LeadOut::Joined { name } => self.log(format!("lead pins {name}")),
                LeadOut::Subscribed { conn, stream } => {
                    let at = self.now + self.rng.gen_range(100..=5_000);
                    self.schedule(at, Ev::Leave { conn, stream });
                }
                LeadOut::Timer { at } => {
                    if self.timers.insert(at) {
                        self.schedule(at, Ev::LeadTimer);
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_member(&mut self, m: usize, outs: Vec<MemberOut>) -> Check {
        for out in outs {
            match out {
                MemberOut::Send { conn, bytes } => self.send(conn, Side::Lead, bytes),
                MemberOut::Close { conn } => {
                    self.log(format!("{} closes {conn}", self.members[m].name));
                    let notice = self.rng.gen_range(1..=20);
                    self.kill(conn, Some(notice), None);
                    self.redial(m);
                }
                MemberOut::Executed { request_id } => {
                    let name = self.members[m].name.clone();
                    self.log(format!("{name} runs write {request_id}"));
                    self.checker.on_executed(&request_id, &name)?;
                }
                MemberOut::Joined => {
                    self.log(format!("{} joined", self.members[m].name));
                    self.members[m].backoff_ms = BACKOFF_MIN_MS;
                }
                MemberOut::Ready => self.log(format!("{} ready", self.members[m].name)),
            }
        }
        Ok(())
    }

    /// The phone issues one request through the lead.
    fn phone(&mut self) -> Check {
        if self.draining {
            return Ok(());
        }
        let next = self.now + self.rng.gen_range(5..=60);
        self.schedule(next, Ev::Phone);
        if !self.lead.up {
            // The phone cannot reach the lead at all; nothing is relayed.
            return Ok(());
        }
        let m = self.rng.gen_range(0..self.members.len());
        let machine = self.members[m].name.clone();
        let pane = format!("p{}", self.rng.gen_range(0..3));
        let kind = match self.rng.gen_range(0..100) {
            0..=34 => RelayKind::Snapshot {
                pane,
                scrollback: None,
            },
            35..=49 => RelayKind::PaneList,
            50..=79 => RelayKind::Input {
                pane,
                text: Some(format!("echo {}", self.next_phone)),
                keys: vec!["Enter".to_owned()],
            },
            80..=89 => RelayKind::Rename {
                pane,
                name: format!("n{}", self.next_phone),
            },
            _ => RelayKind::Subscribe {
                pane,
                last_seq: None,
            },
        };
        let id = self.next_phone;
        self.next_phone += 1;
        self.log(format!("phone {id}: {machine} {kind:?}"));
        self.checker
            .on_issue(id, &machine, kind.is_write(), self.now + REQUEST_TIMEOUT_MS);
        let outs = self.lead.on_phone(id, &machine, kind, self.now);
        self.apply_lead(outs)
    }

    /// One random fault, then the next one.
    fn fault(&mut self) -> Check {
        if self.draining {
            return Ok(());
        }
        let next = self.now + self.rng.gen_range(200..=1_500);
        self.schedule(next, Ev::Fault);
        self.faults += 1;
        let m = self.rng.gen_range(0..self.members.len());
        let member_conn = self.members[m].conn.as_ref().map(|c| c.id);
        match self.rng.gen_range(0..100) {
            0..=39 => {
                if !self.partitioned.insert(m) {
                    return Ok(());
                }
                self.log(format!("partition {}", self.members[m].name));
                if let Some(conn) = member_conn {
                    let (a, b) = (self.idle(), self.idle());
                    self.kill(conn, Some(a), Some(b));
                }
                let heal = self.now + self.rng.gen_range(500..=8_000);
                self.schedule(heal, Ev::Heal { m });
            }
            40..=64 => {
                if !self.members[m].up {
                    return Ok(());
                }
                self.log(format!("restart {}", self.members[m].name));
                self.members[m].crash();
                if let Some(conn) = member_conn {
                    let a = self.idle();
                    self.kill(conn, Some(a), None);
                }
                let up = self.now + self.rng.gen_range(200..=3_000);
                self.schedule(up, Ev::MemberUp { m });
            }
            65..=79 => {
                if !self.lead.up {
                    return Ok(());
                }
                self.log("restart lead".to_owned());
                let (phones, conns) = self.lead.crash();
                self.checker.on_aborted(&phones)?;
                for conn in conns {
                    let b = self.idle();
                    self.kill(conn, None, Some(b));
                }
                let up = self.now + self.rng.gen_range(500..=4_000);
                self.schedule(up, Ev::LeadUp);
            }
            _ => {
                if let Some(conn) = member_conn {
                    self.log(format!("drop connection {conn}"));
                    let (a, b) = (self.rng.gen_range(0..500), self.rng.gen_range(0..500));
                    self.kill(conn, Some(a), Some(b));
                }
            }
        }
        Ok(())
    }

    /// When a side notices a silent loss: its idle timeout, 0–3 s.
    fn idle(&mut self) -> u64 {
        self.rng.gen_range(0..=3_000)
    }
}

fn bytes(rng: &mut StdRng) -> [u8; 32] {
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
