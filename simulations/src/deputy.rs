//! The deputy (SPEC §13) in the simulations: the lead's device registry, the lead's pushes of its
//! copy, and the deputy's copy and standby door.
//!
//! **Shipped code run here**: the policy snapshot both machines authorize by
//! ([`PolicySnapshot::build`] and [`PolicySnapshot::authorize_hash`]: hash, expiry, tier), the
//! copy and its message ([`RegistryCopy`] in [`RelayKind::Deputy`], answered
//! [`RelayOk::DeputyDoor`], both through the member's shipped relay server and the lead's relay
//! ledger), the standby rule ([`Door::at`] with [`STAND_IN_AFTER`]) and the deputy's redial
//! ([`Dialer::lost_within`] with [`DEPUTY_REDIAL`], in `sim/net.rs`).
//!
//! **Modelled** (the bridge's `src/app/deputy/`, which the simulations do not link): the lead's
//! registry as a map of token hash → label, tier, expiry, changed by the operator (pair, revoke)
//! and kept across the lead's restarts; the copy's version (the first of a lead's run is its wall
//! clock in milliseconds, then one more per change, as `push.rs` numbers them); the push loop's
//! decisions ([`Pusher`]: one copy in flight, again whenever the registry changed or the deputy's
//! link is new, a failed one again after [`RETRY_MS`] on the same link or at once on a new one);
//! turning a copy into the snapshot the door checks ([`held`], as `held.rs` does: a copy with one
//! device that does not read is refused whole); and the door's order of checks (`deputy_caller`:
//! the copy's verdict on the token first, then the door).
//!
//! [`Dialer::lost_within`]: collie_actors::crew_link::link::dialer::Dialer::lost_within
//! [`DEPUTY_REDIAL`]: collie_actors::crew_link::reach::DEPUTY_REDIAL

use std::collections::BTreeMap;
use std::time::Duration;

use collie_actors::crew_link::registry_copy::copied_devices;
use collie_actors::crew_link::standby::{Door, STAND_IN_AFTER};
use collie_actors::pairing::{Device, Label, PolicySnapshot, Tier, TokenHash};
use collie_crew::relay::deputy::RegistryCopy;
use collie_crew::relay::ledger::ANSWER_WITHIN;
use time::OffsetDateTime;

use crate::fail::{fail, Check};
use crate::relay::ms;
use crate::ViolationKind;

/// A failed push is tried again after this long on the same link (`push.rs`'s `RETRY`).
pub(crate) const RETRY_MS: u64 = 2_000;

/// The network's longest delivery of one frame: its latency and one retransmission
/// (`sim/net.rs`).
pub(crate) const MAX_DELIVERY_MS: u64 = MAX_LATENCY_MS + MAX_RETRANSMIT_MS;
/// A frame's longest latency.
pub(crate) const MAX_LATENCY_MS: u64 = 20;
/// The longest retransmission delay of a lost frame.
pub(crate) const MAX_RETRANSMIT_MS: u64 = 2_500;

/// How long the deputy must have been linked to the lead, after a revocation, for the revocation
/// to hold at its door: the copy in flight at the revocation is answered or given up within the
/// relay's answer deadline, the next goes out at once or after [`RETRY_MS`], and arrives within
/// the network's longest delivery. (A new link gets its copy as it is served, before the deputy's
/// side of the hello completes, so the same bound covers a revocation made while they were apart.)
pub(crate) fn push_bound_ms() -> u64 {
    ms(ANSWER_WITHIN) + RETRY_MS + MAX_DELIVERY_MS
}

/// Wall-clock seconds of virtual time `ms` (the lead's `wall_clock` epoch).
pub(crate) fn wall_secs(ms: u64) -> i64 {
    1_700_000_000 + i64::try_from(ms / 1000).unwrap_or(i64::MAX)
}

/// The time of day at virtual time `ms`, as the snapshot compares expiries.
pub(crate) fn wall(ms: u64) -> OffsetDateTime {
    let base =
        OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    base + Duration::from_millis(ms)
}

/// One device of the lead's registry.
#[derive(Debug, Clone)]
pub(crate) struct Paired {
    pub(crate) label: String,
    pub(crate) tier: Tier,
    /// Unix seconds.
    pub(crate) expires_at: Option<i64>,
}

/// The lead's device registry (its store: it survives the lead's restarts).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) devices: BTreeMap<[u8; 32], Paired>,
    /// The copy's version: the first of a lead's run is its wall clock, then one more per change.
    version: Option<u64>,
    /// Changes since the version was last taken.
    changed: bool,
}

impl Registry {
    /// The lead starts a new run: the next copy's version is its wall clock.
    pub(crate) fn new_run(&mut self) {
        self.version = None;
    }

