//! Test harness for black-box tests: a real `collie bridge` process with its own temp state dir, and
//! a real tmux server on a private socket. Both are torn down on drop, pass or fail.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod loopback;
pub mod model_api;
pub mod procs;
pub mod responses_api;
pub mod udp_relay;

/// The `collie` binary under test: this build's, or `COLLIE_BIN` when set — to show that an
/// attack test fails against an older build (`COLLIE_BIN=<old>/collie cargo test --test …`).
pub fn collie_bin() -> PathBuf {
    std::env::var_os("COLLIE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_collie")))
}

/// Parses `out` as JSON, or fails the test showing it.
pub fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A bridge for crew tests: its crew port chosen by the OS, a private tmux server if `with_tmux`,
/// and `env` besides.
pub fn crew_bridge(with_tmux: bool, env: &[(&str, &str)]) -> TestBridge {
    crew_bridge_configured(with_tmux, env, None)
}

/// [`crew_bridge`] with `config.toml` applied before it starts (see [`Opts::config`]).
pub fn crew_bridge_configured(
    with_tmux: bool,
    env: &[(&str, &str)],
    config: Option<&str>,
) -> TestBridge {
    let mut all = vec![("COLLIE_CREW_PORT".to_owned(), "0".to_owned())];
    all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    TestBridge::start_with(Opts {
        with_tmux,
        env: all,
        config: config.map(str::to_owned),
        ..Opts::default()
    })
}

/// `s` percent-encoded for a query string (unreserved characters as they are).
pub fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Polls `f` every 20 ms until it returns `Some` or `timeout` passes.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A private tmux server (`tmux -S <dir>/tmux.sock`), killed on drop.
pub struct Tmux {
    pub socket: PathBuf,
}

impl Tmux {
    /// Starts a server with one session `main` of 100×30.
    pub fn start(dir: &Path) -> Tmux {
        let socket = dir.join("tmux.sock");
        let t = Tmux { socket };
        let out = t
            .cmd()
            .args(["new-session", "-d", "-s", "main", "-x", "100", "-y", "30"])
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux new-session: {out:?}");
        t
    }

    /// A tmux command on this server. The server's panes run a plain `sh` with a private HOME and no
    /// tmux config, so nothing from the machine's shell or tmux setup (rc files that hang or print)
    /// reaches the tests.
    pub fn cmd(&self) -> Command {
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
            .env("ENV", "/dev/null");
        c
    }

    /// `capture-pane -p` of a pane (for asserting what really reached tmux).
    pub fn capture(&self, target: &str) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", target])
            .output()
            .expect("capture");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // The panes' programs get SIGHUP when the server dies and may still write into the test's
        // dir on their way out (Claude Code saves its home): wait for them before the dir goes,
        // or it is made again behind the test's back and left in the temp dir.
        let panes = self
            .cmd()
            .args(["list-panes", "-a", "-F", "#{pane_pid}"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let _ = self.cmd().arg("kill-server").output();
        let pids: Vec<&str> = panes.split_whitespace().collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|pid| Path::new("/proc").join(pid).exists())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One HTTP request to `url` (15 s at most), a device `token` as the bearer: status, response
/// headers (names lowercased) and body text. A connection that fails panics.
pub fn http(
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    let mut req = ureq::request(method, url).timeout(Duration::from_secs(15));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let result = match body {
        Some(b) => req.send_json(b.clone()),
        None => req.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let hdrs = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = resp.header(&n).unwrap_or("").to_string();
            (n.to_lowercase(), v)
        })
        .collect();
    let text = resp.into_string().unwrap_or_default();
    (status, hdrs, text)
}

/// A running bridge with its own state, config and tmux dirs.
pub struct TestBridge {
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    pub port: u16,
    pub tmux: Option<Tmux>,
    pub extra_env: Vec<(String, String)>,
    pub log_to_file: bool,
}

/// How to start a [`TestBridge`].
#[derive(Default, Clone)]
pub struct Opts {
    pub with_tmux: bool,
    pub env: Vec<(String, String)>,
    /// Send the bridge's log (stderr) to `<dir>/bridge.log` instead of the test's stderr.
    pub log_to_file: bool,
    /// `config.toml` to apply before the bridge starts (what follows `schema_version = 1`).
    pub config: Option<String>,
}

impl TestBridge {
    /// A bridge with a private tmux server (one session, one pane).
    pub fn start() -> TestBridge {
        Self::start_with(Opts {
            with_tmux: true,
            ..Opts::default()
        })
    }

