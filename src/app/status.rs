//! What the bridge says about itself: `/api/health` (SPEC §4.7), the crew's machines, the phone's
//! read-only settings view, and the CLI's status for `collie doctor`.

use std::sync::atomic::Ordering;

use collie_actors::crew_link::CrewRole;
use serde::{Deserialize, Serialize};

use super::deputy::Door;
use super::App;
use crate::app::counters::Totals;

/// `GET /api/health`: names no pane, text or person.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    /// The build.
    pub build: &'static str,
    /// The version.
    pub version: &'static str,
    /// `solo`, `lead` or `member`.
    pub crew_mode: CrewRole,
    /// Reads, writes and denials of the last seven days.
    pub counts_7d: Totals,
    /// Recorded breaks in the audit chain nobody acknowledged (`collie audit verify`).
    pub audit_breaks: u64,
}

/// One machine of `GET /api/machines`.
#[derive(Debug, Clone, Serialize)]
pub struct MachineEntry {
    /// Its name.
    pub name: String,
    /// `lead`, `member` or `solo`.
    pub role: CrewRole,
    /// Whether it is reachable now.
    pub online: bool,
    /// Its version, when known.
    pub version: Option<String>,
}

/// `GET /api/machines`.
#[derive(Debug, Clone, Serialize)]
pub struct Machines {
    /// This machine first, then the crew's members.
    pub machines: Vec<MachineEntry>,
    /// The crew's deputy as the phone needs it (SPEC §13): on the lead, where to turn when the
    /// lead does not answer; on the deputy, whether it stands in now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deputy: Option<DeputyEntry>,
}

/// The deputy in `GET /api/machines`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeputyEntry {
    /// Its crew name.
    pub name: String,
    /// The URL phones open on it (on the lead, once the deputy said it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// On the deputy: whether it stands in for the lead now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standing_in: Option<bool>,
}

/// `GET /api/settings`: what the phone shows read-only.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsView {
    /// This machine's name.
    pub machine: String,
    /// Whether masking is on.
    pub masking: bool,
    /// `preview` or `none`.
    pub audit_content: String,
    /// Whether this machine's panes accept walky messages.
    pub walky: bool,
    /// The tiers a device can hold.
    pub tiers: [&'static str; 3],
    /// Whether this machine records sent lines (`COLLIE_SENT`; SPEC §11).
    pub sent: bool,
    /// Whether a `full` device may run one-shot commands here (`[phone] run`; SPEC §11).
    pub run: bool,
    /// Whether a transcriber is configured here: the phone shows its microphone (SPEC §16).
    pub speech: bool,
    /// The update check (SPEC §17).
    pub update: UpdateView,
    /// This bridge's version, for the phone's Settings and its problem reports.
    pub version: &'static str,
    /// `solo`, `lead` or `member`, for a problem report.
    pub crew_mode: CrewRole,
    /// The project's new-issue form, where "Report a problem" leads (the phone's own browser
    /// opens it; the bridge never calls it).
    pub new_issue: &'static str,
}

/// The update check as the phone's Settings shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UpdateView {
    /// `on` or `off` (`COLLIE_UPDATE_CHECK`).
    pub check: &'static str,
    /// The latest release's tag, once a check answered.
    pub latest: Option<String>,
    /// Whether it is newer than this bridge.
    pub newer: bool,
    /// When the last check ran.
    pub checked_at: Option<String>,
}

/// The control socket's status, for `collie doctor`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BridgeStatus {
    /// This machine's name.
    pub machine: String,
    /// The bridge's version.
    pub version: String,
    /// Paired devices (`None` while the device store cannot be read).
    pub devices: Option<usize>,
    /// Whether masking is on.
    pub masking: bool,
    /// `preview` or `none`.
    pub audit_content: String,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The project's new-issue form, from `repository` in Cargo.toml.
const NEW_ISSUE: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/issues/new");

impl App {
    /// `/api/health`.
    pub fn health(&self) -> Health {
        Health {
            build: option_env!("COLLIE_BUILD").unwrap_or("dev"),
            version: VERSION,
            crew_mode: self.crew.view.load().role,
            counts_7d: self.core.counters.totals(),
            audit_breaks: self.core.open_audit_breaks.load(Ordering::Relaxed),
        }
    }

    /// This machine and its crew's members, with their online state (for a lead's device at a
    /// deputy's standby door, the members at the deputy's door), and the deputy.
    pub fn machines_for(&self, caller: &super::Caller) -> Machines {
        let mut all = self.machines();
        if matches!(caller.who(), super::Who::Deputy { .. }) {
            let door = self.crew.door_relays.load();
            all.machines.truncate(1);
            all.machines.extend(door.keys().map(|name| MachineEntry {
                name: name.clone(),
                role: CrewRole::Member,
                online: true,
                version: None,
            }));
        }
        all.deputy = self.deputy_status().map(|d| DeputyEntry {
            url: if d.state.is_some() {
                Some(self.public_url())
            } else {
                self.crew.deputy.pushed().url
            },
            standing_in: d.state.as_deref().map(|s| s == Door::StandingIn.as_str()),
            name: d.name,
        });
        all
    }

    /// This machine and its crew's members, with their online state.
    pub fn machines(&self) -> Machines {
        let view = self.crew.view.load();
        let mut machines = vec![MachineEntry {
            name: self.core.machine.get(),
            role: view.role,
            online: true,
            version: Some(VERSION.to_owned()),
        }];
        machines.extend(view.members.iter().map(|m| MachineEntry {
            name: m.name.clone(),
            role: CrewRole::Member,
            online: m.online,
            version: m.version.clone(),
        }));
        Machines {
            machines,
            deputy: None,
        }
    }

    /// The phone's read-only settings view.
    pub fn settings(&self) -> SettingsView {
        SettingsView {
            machine: self.core.machine.get(),
            masking: self.core.masker.is_enabled(),
            audit_content: self.core.audit_content.as_str().to_owned(),
            walky: self.crew.walky_on,
            tiers: ["read", "files", "full"],
            sent: self.panes.sent.keeps(),
            run: self.panes.sent.runs(),
            speech: self.speech_available(),
            update: self.update_view(),
            version: VERSION,
            crew_mode: self.crew.view.load().role,
            new_issue: NEW_ISSUE,
        }
    }

    /// The update check's state for the phone.
    fn update_view(&self) -> UpdateView {
        let updates = &self.core.updates;
        let last = updates.last();
        UpdateView {
            check: if updates.on() { "on" } else { "off" },
            latest: last.as_ref().and_then(|c| c.latest.clone()),
            newer: last.as_ref().is_some_and(|c| c.newer),
            checked_at: last.as_ref().map(|c| c.checked_at.clone()),
        }
    }

    /// The control socket's status.
    pub async fn status(&self) -> BridgeStatus {
        BridgeStatus {
            machine: self.core.machine.get(),
            version: VERSION.to_owned(),
            devices: self.device_count().await,
            masking: self.core.masker.is_enabled(),
            audit_content: self.core.audit_content.as_str().to_owned(),
        }
    }
}
