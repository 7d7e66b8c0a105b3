//! Paired devices and the registry of them (SPEC §4.3–§4.5).
//!
//! [`DeviceRegistry`] is the in-memory picture of the store's devices, keyed by label. Its operations
//! take `&self` and only *decide*: each returns what changed and the one record [`Write`] that makes
//! it durable. The actor persists that write, flushes, then calls [`DeviceRegistry::apply`] and
//! publishes a new [`PolicySnapshot`](super::PolicySnapshot). A failed store write therefore leaves
//! both the registry and the snapshot as they were (§11).
//!
//! A device is *expired* from its `expires_at` instant on (`now >= expires_at`). Setting or clearing
//! the expiry of an expired device makes it live again: that is the owner's explicit choice.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use super::duration::Dur;
use super::label::Label;
use super::tier::Tier;
use super::token::TokenHash;

/// How stale `last_seen` may get before [`DeviceRegistry::touch`] asks for a store write. Without
/// it every authorized request would write the store.
pub const TOUCH_GRANULARITY: Duration = Duration::minutes(1);

/// One paired device, as the store keeps it (JSON).
///
/// This is the stored record and includes the token hash: the API builds its own view
/// (`{label, tier, created_at, last_seen, expires_at, current}`) rather than serializing this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// The device's label, unique among devices.
    pub label: Label,
    /// What the device may do.
    pub tier: Tier,
    /// SHA-256 of the device's token, hex in JSON.
    pub token_hash: TokenHash,
    /// When it paired.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it last made an authorized request (to [`TOUCH_GRANULARITY`]).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub last_seen: Option<OffsetDateTime>,
    /// From this instant on the device is refused with `device expired`; `None` never expires.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// Who paired it: the person an identity gate vouched for when the code was claimed (SPEC
    /// §14), `None` without a gate. Absent from records written before gates existed, and from
    /// new ones without a person, so those read and write as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_by: Option<String>,
}

impl Device {
    /// Whether the device's expiry has come (`now >= expires_at`).
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }
}

/// The single store write that makes a registry change durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Store this record under its label, replacing any record there.
    Put(Device),
    /// Remove the record of this label.
    Delete(Label),
}

/// A device refused by a registry operation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// No device has the label.
    #[error("no such device")]
    NoSuchDevice,
    /// A live device holds the label (409).
    #[error("label in use")]
    LabelInUse,
}

/// A new device. When `replaced` is set, an expired device held the label and is revoked by this
/// pairing (its token stops working): the caller audits `device.revoked` for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paired {
    /// The new device.
    pub device: Device,
    /// The expired device whose label was taken over.
    pub replaced: Option<Device>,
}

/// A revoked device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revoked {
    /// The device as it was.
    pub device: Device,
}

/// A device whose expiry was set or cleared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryChanged {
    /// The device with its new expiry.
    pub device: Device,
    /// The expiry it had.
    pub old: Option<OffsetDateTime>,
}

/// A device whose tier was set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierChanged {
    /// The device with its new tier.
    pub device: Device,
    /// The tier it had.
    pub old: Tier,
    /// The tier it has now (also `device.tier`).
    pub new: Tier,
}

impl Paired {
    /// The store write: the new record under the label (replacing an expired one).
    pub fn write(&self) -> Write {
        Write::Put(self.device.clone())
    }
}

impl Revoked {
    /// The store write: delete the record.
    pub fn write(&self) -> Write {
        Write::Delete(self.device.label.clone())
    }
}

impl ExpiryChanged {
    /// The store write: the updated record.
    pub fn write(&self) -> Write {
        Write::Put(self.device.clone())
    }
}

impl TierChanged {
    /// The store write: the updated record.
    pub fn write(&self) -> Write {
        Write::Put(self.device.clone())
    }
}

/// The paired devices by label. Pure: it never touches the store itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceRegistry {
    devices: BTreeMap<Label, Device>,
}

impl DeviceRegistry {
    /// An empty registry.
    pub fn new() -> DeviceRegistry {
        DeviceRegistry::default()
    }

    /// A registry holding the devices loaded from the store (a later record of a label wins).
    pub fn from_devices(devices: impl IntoIterator<Item = Device>) -> DeviceRegistry {
        DeviceRegistry {
            devices: devices.into_iter().map(|d| (d.label.clone(), d)).collect(),
        }
    }

    /// The device with this label.
    pub fn get(&self, label: &str) -> Option<&Device> {
        self.devices.get(label)
    }

