//! The invariant checker. It keeps its own ghost state — which machine each phone request was
//! for, which pins the operator actually admitted, which machines misbehave — fed by the harness
//! from the models' effects, and is asked after every step whether the world is still sound. Its
//! bounds come from the shipped code (`Limits::default()`, the link's `OPENING_TIMEOUT`, QUIC's
//! stream limit), never from the lead under test.

use std::collections::{BTreeMap, BTreeSet};

use collie_actors::crew_link::link::OPENING_TIMEOUT;
use collie_crew::pin::Pin;
use collie_crew::relay::client::Limits;
use collie_crew::relay::{RelayError, RelayOk};
use collie_crew::tls::config::MAX_STREAMS;
use collie_crew::wire::{FRAME_HEADER, MAX_BUFFERED, MAX_FRAME};

use crate::lead::{Lead, LinkState};
use crate::relay::ms;
use crate::ViolationKind;

/// The most any of the lead's frame decoders may have allocated in these simulations: every frame
/// a model sends is a few KiB, and a peer announcing 16 MiB must cost only what it sent.
pub(crate) const LEAD_BUFFER_CAP: usize = 64 * 1024;

/// The most connections the lead may hold for one machine at once: its link or opening, and those
/// it has not yet noticed are gone (a link for up to `LEAD_SILENCE`, an opening for up to
/// `OPENING_TIMEOUT`).
pub(crate) const MAX_CONNS_PER_MEMBER: usize = 4;

/// The phone's deadline for any request through the lead (SPEC §8: an unreachable member is
/// answered `member unreachable` within 2 s).
pub(crate) const PHONE_DEADLINE_MS: u64 = 2_000;

pub(crate) use crate::fail::{fail, Check, Fail};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Answered,
    /// The lead died with the request in flight: the phone's HTTP connection broke.
    Aborted,
}

#[derive(Debug)]
struct Request {
    machine: String,
    write: bool,
    deadline: u64,
    state: State,
}

/// Counts for the report.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) issued: u64,
    pub(crate) ok: u64,
    pub(crate) unreachable: u64,
    pub(crate) other_errors: u64,
    pub(crate) aborted: u64,
    pub(crate) writes: u64,
}

/// Ghost state and checks.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    requests: BTreeMap<u64, Request>,
    /// Request id → the machine it ran on.
    executed: BTreeMap<String, String>,
    /// Pin → name, for every machine the operator admitted and has not removed.
    trusted: BTreeMap<Pin, String>,
    /// Machines that answer with garbage: `member response unreadable` is a sound answer for them.
    garbled: BTreeSet<String>,
    pub(crate) tally: Tally,
    /// The lead's commit count when its registry was last compared with its store.
    commits_checked: Option<u64>,
    /// Request ids whose relayed write the lead audited.
    lead_audited: BTreeSet<String>,
    /// Requests relayed, and the machine they were relayed to.
    relayed_to: BTreeMap<u64, String>,
    /// Connections of each pin the lead was seen holding.
    per_pin: BTreeMap<Pin, BTreeSet<u64>>,
    /// Requests still pending, by deadline.
    pending: BTreeSet<(u64, u64)>,
    /// Connections seen opening (or joined): whether joined, and when they must be gone.
    openings: BTreeMap<u64, (bool, u64)>,
}

impl Checker {
    /// The operator invited this machine (it may serve once it joined).
    pub(crate) fn trust(&mut self, pin: Pin, name: &str) {
        self.trusted.insert(pin, name.to_owned());
    }

    /// This machine answers relayed requests with garbage.
    pub(crate) fn garbled(&mut self, name: &str) {
        self.garbled.insert(name.to_owned());
    }

    /// The operator removed this machine.
    pub(crate) fn revoke(&mut self, pin: &Pin) {
        self.trusted.remove(pin);
    }

    pub(crate) fn on_issue(&mut self, id: u64, machine: &str, write: bool, deadline: u64) {
        self.tally.issued += 1;
        self.pending.insert((deadline, id));
        self.requests.insert(
            id,
            Request {
                machine: machine.to_owned(),
                write,
                deadline,
                state: State::Pending,
            },
        );
    }

