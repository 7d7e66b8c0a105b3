//! Seeded, deterministic simulations of a Collie crew (SPEC §8): one lead, many members, a phone
//! and a faulty network, run on a virtual clock and checked against the crew's invariants after
//! every single step.
//!
//! # The model
//!
//! The harness is a discrete-event loop (`sim.rs`): a queue of events ordered by virtual time (in
//! milliseconds) and insertion order, one seeded [`rand::rngs::StdRng`] for every choice, no
//! tokio tasks, no sleeping, no wall clock. The same scenario and seed give the same run, event for
//! event ([`Report::digest`] hashes the trace). The one tokio runtime of a run is never driven: the
//! members' relay servers are created inside it for the timer their request deadline needs, and
//! polled by the loop itself (`member/served.rs`).
//!
//! **Real** (the code the bridges run): the lead's orchestration,
//! [`collie_actors::crew_link::lead::LeadCore`] — join decisions and their two-phase plans, hellos,
//! the online table, removals — with its effects applied as the crew actor applies them (`lead.rs`:
//! durable effects in order, then the commit; pins, TLS admission, closes, the published relay
//! table); the registry a restarted lead reads back, parsed by the actor's own
//! [`collie_actors::crew_link::registry_from_entries`]; the join check and both hello state machines
//! of `collie-crew` with their HMAC proofs over a per-connection exporter value; the relay client's
//! bookkeeping, [`Ledger`](collie_crew::relay::ledger::Ledger) — the capability gate, the shipped
//! limits ([`Limits::default`](collie_crew::relay::client::Limits): requests waiting and
//! subscriptions per member link), request ids, the 1.5 s answer deadline and the answer each first
//! frame gets — which `RelayClient` drives on tokio; the link tasks' decisions,
//! [`Accepted`](collie_actors::crew_link::link::accepted::Accepted) on the lead (the opening's
//! timeout, the member heard every `LEAD_SILENCE`, beats echoed) and
//! [`Dialer`](collie_actors::crew_link::link::dialer::Dialer) on each member (dial and hello
//! timeout, a heartbeat every second, the lead's silence, the product's backoff of 250 ms–15 s with
//! its jitter drawn from the seed), which `link.rs` runs inside tokio; the member's relay server,
//! [`collie_crew::relay::server::serve`], which serves every relay stream the lead opens on an
//! honest member (one request, one answer, a subscription's events until the lead leaves, the stream
//! stopped on a request that does not decode), its future stored per stream and polled whenever
//! its stream or a pane changed; and the wire codec: every message is encoded with
//! `wire::encode_frame` and read back through a [`collie_crew::wire::FrameDecoder`] per stream,
//! bytes arriving in pieces.
//!
//! **Modelled**: the network (`sim/net.rs`: connections of independent, reliable, ordered streams
//! numbered as QUIC numbers them, with latency, retransmission delays after loss, partitions and
//! idle-timeout detection); TLS (the dialer's pin is handed to the lead as the pinned verifier
//! would report it, the admission rule is applied at the dial, the exporter value is derived from
//! the seed and the connection number); the relay client's I/O (`relay.rs`: one stream per
//! request, its decoder, the ledger's deadline as a virtual timer, subscription events); the link
//! tasks' I/O (`lead/link.rs`: the streams of a connection, uplinks); the store and the audit log (`disk.rs`: the `crew` table as the `Change` batches
//! the core asked for, and the audit lines, both surviving a lead restart; a fault can take the
//! audit log away for a while; the lead writes a relayed write's line once the member answered
//! `Done`, as the application does); the members' pane backend (`member/panes.rs`: the relay
//! server's handler, a few panes of text, every executed write appended to the member's write log
//! — the bridge's application, which masks, audits and drives tmux behind the same handler, runs
//! in the black-box tests with real processes instead) and the in-memory halves of a relay stream
//! (`member/served.rs`); a garbage peer's answers (an attacker, not a bridge); and the phone (a
//! stream of reads, writes and subscriptions through the lead, each with the 2 s deadline of SPEC
//! §8; a machine the crew does not know is answered `member unreachable` rather than the HTTP
//! layer's `no such machine`). The in-memory transport of `collie-crew` (`test-utils`) is not used:
//! it runs on tokio channels and tasks, which a single-threaded virtual clock cannot step
//! deterministically; its faults (partition, heal, disconnect, refuse dials) are reproduced here.
//!
//! # Invariants, checked after every event
//!
//! - No relayed write runs twice, and none runs on a machine other than the one the phone named.
//! - Every phone request is answered exactly once, by its deadline, with the member's own answer
//!   (a snapshot or list from that machine; `Done` for a write only if the write ran there) or
//!   with `member unreachable` (or a lead-side refusal: `capability missing`, `resource limit`;
//!   `member response unreadable` only for the machine that answers with garbage).
//!   A request in flight when the lead process dies is recorded as aborted (the phone's HTTP
//!   connection breaks), never answered later.
//! - No peer is served (hello accepted, or a request relayed to it) unless the operator invited it
//!   and has not removed it.
//! - An answer from a member comes only from the member the request was relayed to.
//! - No peer the operator did not admit, or removed, holds a link.
//! - Every relayed write answered `Done` is audited exactly once on the lead and once on the member
//!   that ran it; no other write is.
//! - A member whose partition healed, that restarted, or whose lead came back is served again
//!   within `MEMBER_SILENCE` + the backoff's cap + `OPENING_TIMEOUT`, unless another fault hits it
//!   or the lead first.
//! - Lead memory is bounded: per member link at most [`Limits::default`]'s requests waiting for an
//!   answer and subscriptions open, at most QUIC's stream limit of uplink streams, at most one link
//!   per member and four connections per machine; no connection stays in its opening past the
//!   link's `OPENING_TIMEOUT`; and no stream's frame decoder holds more than 64 KiB — even for a
//!   peer that announces a 16 MiB frame.
//!
//! Each event changes the lead only on the connections it touches, so those are the ones checked;
//! deadlines are kept in ordered indexes. That keeps a 1,000-member run to seconds.
//! - What the lead pins is what its store holds (checked after every commit): no join or removal
//!   is committed without being made durable first.
//!
//! **The deputy** ([`Scenario::Deputy`], SPEC §13, decision 0070): the lead pushes member `m00`
//! copies of its device registry through the relay; the phone goes to the deputy's standby door
//! when the lead does not answer. Shipped: the standby rule (`crew_link::standby::Door`), the
//! deputy's redial (`Dialer::lost_within` with `DEPUTY_REDIAL`), the policy snapshot both machines
//! authorize by, the copy's message and its answer through the relay ledger and server. Modelled
//! (`deputy.rs`): the lead's registry, the push loop's decisions, the copy's version and the
//! door's order of checks. Its invariants: no revoked token is served once the deputy was linked
//! to the lead, after the revocation, for as long as one copy takes at worst
//! (`deputy::push_bound_ms`); the deputy never serves while linked, nor before the lead was out of
//! reach for `STAND_IN_AFTER`; it never serves a token the lead never paired, an expired one, or a
//! write for a device below `full`; and no write runs twice, through the lead or at the door.
//!
//! At the end of a run the faults stop and the world drains: every request must be answered and
//! every honest member must be served again (liveness).
//!
//! # Scenarios and replay
//!
//! Each [`Scenario`] is a function of its seed ([`run`]). Faults start only once every honest
//! member has joined, except in [`Scenario::JoinUnderFaults`], where joins meet partitions,
//! restarts and audit outages from the start. A violation prints the scenario and seed;
//! `cargo run -p collie-simulations -- <scenario> --seed N --trace` replays it event by event,
//! `--seeds K` runs K seeds from N, and `--members M` runs any scenario with M honest members.
//!
//! [`Limits::default`]: collie_crew::relay::client::Limits
#![warn(missing_docs)]

