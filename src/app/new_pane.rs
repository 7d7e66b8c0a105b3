//! Opening a pane: one operation, [`NewPane`], for a hosted pane, a pane in a chosen folder, a
//! starter row's pane and a new tmux window ([`super::windows`]) — a window is a create with a
//! session — on this machine or a member alike ([`App::run`]).
//!
//! `pane.create` is written once the pane exists (SPEC §7: a line is written for what happened);
//! if that line cannot be written the pane is closed again and the create refused — here, and on
//! a member too when the lead cannot write its own line ([`Operation::undo`]). A refusal at a cap
//! is `resource.denied`, whichever machine refused. A starter's executable hash is checked again
//! just before the spawn (SPEC §12).

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::panes::actor::{PaneError, PaneInfo};
use collie_actors::panes::PanesMsg;
use collie_crew::relay::{RelayKind, RelayOk, RowSpec};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::panes::validate_pane_name;
use super::windows::{no_such_session, parse_session};
use super::{App, AppError, Caller};

/// What a new pane runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// The user's shell.
    Shell,
    /// An applied starter, by name (SPEC §12).
    Starter(String),
    /// A command line (the CLI, on its own machine only).
    Command(Vec<String>),
    /// A starter row added from a phone (decision 0041): its name and what it runs, resolved by
    /// the machine that runs it.
    Row {
        /// The row's name (what `pane.create` names).
        row: String,
        /// A template or a typed line.
        spec: RowSpec,
    },
}

/// A new pane's launch, resolved on this machine ([`App::resolve_launch`]).
pub(super) struct Resolved {
    /// The folder it starts in, resolved; `None`: the backend's default.
    pub cwd: Option<std::path::PathBuf>,
    /// argv; empty = the user's shell.
    pub command: Vec<String>,
    /// What the `pane.create` line says it runs: `("starter", name)`, `("row", name)` or
    /// `("command", first word)`.
    pub runs: (&'static str, Option<String>),
}

/// A create as every adapter asks for it, run by [`App::run`].
#[derive(Debug, Clone)]
pub struct NewPane {
    /// The pane's name (`None`: the backend's).
    pub name: Option<String>,
    /// What it runs.
    pub launch: Launch,
    /// The folder it starts in (absolute or `~/…`), inside one of the machine's workspaces;
    /// `None`: the home folder (a window: the session's).
    pub folder: Option<String>,
    /// `Some("t<i>:<name>")`: a new window of that mirrored tmux session
    /// ([`super::windows`]) rather than a hosted pane.
    pub session: Option<String>,
}

impl NewPane {
    /// What the lead's `pane.create` line of a member's pane says it runs (the member's own line
    /// says what it resolved).
    fn runs(&self) -> (&'static str, Option<String>) {
        match &self.launch {
            Launch::Row { row, .. } => ("row", Some(row.clone())),
            Launch::Starter(s) => ("starter", Some(s.clone())),
            Launch::Shell | Launch::Command(_) => ("starter", None),
        }
    }
}

impl Operation for NewPane {
    type Output = PaneInfo;
    fn op(&self) -> Op {
        Op::PaneCreate
    }

    fn validate(&self, app: &App) -> Result<(), AppError> {
        app.row_rules(&self.launch)?;
        if self.session.is_some() && matches!(self.launch, Launch::Row { .. }) {
            // `CreateWindow` carries a starter's name only: a row would reach a member as a shell.
            return Err(AppError::BadRequest(
                "a starter row opens a pane, not a window".into(),
            ));
        }
        if let Some(s) = &self.session {
            parse_session(s)?;
        }
        if let Some(n) = &self.name {
            validate_pane_name(n)?;
        }
        if let Some(f) = &self.folder {
            super::browse::validate_path("folder", f, true)?;
        }
        Ok(())
    }

