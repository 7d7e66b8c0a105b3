//! The deputy's part of the world ([`crate::Scenario::Deputy`]): member `m00` is named deputy, the
//! phone holds a few devices of the lead's registry (and one token the lead never paired), the
//! operator pairs and revokes devices on the lead every 1–4 s, and the phone's request goes to the
//! deputy's standby door when the lead does not answer (and one time in ten anyway: a phone still
//! on the deputy after the lead came back). Its faults, beside the others: the lead partitioned
//! from everyone (phone included), the lead partitioned from the deputy only (split brain), the
//! lead down for up to 25 s, and the deputy restarting.

use collie_actors::pairing::{Tier, TokenHash};
use collie_crew::relay::{RelayKind, RelayOk, RelayRequest};
use rand::Rng;

use super::net::bytes;
use super::{Ev, World};
use crate::checker::Check;
use crate::deputy::{wall, wall_secs, DoorAnswer, Ghost, Paired};
use crate::Bug;

/// The most devices the operator keeps paired (beyond it, a change is a revocation).
const MAX_DEVICES: usize = 8;

/// What the world keeps for the deputy.
#[derive(Debug, Default)]
pub(crate) struct DeputyWorld {
    /// The deputy's index among the members.
    pub(crate) deputy: Option<usize>,
    /// The lead is partitioned from everyone, the phone included.
    pub(crate) lead_cut: bool,
    /// The phone's tokens (their hashes): paired, revoked and one never paired.
    tokens: Vec<[u8; 32]>,
    /// Devices paired so far (for their labels).
    paired: u64,
    pub(crate) ghost: Ghost,
    /// Copies the deputy took.
    pub(crate) copies: u64,
    bug: Option<Bug>,
}

impl DeputyWorld {
    pub(crate) fn new(bug: Option<Bug>) -> Self {
        Self {
            bug,
            ..Self::default()
        }
    }
}

impl World {
    /// The operator names `m00` the deputy and pairs the phone's first devices.
    pub(super) fn name_deputy(&mut self) {
        let d = 0;
        self.dep.deputy = Some(d);
        self.members[d].deputy = true;
        self.lead.deputy = Some(self.members[d].name.clone());
        if self.dep.bug == Some(Bug::DeputyKeepsFirstCopy) {
            self.members[d].panes().keep_first_copy();
        }
        // A full device, a read-only one, one that expires during the run, and a stranger.
        self.pair(Tier::Full, None);
        self.pair(Tier::Full, None);
        self.pair(Tier::Read, None);
        let expires = self.rng.gen_range(20_000..120_000);
        self.pair(Tier::Full, Some(expires));
        let stranger = bytes(&mut self.rng);
        self.dep.tokens.push(stranger);
        self.schedule(500, Ev::Devices);
    }

    fn pair(&mut self, tier: Tier, expires_ms: Option<u64>) {
        let hash = bytes(&mut self.rng);
        self.dep.paired += 1;
        let label = format!("phone-{}", self.dep.paired);
        let expires_at = expires_ms.map(wall_secs);
        // The ghost's expiry is the second the snapshot compares against.
        let ghost_expiry = expires_ms.map(|e| e / 1000 * 1000);
        self.log(format!("operator pairs {label} ({})", tier.as_str()));
        self.lead.registry.pair(
            hash,
            Paired {
                label,
                tier,
                expires_at,
            },
        );
        self.dep.ghost.paired(hash, tier, ghost_expiry);
        self.dep.tokens.push(hash);
    }

    /// The operator pairs or revokes a device on the lead (which needs the lead up); the lead's
    /// push loop sends the deputy the new copy.
    pub(super) fn devices(&mut self) -> Check {
        if self.draining {
            return Ok(());
        }
        let next = self.now + self.rng.gen_range(1_000..=4_000);
        self.schedule(next, Ev::Devices);
        if !self.lead.up {
            return Ok(());
        }
        let count = self.lead.registry.devices.len();
        if count > 1 && (count >= MAX_DEVICES || self.rng.gen_ratio(2, 5)) {
            let i = self.rng.gen_range(0..count);
            let Some((hash, label)) = self
                .lead
                .registry
                .devices
                .iter()
                .nth(i)
                .map(|(h, d)| (*h, d.label.clone()))
            else {
                return Ok(());
            };
            self.lead.registry.revoke(&hash);
            self.log(format!("operator revokes {label}"));
            self.dep.ghost.revoked(hash, self.now);
        } else {
            let tier = if self.rng.gen_ratio(1, 4) {
                Tier::Read
            } else {
                Tier::Full
            };
            self.pair(tier, None);
        }
        let outs = self.lead.push(self.now);
        self.apply_lead(outs)
    }

    /// The phone's token for its next request: two times in three one the lead holds now (the
    /// phone's own devices), else any it ever held (a revoked device still presenting its token,
    /// or the one the lead never paired).
    pub(super) fn token(&mut self) -> Option<[u8; 32]> {
        if self.rng.gen_ratio(2, 3) && !self.lead.registry.devices.is_empty() {
            let i = self.rng.gen_range(0..self.lead.registry.devices.len());
            return self.lead.registry.devices.keys().nth(i).copied();
        }
        if self.dep.tokens.is_empty() {
            return None;
        }
        let i = self.rng.gen_range(0..self.dep.tokens.len());
        Some(self.dep.tokens[i])
    }

