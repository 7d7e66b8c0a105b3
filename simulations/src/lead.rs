//! The lead: the real [`LeadCore`] — joins, hellos, the online table, removals — driven by a shell
//! that does for it what the crew actor (`actors/src/crew_link/lead_role.rs`) and its link tasks
//! (`link.rs`) do, with the I/O replaced by [`LeadOut`]s the harness applies.
//!
//! **What the shell does, as the actor does it.** A join's or removal's `Plan` has its durable
//! effects applied in order — the audit line to [`Disk::audit`], the store batch to the in-memory
//! `crew` table — and only then is it committed; the effects that follow change the TLS pin set and
//! admission, close connections (the core's connection numbers map to the harness's as the actor's
//! `links` map them to QUIC connections), and publish the relay table the phone's requests are routed
//! by (`name → link`, rebuilt from [`LeadCore::members`] and [`LeadCore::online`] as the actor's
//! `publish` does). A restarted lead opens a fresh core from what [`Disk`] holds.
//!
//! **What the link tasks do** (`lead/link.rs` for the streams of a connection). TLS admits a
//! pinned certificate, or any while an invite is open ([`ClientAdmission`]); a hello from an
//! unpinned certificate is refused before the core sees it. Relayed requests go through one
//! [`RelayLink`] per link (`relay.rs`).
//!
//! **A broken lead** ([`Bug`]) is this shell misapplying or bypassing the core: serving a hello the
//! core refused, re-sending a write whose stream timed out, never expiring a request, routing a
//! request to whichever link comes first, or committing a plan without its durable effects.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, SystemTime};

use collie_actors::crew_link::lead::{Effect, JoinDecision, LeadCore};
use collie_actors::crew_link::link::OPENING_TIMEOUT;
use collie_crew::hello::{
    Capability, CrewSecret, Exporter, Hello, HelloConfig, Invite, JoinError, JoinReply,
    JoinRequest, LeadHandshake,
};
use collie_crew::pin::Pin;
use collie_crew::relay::client::Limits;
use collie_crew::relay::{RelayError, RelayKind, RelayOk};
use collie_crew::tls::ClientAdmission;
use collie_crew::wire;

use crate::deputy::{Pusher, Registry, RETRY_MS};
use crate::disk::Disk;
use crate::relay::{ms, RelayLink, Waiter};
use crate::stream;
use crate::Bug;

mod link;

pub(crate) use self::link::{LeadConn, LinkState};

/// The lead's bridge version, in its hellos.
const VERSION: &str = "sim";

/// An effect of the lead, applied by the harness.
#[derive(Debug)]
pub(crate) enum LeadOut {
    /// Put a frame on a stream of the connection (towards the member).
    Send {
        conn: u64,
        stream: u64,
        frame: Vec<u8>,
    },
    /// The lead is done with a stream (finished or dropped it): the member sees it end.
    EndStream { conn: u64, stream: u64 },
    /// Close the connection.
    Close { conn: u64, reason: String },
    /// Answer a phone request.
    Answer {
        phone: u64,
        result: Result<RelayOk, RelayError>,
    },
    /// A hello was accepted: the peer with this pin is now served as `name`.
    Served { pin: Pin, name: String },
    /// A phone request for `machine` was sent to the member with this pin.
    Relayed {
        pin: Pin,
        machine: String,
        phone: u64,
    },
    /// The lead wrote the audit line of a relayed write the member did.
    Audited { request_id: String },
    /// A join was committed: the member is pinned.
    Joined { name: String },
    /// A join was refused.
    JoinRefused { name: String, error: JoinError },
    /// A subscription runs on this stream (the phone will leave it some time later).
    Subscribed { conn: u64, stream: u64 },
    /// Call [`Lead::on_timer`] for this connection at this virtual time (each link task sleeps
    /// until its own deadlines).
    Timer { conn: u64, at: u64 },
    /// A copy for the deputy went out on `conn`.
    Pushing { conn: u64, version: u64 },
    /// The deputy's answer to a copy, or its failure: call [`Lead::push`] (now, or at `retry`).
    Pushed {
        version: u64,
        ok: bool,
        retry: Option<u64>,
    },
}

