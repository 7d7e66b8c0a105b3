//! The policy snapshot (SPEC §11): the authorization decision on the hot path.
//!
//! Authorization is: the device the token names → the current snapshot → compare tiers. The
//! snapshot is built from the registry and never changes; a change to the devices makes a new one.

use std::collections::HashMap;
use std::fmt;

use time::OffsetDateTime;

use super::devices::Device;
use super::label::Label;
use super::tier::Tier;
use super::token::TokenHash;

/// Why a request was refused. `Display` is the exact §3.2 string (403, except `Unavailable`: 503).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No token, an unknown token or a revoked one.
    #[error("device not paired")]
    NotPaired,
    /// The device's expiry has come.
    #[error("device expired")]
    Expired,
    /// The device's tier is below what the route needs.
    #[error("insufficient tier")]
    InsufficientTier,
    /// The device store could not be read, so no device can be checked; the phone keeps its token
    /// and retries.
    #[error("pairing unavailable")]
    Unavailable,
}

/// The device a request was authorized as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizedDevice {
    /// Its label (for the audit line and `current` in `/api/devices`).
    pub label: Label,
    /// Its tier (at least the one required).
    pub tier: Tier,
    /// Its expiry.
    pub expires_at: Option<OffsetDateTime>,
    /// The version of the snapshot that decided.
    pub policy_version: u64,
}

#[derive(Clone)]
struct Entry {
    hash: TokenHash,
    label: Label,
    tier: Tier,
    expires_at: Option<OffsetDateTime>,
}

/// An immutable, versioned view of who may do what: token hash → (label, tier, expiry).
///
/// # Publication contract
///
/// The HTTP layer holds the current snapshot in an `arc_swap::ArcSwap<PolicySnapshot>` and calls
/// [`authorize`](Self::authorize) on it for every request; the hot path never reads the store.
/// The pairing actor is the only writer, and for every change (pair, revoke, expiry, tier) it:
///
/// 1. writes the change to the store and **flushes** it;
/// 2. applies it to its [`DeviceRegistry`](super::DeviceRegistry);
/// 3. builds a new snapshot with the next `version` and stores it into the `ArcSwap`.
///
/// So a snapshot never grants what the store does not hold, and a failed store write leaves the
/// old snapshot in place. Changes apply at the next request, without a restart (§4.5). At start
/// the snapshot is rebuilt from the store. An empty snapshot (no device, or the last one revoked)
/// denies everything with `device not paired`.
///
/// Lookup is by the first 8 bytes of the token's SHA-256, then a constant-time comparison of all 32
/// bytes: the map's own key comparison only ever sees a digest prefix of what was presented.
pub struct PolicySnapshot {
    version: u64,
    by_prefix: HashMap<u64, Vec<Entry>>,
    devices: usize,
    available: bool,
}

