//! A real `collie bridge` process for the end-to-end benches: the figures are only worth having
//! from the shipped binary with its real sockets, pty and tmux handling, not from an in-process
//! stand-in.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::wait_for;

/// How to start a [`Bridge`] beyond its name; [`Bridge::start`] takes every default.
pub(crate) struct BridgeOptions {
    name: String,
    dir: Option<PathBuf>,
    log: String,
    env: Vec<(String, OsString)>,
    program: PathBuf,
}

impl BridgeOptions {
    pub(crate) fn new(name: &str) -> BridgeOptions {
        BridgeOptions {
            name: name.to_owned(),
            dir: None,
            log: "warn".to_owned(),
            env: Vec::new(),
            program: PathBuf::from(env!("CARGO_BIN_EXE_collie")),
        }
    }

    /// Runs this `collie` binary instead of the one cargo built for the bench: a bench that
    /// compares two builds (one from an older commit) in one run starts each in turn.
    pub(crate) fn program(mut self, program: PathBuf) -> BridgeOptions {
        self.program = program;
        self
    }

    /// Keeps the bridge's dirs in `dir` (created if missing) instead of a temp dir of its own, for
    /// a bench that puts everything it starts under one root; the caller removes `dir`.
    pub(crate) fn dir(mut self, dir: PathBuf) -> BridgeOptions {
        self.dir = Some(dir);
        self
    }

    /// `COLLIE_LOG` of the bridge and every CLI run (default `warn`): their stderr is the
    /// bench's, so chatter there would bury its progress lines.
    pub(crate) fn log(mut self, filter: &str) -> BridgeOptions {
        filter.clone_into(&mut self.log);
        self
    }

