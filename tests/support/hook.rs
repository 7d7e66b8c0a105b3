#![allow(dead_code, unreachable_pub)]
//! The held-permission hook as Claude Code runs it: `collie hook claude-permission` in a new tmux
//! window of a test bridge's server, with Claude Code's PermissionRequest input on stdin. The
//! window's name is the pane's user-given name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{collie_bin, wait_for, TestBridge};

/// Claude Code's PermissionRequest input for a Bash call of `command` in session `session`.
pub fn bash_request(session: &str, command: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/tmp/none.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it"},
        "permission_suggestions": []
    })
}

/// The shell line that runs the hook as Claude Code does, for `b`: `input` on its stdin, its
/// stdout to `out`, its exit code to `done` once it returns.
pub fn script(b: &TestBridge, input: &Path, out: &Path, done: &Path) -> String {
    let dir = b.dir.path();
    format!(
        "env HOME={home} COLLIE_STATE_DIR={state} COLLIE_CONFIG_DIR={config} {collie} hook \
         claude-permission < {input} > {out}; echo $? > {done}",
        home = dir.join("home").display(),
        state = b.state().display(),
        config = dir.join("config").display(),
        collie = collie_bin().display(),
        input = input.display(),
        out = out.display(),
        done = done.display(),
    )
}

/// A hook run in a new tmux window of `b`'s server: its stdin is `request`, its stdout goes to
/// `<dir>/<name>.out`, and `<dir>/<name>.done` appears when it exits.
pub struct Hook {
    pub out: PathBuf,
    pub done: PathBuf,
    pub window: String,
}

impl Hook {
    /// Starts the hook in a new window `name` of `b`'s tmux server.
    pub fn start(b: &TestBridge, name: &str, request: &Value) -> Hook {
        Hook::start_under(b, name, request, &[])
    }

    /// As [`Hook::start`], with `args` after the `sh -c` script: they are the shell's own
    /// arguments, so they show in the hook's parent's command line.
    pub fn start_under(b: &TestBridge, name: &str, request: &Value, args: &[&str]) -> Hook {
        let dir = b.dir.path();
        let input = dir.join(format!("{name}.json"));
        std::fs::write(&input, request.to_string()).expect("hook input");
        let out = dir.join(format!("{name}.out"));
        let done = dir.join(format!("{name}.done"));
        let script = script(b, &input, &out, &done);
        let status = b
            .tmux
            .as_ref()
            .expect("tmux")
            .cmd()
            .args(["new-window", "-d", "-n", name, "sh", "-c", &script])
            .args(args)
            .status()
            .expect("tmux new-window");
        assert!(status.success());
        Hook {
            out,
            done,
            window: format!("main:{name}"),
        }
    }

    /// What the hook printed once it exited (and its exit code).
    pub fn finished(&self) -> (String, String) {
        // The shell creates the file before it writes the code: wait for the whole line.
        wait_for(Duration::from_secs(20), || {
            std::fs::read_to_string(&self.done)
                .ok()
                .filter(|code| code.ends_with('\n'))
        })
        .expect("the hook did not exit");
        let code = std::fs::read_to_string(&self.done).unwrap_or_default();
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        (out, code.trim().to_owned())
    }

    pub fn running(&self) -> bool {
        !self.done.exists()
    }
}

/// The waiting card of `b` (as `token` sees it) whose pane is named `pane_name`, once it shows.
pub fn card_named(b: &TestBridge, token: &str, pane_name: &str) -> Value {
    wait_for(Duration::from_secs(15), || {
        let (status, v) = b.get("/api/cards", Some(token));
        assert_eq!(status, 200, "{v}");
        v["cards"]
            .as_array()?
            .iter()
            .find(|c| c["pane_name"] == pane_name)
            .cloned()
    })
    .unwrap_or_else(|| panic!("no card from the pane {pane_name}"))
}