fn prefix(hash: &TokenHash) -> u64 {
    let b = hash.as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

impl PolicySnapshot {
    /// A snapshot of `devices` (expired ones included: they answer `device expired`).
    pub fn build<'a>(
        version: u64,
        devices: impl IntoIterator<Item = &'a Device>,
    ) -> PolicySnapshot {
        let mut by_prefix: HashMap<u64, Vec<Entry>> = HashMap::new();
        let mut count = 0;
        for d in devices {
            count += 1;
            by_prefix
                .entry(prefix(&d.token_hash))
                .or_default()
                .push(Entry {
                    hash: d.token_hash,
                    label: d.label.clone(),
                    tier: d.tier,
                    expires_at: d.expires_at,
                });
        }
        PolicySnapshot {
            version,
            by_prefix,
            devices: count,
            available: true,
        }
    }

    /// The snapshot published while the device store cannot be read: every authorization answers
    /// [`AuthError::Unavailable`] (never "not paired", which would make a phone forget its token).
    pub fn unavailable(version: u64) -> PolicySnapshot {
        PolicySnapshot {
            available: false,
            ..PolicySnapshot::build(version, [])
        }
    }

    /// Whether the device store was readable when this snapshot was built.
    pub fn is_available(&self) -> bool {
        self.available
    }

    /// A snapshot with no device: it denies everything.
    pub fn empty(version: u64) -> PolicySnapshot {
        PolicySnapshot::build(version, [])
    }

    /// The version the pairing actor gave it.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Number of devices in it.
    pub fn len(&self) -> usize {
        self.devices
    }

    /// Whether it holds no device.
    pub fn is_empty(&self) -> bool {
        self.devices == 0
    }

    /// Decides whether `presented` (the bearer token, without `Bearer `; empty when the request
    /// carried none) may do something that requires `required` at `now`.
    ///
    /// Checked in order: the token names a device (`device not paired`), the device has not
    /// expired (`device expired`, from `expires_at` on), its tier is at least `required`
    /// (`insufficient tier`).
    pub fn authorize(
        &self,
        presented: &str,
        required: Tier,
        now: OffsetDateTime,
    ) -> Result<AuthorizedDevice, AuthError> {
        self.authorize_hash(&TokenHash::from_presented(presented), required, now)
    }

    /// [`authorize`](Self::authorize) for a token already hashed: how a stream checks its device
    /// again when a new snapshot is published, without keeping the token itself.
    pub fn authorize_hash(
        &self,
        hash: &TokenHash,
        required: Tier,
        now: OffsetDateTime,
    ) -> Result<AuthorizedDevice, AuthError> {
        if !self.available {
            return Err(AuthError::Unavailable);
        }
        let hash = *hash;
        let entry = self
            .by_prefix
            .get(&prefix(&hash))
            .and_then(|candidates| candidates.iter().find(|e| e.hash.ct_eq(&hash)))
            .ok_or(AuthError::NotPaired)?;
        if entry.expires_at.is_some_and(|at| now >= at) {
            return Err(AuthError::Expired);
        }
        if !entry.tier.allows(required) {
            return Err(AuthError::InsufficientTier);
        }
        Ok(AuthorizedDevice {
            label: entry.label.clone(),
            tier: entry.tier,
            expires_at: entry.expires_at,
            policy_version: self.version,
        })
    }
}

impl PolicySnapshot {
    /// Every device that holds `required` at `now`, with its token hash: what a bridge compares
    /// between two snapshots to learn whose authorization ended (a revocation, an expiry, a lower
    /// tier). Empty while the store cannot be read.
    pub fn holding(
        &self,
        required: Tier,
        now: OffsetDateTime,
    ) -> Vec<(TokenHash, AuthorizedDevice)> {
        if !self.available {
            return Vec::new();
        }
        self.by_prefix
            .values()
            .flatten()
            .filter(|e| e.tier.allows(required) && e.expires_at.is_none_or(|at| now < at))
            .map(|e| {
                let device = AuthorizedDevice {
                    label: e.label.clone(),
                    tier: e.tier,
                    expires_at: e.expires_at,
                    policy_version: self.version,
                };
                (e.hash, device)
            })
            .collect()
    }
}