    /// One more environment variable for the bridge and every CLI run against it (e.g.
    /// `COLLIE_TMUX_SOCKETS` naming a private tmux server).
    pub(crate) fn env(mut self, key: &str, value: impl Into<OsString>) -> BridgeOptions {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Starts the bridge (HTTP on a port the OS chooses) and waits, at most 20 s each, for its
    /// banner and its control socket, so the bridge is ready to be used when this returns.
    pub(crate) fn start(self) -> Bridge {
        let (dir, temp) = match self.dir {
            Some(dir) => (dir, None),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix(&format!("collie-bench-{}-", self.name))
                    .tempdir()
                    .expect("create a temp dir");
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        for d in ["state", "config", "tmuxdefault", "home"] {
            std::fs::create_dir_all(dir.join(d)).expect("create the bridge's dirs");
        }
        let mut bridge = Bridge {
            child: None,
            port: 0,
            name: self.name,
            dir,
            log: self.log,
            env: self.env,
            program: self.program,
            _temp: temp,
        };
        let mut cmd = bridge.command();
        cmd.args(["bridge", "--port", "0", "--name", &bridge.name])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn collie bridge");
        let stdout = child.stdout.take().expect("the bridge's stdout is piped");
        bridge.child = Some(child);

        // Read the banner on a thread (so a silent bridge cannot hang us), then keep draining, so
        // the bridge never blocks on a full pipe.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            let mut sink = String::new();
            while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        let banner = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the bridge prints its banner within 20 s");
        bridge.port = banner
            .split("http://")
            .nth(1)
            .and_then(|a| a.trim().rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("the banner names http://127.0.0.1:PORT");
        let sock = bridge.socket();
        wait_for(Duration::from_secs(20), || sock.exists().then_some(()))
            .expect("the bridge creates its control socket within 20 s");
        bridge
    }
}

/// A running `collie bridge` with its own state, config, home and (empty) default tmux dirs, so
/// nothing of the user's setup is read and no tmux pane of the user is mirrored. Stopped on drop
/// (SIGTERM, then SIGKILL after 10 s), pass or fail.
pub(crate) struct Bridge {
    child: Option<Child>,
    port: u16,
    name: String,
    dir: PathBuf,
    log: String,
    env: Vec<(String, OsString)>,
    /// The `collie` binary it runs (and the CLI commands against it).
    program: PathBuf,
    /// The temp dir `dir` is in, if the bridge made its own: removed after the bridge has been
    /// stopped (fields drop after `Drop::drop`).
    _temp: Option<tempfile::TempDir>,
}

impl Bridge {
    /// Starts a bridge named `name` in a temp dir of its own, with every default of
    /// [`BridgeOptions`].
    pub(crate) fn start(name: &str) -> Bridge {
        BridgeOptions::new(name).start()
    }

    /// The options of a bridge named `name`, to change before [`BridgeOptions::start`].
    pub(crate) fn options(name: &str) -> BridgeOptions {
        BridgeOptions::new(name)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("the bridge is running").id()
    }

    /// The name given with `--name` (the machine name in pane addresses).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The dir holding the bridge's `state`, `config`, `home` and `tmuxdefault` dirs.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The control socket the CLI talks to.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.join("state").join("bridge.sock")
    }

    /// A URL of this bridge's HTTP API on loopback.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// A `collie` command with this bridge's environment and nothing of the caller's but `PATH`.
    /// The crew port is chosen by the OS, so leads of several bridges (or a lead already running
    /// on the machine) never compete for the default one; a bridge that is no lead ignores it.
    pub(crate) fn command(&self) -> Command {
        let d = &self.dir;
        let mut cmd = Command::new(&self.program);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", d.join("home"))
            .env("COLLIE_STATE_DIR", d.join("state"))
            .env("COLLIE_CONFIG_DIR", d.join("config"))
            .env("TMUX_TMPDIR", d.join("tmuxdefault"))
            .env("COLLIE_CREW_PORT", "0")
            .env("COLLIE_LOG", &self.log)
            .env("COLLIE_UPDATE_CHECK", "off")
            // A zellij on PATH sees only the bench's sessions, never the user's.
            .env("ZELLIJ_SOCKET_DIR", d.join("zellij"));
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// Runs `collie ARGS`, panics unless it succeeds, returns stdout.
    pub(crate) fn cli_ok(&self, args: &[&str]) -> String {
        let out = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run the collie CLI");
        assert!(
            out.status.success(),
            "collie {args:?} on {} failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// [`Bridge::cli_ok`] of a command that prints JSON (`--json`), parsed.
    pub(crate) fn cli_json(&self, args: &[&str]) -> Value {
        let out = self.cli_ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("collie {args:?}: not JSON ({e})"))
    }

    /// Pairs a device of `tier` (`read`, `full`, ...) and returns its token.
    pub(crate) fn pair(&self, label: &str, tier: &str) -> String {
        let v = self.cli_json(&["pair", "--json", "--tier", tier]);
        let code = v["code"].as_str().expect("a pairing code");
        let resp = ureq::post(&self.url("/api/pair"))
            .timeout(Duration::from_secs(15))
            .send_json(json!({ "code": code, "label": label }))
            .expect("pairing succeeds");
        let body: Value = resp.into_json().expect("the pairing answer is JSON");
        body["token"]
            .as_str()
            .expect("the pairing answer carries a token")
            .to_owned()
    }

    /// Starts a hosted pane running `argv`; returns its id (`pN`) and its token.
    pub(crate) fn new_pane(&self, name: &str, argv: &[&str]) -> (String, String) {
        let mut args = vec!["panes", "new", "--name", name, "--"];
        args.extend_from_slice(argv);
        let out = self.cli_ok(&args);
        // `machine/pN#token`
        out.trim()
            .split_once('/')
            .and_then(|(_, rest)| rest.split_once('#'))
            .map(|(id, token)| (id.to_owned(), token.to_owned()))
            .expect("`collie panes new` prints machine/id#token")
    }

    /// A fresh one-time crew invite of this lead.
    pub(crate) fn invite(&self) -> String {
        self.cli_json(&["crew", "invite", "--json"])["invite"]
            .as_str()
            .expect("`crew invite --json` carries an invite")
            .to_owned()
    }

    /// How many members this lead shows online in `collie crew status --json`.
    pub(crate) fn members_online(&self) -> usize {
        self.cli_json(&["crew", "status", "--json"])["members"]
            .as_array()
            .map_or(0, |ms| ms.iter().filter(|m| m["online"] == true).count())
    }

    /// Sends SIGTERM without waiting, so many bridges can stop at once; [`Bridge::stop`] then
    /// reaps each.
    pub(crate) fn signal_stop(&self) {
        if let Some(raw) = self.child.as_ref().and_then(|c| i32::try_from(c.id()).ok()) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
        }
    }

    /// SIGKILL (a crash: nothing is flushed or said goodbye to), then reaps it. The bridge's dirs
    /// stay, so a bridge started again on them comes back as the same machine.
    pub(crate) fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, up to 10 s for a clean exit, then SIGKILL; the exit status, unless already
    /// stopped.
    pub(crate) fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(raw) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
        }
        match wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten()) {
            Some(status) => Some(status),
            None => {
                let _ = child.kill();
                child.wait().ok()
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop();
    }
}
