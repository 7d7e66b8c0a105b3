//! Panes and tmux sessions as the phone API answers them (`GET /api/panes`, a create's answer,
//! `GET /api/sessions/{m}`).

use collie_crew::relay::{Activity, PaneInfo, TmuxSession};
use serde::Serialize;

use crate::app::commands::CommandRan as AppCommandRan;
use crate::app::panes::PaneList as AppPaneList;
use crate::app::windows::SessionList as AppSessionList;

/// One pane.
#[derive(Debug, Serialize)]
pub struct Pane {
    machine: String,
    pane: String,
    token: String,
    name: String,
    backend: String,
    alive: bool,
    cols: u16,
    rows: u16,
    last_activity: Option<String>,
    asking_password: bool,
    at_shell: bool,
    activity: Activity,
}

impl From<PaneInfo> for Pane {
    fn from(p: PaneInfo) -> Self {
        Pane {
            machine: p.machine,
            pane: p.pane,
            token: p.token,
            name: p.name,
            backend: p.backend,
            alive: p.alive,
            cols: p.cols,
            rows: p.rows,
            last_activity: p.last_activity,
            asking_password: p.asking_password,
            at_shell: p.at_shell,
            activity: p.activity,
        }
    }
}

/// `GET /api/panes`.
#[derive(Debug, Serialize)]
pub struct PaneList {
    panes: Vec<Pane>,
    unreachable: Vec<String>,
}

impl From<AppPaneList> for PaneList {
    fn from(list: AppPaneList) -> Self {
        PaneList {
            panes: list.panes.into_iter().map(Pane::from).collect(),
            unreachable: list.unreachable,
        }
    }
}

/// `POST /api/commands`: the machine and the pane the command runs in.
#[derive(Debug, Serialize)]
pub struct CommandRan {
    machine: String,
    pane: Pane,
}

impl From<AppCommandRan> for CommandRan {
    fn from(ran: AppCommandRan) -> Self {
        CommandRan {
            machine: ran.machine,
            pane: Pane::from(ran.pane),
        }
    }
}

/// One tmux session.
#[derive(Debug, Serialize)]
pub struct Session {
    session: String,
    name: String,
    socket: u32,
}

/// `GET /api/sessions/{m}`.
#[derive(Debug, Serialize)]
pub struct SessionList {
    machine: String,
    sessions: Vec<Session>,
}

impl From<AppSessionList> for SessionList {
    fn from(list: AppSessionList) -> Self {
        SessionList {
            machine: list.machine,
            sessions: list
                .sessions
                .into_iter()
                .map(|s: TmuxSession| Session {
                    session: s.session,
                    name: s.name,
                    socket: s.socket,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pane(last_activity: Option<&str>, at_shell: bool) -> PaneInfo {
        PaneInfo {
            machine: "web-1".into(),
            pane: "t0-3".into(),
            token: "ab12".into(),
            name: "build \"x\"".into(),
            backend: "tmux".into(),
            alive: true,
            cols: 80,
            rows: 24,
            last_activity: last_activity.map(str::to_owned),
            asking_password: false,
            at_shell,
            activity: Activity::Idle,
        }
    }

    #[test]
    fn a_pane_list_is_the_json_it_was() {
        for p in [pane(None, false), pane(Some("2026-12-06T09:00:00Z"), true)] {
            let list = AppPaneList {
                panes: vec![p.clone()],
                unreachable: vec!["db-2".into()],
            };
            let before = serde_json::to_string(&list).unwrap();
            assert_eq!(
                serde_json::to_string(&PaneList::from(list)).unwrap(),
                before
            );
            let before = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::to_string(&Pane::from(p)).unwrap(), before);
        }
    }

    #[test]
    fn a_command_s_pane_is_the_json_it_was() {
        let ran = AppCommandRan {
            machine: "web-1".into(),
            pane: pane(None, true),
        };
        let before = serde_json::to_string(&ran).unwrap();
        assert_eq!(
            serde_json::to_string(&CommandRan::from(ran)).unwrap(),
            before
        );
    }

    #[test]
    fn a_session_list_is_the_json_it_was() {
        let list = AppSessionList {
            machine: "local".into(),
            sessions: vec![TmuxSession {
                session: "t1:main".into(),
                name: "main".into(),
                socket: 1,
            }],
        };
        let before = serde_json::to_string(&list).unwrap();
        assert_eq!(
            serde_json::to_string(&SessionList::from(list)).unwrap(),
            before
        );
    }
}
