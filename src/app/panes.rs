//! Pane operations (SPEC §3.2, §5): list, snapshot, input, create, rename, close — each one
//! function that validates, audits and runs, for a pane of this machine or of a member alike.
//!
//! **On this machine** a write is audited before it happens and refused when its line cannot be
//! written (`503 audit unavailable`) — except `pane.create`, written once the pane exists (SPEC
//! §7: a line is written for what happened; a refused create is `resource.denied`).
//!
//! **For a member** the lead checks the input first (bad input costs no round trip), relays the
//! write, and writes its own line only once the member answered that the write happened — with
//! the member's name as `machine` and the request id the member's own line carries (decision
//! 0052). The member audits first on its own machine and refuses when it cannot. A refusal leaves
//! on the lead what §7 says for it, as on this machine: nothing for a plain refusal (`no such
//! pane`, bad input, `capability missing`), `resource.denied` for a cap.
//!
//! **One create.** A hosted pane, a pane in a chosen folder, a starter row's pane and a new tmux
//! window ([`super::windows`]) are one operation, [`App::create`]: a window is a create with a
//! session.

use collie_actors::audit::{typed_text_detail, AuditEventKind, AuditRecord};
use collie_actors::panes::actor::{ColourSnapshot, PaneError, PaneInfo};
use collie_actors::panes::keys::{self, NamedKey};
use collie_actors::panes::PanesMsg;
use collie_crew::hello::Capability;
use collie_crew::relay::{RelayError, RelayKind, RelayOk, RowSpec};
use futures_util::future::join_all;
use serde_json::Value;

use super::machine::{Machine, Member};
use super::ops::Op;
use super::windows::{no_such_session, parse_session};
use super::{App, AppError, Caller};

/// The most scrollback lines a snapshot carries.
pub const MAX_SCROLLBACK: usize = 10_000;

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

/// A create as every adapter asks for it ([`App::create`]).
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
    /// The relay request that asks a member for this create: a starter (by name), a row or the
    /// shell — never a command line, which runs only on its own machine.
    fn relay_kind(&self) -> Result<RelayKind, AppError> {
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
}

/// Every pane the caller can reach, and the members whose panes are missing.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PaneList {
    /// This machine's panes, then each online member's.
    pub panes: Vec<PaneInfo>,
    /// Members that are offline or did not answer in time.
    pub unreachable: Vec<String>,
}

/// Splits a pane address as the CLI accepts it — `pane`, `machine/pane`, either with `#token` —
/// into the machine (`local` when none is named) and the pane id.
pub fn split_address(address: &str) -> (&str, &str) {
    let place = address.split('#').next().unwrap_or(address);
    place.split_once('/').unwrap_or(("local", place))
}

/// Checks input the way every machine does (SPEC §3.2): text at most 64 KiB, keys from the fixed
/// list, something to send.
pub fn validate_input(text: &str, key_names: &[String]) -> Result<Vec<NamedKey>, AppError> {
    keys::validate_text(text).map_err(|e| AppError::BadRequest(e.to_string()))?;
    if key_names.len() > 256 {
        return Err(AppError::BadRequest("too many keys (at most 256)".into()));
    }
    let keys: Vec<NamedKey> = key_names
        .iter()
        .map(|k| NamedKey::parse(k))
        .collect::<Result<_, _>>()
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    if text.is_empty() && keys.is_empty() {
        return Err(AppError::BadRequest(
            "nothing to send: give text or keys".into(),
        ));
    }
    Ok(keys)
}

/// A pane name: 1-64 characters, no control characters.
pub fn validate_pane_name(n: &str) -> Result<(), AppError> {
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) {
        return Err(AppError::BadRequest(
            "invalid name: 1-64 characters, no control characters".into(),
        ));
    }
    Ok(())
}

/// The audit event of renaming pane `id`: a tmux pane (`t<i>-<n>`) is named by its window, so
/// renaming it renames the tab (`tab.rename`); a hosted pane's name is its own (`pane.rename`).
/// The id says which, so the lead names a member's rename right without asking.
pub fn rename_event(id: &str) -> AuditEventKind {
    if id.starts_with('t') {
        AuditEventKind::TabRename
    } else {
        AuditEventKind::PaneRename
    }
}

