//! The registry copy a deputy holds (SPEC §13): checked when it arrives, turned into the policy
//! snapshot the standby door authorizes with, and kept in `<state>/deputy-registry.json` (0600,
//! replaced whole) so a deputy restarted while its lead is away can still stand in.

use std::path::Path;

use collie_actors::pairing::{Device, Label, PolicySnapshot, Tier, TokenHash};
use collie_crew::relay::deputy::RegistryCopy;
use time::OffsetDateTime;

/// The largest file read back (a full copy of [`collie_crew::relay::deputy::MAX_COPIED_DEVICES`]
/// devices is well below it).
const MAX_FILE: u64 = 4 << 20;

/// Why a copy is refused.
#[derive(Debug, thiserror::Error)]
pub enum HeldError {
    /// More devices than a copy may carry.
    #[error("the registry copy holds too many devices")]
    TooMany,
    /// A device of the copy does not read.
    #[error("device {label:?} in the registry copy: {why}")]
    BadDevice {
        /// The label as sent.
        label: String,
        /// What is wrong.
        why: String,
    },
}

/// A copy and the snapshot built from it.
#[derive(Debug)]
pub struct Held {
    /// The copy as the lead sent it.
    pub copy: RegistryCopy,
    /// Its devices as a policy snapshot (version: the copy's).
    pub policy: PolicySnapshot,
}

impl Held {
    /// Checks `copy` — every label and tier must read, an expiry must be a time — and builds its
    /// snapshot. A copy with one bad device is refused whole: a partial copy would drop a device
    /// silently.
    pub fn of(copy: RegistryCopy) -> Result<Held, HeldError> {
        if !copy.fits() {
            return Err(HeldError::TooMany);
        }
        let mut devices = Vec::with_capacity(copy.devices.len());
        for d in &copy.devices {
            let bad = |why: String| HeldError::BadDevice {
                label: d.label.chars().take(64).collect(),
                why,
            };
            let label = Label::parse(&d.label).map_err(|e| bad(e.to_string()))?;
            let tier = Tier::parse(&d.tier).map_err(|e| bad(e.to_string()))?;
            let expires_at = d
                .expires_at
                .map(OffsetDateTime::from_unix_timestamp)
                .transpose()
                .map_err(|e| bad(e.to_string()))?;
            devices.push(Device {
                label,
                tier,
                token_hash: TokenHash::from_bytes(d.token_hash),
                created_at: OffsetDateTime::UNIX_EPOCH,
                last_seen: None,
                expires_at,
                paired_by: None,
            });
        }
        let policy = PolicySnapshot::build(copy.version, devices.iter());
        Ok(Held { copy, policy })
    }

    /// The copy kept in `path`, if there is one that reads and passes [`Held::of`]; anything else
    /// is said in the log and counts as none (the lead sends a new copy when the link is back).
    pub fn load(path: &Path) -> Option<Held> {
        let read = || -> Result<Option<Held>, String> {
            let meta = match std::fs::metadata(path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e.to_string()),
            };
            if meta.len() > MAX_FILE {
                return Err(format!("larger than {MAX_FILE} bytes"));
            }
            let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
            let copy: RegistryCopy = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            Held::of(copy).map(Some).map_err(|e| e.to_string())
        };
        read().unwrap_or_else(|why| {
            tracing::error!(file = %path.display(), %why, "the deputy's registry copy is unreadable; ignored");
            None
        })
    }

    /// Keeps `copy` in `path` (0600, replaced whole).
    pub fn save(path: &Path, copy: &RegistryCopy) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(copy).map_err(std::io::Error::other)?;
        collie_actors::private_file::write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use collie_crew::relay::deputy::CopiedDevice;

    use super::*;

    fn copy(devices: Vec<CopiedDevice>) -> RegistryCopy {
        RegistryCopy {
            version: 7,
            lead: "lead".into(),
            lead_url: "http://lead".into(),
            devices,
            members: Vec::new(),
        }
    }

    fn device(label: &str, tier: &str, expires_at: Option<i64>) -> CopiedDevice {
        CopiedDevice {
            label: label.into(),
            tier: tier.into(),
            token_hash: [label.len() as u8; 32],
            expires_at,
        }
    }

    #[test]
    fn a_copy_authorizes_by_hash_tier_and_expiry() {
        let held = Held::of(copy(vec![
            device("phone", "full", None),
            device("old-tablet", "read", Some(0)),
        ]))
        .expect("a good copy");
        let now = OffsetDateTime::now_utc();
        let phone = TokenHash::from_bytes([5; 32]);
        let ok = held.policy.authorize_hash(&phone, Tier::Full, now);
        assert_eq!(
            ok.map(|d| d.label.as_str().to_owned()).ok(),
            Some("phone".into())
        );
        let tablet = TokenHash::from_bytes([10; 32]);
        assert!(matches!(
            held.policy.authorize_hash(&tablet, Tier::Read, now),
            Err(collie_actors::pairing::AuthError::Expired)
        ));
        let stranger = TokenHash::from_bytes([1; 32]);
        assert!(held
            .policy
            .authorize_hash(&stranger, Tier::Read, now)
            .is_err());
    }

    #[test]
    fn one_bad_device_refuses_the_whole_copy() {
        for bad in [
            device("phone", "admin", None),
            device("", "read", None),
            device("phone", "read", Some(i64::MAX)),
        ] {
            let refused = Held::of(copy(vec![device("ok", "read", None), bad]));
            assert!(matches!(refused, Err(HeldError::BadDevice { .. })));
        }
    }

    #[test]
    fn a_kept_copy_reads_back_and_a_damaged_one_is_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("deputy-registry.json");
        assert!(Held::load(&path).is_none(), "no file, no copy");
        let c = copy(vec![device("phone", "files", Some(4_000_000_000))]);
        Held::save(&path, &c).expect("saved");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(Held::load(&path).map(|h| h.copy), Some(c));
        std::fs::write(&path, b"{\"version\": 1").expect("damage it");
        assert!(Held::load(&path).is_none());
    }
}