    /// All devices, by label.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Device> + '_ {
        self.devices.values()
    }

    /// Number of devices (live and expired).
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether no device is paired.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Decides a new pairing of `label` (§4.4): refused when a live device holds the label, a takeover
    /// when an expired one does.
    pub fn pair(
        &self,
        label: Label,
        tier: Tier,
        token_hash: TokenHash,
        expires_at: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<Paired, DeviceError> {
        let replaced = match self.devices.get(&label) {
            Some(held) if !held.is_expired(now) => return Err(DeviceError::LabelInUse),
            held => held.cloned(),
        };
        let device = Device {
            label,
            tier,
            token_hash,
            created_at: now,
            last_seen: None,
            expires_at,
            paired_by: None,
        };
        Ok(Paired { device, replaced })
    }

    /// Decides the revocation of `label` (live or expired).
    pub fn revoke(&self, label: &str) -> Result<Revoked, DeviceError> {
        Ok(Revoked {
            device: self.existing(label)?.clone(),
        })
    }

    /// Decides `set-expiry L DUR`: the device expires `dur` after `now` (§4.5).
    pub fn set_expiry(
        &self,
        label: &str,
        dur: Dur,
        now: OffsetDateTime,
    ) -> Result<ExpiryChanged, DeviceError> {
        self.change_expiry(label, Some(now + dur.as_duration()))
    }

    /// Decides `clear-expiry L`: the device never expires.
    pub fn clear_expiry(&self, label: &str) -> Result<ExpiryChanged, DeviceError> {
        self.change_expiry(label, None)
    }

    /// Decides `set-tier L T`.
    pub fn set_tier(&self, label: &str, tier: Tier) -> Result<TierChanged, DeviceError> {
        let old = self.existing(label)?;
        let device = Device {
            tier,
            ..old.clone()
        };
        Ok(TierChanged {
            device,
            old: old.tier,
            new: tier,
        })
    }

    /// Decides whether an authorized request at `now` should update `last_seen`: a write only when
    /// the recorded value is missing, at least [`TOUCH_GRANULARITY`] old, or in the future (the
    /// clock went back).
    pub fn touch(&self, label: &str, now: OffsetDateTime) -> Result<Option<Write>, DeviceError> {
        let d = self.existing(label)?;
        let stale = d
            .last_seen
            .is_none_or(|seen| now < seen || now - seen >= TOUCH_GRANULARITY);
        Ok(stale.then(|| {
            Write::Put(Device {
                last_seen: Some(now),
                ..d.clone()
            })
        }))
    }

    /// Applies a write the store has made durable.
    pub fn apply(&mut self, write: Write) {
        match write {
            Write::Put(device) => {
                self.devices.insert(device.label.clone(), device);
            }
            Write::Delete(label) => {
                self.devices.remove(&label);
            }
        }
    }

    /// The write that puts the store back as this registry holds it, for `write`'s label: the
    /// record now there, or its removal if there is none. The pairing actor makes it durable when
    /// a change it already wrote cannot be audited (decision 0037).
    pub fn undo_of(&self, write: &Write) -> Write {
        let label = match write {
            Write::Put(device) => &device.label,
            Write::Delete(label) => label,
        };
        match self.devices.get(label) {
            Some(device) => Write::Put(device.clone()),
            None => Write::Delete(label.clone()),
        }
    }

    fn existing(&self, label: &str) -> Result<&Device, DeviceError> {
        self.devices.get(label).ok_or(DeviceError::NoSuchDevice)
    }

    fn change_expiry(
        &self,
        label: &str,
        expires_at: Option<OffsetDateTime>,
    ) -> Result<ExpiryChanged, DeviceError> {
        let old = self.existing(label)?;
        let device = Device {
            expires_at,
            ..old.clone()
        };
        Ok(ExpiryChanged {
            device,
            old: old.expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const T0: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    fn label(s: &str) -> Label {
        Label::parse(s).expect(s)
    }

    fn hash(s: &str) -> TokenHash {
        TokenHash::from_presented(s)
    }

    /// A registry after pairing `label` at T0 with the given expiry, applied.
    fn with_device(
        label_s: &str,
        tier: Tier,
        expires_at: Option<OffsetDateTime>,
    ) -> DeviceRegistry {
        let mut r = DeviceRegistry::new();
        let p = r
            .pair(label(label_s), tier, hash(label_s), expires_at, T0)
            .expect("free label");
        r.apply(p.write());
        r
    }

    #[test]
    fn the_undo_of_a_write_restores_what_the_registry_holds() {
        let r = with_device("phone", Tier::Read, None);
        let raised = r.set_tier("phone", Tier::Full).expect("known").write();
        assert_eq!(
            r.undo_of(&raised),
            Write::Put(r.get("phone").expect("there").clone())
        );
        let new = DeviceRegistry::new()
            .pair(label("tablet"), Tier::Files, hash("tablet"), None, T0)
            .expect("free")
            .write();
        assert_eq!(r.undo_of(&new), Write::Delete(label("tablet")));
        let gone = Write::Delete(label("phone"));
        let mut after = r.clone();
        after.apply(gone.clone());
        after.apply(r.undo_of(&gone));
        assert_eq!(after, r);
    }

    #[test]
    fn pairing_a_free_label_creates_the_device() {
        let r = DeviceRegistry::new();
        let p = r
            .pair(label("phone"), Tier::Read, hash("t"), None, T0)
            .expect("the label is free");
        assert_eq!(p.replaced, None);
        assert_eq!(p.device.created_at, T0);
        assert_eq!(p.device.last_seen, None);
        assert!(r.is_empty(), "deciding changes nothing");
        let mut r = r;
        r.apply(p.write());
        assert_eq!(r.get("phone").map(|d| d.tier), Some(Tier::Read));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_live_device_keeps_its_label() {
        let r = with_device("phone", Tier::Full, None);
        let later = T0 + Duration::days(400);
        assert_eq!(
            r.pair(label("phone"), Tier::Read, hash("other"), None, later),
            Err(DeviceError::LabelInUse)
        );
        assert_eq!(DeviceError::LabelInUse.to_string(), "label in use");
        // Expiring in the future is still live.
        let r = with_device("phone", Tier::Full, Some(T0 + Duration::hours(1)));
        let just_before = T0 + Duration::hours(1) - Duration::nanoseconds(1);
        assert_eq!(
            r.pair(label("phone"), Tier::Read, hash("other"), None, just_before),
            Err(DeviceError::LabelInUse)
        );
    }

    #[test]
    fn an_expired_device_is_taken_over_and_reported() {
        let at = T0 + Duration::hours(1);
        let mut r = with_device("phone", Tier::Full, Some(at));
        let old = r.get("phone").cloned().expect("paired");
        // From the expiry instant on, the label is free to take over.
        let p = r
            .pair(label("phone"), Tier::Read, hash("new"), None, at)
            .expect("takeover");
        assert_eq!(p.replaced, Some(old));
        assert_eq!(p.write(), Write::Put(p.device.clone()));
        r.apply(p.write());
        let now_held = r.get("phone").expect("still one device");
        assert_eq!(now_held.token_hash, hash("new"));
        assert_eq!(now_held.tier, Tier::Read);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn revoke_deletes_and_unknown_labels_are_refused() {
        let mut r = with_device("phone", Tier::Full, None);
        let rv = r.revoke("phone").expect("exists");
        assert_eq!(rv.write(), Write::Delete(label("phone")));
        r.apply(rv.write());
        assert!(r.get("phone").is_none());
        assert!(r.is_empty());
        assert_eq!(r.revoke("phone"), Err(DeviceError::NoSuchDevice));
        assert_eq!(DeviceError::NoSuchDevice.to_string(), "no such device");
        assert_eq!(
            r.set_tier("ghost", Tier::Read).map(|_| ()),
            Err(DeviceError::NoSuchDevice)
        );
        assert_eq!(
            r.clear_expiry("ghost").map(|_| ()),
            Err(DeviceError::NoSuchDevice)
        );
        let dur = Dur::parse("1d").expect("valid");
        assert_eq!(
            r.set_expiry("ghost", dur, T0).map(|_| ()),
            Err(DeviceError::NoSuchDevice)
        );
        assert_eq!(r.touch("ghost", T0), Err(DeviceError::NoSuchDevice));
        assert_eq!(r.touch("bad label!", T0), Err(DeviceError::NoSuchDevice));
    }

    #[test]
    fn set_expiry_counts_from_now_and_clear_removes_it() {
        let mut r = with_device("phone", Tier::Full, None);
        let now = T0 + Duration::days(3);
        let c = r
            .set_expiry("phone", Dur::parse("12h").expect("valid"), now)
            .expect("exists");
        assert_eq!(c.old, None);
        assert_eq!(c.device.expires_at, Some(now + Duration::hours(12)));
        r.apply(c.write());
        assert_eq!(
            r.get("phone").and_then(|d| d.expires_at),
            Some(now + Duration::hours(12))
        );

        let c = r.clear_expiry("phone").expect("exists");
        assert_eq!(c.old, Some(now + Duration::hours(12)));
        assert_eq!(c.device.expires_at, None);
        r.apply(c.write());
        assert_eq!(r.get("phone").and_then(|d| d.expires_at), None);
    }

    #[test]
    fn an_expired_device_can_be_revived_by_its_owner() {
        let mut r = with_device("phone", Tier::Full, Some(T0 + Duration::hours(1)));
        let later = T0 + Duration::days(2);
        assert!(r.get("phone").expect("paired").is_expired(later));
        let c = r
            .set_expiry("phone", Dur::parse("1w").expect("valid"), later)
            .expect("exists");
        r.apply(c.write());
        assert!(!r.get("phone").expect("paired").is_expired(later));
    }

    #[test]
    fn set_tier_reports_old_and_new() {
        let mut r = with_device("phone", Tier::Read, None);
        let c = r.set_tier("phone", Tier::Full).expect("exists");
        assert_eq!(
            (c.old, c.new, c.device.tier),
            (Tier::Read, Tier::Full, Tier::Full)
        );
        r.apply(c.write());
        assert_eq!(r.get("phone").map(|d| d.tier), Some(Tier::Full));
        let c = r.set_tier("phone", Tier::Files).expect("exists");
        assert_eq!((c.old, c.new), (Tier::Full, Tier::Files));
    }

    #[test]
    fn touch_writes_at_most_once_a_minute() {
        let mut r = with_device("phone", Tier::Read, None);
        let w = r
            .touch("phone", T0)
            .expect("exists")
            .expect("never seen: write");
        r.apply(w);
        assert_eq!(r.get("phone").and_then(|d| d.last_seen), Some(T0));
        assert_eq!(r.touch("phone", T0 + Duration::seconds(59)), Ok(None));
        let w = r
            .touch("phone", T0 + Duration::seconds(60))
            .expect("exists")
            .expect("stale");
        r.apply(w);
        assert_eq!(
            r.get("phone").and_then(|d| d.last_seen),
            Some(T0 + Duration::seconds(60))
        );
        // A clock that went back rewrites the value rather than keeping a future one.
        assert!(r.touch("phone", T0).expect("exists").is_some());
    }

    #[test]
    fn expiry_boundary_is_inclusive() {
        let at = T0 + Duration::hours(1);
        let d = with_device("phone", Tier::Read, Some(at))
            .get("phone")
            .cloned()
            .expect("paired");
        assert!(!d.is_expired(at - Duration::nanoseconds(1)));
        assert!(d.is_expired(at));
        let forever = with_device("x", Tier::Read, None)
            .get("x")
            .cloned()
            .expect("paired");
        assert!(!forever.is_expired(datetime!(9999-01-01 0:00 UTC)));
    }

    #[test]
    fn devices_round_trip_through_json() {
        let mut d = with_device("phone", Tier::Files, Some(T0 + Duration::days(30)))
            .get("phone")
            .cloned()
            .expect("paired");
        d.last_seen = Some(T0 + Duration::minutes(5));
        let json = serde_json::to_value(&d).expect("serializes");
        assert_eq!(json["label"], "phone");
        assert_eq!(json["tier"], "files");
        assert_eq!(json["token_hash"], hash("phone").to_hex());
        assert_eq!(json["created_at"], "2025-06-01T12:00:00Z");
        assert_eq!(json["last_seen"], "2025-06-01T12:05:00Z");
        assert_eq!(json["expires_at"], "2025-07-01T12:00:00Z");
        let back: Device = serde_json::from_value(json).expect("parses");
        assert_eq!(back, d);

        // Missing optional fields read as null; a bad label or hash is refused.
        let minimal = serde_json::json!({
            "label": "tab", "tier": "read", "token_hash": hash("t").to_hex(),
            "created_at": "2025-06-01T12:00:00Z"
        });
        let m: Device = serde_json::from_value(minimal.clone()).expect("parses");
        assert_eq!((m.last_seen, m.expires_at), (None, None));
        let mut bad = minimal.clone();
        bad["label"] = "my tab".into();
        assert!(serde_json::from_value::<Device>(bad).is_err());
        let mut bad = minimal;
        bad["token_hash"] = "00".into();
        assert!(serde_json::from_value::<Device>(bad).is_err());
    }

    #[test]
    fn from_devices_loads_by_label() {
        let a = with_device("a", Tier::Read, None)
            .get("a")
            .cloned()
            .expect("paired");
        let b = with_device("b", Tier::Full, None)
            .get("b")
            .cloned()
            .expect("paired");
        let r = DeviceRegistry::from_devices([b.clone(), a.clone()]);
        let labels: Vec<&str> = r.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, ["a", "b"]);
    }
}
