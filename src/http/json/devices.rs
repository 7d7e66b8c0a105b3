//! Devices as the phone API answers them (`GET /api/devices`, `GET /api/notices`). A tier is the
//! text the phone reads (`read`, `files`, `full`), not the pairing actor's type.

use serde::Serialize;

use crate::app::devices::DeviceView;
use crate::app::notices::Notices as AppNotices;

/// One paired device.
#[derive(Debug, Serialize)]
pub struct Device {
    label: String,
    tier: &'static str,
    created_at: Option<String>,
    last_seen: Option<String>,
    expires_at: Option<String>,
    current: bool,
    paired_by: Option<String>,
}

impl From<DeviceView> for Device {
    fn from(d: DeviceView) -> Self {
        Device {
            label: d.label,
            tier: d.tier.as_str(),
            created_at: d.created_at,
            last_seen: d.last_seen,
            expires_at: d.expires_at,
            current: d.current,
            paired_by: d.paired_by,
        }
    }
}

/// `GET /api/notices`.
#[derive(Debug, Serialize)]
pub struct Notices {
    notices: Vec<Notice>,
}

/// One notice.
#[derive(Debug, Serialize)]
pub struct Notice {
    kind: String,
    label: String,
    tier: &'static str,
    at: Option<String>,
}

impl From<AppNotices> for Notices {
    fn from(n: AppNotices) -> Self {
        Notices {
            notices: n
                .notices
                .into_iter()
                .map(|n| Notice {
                    kind: n.kind,
                    label: n.label,
                    tier: n.tier.as_str(),
                    at: n.at,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use collie_actors::pairing::Tier;

    use super::*;
    use crate::app::notices::Notice as AppNotice;

    #[test]
    fn devices_and_notices_are_the_json_they_were() {
        for (i, tier) in [Tier::Read, Tier::Files, Tier::Full]
            .into_iter()
            .enumerate()
        {
            let some = |s: &str| (i > 0).then(|| s.to_owned());
            let d = DeviceView {
                label: "phone".into(),
                tier,
                created_at: some("2026-12-06T09:00:00Z"),
                last_seen: some("2026-12-06T09:01:00Z"),
                expires_at: some("2026-12-07T09:00:00Z"),
                current: i == 1,
                paired_by: some("alice@example.com"),
            };
            let before = serde_json::to_string(&d).unwrap();
            assert_eq!(serde_json::to_string(&Device::from(d)).unwrap(), before);
            let n = AppNotices {
                notices: vec![AppNotice {
                    kind: "paired".into(),
                    label: "tablet".into(),
                    tier,
                    at: some("2026-12-06T09:00:00Z"),
                }],
            };
            let before = serde_json::to_string(&n).unwrap();
            assert_eq!(serde_json::to_string(&Notices::from(n)).unwrap(), before);
        }
    }
}
