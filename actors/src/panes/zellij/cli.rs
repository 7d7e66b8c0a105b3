//! What zellij's command line prints, read, and the arguments Collie gives it (issue 34, decision
//! 0083). Pure: no process is started here.
//!
//! zellij 0.44 and later let another program list a session's panes (`action list-panes --json`),
//! follow them (`subscribe --format json --ansi`: one JSON object per line and per change, the
//! whole viewport each time), read their scrollback (`action dump-screen --full --ansi`) and write
//! to them (`action write`, bytes as numbers) — each naming the pane `terminal_<n>` in a session
//! (`zellij --session <name> …`). Everything read here comes from another program, so every reader
//! takes bounded input and answers an error rather than a half-read value.

use serde::Deserialize;

use crate::panes::keys::NamedKey;

/// The oldest zellij whose command line has `subscribe`, `list-panes --json` and `--pane-id` on
/// its actions.
pub const MIN_VERSION: Version = Version(0, 44, 0);

/// The most bytes of one line zellij prints that Collie reads (a subscribe line holds a whole
/// viewport with its colours: a 500 × 200 screen of styled cells stays well under it).
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// A zellij version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// What zellij printed and Collie could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    /// `zellij --version` did not print `zellij <x.y.z>`.
    #[error("not a zellij version: {0:?}")]
    Version(String),
    /// zellij is older than [`MIN_VERSION`].
    #[error("zellij {0} is older than {MIN_VERSION}, which can follow panes")]
    TooOld(Version),
    /// A line or a document was not what this version prints.
    #[error("unreadable zellij output: {0}")]
    Unreadable(String),
    /// More than [`MAX_LINE`] bytes in one line.
    #[error("a zellij line over {MAX_LINE} bytes")]
    TooLong,
}

/// Reads `zellij --version` (`zellij 0.45.1`) and checks it is new enough.
pub fn version(out: &str) -> Result<Version, CliError> {
    let bad = || CliError::Version(out.trim().chars().take(80).collect());
    let number = out.trim().strip_prefix("zellij ").ok_or_else(bad)?;
    // A pre-release (`0.45.0-rc1`) counts as its release.
    let number = number.split(['-', '+']).next().unwrap_or_default();
    let mut parts = number.split('.').map(|p| p.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor)), Some(Ok(patch)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let v = Version(major, minor, patch);
    if v < MIN_VERSION {
        return Err(CliError::TooOld(v));
    }
    Ok(v)
}

/// One session of `zellij list-sessions --no-formatting`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its name (what `--session` takes).
    pub name: String,
    /// Whether it has ended and can only be resurrected (no server runs it: nothing to follow).
    pub exited: bool,
}

/// Reads `zellij list-sessions --no-formatting`: one `<name> [Created <age> ago] <suffix>` per
/// line, the suffix `(EXITED - attach to resurrect)` for an ended session. A line that does not
/// read so is skipped: zellij also prints a note (`No active zellij sessions found.`) there.
pub fn sessions(out: &str) -> Vec<Session> {
    out.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(" [Created ")?;
            let (_, suffix) = rest.split_once(" ago]")?;
            (!name.is_empty()).then(|| Session {
                name: name.to_owned(),
                exited: suffix.contains("EXITED"),
            })
        })
        .collect()
}

/// One pane of `zellij action list-panes --json`, as far as Collie reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Pane {
    /// The pane's number among panes of its kind (`terminal_<id>`).
    pub id: u32,
    /// A plugin pane (the tab bar, the status bar, …): nothing to follow.
    pub is_plugin: bool,
    /// Its title as zellij shows it (the running program's, unless the user named the pane).
    #[serde(default)]
    pub title: String,
    /// Whether its program exited (a command pane held on screen).
    #[serde(default)]
    pub exited: bool,
    /// Whether it is hidden from the user but runs on.
    #[serde(default)]
    pub is_suppressed: bool,
    /// Rows of content (without its frame).
    pub pane_content_rows: usize,
    /// Columns of content.
    pub pane_content_columns: usize,
    /// The cursor, `(x, y)` in the content, when the pane shows it.
    #[serde(default)]
    pub cursor_coordinates_in_pane: Option<(usize, usize)>,
    /// The tab it is in.
    #[serde(default)]
    pub tab_name: String,
    /// The tab's place among the session's tabs.
    #[serde(default)]
    pub tab_position: usize,
    /// The tab's id (what `rename-tab --tab-id` takes).
    #[serde(default)]
    pub tab_id: Option<usize>,
}