mod checker;
mod deputy;
mod disk;
mod fail;
mod lead;
mod member;
mod relay;
mod sim;
mod stream;

use std::fmt;

use sim::{Setup, World};

/// A scenario; each runs from a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// 50 members join with one-time invites and come online (no phone, no faults beyond
    /// latency and retransmission delays).
    Join,
    /// Like [`Scenario::Join`], with partitions, restarts and audit outages from the start. A
    /// member that loses the lead's `JoinReply::Accepted` (its connection or process dies while the
    /// reply is in flight) is already pinned; its retry with the same invite gets the same
    /// acceptance again from the core ([`Report::repeat_joins`]), and a join refused because the
    /// audit log was out is tried again.
    JoinUnderFaults,
    /// Eight members, the phone busy, and thousands of steps of random partitions, dropped
    /// connections, member restarts and lead restarts.
    Faults,
    /// A machine holding the crew secret whose certificate was never pinned, and a member the
    /// operator removes mid-run: neither may ever be served.
    Unpinned,
    /// Peers sending garbage, oversized length prefixes and a stalled 16 MiB frame, one of them
    /// pinned (it also answers every relayed request with garbage): their streams close, the lead
    /// keeps serving the others.
    Garbage,
    /// Eight members, one of them the deputy (SPEC §13): the lead pushes it copies of its device
    /// registry while the operator pairs and revokes the phone's devices; the phone goes to the
    /// deputy's standby door when the lead does not answer. Faults: the lead partitioned from
    /// everyone or from the deputy only (split brain: both up, apart, the phone reaching both),
    /// lead and deputy restarts, message loss, and the other faults.
    Deputy,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 6] = [
        Scenario::Join,
        Scenario::JoinUnderFaults,
        Scenario::Faults,
        Scenario::Unpinned,
        Scenario::Garbage,
        Scenario::Deputy,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Join => "join",
            Scenario::JoinUnderFaults => "join-faults",
            Scenario::Faults => "faults",
            Scenario::Unpinned => "unpinned",
            Scenario::Garbage => "garbage",
            Scenario::Deputy => "deputy",
        }
    }

    /// The scenario with this command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    fn setup(self) -> Setup {
        let base = Setup {
            honest: 8,
            members: None,
            intruder: false,
            garbage_pinned: false,
            garbage_unpinned: false,
            remove: None,
            faults_from: None,
            faults_after_join: true,
            loss: 0.02,
            steps: 4_000,
            phone: true,
            deputy: false,
        };
        match self {
            Scenario::Join => Setup {
                honest: 50,
                phone: false,
                steps: 20_000,
                ..base
            },
            Scenario::JoinUnderFaults => Setup {
                honest: 50,
                phone: false,
                faults_from: Some(0),
                faults_after_join: false,
                steps: 20_000,
                ..base
            },
            Scenario::Faults => Setup {
                faults_from: Some(3_000),
                loss: 0.05,
                steps: 6_000,
                ..base
            },
            Scenario::Unpinned => Setup {
                honest: 4,
                intruder: true,
                remove: Some((2, 8_000)),
                faults_from: Some(15_000),
                steps: 3_000,
                ..base
            },
            Scenario::Garbage => Setup {
                honest: 4,
                garbage_pinned: true,
                garbage_unpinned: true,
                steps: 3_000,
                ..base
            },
            Scenario::Deputy => Setup {
                faults_from: Some(2_000),
                loss: 0.05,
                steps: 6_000,
                deputy: true,
                ..base
            },
        }
    }
}