/// The lead bridge.
#[derive(Debug)]
pub(crate) struct Lead {
    name: String,
    /// What survives a restart.
    pub(crate) disk: Disk,
    bug: Option<Bug>,
    pub(crate) up: bool,
    core: LeadCore,
    /// The TLS verifier's pin set and admission, as the core's effects set them.
    pins: BTreeSet<Pin>,
    admission: ClientAdmission,
    /// Connections, by the harness's number.
    pub(crate) conns: BTreeMap<u64, LeadConn>,
    /// Member links: the core's connection number → the harness's.
    links: BTreeMap<u64, u64>,
    /// The published relay table: member name → the core's connection number of its link.
    relays: BTreeMap<String, u64>,
    /// Frames that were malformed or oversized (each ended its stream).
    pub(crate) bad_frames: u64,
    /// Openings refused (TLS, unpinned hello, bad proof, refused join, no opening in time).
    pub(crate) refused: u64,
    /// Joins accepted again for a machine already pinned (its first acceptance was lost).
    pub(crate) repeat_joins: u64,
    /// Plans committed (invites, joins, removals), for the checker's durability check.
    pub(crate) commits: u64,
    /// Moves whenever the online table may have changed (a hello, a link gone, a restart), so the
    /// harness asks who is online only then.
    pub(crate) online_changes: u64,
    /// The last virtual time the lead was called at (for [`Bug::ShunReturning`]).
    pub(crate) clock: u64,
    /// When each machine's first link ended (for [`Bug::ShunReturning`]).
    ended: BTreeMap<Pin, u64>,
    /// The member the operator named deputy (SPEC §13).
    pub(crate) deputy: Option<String>,
    /// The device registry (in the store: it survives restarts).
    pub(crate) registry: Registry,
    /// The push loop's memory (in the process: lost on a restart).
    pub(crate) pusher: Pusher,
}

/// Wall-clock time of virtual time `ms` (for invite expiry), from a fixed epoch.
pub(crate) fn wall_clock(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000) + Duration::from_millis(ms)
}

impl Lead {
    /// A lead that has just run `collie crew init`.
    pub(crate) fn new(name: String, secret: CrewSecret, bug: Option<Bug>) -> Self {
        let disk = Disk::new(secret.clone());
        // An empty core until `start` opens the one the process runs with.
        let (core, _) = LeadCore::open(
            name.clone(),
            VERSION.to_owned(),
            secret,
            Vec::new(),
            Vec::new(),
            wall_clock(0),
        );
        let mut lead = Self {
            name,
            disk,
            bug,
            up: false,
            core,
            pins: BTreeSet::new(),
            admission: ClientAdmission::PinnedOnly,
            conns: BTreeMap::new(),
            links: BTreeMap::new(),
            relays: BTreeMap::new(),
            bad_frames: 0,
            refused: 0,
            repeat_joins: 0,
            commits: 0,
            online_changes: 0,
            clock: 0,
            ended: BTreeMap::new(),
            deputy: None,
            registry: Registry::default(),
            pusher: Pusher::default(),
        };
        lead.start(0);
        lead
    }

    /// The lead process starts: a fresh core from what the disk holds, as `start_lead` opens it.
    pub(crate) fn start(&mut self, now: u64) {
        self.online_changes += 1;
        let (members, invites) = self.disk.registry();
        let (core, effects) = LeadCore::open(
            self.name.clone(),
            VERSION.to_owned(),
            self.disk.secret.clone(),
            members,
            invites,
            wall_clock(now),
        );
        self.core = core;
        self.up = true;
        self.registry.new_run();
        self.pusher = Pusher::default();
        self.pins.clear();
        self.admission = ClientAdmission::PinnedOnly;
        let mut rest = Vec::new();
        for effect in effects {
            match effect {
                // Forgetting invites expired long ago, applied at once at start.
                Effect::Store(changes) => self.disk.apply(&changes),
                other => rest.push(other),
            }
        }
        let mut outs = Vec::new();
        self.apply(rest, &mut outs);
    }

    /// `collie crew invite`: durable first, then committed.
    pub(crate) fn invite(&mut self, invite: Invite, now: u64) {
        let plan = self
            .core
            .invite(invite)
            .expect("an invite always serializes to JSON");
        if self.durable(&plan.durable) {
            self.commits += 1;
            let effects = self.core.commit_invite(plan, wall_clock(now));
            self.apply(effects, &mut Vec::new());
        }
    }

    /// Whether the TLS handshake of a peer presenting `pin` completes (a refusal is counted).
    pub(crate) fn tls_admits(&mut self, pin: &Pin) -> bool {
        let admitted = self.pins.contains(pin)
            || self.admission == ClientAdmission::JoinAllowed
            || self.bug == Some(Bug::ServeUnpinned);
        if !admitted {
            self.refused += 1;
        }
        admitted
    }

