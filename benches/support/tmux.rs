//! A private tmux server for the end-to-end benches: a member bridge mirrors it
//! (`COLLIE_TMUX_SOCKETS`), and nothing of the user's tmux setup is read or shown.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A private tmux server (`tmux -f /dev/null -S <dir>/tmux.sock`); `kill-server` on drop.
pub(crate) struct Tmux {
    pub(crate) socket: PathBuf,
}

impl Tmux {
    /// Starts the server in `dir` with session `main`, `cols` × `rows`, whose first window `name`
    /// runs `command`. Panes run `sh` (`SHELL=/bin/sh`, `ENV=/dev/null`, a private `HOME`), so no
    /// rc file of the machine runs.
    pub(crate) fn start(dir: &Path, cols: usize, rows: usize, name: &str, command: &str) -> Tmux {
        let tmux = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let (cols, rows) = (cols.to_string(), rows.to_string());
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            &cols,
            "-y",
            &rows,
            "-n",
            name,
            command,
        ]);
        tmux
    }

    /// Opens window `name` running `command` in session `main`, in the background.
    pub(crate) fn window(&self, name: &str, command: &str) {
        self.run(&["new-window", "-d", "-t", "main", "-n", name, command]);
    }

    /// A `tmux` command on this server, with the environment [`Tmux::start`] describes.
    pub(crate) fn cmd(&self) -> Command {
        let home = self.socket.with_file_name("tmux-home");
        let _ = std::fs::create_dir_all(&home);
        let mut c = Command::new("tmux");
        c.arg("-f")
            .arg("/dev/null")
            .arg("-S")
            .arg(&self.socket)
            .env_remove("TMUX")
            .env("SHELL", "/bin/sh")
            .env("HOME", &home)
            .env("ENV", "/dev/null")
            .stdin(Stdio::null());
        c
    }

    /// Runs `tmux ARGS` on this server, panics unless it succeeds, returns stdout.
    pub(crate) fn run(&self, args: &[&str]) -> String {
        let out = self
            .cmd()
            .args(args)
            .output()
            .expect("run tmux (is it installed?)");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// tmux's id (`%N`) of the pane of `window` in session `main`.
    pub(crate) fn pane_id(&self, window: &str) -> String {
        let target = format!("main:{window}");
        self.run(&["display", "-p", "-t", &target, "#{pane_id}"])
            .trim()
            .to_owned()
    }

    /// Collie's id of the pane of `window` when this server is the bridge's only mirrored one
    /// (`t1-N`: socket 1, tmux's `%N`).
    pub(crate) fn collie_id(&self, window: &str) -> String {
        format!("t1-{}", self.pane_id(window).trim_start_matches('%'))
    }

    /// The arguments of `tmux capture-pane -p` of `pane` on this server (after `tmux`).
    pub(crate) fn capture_args(&self, pane: &str) -> Vec<String> {
        vec![
            "-S".to_owned(),
            self.socket.display().to_string(),
            "capture-pane".to_owned(),
            "-p".to_owned(),
            "-t".to_owned(),
            pane.to_owned(),
        ]
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}
