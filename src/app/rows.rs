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
//! **Policy.** The lead's `[phone] adds` / `free_text` govern adding, listing and starting; the
//! machine that runs a row checks its own again ([`App::relayed_row`]). With `adds = false` rows
//! are neither listed nor started, but kept.
//!
//! **Audit.** Adding and removing are `starter.added` / `starter.removed` (decision 0041: SPEC §7
//! has no name for them): the machine, the row's name, its agent or — for a line — only the first
//! word and the length. The store is written first, then the line; a line that cannot be written
//! undoes the store write and refuses the change.

use std::collections::BTreeSet;

use collie_actors::audit::AuditEventKind;
use collie_actors::pairing::PairingMsg;
use collie_actors::panes::actor::PaneInfo;
use collie_actors::panes::keys::NamedKey;
use collie_actors::panes::PanesMsg;
use collie_actors::store::{Store, Table};
use collie_crew::relay::{RelayKind, RowSpec};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::commands::{first_word, validate_command};
use super::machine::Machine;
use super::panes::{validate_pane_name, Launch};
use super::{App, AppError, Caller, Who};
use crate::applied::agents::{valid_model, Agent};

/// The most rows one device may have added, over all machines.
pub const MAX_ROWS_PER_DEVICE: usize = 32;
/// The most rows kept in all.
pub const MAX_ROWS: usize = 256;
/// A stored row larger than this is not read (a row is a name, a line of at most 4,096
/// characters and a few words).
const MAX_ROW_BYTES: usize = 32 * 1024;

/// The refusal when `[phone] adds = false` (a lead passes a member's on in these words).
pub const ADDS_OFF: &str =
    "starters added from a phone are off on this machine ([phone] adds = false)";
/// The refusal of a hand-typed row when `[phone] free_text = false`.
pub const FREE_TEXT_OFF: &str =
    "hand-typed starters are off on this machine ([phone] free_text = false)";

/// `[phone] adds` and `free_text`, read with the configuration (which stays below the app).
pub use crate::config::RowPolicy;

impl RowPolicy {
    /// Whether `spec` may be added or started under this policy.
    pub fn allows(&self, spec: &RowSpec) -> Result<(), AppError> {
        if !self.adds {
            return Err(AppError::Forbidden(ADDS_OFF));
        }
        if matches!(spec, RowSpec::Line { .. }) && !self.free_text {
            return Err(AppError::Forbidden(FREE_TEXT_OFF));
        }
        Ok(())
    }
}

/// The rows' store and the lock that keeps a count and the write after it together.
pub struct Rows {
    store: Store,
    policy: RowPolicy,
    lock: tokio::sync::Mutex<()>,
}

impl Rows {
    /// Rows kept in `store`, under `policy`.
    pub fn new(store: Store, policy: RowPolicy) -> Rows {
        Rows {
            store,
            policy,
            lock: tokio::sync::Mutex::new(()),
        }
    }
}

/// A row as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredRow {
    /// Random, 8 hex characters.
    pub id: String,
    /// The machine it runs on: `local` for the bridge that keeps it, else a member's name.
    pub machine: String,
    /// Its name (the pane-name rules; unique per machine among starters and rows).
    pub name: String,
    /// What it runs.
    pub spec: RowSpec,
    /// The adding device's label.
    pub device: String,
    /// The first 16 hex of the adding device's token hash.
    pub owner: String,
    /// When, RFC 3339.
    pub added_at: String,
}

impl StoredRow {
    fn key(&self) -> String {
        format!("{}/{}", self.owner, self.id)
    }

    /// `claude`, `codex` or `line`.
    fn kind(&self) -> &str {
        match &self.spec {
            RowSpec::Template { agent, .. } => agent,
            RowSpec::Line { .. } => "line",
        }
    }

    fn no_prompts(&self) -> bool {
        matches!(
            self.spec,
            RowSpec::Template {
                no_prompts: true,
                ..
            }
        )
    }
}

/// `POST /api/starters/{machine}/rows`: a template (`agent`, `model`, `no_prompts`) or a `line`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRow {
    /// The row's name.
    pub name: String,
    /// `claude` or `codex`: the machine's applied starter of that agent.
    pub agent: Option<String>,
    /// The model option field.
    pub model: Option<String>,
    /// The "no prompts" option field.
    #[serde(default)]
    pub no_prompts: bool,
    /// A hand-typed line instead of a template.
    pub line: Option<String>,
}

