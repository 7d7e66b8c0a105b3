//! Starter rows added from the phone (SPEC §12, seed 002 "Eigene Starter"; decision 0041).
//!
//! With `[phone] adds = true` (the default) a `full` device may add a row to a machine's New page
//! made from a template — an agent that machine has an applied starter of, plus option fields — and,
//! with `free_text = true` (default off), a hand-typed line. A row never carries a path or a flag:
//! a template runs *that machine's* pinned executable of the agent (its hash checked again just
//! before the spawn) with the flags of the bridge's own table ([`Agent::option_flags`]); a line
//! runs as a one-shot command does, typed into a fresh shell that stays open.
//!
//! **Where rows live.** On the machine the phone talks to (the lead, or a solo bridge), in the
//! store's `starter_rows` tree, keyed `<owner>/<id>` (`owner`: the first 16 hex of the adding
//! device's token hash), so revoking the device removes them by prefix in the pairing actor. A row
//! whose device is no longer paired is never listed or started (checked at every read) and is
//! removed when the bridge starts ([`purge_orphans`]).
//!
//! **Policy.** The lead's `[phone] adds` / `free_text` govern adding, listing and starting; every
//! create of a row checks them again on each bridge it passes, whoever asks (`App::row_rules`,
//! run by the validation of [`NewPane`](super::new_pane::NewPane)): on the lead its own, on the
//! member that runs it the member's. With `adds = false` rows are neither listed nor started, but
//! kept.
//!
//! **Audit.** Adding and removing are `starter.added` / `starter.removed` (decision 0041: SPEC §7
//! has no name for them): the machine, the row's name, its agent or — for a line — only the first
//! word and the length. The store is written first, then the line; a line that cannot be written
//! undoes the store write and refuses the change.

mod kept;
mod row;

use std::collections::BTreeSet;

use collie_actors::audit::AuditEventKind;
use collie_actors::pairing::PairingMsg;
use collie_actors::panes::actor::PaneInfo;
use collie_actors::panes::keys::NamedKey;
use collie_actors::panes::PanesMsg;
use collie_actors::store::Table;
use collie_crew::hello::Capability;
use collie_crew::relay::RowSpec;

pub use kept::{paired_in_store, purge_orphans, shown_from_store, Rows};
pub use row::{
    validate, NewRow, RowPolicy, RowShown, RowView, RowsOffer, ADDS_OFF, FREE_TEXT_OFF, MAX_ROWS,
    MAX_ROWS_PER_DEVICE,
};

use super::machine::Machine;
use super::new_pane::Launch;
use super::{App, AppError, Caller, Who};
use crate::applied::agents::{valid_model, Agent};
use kept::load;
use row::{new_id, row_record, StoredRow};

/// The adding device: its label and the first 16 hex of its token hash.
fn adder(caller: &Caller) -> Result<(String, String), AppError> {
    match caller.who() {
        Who::Device { label, token, .. } => Ok((label.clone(), token.short_hex())),
        Who::Open => Err(AppError::NotPaired),
        _ => Err(AppError::BadRequest(
            "starter rows are added from a paired phone".into(),
        )),
    }
}

impl App {
    /// Every row whose device is still paired (a row never outlives its device, even when its
    /// removal at the revocation failed).
    async fn live_rows(&self) -> Result<Vec<StoredRow>, AppError> {
        let devices = self.door.pairing.call(PairingMsg::List).await??;
        let paired: BTreeSet<String> = devices
            .iter()
            .map(|d| format!("{}/{}", d.label.as_str(), d.token_hash.short_hex()))
            .collect();
        let store = self.panes.rows.store.clone();
        let rows = tokio::task::spawn_blocking(move || load(&store))
            .await
            .map_err(|e| AppError::backend("starter rows", e))??;
        Ok(rows
            .into_iter()
            .filter(|r| paired.contains(&format!("{}/{}", r.device, r.owner)))
            .collect())
    }

    /// Every row of a paired device, for `collie show` (the machine's own user).
    pub async fn rows_shown(&self) -> Result<Vec<RowShown>, AppError> {
        Ok(self
            .live_rows()
            .await?
            .into_iter()
            .map(RowShown::from)
            .collect())
    }

    /// `row` as the New page shows it (its name masked).
    fn row_view(&self, row: StoredRow, confirmed: bool) -> RowView {
        RowView {
            name: self.core.masker.mask_string(row.name.clone()),
            agent: row.kind().to_owned(),
            model: match &row.spec {
                RowSpec::Template { model, .. } => model.clone(),
                RowSpec::Line { .. } => None,
            },
            no_prompts: row.no_prompts(),
            confirmed,
            id: row.id,
            added_by: row.device,
            added_at: row.added_at,
        }
    }

    /// The key rows of `machine` are kept under: `local` for this bridge.
    fn row_machine(machine: &Machine) -> String {
        match machine {
            Machine::Local => "local".to_owned(),
            Machine::Member(m) => m.name().to_owned(),
        }
    }

