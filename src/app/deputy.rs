//! The deputy (SPEC §13): a member that stands in for the lead while the lead cannot be reached.
//!
//! - **On the lead**, `collie crew deputy set NAME | clear` names the member (the crew actor keeps
//!   the name and audits it), and [`push::run`] sends that member a copy of the device registry —
//!   token hashes, labels, tiers, expiries, never a token — whenever the devices change and in
//!   full whenever the member comes online ([`RelayKind::Deputy`](collie_crew::relay::RelayKind));
//!   a member no longer named is told so.
//! - **On the deputy**, the copy is kept ([`held`], 0600) and the standby door ([`Door`]) decides
//!   per request: while the lead is reachable — or has been out of reach for less than
//!   [`STAND_IN_AFTER`] — a lead's device is answered 503 `standby: the lead is up` with the
//!   lead's URL; after that it is served as [`Who::Deputy`]: the same tiers and expiries, every
//!   write audited here naming the device (`"via": "deputy"`), and nothing that changes devices
//!   (503 `standby: devices are changed on the lead`). The deputy's own devices are its own, as
//!   on any member.
//!
//! - **The other members** dial the deputy's door only while they cannot reach the lead (the
//!   lead tells them where it is, signed: `actors/src/crew_link/member_deputy.rs`); only a lead's
//!   device at the standby door reaches them through it ([`App::machine_for`]).
//! - **The lines the deputy wrote standing in** are fetched by the lead when the deputy is back and
//!   kept in the lead's own log ([`lines`]; `collie audit tail --crew`).
//!
//! The phone's side (decision 0069): [`origin`] names the one cross origin each side opens — the
//! lead's page may connect to the deputy, the deputy answers the lead's origin with CORS.

pub mod held;
pub mod lines;
pub mod origin;
pub mod push;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use collie_actors::audit::AuditEventKind;
use collie_actors::crew_link::core::MemberRecord;
use collie_actors::crew_link::{CrewMsg, CrewRole, LeadReach};
use collie_actors::pairing::{AuthError, Tier, TokenHash};
use collie_crew::relay::deputy::{DeputyNotice, RegistryCopy};
use serde::Serialize;
use time::OffsetDateTime;
use tokio::sync::Notify;

use self::held::Held;
use super::{App, AppError, Caller, Who};
pub use collie_actors::crew_link::standby::{Door, STAND_IN_AFTER};

/// What a bridge knows of its crew's deputy; one per bridge, in [`super::CrewParts`].
#[derive(Debug)]
pub struct Deputy {
    /// On a member: whether the lead is reachable (written by the crew link), and whether this
    /// member is the deputy (written here).
    reach: Arc<LeadReach>,
    /// On the deputy: the lead's registry as last sent.
    held: ArcSwapOption<Held>,
    /// Where the copy is kept.
    path: PathBuf,
    /// This bridge's audit log (the deputy reads its stand-in lines from it; the lead finds in
    /// it how far it has kept them).
    audit_log: PathBuf,
    /// On the lead: what was sent to whom.
    pushed: Mutex<push::Pushed>,
    /// On the lead: wakes [`push::run`] when the deputy is named or cleared.
    nudge: Notify,
}

impl Deputy {
    /// The deputy state of a bridge whose state folder is `state_dir`, with the copy it kept (a
    /// member that was the deputy when it stopped still is).
    pub fn load(state_dir: &std::path::Path, reach: Arc<LeadReach>) -> Deputy {
        let path = state_dir.join(collie_actors::state_files::DEPUTY_REGISTRY);
        let held = Held::load(&path).map(Arc::new);
        reach.set_deputy(held.is_some());
        Deputy {
            reach,
            held: ArcSwapOption::new(held),
            path,
            audit_log: state_dir.join(collie_actors::state_files::AUDIT_LOG),
            pushed: Mutex::default(),
            nudge: Notify::new(),
        }
    }

    /// The door now, if this bridge holds a copy (is the deputy).
    fn door(&self) -> Option<(Arc<Held>, Door)> {
        let held = self.held.load_full()?;
        let (up, since) = self.reach.get();
        Some((held, Door::at(up, since, tokio::time::Instant::now())))
    }
}