    pub(crate) fn pair(&mut self, hash: [u8; 32], device: Paired) {
        self.devices.insert(hash, device);
        self.changed = true;
    }

    pub(crate) fn revoke(&mut self, hash: &[u8; 32]) -> bool {
        let gone = self.devices.remove(hash).is_some();
        self.changed |= gone;
        gone
    }

    /// The version of the registry now (`push.rs`'s `version_for`).
    pub(crate) fn version(&mut self, now: u64) -> u64 {
        let v = match self.version {
            None => u64::try_from(wall_secs(0)).unwrap_or(0) * 1000 + now,
            Some(v) if self.changed => v + 1,
            Some(v) => v,
        };
        self.version = Some(v);
        self.changed = false;
        v
    }

    fn devices(&self) -> Vec<Device> {
        self.devices
            .iter()
            .filter_map(|(hash, d)| {
                Some(Device {
                    label: Label::parse(&d.label).ok()?,
                    tier: d.tier,
                    token_hash: TokenHash::from_bytes(*hash),
                    created_at: OffsetDateTime::UNIX_EPOCH,
                    last_seen: None,
                    expires_at: d
                        .expires_at
                        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok()),
                    paired_by: None,
                })
            })
            .collect()
    }

    /// The snapshot the lead's own door authorizes by.
    pub(crate) fn snapshot(&self) -> PolicySnapshot {
        PolicySnapshot::build(0, self.devices().iter())
    }

    /// The copy for the deputy, made as `push.rs` makes it: from the snapshot's devices.
    pub(crate) fn copy(&mut self, lead: &str, now: u64) -> RegistryCopy {
        let version = self.version(now);
        let snapshot = PolicySnapshot::build(version, self.devices().iter());
        let devices = copied_devices(&snapshot);
        RegistryCopy {
            version,
            lead: lead.to_owned(),
            lead_url: format!("https://{lead}.example"),
            devices,
            members: Vec::new(),
        }
    }
}

/// The copy a deputy holds and the snapshot its door checks (`held.rs`'s `Held::of`).
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) policy: PolicySnapshot,
}

/// A copy as the deputy keeps it, or `None` if one device does not read (refused whole).
pub(crate) fn held(copy: &RegistryCopy) -> Option<Held> {
    if !copy.fits() {
        return None;
    }
    let mut devices = Vec::with_capacity(copy.devices.len());
    for d in &copy.devices {
        devices.push(Device {
            label: Label::parse(&d.label).ok()?,
            tier: Tier::parse(&d.tier).ok()?,
            token_hash: TokenHash::from_bytes(d.token_hash),
            created_at: OffsetDateTime::UNIX_EPOCH,
            last_seen: None,
            expires_at: match d.expires_at {
                Some(s) => Some(OffsetDateTime::from_unix_timestamp(s).ok()?),
                None => None,
            },
            paired_by: None,
        });
    }
    Some(Held {
        policy: PolicySnapshot::build(copy.version, devices.iter()),
    })
}

/// What the standby door did with a phone's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DoorAnswer {
    /// No copy, or the copy does not know the token: `device not paired`.
    NotPaired,
    /// Expired or insufficient tier, by the copy.
    Refused(&'static str),
    /// 503 `standby: the lead is up`.
    Standby,
    /// Served while standing in.
    Served,
}

/// The door's decision for a token (`deputy_caller` and `deputy_allows`): the copy's verdict,
/// then the standby rule. `since` and `now` are virtual milliseconds.
pub(crate) fn door(
    held: Option<&Held>,
    hash: &[u8; 32],
    required: Tier,
    up: bool,
    since: u64,
    now: u64,
    ignore_standby: bool,
) -> DoorAnswer {
    let Some(held) = held else {
        return DoorAnswer::NotPaired;
    };
    use collie_actors::pairing::AuthError;
    match held
        .policy
        .authorize_hash(&TokenHash::from_bytes(*hash), required, wall(now))
    {
        Err(AuthError::NotPaired | AuthError::Unavailable) => return DoorAnswer::NotPaired,
        Err(AuthError::Expired) => return DoorAnswer::Refused("device expired"),
        Err(_) => return DoorAnswer::Refused("insufficient tier"),
        Ok(_) => {}
    }
    let origin = tokio::time::Instant::now();
    let at = |ms: u64| origin + Duration::from_millis(ms);
    match Door::at(up, at(since), at(now)) {
        Door::StandingIn => DoorAnswer::Served,
        Door::Standby if ignore_standby => DoorAnswer::Served,
        Door::Standby => DoorAnswer::Standby,
    }
}

/// The lead's push loop (`push.rs`), its decisions only.
#[derive(Debug, Default)]
pub(crate) struct Pusher {
    /// A copy is in flight (of this version, on this link).
    pub(crate) in_flight: Option<(u64, u64)>,
    /// The link and version the deputy acknowledged last.
    pub(crate) acked: Option<(u64, u64)>,
    /// The last push failed on this link; the next waits until this time.
    pub(crate) failed: Option<(u64, u64)>,
}