    /// The rows of `machine` as the New page lists them, with what may be added there;
    /// `starters` are the machine's applied starters (their agents are the templates). With
    /// `[phone] adds = false` no row is listed.
    pub(super) async fn rows_of(
        &self,
        caller: &Caller,
        machine: &Machine,
        shown_as: &str,
        starters: &[collie_crew::relay::StarterInfo],
    ) -> Result<(Vec<RowView>, RowsOffer), AppError> {
        let policy = self.panes.rows.policy;
        let mut templates: Vec<String> = starters
            .iter()
            .filter_map(|s| s.agent.clone())
            .filter(|a| Agent::from_name(a).is_some())
            .collect();
        templates.sort();
        templates.dedup();
        let offer = RowsOffer {
            adds: policy.adds,
            free_text: policy.adds && policy.free_text,
            templates: if policy.adds { templates } else { Vec::new() },
        };
        if !policy.adds {
            return Ok((Vec::new(), offer));
        }
        let on = Self::row_machine(machine);
        let owner = caller.confirmer();
        let rows = self
            .live_rows()
            .await?
            .into_iter()
            .filter(|r| r.machine == on)
            .filter(|r| policy.free_text || !matches!(r.spec, RowSpec::Line { .. }))
            .map(|r| {
                let key = format!("{shown_as}/row:{}", r.id);
                let confirmed = !r.no_prompts()
                    || owner
                        .as_deref()
                        .is_none_or(|o| self.panes.no_prompts.has(o, &key));
                self.row_view(r, confirmed)
            })
            .collect();
        Ok((rows, offer))
    }

    /// Adds a row to `machine` for the device asking (see the module docs for the rules).
    pub async fn add_row(
        &self,
        caller: &Caller,
        machine: &str,
        body: NewRow,
    ) -> Result<RowView, AppError> {
        let (device, owner) = adder(caller)?;
        let (name, spec) = body.spec()?;
        self.panes.rows.policy.allows(&spec)?;
        let machine = self.machine(machine)?;
        let list = self.starters(caller, machine_arg(&machine)).await?;
        if let Machine::Member(member) = &machine {
            member.has(Capability::StarterRows)?;
        }
        if let RowSpec::Template { agent, .. } = &spec {
            if !list.offer.templates.iter().any(|a| a == agent) {
                return Err(AppError::BadRequest(format!(
                    "agent: {} has no applied starter of {agent}",
                    list.machine
                )));
            }
        }
        let on = Self::row_machine(&machine);
        let _held = self.panes.rows.lock.lock().await;
        let rows = self.live_rows().await?;
        if list.starters.iter().any(|s| s.name == name)
            || rows.iter().any(|r| r.machine == on && r.name == name)
        {
            return Err(AppError::BadRequest(format!(
                "name: {} already has a starter called {name}",
                list.machine
            )));
        }
        if rows.iter().filter(|r| r.owner == owner).count() >= MAX_ROWS_PER_DEVICE
            || rows.len() >= MAX_ROWS
        {
            return Err(AppError::BadRequest(format!(
                "too many starter rows (at most {MAX_ROWS_PER_DEVICE} per device, {MAX_ROWS} in all)"
            )));
        }
        let row = StoredRow {
            id: new_id(),
            machine: on,
            name,
            spec,
            device,
            owner,
            added_at: collie_actors::rfc3339::format(time::OffsetDateTime::now_utc())
                .unwrap_or_default(),
        };
        let bytes = serde_json::to_vec(&row).map_err(|e| AppError::backend("starter rows", e))?;
        self.panes
            .rows
            .store
            .put(Table::StarterRows, &row.key(), &bytes)
            .map_err(|e| AppError::backend("starter rows", e))?;
        let rec = row_record(
            caller.record(self, AuditEventKind::StarterAdded),
            &list.machine,
            &row,
        );
        if let Err(e) = self.audit(rec).await {
            let _ = self.panes.rows.store.remove(Table::StarterRows, &row.key());
            return Err(e);
        }
        let confirmed = !row.no_prompts();
        Ok(self.row_view(row, confirmed))
    }

    /// Removes row `id` of `machine` (any `full` device may: it can revoke the adding device
    /// anyway); audited `starter.removed`, naming the device that added it.
    pub async fn remove_row(
        &self,
        caller: &Caller,
        machine: &str,
        id: &str,
    ) -> Result<(), AppError> {
        adder(caller)?;
        let machine = self.machine(machine)?;
        let on = Self::row_machine(&machine);
        let _held = self.panes.rows.lock.lock().await;
        let row = self
            .live_rows()
            .await?
            .into_iter()
            .find(|r| r.machine == on && r.id == id)
            .ok_or(AppError::NoSuchRow)?;
        let bytes = serde_json::to_vec(&row).map_err(|e| AppError::backend("starter rows", e))?;
        self.panes
            .rows
            .store
            .remove(Table::StarterRows, &row.key())
            .map_err(|e| AppError::backend("starter rows", e))?;
        let shown = match &machine {
            Machine::Local => self.machine_name(),
            Machine::Member(m) => m.name().to_owned(),
        };
        let rec = row_record(
            caller.record(self, AuditEventKind::StarterRemoved),
            &shown,
            &row,
        )
        .with_detail("added_by", row.device.clone());
        if let Err(e) = self.audit(rec).await {
            let _ = self
                .panes
                .rows
                .store
                .put(Table::StarterRows, &row.key(), &bytes);
            return Err(e);
        }
        Ok(())
    }