    /// A bridge with options.
    pub fn start_with(opts: Opts) -> TestBridge {
        let dir = tempfile::Builder::new()
            .prefix("collie-test-")
            .tempdir()
            .expect("tempdir");
        for d in ["state", "config", "tmuxdefault", "home"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        let tmux = opts.with_tmux.then(|| Tmux::start(dir.path()));
        let mut b = TestBridge {
            dir,
            child: None,
            port: 0,
            tmux,
            extra_env: opts.env,
            log_to_file: opts.log_to_file,
        };
        if let Some(body) = &opts.config {
            b.configure(body);
        }
        b.launch();
        b
    }

    /// The config dir every collie process of this test reads (`COLLIE_CONFIG_DIR`).
    pub fn config_dir(&self) -> PathBuf {
        self.extra_env
            .iter()
            .find(|(k, _)| k == "COLLIE_CONFIG_DIR")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(|| self.dir.path().join("config"))
    }

    /// Writes `config.toml` (`schema_version = 1`, then `body`) and applies it with `collie apply
    /// --yes`, as a person does before starting the bridge (SPEC §12). A running bridge keeps its
    /// configuration until it is restarted.
    pub fn configure(&self, body: &str) {
        let path = self.config_dir().join("config.toml");
        std::fs::write(&path, format!("schema_version = 1\n{body}")).expect("write config.toml");
        let out = self.cli(&["apply", "--yes"]);
        assert!(
            out.status.success(),
            "collie apply: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts (or restarts) the bridge process on the same state dir.
    pub fn launch(&mut self) {
        let mut cmd = self.command();
        cmd.args(["bridge", "--port", "0", "--name", "testbox"]);
        cmd.stdout(Stdio::piped());
        if self.log_to_file {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.log_path())
                .expect("bridge log file");
            cmd.stderr(log);
        } else {
            cmd.stderr(Stdio::inherit());
        }
        let mut child = cmd.spawn().expect("spawn collie bridge");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("read bridge banner");
        let addr = line
            .split("http://")
            .nth(1)
            .unwrap_or_else(|| panic!("unexpected banner: {line:?}"))
            .trim();
        self.port = addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port in banner");
        // Keep draining stdout so the bridge never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        self.child = Some(child);
        // Wait until the control socket answers.
        let ok = wait_for(Duration::from_secs(10), || {
            self.state().join("bridge.sock").exists().then_some(())
        });
        assert!(ok.is_some(), "bridge did not create its control socket");
    }

    /// The environment every collie process of this test gets.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(collie_bin());
        let d = self.dir.path();
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", d.join("home"))
            .env("COLLIE_STATE_DIR", d.join("state"))
            .env("COLLIE_CONFIG_DIR", d.join("config"))
            .env("TMUX_TMPDIR", d.join("tmuxdefault"))
            .env("COLLIE_LOG", "warn")
            // Tests make no call to the real release host; the update check's own tests turn
            // it back on against a local server.
            .env("COLLIE_UPDATE_CHECK", "off")
            // A zellij on PATH sees only this test's sessions, never the user's.
            .env("ZELLIJ_SOCKET_DIR", d.join("zellij"));
        if let Some(t) = &self.tmux {
            cmd.env("COLLIE_TMUX_SOCKETS", &t.socket);
        }
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Where the bridge's log goes with [`Opts::log_to_file`].
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("bridge.log")
    }

    /// The bridge's log so far (with [`Opts::log_to_file`]).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Runs `collie ARGS` against this bridge.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run collie")
    }