impl Pusher {
    /// Whether a copy of `version` should go out on `link` now.
    pub(crate) fn wants(&self, link: u64, version: u64, now: u64) -> bool {
        self.in_flight.is_none()
            && self.acked != Some((link, version))
            && self.failed.is_none_or(|(l, at)| l != link || now >= at)
    }
}

/// The checker's ghost of the deputy: which tokens the lead ever paired, revoked and when, and
/// whether the deputy is linked to the lead over a live connection (its hello done).
#[derive(Debug, Default)]
pub(crate) struct Ghost {
    /// Every hash the lead ever paired: tier and expiry (virtual ms).
    paired: BTreeMap<[u8; 32], (Tier, Option<u64>)>,
    /// Revoked hashes: when, and whether the deputy has since been linked long enough.
    revoked: BTreeMap<[u8; 32], (u64, bool)>,
    /// The deputy's live link: its connection and since when.
    linked: Option<(u64, u64)>,
    /// Served at the door, for the report.
    pub(crate) served: u64,
    /// Answered standby.
    pub(crate) standby: u64,
    /// Revoked hashes served within their bound (the partition's window), for the report.
    pub(crate) revoked_in_window: u64,
    /// The longest time after its revocation a revoked token was served (ms).
    pub(crate) longest_window: u64,
}

impl Ghost {
    pub(crate) fn paired(&mut self, hash: [u8; 32], tier: Tier, expires_ms: Option<u64>) {
        self.paired.insert(hash, (tier, expires_ms));
    }

    pub(crate) fn revoked(&mut self, hash: [u8; 32], now: u64) {
        self.revoked.entry(hash).or_insert((now, false));
    }

    /// The deputy's hello on `conn` completed.
    pub(crate) fn linked(&mut self, conn: u64, now: u64) {
        self.linked = Some((conn, now));
    }

    /// Connection `conn` ended (killed in the network, or a side died).
    pub(crate) fn conn_ended(&mut self, conn: u64, now: u64) {
        if let Some((c, since)) = self.linked {
            if c == conn {
                self.linked = None;
                self.honour(since, now);
            }
        }
    }

    /// Revocations made before `to` that a link from `since` to `to` carried.
    fn honour(&mut self, since: u64, to: u64) {
        let bound = push_bound_ms();
        for (at, honoured) in self.revoked.values_mut() {
            if !*honoured && (*at).max(since) + bound <= to {
                *honoured = true;
            }
        }
    }

    /// The deputy served `hash` at its door at `now` (its own view of the link: `up` since
    /// `since`).
    pub(crate) fn served(
        &mut self,
        hash: &[u8; 32],
        write: bool,
        up: bool,
        since: u64,
        now: u64,
    ) -> Check {
        self.served += 1;
        // (3) Standby: never while linked, nor before the lead was out of reach long enough.
        if let Some((conn, at)) = self.linked {
            return fail(
                ViolationKind::StandbyBroken,
                format!(
                    "the deputy served while linked to the lead (connection {conn} since {at} ms)"
                ),
            );
        }
        if up || now < since + ms(STAND_IN_AFTER) {
            return fail(
                ViolationKind::StandbyBroken,
                format!(
                    "the deputy served {} ms after its link changed (up: {up})",
                    now.saturating_sub(since)
                ),
            );
        }
        // (4) Only the lead's tokens.
        let Some(&(tier, expires)) = self.paired.get(hash) else {
            return fail(
                ViolationKind::StrangerServed,
                "the deputy served a token the lead never paired".to_owned(),
            );
        };
        if expires.is_some_and(|e| now >= e) {
            return fail(
                ViolationKind::RevokedServed,
                format!("the deputy served a token expired at {expires:?} ms"),
            );
        }
        if write && tier != Tier::Full {
            return fail(
                ViolationKind::RevokedServed,
                format!("the deputy served a write to a {} device", tier.as_str()),
            );
        }
        // (1) A revocation holds once the deputy was linked long enough after it.
        if let Some(&(at, honoured)) = self.revoked.get(hash) {
            if let Some((_, since)) = self.linked {
                self.honour(since, now);
            }
            if honoured || self.revoked.get(hash).is_some_and(|r| r.1) {
                return fail(
                    ViolationKind::RevokedServed,
                    format!(
                        "the deputy served a token revoked at {at} ms, after a link of {} ms carried the revocation",
                        push_bound_ms()
                    ),
                );
            }
            self.revoked_in_window += 1;
            self.longest_window = self.longest_window.max(now - at);
        }
        Ok(())
    }
}