impl Setup {
    /// The same scenario with `n` honest members: the step budget grows with the crew, so each
    /// member sees as much of the run as in the scenario's own size.
    fn scale(&mut self, n: usize) {
        let base = self.honest.max(1);
        self.steps = self.steps.saturating_mul(n.max(base) as u64) / base as u64;
        self.honest = n;
        self.members = Some(n);
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A deliberately broken lead, to show the checker catches what it claims to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// After a write times out, the lead sends it to the member again (a classic retry).
    ResendWriteOnTimeout,
    /// The lead accepts a valid hello from a certificate it has not pinned.
    ServeUnpinned,
    /// The lead never expires requests, so phones wait past their deadline.
    IgnoreDeadlines,
    /// The lead relays a request to the first member link it finds, whatever machine it names.
    Misroute,
    /// The lead commits joins and removals without making them durable first (no audit line, no
    /// store write).
    SkipDurable,
    /// The lead writes the audit line of a relayed write twice.
    AuditTwice,
    /// The lead never serves a member again once its link ended (so a member whose partition
    /// healed, or that restarted, is not back within its backoff bound).
    ShunReturning,
    /// The deputy's door serves the lead's devices whenever its copy allows, ignoring the standby
    /// rule (it serves while linked to the lead).
    DeputyIgnoresStandby,
    /// The deputy keeps the first copy it got and ignores the later ones (so it keeps serving a
    /// revoked token after it reconnected).
    DeputyKeepsFirstCopy,
}

/// How to run a scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Break the lead this way.
    pub bug: Option<Bug>,
    /// Keep every trace line in the report.
    pub trace: bool,
    /// Run with this many honest members instead of the scenario's own number (at least 4: the
    /// scenarios give members 1 and 2 their own parts).
    pub members: Option<usize>,
}

/// Which invariant broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// A relayed write ran twice.
    DuplicateWrite,
    /// A write ran on a machine it was not for (or nobody asked for it).
    WrongMachine,
    /// A phone request was answered twice, or an answer came for no request.
    AnsweredTwice,
    /// A phone request was not answered by its deadline.
    MissedDeadline,
    /// An answer that is neither the member's nor `member unreachable` (or a lead refusal).
    BadAnswer,
    /// A peer the operator did not admit (or removed) was served.
    UnpinnedServed,
    /// A lead limit or buffer cap was exceeded.
    MemoryBound,
    /// The members the lead pins differ from those its store holds: a change was committed
    /// without being made durable (a restart would lose it), or the other way round.
    Durability,
    /// After the faults stopped, an honest member did not come back; or after a partition healed,
    /// it did not come back within its backoff bound.
    Liveness,
    /// A relayed write's audit line is missing, doubled, or for a write that did not run there.
    Audit,
    /// The deputy served a revoked token after a link to the lead long enough to carry the
    /// revocation (or an expired token, or a write to a device below `full`).
    RevokedServed,
    /// The deputy served a lead's device while linked to the lead, or before the lead had been
    /// out of reach for `STAND_IN_AFTER`.
    StandbyBroken,
    /// The deputy served a token the lead never paired.
    StrangerServed,
}