    /// Whether the lead's own door lets `hash` do what `kind` needs (its registry's snapshot).
    pub(super) fn lead_admits(&mut self, hash: &[u8; 32], write: bool) -> bool {
        let required = if write { Tier::Full } else { Tier::Read };
        let verdict = self.lead.registry.snapshot().authorize_hash(
            &TokenHash::from_bytes(*hash),
            required,
            wall(self.now),
        );
        match verdict {
            Ok(_) => true,
            Err(e) => {
                self.log(format!("the lead refuses the phone: {e}"));
                false
            }
        }
    }

    /// Whether the phone goes to the deputy: when the lead does not answer, and one time in ten
    /// anyway (a phone that has not switched back yet).
    pub(super) fn goes_to_deputy(&mut self) -> bool {
        let lead_answers = self.lead.up && !self.dep.lead_cut;
        !lead_answers || self.rng.gen_ratio(1, 10)
    }

    /// The phone's request `id` at the deputy's standby door, for the deputy's own panes.
    pub(super) fn at_door(&mut self, id: u64, hash: [u8; 32]) -> Check {
        let Some(d) = self.dep.deputy else {
            return Ok(());
        };
        if !self.members[d].up {
            self.log(format!(
                "phone {id}: neither the lead nor the deputy answers"
            ));
            return Ok(());
        }
        let pane = format!("p{}", self.rng.gen_range(0..3));
        let kind = match self.rng.gen_range(0..100) {
            0..=39 => RelayKind::Snapshot {
                pane,
                scrollback: None,
            },
            40..=54 => RelayKind::PaneList,
            55..=89 => RelayKind::Input {
                pane,
                text: Some(format!("echo {id}")),
                keys: vec!["Enter".to_owned()],
            },
            _ => RelayKind::Rename {
                pane,
                name: format!("n{id}"),
            },
        };
        let write = kind.is_write();
        let required = if write { Tier::Full } else { Tier::Read };
        let member = &self.members[d];
        let machine = member.name.clone();
        let reach = member.reach;
        let ignore = self.dep.bug == Some(Bug::DeputyIgnoresStandby);
        let answer = member
            .panes()
            .door(&hash, required, reach, self.now, ignore);
        let on_lead = self
            .lead
            .registry
            .devices
            .get(&hash)
            .map_or("not on the lead", |d| d.label.as_str());
        self.log(format!(
            "phone {id} at the deputy's door ({on_lead}): {kind:?}: {answer:?}"
        ));
        match answer {
            DoorAnswer::Standby => self.dep.ghost.standby += 1,
            DoorAnswer::NotPaired | DoorAnswer::Refused(_) => {}
            DoorAnswer::Served => {
                self.dep
                    .ghost
                    .served(&hash, write, reach.0, reach.1, self.now)?;
                self.checker.on_door(id, &machine, write);
                let request = RelayRequest {
                    id,
                    device: "phone".to_owned(),
                    request_id: id.to_string(),
                    kind,
                    device_id: None,
                };
                let panes = self.members[d].panes().clone();
                let result = panes.serve_door(&request);
                for request_id in panes.take_executed() {
                    self.log(format!("{machine} runs write {request_id} at its door"));
                    self.checker.on_executed(&request_id, &machine)?;
                }
                if write && !matches!(result, Ok(RelayOk::Done) | Err(_)) {
                    self.log(format!("phone {id}: unexpected answer {result:?}"));
                }
            }
        }
        Ok(())
    }

    /// One of the deputy scenario's own faults.
    pub(super) fn deputy_fault(&mut self) -> Check {
        let Some(d) = self.dep.deputy else {
            return Ok(());
        };
        match self.rng.gen_range(0..100) {
            0..=29 => {
                if self.dep.lead_cut || !self.lead.up {
                    return Ok(());
                }
                self.log("partition the lead from everyone".to_owned());
                self.dep.lead_cut = true;
                self.forget_all_expected();
                let conns: Vec<u64> = self
                    .conns
                    .iter()
                    .filter(|(_, c)| c.alive)
                    .map(|(id, _)| *id)
                    .collect();
                for conn in conns {
                    self.kill(conn, None, None);
                }
                let heal = self.now + self.rng.gen_range(3_000..=25_000);
                self.schedule(heal, Ev::LeadReconnect);
            }
            30..=59 => {
                if !self.partitioned.insert(d) {
                    return Ok(());
                }
                self.log(format!(
                    "split brain: partition the lead from the deputy {}",
                    self.members[d].name
                ));
                self.forget_expected(d);
                if let Some(conn) = self.members[d].conn.as_ref().map(|c| c.id) {
                    self.kill(conn, None, None);
                }
                let heal = self.now + self.rng.gen_range(3_000..=25_000);
                self.schedule(heal, Ev::Heal { m: d });
            }
            60..=79 => {
                if !self.lead.up {
                    return Ok(());
                }
                self.log("lead down for long".to_owned());
                self.forget_all_expected();
                let (phones, conns) = self.lead.crash();
                self.checker.on_aborted(&phones)?;
                for conn in conns {
                    let b = self.idle();
                    self.kill(conn, None, Some(b));
                }
                let up = self.now + self.rng.gen_range(500..=25_000);
                self.schedule(up, Ev::LeadUp);
            }
            _ => {
                if !self.members[d].up {
                    return Ok(());
                }
                self.log(format!("restart the deputy {}", self.members[d].name));
                self.forget_expected(d);
                let conn = self.members[d].conn.as_ref().map(|c| c.id);
                self.members[d].crash();
                if let Some(conn) = conn {
                    self.kill(conn, None, None);
                }
                let up = self.now + self.rng.gen_range(200..=5_000);
                self.schedule(up, Ev::MemberUp { m: d });
            }
        }
        Ok(())
    }
}
