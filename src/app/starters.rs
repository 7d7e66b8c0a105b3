//! The applied starters as the phone sees them (SPEC §12): listed per machine of the crew for the
//! New page, and started by name — a starter that skips the agent's permission prompts ("No
//! prompts") only once the device asking has confirmed it, one time, for that machine's starter.
//!
//! A listing carries a starter's name, its agent and the badge, never its path, hash or arguments
//! (those stay with the machine that pinned them). The confirmations are kept per device in
//! `<state>/no-prompts.json` (0600), keyed by the device's label *and* its token's hash: a device
//! re-paired under a revoked label confirms again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use collie_crew::relay::{RelayKind, RelayOk, StarterInfo};
use serde::{Deserialize, Serialize};

use super::error::AppError;
use super::machine::Machine;
use super::new_pane::Launch;
use super::{App, Caller};
use collie_actors::panes::actor::PaneInfo;

/// The confirmations' file name in the state dir.
pub const NO_PROMPTS_FILE: &str = collie_actors::state_files::NO_PROMPTS;

/// The most confirmations kept (devices × machines × starters); past it the oldest device's go.
const MAX_CONFIRMATIONS: usize = 4096;

/// One starter on the New page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterView {
    /// Its name (what a create names).
    pub name: String,
    /// `claude`, `codex`, or none.
    pub agent: Option<String>,
    /// It skips the agent's permission prompts.
    pub no_prompts: bool,
    /// Whether this device already confirmed it (always true when `no_prompts` is false).
    pub confirmed: bool,
}

/// `GET /api/starters/{machine}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterList {
    /// The machine they run on.
    pub machine: String,
    /// Its applied starters, in its configuration's order.
    pub starters: Vec<StarterView>,
    /// The rows phones added for it (decision 0041), oldest first; none with `[phone] adds = false`.
    pub rows: Vec<super::rows::RowView>,
    /// Whether rows may be added, and from which templates.
    #[serde(flatten)]
    pub offer: super::rows::RowsOffer,
}

/// The devices' "No prompts" confirmations: owner → `machine/starter` keys.
#[derive(Debug, Default)]
pub struct NoPrompts {
    path: PathBuf,
    confirmed: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoPromptsFile {
    confirmed: BTreeMap<String, BTreeSet<String>>,
}

impl NoPrompts {
    /// The confirmations kept in `<state>/no-prompts.json` (none when the file is missing or
    /// unreadable: a device is asked again rather than trusted on a broken file).
    pub fn load(state_dir: &Path) -> NoPrompts {
        let path = state_dir.join(NO_PROMPTS_FILE);
        let confirmed = std::fs::read(&path)
            .ok()
            .filter(|b| b.len() <= 4 * 1024 * 1024)
            .and_then(|b| serde_json::from_slice::<NoPromptsFile>(&b).ok())
            .map(|f| f.confirmed)
            .unwrap_or_default();
        NoPrompts {
            path,
            confirmed: Mutex::new(confirmed),
        }
    }

    pub(super) fn has(&self, owner: &str, key: &str) -> bool {
        self.confirmed
            .lock()
            .map(|c| c.get(owner).is_some_and(|s| s.contains(key)))
            .unwrap_or(false)
    }

