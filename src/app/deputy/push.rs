//! On the lead: keeping the deputy and the members told (SPEC §13).
//!
//! - **The copy.** The deputy gets the device registry — and the roster of the other members,
//!   whom its door admits — whenever the devices or the members change, in full whenever it comes
//!   online (a new link), and `None` once it is no longer the deputy. Its answer names the port its
//!   door listens on.
//! - **The notice.** Every online member gets the deputy's name, pin and door address (the host the
//!   lead sees the deputy's link come from, the door's port), signed by the lead, whenever it
//!   changes and in full on each new link; `None` once there is no deputy.
//!
//! One task, one call in flight at a time, so each machine gets them in the order they were made;
//! a failed call is tried again after two seconds (`RETRY`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use collie_actors::crew_link::registry_copy::copied_devices;
use collie_actors::crew_link::{CrewMsg, MemberRelay};
use collie_crew::pin::Pin;
use collie_crew::relay::client::On;
use collie_crew::relay::deputy::{CopiedMember, DeputyNotice, RegistryCopy};
use collie_crew::relay::{RelayKind, RelayOk};
use sha2::{Digest, Sha256};

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
    /// The URL phones open on the deputy, from its last answer.
    pub url: Option<String>,
    /// The digest of the registry of `version`.
    digest: Option<[u8; 32]>,
}

impl Deputy {
    /// What the lead sent, as `collie crew status` shows it.
    pub fn pushed(&self) -> Pushed {
        self.pushed.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The version of a registry with `digest`: the same as the last one for the same registry,
    /// else one more (the first of a run is the time in milliseconds, so versions keep growing
    /// across the lead's restarts).
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

    fn acknowledge(&self, version: Option<u64>, url: Option<String>) {
        if let Ok(mut pushed) = self.pushed.lock() {
            pushed.acknowledged = version;
            pushed.url = url;
        }
    }
}

/// The registry as a copy for `deputy`, or `None` while the device store cannot be read (a copy
/// then would lock every phone out of the deputy).
fn copy_of(app: &App, deputy: &str) -> Option<RegistryCopy> {
    let policy = app.door.policy.load();
    if !policy.is_available() {
        return None;
    }
    let devices = copied_devices(&policy);
    let members: Vec<CopiedMember> = app
        .crew
        .view
        .load()
        .members
        .iter()
        .filter(|m| m.name != deputy)
        .filter_map(|m| {
            let pin = m.pin.parse::<Pin>().ok()?;
            Some(CopiedMember {
                name: m.name.clone(),
                pin,
            })
        })
        .collect();
    let lead_url = app.door.public_url.as_str().to_owned();
    let mut digest = Sha256::new();
    digest.update(serde_json::to_vec(&(&devices, &members, &lead_url)).ok()?);
    let version = app.crew.deputy.version_for(digest.finalize().into());
    Some(RegistryCopy {
        version,
        lead: app.machine_name(),
        lead_url,
        devices,
        members,
    })
}

/// The task's memory of what it sent.
#[derive(Default)]
struct Sent {
    /// The deputy, its link (a new link gets the copy again), the copy's version and the door's
    /// port it answered.
    copy: Option<(String, usize, u64, u16)>,
    /// The deputy's link whose stand-in lines were fetched.
    fetched: Option<usize>,
    /// The notice now (`None`: no deputy), and what each member's link got last.
    notice: Option<DeputyNotice>,
    noticed: BTreeMap<String, (usize, Option<DeputyNotice>)>,
}

/// The lead's pushing task, for the bridge's life (see the module docs). On a bridge that is no
/// lead it waits for a change and does nothing.
pub async fn run(app: App) {
    let mut policy = app.door.policy.watch();
    let mut relays = app.crew.relays.watch();
    let mut sent = Sent::default();
    loop {
        let retry = match step(&app, &mut sent).await {
            Ok(()) => None,
            Err(why) => {
                tracing::warn!(%why, "the deputy or a member was not told; retrying");
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

/// A link's identity: a member that reconnected has a new relay client.
fn link_of(client: &Arc<MemberRelay>) -> usize {
    Arc::as_ptr(client) as usize
}

/// One round (see the module docs).
async fn step(app: &App, sent: &mut Sent) -> Result<(), String> {
    let view = app.crew.view.load_full();
    let members = Arc::clone(&*app.crew.relays.load());
    let deputy = view.deputy.clone();
    // A member no longer the deputy forgets its copy.
    if let Some((old, ..)) = sent.copy.as_ref().filter(|c| Some(&c.0) != deputy.as_ref()) {
        if let Some(client) = members.get(old) {
            call(client, RelayKind::Deputy { copy: None }).await?;
        }
        sent.copy = None;
        app.crew.deputy.acknowledge(None, None);
    }
    match &deputy {
        None => sent.notice = None,
        Some(name) => {
            if let Some(client) = members.get(name) {
                if let Some(copy) = copy_of(app, name) {
                    let (link, version) = (link_of(client), copy.version);
                    let current = sent.copy.as_ref().filter(|c| c.1 == link && c.2 == version);
                    let port = match current {
                        Some(c) => c.3,
                        None => {
                            let kind = RelayKind::Deputy {
                                copy: Some(Box::new(copy)),
                            };
                            let RelayOk::DeputyDoor { port, url } = call(client, kind).await?
                            else {
                                return Err(format!("{name} opened no door"));
                            };
                            app.crew.deputy.acknowledge(Some(version), Some(url));
                            sent.copy = Some((name.clone(), link, version, port));
                            port
                        }
                    };
                    if sent.fetched != Some(link) {
                        // A deputy back on a new link: what it wrote standing in.
                        let kept = app.fetch_deputy_lines(name, client).await?;
                        if kept > 0 {
                            tracing::info!(deputy = %name, lines = kept, "kept the deputy's stand-in lines");
                        }
                        sent.fetched = Some(link);
                    }
                    let host = client.connection().remote_address().ip();
                    let address = std::net::SocketAddr::new(host, port).to_string();
                    if sent.notice.as_ref().is_none_or(|n| n.address != address) {
                        let signed = app
                            .crew
                            .actor
                            .call(|reply| CrewMsg::SignNotice { address, reply })
                            .await
                            .map_err(|e| e.to_string())?
                            .map_err(|e| e.to_string())?;
                        sent.notice = Some(signed);
                    }
                }
            }
            // An offline deputy: the members keep the notice they have.
        }
    }
    // Every online member gets the notice now, once per link.
    sent.noticed.retain(|name, _| members.contains_key(name));
    for (name, client) in members.iter() {
        let link = link_of(client);
        if sent
            .noticed
            .get(name)
            .is_some_and(|(l, n)| *l == link && *n == sent.notice)
        {
            continue;
        }
        let kind = RelayKind::DeputyNotice {
            notice: sent.notice.clone().map(Box::new),
        };
        if client.allows(&kind).is_err() {
            continue;
        }
        call(client, kind).await?;
        sent.noticed
            .insert(name.clone(), (link, sent.notice.clone()));
    }
    Ok(())
}

/// One call from the lead to a member, as the lead itself (not for a phone).
pub(super) async fn call(client: &MemberRelay, kind: RelayKind) -> Result<RelayOk, String> {
    let request_id = crate::app::request_id();
    let on = On {
        device: SENDER,
        request_id: &request_id,
        device_id: None,
    };
    client.call(on, kind).await.map_err(|e| e.to_string())
}