impl fmt::Debug for PolicySnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicySnapshot")
            .field("version", &self.version)
            .field("devices", &self.devices)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use time::macros::datetime;
    use time::Duration;

    use super::*;
    use crate::pairing::token::DeviceToken;
    use crate::pairing::DeviceRegistry;

    const T0: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    #[test]
    fn an_unavailable_snapshot_answers_unavailable_never_not_paired() {
        let snap = PolicySnapshot::unavailable(3);
        assert!(!snap.is_available());
        let token = DeviceToken::generate(&mut StdRng::seed_from_u64(9));
        for tier in Tier::ALL {
            assert_eq!(
                snap.authorize(token.expose_secret(), tier, T0),
                Err(AuthError::Unavailable)
            );
            assert_eq!(snap.authorize("", tier, T0), Err(AuthError::Unavailable));
        }
        assert!(PolicySnapshot::empty(1).is_available());
    }

    fn device(
        label: &str,
        tier: Tier,
        token: &DeviceToken,
        expires_at: Option<OffsetDateTime>,
    ) -> Device {
        Device {
            label: Label::parse(label).expect(label),
            tier,
            token_hash: token.hash(),
            created_at: T0,
            last_seen: None,
            expires_at,
            paired_by: None,
        }
    }

    fn token(seed: u64) -> DeviceToken {
        DeviceToken::generate(&mut StdRng::seed_from_u64(seed))
    }

    #[test]
    fn holding_lists_the_devices_that_hold_a_tier_now() {
        let (a, b, c) = (token(1), token(2), token(3));
        let s = PolicySnapshot::build(
            4,
            [
                &device("full", Tier::Full, &a, None),
                &device("files", Tier::Files, &b, None),
                &device("gone", Tier::Full, &c, Some(T0)),
            ],
        );
        let full = s.holding(Tier::Full, T0);
        assert_eq!(
            full.len(),
            1,
            "a lower tier and an expired device do not hold full"
        );
        assert!(full[0].0.ct_eq(&a.hash()));
        assert_eq!(full[0].1.label.as_str(), "full");
        assert_eq!(s.holding(Tier::Files, T0 - Duration::seconds(1)).len(), 3);
        assert!(PolicySnapshot::unavailable(5)
            .holding(Tier::Read, T0)
            .is_empty());
    }

    #[test]
    fn the_error_strings_are_the_spec_strings() {
        assert_eq!(AuthError::NotPaired.to_string(), "device not paired");
        assert_eq!(AuthError::Expired.to_string(), "device expired");
        assert_eq!(AuthError::InsufficientTier.to_string(), "insufficient tier");
    }

    #[test]
    fn an_empty_snapshot_denies_everything() {
        let s = PolicySnapshot::empty(0);
        assert!(s.is_empty());
        for presented in ["", "collie_", token(1).expose_secret(), "Local abc"] {
            for t in Tier::ALL {
                assert_eq!(s.authorize(presented, t, T0), Err(AuthError::NotPaired));
            }
        }
    }

    #[test]
    fn a_paired_device_is_authorized_up_to_its_tier() {
        let tk = token(1);
        let s = PolicySnapshot::build(7, [&device("pixel", Tier::Files, &tk, None)]);
        let ok = s
            .authorize(tk.expose_secret(), Tier::Read, T0)
            .expect("read is below files");
        assert_eq!(ok.label.as_str(), "pixel");
        assert_eq!((ok.tier, ok.policy_version), (Tier::Files, 7));
        assert!(s.authorize(tk.expose_secret(), Tier::Files, T0).is_ok());
        assert_eq!(
            s.authorize(tk.expose_secret(), Tier::Full, T0),
            Err(AuthError::InsufficientTier)
        );
    }

    #[test]
    fn unknown_missing_and_near_miss_tokens_are_not_paired() {
        let tk = token(1);
        let s = PolicySnapshot::build(1, [&device("pixel", Tier::Full, &tk, None)]);
        let real = tk.expose_secret();
        let mut near = real.to_owned();
        near.pop();
        near.push(if real.ends_with('A') { 'Q' } else { 'A' });
        for presented in [
            "",
            real.trim_start_matches("collie_"),
            near.as_str(),
            &format!("{real} "),
            token(2).expose_secret(),
        ] {
            assert_eq!(
                s.authorize(presented, Tier::Read, T0),
                Err(AuthError::NotPaired),
                "{presented:?}"
            );
        }
        // The hash itself is not a credential.
        assert_eq!(
            s.authorize(&tk.hash().to_hex(), Tier::Read, T0),
            Err(AuthError::NotPaired)
        );
    }

    #[test]
    fn expiry_is_checked_before_tier_and_from_the_instant_on() {
        let tk = token(1);
        let at = T0 + Duration::hours(1);
        let s = PolicySnapshot::build(1, [&device("pixel", Tier::Read, &tk, Some(at))]);
        let just_before = at - Duration::nanoseconds(1);
        assert!(s
            .authorize(tk.expose_secret(), Tier::Read, just_before)
            .is_ok());
        assert_eq!(
            s.authorize(tk.expose_secret(), Tier::Read, at),
            Err(AuthError::Expired)
        );
        assert_eq!(
            s.authorize(tk.expose_secret(), Tier::Full, at),
            Err(AuthError::Expired)
        );
        assert_eq!(
            s.authorize(tk.expose_secret(), Tier::Full, just_before),
            Err(AuthError::InsufficientTier)
        );
    }

    #[test]
    fn registry_changes_show_in_the_next_snapshot_only() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut reg = DeviceRegistry::new();
        let tk = DeviceToken::generate(&mut rng);
        let p = reg
            .pair(
                Label::parse("pixel").expect("valid"),
                Tier::Read,
                tk.hash(),
                None,
                T0,
            )
            .expect("free");
        reg.apply(p.write());
        let v1 = PolicySnapshot::build(1, reg.iter());

        let c = reg.set_tier("pixel", Tier::Full).expect("exists");
        reg.apply(c.write());
        let v2 = PolicySnapshot::build(2, reg.iter());
        assert_eq!(
            v1.authorize(tk.expose_secret(), Tier::Full, T0),
            Err(AuthError::InsufficientTier)
        );
        assert_eq!(
            v2.authorize(tk.expose_secret(), Tier::Full, T0)
                .map(|a| a.policy_version),
            Ok(2)
        );

        let r = reg.revoke("pixel").expect("exists");
        reg.apply(r.write());
        let v3 = PolicySnapshot::build(3, reg.iter());
        assert!(v3.is_empty());
        assert_eq!(
            v3.authorize(tk.expose_secret(), Tier::Read, T0),
            Err(AuthError::NotPaired)
        );
    }

    #[test]
    fn a_taken_over_label_revokes_the_old_token() {
        let (old, new) = (token(1), token(2));
        let mut reg = DeviceRegistry::from_devices([device("pixel", Tier::Full, &old, Some(T0))]);
        let p = reg
            .pair(
                Label::parse("pixel").expect("valid"),
                Tier::Read,
                new.hash(),
                None,
                T0,
            )
            .expect("takeover");
        reg.apply(p.write());
        let s = PolicySnapshot::build(2, reg.iter());
        assert_eq!(
            s.authorize(old.expose_secret(), Tier::Read, T0),
            Err(AuthError::NotPaired)
        );
        assert!(s.authorize(new.expose_secret(), Tier::Read, T0).is_ok());
    }

    #[test]
    fn colliding_prefixes_are_told_apart_by_the_full_hash() {
        // Two entries forced under one prefix: only the full comparison separates them.
        let (a, b) = (token(1), token(2));
        let mut s = PolicySnapshot::build(1, [&device("a", Tier::Read, &a, None)]);
        let eb = Entry {
            hash: b.hash(),
            label: Label::parse("b").expect("valid"),
            tier: Tier::Full,
            expires_at: None,
        };
        let key = prefix(&a.hash());
        s.by_prefix.get_mut(&key).expect("a is there").push(eb);
        assert_eq!(
            s.authorize(a.expose_secret(), Tier::Read, T0)
                .map(|d| d.tier),
            Ok(Tier::Read)
        );
        // b's own prefix bucket is empty: not paired, even though its hash sits in a's bucket.
        assert_eq!(
            s.authorize(b.expose_secret(), Tier::Read, T0),
            Err(AuthError::NotPaired)
        );
    }

    fn arb_tier() -> impl Strategy<Value = Tier> {
        prop_oneof![Just(Tier::Read), Just(Tier::Files), Just(Tier::Full)]
    }

    proptest! {
        /// Whatever the devices and the request, a grant never exceeds the device's own tier, and
        /// every decision is the one the rules give.
        #[test]
        fn authorize_never_grants_above_the_devices_tier(
            devices in proptest::collection::vec((arb_tier(), proptest::option::of(-3600i64..3600)), 0..12),
            pick in any::<proptest::sample::Index>(),
            required in arb_tier(),
            seed in any::<u64>(),
        ) {
            let mut rng = StdRng::seed_from_u64(seed);
            let tokens: Vec<DeviceToken> = devices.iter().map(|_| DeviceToken::generate(&mut rng)).collect();
            let records: Vec<Device> = devices
                .iter()
                .zip(&tokens)
                .enumerate()
                .map(|(i, ((tier, exp), tk))| {
                    device(&format!("d{i}"), *tier, tk, exp.map(|s| T0 + Duration::seconds(s)))
                })
                .collect();
            let snap = PolicySnapshot::build(1, &records);
            if records.is_empty() {
                prop_assert_eq!(snap.authorize(tokens.first().map_or("", |t| t.expose_secret()), required, T0), Err(AuthError::NotPaired));
                return Ok(());
            }
            let i = pick.index(records.len());
            let d = &records[i];
            let got = snap.authorize(tokens[i].expose_secret(), required, T0);
            let expected = if d.is_expired(T0) {
                Err(AuthError::Expired)
            } else if d.tier < required {
                Err(AuthError::InsufficientTier)
            } else {
                Ok((d.label.clone(), d.tier))
            };
            prop_assert_eq!(got.clone().map(|a| (a.label, a.tier)), expected);
            if let Ok(a) = got {
                prop_assert!(a.tier >= required);
                prop_assert_eq!(a.tier, d.tier);
            }
            // A token no device holds is never granted anything.
            let stranger = DeviceToken::generate(&mut rng);
            prop_assert_eq!(snap.authorize(stranger.expose_secret(), Tier::Read, T0), Err(AuthError::NotPaired));
        }
    }
}