    /// Records `owner`'s confirmation of `key`, durably, before it is relied on.
    pub(super) fn confirm(&self, owner: &str, key: &str) -> Result<(), AppError> {
        let mut all = self.confirmed.lock().map_err(|_| AppError::Internal)?;
        let mut next = all.clone();
        next.entry(owner.to_owned())
            .or_default()
            .insert(key.to_owned());
        while next.values().map(BTreeSet::len).sum::<usize>() > MAX_CONFIRMATIONS {
            let Some(first) = next.keys().next().cloned() else {
                break;
            };
            next.remove(&first);
        }
        let bytes = serde_json::to_vec(&NoPromptsFile {
            confirmed: next.clone(),
        })
        .map_err(|e| AppError::backend("no-prompts confirmations", e))?;
        collie_actors::private_file::write_atomic(&self.path, &bytes)
            .map_err(|e| AppError::backend("no-prompts confirmations", e))?;
        *all = next;
        Ok(())
    }
}

impl App {
    /// This machine's applied starters, as a listing shows them.
    pub fn local_starters(&self) -> Vec<StarterInfo> {
        self.panes
            .starters
            .iter()
            .map(|s| StarterInfo {
                name: s.name.clone(),
                agent: s.agent.map(|a| a.as_str().to_owned()),
                no_prompts: s.no_prompts,
            })
            .collect()
    }

    /// The starters of `machine`, with this device's confirmations.
    pub async fn starters(&self, caller: &Caller, machine: &str) -> Result<StarterList, AppError> {
        let resolved = self.machine(machine)?;
        let (name, infos) = match &resolved {
            Machine::Local => (self.machine_name(), self.local_starters()),
            Machine::Member(member) => {
                member.allows(&RelayKind::Starters)?;
                match member.call(caller.on(), RelayKind::Starters).await? {
                    RelayOk::Starters(list) => (member.name().to_owned(), list),
                    _ => return Err(AppError::MemberUnreadable),
                }
            }
        };
        let (rows, offer) = self.rows_of(caller, &resolved, &name, &infos).await?;
        let owner = caller.confirmer();
        let starters = infos
            .into_iter()
            .map(|s| {
                let key = format!("{name}/{}", s.name);
                let confirmed = !s.no_prompts
                    || owner
                        .as_deref()
                        .is_none_or(|o| self.panes.no_prompts.has(o, &key));
                StarterView {
                    name: self.core.masker.mask_string(s.name),
                    agent: s.agent.map(|a| self.core.masker.mask_string(a)),
                    no_prompts: s.no_prompts,
                    confirmed,
                }
            })
            .collect();
        Ok(StarterList {
            machine: name,
            starters,
            rows,
            offer,
        })
    }

    /// Opens a pane on `machine` running its starter `starter` (in `folder`, when one is given;
    /// see [`App::create_pane_in`]). A "No prompts" starter needs this
    /// device's confirmation: `confirm_no_prompts` gives it (kept, so it is asked once); without
    /// it and without an earlier one the answer is 409 `confirm no prompts` and nothing opens.
    pub async fn start_starter(
        &self,
        caller: &Caller,
        machine: &str,
        starter: String,
        pane_name: Option<String>,
        folder: Option<String>,
        confirm_no_prompts: bool,
    ) -> Result<PaneInfo, AppError> {
        self.confirm_starter(caller, machine, &starter, confirm_no_prompts)
            .await?;
        self.create_pane_in(caller, machine, pane_name, Launch::Starter(starter), folder)
            .await
    }

    /// Whether this device may start `machine`'s starter `starter` now: a "No prompts" one only
    /// once it confirmed it (`confirm_no_prompts` records that confirmation, durably, first);
    /// 409 `confirm no prompts` otherwise. The machine's own CLI and a relaying lead need none.
    pub async fn confirm_starter(
        &self,
        caller: &Caller,
        machine: &str,
        starter: &str,
        confirm_no_prompts: bool,
    ) -> Result<(), AppError> {
        if let Some(owner) = caller.confirmer() {
            let list = self.starters(caller, machine).await?;
            let found = list
                .starters
                .iter()
                .find(|s| s.name == starter)
                .ok_or_else(|| {
                    AppError::BadRequest("starter: no such starter on this machine".into())
                })?;
            if !found.confirmed {
                if !confirm_no_prompts {
                    return Err(AppError::ConfirmNoPrompts);
                }
                self.panes
                    .no_prompts
                    .confirm(&owner, &format!("{}/{starter}", list.machine))?;
            }
        }
        Ok(())
    }
}
