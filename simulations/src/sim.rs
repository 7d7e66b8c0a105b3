//! The world: a discrete-event loop over a virtual clock (milliseconds) that applies the effects of
//! the lead and member models and asks the checker after every event. Its parts: the network
//! (`net.rs`: connections of independent streams, latency, loss, partitions), the phone
//! (`phone.rs`) and the fault injector (`faults.rs`).
//!
//! **Phone.** Every 5–60 ms (while the lead is up) a request for a random machine (including the
//! misbehaving ones, which the lead must answer `member unreachable` or, for the served garbage
//! peer, `member response unreadable`) and pane (`p2` does not exist): snapshots, pane lists,
//! inputs and renames (writes), subscriptions (half of them to the pane's colours, which only the
//! shipped relay server follows), which the phone leaves 0.1–5 s later. Member `m01` does not
//! declare input, so the lead must refuse writes to it.
//!
//! **Faults**, every 0.2–1.5 s: a partition of one member (healed 0.5–8 s later), a member
//! restart (back 0.2–3 s later), a lead restart (back 0.5–4 s later; its store and audit log
//! survive, links and requests in flight do not), or a dropped connection.

mod deputy;
mod faults;
mod net;
mod phone;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use collie_crew::hello::{Capability, CrewSecret, Invite, JoinSecret};
use collie_crew::pin::Pin;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::runtime::Runtime;

use crate::checker::{Check, Checker, Fail};
use crate::lead::{wall_clock, Lead, LeadOut};
use crate::member::{Behaviour, Member, MemberOut};
use crate::relay::at;
use crate::{Bug, Report, Scenario, ViolationKind};
use collie_actors::crew_link::link::dialer::Dialer;

use self::net::{bytes, NetConn, Side};

/// How long a run keeps going after its step budget, with faults and phone off, for everything
/// to settle.
const DRAIN_MS: u64 = 30_000;

#[derive(Debug)]
enum Ev {
    Deliver {
        conn: u64,
        stream: u64,
        to: Side,
        bytes: Vec<u8>,
    },
    StreamEnd {
        conn: u64,
        stream: u64,
        to: Side,
    },
    Lost {
        conn: u64,
        side: Side,
    },
    Dial {
        m: usize,
        incarnation: u64,
    },
    LeadTimer {
        conn: u64,
    },
    MemberTimer {
        m: usize,
        conn: u64,
    },
    Phone,
    Leave {
        conn: u64,
        stream: u64,
    },
    Fault,
    Heal {
        m: usize,
    },
    MemberUp {
        m: usize,
    },
    LeadUp,
    AuditUp,
    Remove {
        m: usize,
    },
    /// The operator pairs or revokes one of the phone's devices on the lead.
    Devices,
    /// The lead's partition from everyone heals.
    LeadReconnect,
    /// The lead's push loop tries a failed copy again.
    PushRetry,
}

/// How a scenario sets the world up.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub(crate) honest: usize,
    /// The member count the command line asked for, if any (for the replay command).
    pub(crate) members: Option<usize>,
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
    /// Hold the faults back until every honest member has been served once (a scenario about
    /// relaying starts from a whole crew; joining under faults is [`Scenario::JoinUnderFaults`]).
    pub(crate) faults_after_join: bool,
    pub(crate) loss: f64,
    /// Events to run before draining.
    pub(crate) steps: u64,
    /// Whether the phone issues requests. Without a phone the run drains as soon as every honest
    /// member is served (the join scenarios).
    pub(crate) phone: bool,
    /// Member `m00` is the deputy, the phone holds devices of the lead's registry and goes to the
    /// deputy's door when the lead does not answer ([`Scenario::Deputy`]).
    pub(crate) deputy: bool,
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
    /// Lead timers scheduled, by time and connection (one event for each).
    timers: BTreeSet<(u64, u64)>,
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
    /// The honest members (never removed, not the intruder) by name.
    honest: BTreeSet<String>,
    /// How many of them have been served at least once.
    honest_served: usize,
    /// Whether every honest member is online, as of the lead's `online_changes` count.
    all_online: (u64, bool),
    connections: u64,
    faults: u64,
    /// The lead's connections the current event touched (for the checker).
    touched: BTreeSet<u64>,
    /// Honest members that must be served again (their partition healed, they restarted, or the
    /// lead did), by when.
    expected: BTreeMap<usize, u64>,
    /// The same, by time.
    expected_by: BTreeSet<(u64, usize)>,
    /// The deputy's part of the world (`deputy.rs`).
    dep: deputy::DeputyWorld,
    /// The runtime the members' relay servers are polled in, for its timer (see
    /// `member/served.rs`); never driven. Declared last: it outlives the members.
    _runtime: Runtime,
}