    /// A starter (by name), a row or the shell — never a command line, which runs only on its own
    /// machine.
    fn relay(&self) -> Result<RelayKind, AppError> {
        let starter = match &self.launch {
            Launch::Command(_) => {
                return Err(AppError::BadRequest(
                    "a command line runs only on this machine; use a starter".into(),
                ))
            }
            Launch::Starter(s) => Some(s.clone()),
            Launch::Shell | Launch::Row { .. } => None,
        };
        let (name, folder) = (self.name.clone(), self.folder.clone());
        Ok(match (&self.launch, &self.session) {
            (_, Some(session)) => RelayKind::CreateWindow {
                name,
                starter,
                folder,
                session: session.clone(),
            },
            (Launch::Row { row, spec }, None) => RelayKind::CreateRow {
                row: row.clone(),
                name,
                spec: spec.clone(),
                folder,
            },
            // Only a member that declared `pane_folder` gets a folder (the gate in `create`).
            (_, None) => match folder {
                None => RelayKind::Create { name, starter },
                Some(folder) => RelayKind::CreateIn {
                    name,
                    starter,
                    folder,
                },
            },
        })
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<PaneInfo, AppError> {
        match ok {
            RelayOk::Created(info) => Ok(member.own_pane(app, info)),
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: PaneInfo) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Created(out))
    }

    fn record(&self, app: &App, caller: &Caller, out: &PaneInfo) -> Option<AuditRecord> {
        let rec = app.created_record(
            caller,
            &out.pane,
            self.name.clone(),
            self.runs(),
            self.session.clone(),
        );
        Some(with_folder(rec, self.folder.clone()))
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<PaneInfo, AppError> {
        let NewPane {
            name,
            launch,
            folder,
            session: shown_session,
        } = self;
        let session = match &shown_session {
            Some(s) => Some(parse_session(s).map(|(i, n)| (i, n.to_owned()))?),
            None => None,
        };
        if let Some((socket, session_name)) = &session {
            // Known before anything is resolved or checked: an unknown session costs nothing.
            app.known_session(*socket, session_name).await?;
        }
        let line = App::row_line(&launch);
        let Resolved { cwd, command, runs } = app.resolve_launch(launch, folder.as_deref()).await?;
        // Under the sandbox every new pane runs confined (SPEC §15): its command (none: the
        // user's shell) behind `collie __sandbox`.
        let command = match &app.panes.confined {
            Some(prefix) => prefix.iter().cloned().chain(command).collect(),
            None => command,
        };
        let created = match session {
            Some((socket, session_name)) => {
                app.panes
                    .actor
                    .call(|reply| PanesMsg::CreateWindow {
                        socket,
                        session: session_name,
                        name: name.clone(),
                        command,
                        cwd: cwd.clone(),
                        reply,
                    })
                    .await?
            }
            None => {
                app.panes
                    .actor
                    .call(|reply| PanesMsg::Create {
                        name: name.clone(),
                        command,
                        cwd: cwd.clone(),
                        reply,
                    })
                    .await?
            }
        };
        let info = match created {
            Ok(info) => info,
            Err(PaneError::ResourceLimit(cap)) => {
                let rec = caller
                    .record(app, AuditEventKind::ResourceDenied)
                    .with_detail("reason", cap);
                // Refused either way; an unwritable log only loses the line.
                let _ = app.audit(rec).await;
                return Err(AppError::ResourceLimit);
            }
            // Gone between the check and the spawn.
            Err(PaneError::NoSuchSession) => return Err(no_such_session()),
            Err(e) => return Err(e.into()),
        };
        let rec = app.created_record(caller, &info.pane, name, runs, shown_session);
        let rec = with_folder(rec, cwd.map(|d| d.display().to_string()));
        app.keep_if_audited(rec, &info.pane).await?;
        app.type_row_line(&info.pane, line).await?;
        Ok(info)
    }

    fn undo(out: &PaneInfo) -> Option<RelayKind> {
        Some(RelayKind::Close {
            pane: out.pane.clone(),
        })
    }
}

/// A `pane.create` line with the folder the pane started in, if one was chosen.
pub(super) fn with_folder(rec: AuditRecord, folder: Option<String>) -> AuditRecord {
    match folder {
        Some(f) => rec.with_detail("folder", f),
        None => rec,
    }
}

impl App {
    /// [`NewPane`] in `folder` (absolute or `~/…`; `None`: the home folder) on `machine`.
    pub async fn create_pane_in(
        &self,
        caller: &Caller,
        machine: &str,
        name: Option<String>,
        launch: Launch,
        folder: Option<String>,
    ) -> Result<PaneInfo, AppError> {
        let new = NewPane {
            name,
            launch,
            folder,
            session: None,
        };
        self.run(caller, machine, new).await
    }