/// A row on the New page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowView {
    /// What a start or a removal names.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `claude`, `codex`, or `line` for a hand-typed one.
    pub agent: String,
    /// The model option field, if one was chosen.
    pub model: Option<String>,
    /// It skips the agent's permission prompts (the "No prompts" badge).
    pub no_prompts: bool,
    /// Whether this device already confirmed it (always true when `no_prompts` is false).
    pub confirmed: bool,
    /// The label of the device that added it.
    pub added_by: String,
    /// When, RFC 3339.
    pub added_at: String,
}

/// What the New page needs to know about rows on a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowsOffer {
    /// Whether a phone may add rows (the lead's `[phone] adds`).
    pub adds: bool,
    /// Whether a phone may add hand-typed rows (`[phone] free_text`).
    pub free_text: bool,
    /// The agents a template can name there: those the machine has an applied starter of.
    pub templates: Vec<String>,
}

/// Checks a new row's name and spec (the same rules on the lead and on the member that runs it).
pub fn validate(name: &str, spec: &RowSpec) -> Result<(), AppError> {
    validate_pane_name(name)?;
    match spec {
        RowSpec::Template { agent, model, .. } => {
            if Agent::from_name(agent).is_none() {
                return Err(AppError::BadRequest("agent: claude or codex".into()));
            }
            if model.as_deref().is_some_and(|m| !valid_model(m)) {
                return Err(AppError::BadRequest(
                    "model: one word of letters, digits and ._:/-, not starting with -".into(),
                ));
            }
        }
        RowSpec::Line { line } => validate_command(line).map_err(|e| match e {
            AppError::BadRequest(m) => AppError::BadRequest(m.replacen("command:", "line:", 1)),
            other => other,
        })?,
    }
    Ok(())
}

impl NewRow {
    /// The spec the body asks for: a template or a line, never both.
    fn spec(self) -> Result<(String, RowSpec), AppError> {
        let spec = match (self.agent, self.line) {
            (Some(agent), None) => RowSpec::Template {
                agent,
                model: self.model.filter(|m| !m.is_empty()),
                no_prompts: self.no_prompts,
            },
            (None, Some(line)) if self.model.is_none() && !self.no_prompts => {
                RowSpec::Line { line }
            }
            _ => {
                return Err(AppError::BadRequest(
                    "give agent (with model and no_prompts) or line, not both".into(),
                ))
            }
        };
        validate(&self.name, &spec)?;
        Ok((self.name, spec))
    }
}

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

/// Reads every row the store holds (a record too large or unreadable is skipped and logged).
fn load(store: &Store) -> Result<Vec<StoredRow>, AppError> {
    let entries = store
        .scan(Table::StarterRows)
        .map_err(|e| AppError::backend("starter rows", e))?;
    Ok(entries
        .into_iter()
        .filter_map(|(key, value)| {
            let row = (value.len() <= MAX_ROW_BYTES)
                .then(|| serde_json::from_slice::<StoredRow>(&value).ok())
                .flatten()
                .filter(|r| r.key() == key);
            if row.is_none() {
                tracing::warn!(%key, "an unreadable starter row is skipped");
            }
            row
        })
        .collect())
}

/// Removes, at the bridge's start, every row whose device is no longer paired (its revocation's
/// removal failed, or it was taken over after expiry). `paired` holds `label/short hash` of each
/// paired device. Returns how many it removed.
pub fn purge_orphans(store: &Store, paired: &BTreeSet<String>) -> usize {
    let Ok(rows) = load(store) else { return 0 };
    let gone: Vec<_> = rows
        .iter()
        .filter(|r| !paired.contains(&format!("{}/{}", r.device, r.owner)))
        .map(|r| collie_actors::store::Change::Remove(r.key()))
        .collect();
    if gone.is_empty() {
        return 0;
    }
    match store.apply(Table::StarterRows, &gone) {
        Ok(()) => gone.len(),
        Err(e) => {
            tracing::warn!(error = %e, "starter rows of unpaired devices not removed");
            0
        }
    }
}

/// `label/short hash` of every paired device in the store (for [`purge_orphans`]).
pub fn paired_in_store(store: &Store) -> Option<BTreeSet<String>> {
    let devices = store.scan(Table::Devices).ok()?;
    devices
        .into_iter()
        .map(|(_, v)| {
            serde_json::from_slice::<collie_actors::pairing::Device>(&v)
                .ok()
                .map(|d| format!("{}/{}", d.label.as_str(), d.token_hash.short_hex()))
        })
        .collect()
}

