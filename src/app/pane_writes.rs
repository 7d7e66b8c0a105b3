//! The writes to a pane that exists (SPEC §3.2): typing, renaming, closing — each an
//! [`Operation`] run by [`App::run`] on this machine or a member alike.
//!
//! On this machine the pane is found first (an unknown pane is `no such pane` and leaves no
//! line), then the line is written, then the write happens — refused when the line cannot be
//! written (SPEC §7). On a member the runner relays it and writes the same line once the member
//! answered that it happened.

use collie_actors::audit::{typed_text_detail, AuditEventKind, AuditRecord};
use collie_actors::panes::keys::NamedKey;
use collie_actors::panes::PanesMsg;
use collie_crew::relay::{RelayKind, RelayOk};
use serde_json::Value;

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::panes::{rename_event, validate_input, validate_pane_name};
use super::{App, AppError, Caller};

/// Types `text`, then presses `keys` (names from the fixed list).
#[derive(Debug, Clone)]
pub struct PaneInput {
    /// The pane's id.
    pub pane: String,
    /// Text typed literally (may be empty when keys are given).
    pub text: String,
    /// Key names, pressed in order after the text.
    pub keys: Vec<String>,
}

/// Renames a pane (a tmux pane's window: `tab.rename`).
#[derive(Debug, Clone)]
pub struct PaneRename {
    /// The pane's id.
    pub pane: String,
    /// The new name.
    pub name: String,
}

/// Closes a pane.
#[derive(Debug, Clone)]
pub struct PaneClose {
    /// The pane's id.
    pub pane: String,
}

/// A write a member answers with `Done`.
fn done(ok: RelayOk) -> Result<(), AppError> {
    match ok {
        RelayOk::Done => Ok(()),
        _ => Err(AppError::MemberUnreadable),
    }
}

impl App {
    /// Writes `rec` for a write to pane `pane` of this machine once the pane is known to exist,
    /// before the write: refused when the line cannot be written.
    async fn audit_pane_write(&self, pane: &str, rec: Option<AuditRecord>) -> Result<(), AppError> {
        self.pane_info(pane).await?;
        match rec {
            Some(rec) => self.audit(rec).await,
            None => Ok(()),
        }
    }
}

impl Operation for PaneInput {
    type Output = ();
    fn op(&self) -> Op {
        Op::PaneInput
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        validate_input(&self.text, &self.keys).map(drop)
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Input {
            pane: self.pane.clone(),
            text: (!self.text.is_empty()).then(|| self.text.clone()),
            keys: self.keys.clone(),
        })
    }

    fn answer(&self, _: &App, _: &Member, ok: RelayOk) -> Result<(), AppError> {
        done(ok)
    }

    fn reply((): ()) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Done)
    }

    /// Typed text only as a preview (SPEC §7), and the key names.
    fn record(&self, app: &App, caller: &Caller, (): &()) -> Option<AuditRecord> {
        let mut rec = caller
            .record(app, AuditEventKind::PaneInput)
            .with_detail("pane", self.pane.clone());
        if !self.text.is_empty() {
            rec = rec.with_detail("text", typed_text_detail(&self.text));
        }
        if !self.keys.is_empty() {
            rec = rec.with_detail(
                "keys",
                Value::Array(self.keys.iter().map(|k| Value::from(k.as_str())).collect()),
            );
        }
        Some(rec)
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<(), AppError> {
        let keys: Vec<NamedKey> = validate_input(&self.text, &self.keys)?;
        app.audit_pane_write(&self.pane, self.record(app, caller, &()))
            .await?;
        // The sent log's lines, if a shell at its prompt is about to read them (asked before
        // typing: once Enter is pressed the command is in the foreground).
        let sent = app.lines_for_shell(&self.pane, &self.text, &keys).await;
        let pane = self.pane.clone();
        app.panes
            .actor
            .call(|reply| PanesMsg::Input {
                pane,
                text: self.text,
                keys,
                reply,
            })
            .await??;
        if !sent.is_empty() {
            app.record_sent(&self.pane, sent).await;
        }
        Ok(())
    }
}

impl Operation for PaneRename {
    type Output = ();
    fn op(&self) -> Op {
        Op::PaneRename
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        validate_pane_name(&self.name)
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Rename {
            pane: self.pane.clone(),
            name: self.name.clone(),
        })
    }

    fn answer(&self, _: &App, _: &Member, ok: RelayOk) -> Result<(), AppError> {
        done(ok)
    }

    fn reply((): ()) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Done)
    }

    /// The pane's id says which it is, so the lead names a member's rename right without asking.
    fn record(&self, app: &App, caller: &Caller, (): &()) -> Option<AuditRecord> {
        Some(
            caller
                .record(app, rename_event(&self.pane))
                .with_detail("pane", self.pane.clone())
                .with_detail("name", self.name.clone()),
        )
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<(), AppError> {
        app.audit_pane_write(&self.pane, self.record(app, caller, &()))
            .await?;
        let Self { pane, name } = self;
        Ok(app
            .panes
            .actor
            .call(|reply| PanesMsg::Rename { pane, name, reply })
            .await??)
    }
}

impl Operation for PaneClose {
    type Output = ();
    fn op(&self) -> Op {
        Op::PaneClose
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Close {
            pane: self.pane.clone(),
        })
    }

    fn answer(&self, _: &App, _: &Member, ok: RelayOk) -> Result<(), AppError> {
        done(ok)
    }

    fn reply((): ()) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Done)
    }

    fn record(&self, app: &App, caller: &Caller, (): &()) -> Option<AuditRecord> {
        Some(
            caller
                .record(app, AuditEventKind::PaneClose)
                .with_detail("pane", self.pane.clone()),
        )
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<(), AppError> {
        app.audit_pane_write(&self.pane, self.record(app, caller, &()))
            .await?;
        let pane = self.pane;
        Ok(app
            .panes
            .actor
            .call(|reply| PanesMsg::Close { pane, reply })
            .await??)
    }
}