impl World {
    pub(crate) fn new(
        scenario: Scenario,
        seed: u64,
        setup: Setup,
        bug: Option<Bug>,
        trace: bool,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime with only a time driver opens no file or socket");
        let handle = runtime.handle();
        let mut rng = StdRng::seed_from_u64(seed);
        let secret = CrewSecret::from(bytes(&mut rng));
        let mut lead = Lead::new("lead".to_owned(), secret.clone(), bug);
        let mut checker = Checker::default();
        let mut members = Vec::new();
        let expires = wall_clock(10 * 60 * 1000);
        let mut invited = |name: String, behaviour, rng: &mut StdRng, lead: &mut Lead| {
            let pin = Pin::from(bytes(rng));
            let join = JoinSecret::from(bytes(rng));
            lead.invite(Invite::new(&join, expires), 0);
            checker.trust(pin, &name);
            Member::new(name, pin, None, Some(join), behaviour, handle.clone())
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
            checker.garbled(&member.name);
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
                handle.clone(),
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
                handle.clone(),
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
            honest: BTreeSet::new(),
            honest_served: 0,
            all_online: (u64::MAX, false),
            connections: 0,
            faults: 0,
            touched: BTreeSet::new(),
            expected: BTreeMap::new(),
            expected_by: BTreeSet::new(),
            dep: deputy::DeputyWorld::new(bug),
            _runtime: runtime,
        };
        if world.setup.deputy {
            world.name_deputy();
        }
        world.honest = world.honest_names().map(str::to_owned).collect();
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
            members: self.setup.members,
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
            // The lead's own clock, for what it decides without being told the time (when a
            // failed copy is retried, when a link ended).
            self.lead.clock = at;
            self.steps += 1;
            self.touched.clear();
            let checked = self
                .handle(ev)
                .and_then(|()| self.checker.step(at, &self.lead, &self.touched));
            checked
                .and_then(|()| self.back_in_time())
                .map_err(|f| self.violation(*f))?;
            if let Some(from) = self.faults_armed {
                if self.honest_served == self.honest.len() {
                    self.faults_armed = None;
                    self.schedule(from.max(self.now), Ev::Fault);
                }
            }
            let done = if self.setup.phone {
                self.steps >= self.setup.steps
            } else {
                self.all_online() || self.steps >= self.setup.steps
            };
            if done && drain_until.is_none() {
                self.log("drain".to_owned());
                self.drain();
                // The deputy scenario's lead may stay down 25 s more before it drains.
                let longest_down = if self.setup.deputy { 25_000 } else { 0 };
                drain_until = Some(self.now + DRAIN_MS + longest_down);
            }
        }
        self.checker.finish().map_err(|f| self.violation(*f))?;
        for member in &self.members {
            self.checker
                .audit(&member.name, &member.write_log())
                .map_err(|f| self.violation(*f))?;
        }
        self.checker
            .audit_total(self.members.iter().map(|m| m.write_log().len()).sum())
            .map_err(|f| self.violation(*f))?;
        self.checker
            .lead_audit_log(&self.lead.disk.relayed)
            .map_err(|f| self.violation(*f))?;
        if !self.all_online() {
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
            repeat_joins: self.lead.repeat_joins,
            joined: self.served.len() as u64,
            faults: self.faults,
            door_served: self.dep.ghost.served,
            door_standby: self.dep.ghost.standby,
            revoked_in_window: self.dep.ghost.revoked_in_window,
            longest_window_ms: self.dep.ghost.longest_window,
            copies: self.dep.copies,
            trace: self.trace.unwrap_or_default(),
        })
    }

    /// Faults and phone off, every partition healed; restarts in progress complete.
    fn drain(&mut self) {
        self.draining = true;
        self.lead.disk.audit_up = true;
        if std::mem::take(&mut self.dep.lead_cut) {
            for m in 0..self.members.len() {
                self.expect_back(m);
            }
        }
        // Each healed member redials when its own link's backoff says, and must be back in time.
        let healed: Vec<usize> = std::mem::take(&mut self.partitioned).into_iter().collect();
        for m in healed {
            self.expect_back(m);
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
        self.lead.is_online(name)
    }

    /// Whether every honest member is online now (asked of the lead only after its online table
    /// may have changed).
    fn all_online(&mut self) -> bool {
        if self.all_online.0 != self.lead.online_changes {
            let all = self.honest.iter().all(|n| self.lead.is_online(n));
            self.all_online = (self.lead.online_changes, all);
        }
        self.all_online.1
    }

    fn handle(&mut self, ev: Ev) -> Check {
        match &ev {
            Ev::Deliver { conn, .. }
            | Ev::StreamEnd { conn, .. }
            | Ev::Lost { conn, .. }
            | Ev::LeadTimer { conn }
            | Ev::Leave { conn, .. } => {
                self.touched.insert(*conn);
            }
            _ => {}
        }
        match ev {
            Ev::Deliver {
                conn,
                stream,
                to,
                bytes,
            } => self.deliver(conn, stream, to, &bytes),
            Ev::StreamEnd { conn, stream, to } => self.stream_end(conn, stream, to),
            Ev::Lost { conn, side } => self.lost(conn, side),
            Ev::Dial { m, incarnation } => self.dial(m, incarnation),
            Ev::LeadTimer { conn } => {
                self.timers.remove(&(self.now, conn));
                if !self.lead.up {
                    return Ok(());
                }
                let outs = self.lead.on_timer(conn, self.now);
                self.apply_lead(outs)
            }
            Ev::MemberTimer { m, conn } => {
                if !self.members[m].up {
                    return Ok(());
                }
                let outs = self.members[m].on_timer(conn, self.now);
                self.apply_member(m, outs)
            }
            Ev::Phone => self.phone(),
            Ev::Leave { conn, stream } => {
                if !self.lead.up {
                    return Ok(());
                }
                self.log(format!("phone leaves stream {stream} on {conn}"));
                let outs = self.lead.on_leave(conn, stream);
                self.apply_lead(outs)
            }
            Ev::Fault => self.fault(),
            Ev::Heal { m } => {
                if self.partitioned.remove(&m) {
                    self.log(format!("heal {}", self.members[m].name));
                    self.expect_back(m);
                }
                Ok(())
            }
            Ev::MemberUp { m } => {
                self.log(format!("member {} up", self.members[m].name));
                let member = &mut self.members[m];
                member.up = true;
                member.reach = (false, self.now);
                // A new process: its link starts afresh.
                member.dialer = Dialer::new(at(self.now));
                let incarnation = member.incarnation;
                self.schedule(self.now, Ev::Dial { m, incarnation });
                self.expect_back(m);
                Ok(())
            }
            Ev::AuditUp => {
                if !self.lead.disk.audit_up {
                    self.log("audit log back".to_owned());
                    self.lead.disk.audit_up = true;
                }
                Ok(())
            }
            Ev::LeadUp => {
                self.log("lead up".to_owned());
                self.lead.start(self.now);
                for m in 0..self.members.len() {
                    self.expect_back(m);
                }
                Ok(())
            }
            Ev::Devices => self.devices(),
            Ev::LeadReconnect => {
                self.dep.lead_cut = false;
                self.log("the lead is reachable again".to_owned());
                for m in 0..self.members.len() {
                    self.expect_back(m);
                }
                Ok(())
            }
            Ev::PushRetry => {
                let outs = self.lead.push(self.now);
                self.apply_lead(outs)
            }
            Ev::Remove { m } => {
                let (name, pin) = (self.members[m].name.clone(), self.members[m].pin);
                if !self.lead.up {
                    // The command needs the lead; the operator tries again shortly.
                    self.schedule(self.now + 100, Ev::Remove { m });
                    return Ok(());
                }
                self.log(format!("operator removes {name}"));
                let Some(outs) = self.lead.remove_member(&name) else {
                    self.log("removal fails: audit unavailable".to_owned());
                    self.schedule(self.now + 100, Ev::Remove { m });
                    return Ok(());
                };
                self.checker.revoke(&pin);
                self.apply_lead(outs)
            }
        }
    }

    fn apply_lead(&mut self, outs: Vec<LeadOut>) -> Check {
        for out in outs {
            if let LeadOut::Send { conn, .. }
            | LeadOut::EndStream { conn, .. }
            | LeadOut::Close { conn, .. }
            | LeadOut::Subscribed { conn, .. }
            | LeadOut::Timer { conn, .. } = &out
            {
                self.touched.insert(*conn);
            }
            match out {
                LeadOut::Send {
                    conn,
                    stream,
                    frame,
                } => self.send(conn, stream, Side::Member, frame),
                LeadOut::EndStream { conn, stream } => self.end_stream(conn, stream, Side::Member),
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
                    self.checker.one_link(&self.lead, &name)?;
                    if self.honest.contains(&name) && !self.served.contains(&name) {
                        self.honest_served += 1;
                    }
                    if let Some(m) = self.members.iter().position(|x| x.name == name) {
                        self.reconnected(m);
                    }
                    let deputy = self.lead.deputy.as_ref() == Some(&name);
                    self.served.insert(name);
                    if deputy {
                        // A new link of the deputy: the copy again, in full.
                        let outs = self.lead.push(self.now);
                        self.apply_lead(outs)?;
                    }
                }
                LeadOut::Relayed {
                    pin,
                    machine,
                    phone,
                } => {
                    self.log(format!("relay {phone} to {machine}"));
                    self.checker.on_relayed(&pin, &machine, phone)?;
                }
                LeadOut::Audited { request_id } => {
                    self.log(format!("lead audits write {request_id}"));
                    self.checker.on_lead_audit(&request_id)?;
                }
                LeadOut::Joined { name } => self.log(format!("lead pins {name}")),
                LeadOut::JoinRefused { name, error } => {
                    self.log(format!("lead refuses the join of {name}: {error:?}"));
                    // Refused for the lead's own fault (its store or audit log failed): a fault
                    // like any other, so the member's promise to be back starts again from now.
                    if matches!(error, collie_crew::hello::JoinError::Unknown) {
                        if let Some(m) = self.members.iter().position(|x| x.name == name) {
                            if self.expected.contains_key(&m) {
                                self.expect_back(m);
                            }
                        }
                    }
                }
                LeadOut::Subscribed { conn, stream } => {
                    let at = self.now + self.rng.gen_range(100..=5_000);
                    self.schedule(at, Ev::Leave { conn, stream });
                }
                LeadOut::Timer { conn, at } => {
                    if self.timers.insert((at, conn)) {
                        self.schedule(at, Ev::LeadTimer { conn });
                    }
                }
                LeadOut::Pushing { conn, version } => {
                    self.log(format!("lead pushes copy {version} on {conn}"));
                }
                LeadOut::Pushed { version, ok, retry } => {
                    self.log(format!(
                        "copy {version}: {}",
                        if ok { "taken" } else { "failed" }
                    ));
                    if ok {
                        self.dep.copies += 1;
                    }
                    match retry {
                        Some(at) => self.schedule(at, Ev::PushRetry),
                        None => {
                            let outs = self.lead.push(self.now);
                            self.apply_lead(outs)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_member(&mut self, m: usize, outs: Vec<MemberOut>) -> Check {
        for out in outs {
            match out {
                MemberOut::Send {
                    conn,
                    stream,
                    bytes,
                } => self.send(conn, stream, Side::Lead, bytes),
                MemberOut::EndStream { conn, stream } => self.end_stream(conn, stream, Side::Lead),
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
                    // The member's link starts now, as `member_loop` starts after a join.
                    self.members[m].dialer = Dialer::new(at(self.now));
                }
                MemberOut::Ready => {
                    self.log(format!("{} ready", self.members[m].name));
                    if self.members[m].deputy {
                        if let Some(conn) = self.members[m].conn.as_ref().map(|c| c.id) {
                            self.dep.ghost.linked(conn, self.now);
                        }
                    }
                }
                MemberOut::Timer { conn, at } => {
                    self.schedule(at, Ev::MemberTimer { m, conn });
                }
            }
        }
        Ok(())
    }
}

/// How long a member may take to be served again after its partition heals: noticing the lead's
/// silence, the longest backoff delay, and one opening.
pub(crate) fn back_within() -> u64 {
    use collie_actors::crew_link::backoff::CAP;
    use collie_actors::crew_link::link::{MEMBER_SILENCE, OPENING_TIMEOUT};
    crate::relay::ms(MEMBER_SILENCE + CAP + OPENING_TIMEOUT)
}

impl World {
    /// Member `m`'s partition healed, it restarted, or the lead did: if it is honest and nothing
    /// else is wrong, it must be served again within [`back_within`].
    fn expect_back(&mut self, m: usize) {
        self.forget_expected(m);
        let member = &self.members[m];
        let reachable =
            member.up && self.lead.up && !self.dep.lead_cut && !self.partitioned.contains(&m);
        if self.honest.contains(&member.name) && reachable && !self.lead.is_online(&member.name) {
            let by = self.now + back_within();
            self.expected.insert(m, by);
            self.expected_by.insert((by, m));
        }
    }

    /// Another fault hit member `m` (or the lead): its earlier promise no longer holds.
    pub(super) fn forget_expected(&mut self, m: usize) {
        if let Some(by) = self.expected.remove(&m) {
            self.expected_by.remove(&(by, m));
        }
    }

    /// A fault hit the lead: no member's promise holds.
    pub(super) fn forget_all_expected(&mut self) {
        self.expected.clear();
        self.expected_by.clear();
    }

    /// Member `m` was served.
    fn reconnected(&mut self, m: usize) {
        self.forget_expected(m);
    }

    /// Whether every healed member came back in time.
    fn back_in_time(&self) -> Check {
        match self.expected_by.first() {
            Some(&(by, m)) if by < self.now => Err(Box::new(Fail {
                kind: ViolationKind::Liveness,
                detail: format!(
                    "{} not served again by {by} ms, {} ms after it could come back",
                    self.members[m].name,
                    back_within()
                ),
            })),
            _ => Ok(()),
        }
    }
}