/// A row as `collie show` prints it to the machine's own user: never a typed line, only its first
/// word and length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowShown {
    /// `local` or a member's name.
    pub machine: String,
    /// Its name.
    pub name: String,
    /// `claude (sonnet)`, `codex`, or `line: make… (12 characters)`.
    pub runs: String,
    /// It skips the agent's permission prompts.
    pub no_prompts: bool,
    /// The label of the device that added it.
    pub added_by: String,
}

impl From<StoredRow> for RowShown {
    fn from(r: StoredRow) -> RowShown {
        let runs = match &r.spec {
            RowSpec::Template {
                agent,
                model: Some(m),
                ..
            } => format!("{agent} ({m})"),
            RowSpec::Template { agent, .. } => agent.clone(),
            RowSpec::Line { line } => format!(
                "line: {}… ({} characters)",
                first_word(line),
                line.chars().count()
            ),
        };
        RowShown {
            no_prompts: r.no_prompts(),
            machine: r.machine,
            name: r.name,
            runs,
            added_by: r.device,
        }
    }
}

/// The rows of paired devices in `store` (a stopped bridge's, for `collie show`); `None` when the
/// store cannot be read.
pub fn shown_from_store(store: &Store) -> Option<Vec<RowShown>> {
    let paired = paired_in_store(store)?;
    Some(
        load(store)
            .ok()?
            .into_iter()
            .filter(|r| paired.contains(&format!("{}/{}", r.device, r.owner)))
            .map(RowShown::from)
            .collect(),
    )
}

