//! The control socket's panes: `collie panes list`, `new` and `read`. The adapter's own types,
//! converted from the pane actor's here, so a change to the actor's type is a compile error at
//! this conversion rather than a silent change of what the CLI prints.

use collie_actors::panes::actor::{Cursor, PaneInfo, PaneSnapshot};
use collie_crew::relay::Activity;
use serde::{Deserialize, Serialize};

/// `collie panes list`: this machine's panes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Panes {
    /// The panes.
    pub panes: Vec<Pane>,
}

/// One pane, as `collie panes list` and `collie panes new` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pane {
    /// The machine's name.
    pub machine: String,
    /// Pane id (`t0-3`, `p1`).
    pub pane: String,
    /// 4-character instance token.
    pub token: String,
    /// User-given name, masked.
    pub name: String,
    /// `tmux` or `pty`.
    pub backend: String,
    /// Whether the program still runs.
    pub alive: bool,
    /// Width.
    pub cols: u16,
    /// Height.
    pub rows: u16,
    /// RFC 3339 time of the last output.
    pub last_activity: Option<String>,
    /// Best-effort password prompt detection.
    pub asking_password: bool,
    /// The pane's foreground process is a shell.
    pub at_shell: bool,
    /// Waiting for a person, working or idle (SPEC §3.2).
    #[serde(default)]
    pub activity: Activity,
}

impl From<PaneInfo> for Pane {
    fn from(p: PaneInfo) -> Self {
        let PaneInfo {
            machine,
            pane,
            token,
            name,
            backend,
            alive,
            cols,
            rows,
            last_activity,
            asking_password,
            at_shell,
            activity,
        } = p;
        Pane {
            machine,
            pane,
            token,
            name,
            backend,
            alive,
            cols,
            rows,
            last_activity,
            asking_password,
            at_shell,
            activity,
        }
    }
}

impl Panes {
    /// The list of `panes`.
    pub fn of(panes: Vec<PaneInfo>) -> Self {
        Panes {
            panes: panes.into_iter().map(Pane::from).collect(),
        }
    }
}

/// `collie panes read`: a pane's masked screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Screen {
    /// The machine's name.
    pub machine: String,
    /// Pane id.
    pub pane: String,
    /// Instance token.
    pub token: String,
    /// Name, masked.
    pub name: String,
    /// Width.
    pub cols: u16,
    /// Height.
    pub rows: u16,
    /// The cursor.
    pub cursor: At,
    /// Visible rows, masked.
    pub lines: Vec<String>,
    /// Scrollback lines, oldest first, masked.
    pub scrollback: Vec<String>,
    /// Change counter.
    pub seq: u64,
}

/// A cursor position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct At {
    /// Column.
    pub x: u16,
    /// Row.
    pub y: u16,
}

impl From<PaneSnapshot> for Screen {
    fn from(s: PaneSnapshot) -> Self {
        let PaneSnapshot {
            machine,
            pane,
            token,
            name,
            cols,
            rows,
            cursor: Cursor { x, y },
            lines,
            scrollback,
            seq,
        } = s;
        Screen {
            machine,
            pane,
            token,
            name,
            cols,
            rows,
            cursor: At { x, y },
            lines,
            scrollback,
            seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the CLI prints with `--json` is the actor's shape to the byte.
    #[test]
    fn the_replies_serialize_as_the_actor_types_did() {
        let info = PaneInfo {
            machine: "box".into(),
            pane: "t0-3".into(),
            token: "ab12".into(),
            name: "claude".into(),
            backend: "tmux".into(),
            alive: true,
            cols: 80,
            rows: 24,
            last_activity: Some("2026-12-06T12:00:00Z".into()),
            asking_password: false,
            at_shell: true,
            activity: Activity::Working,
        };
        let ours = serde_json::to_string(&Pane::from(info.clone())).expect("json");
        assert_eq!(ours, serde_json::to_string(&info).expect("json"));
        let snapshot = PaneSnapshot {
            machine: "box".into(),
            pane: "p1".into(),
            token: "cd34".into(),
            name: "sh".into(),
            cols: 80,
            rows: 2,
            cursor: Cursor { x: 3, y: 1 },
            lines: vec!["$ ls".into(), "a b".into()],
            scrollback: vec!["old".into()],
            seq: 7,
        };
        let ours = serde_json::to_string(&Screen::from(snapshot.clone())).expect("json");
        assert_eq!(ours, serde_json::to_string(&snapshot).expect("json"));
    }
}