    /// What a new pane of this machine runs: the folder resolved and checked against the
    /// workspaces, the command (a starter's with its hash checked now, just before the spawn),
    /// and what the `pane.create` line says it runs.
    pub(super) async fn resolve_launch(
        &self,
        launch: Launch,
        folder: Option<&str>,
    ) -> Result<Resolved, AppError> {
        let cwd = match folder {
            Some(f) => Some(self.pane_start_folder(f).await?),
            None => None,
        };
        let (command, runs) = match launch {
            Launch::Shell => (Vec::new(), ("command", None)),
            Launch::Command(argv) => {
                let first = argv.first().cloned();
                (argv, ("command", first))
            }
            Launch::Starter(name) => (self.starter_command(&name).await?, ("starter", Some(name))),
            Launch::Row { row, spec } => (self.row_command(&spec).await?, ("row", Some(row))),
        };
        Ok(Resolved { cwd, command, runs })
    }

    /// Keeps pane `pane` of this machine only if its `pane.create` line `rec` is written; closes
    /// it again otherwise (SPEC §7: nothing runs that the log does not show).
    pub(super) async fn keep_if_audited(
        &self,
        rec: AuditRecord,
        pane: &str,
    ) -> Result<(), AppError> {
        if let Err(e) = self.audit(rec).await {
            let pane = pane.to_owned();
            let _ = self
                .panes
                .actor
                .call(|r| PanesMsg::Close { pane, reply: r })
                .await;
            return Err(e);
        }
        Ok(())
    }

    /// The command line of the applied starter `name`: its pinned executable — whose hash is
    /// checked again now, just before the spawn (SPEC §12) — and its arguments.
    async fn starter_command(&self, name: &str) -> Result<Vec<String>, AppError> {
        let starter = self
            .panes
            .starters
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| {
                AppError::BadRequest("starter: no such starter on this machine".into())
            })?;
        let mut command = vec![self.pinned_exec(&starter).await?];
        command.extend(starter.args);
        Ok(command)
    }

    /// The applied starter's executable, once its hash is checked again — now, just before the
    /// spawn (SPEC §12); 409 `starter changed` otherwise.
    pub(super) async fn pinned_exec(
        &self,
        starter: &crate::applied::ResolvedStarter,
    ) -> Result<String, AppError> {
        let exec = starter.exec.clone();
        let hash = tokio::task::spawn_blocking(move || crate::applied::resolve::sha256_file(&exec))
            .await
            .map_err(|e| AppError::Backend(e.to_string()))?;
        if hash.ok().as_deref() != Some(starter.sha256.as_str()) {
            tracing::warn!(
                starter = %starter.name,
                exec = %starter.exec.display(),
                "the starter's executable is not the one applied; not started (run `collie apply`)"
            );
            return Err(AppError::StarterChanged);
        }
        Ok(starter.exec.display().to_string())
    }

    /// The `pane.create` line: the pane, its name, and what it runs (`("command", first word)`
    /// here, `("starter", name)` through the relay).
    pub(super) fn create_record(
        &self,
        caller: &Caller,
        pane: &str,
        name: Option<String>,
        (runs_key, runs): (&str, Option<String>),
    ) -> AuditRecord {
        let mut rec = caller
            .record(self, AuditEventKind::PaneCreate)
            .with_detail("pane", pane.to_owned());
        if let Some(n) = name {
            rec = rec.with_detail("name", n);
        }
        if let Some(runs) = runs {
            rec = rec.with_detail(runs_key, runs);
        }
        rec
    }

    /// [`App::create_record`] naming the tmux session of a new window, if it is one.
    fn created_record(
        &self,
        caller: &Caller,
        pane: &str,
        name: Option<String>,
        runs: (&str, Option<String>),
        session: Option<String>,
    ) -> AuditRecord {
        let rec = self.create_record(caller, pane, name, runs);
        match session {
            Some(session) => rec.with_detail("session", session),
            None => rec,
        }
    }
}
