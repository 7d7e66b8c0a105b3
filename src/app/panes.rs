//! Reading panes (SPEC §3.2, §5): the crew's list and a pane's screen, for a pane of this
//! machine or of a member alike, and the checks every machine applies to pane writes. The writes
//! themselves are operations of their own: [`super::pane_writes`] (input, rename, close) and
//! [`super::new_pane`] (every create).

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::panes::actor::{ColourSnapshot, PaneError, PaneInfo};
use collie_actors::panes::keys::{self, NamedKey};
use collie_actors::panes::PanesMsg;
use collie_crew::relay::{RelayKind, RelayOk};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The most scrollback lines a snapshot carries.
pub const MAX_SCROLLBACK: usize = 10_000;

/// A pane's masked screen with up to `scrollback` lines of history (at most
/// [`MAX_SCROLLBACK`]) and its visible rows' colours.
#[derive(Debug, Clone)]
pub struct ReadScreen {
    /// The pane's id.
    pub pane: String,
    /// Scrollback lines wanted.
    pub scrollback: usize,
}

impl Operation for ReadScreen {
    type Output = ColourSnapshot;

    fn op(&self) -> Op {
        Op::PaneSnapshot
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    /// With its colours: every member of a crew of this protocol declares `pane_colour`.
    fn relay(&self) -> Result<RelayKind, AppError> {
        let scrollback = self.scrollback.min(MAX_SCROLLBACK);
        Ok(RelayKind::SnapshotColour {
            pane: self.pane.clone(),
            scrollback: Some(u32::try_from(scrollback).unwrap_or(u32::MAX)),
        })
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<ColourSnapshot, AppError> {
        match ok {
            RelayOk::SnapshotColour(relayed) => Ok(member.own_snapshot(app, relayed)),
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: ColourSnapshot) -> Result<RelayOk, AppError> {
        Ok(RelayOk::SnapshotColour(out))
    }

    fn record(&self, _: &App, _: &Caller, _: &ColourSnapshot) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<ColourSnapshot, AppError> {
        let (pane, scrollback) = (self.pane, self.scrollback.min(MAX_SCROLLBACK));
        Ok(app
            .panes
            .actor
            .call(|reply| PanesMsg::Snapshot {
                pane,
                scrollback,
                reply,
            })
            .await??)
    }
}

/// A machine's panes, named and masked as this machine names them.
#[derive(Debug, Clone, Copy)]
pub struct ListPanes;

impl Operation for ListPanes {
    type Output = Vec<PaneInfo>;

    fn op(&self) -> Op {
        Op::PaneList
    }

    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::PaneList)
    }

    fn answer(&self, app: &App, member: &Member, ok: RelayOk) -> Result<Vec<PaneInfo>, AppError> {
        match ok {
            RelayOk::PaneList(list) => {
                Ok(list.into_iter().map(|p| member.own_pane(app, p)).collect())
            }
            _ => Err(AppError::MemberUnreadable),
        }
    }

    fn reply(out: Vec<PaneInfo>) -> Result<RelayOk, AppError> {
        Ok(RelayOk::PaneList(out))
    }

    fn record(&self, _: &App, _: &Caller, _: &Vec<PaneInfo>) -> Option<AuditRecord> {
        None
    }

    async fn local(self, app: &App, _: &Caller) -> Result<Vec<PaneInfo>, AppError> {
        app.local_panes().await
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

/// The audit event of renaming pane `id`: a tmux pane (`t<i>-<n>`) is named by its window and a
/// zellij pane (`z<i>-<n>`) by its tab, so renaming either renames the tab (`tab.rename`); a hosted
/// pane's name is its own (`pane.rename`). The id says which, so the lead names a member's rename
/// right without asking.
pub fn rename_event(id: &str) -> AuditEventKind {
    if id.starts_with('t') || id.starts_with('z') {
        AuditEventKind::TabRename
    } else {
        AuditEventKind::PaneRename
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
    /// [`ReadScreen`] of `pane` on `machine`.
    pub async fn snapshot(
        &self,
        caller: &Caller,
        machine: &str,
        pane: String,
        scrollback: usize,
    ) -> Result<ColourSnapshot, AppError> {
        self.run(caller, machine, ReadScreen { pane, scrollback })
            .await
    }

    /// This machine's panes.
    pub async fn local_panes(&self) -> Result<Vec<PaneInfo>, AppError> {
        let panes = self.panes.actor.call(PanesMsg::List).await?;
        Ok(self.with_activity(panes).await)
    }

    /// One pane of this machine (without listing them all).
    pub async fn pane_info(&self, pane: &str) -> Result<PaneInfo, AppError> {
        let pane = pane.to_owned();
        Ok(self
            .panes
            .actor
            .call(|reply| PanesMsg::Info { pane, reply })
            .await??)
    }

    /// Every pane: this machine's and each online member's, asked at once ([`ListPanes`]); members that are
    /// offline or did not answer are listed as unreachable.
    pub async fn pane_list(&self, caller: &Caller) -> Result<PaneList, AppError> {
        let gathered = self.run_everywhere(caller, ListPanes).await?;
        let mut panes = gathered.here;
        let mut unreachable: Vec<String> = self
            .crew
            .view
            .load()
            .members
            .iter()
            .filter(|m| !gathered.members.iter().any(|(name, _)| *name == m.name))
            .map(|m| m.name.clone())
            .collect();
        for (member, answer) in gathered.members {
            match answer {
                Ok(list) => panes.extend(list),
                Err(e) => {
                    tracing::info!(%member, answer = ?e, "member panes missing");
                    unreachable.push(member);
                }
            }
        }
        unreachable.sort();
        Ok(PaneList { panes, unreachable })
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