/// The deputy as `collie crew status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DeputyStatus {
    /// The deputy's name (on the deputy: this machine's).
    pub name: String,
    /// On the lead: the version of its registry now; on the deputy: the version it holds.
    pub version: Option<u64>,
    /// On the lead: the version the deputy acknowledged last.
    pub acknowledged: Option<u64>,
    /// On the deputy: `standing by` or `standing in`.
    pub state: Option<String>,
    /// On the deputy: the lead's URL for phones.
    pub lead_url: Option<String>,
}

impl App {
    /// `collie crew deputy set NAME` (`Some`) or `clear` (`None`), on the lead.
    pub async fn crew_deputy(&self, name: Option<String>) -> Result<(), AppError> {
        self.crew
            .actor
            .call(|reply| CrewMsg::Deputy { name, reply })
            .await??;
        self.crew.deputy.nudge.notify_one();
        Ok(())
    }

    /// Whether this bridge is its crew's deputy (it holds the lead's registry copy): it then never
    /// pairs (SPEC §13).
    pub fn is_deputy(&self) -> bool {
        self.crew.deputy.held.load().is_some()
    }

    /// The deputy as this bridge knows it: on the lead the one it named, on the deputy itself.
    pub fn deputy_status(&self) -> Option<DeputyStatus> {
        let view = self.crew.view.load();
        if view.role == CrewRole::Lead {
            let name = view.deputy.clone()?;
            let pushed = self.crew.deputy.pushed();
            return Some(DeputyStatus {
                name,
                version: pushed.version,
                acknowledged: pushed.acknowledged,
                state: None,
                lead_url: None,
            });
        }
        let Some((held, door)) = self.crew.deputy.door() else {
            // A member told of the deputy by its lead.
            return view.deputy.clone().map(|name| DeputyStatus {
                name,
                version: None,
                acknowledged: None,
                state: None,
                lead_url: None,
            });
        };
        Some(DeputyStatus {
            name: self.machine_name(),
            version: Some(held.copy.version),
            acknowledged: None,
            state: Some(door.as_str().to_owned()),
            lead_url: Some(held.copy.lead_url.clone()),
        })
    }