fn new_id() -> String {
    let mut b = [0u8; 4];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

impl App {
    /// Every row whose device is still paired (a row never outlives its device, even when its
    /// removal at the revocation failed).
    async fn live_rows(&self) -> Result<Vec<StoredRow>, AppError> {
        let devices = self.pairing.call(PairingMsg::List).await??;
        let paired: BTreeSet<String> = devices
            .iter()
            .map(|d| format!("{}/{}", d.label.as_str(), d.token_hash.short_hex()))
            .collect();
        let store = self.rows.store.clone();
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
            name: self.masker.mask_string(row.name.clone()),
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
        let policy = self.rows.policy;
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
        let owner = super::starters::confirmer(caller);
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
                        .is_none_or(|o| self.no_prompts.has(o, &key));
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
        self.rows.policy.allows(&spec)?;
        let machine = self.machine(machine)?;
        let list = self.starters(caller, machine_arg(&machine)).await?;
        if let Machine::Member(member) = &machine {
            member.allows(&row_kind())?;
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
        let _held = self.rows.lock.lock().await;
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
            added_at: super::devices::rfc3339(Some(time::OffsetDateTime::now_utc()))
                .unwrap_or_default(),
        };
        let bytes = serde_json::to_vec(&row).map_err(|e| AppError::backend("starter rows", e))?;
        self.rows
            .store
            .put(Table::StarterRows, &row.key(), &bytes)
            .map_err(|e| AppError::backend("starter rows", e))?;
        let rec = row_record(
            caller.record(self, AuditEventKind::StarterAdded),
            &list.machine,
            &row,
        );
        if let Err(e) = self.audit(rec).await {
            let _ = self.rows.store.remove(Table::StarterRows, &row.key());
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
        let _held = self.rows.lock.lock().await;
        let row = self
            .live_rows()
            .await?
            .into_iter()
            .find(|r| r.machine == on && r.id == id)
            .ok_or(AppError::NoSuchRow)?;
        let bytes = serde_json::to_vec(&row).map_err(|e| AppError::backend("starter rows", e))?;
        self.rows
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
            let _ = self.rows.store.put(Table::StarterRows, &row.key(), &bytes);
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
        self.rows.policy.allows(&row.spec)?;
        if row.no_prompts() {
            if let Some(owner) = super::starters::confirmer(caller) {
                let shown = match &resolved {
                    Machine::Local => self.machine_name(),
                    Machine::Member(m) => m.name().to_owned(),
                };
                let key = format!("{shown}/row:{}", row.id);
                if !self.no_prompts.has(&owner, &key) {
                    if !confirm_no_prompts {
                        return Err(AppError::ConfirmNoPrompts);
                    }
                    self.no_prompts.confirm(&owner, &key)?;
                }
            }
        }
        self.open_row(caller, machine, row.name, pane_name, row.spec, folder)
            .await
    }

    /// On a member: a row the lead relays, under this machine's own `[phone] adds` /
    /// `free_text`, validated again, resolved against this machine's own starters.
    pub async fn relayed_row(
        &self,
        caller: &Caller,
        row: String,
        pane_name: Option<String>,
        spec: RowSpec,
        folder: Option<String>,
    ) -> Result<PaneInfo, AppError> {
        self.rows.policy.allows(&spec)?;
        validate(&row, &spec)?;
        self.open_row(caller, "local", row, pane_name, spec, folder)
            .await
    }

    /// Opens the pane; on this machine a line is then typed into its fresh shell, as a one-shot
    /// command is ([`super::commands`]).
    async fn open_row(
        &self,
        caller: &Caller,
        machine: &str,
        row: String,
        pane_name: Option<String>,
        spec: RowSpec,
        folder: Option<String>,
    ) -> Result<PaneInfo, AppError> {
        let local = matches!(self.machine(machine)?, Machine::Local);
        let line = match &spec {
            RowSpec::Line { line } if local => Some(line.clone()),
            _ => None,
        };
        let info = self
            .create_pane_in(
                caller,
                machine,
                pane_name,
                Launch::Row { row, spec },
                folder,
            )
            .await?;
        if let Some(text) = line {
            let pane = info.pane.clone();
            self.panes
                .call(|r| PanesMsg::Input {
                    pane,
                    text,
                    keys: vec![NamedKey::Enter],
                    reply: r,
                })
                .await??;
        }
        Ok(info)
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

/// A [`RelayKind::CreateRow`] to ask a member's capability with.
fn row_kind() -> RelayKind {
    RelayKind::CreateRow {
        row: String::new(),
        name: None,
        spec: RowSpec::Line {
            line: String::new(),
        },
        folder: None,
    }
}

/// The detail of a `starter.added` / `starter.removed` line: never a line's text, only its first
/// word and length.
fn row_record(
    rec: collie_actors::audit::AuditRecord,
    machine: &str,
    row: &StoredRow,
) -> collie_actors::audit::AuditRecord {
    let rec = rec
        .with_detail("machine", machine.to_owned())
        .with_detail("row", row.id.clone())
        .with_detail("name", row.name.clone())
        .with_detail("agent", row.kind().to_owned());
    match &row.spec {
        RowSpec::Line { line } => rec
            .with_detail("word", first_word(line))
            .with_detail("length", line.chars().count() as u64),
        RowSpec::Template {
            model, no_prompts, ..
        } => {
            let rec = rec.with_detail("no_prompts", *no_prompts);
            match model {
                Some(m) => rec.with_detail("model", m.clone()),
                None => rec,
            }
        }
    }
}

/// Whether a relayed refusal is one of the rows' own (passed on in this build's words).
pub fn known_refusal(m: &str) -> Option<&'static str> {
    [ADDS_OFF, FREE_TEXT_OFF].into_iter().find(|r| *r == m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, agent: Option<&str>, line: Option<&str>) -> NewRow {
        NewRow {
            name: name.to_owned(),
            agent: agent.map(str::to_owned),
            model: None,
            no_prompts: false,
            line: line.map(str::to_owned),
        }
    }

    #[test]
    fn a_body_is_a_template_or_a_line() {
        assert!(matches!(
            row("a", Some("claude"), None).spec(),
            Ok((_, RowSpec::Template { .. }))
        ));
        assert!(matches!(
            row("a", None, Some("make test")).spec(),
            Ok((_, RowSpec::Line { .. }))
        ));
        assert!(row("a", Some("claude"), Some("ls")).spec().is_err());
        assert!(row("a", None, None).spec().is_err());
        assert!(row("a", Some("bash"), None).spec().is_err());
        assert!(row("", Some("claude"), None).spec().is_err());
        assert!(row("a", None, Some("a\nb")).spec().is_err());
        let mut m = row("a", Some("codex"), None);
        m.model = Some("-x".into());
        assert!(m.spec().is_err());
        let mut m = row("a", None, Some("ls"));
        m.no_prompts = true;
        assert!(m.spec().is_err(), "no prompts is a template's option");
    }

    #[test]
    fn the_policy_gates_templates_and_lines() {
        let template = RowSpec::Template {
            agent: "claude".into(),
            model: None,
            no_prompts: false,
        };
        let line = RowSpec::Line { line: "ls".into() };
        let default = RowPolicy::default();
        assert!(default.allows(&template).is_ok());
        assert!(default.allows(&line).is_err());
        let free = RowPolicy {
            adds: true,
            free_text: true,
        };
        assert!(free.allows(&line).is_ok());
        let off = RowPolicy {
            adds: false,
            free_text: true,
        };
        assert!(off.allows(&template).is_err() && off.allows(&line).is_err());
    }
}