    /// Runs `collie ARGS`, asserts success, returns stdout.
    pub fn cli_ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert!(
            out.status.success(),
            "collie {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A one-time crew invite from this (leading) bridge.
    /// On a lead: waits until it lists member `name` online (its relay answers from then on).
    pub fn wait_member_online(&self, name: &str) {
        let online = wait_for(Duration::from_secs(10), || {
            let status = json_of(&self.cli_ok(&["crew", "status", "--json"]));
            status["members"]
                .as_array()?
                .iter()
                .any(|m| m["name"] == name && m["online"] == true)
                .then_some(())
        });
        assert!(online.is_some(), "{name} never came online");
    }

    /// Sends a request's head declaring `length` bytes of body, and no body, and reads the answer:
    /// a server that checks the declared length answers at once; one that waits for the body never
    /// does (the read times out, and the test says so).
    pub fn declare_only(&self, path: &str, token: &str, length: usize) -> (u16, Value) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {length}\r\n\r\n",
            self.port
        )
        .expect("write the head");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let head_end = got.windows(4).position(|w| w == b"\r\n\r\n");
            if let Some(end) = head_end {
                let head = String::from_utf8_lossy(&got[..end]).to_string();
                let want = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + want {
                    let status = head
                        .split_whitespace()
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .expect("a status");
                    let body = String::from_utf8_lossy(&got[end + 4..end + 4 + want]).to_string();
                    return (
                        status,
                        serde_json::from_str(&body).unwrap_or(Value::String(body)),
                    );
                }
            }
            match s.read(&mut buf) {
                Ok(0) => panic!("{path}: closed without a whole answer"),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{path}: no answer to the declared length within 10 s ({e})"),
            }
        }
    }

    /// `POST /api/blobs` with raw bytes into `pane` of `machine`: (status, JSON body).
    pub fn upload(
        &self,
        token: &str,
        machine: &str,
        pane: &str,
        name: &str,
        bytes: &[u8],
    ) -> (u16, Value) {
        let url = self.url(&format!(
            "/api/blobs?machine={}&pane={}&name={}",
            url_encode(machine),
            url_encode(pane),
            url_encode(name)
        ));
        let result = ureq::post(&url)
            .timeout(Duration::from_secs(60))
            .set("Authorization", &format!("Bearer {token}"))
            .set("Content-Type", "application/octet-stream")
            .send_bytes(bytes);
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("upload: {e}"),
        };
        let status = resp.status();
        let text = resp.into_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub fn invite(&self) -> String {
        json_of(&self.cli_ok(&["crew", "invite", "--json"]))["invite"]
            .as_str()
            .expect("invite")
            .to_owned()
    }

    /// Every line of the audit log, parsed.
    pub fn audit_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state().join("audit.log"))
            .unwrap_or_default()
            .lines()
            .map(json_of)
            .collect()
    }

    /// Starts a hosted pane running `command` (`collie panes new`); returns its pane info.
    pub fn hosted(&self, name: &str, command: &[&str]) -> Value {
        let mut args = vec!["panes", "--json", "new", "--name", name, "--"];
        args.extend_from_slice(command);
        serde_json::from_str(&self.cli_ok(&args)).expect("panes new --json is JSON")
    }

    /// Waits (at most 20 s) until this lead's `GET /api/machines`, as `token` sees it, lists every
    /// one of `names` online; panics naming them otherwise.
    pub fn wait_online(&self, token: &str, names: &[&str]) {
        let all_up = wait_for(Duration::from_secs(20), || {
            let (_, v) = self.get("/api/machines", Some(token));
            let machines = v["machines"].as_array()?;
            names
                .iter()
                .all(|n| {
                    machines
                        .iter()
                        .any(|m| m["name"] == *n && m["online"] == true)
                })
                .then_some(())
        });
        assert!(all_up.is_some(), "{names:?} are not all online at the lead");
    }

    /// A fresh pairing code from `collie pair --json`.
    pub fn code(&self, tier: &str) -> String {
        let out = self.cli_ok(&["pair", "--json", "--tier", tier]);
        let v: Value = serde_json::from_str(&out).expect("pair --json is JSON");
        v["code"].as_str().expect("code").to_string()
    }

    /// Pairs a device and returns its token.
    pub fn pair(&self, label: &str, tier: &str) -> String {
        let code = self.code(tier);
        let (status, body) = self.post(
            "/api/pair",
            None,
            &serde_json::json!({"code": code, "label": label}),
        );
        assert_eq!(status, 200, "pairing failed: {body}");
        body["token"].as_str().expect("token").to_string()
    }

    /// The id of `machine`'s (first) tmux pane in this bridge's `GET /api/panes`, once listed —
    /// a member's pane as its lead relays it.
    pub fn tmux_pane_of(&self, token: &str, machine: &str) -> String {
        wait_for(Duration::from_secs(10), || {
            let (s, v) = self.get("/api/panes", Some(token));
            (s == 200).then_some(())?;
            v["panes"]
                .as_array()?
                .iter()
                .find(|p| p["machine"] == machine && p["backend"] == "tmux")
                .and_then(|p| p["pane"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| panic!("the bridge does not list {machine}'s pane"))
    }

    /// The id of the pane named `name` (a tmux window's name) on `machine` (`None`: any) in
    /// this bridge's `GET /api/panes`, once listed.
    pub fn pane_named(&self, token: &str, machine: Option<&str>, name: &str) -> String {
        wait_for(Duration::from_secs(10), || {
            let (_, v) = self.get("/api/panes", Some(token));
            v["panes"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == name && machine.is_none_or(|m| p["machine"] == m))
                .and_then(|p| p["pane"].as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| panic!("no pane named {name}"))
    }

    /// The first tmux pane's id as the bridge names it, once the bridge mirrors it.
    pub fn first_tmux_pane(&self, token: &str) -> String {
        wait_for(Duration::from_secs(10), || {
            let (s, v) = self.get("/api/panes", Some(token));
            if s != 200 {
                return None;
            }
            v["panes"]
                .as_array()?
                .iter()
                .find(|p| p["backend"] == "tmux")
                .and_then(|p| p["pane"].as_str().map(str::to_string))
        })
        .expect("the bridge mirrors the tmux pane")
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        self.request("GET", path, token, None, &[])
    }

    /// Opens the Server-Sent Events stream `path` as `token` and reads it on a thread of its own:
    /// each event whose `data` is JSON arrives as (event name, data). The thread ends with the
    /// connection or when the receiver is dropped.
    pub fn sse(&self, path: &str, token: &str) -> std::sync::mpsc::Receiver<(String, Value)> {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Authorization: Bearer {token}\r\nConnection: close\r\n\r\n",
            self.port
        );
        s.write_all(req.as_bytes()).expect("write");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        read_events(s)
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
        self.request("POST", path, token, Some(body), &[])
    }

    /// Any request; returns status and JSON body (Null when not JSON).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let (status, _, text) = self.raw(method, path, token, body, headers);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Any request; returns status, response headers and body text.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Vec<(String, String)>, String) {
        http(method, &self.url(path), token, body, headers)
    }

    /// Runs `collie bridge` with `env` added and expects it to refuse to start: its exit status
    /// and stderr. A bridge that starts instead is killed and the test fails.
    pub fn start_refused(&self, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
        let mut cmd = self.command();
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .args(["bridge", "--port", "0", "--name", "testbox"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn collie bridge");
        let exited = wait_for(Duration::from_secs(15), || child.try_wait().ok().flatten());
        let Some(status) = exited else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the bridge started where it had to refuse");
        };
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        (status, err)
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let done = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
        match done {
            Some(st) => Some(st),
            None => {
                let _ = child.kill();
                child.wait().ok()
            }
        }
    }

    /// SIGKILL, no cleanup by the bridge.
    pub fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TestBridge {
    fn drop(&mut self) {
        self.stop();
        // The tmux server must die before the temp dir (its socket) goes away; fields would drop
        // in declaration order, dir first.
        drop(self.tmux.take());
    }
}

/// Reads Server-Sent Events from `source` on a thread of its own: each event whose `data` is JSON
/// arrives as (event name, data). The thread ends with the source or when the receiver is dropped.
pub fn read_events(
    source: impl std::io::Read + Send + 'static,
) -> std::sync::mpsc::Receiver<(String, Value)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(source);
        let mut line = String::new();
        let mut event = String::from("message");
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(name) = line.strip_prefix("event:") {
                event = name.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                    let name = std::mem::replace(&mut event, "message".into());
                    if tx.send((name, v)).is_err() {
                        return;
                    }
                }
            }
            line.clear();
        }
    });
    rx
}