    /// The deputy's door served request `id` for its own machine (answered there and then).
    pub(crate) fn on_door(&mut self, id: u64, machine: &str, write: bool) {
        self.tally.issued += 1;
        self.tally.ok += 1;
        self.requests.insert(
            id,
            Request {
                machine: machine.to_owned(),
                write,
                deadline: 0,
                state: State::Answered,
            },
        );
    }

    pub(crate) fn on_aborted(&mut self, ids: &[u64]) -> Check {
        for id in ids {
            match self.requests.get_mut(id) {
                Some(r) if r.state == State::Pending => {
                    self.pending.remove(&(r.deadline, *id));
                    r.state = State::Aborted;
                    self.tally.aborted += 1;
                }
                _ => {
                    return fail(
                        ViolationKind::AnsweredTwice,
                        format!("request {id} aborted but not pending"),
                    )
                }
            }
        }
        Ok(())
    }

    /// A relayed write ran on `machine`.
    pub(crate) fn on_executed(&mut self, request_id: &str, machine: &str) -> Check {
        self.tally.writes += 1;
        let target = request_id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.requests.get(&id));
        match target {
            Some(r) if r.write && r.machine == machine => {}
            Some(r) => {
                return fail(
                    ViolationKind::WrongMachine,
                    format!(
                        "write {request_id} for {} (write: {}) ran on {machine}",
                        r.machine, r.write
                    ),
                )
            }
            None => {
                return fail(
                    ViolationKind::WrongMachine,
                    format!("write {request_id} ran on {machine} but no phone asked for it"),
                )
            }
        }
        if let Some(first) = self
            .executed
            .insert(request_id.to_owned(), machine.to_owned())
        {
            return fail(
                ViolationKind::DuplicateWrite,
                format!("write {request_id} ran twice (on {first}, then on {machine})"),
            );
        }
        Ok(())
    }

    /// The lead answered a phone request.
    pub(crate) fn on_answer(
        &mut self,
        id: u64,
        result: &Result<RelayOk, RelayError>,
        now: u64,
    ) -> Check {
        let Some(r) = self.requests.get_mut(&id) else {
            return fail(
                ViolationKind::AnsweredTwice,
                format!("answer to unknown request {id}"),
            );
        };
        if r.state != State::Pending {
            return fail(
                ViolationKind::AnsweredTwice,
                format!(
                    "request {id} answered again ({:?}) after {:?}",
                    result, r.state
                ),
            );
        }
        r.state = State::Answered;
        self.pending.remove(&(r.deadline, id));
        if now > r.deadline {
            return fail(
                ViolationKind::MissedDeadline,
                format!(
                    "request {id} answered at {now} ms, deadline {} ms",
                    r.deadline
                ),
            );
        }
        // A member's answer comes only from the member the request was relayed to.
        let relayed = self.relayed_to.get(&id) == Some(&r.machine);
        let from_member = |m: &str| relayed && m == r.machine;
        let sound = match result {
            Ok(RelayOk::Snapshot(s)) => from_member(&s.machine),
            Ok(RelayOk::PaneList(list)) => list.iter().all(|p| from_member(&p.machine)),
            Ok(RelayOk::Done) if r.write => {
                self.executed.get(&id.to_string()).map(String::as_str) == Some(&r.machine)
            }
            Ok(RelayOk::Done | RelayOk::Subscribed) => relayed,
            Ok(_) => false,
            Err(
                RelayError::Unreachable
                | RelayError::NoSuchPane
                | RelayError::CapabilityMissing
                | RelayError::ResourceLimit,
            ) => true,
            Err(RelayError::Unreadable) => self.garbled.contains(&r.machine),
            Err(_) => false,
        };
        match result {
            Ok(_) => self.tally.ok += 1,
            Err(RelayError::Unreachable) => self.tally.unreachable += 1,
            Err(_) => self.tally.other_errors += 1,
        }
        if !sound {
            return fail(
                ViolationKind::BadAnswer,
                format!("request {id} for {} answered {result:?}", r.machine),
            );
        }
        Ok(())
    }

    /// The lead accepted a hello from `pin` as `name`.
    pub(crate) fn on_served(&self, pin: &Pin, name: &str) -> Check {
        match self.trusted.get(pin) {
            Some(n) if n == name => Ok(()),
            Some(n) => fail(
                ViolationKind::UnpinnedServed,
                format!("{pin} admitted as {n} but served as {name}"),
            ),
            None => fail(
                ViolationKind::UnpinnedServed,
                format!("unpinned peer {pin} served as {name}"),
            ),
        }
    }

    /// The lead wrote the audit line of the relayed write `request_id`: it must have run, on the
    /// machine it was for, and be audited there and here exactly once.
    pub(crate) fn on_lead_audit(&mut self, request_id: &str) -> Check {
        let ran_on = self.executed.get(request_id);
        let for_machine = request_id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.requests.get(&id))
            .map(|r| &r.machine);
        if ran_on.is_none() || ran_on != for_machine {
            return fail(
                ViolationKind::Audit,
                format!("the lead audited write {request_id}, which ran on {ran_on:?}, for {for_machine:?}"),
            );
        }
        if !self.lead_audited.insert(request_id.to_owned()) {
            return fail(
                ViolationKind::Audit,
                format!("the lead audited write {request_id} twice"),
            );
        }
        Ok(())
    }

    /// At the end: the lead's lines of relayed writes are exactly those it audited, once each.
    pub(crate) fn lead_audit_log(&self, lines: &[String]) -> Check {
        let distinct: BTreeSet<&String> = lines.iter().collect();
        if distinct.len() != lines.len() || distinct.len() != self.lead_audited.len() {
            return fail(
                ViolationKind::Audit,
                format!(
                    "the lead's log holds {} relayed-write lines ({} distinct), {} were audited",
                    lines.len(),
                    distinct.len(),
                    self.lead_audited.len()
                ),
            );
        }
        Ok(())
    }

    /// The lead sent a phone request for `machine` to the peer with `pin`.
    pub(crate) fn on_relayed(&mut self, pin: &Pin, machine: &str, phone: u64) -> Check {
        self.relayed_to.insert(phone, machine.to_owned());
        match self.trusted.get(pin) {
            Some(n) if n == machine => Ok(()),
            Some(n) => fail(
                ViolationKind::WrongMachine,
                format!("request {phone} for {machine} relayed to {n}"),
            ),
            None => fail(
                ViolationKind::UnpinnedServed,
                format!("request {phone} for {machine} relayed to unpinned peer {pin}"),
            ),
        }
    }

    /// The checks of every step. The lead changes only on the connections the event touched
    /// (`touched`), so those are the ones whose bounds are checked; the clocks — requests past
    /// their deadline, connections still opening past theirs — are checked over everything still
    /// open, through indexes kept for it.
    pub(crate) fn step(&mut self, now: u64, lead: &Lead, touched: &BTreeSet<u64>) -> Check {
        // Reading the store back costs a parse: only after a commit.
        if lead.up && self.commits_checked != Some(lead.commits) {
            self.commits_checked = Some(lead.commits);
            if let Err(detail) = lead.registry_agrees() {
                return fail(ViolationKind::Durability, detail);
            }
        }
        if let Some(&(deadline, id)) = self.pending.first().filter(|(d, _)| *d < now) {
            let machine = self.requests.get(&id).map_or("", |r| r.machine.as_str());
            return fail(
                ViolationKind::MissedDeadline,
                format!(
                    "request {id} for {machine} unanswered at {now} ms, deadline {deadline} ms"
                ),
            );
        }
        let limits = Limits::default();
        let opening_within = ms(OPENING_TIMEOUT);
        for conn in touched {
            let Some(c) = lead.conns.get(conn) else {
                self.openings.remove(conn);
                continue;
            };
            // No peer the operator did not admit, or removed, holds a link.
            if let LinkState::Established { name, .. } = &c.state {
                if self.trusted.get(&c.pin) != Some(name) {
                    return fail(
                        ViolationKind::UnpinnedServed,
                        format!("connection {conn}: {name} ({}) is served", c.pin),
                    );
                }
            }
            // What the lead holds per member is bounded: a link, and the openings and dead
            // links it has not yet noticed are gone.
            let held = self.per_pin.entry(c.pin).or_default();
            held.insert(*conn);
            held.retain(|k| lead.conns.contains_key(k));
            if held.len() > MAX_CONNS_PER_MEMBER {
                return fail(
                    ViolationKind::MemoryBound,
                    format!("the lead holds {} connections of {}", held.len(), c.pin),
                );
            }
            for decoder in c.decoders() {
                let (cap, held) = (decoder.capacity(), decoder.buffered());
                if cap > LEAD_BUFFER_CAP.min(MAX_BUFFERED) || held > FRAME_HEADER + MAX_FRAME {
                    return fail(
                        ViolationKind::MemoryBound,
                        format!(
                            "connection {conn}: a stream's decoder holds {held} bytes in {cap}"
                        ),
                    );
                }
            }
            if c.uplinks.len() > usize::try_from(MAX_STREAMS).unwrap_or(usize::MAX) {
                return fail(
                    ViolationKind::MemoryBound,
                    format!("connection {conn}: {} uplink streams", c.uplinks.len()),
                );
            }
            let joined = match &c.state {
                LinkState::Established { name, relay, .. } => {
                    self.openings.remove(conn);
                    if relay.waiting() > limits.max_requests
                        || relay.stream_slots() > limits.max_streams
                    {
                        return fail(
                            ViolationKind::MemoryBound,
                            format!(
                                "{name}: {} requests waiting, {} subscription slots",
                                relay.waiting(),
                                relay.stream_slots()
                            ),
                        );
                    }
                    continue;
                }
                LinkState::Opening => false,
                LinkState::Joined => true,
            };
            // An opening (and a joined machine's close) gets `OPENING_TIMEOUT` from when this
            // checker first saw it in that phase.
            let seen = self
                .openings
                .entry(*conn)
                .or_insert((joined, now + opening_within));
            if seen.0 != joined {
                *seen = (joined, now + opening_within);
            }
        }
        for (conn, (_, limit)) in &self.openings {
            let open = lead
                .conns
                .get(conn)
                .is_some_and(|c| !matches!(c.state, LinkState::Established { .. }));
            if open && now > *limit {
                return fail(
                    ViolationKind::MemoryBound,
                    format!("connection {conn} still opening at {now} ms, past {limit} ms"),
                );
            }
        }
        Ok(())
    }

    /// A hello was accepted for `name`: it must be its only link.
    pub(crate) fn one_link(&self, lead: &Lead, name: &str) -> Check {
        let links: Vec<u64> = lead
            .conns
            .iter()
            .filter(
                |(_, c)| matches!(&c.state, LinkState::Established { name: n, .. } if n == name),
            )
            .map(|(conn, _)| *conn)
            .collect();
        if links.len() > 1 {
            return fail(
                ViolationKind::MemoryBound,
                format!("{name} has {} links: {links:?}", links.len()),
            );
        }
        Ok(())
    }

    /// At the end: a member's own write log must hold exactly the writes seen running there.
    pub(crate) fn audit(&self, machine: &str, log: &[String]) -> Check {
        for id in log {
            if self.executed.get(id).map(String::as_str) != Some(machine) {
                return fail(
                    ViolationKind::WrongMachine,
                    format!("{machine}'s write log holds {id}, which did not run there"),
                );
            }
        }
        Ok(())
    }

    /// At the end: the members' write logs together hold every write that ran, once.
    pub(crate) fn audit_total(&self, logged: usize) -> Check {
        if logged != self.executed.len() {
            return fail(
                ViolationKind::DuplicateWrite,
                format!(
                    "members logged {logged} writes, {} distinct ones ran",
                    self.executed.len()
                ),
            );
        }
        Ok(())
    }

    /// At the end: nothing may still wait.
    pub(crate) fn finish(&self) -> Check {
        if let Some((id, r)) = self
            .pending
            .first()
            .and_then(|(_, id)| Some((id, self.requests.get(id)?)))
        {
            return fail(
                ViolationKind::MissedDeadline,
                format!("request {id} for {} never answered", r.machine),
            );
        }
        Ok(())
    }
}