/// Reads `zellij action list-panes --json`: the session's terminal panes that run (plugin and
/// suppressed panes are left out), in zellij's order.
pub fn panes(json: &str) -> Result<Vec<Pane>, CliError> {
    if json.len() > MAX_LINE {
        return Err(CliError::TooLong);
    }
    let all: Vec<Pane> =
        serde_json::from_str(json).map_err(|e| CliError::Unreadable(e.to_string()))?;
    Ok(all
        .into_iter()
        .filter(|p| !p.is_plugin && !p.is_suppressed)
        .collect())
}

/// One line of `zellij subscribe --format json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// The pane's viewport changed (or, `initial`, is sent first): every line of it, with its
    /// colours as SGR sequences, and the scrollback asked for on the first one.
    Screen {
        /// The pane's number (`terminal_<n>`).
        pane: u32,
        /// The viewport's lines, top first.
        viewport: Vec<String>,
        /// The scrollback's lines, oldest first, on the first update only.
        scrollback: Option<Vec<String>>,
        /// Whether this is the first update of the subscription.
        initial: bool,
    },
    /// The pane closed.
    Closed {
        /// The pane's number.
        pane: u32,
    },
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    PaneUpdate {
        pane_id: String,
        viewport: Vec<String>,
        #[serde(default)]
        scrollback: Option<Vec<String>>,
        #[serde(default)]
        is_initial: bool,
    },
    PaneClosed {
        pane_id: String,
    },
}

/// Reads one line of `zellij subscribe --format json`. `Ok(None)` for a plugin pane's update
/// (Collie never subscribes to one) or an event this version does not know.
pub fn update(line: &str) -> Result<Option<Update>, CliError> {
    if line.len() > MAX_LINE {
        return Err(CliError::TooLong);
    }
    let Ok(read) = serde_json::from_str::<Line>(line) else {
        // An event a newer zellij adds is not an error; a known one without its fields, or a line
        // that is not such an object, is.
        let unreadable = || CliError::Unreadable(line.chars().take(80).collect());
        let value: serde_json::Value = serde_json::from_str(line).map_err(|_| unreadable())?;
        return match value.get("event").and_then(|e| e.as_str()) {
            Some("pane_update" | "pane_closed") | None => Err(unreadable()),
            Some(_) => Ok(None),
        };
    };
    Ok(match read {
        Line::PaneUpdate {
            pane_id,
            viewport,
            scrollback,
            is_initial,
        } => terminal(&pane_id).map(|pane| Update::Screen {
            pane,
            viewport,
            scrollback,
            initial: is_initial,
        }),
        Line::PaneClosed { pane_id } => terminal(&pane_id).map(|pane| Update::Closed { pane }),
    })
}

/// The number of `terminal_<n>`; `None` for a plugin pane or anything else.
pub fn terminal(pane_id: &str) -> Option<u32> {
    let n = pane_id.strip_prefix("terminal_")?;
    (!n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()))
        .then(|| n.parse().ok())
        .flatten()
}

/// What to write to a pane: text as typed, then named keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// Text, written as its UTF-8 bytes (a control character in it is the phone's to send: the
    /// caller checked it against SPEC §3.2's rules).
    Text(&'a str),
    /// A named key, written as the bytes an xterm sends for it.
    Key(NamedKey),
}