/// The details of a `pane.input` line: typed text only as a preview (SPEC §7), key names.
fn input_record(rec: AuditRecord, pane: &str, text: &str, keys: &[NamedKey]) -> AuditRecord {
    let mut rec = rec.with_detail("pane", pane.to_owned());
    if !text.is_empty() {
        rec = rec.with_detail("text", typed_text_detail(text));
    }
    if !keys.is_empty() {
        rec = rec.with_detail(
            "keys",
            Value::Array(keys.iter().map(|k| Value::from(k.as_str())).collect()),
        );
    }
    rec
}

/// A `pane.create` line with the folder the pane started in, if one was chosen.
pub(super) fn with_folder(rec: AuditRecord, folder: Option<String>) -> AuditRecord {
    match folder {
        Some(f) => rec.with_detail("folder", f),
        None => rec,
    }
}

impl From<PaneError> for AppError {
    fn from(e: PaneError) -> Self {
        match e {
            PaneError::NoSuchPane => AppError::NoSuchPane,
            PaneError::ResourceLimit(_) => AppError::ResourceLimit,
            PaneError::BadInput(m) => AppError::BadRequest(m),
            PaneError::ScreenChanged => AppError::ScreenChanged,
            // tmux's stderr, a pty that would not spawn: not the caller's fault, and not for a
            // phone to read (SPEC §3.2).
            other => AppError::backend("pane operation failed", other),
        }
    }
}

impl App {
    /// The lead's line of a write `member` answered it did, named by the member (see the module
    /// docs; what becomes of a line this machine cannot write: [`App::audit_done`]).
    pub(super) async fn audit_done_on(
        &self,
        member: &Member,
        mut rec: AuditRecord,
    ) -> Result<(), AppError> {
        rec.machine = member.name().to_owned();
        self.audit_done(rec).await
    }

