//! The lead's devices as its deputy's registry copy carries them (SPEC §13): each device's label,
//! tier name, token hash and expiry, sorted by label — never a token. One function, which the
//! bridge's push and the crew simulations both make their copies with.

use collie_crew::relay::deputy::CopiedDevice;
use time::OffsetDateTime;

use crate::pairing::{PolicySnapshot, Tier};

/// Every device of `snapshot` (expired ones included: the deputy refuses them as `device
/// expired`), sorted by label so two copies of the same devices compare equal.
pub fn copied_devices(snapshot: &PolicySnapshot) -> Vec<CopiedDevice> {
    let mut devices: Vec<CopiedDevice> = snapshot
        .holding(Tier::Read, OffsetDateTime::UNIX_EPOCH)
        .into_iter()
        .map(|(hash, d)| CopiedDevice {
            label: d.label.as_str().to_owned(),
            tier: d.tier.as_str().to_owned(),
            token_hash: *hash.as_bytes(),
            expires_at: d.expires_at.map(OffsetDateTime::unix_timestamp),
        })
        .collect();
    devices.sort_by(|a, b| a.label.cmp(&b.label));
    devices
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairing::{Device, Label, TokenHash};

    #[test]
    fn every_device_is_copied_by_hash_in_label_order_expired_ones_too() {
        let device = |label: &str, byte: u8, expires_at| Device {
            label: Label::parse(label).expect("label"),
            tier: Tier::Files,
            token_hash: TokenHash::from_bytes([byte; 32]),
            created_at: OffsetDateTime::UNIX_EPOCH,
            last_seen: None,
            expires_at,
            paired_by: None,
        };
        let past = Some(OffsetDateTime::UNIX_EPOCH + time::Duration::days(1));
        let devices = [device("tablet", 2, past), device("phone", 1, None)];
        let copied = copied_devices(&PolicySnapshot::build(3, devices.iter()));
        let labels: Vec<&str> = copied.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels, ["phone", "tablet"]);
        assert_eq!(copied[0].token_hash, [1; 32]);
        assert_eq!(copied[1].expires_at, Some(86_400));
        assert_eq!(copied[1].tier, "files");
    }
}