/// The arguments after `zellij --session <name>` that write `input` to pane `pane`: `action write
/// --pane-id terminal_<n> <byte> <byte> …`. Bytes rather than `write-chars` or `send-keys`: the
/// pane gets exactly what a terminal would send, through one path for text and keys alike.
pub fn write_args(pane: u32, input: &Input<'_>) -> Vec<String> {
    let bytes: &[u8] = match input {
        Input::Text(text) => text.as_bytes(),
        Input::Key(key) => key.pty_bytes(),
    };
    let mut args = vec![
        "action".to_owned(),
        "write".to_owned(),
        "--pane-id".to_owned(),
        format!("terminal_{pane}"),
    ];
    args.extend(bytes.iter().map(u8::to_string));
    args
}

/// The arguments after `zellij --session <name>` that follow `panes`: their viewports as JSON
/// lines with colours, and `scrollback` lines of history on the first update of each.
pub fn subscribe_args(panes: &[u32], scrollback: usize) -> Vec<String> {
    let mut args = vec![
        "subscribe".to_owned(),
        "--format".to_owned(),
        "json".to_owned(),
        "--ansi".to_owned(),
        "--scrollback".to_owned(),
        scrollback.to_string(),
        "--pane-id".to_owned(),
    ];
    args.extend(panes.iter().map(|p| format!("terminal_{p}")));
    args
}