    /// Whether the members the core pins are exactly those the store holds (the two phases of
    /// every plan kept together); what differs, if not.
    pub(crate) fn registry_agrees(&self) -> Result<(), String> {
        let stored: BTreeSet<(String, Pin)> = self.disk.stored.values().cloned().collect();
        let live: BTreeSet<(String, Pin)> = self
            .core
            .members()
            .map(|m| (m.name.clone(), m.pin))
            .collect();
        if stored == live {
            return Ok(());
        }
        let names = |set: &BTreeSet<(String, Pin)>| -> Vec<String> {
            set.iter().map(|(n, _)| n.clone()).collect()
        };
        Err(format!(
            "the lead pins {:?}, its store holds {:?}",
            names(&live),
            names(&stored)
        ))
    }

    /// Whether the member called `name` is online.
    pub(crate) fn is_online(&self, name: &str) -> bool {
        self.up && self.core.online(name).is_some()
    }

    /// The durable effects of a plan, in order; `false` if one cannot be made (the plan is then
    /// dropped, as the actor drops it: what was already written stays, as an audit line written
    /// before a store failure stays).
    fn durable(&mut self, effects: &[Effect]) -> bool {
        if self.bug == Some(Bug::SkipDurable) {
            return true;
        }
        for effect in effects {
            match effect {
                Effect::Audit(line) if self.disk.audit_up => self.disk.audit.push(line.clone()),
                Effect::Audit(_) => return false,
                Effect::Store(changes) => self.disk.apply(changes),
                _ => return false,
            }
        }
        true
    }

    /// The effects that follow a commit, as the actor's `apply` does them (a connection closed
    /// here ends its link task, which reports it gone: its effects are applied too).
    fn apply(&mut self, effects: Vec<Effect>, outs: &mut Vec<LeadOut>) {
        let mut queue = VecDeque::from(effects);
        while let Some(effect) = queue.pop_front() {
            match effect {
                Effect::Pin(pin) => {
                    self.pins.insert(pin);
                }
                Effect::Unpin(pin) => {
                    self.pins.remove(&pin);
                }
                Effect::Admission(admission) => self.admission = admission,
                Effect::Close { conn, reason } => {
                    if let Some(net) = self.links.remove(&conn) {
                        queue.extend(self.end(net, outs));
                        outs.push(LeadOut::Close {
                            conn: net,
                            reason: reason.to_owned(),
                        });
                    }
                }
                Effect::Publish => self.publish(),
                // The actor logs these as misplaced and ignores them.
                Effect::Audit(_) | Effect::Store(_) => {}
            }
        }
    }

    /// Rebuilds the relay table from the core's members and online table.
    fn publish(&mut self) {
        let links = &self.links;
        let core = &self.core;
        self.relays = core
            .members()
            .filter_map(|m| {
                let online = core.online(&m.name)?;
                links
                    .contains_key(&online.conn)
                    .then(|| (m.name.clone(), online.conn))
            })
            .collect();
    }

    /// A connection ended (closed here or lost): its waiting requests are answered `member
    /// unreachable`. Returns the core's effects of its link going.
    fn end(&mut self, conn: u64, outs: &mut Vec<LeadOut>) -> Vec<Effect> {
        let Some(c) = self.conns.remove(&conn) else {
            return Vec::new();
        };
        let LinkState::Established {
            name,
            core_conn,
            mut relay,
        } = c.state
        else {
            return Vec::new();
        };
        if self.bug == Some(Bug::ShunReturning) {
            self.ended.entry(c.pin).or_insert(self.clock);
        }
        let mut r = Vec::new();
        relay.close(&mut r);
        self.relay_outs(conn, r, outs);
        match core_conn {
            Some(core_conn) => {
                self.links.remove(&core_conn);
                self.online_changes += 1;
                self.core.gone(&name, core_conn)
            }
            None => Vec::new(),
        }
    }

    /// Closes a connection with `reason`.
    fn close(&mut self, conn: u64, reason: &str, outs: &mut Vec<LeadOut>) {
        let effects = self.end(conn, outs);
        outs.push(LeadOut::Close {
            conn,
            reason: reason.to_owned(),
        });
        self.apply(effects, outs);
    }

    fn refuse(&mut self, conn: u64, reason: &str, outs: &mut Vec<LeadOut>) {
        self.refused += 1;
        self.close(conn, reason, outs);
    }

