//! One-shot commands (SPEC §11, seed 002): a `full` device runs a typed line in a fresh shell on
//! this machine, when `[phone] run` is on (the default).
//!
//! **What "a fresh shell" is** (docs/decisions/0033): a new hosted pane running the user's shell,
//! with the line typed into it and Enter pressed — exactly what a paired phone can already do by
//! opening a shell and typing, so the feature grants nothing new; the pane stays open, so its
//! output can be read and the phone can open it. The pane obeys the pane caps and is audited
//! `pane.create` like any other.
//!
//! **Order**: authorize (tier `full`, `[phone] run`), validate (one line: 1 to 4,096 characters,
//! no control characters — the free-text rules), audit `command.run` with only the first word
//! (an assignment's value dropped) and the length — refused when that line cannot be written —
//! then open the pane and type. Afterwards the line joins `commands-recent.json` (the last 12
//! distinct lines, newest first) and the sent log (pane `command`), each only if the sent log's
//! rules let it. Unpairing a device leaves the recent list: running a line again needs a paired
//! device anyway.
//!
//! **A member's command** goes through the lead ([`RelayKind::Command`], capability `commands`)
//! on the same path: the lead's gate (tier `full`) and validation first; the member then applies
//! its own `[phone] run` (its refusal reaches the phone in the same words), audits its own
//! `command.run` with the same request id, runs it and keeps the line in its own recent list and
//! sent log; the lead writes its `command.run` (with the member's name) once the member answered
//! that it ran (decision 0052). Both lines name the word as [`first_word`] does, the one meaning
//! every audit line about a command shares.

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::command_word::first_word;
use collie_actors::panes::actor::PaneInfo;
use collie_actors::panes::keys::NamedKey;
use collie_actors::panes::PanesMsg;
use collie_actors::sent::rules::MAX_LINE_CHARS;
use collie_actors::sent::{file, COMMAND_PANE};
use collie_crew::relay::{RelayKind, RelayOk};
use serde::{Deserialize, Serialize};

use super::machine::Member;
use super::new_pane::{Launch, NewPane};
use super::operation::Operation;
use super::ops::Op;
use super::sent::blocking;
use super::{App, AppError, Caller};

/// The refusal when `[phone] run = false` (a lead passes a member's on in these words).
pub const RUN_OFF: &str = "one-shot commands are off on this machine ([phone] run = false)";

/// The name of a one-shot command's pane.
pub const RUN_PANE_NAME: &str = "run";

/// What `POST /api/commands` answers: the pane the line runs in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandRan {
    /// The machine.
    pub machine: String,
    /// The new pane (open it to read the output).
    pub pane: PaneInfo,
}

/// `GET /api/commands/recent`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentCommands {
    /// The last distinct lines, newest first, masked.
    pub commands: Vec<String>,
}

/// Checks a command line: one line of 1 to 4,096 characters without control characters, not
/// only blanks.
pub fn validate_command(line: &str) -> Result<(), AppError> {
    if line.trim().is_empty() {
        return Err(AppError::BadRequest("command: type a command".into()));
    }
    if line.chars().take(MAX_LINE_CHARS + 1).count() > MAX_LINE_CHARS {
        return Err(AppError::BadRequest(
            "command: at most 4096 characters".into(),
        ));
    }
    if line.chars().any(char::is_control) {
        return Err(AppError::BadRequest(
            "command: one line without control characters (no line breaks or tabs)".into(),
        ));
    }
    Ok(())
}

/// A line to run in a fresh shell ([`App::run`]; see the module docs).
#[derive(Debug, Clone)]
pub struct RunCommand {
    /// The line, as typed.
    pub command: String,
}

impl Operation for RunCommand {
    type Output = CommandRan;
    fn op(&self) -> Op {
        Op::CommandRun
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        validate_command(&self.command)
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Command {
            command: self.command.clone(),
        })
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<CommandRan, AppError> {
        match ok {
            RelayOk::Created(pane) => Ok(CommandRan {
                machine: member.name().to_owned(),
                pane: member.own_pane(app, pane),
            }),
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: CommandRan) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Created(out.pane))
    }

    /// The first word (an assignment's value dropped) and the length, never the line.
    fn record(&self, app: &App, caller: &Caller, _: &CommandRan) -> Option<AuditRecord> {
        Some(
            caller
                .record(app, AuditEventKind::CommandRun)
                .with_detail("word", first_word(&self.command))
                .with_detail("length", self.command.chars().count() as u64),
        )
    }

    /// Opens the command's pane, writes `command.run` and types the line; the line then joins
    /// the recent list and the sent log, as their rules allow. The pane comes first: a pane
    /// refused at the cap is `resource.denied` and nothing ran, so no `command.run` (SPEC §7); a
    /// `command.run` that cannot be written closes the pane again before anything is typed. A
    /// member applies its own `[phone] run`.
    async fn local(self, app: &App, caller: &Caller) -> Result<CommandRan, AppError> {
        if !app.panes.sent.runs() {
            return Err(AppError::Forbidden(RUN_OFF));
        }
        let new = NewPane {
            name: Some(RUN_PANE_NAME.to_owned()),
            launch: Launch::Shell,
            folder: None,
            session: None,
        };
        let pane = app.run(caller, "local", new).await?;
        let ran = CommandRan {
            machine: app.machine_name(),
            pane,
        };
        if let Some(rec) = self.record(app, caller, &ran) {
            app.keep_if_audited(rec, &ran.pane.pane).await?;
        }
        let id = ran.pane.pane.clone();
        let command = self.command;
        app.panes
            .actor
            .call(|r| PanesMsg::Input {
                pane: id,
                text: command.clone(),
                keys: vec![NamedKey::Enter],
                reply: r,
            })
            .await??;
        if app.panes.sent.may_keep(&command) {
            app.remember_command(command.clone()).await;
        }
        app.record_sent(COMMAND_PANE, vec![command]).await;
        Ok(ran)
    }
}

impl App {
    /// Puts `line` first in `commands-recent.json`; a file that cannot be written is logged
    /// (without the line) and the command has run anyway.
    async fn remember_command(&self, line: String) {
        let _held = self.panes.sent.lock().lock().await;
        let path = self.panes.sent.recent_path().to_owned();
        let saved = blocking(move || {
            // An unreadable list is started afresh rather than blocking every later command.
            let mut recent = file::load_recent(&path).unwrap_or_default();
            recent.push(&line);
            file::save_recent(&path, &recent)
        })
        .await;
        if saved.is_err() {
            tracing::warn!("the recent commands could not be saved (see the error above)");
        }
    }

    /// The recent one-shot commands, masked.
    pub async fn recent_commands(&self, caller: &Caller) -> Result<RecentCommands, AppError> {
        self.authorize(caller, Op::CommandsRecent)?;
        let path = self.panes.sent.recent_path().to_owned();
        let recent = {
            let _held = self.panes.sent.lock().lock().await;
            blocking(move || file::load_recent(&path)).await?
        };
        Ok(RecentCommands {
            commands: recent
                .commands
                .into_iter()
                .map(|c| self.core.masker.mask_string(c))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_one_line() {
        assert!(validate_command("ls").is_ok());
        for bad in ["", "   ", "a\nb", "a\tb", "a\u{1b}[2J"] {
            assert!(validate_command(bad).is_err(), "{bad:?}");
        }
        assert!(validate_command(&"x".repeat(4097)).is_err());
        assert!(validate_command(&"x".repeat(4096)).is_ok());
    }
}
