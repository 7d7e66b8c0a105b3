//! A starter row itself — what the store keeps, what a phone sends and sees, the rules a name and
//! a spec must meet and the policy that gates them — with no store, actor or network in reach (the
//! App shell in [`super`] does the I/O).

use collie_actors::command_word::first_word;
use collie_crew::relay::RowSpec;
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::super::commands::validate_command;
use super::super::panes::validate_pane_name;
use super::super::AppError;
use crate::applied::agents::{valid_model, Agent};

/// The most rows one device may have added, over all machines.
pub const MAX_ROWS_PER_DEVICE: usize = 32;
/// The most rows kept in all.
pub const MAX_ROWS: usize = 256;

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
    pub(super) fn key(&self) -> String {
        format!("{}/{}", self.owner, self.id)
    }

    /// `claude`, `codex` or `line`.
    pub(super) fn kind(&self) -> &str {
        match &self.spec {
            RowSpec::Template { agent, .. } => agent,
            RowSpec::Line { .. } => "line",
        }
    }

    pub(super) fn no_prompts(&self) -> bool {
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
    pub(super) fn spec(self) -> Result<(String, RowSpec), AppError> {
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

/// The detail of a `starter.added` / `starter.removed` line: never a line's text, only its first
/// word and length.
pub(super) fn row_record(
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

/// A new row's id: 8 random hex characters.
pub(super) fn new_id() -> String {
    let mut b = [0u8; 4];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
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