    fn on_hello(&mut self, conn: u64, hello: &Hello, now: u64, outs: &mut Vec<LeadOut>) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let (pin, exporter) = (c.pin, c.exporter);
        let bypass = self.bug == Some(Bug::ServeUnpinned);
        // link.rs: an unpinned certificate got through TLS only to join.
        if !self.pins.contains(&pin) && !bypass {
            return self.refuse(conn, "not a member of this crew", outs);
        }
        if self.ended.get(&pin).is_some_and(|t| now >= *t) {
            return self.refuse(conn, "come back later", outs);
        }
        let (answer, name, core_conn, capabilities, effects) = match self
            .core
            .hello(hello, &pin, exporter)
            .inspect(|_| self.online_changes += 1)
        {
            Ok(s) => (s.answer, s.name, Some(s.conn), s.capabilities, s.effects),
            Err(reason) => match bypass.then(|| self.serve_anyway(hello, exporter)) {
                Some(Some((answer, capabilities))) => {
                    (answer, hello.name.clone(), None, capabilities, Vec::new())
                }
                _ => return self.refuse(conn, &reason, outs),
            },
        };
        let Ok(frame) = wire::encode_frame(&answer) else {
            return self.refuse(conn, "cannot encode the hello", outs);
        };
        if let Some(core_conn) = core_conn {
            self.links.insert(core_conn, conn);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.clock.linked(crate::relay::at(now));
            outs.push(LeadOut::Timer {
                conn,
                at: ms(c.clock.deadline()),
            });
            c.state = LinkState::Established {
                name: name.clone(),
                core_conn,
                relay: Box::new(RelayLink::new(capabilities, Limits::default())),
            };
        }
        self.apply(effects, outs);
        outs.push(LeadOut::Send {
            conn,
            stream: stream::OPENING,
            frame,
        });
        outs.push(LeadOut::Served { pin, name });
    }

    /// The [`Bug::ServeUnpinned`] shell's own handshake, under whatever name the hello gives.
    fn serve_anyway(
        &self,
        hello: &Hello,
        exporter: Exporter,
    ) -> Option<(Hello, BTreeSet<Capability>)> {
        let config = HelloConfig::new(
            self.name.clone(),
            VERSION.to_owned(),
            self.disk.secret.clone(),
        );
        let mut handshake = LeadHandshake::new(config, hello.name.clone(), exporter);
        let answer = handshake.on_hello(hello).ok()?;
        let capabilities = handshake.member()?.capabilities.clone();
        Some((answer, capabilities))
    }

    fn on_join(&mut self, conn: u64, request: &JoinRequest, now: u64, outs: &mut Vec<LeadOut>) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let pin = c.pin;
        let reply = match self.core.join(request, &pin, wall_clock(now)) {
            JoinDecision::Reply(reply) => {
                if matches!(reply, JoinReply::Accepted(_)) {
                    self.repeat_joins += 1;
                }
                reply
            }
            JoinDecision::Plan(plan) => {
                if self.durable(&plan.durable) {
                    self.commits += 1;
                    let (reply, effects) = self.core.commit_join(plan, wall_clock(now));
                    outs.push(LeadOut::Joined {
                        name: request.name.clone(),
                    });
                    self.apply(effects, outs);
                    reply
                } else {
                    JoinReply::Refused(JoinError::Unknown)
                }
            }
        };
        if let JoinReply::Refused(error) = &reply {
            self.refused += 1;
            outs.push(LeadOut::JoinRefused {
                name: request.name.clone(),
                error: error.clone(),
            });
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.state = LinkState::Joined;
            c.clock.joined(crate::relay::at(now));
        }
        match wire::encode_frame(&reply) {
            Ok(frame) => {
                let stream = stream::OPENING;
                outs.push(LeadOut::Send {
                    conn,
                    stream,
                    frame,
                });
                outs.push(LeadOut::EndStream { conn, stream });
                outs.push(LeadOut::Timer {
                    conn,
                    at: now + ms(OPENING_TIMEOUT),
                });
            }
            Err(_) => self.close(conn, "cannot encode the join reply", outs),
        }
    }

    /// A phone request for a pane on `machine`, routed by the published relay table.
    pub(crate) fn on_phone(
        &mut self,
        phone: u64,
        machine: &str,
        kind: RelayKind,
        now: u64,
    ) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        let unreachable = vec![LeadOut::Answer {
            phone,
            result: Err(RelayError::Unreachable),
        }];
        let route = if self.bug == Some(Bug::Misroute) {
            self.relays.values().next()
        } else {
            self.relays.get(machine)
        };
        // A member offline, or published but whose link has just ended (its relay client's
        // connection is closed): `member unreachable` at once.
        let Some(net) = route
            .and_then(|core_conn| self.links.get(core_conn))
            .copied()
        else {
            return unreachable;
        };
        let Some(LeadConn {
            pin,
            state: LinkState::Established { relay, .. },
            ..
        }) = self.conns.get_mut(&net)
        else {
            return unreachable;
        };
        let pin = *pin;
        let mut r = Vec::new();
        match relay.start(kind, Waiter::Phone(phone), phone.to_string(), now, &mut r) {
            Ok(()) => {
                outs.push(LeadOut::Relayed {
                    pin,
                    machine: machine.to_owned(),
                    phone,
                });
                self.relay_outs(net, r, &mut outs);
            }
            Err(e) => outs.push(LeadOut::Answer {
                phone,
                result: Err(e),
            }),
        }
        outs
    }

    /// The push loop's step (`push.rs`): a copy to the deputy's link if it has not acknowledged
    /// the registry as it is now on that link and none is in flight.
    pub(crate) fn push(&mut self, now: u64) -> Vec<LeadOut> {
        let mut outs = Vec::new();
        if !self.up {
            return outs;
        }
        let Some(deputy) = self.deputy.clone() else {
            return outs;
        };
        let Some(net) = self
            .relays
            .get(&deputy)
            .and_then(|core_conn| self.links.get(core_conn))
            .copied()
        else {
            return outs;
        };
        // The version is taken only when a copy is made, as `push.rs` takes it.
        if self.pusher.in_flight.is_some()
            || self
                .pusher
                .failed
                .is_some_and(|(l, at)| l == net && now < at)
        {
            return outs;
        }
        let copy = self.registry.copy(&self.name, now);
        let version = copy.version;
        if !self.pusher.wants(net, version, now) {
            return outs;
        }
        let Some(LeadConn {
            state: LinkState::Established { relay, .. },
            ..
        }) = self.conns.get_mut(&net)
        else {
            return outs;
        };
        let kind = RelayKind::Deputy {
            copy: Some(Box::new(copy)),
        };
        let mut r = Vec::new();
        match relay.start(
            kind,
            Waiter::Push(version),
            format!("copy-{version}"),
            now,
            &mut r,
        ) {
            Ok(()) => {
                self.pusher.in_flight = Some((net, version));
                outs.push(LeadOut::Pushing { conn: net, version });
                self.relay_outs(net, r, &mut outs);
            }
            Err(_) => {
                self.pusher.failed = Some((net, now + RETRY_MS));
                outs.push(LeadOut::Pushed {
                    version,
                    ok: false,
                    retry: Some(now + RETRY_MS),
                });
            }
        }
        outs
    }

    /// The answer to the copy in flight.
    pub(crate) fn pushed(&mut self, version: u64, ok: bool, now: u64) -> Option<u64> {
        let (link, v) = self.pusher.in_flight.take()?;
        if v != version {
            self.pusher.in_flight = Some((link, v));
            return None;
        }
        if ok {
            self.pusher.acked = Some((link, version));
            self.pusher.failed = None;
            None
        } else {
            self.pusher.failed = Some((link, now + RETRY_MS));
            Some(now + RETRY_MS)
        }
    }

    /// `collie crew remove NAME`: durable first, then committed (unpinned, its link closed).
    /// `None` when the change could not be made durable (nothing changed; the command failed).
    pub(crate) fn remove_member(&mut self, name: &str) -> Option<Vec<LeadOut>> {
        let mut outs = Vec::new();
        let Some(plan) = self.core.remove(name) else {
            return Some(outs);
        };
        if !self.durable(&plan.durable) {
            return None;
        }
        self.commits += 1;
        let effects = self.core.commit_remove(plan);
        self.apply(effects, &mut outs);
        Some(outs)
    }

    /// The lead process dies: every connection and in-memory request is gone, the disk stays.
    /// Returns the phone requests that were waiting (their HTTP connections break) and the
    /// connections.
    pub(crate) fn crash(&mut self) -> (Vec<u64>, Vec<u64>) {
        self.online_changes += 1;
        self.up = false;
        let mut phones = Vec::new();
        for c in self.conns.values() {
            if let LinkState::Established { relay, .. } = &c.state {
                phones.extend(relay.phones_waiting());
            }
        }
        let conns = self.conns.keys().copied().collect();
        self.conns.clear();
        self.links.clear();
        self.relays.clear();
        self.pins.clear();
        self.pusher = Pusher::default();
        (phones, conns)
    }
}