    /// Relays write `kind` to `member` and answers what the member answered. A refusal at a cap
    /// is audited `resource.denied` here too (naming the member), as a local one is; any other
    /// refusal leaves no line here — the member wrote what it did, if anything.
    pub(super) async fn relay_write(
        &self,
        caller: &Caller,
        member: &Member,
        kind: RelayKind,
    ) -> Result<RelayOk, AppError> {
        match member.call(caller.on(), kind).await {
            Ok(answer) => Ok(answer),
            Err(RelayError::ResourceLimit) => {
                let mut rec = caller
                    .record(self, AuditEventKind::ResourceDenied)
                    .with_detail("reason", "member limit");
                rec.machine = member.name().to_owned();
                // Refused either way; an unwritable log only loses the line.
                let _ = self.audit(rec).await;
                Err(AppError::ResourceLimit)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// [`App::relay_write`] of a write the member answers with `Done`.
    async fn relay_done(
        &self,
        caller: &Caller,
        member: &Member,
        kind: RelayKind,
    ) -> Result<(), AppError> {
        match self.relay_write(caller, member, kind).await? {
            RelayOk::Done => Ok(()),
            _ => Err(AppError::MemberUnreadable),
        }
    }

    /// This machine's panes.
    pub async fn local_panes(&self) -> Result<Vec<PaneInfo>, AppError> {
        Ok(self.panes.call(PanesMsg::List).await?)
    }

    /// One pane of this machine (without listing them all).
    pub async fn pane_info(&self, pane: &str) -> Result<PaneInfo, AppError> {
        let pane = pane.to_owned();
        Ok(self
            .panes
            .call(|reply| PanesMsg::Info { pane, reply })
            .await??)
    }

    /// Every pane: this machine's and each online member's, asked at once; members that are
    /// offline or did not answer are listed as unreachable.
    pub async fn pane_list(&self, caller: &Caller) -> Result<PaneList, AppError> {
        self.authorize(caller, Op::PaneList)?;
        let members = self.online_members();
        let (local, answers) = tokio::join!(
            self.local_panes(),
            join_all(
                members
                    .iter()
                    .map(|m| async move { (m, m.panes(self, caller.on()).await) })
            )
        );
        let mut panes = local?;
        let mut unreachable: Vec<String> = self
            .crew_view
            .load()
            .members
            .iter()
            .filter(|m| !members.iter().any(|o| o.name() == m.name))
            .map(|m| m.name.clone())
            .collect();
        for (member, answer) in answers {
            match answer {
                Ok(list) => panes.extend(list),
                Err(e) => {
                    tracing::info!(member = %member.name(), answer = ?e, "member panes missing");
                    unreachable.push(member.name().to_owned());
                }
            }
        }
        unreachable.sort();
        Ok(PaneList { panes, unreachable })
    }

    /// A pane's masked screen with up to `scrollback` lines of history (at most
    /// [`MAX_SCROLLBACK`]) and its visible rows' colours.
    pub async fn snapshot(
        &self,
        caller: &Caller,
        machine: &str,
        pane: String,
        scrollback: usize,
    ) -> Result<ColourSnapshot, AppError> {
        self.authorize(caller, Op::PaneSnapshot)?;
        let scrollback = scrollback.min(MAX_SCROLLBACK);
        match self.machine(machine)? {
            Machine::Local => Ok(self
                .panes
                .call(|r| PanesMsg::Snapshot {
                    pane,
                    scrollback,
                    reply: r,
                })
                .await??),
            Machine::Member(member) => member.snapshot(self, caller.on(), pane, scrollback).await,
        }
    }

    /// Types `text`, then presses `keys`. Here: audited first, refused when the audit line cannot
    /// be written. On a member: audited here once the member typed it.
    pub async fn input(
        &self,
        caller: &Caller,
        machine: &str,
        pane: String,
        text: String,
        key_names: Vec<String>,
    ) -> Result<(), AppError> {
        self.authorize(caller, Op::PaneInput)?;
        let machine = self.machine(machine)?;
        if let Machine::Member(member) = &machine {
            member.has(Capability::PaneInput)?;
        }
        let keys = validate_input(&text, &key_names)?;
        match machine {
            Machine::Local => {
                let info = self.pane_info(&pane).await?;
                let rec = input_record(
                    caller.record(self, AuditEventKind::PaneInput),
                    &info.pane,
                    &text,
                    &keys,
                );
                self.audit(rec).await?;
                // The sent log's lines, if a shell at its prompt is about to read them (asked
                // before typing: once Enter is pressed the command is in the foreground).
                let sent = self.lines_for_shell(&info.pane, &text, &keys).await;
                self.panes
                    .call(|r| PanesMsg::Input {
                        pane,
                        text,
                        keys,
                        reply: r,
                    })
                    .await??;
                if !sent.is_empty() {
                    self.record_sent(&info.pane, sent).await;
                }
                Ok(())
            }
            Machine::Member(member) => {
                let rec = input_record(
                    caller.record(self, AuditEventKind::PaneInput),
                    &pane,
                    &text,
                    &keys,
                );
                let kind = RelayKind::Input {
                    pane,
                    text: (!text.is_empty()).then_some(text),
                    keys: key_names,
                };
                self.relay_done(caller, &member, kind).await?;
                self.audit_done_on(&member, rec).await
            }
        }
    }

    /// Starts a pane running `launch`. `pane.create` is written once the pane exists; if that
    /// line cannot be written the pane is closed again and the create refused. A refusal at a cap
    /// is `resource.denied`, naming the device and the request.
    pub async fn create_pane(
        &self,
        caller: &Caller,
        machine: &str,
        name: Option<String>,
        launch: Launch,
    ) -> Result<PaneInfo, AppError> {
        let new = NewPane {
            name,
            launch,
            folder: None,
            session: None,
        };
        self.create(caller, machine, new).await
    }

    /// [`App::create_pane`] in `folder` (absolute or `~/…`; `None`: the home folder), which must
    /// be a folder inside one of the machine's own workspaces ([`super::browse`]). `pane.create`
    /// names the folder.
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
        self.create(caller, machine, new).await
    }

    /// Opens `launch` (a starter, the user's shell, or — on this machine only — a command line)
    /// as a new window named `name` of the tmux session `session` on `machine`, in `folder` (as
    /// for a hosted pane: inside one of the machine's workspaces; `None`: tmux's choice, the
    /// session's folder). A starter's executable hash is checked again just before the spawn.
    /// Answers the mirrored pane ([`super::windows`]). The one create path with a session.
    pub async fn create_window(
        &self,
        caller: &Caller,
        machine: &str,
        session: String,
        name: Option<String>,
        launch: Launch,
        folder: Option<String>,
    ) -> Result<PaneInfo, AppError> {
        let new = NewPane {
            name,
            launch,
            folder,
            session: Some(session),
        };
        self.create(caller, machine, new).await
    }

    /// Every create (see the module docs): checks the request, opens the pane or window on this
    /// machine or relays it to a member, and writes `pane.create` once it exists — here and, for a
    /// member, on the member too. If this machine's line cannot be written, the pane is closed
    /// again (on the member too) and the create refused. A refusal at a cap is `resource.denied`
    /// here, whichever machine refused.
    pub async fn create(
        &self,
        caller: &Caller,
        machine: &str,
        new: NewPane,
    ) -> Result<PaneInfo, AppError> {
        self.authorize(caller, Op::PaneCreate)?;
        self.row_rules(&new.launch)?;
        let machine = self.machine(machine)?;
        if new.session.is_some() && matches!(new.launch, Launch::Row { .. }) {
            // `CreateWindow` carries a starter's name only: a row would reach a member as a shell.
            return Err(AppError::BadRequest(
                "a starter row opens a pane, not a window".into(),
            ));
        }
        let relayed = match machine {
            Machine::Local => None,
            Machine::Member(member) => {
                let kind = new.relay_kind()?;
                member.allows(&kind)?;
                Some((member, kind))
            }
        };
        let session = match &new.session {
            Some(s) => Some(parse_session(s).map(|(i, n)| (i, n.to_owned()))?),
            None => None,
        };
        if let Some(n) = &new.name {
            validate_pane_name(n)?;
        }
        if let Some(f) = &new.folder {
            super::browse::validate_path("folder", f, true)?;
        }
        let NewPane {
            name,
            launch,
            folder,
            session: shown_session,
        } = new;
        if let Some((member, kind)) = relayed {
            let runs = match &launch {
                Launch::Row { row, .. } => ("row", Some(row.clone())),
                Launch::Starter(s) => ("starter", Some(s.clone())),
                _ => ("starter", None),
            };
            let info = match self.relay_write(caller, &member, kind).await? {
                RelayOk::Created(info) => member.own_pane(self, info),
                _ => return Err(AppError::MemberUnreadable),
            };
            let rec = self.created_record(caller, &info.pane, name, runs, shown_session);
            let rec = with_folder(rec, folder);
            self.keep_if_audited_on(caller, &member, rec, &info.pane)
                .await?;
            return Ok(info);
        }
        if let Some((socket, session_name)) = &session {
            // Known before anything is resolved or checked: an unknown session costs nothing.
            self.known_session(*socket, session_name).await?;
        }
        let line = Self::row_line(&launch);
        let Resolved { cwd, command, runs } =
            self.resolve_launch(launch, folder.as_deref()).await?;
        let created = match session {
            Some((socket, session_name)) => {
                self.panes
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
                self.panes
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
                    .record(self, AuditEventKind::ResourceDenied)
                    .with_detail("reason", cap);
                // Refused either way; an unwritable log only loses the line.
                let _ = self.audit(rec).await;
                return Err(AppError::ResourceLimit);
            }
            // Gone between the check and the spawn.
            Err(PaneError::NoSuchSession) => return Err(no_such_session()),
            Err(e) => return Err(e.into()),
        };
        let rec = self.created_record(caller, &info.pane, name, runs, shown_session);
        let rec = with_folder(rec, cwd.map(|d| d.display().to_string()));
        self.keep_if_audited(rec, &info.pane).await?;
        self.type_row_line(&info.pane, line).await?;
        Ok(info)
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
                .call(|r| PanesMsg::Close { pane, reply: r })
                .await;
            return Err(e);
        }
        Ok(())
    }

    /// [`App::keep_if_audited`] for a pane of `member`, once the member opened it and wrote its
    /// own line: the line is written here, and the pane closed again on the member if it cannot
    /// be (a create can be taken back, unlike a keystroke; decision 0052).
    async fn keep_if_audited_on(
        &self,
        caller: &Caller,
        member: &Member,
        mut rec: AuditRecord,
        pane: &str,
    ) -> Result<(), AppError> {
        rec.machine = member.name().to_owned();
        if let Err(e) = self.audit(rec).await {
            tracing::error!(
                pane,
                member = member.name(),
                request_id = caller.request_id(),
                "a member's pane.create could not be audited here; closing the pane again"
            );
            let kind = RelayKind::Close {
                pane: pane.to_owned(),
            };
            let _ = member.call(caller.on(), kind).await;
            return Err(e);
        }
        Ok(())
    }

    /// The command line of the applied starter `name`: its pinned executable — whose hash is
    /// checked again now, just before the spawn (SPEC §12) — and its arguments.
    async fn starter_command(&self, name: &str) -> Result<Vec<String>, AppError> {
        let starter = self
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

    /// Renames a pane (a tmux pane's window: `tab.rename`). Here: audited first. On a member:
    /// audited here once the member renamed it.
    pub async fn rename_pane(
        &self,
        caller: &Caller,
        machine: &str,
        pane: String,
        name: String,
    ) -> Result<(), AppError> {
        self.authorize(caller, Op::PaneRename)?;
        let machine = self.machine(machine)?;
        if let Machine::Member(member) = &machine {
            member.has(Capability::PaneRename)?;
        }
        validate_pane_name(&name)?;
        match machine {
            Machine::Local => {
                let info = self.pane_info(&pane).await?;
                self.audit(
                    caller
                        .record(self, rename_event(&info.pane))
                        .with_detail("pane", info.pane.clone())
                        .with_detail("name", name.clone()),
                )
                .await?;
                Ok(self
                    .panes
                    .call(|r| PanesMsg::Rename {
                        pane,
                        name,
                        reply: r,
                    })
                    .await??)
            }
            Machine::Member(member) => {
                let rec = caller
                    .record(self, rename_event(&pane))
                    .with_detail("pane", pane.clone())
                    .with_detail("name", name.clone());
                self.relay_done(caller, &member, RelayKind::Rename { pane, name })
                    .await?;
                self.audit_done_on(&member, rec).await
            }
        }
    }

    /// Closes a pane. Here: audited first. On a member: audited here once the member closed it.
    pub async fn close_pane(
        &self,
        caller: &Caller,
        machine: &str,
        pane: String,
    ) -> Result<(), AppError> {
        self.authorize(caller, Op::PaneClose)?;
        match self.machine(machine)? {
            Machine::Local => {
                let info = self.pane_info(&pane).await?;
                self.audit(
                    caller
                        .record(self, AuditEventKind::PaneClose)
                        .with_detail("pane", info.pane.clone()),
                )
                .await?;
                Ok(self
                    .panes
                    .call(|r| PanesMsg::Close { pane, reply: r })
                    .await??)
            }
            Machine::Member(member) => {
                let kind = RelayKind::Close { pane: pane.clone() };
                member.allows(&kind)?;
                let rec = caller
                    .record(self, AuditEventKind::PaneClose)
                    .with_detail("pane", pane);
                self.relay_done(caller, &member, kind).await?;
                self.audit_done_on(&member, rec).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_into_machine_and_pane() {
        assert_eq!(split_address("t0-3"), ("local", "t0-3"));
        assert_eq!(split_address("web-1/t0-3"), ("web-1", "t0-3"));
        assert_eq!(split_address("web-1/p2#ab2d"), ("web-1", "p2"));
        assert_eq!(split_address("p2#ab2d"), ("local", "p2"));
    }

    #[test]
    fn input_is_checked_before_anything_runs() {
        assert!(validate_input("", &[]).is_err());
        assert!(validate_input("x", &["Nope".into()]).is_err());
        assert!(validate_input("", &vec!["Enter".to_owned(); 257]).is_err());
        assert_eq!(
            validate_input("ls", &["Enter".into()]).expect("valid"),
            vec![NamedKey::Enter]
        );
    }
}