/// The whole command line (after `zellij`) that renames tab `tab` of session `session` to
/// `name`; `--` keeps a name that starts with `-` a name.
pub fn rename_tab_args(session: &str, tab: usize, name: &str) -> Vec<String> {
    [
        "--session",
        session,
        "action",
        "rename-tab",
        "--tab-id",
        &tab.to_string(),
        "--",
        name,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The whole command line (after `zellij`) that closes pane `terminal_<pane>` of `session`.
pub fn close_pane_args(session: &str, pane: u32) -> Vec<String> {
    [
        "--session",
        session,
        "action",
        "close-pane",
        "--pane-id",
        &format!("terminal_{pane}"),
    ]
    .map(str::to_owned)
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_read_and_an_old_one_refused() {
        assert_eq!(version("zellij 0.45.1\n"), Ok(Version(0, 45, 1)));
        assert_eq!(version("zellij 0.44.0"), Ok(Version(0, 44, 0)));
        assert_eq!(version("zellij 1.0.0-rc1\n"), Ok(Version(1, 0, 0)));
        assert_eq!(
            version("zellij 0.43.1"),
            Err(CliError::TooOld(Version(0, 43, 1)))
        );
        for bad in [
            "",
            "tmux 3.3a",
            "zellij",
            "zellij 0.45",
            "zellij 0.45.1.2",
            "zellij x.y.z",
        ] {
            assert!(matches!(version(bad), Err(CliError::Version(_))), "{bad:?}");
        }
    }

    #[test]
    fn sessions_are_read_with_their_state_and_notes_are_skipped() {
        let out = "work [Created 3m 2s ago] \n\
                   old one [Created 2days ago] (EXITED - attach to resurrect)\n\
                   me [Created 1s ago] (current)\n\
                   No active zellij sessions found.\n";
        assert_eq!(
            sessions(out),
            [
                Session {
                    name: "work".into(),
                    exited: false
                },
                Session {
                    name: "old one".into(),
                    exited: true
                },
                Session {
                    name: "me".into(),
                    exited: false
                },
            ]
        );
        assert!(sessions("").is_empty());
    }

    #[test]
    fn terminal_panes_are_kept_and_plugins_left_out() {
        let json = r#"[
          {"id":0,"is_plugin":true,"title":"tab-bar","pane_content_rows":1,"pane_content_columns":80,"tab_name":"Tab #1","tab_position":0,"is_suppressed":false},
          {"id":0,"is_plugin":false,"title":"build","exited":false,"is_suppressed":false,"pane_content_rows":22,"pane_content_columns":80,"cursor_coordinates_in_pane":[2,3],"tab_name":"Tab #1","tab_position":0,"is_focused":true,"pane_command":"bash"},
          {"id":1,"is_plugin":false,"title":"bg","is_suppressed":true,"pane_content_rows":22,"pane_content_columns":80}
        ]"#;
        let got = panes(json).expect("panes");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id, 0);
        assert_eq!(got[0].title, "build");
        assert_eq!(
            (got[0].pane_content_rows, got[0].pane_content_columns),
            (22, 80)
        );
        assert_eq!(got[0].cursor_coordinates_in_pane, Some((2, 3)));
        assert!(matches!(panes("{"), Err(CliError::Unreadable(_))));
        assert!(matches!(
            panes(r#"[{"id":"x"}]"#),
            Err(CliError::Unreadable(_))
        ));
        assert_eq!(panes(&" ".repeat(MAX_LINE + 1)), Err(CliError::TooLong));
    }

    #[test]
    fn subscribe_lines_are_read() {
        let first = r#"{"event":"pane_update","pane_id":"terminal_3","viewport":["$ ls","\u001b[31mred\u001b[0m"],"scrollback":["old"],"is_initial":true}"#;
        assert_eq!(
            update(first),
            Ok(Some(Update::Screen {
                pane: 3,
                viewport: vec!["$ ls".into(), "\u{1b}[31mred\u{1b}[0m".into()],
                scrollback: Some(vec!["old".into()]),
                initial: true,
            }))
        );
        let next = r#"{"event":"pane_update","pane_id":"terminal_3","viewport":["x"],"scrollback":null,"is_initial":false}"#;
        assert!(matches!(
            update(next),
            Ok(Some(Update::Screen {
                scrollback: None,
                initial: false,
                ..
            }))
        ));
        assert_eq!(
            update(r#"{"event":"pane_closed","pane_id":"terminal_3"}"#),
            Ok(Some(Update::Closed { pane: 3 }))
        );
        // A plugin's pane, or an event a newer zellij adds: nothing to do.
        assert_eq!(
            update(r#"{"event":"pane_closed","pane_id":"plugin_1"}"#),
            Ok(None)
        );
        assert_eq!(
            update(r#"{"event":"pane_moved","pane_id":"terminal_3"}"#),
            Ok(None)
        );
        for bad in [
            "",
            "not json",
            "[1]",
            r#"{"pane_id":"terminal_1"}"#,
            r#"{"event":"pane_update","pane_id":"terminal_1"}"#,
        ] {
            assert!(
                matches!(update(bad), Err(CliError::Unreadable(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn only_canonical_terminal_ids_are_read() {
        assert_eq!(terminal("terminal_0"), Some(0));
        assert_eq!(terminal("terminal_12"), Some(12));
        for bad in [
            "terminal_",
            "terminal_x",
            "plugin_1",
            "1",
            "terminal_1234567890",
            "terminal_-1",
        ] {
            assert_eq!(terminal(bad), None, "{bad}");
        }
    }

    #[test]
    fn input_is_written_as_the_bytes_a_terminal_sends() {
        assert_eq!(
            write_args(4, &Input::Text("ls é")),
            [
                "action",
                "write",
                "--pane-id",
                "terminal_4",
                "108",
                "115",
                "32",
                "195",
                "169"
            ]
        );
        assert_eq!(
            write_args(0, &Input::Key(NamedKey::Enter)),
            ["action", "write", "--pane-id", "terminal_0", "13"]
        );
        assert_eq!(
            write_args(0, &Input::Key(NamedKey::Up)),
            [
                "action",
                "write",
                "--pane-id",
                "terminal_0",
                "27",
                "91",
                "65"
            ]
        );
        assert_eq!(
            subscribe_args(&[1, 2], 100),
            [
                "subscribe",
                "--format",
                "json",
                "--ansi",
                "--scrollback",
                "100",
                "--pane-id",
                "terminal_1",
                "terminal_2"
            ]
        );
    }
}