    /// On a member: the lead's registry copy (`Some`: this member is the deputy) or the news that
    /// it no longer is (`None`). Kept before it is answered; becoming and ceasing to be the deputy
    /// are audited (`crew.deputy`), each new copy is not (the lead's own lines record the device
    /// changes). The door for the copy's members is opened (or closed): its port is the answer.
    pub async fn take_deputy_copy(
        &self,
        caller: &Caller,
        copy: Option<RegistryCopy>,
    ) -> Result<Option<u16>, AppError> {
        if !matches!(caller.who(), Who::Relay { deputy: None, .. }) {
            return Err(AppError::BadRequest("not from a lead".into()));
        }
        let deputy = &self.crew.deputy;
        let was = deputy.held.load().is_some();
        let held = copy
            .map(Held::of)
            .transpose()
            .map_err(|e| AppError::BadRequest(e.to_string()))?;
        if was != held.is_some() {
            let change = if held.is_some() { "named" } else { "cleared" };
            let rec = caller
                .record(self, AuditEventKind::CrewDeputy)
                .with_detail("member", self.machine_name())
                .with_detail("change", change);
            self.audit(rec).await?;
        }
        match &held {
            Some(h) => Held::save(&deputy.path, &h.copy),
            None => match std::fs::remove_file(&deputy.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
        .map_err(|e| AppError::backend("keeping the deputy's registry copy", e))?;
        let roster = held.as_ref().map(|h| {
            h.copy
                .members
                .iter()
                .map(|m| MemberRecord {
                    name: m.name.clone(),
                    pin: m.pin,
                })
                .collect()
        });
        deputy.reach.set_deputy(held.is_some());
        deputy.held.store(held.map(Arc::new));
        let port = self
            .crew
            .actor
            .call(|reply| CrewMsg::Door { roster, reply })
            .await??;
        Ok(port)
    }

    /// On a member: the lead's notice of who the deputy is and where its door listens (`None`:
    /// there is none), checked against the lead's pin and kept by the crew link.
    pub async fn take_deputy_notice(
        &self,
        caller: &Caller,
        notice: Option<DeputyNotice>,
    ) -> Result<(), AppError> {
        if !matches!(caller.who(), Who::Relay { deputy: None, .. }) {
            return Err(AppError::BadRequest("not from a lead".into()));
        }
        Ok(self
            .crew
            .actor
            .call(|reply| CrewMsg::Notice { notice, reply })
            .await??)
    }

    /// On the deputy: the lines it wrote standing in after `after`, for its lead (see
    /// [`lines::stand_in_lines`]).
    pub async fn deputy_lines(
        &self,
        caller: &Caller,
        after: u64,
    ) -> Result<(Vec<String>, u64), AppError> {
        if !matches!(caller.who(), Who::Relay { deputy: None, .. }) {
            return Err(AppError::BadRequest("not from a lead".into()));
        }
        let path = self.crew.deputy.audit_log.clone();
        tokio::task::spawn_blocking(move || lines::stand_in_lines(&path, after))
            .await
            .map_err(|e| AppError::backend("reading the stand-in lines", e))?
            .map_err(|e| AppError::backend("reading the stand-in lines", e))
    }

    /// On the lead: fetches the lines `deputy` wrote standing in that this lead does not keep
    /// yet, and keeps each as a `deputy.line` line of its own log (in the deputy's order).
    pub(super) async fn fetch_deputy_lines(
        &self,
        deputy: &str,
        client: &collie_actors::crew_link::MemberRelay,
    ) -> Result<usize, String> {
        let path = self.crew.deputy.audit_log.clone();
        let name = deputy.to_owned();
        let mut after = tokio::task::spawn_blocking(move || lines::kept_up_to(&path, &name))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let mut kept = 0;
        loop {
            let kind = collie_crew::relay::RelayKind::DeputyLines { after };
            let answer = push::call(client, kind).await?;
            let collie_crew::relay::RelayOk::DeputyLines { lines, scanned } = answer else {
                return Err(format!("{deputy} answered no lines"));
            };
            for line in &lines {
                let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let seq = value["seq"].as_u64().unwrap_or(0);
                let rec = collie_actors::audit::AuditRecord::new(
                    AuditEventKind::DeputyLine,
                    self.machine_name(),
                )
                .with_detail("deputy", deputy.to_owned())
                .with_detail("seq", seq)
                .with_detail("line", value);
                self.audit(rec).await.map_err(|e| e.to_string())?;
                kept += 1;
            }
            if scanned <= after {
                return Ok(kept);
            }
            after = scanned;
        }
    }

    /// The caller a token the own registry does not know names at the standby door: `None` when
    /// this bridge is no deputy or the copy does not know it either; otherwise the lead's device
    /// while standing in, or why not.
    pub(super) fn deputy_caller(&self, token: &TokenHash) -> Option<Result<Caller, AppError>> {
        let (held, door) = self.crew.deputy.door()?;
        let now = OffsetDateTime::now_utc();
        let device = match held.policy.authorize_hash(token, Tier::Read, now) {
            Err(AuthError::NotPaired | AuthError::Unavailable) => return None,
            Err(_) => return Some(Err(AppError::Expired)),
            Ok(device) => device,
        };
        if door == Door::Standby {
            return Some(Err(AppError::Standby(held.copy.lead_url.clone())));
        }
        Some(Ok(Caller::new(Who::Deputy {
            lead: held.copy.lead.clone(),
            label: device.label.as_str().to_owned(),
            tier: device.tier,
            id: token.device_id(),
            token: *token,
        })))
    }

    /// Whether a lead's device served at the standby door still may do what needs `required`:
    /// by the copy, and only while the deputy stands in.
    pub(super) fn deputy_allows(&self, token: &TokenHash, required: Tier) -> Result<(), AppError> {
        let Some((held, door)) = self.crew.deputy.door() else {
            return Err(AppError::NotPaired);
        };
        if door == Door::Standby {
            return Err(AppError::Standby(held.copy.lead_url.clone()));
        }
        held.policy
            .authorize_hash(token, required, OffsetDateTime::now_utc())
            .map(|_| ())
            .map_err(|e| match e {
                AuthError::Expired => AppError::Expired,
                AuthError::InsufficientTier => AppError::InsufficientTier,
                _ => AppError::NotPaired,
            })
    }

    /// When a lead's device served at the standby door expires, by the copy.
    pub(super) fn deputy_expiry(&self, token: &TokenHash) -> Option<OffsetDateTime> {
        let held = self.crew.deputy.held.load_full()?;
        held.policy
            .authorize_hash(token, Tier::Read, OffsetDateTime::UNIX_EPOCH)
            .ok()
            .and_then(|d| d.expires_at)
    }
}