    /// Opens a pane on `machine` running its row `id` (in `folder`, when one is given). A row
    /// that skips the agent's prompts needs this device's confirmation, once, as an applied
    /// starter does.
    pub async fn start_row(
        &self,
        caller: &Caller,
        machine: &str,
        id: &str,
        pane_name: Option<String>,
        folder: Option<String>,
        confirm_no_prompts: bool,
    ) -> Result<PaneInfo, AppError> {
        let resolved = self.machine(machine)?;
        let on = Self::row_machine(&resolved);
        let row = self
            .live_rows()
            .await?
            .into_iter()
            .find(|r| r.machine == on && r.id == id)
            .ok_or_else(|| {
                AppError::BadRequest("row: no such starter row on this machine".into())
            })?;
        self.panes.rows.policy.allows(&row.spec)?;
        if row.no_prompts() {
            if let Some(owner) = caller.confirmer() {
                let shown = match &resolved {
                    Machine::Local => self.machine_name(),
                    Machine::Member(m) => m.name().to_owned(),
                };
                let key = format!("{shown}/row:{}", row.id);
                if !self.panes.no_prompts.has(&owner, &key) {
                    if !confirm_no_prompts {
                        return Err(AppError::ConfirmNoPrompts);
                    }
                    self.panes.no_prompts.confirm(&owner, &key)?;
                }
            }
        }
        let launch = Launch::Row {
            row: row.name,
            spec: row.spec,
        };
        self.create_pane_in(caller, machine, pane_name, launch, folder)
            .await
    }

    /// The rules every bridge a starter row's create passes applies to it, whoever asks
    /// ([`NewPane`](super::new_pane::NewPane)'s validation): its own `[phone] adds` / `free_text`
    /// (on a member: the member's, which may be stricter than the lead's), and the row's name and
    /// spec checked again. A launch that is not a row passes.
    pub(super) fn row_rules(&self, launch: &Launch) -> Result<(), AppError> {
        let Launch::Row { row, spec } = launch else {
            return Ok(());
        };
        self.panes.rows.policy.allows(spec)?;
        validate(row, spec)
    }

    /// The line a row's pane types once it is open on this machine: a line row's; a template row
    /// already runs its agent, and any other launch types nothing.
    pub(super) fn row_line(launch: &Launch) -> Option<String> {
        match launch {
            Launch::Row {
                spec: RowSpec::Line { line },
                ..
            } => Some(line.clone()),
            _ => None,
        }
    }

    /// Types a line row's line into its fresh shell on this machine, once the pane exists and its
    /// `pane.create` is written, as a one-shot command is ([`super::commands`]); `line` is
    /// [`App::row_line`] of the launch.
    pub(super) async fn type_row_line(
        &self,
        pane: &str,
        line: Option<String>,
    ) -> Result<(), AppError> {
        let Some(text) = line else {
            return Ok(());
        };
        let pane = pane.to_owned();
        self.panes
            .actor
            .call(|r| PanesMsg::Input {
                pane,
                text,
                keys: vec![NamedKey::Enter],
                reply: r,
            })
            .await??;
        Ok(())
    }

    /// The command line of a template row on this machine: the pinned executable of its agent's
    /// first applied starter — hash checked again now — and the flags of the bridge's table. A
    /// line runs in the user's shell (an empty command).
    pub(super) async fn row_command(&self, spec: &RowSpec) -> Result<Vec<String>, AppError> {
        let RowSpec::Template {
            agent,
            model,
            no_prompts,
        } = spec
        else {
            return Ok(Vec::new());
        };
        let kind = Agent::from_name(agent)
            .ok_or_else(|| AppError::BadRequest("agent: claude or codex".into()))?;
        if model.as_deref().is_some_and(|m| !valid_model(m)) {
            return Err(AppError::BadRequest("model: not a model name".into()));
        }
        let starter = self
            .panes
            .starters
            .iter()
            .find(|s| s.agent == Some(kind))
            .cloned()
            .ok_or_else(|| {
                AppError::BadRequest(format!(
                    "agent: this machine has no applied starter of {agent}"
                ))
            })?;
        let mut command = vec![self.pinned_exec(&starter).await?];
        command.extend(kind.option_flags(model.as_deref(), *no_prompts));
        Ok(command)
    }
}

/// The machine argument that names `machine` again.
fn machine_arg(machine: &Machine) -> &str {
    match machine {
        Machine::Local => "local",
        Machine::Member(m) => m.name(),
    }
}

/// Whether a relayed refusal is one of the rows' own (passed on in this build's words).
pub fn known_refusal(m: &str) -> Option<&'static str> {
    [ADDS_OFF, FREE_TEXT_OFF].into_iter().find(|r| *r == m)
}
