//! Notices: every new pairing is announced on the other paired devices (SPEC §4.6), as Signal
//! announces a linked device — a notice on the phone's Cards view for a day, and a push when the
//! device is paired. A device that an agent or anyone else paired behind the person's back is then
//! seen by the person on the phone they already hold, with the revoke button beside it.
//!
//! Notices are derived, not kept: they are the devices paired in the last [`NOTICE_FOR`], read
//! from the device registry, so nothing can be lost or left behind (a revoked device's notice goes
//! with it).

use collie_actors::pairing::{Device, PairingMsg, Tier};
use collie_actors::push::actor::PushMsg;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use super::ops::Op;
use super::{App, AppError, Caller};
use collie_actors::rfc3339;

/// How long a pairing is announced on the other devices.
pub const NOTICE_FOR: Duration = Duration::hours(24);

/// One notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    /// What happened: `paired`.
    pub kind: String,
    /// The new device's label.
    pub label: String,
    /// Its tier.
    pub tier: Tier,
    /// When it was paired (RFC 3339).
    pub at: Option<String>,
}

/// `GET /api/notices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notices {
    /// Newest first.
    pub notices: Vec<Notice>,
}

/// The notices `asking` (a device's label, if any) is shown at `now`: every device paired in the
/// last [`NOTICE_FOR`] but the asking one, newest first.
pub fn notices_for(devices: &[Device], asking: Option<&str>, now: OffsetDateTime) -> Vec<Notice> {
    let mut fresh: Vec<&Device> = devices
        .iter()
        .filter(|d| Some(d.label.as_str()) != asking)
        .filter(|d| now - d.created_at < NOTICE_FOR && d.created_at <= now)
        .collect();
    fresh.sort_by_key(|d| std::cmp::Reverse(d.created_at));
    fresh
        .into_iter()
        .map(|d| Notice {
            kind: "paired".to_owned(),
            label: d.label.as_str().to_owned(),
            tier: d.tier,
            at: rfc3339::format(d.created_at),
        })
        .collect()
}

impl App {
    /// The notices for `caller`.
    pub async fn notices(&self, caller: &Caller) -> Result<Notices, AppError> {
        self.authorize(caller, Op::Notices)?;
        let devices = self.door.pairing.call(PairingMsg::List).await??;
        Ok(Notices {
            notices: notices_for(&devices, caller.device_label(), OffsetDateTime::now_utc()),
        })
    }

    /// Tells the other devices that `label` was just paired (a push; the notice itself is derived).
    pub(super) fn announce_pairing(&self, label: &str) {
        let _ = self.agents.push.cast(PushMsg::Paired(label.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use collie_actors::pairing::{Label, TokenHash};

    fn device(label: &str, hours_ago: i64, now: OffsetDateTime) -> Device {
        Device {
            label: Label::parse(label).expect("label"),
            tier: Tier::Full,
            token_hash: TokenHash::from_presented(label),
            created_at: now - Duration::hours(hours_ago),
            last_seen: None,
            expires_at: None,
            paired_by: None,
        }
    }

    #[test]
    fn a_day_of_pairings_but_one_s_own_newest_first() {
        let now = OffsetDateTime::now_utc();
        let devices = [
            device("old-phone", 30, now),
            device("tablet", 5, now),
            device("me", 1, now),
            device("laptop", 2, now),
        ];
        let shown: Vec<String> = notices_for(&devices, Some("me"), now)
            .into_iter()
            .map(|n| n.label)
            .collect();
        assert_eq!(shown, ["laptop", "tablet"]);
        // The CLI (no device) sees every fresh one.
        assert_eq!(notices_for(&devices, None, now).len(), 3);
    }
}