/// A broken invariant, with what is needed to replay it.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The scenario.
    pub scenario: Scenario,
    /// The seed.
    pub seed: u64,
    /// The number of honest members, if the run was given one.
    pub members: Option<usize>,
    /// The event at which it broke (1-based).
    pub step: u64,
    /// Virtual time of that event.
    pub at_ms: u64,
    /// Which invariant.
    pub kind: ViolationKind,
    /// What happened.
    pub detail: String,
    /// The trace up to the violation, if [`Options::trace`] was set.
    pub trace: Vec<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario {} seed {}: {:?} at step {} ({} ms): {} \
             (replay: cargo run -p collie-simulations -- {} --seed {}{})",
            self.scenario,
            self.seed,
            self.kind,
            self.step,
            self.at_ms,
            self.detail,
            self.scenario,
            self.seed,
            self.members
                .map(|n| format!(" --members {n}"))
                .unwrap_or_default()
        )
    }
}

impl std::error::Error for Violation {}

/// What a passing run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The scenario.
    pub scenario: Scenario,
    /// The seed.
    pub seed: u64,
    /// Events processed (each followed by the invariant checks).
    pub steps: u64,
    /// Virtual time at the end.
    pub virtual_ms: u64,
    /// FNV-1a hash of the whole trace: equal runs have equal digests.
    pub digest: u64,
    /// Phone requests issued.
    pub phone_requests: u64,
    /// Answered with the member's success.
    pub answered_ok: u64,
    /// Answered `member unreachable`.
    pub answered_unreachable: u64,
    /// Answered with another error (no such pane, capability missing, resource limit, member
    /// response unreadable).
    pub answered_other: u64,
    /// In flight when the lead died.
    pub aborted_by_lead_restart: u64,
    /// Relayed writes executed on members.
    pub writes_executed: u64,
    /// Connections opened.
    pub connections: u64,
    /// Openings the lead refused (TLS, unpinned hello, bad proof, join refused, no opening in time).
    pub refused_openings: u64,
    /// Malformed or oversized frames the lead read (each ended its stream).
    pub bad_frames: u64,
    /// Joins the lead accepted again because the machine was already pinned: its first
    /// acceptance was lost in flight.
    pub repeat_joins: u64,
    /// Distinct machines served at least once.
    pub joined: u64,
    /// Faults injected.
    pub faults: u64,
    /// Requests the deputy's standby door served.
    pub door_served: u64,
    /// Requests it answered `standby: the lead is up`.
    pub door_standby: u64,
    /// Revoked tokens it served while the revocation could not have reached it (the partition).
    pub revoked_in_window: u64,
    /// The longest time after its revocation that a revoked token was served (ms).
    pub longest_window_ms: u64,
    /// Copies of the registry the deputy took.
    pub copies: u64,
    /// The trace, if [`Options::trace`] was set.
    pub trace: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario {} seed {}: ok, {} steps, {} virtual ms, {} faults, {} connections, \
             {} served; phone {} (ok {}, unreachable {}, other {}, aborted {}); {} writes; \
             {} refused openings, {} bad frames, {} repeat joins; door: {} served, {} standby, \
             {} revoked within the bound (longest {} ms after), {} copies; digest {:016x}",
            self.scenario,
            self.seed,
            self.steps,
            self.virtual_ms,
            self.faults,
            self.connections,
            self.joined,
            self.phone_requests,
            self.answered_ok,
            self.answered_unreachable,
            self.answered_other,
            self.aborted_by_lead_restart,
            self.writes_executed,
            self.refused_openings,
            self.bad_frames,
            self.repeat_joins,
            self.door_served,
            self.door_standby,
            self.revoked_in_window,
            self.longest_window_ms,
            self.copies,
            self.digest
        )
    }
}

/// Runs `scenario` from `seed` with a correct lead.
pub fn run(scenario: Scenario, seed: u64) -> Result<Report, Box<Violation>> {
    run_with(scenario, seed, Options::default())
}

/// Runs `scenario` from `seed` with the given options.
pub fn run_with(scenario: Scenario, seed: u64, options: Options) -> Result<Report, Box<Violation>> {
    let mut setup = scenario.setup();
    if let Some(n) = options.members {
        setup.scale(n.max(4));
    }
    World::new(scenario, seed, setup, options.bug, options.trace).run()
}
