//! On the lead: sending the deputy its copy of the device registry (SPEC §13) — whenever the
//! devices change, in full whenever the deputy comes online (a new link), and `None` to a member
//! that is no longer the deputy. One task, one copy in flight at a time, so copies arrive in the
//! order they were made.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use collie_actors::pairing::Tier;
use collie_crew::relay::client::On;
use collie_crew::relay::deputy::{CopiedDevice, RegistryCopy};
use collie_crew::relay::RelayKind;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::Deputy;
use crate::app::App;

/// A failed push is tried again after this long (the deputy may be busy or just reconnecting).
const RETRY: Duration = Duration::from_secs(2);

/// The device name a member's audit line gives a copy's sender (the lead itself, not a phone).
const SENDER: &str = "lead";

/// What the lead sent, for `collie crew status`.
#[derive(Debug, Default, Clone)]
pub struct Pushed {
    /// The version of the registry now (`None` before the first copy).
    pub version: Option<u64>,
    /// The version the deputy acknowledged last.
    pub acknowledged: Option<u64>,
    /// The digest of the devices of `version`.
    digest: Option<[u8; 32]>,
}

impl Deputy {
    /// What the lead sent, as `collie crew status` shows it.
    pub fn pushed(&self) -> Pushed {
        self.pushed.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The version of a registry whose devices have `digest`: the same as the last one for the
    /// same devices, else one more (the first of a run is the time in milliseconds, so versions
    /// keep growing across the lead's restarts).
    fn version_for(&self, digest: [u8; 32]) -> u64 {
        let Ok(mut pushed) = self.pushed.lock() else {
            return 0;
        };
        let version = match (pushed.version, pushed.digest) {
            (Some(v), Some(d)) if d == digest => v,
            (Some(v), _) => v.saturating_add(1),
            (None, _) => SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(1, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        };
        pushed.version = Some(version);
        pushed.digest = Some(digest);
        version
    }

    fn acknowledge(&self, version: Option<u64>) {
        if let Ok(mut pushed) = self.pushed.lock() {
            pushed.acknowledged = version;
        }
    }
}

/// The registry as a copy, or `None` while the device store cannot be read (a copy then would
/// lock every phone out of the deputy).
fn copy_of(app: &App) -> Option<RegistryCopy> {
    let policy = app.door.policy.load();
    if !policy.is_available() {
        return None;
    }
    let mut devices: Vec<CopiedDevice> = policy
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
    let lead_url = app.door.public_url.as_str().to_owned();
    let mut digest = Sha256::new();
    digest.update(serde_json::to_vec(&devices).ok()?);
    digest.update(lead_url.as_bytes());
    let version = app.crew.deputy.version_for(digest.finalize().into());
    Some(RegistryCopy {
        version,
        lead: app.machine_name(),
        lead_url,
        devices,
    })
}

/// Who was last sent what: the member, its link (a new link gets the copy again), the version.
struct Sent {
    member: String,
    link: usize,
    version: Option<u64>,
}

/// The lead's pushing task, for the bridge's life (see the module docs). On a bridge that is no
/// lead it waits for a change and does nothing.
pub async fn run(app: App) {
    let mut policy = app.door.policy.watch();
    let mut relays = app.crew.relays.watch();
    let mut sent: Option<Sent> = None;
    loop {
        let retry = match step(&app, &mut sent).await {
            Ok(()) => None,
            Err(why) => {
                tracing::warn!(%why, "the deputy's registry copy was not delivered; retrying");
                Some(RETRY)
            }
        };
        tokio::select! {
            _ = policy.changed() => {}
            _ = relays.changed() => {}
            () = app.crew.deputy.nudge.notified() => {}
            () = tokio::time::sleep(retry.unwrap_or(Duration::MAX)), if retry.is_some() => {}
        }
    }
}

/// One round: tell a member that is no longer the deputy, then send the deputy what it lacks.
async fn step(app: &App, sent: &mut Option<Sent>) -> Result<(), String> {
    let deputy = app.crew.view.load().deputy.clone();
    let members = Arc::clone(&*app.crew.relays.load());
    if let Some(old) = sent.as_ref().filter(|s| Some(&s.member) != deputy.as_ref()) {
        if let Some(client) = members.get(&old.member) {
            call(client, None).await?;
        }
        *sent = None;
        app.crew.deputy.acknowledge(None);
    }
    let Some(name) = deputy else {
        return Ok(());
    };
    let Some(client) = members.get(&name) else {
        return Ok(()); // offline: it gets the copy in full when it is back
    };
    let Some(copy) = copy_of(app) else {
        return Ok(());
    };
    let link = Arc::as_ptr(client) as usize;
    let version = Some(copy.version);
    if sent
        .as_ref()
        .is_some_and(|s| s.link == link && s.version == version)
    {
        return Ok(());
    }
    call(client, Some(copy)).await?;
    app.crew.deputy.acknowledge(version);
    *sent = Some(Sent {
        member: name,
        link,
        version,
    });
    Ok(())
}

async fn call(
    client: &collie_actors::crew_link::MemberRelay,
    copy: Option<RegistryCopy>,
) -> Result<(), String> {
    let request_id = crate::app::request_id();
    let on = On {
        device: SENDER,
        request_id: &request_id,
        device_id: None,
    };
    let kind = RelayKind::Deputy {
        copy: copy.map(Box::new),
    };
    client
        .call(on, kind)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
