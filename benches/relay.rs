//! Crew relay figures (docs/PERFORMANCE.md, "Crew relay"): what reading and typing into a member's
//! pane through the lead costs, next to the ways one would do it without Collie, measured in one run
//! on one machine.
//!
//! Run: `cargo bench --bench relay` (`COLLIE_BENCH_PARTS=keystrokes,memory` runs only those parts;
//! the parts are `reads`, `saturation`, `keystrokes`, `writes` and `memory`). A plain binary, not
//! criterion, like `benches/bridge.rs`: the figures need real processes (a lead and members as `collie bridge`, tmux servers, `sshd`), and a
//! criterion loop around process start-up would measure the wrong thing. It measures:
//!
//! 1. *Snapshot reads* of one tmux pane of member `web-1` (100 × 30, a full screen of text): through
//!    the lead (`GET /api/panes/web-1/{pane}`), on the member itself (`/api/panes/local/{pane}`), by
//!    `ssh` to localhost running `tmux capture-pane` (a fresh connection per read, and over one
//!    ControlMaster connection), and by spawning `tmux capture-pane` locally. Plus two reads that
//!    split the relay's time: the lead answering without the relay, and a relayed `no such pane`.
//! 2. *Relayed reads per second at saturation*: 2, 4 and 8 client threads, each on its own
//!    keep-alive connection, reading both members' panes through the lead; and the same on one
//!    member directly, for scale.
//! 3. *Keystroke → echo*: a character POSTed as input, timed until the pane's SSE stream shows it,
//!    with 100 ms between keys and back to back, through the lead and on the member directly.
//!    3b. *Writes at once*: one and eight writers POSTing input back to back into the same pane,
//!    through the lead and directly (every write is audited first; writers arriving together
//!    share the audit's syncs, decision 0020).
//! 4. *Lead memory with 50 members*: a fresh lead, 50 member bridges joined to it (one invite each),
//!    its resident memory before, with all 50 online, and after 10 s idle.
//!
//! The ssh rows need `/usr/sbin/sshd`; if it is missing the bench installs `openssh-server` with
//! `apt-get` (it runs as root on the bench machine), and if that is impossible it says why and skips
//! only those rows. Its `sshd` runs in the foreground on a free loopback port with its own host key,
//! user key, `authorized_keys` and config, and is stopped at the end.
//!
//! Everything the bench starts lives under one temp dir and is stopped on drop, pass or fail: bridges
//! (SIGTERM, SIGKILL after 10 s), tmux servers (`kill-server`, after their bridge and before the dir
//! goes), the ssh master connection and `sshd`. A last guard looks for any process whose command
//! line or environment still names the temp dir, kills it by pid and says so. Every wait is bounded.
//! Timings are printed, never asserted.
//!
//! `COLLIE_BENCH_BIN=/path/to/collie` runs another build for every bridge (the bench itself need not
//! be rebuilt), `COLLIE_BENCH_LEAD_BIN` another one for the leads only.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use support::{
    agent, cpu_model, cpus, get_json, get_ok, load_average, measure_get, mem_total_kib, met, mib,
    rss_bytes, status_field, wait_for, wait_rss_stable, Bridge, BridgeOptions, Stats, Sweep, Tmux,
    MIB,
};

/// Sequential snapshot reads per figure (after a warm-up), for every way but fresh ssh connections.
const READS: usize = 1_000;
/// Unmeasured process-spawning reads first (ssh, tmux), to fill the page cache.
const SPAWN_WARM_UP: usize = 10;
/// Reads over a fresh ssh connection each, unless `COLLIE_BENCH_SSH_FRESH` says otherwise: each
/// costs a key exchange and a login, so 1,000 would take minutes on a small machine.
const SSH_FRESH_DEFAULT: usize = 200;
/// The relay goal for the median snapshot read, from the issue.
const RELAY_P50_GOAL: Duration = Duration::from_micros(800);
/// The relay's median must beat multiplexed ssh's by at least this factor.
const SSH_RATIO_GOAL: f64 = 10.0;

/// Client threads of the saturation runs.
const SATURATION_THREADS: [usize; 3] = [2, 4, 8];
/// How long each saturation level runs.
const SATURATION_FOR: Duration = Duration::from_secs(3);

/// Measured keystrokes per keystroke figure, after [`KEY_WARM_UP`] unmeasured ones.
const KEYSTROKES: usize = 200;
const KEY_WARM_UP: usize = 20;
/// Characters typed per line before an (unmeasured) Enter.
const LINE: usize = 40;
/// The pause before each keystroke in the "typing" figures: about nine keys a second.
const TYPING_GAP: Duration = Duration::from_millis(100);

/// Member bridges joined to the lead of the memory figure.
const MEMBERS: usize = 50;
/// How long the lead sits idle with them before the last reading.
const IDLE_FOR: Duration = Duration::from_secs(10);

/// Size of the members' tmux windows.
const COLS: usize = 100;
const ROWS: usize = 30;

fn main() {
    let begun = Instant::now();
    let root = tempfile::Builder::new()
        .prefix("collie-relay-bench-")
        .tempdir()
        .expect("create a temp dir");
    // Declared after `root`, so it is dropped before it: last of all the guards below.
    let _sweep = Sweep(root.path().to_path_buf());
    let load_before = load_average();
    let mut out = Output::default();

    let parts = Parts::from_env();
    if parts.reads || parts.saturation || parts.keystrokes || parts.writes {
        let crew = Crew::start(root.path());
        if parts.reads {
            let mut sshd = match Sshd::start(&root.path().join("ssh")) {
                Ok(sshd) => Some(sshd),
                Err(why) => {
                    out.note(format!("ssh rows skipped: {why}"));
                    None
                }
            };
            snapshot_reads(&crew, sshd.as_mut(), &mut out);
            // The ssh master and sshd go before the saturation runs, so they take no CPU from
            // them.
            drop(sshd);
        }
        if parts.saturation {
            saturation(&crew, &mut out);
        }
        if parts.keystrokes {
            keystrokes(&crew, &mut out);
        }
        if parts.writes {
            writes_at_once(&crew, &mut out);
        }
        progress("stopping the lead and both members");
    }
    if parts.memory {
        lead_memory(root.path(), &mut out);
    }

    println!();
    println!(
        "Crew relay, end to end ({} CPUs, {}, {:.1} GiB RAM); load average before {load_before}, \
         after {}",
        cpus(),
        cpu_model(),
        mem_total_kib() as f64 / 1024.0 / 1024.0,
        load_average()
    );
    out.print();
    println!();
    println!("total run time {:.0} s", begun.elapsed().as_secs_f64());
}

/// Which side of the crew a bridge plays, for [`bridge`].
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Lead,
    Member,
}

/// A bridge's options, running the `collie` binary cargo built for the bench unless
/// `COLLIE_BENCH_BIN` names another (a build of an older commit, for a before/after in one run),
/// and for a lead `COLLIE_BENCH_LEAD_BIN` if set (e.g. a script that `exec`s `collie` under a
/// heap profiler or with an allocator setting, keeping its pid).
fn bridge(name: &str, role: Role) -> BridgeOptions {
    let options = Bridge::options(name);
    let lead_bin = std::env::var_os("COLLIE_BENCH_LEAD_BIN").filter(|_| role == Role::Lead);
    match lead_bin.or_else(|| std::env::var_os("COLLIE_BENCH_BIN")) {
        Some(bin) => options.program(PathBuf::from(bin)),
        None => options,
    }
}

/// Prints a progress line on stderr (the figures go to stdout at the end).
/// Which parts run: all of them, or those `COLLIE_BENCH_PARTS` names (a comma-separated list of
/// `reads`, `saturation`, `keystrokes`, `writes`, `memory`), to measure one figure again quickly.
struct Parts {
    reads: bool,
    saturation: bool,
    keystrokes: bool,
    writes: bool,
    memory: bool,
}

impl Parts {
    fn from_env() -> Self {
        let only = std::env::var("COLLIE_BENCH_PARTS").unwrap_or_default();
        let all = only.trim().is_empty();
        let named = |part: &str| all || only.split(',').any(|p| p.trim() == part);
        Parts {
            reads: named("reads"),
            saturation: named("saturation"),
            keystrokes: named("keystrokes"),
            writes: named("writes"),
            memory: named("memory"),
        }
    }
}

fn progress(what: &str) {
    eprintln!("[relay bench] {what}");
}

// ---------------------------------------------------------------------------------------------
// The crew: a lead and two members with tmux panes
// ---------------------------------------------------------------------------------------------

/// A lead and two members (`web-1`, `web-2`) joined to it, each member with a private tmux server
/// whose session has three windows: `reads` (a full screen of text, then `cat`), `relay-keys` and
/// `local-keys` (`cat`, for the keystroke figures). Stopped on drop (each bridge, then its tmux).
struct Crew {
    lead: Bridge,
    web1: Member,
    web2: Member,
    /// A `full` device paired on the lead.
    lead_auth: String,
    /// A `full` device paired on `web-1`, for its own API.
    web1_auth: String,
    /// Collie's ids of the `reads` panes of web-1 and web-2 (`t1-N`: socket 1 is the private one).
    reads: [String; 2],
    /// tmux's id of web-1's `reads` pane (`%N`), for the ssh and tmux reads.
    reads_tmux: String,
    relay_keys: String,
    local_keys: String,
}

impl Crew {
    /// The two ways to type into web-1's `cat` panes: (name, the device's token on the bridge
    /// asked, the pane's URL on that bridge).
    fn typing_paths(&self) -> [(&'static str, &String, String); 2] {
        [
            (
                "through the lead",
                &self.lead_auth,
                self.lead
                    .url(&format!("/api/panes/web-1/{}", self.relay_keys)),
            ),
            (
                "web-1 directly",
                &self.web1_auth,
                self.web1
                    .bridge
                    .url(&format!("/api/panes/local/{}", self.local_keys)),
            ),
        ]
    }

    fn start(root: &Path) -> Crew {
        progress("starting the lead and two members with tmux panes");
        let lead = bridge("lead", Role::Lead).dir(root.join("lead")).start();
        lead.cli_ok(&["crew", "init"]);
        let web1 = Member::start(root.join("web-1"), "web-1");
        let web2 = Member::start(root.join("web-2"), "web-2");
        for member in [&web1.bridge, &web2.bridge] {
            member.cli_ok(&["crew", "join", &lead.invite(), "--name", member.name()]);
        }
        wait_for(Duration::from_secs(30), || {
            (lead.members_online() == 2).then_some(())
        })
        .expect("both members are online at the lead within 30 s");
        let lead_auth = format!("Bearer {}", lead.pair("bench-phone", "full"));
        let web1_auth = format!("Bearer {}", web1.bridge.pair("bench-phone", "full"));

        let id = |m: &Member, window: &str| {
            let raw = m.tmux.pane_id(window);
            (format!("t1-{}", raw.trim_start_matches('%')), raw)
        };
        let (read1, reads_tmux) = id(&web1, "reads");
        let (read2, _) = id(&web2, "reads");
        let (relay_keys, _) = id(&web1, "relay-keys");
        let (local_keys, _) = id(&web1, "local-keys");
        let crew = Crew {
            reads: [read1, read2],
            reads_tmux,
            relay_keys,
            local_keys,
            lead_auth,
            web1_auth,
            lead,
            web1,
            web2,
        };
        // The lead lists every pane, and each read pane shows its last line of text.
        let agent = agent();
        let listed = wait_for(Duration::from_secs(20), || {
            let list = get_json(&agent, &crew.lead.url("/api/panes"), &crew.lead_auth)?;
            let panes = list["panes"].as_array()?;
            let has = |m: &str, p: &str| panes.iter().any(|x| x["machine"] == m && x["pane"] == p);
            (has("web-1", &crew.reads[0])
                && has("web-2", &crew.reads[1])
                && has("web-1", &crew.relay_keys)
                && has("web-1", &crew.local_keys))
            .then_some(())
        });
        listed.expect("the lead lists the members' tmux panes within 20 s");
        for (machine, pane) in [("web-1", &crew.reads[0]), ("web-2", &crew.reads[1])] {
            let url = crew.lead.url(&format!("/api/panes/{machine}/{pane}"));
            let full = wait_for(Duration::from_secs(20), || {
                let snap = get_json(&agent, &url, &crew.lead_auth)?;
                let lines = snap["lines"].as_array()?;
                (lines.len() == ROWS && lines[ROWS - 2].as_str()?.len() > COLS / 2).then_some(())
            });
            full.expect("the read pane fills with text within 20 s");
        }
        crew
    }
}

/// A member bridge with a private tmux server, which the bridge mirrors (`COLLIE_TMUX_SOCKETS`).
/// The bridge's default tmux socket dir is empty, so only this server (socket 1) is mirrored and
/// no server of the user's.
struct Member {
    /// Declared first so it drops first: the bridge is stopped while the tmux server it is
    /// attached to (as a control client) still runs; then the server is killed, before the temp
    /// dir goes.
    bridge: Bridge,
    tmux: Tmux,
}

impl Member {
    /// Starts the tmux server in `dir`, then the bridge named `name` in the same dir.
    fn start(dir: PathBuf, name: &str) -> Member {
        std::fs::create_dir_all(&dir).expect("create the member's dir");
        let tmux = start_tmux(&dir);
        let bridge = bridge(name, Role::Member)
            .dir(dir)
            .env("COLLIE_TMUX_SOCKETS", &tmux.socket)
            .start();
        Member { bridge, tmux }
    }
}

/// The shell script of a `reads` window: a screen and a half of base64 text (so every row is
/// full), then `cat` so the pane stays.
fn fill_script() -> String {
    let bytes = COLS * ROWS * 3 / 4 * 3 / 2;
    format!("head -c {bytes} /dev/urandom | base64 -w {COLS}; exec cat")
}

/// Starts the member's private tmux server with session `main` and the windows [`Crew`]
/// describes.
fn start_tmux(dir: &Path) -> Tmux {
    let tmux = Tmux::start(dir, COLS, ROWS, "reads", &fill_script());
    for window in ["relay-keys", "local-keys"] {
        tmux.window(window, "exec cat");
    }
    tmux
}

// ---------------------------------------------------------------------------------------------
// sshd on loopback
// ---------------------------------------------------------------------------------------------

const SSHD: &str = "/usr/sbin/sshd";

/// A foreground `sshd` on a free loopback port with its own keys and config, and, once
/// [`Sshd::start_master`] ran, a ControlMaster client connection. Both are stopped on drop.
struct Sshd {
    child: Option<Child>,
    master: Option<Child>,
    port: u16,
    dir: PathBuf,
    user: String,
    /// What the remote side reports about itself (shell, `HOME`), for the output.
    remote: String,
    version: String,
}

impl Sshd {
    /// Installs `openssh-server` if `sshd` is missing, then starts it. `Err` says why ssh cannot
    /// be measured here.
    fn start(dir: &Path) -> Result<Sshd, String> {
        ensure_sshd()?;
        std::fs::create_dir_all(dir.join("home")).map_err(|e| format!("create {dir:?}: {e}"))?;
        // The privilege separation dir the package's service would create at boot.
        if nix::unistd::getuid().is_root() && !Path::new("/run/sshd").exists() {
            std::fs::create_dir_all("/run/sshd").map_err(|e| format!("create /run/sshd: {e}"))?;
        }
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .ok_or("this user has no passwd entry")?;
        for key in ["host_key", "user_key"] {
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", ""])
                    .arg("-f")
                    .arg(dir.join(key)),
            )?;
        }
        let public = std::fs::read_to_string(dir.join("user_key.pub"))
            .map_err(|e| format!("read the user key: {e}"))?;
        std::fs::write(dir.join("authorized_keys"), public)
            .map_err(|e| format!("write authorized_keys: {e}"))?;
        let port = free_port().ok_or("no free port")?;
        let d = dir.display();
        // `SetEnv HOME` points the remote shell at an empty dir: Debian's bash sources `~/.bashrc`
        // for a command run by sshd (SSH_SOURCE_BASHRC), and a user's rc file is not what is
        // being compared. `/etc/bash.bashrc` returns at once for non-interactive shells.
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nPidFile none\n\
             PermitRootLogin prohibit-password\nPrintMotd no\nPrintLastLog no\nUseDNS no\n\
             SetEnv HOME={d}/home\nLogLevel ERROR\n"
        );
        std::fs::write(dir.join("sshd_config"), config)
            .map_err(|e| format!("write sshd_config: {e}"))?;
        run_ok(
            Command::new(SSHD)
                .arg("-t")
                .arg("-f")
                .arg(dir.join("sshd_config")),
        )?;
        let log = std::fs::File::create(dir.join("sshd.log"))
            .map_err(|e| format!("create sshd.log: {e}"))?;
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-p", &port.to_string(), "-f"])
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("start sshd: {e}"))?;
        let mut sshd = Sshd {
            child: Some(child),
            master: None,
            port,
            dir: dir.to_path_buf(),
            user: me.name,
            remote: String::new(),
            version: String::new(),
        };
        let up = wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        if up.is_none() {
            return Err(format!("sshd did not listen within 10 s: {}", sshd.log()));
        }
        let probe = sshd
            .ssh(false)
            .arg("echo \"$HOME\"; echo \"$0\"")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run ssh: {e}"))?;
        if !probe.status.success() {
            return Err(format!(
                "ssh to localhost failed: {}; sshd: {}",
                String::from_utf8_lossy(&probe.stderr).trim(),
                sshd.log()
            ));
        }
        let said = String::from_utf8_lossy(&probe.stdout);
        let mut said = said.lines();
        let home = said.next().unwrap_or("");
        let shell = said.next().unwrap_or("?");
        sshd.remote = format!(
            "user {} (login shell {}), remote command run by `{shell} -c` with HOME {}",
            sshd.user,
            me.shell.display(),
            if home == format!("{d}/home") {
                "= an empty dir (no rc file of the user runs)".to_owned()
            } else {
                format!("= {home} (its rc files may run)")
            }
        );
        let v = Command::new("ssh").arg("-V").output().ok();
        sshd.version = v
            .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_owned())
            .unwrap_or_default();
        Ok(sshd)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log"))
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// An `ssh` client command to this sshd with the bench's options and no destination yet.
    /// `-F /dev/null` keeps the user's ssh config out.
    fn ssh_base(&self) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-F", "/dev/null", "-T"])
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
            ])
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "IdentitiesOnly=yes",
            ])
            .arg("-i")
            .arg(self.dir.join("user_key"))
            .args(["-p", &self.port.to_string()]);
        c
    }

    fn destination(&self) -> String {
        format!("{}@127.0.0.1", self.user)
    }

    /// An `ssh` command ending with the destination (append the remote command); `mux` goes
    /// through the master connection.
    fn ssh(&self, mux: bool) -> Command {
        let mut c = self.ssh_base();
        if mux {
            c.args(["-o", "ControlMaster=no", "-o"])
                .arg(format!("ControlPath={}", self.control().display()));
        }
        c.arg(self.destination());
        c
    }

    fn control(&self) -> PathBuf {
        self.dir.join("cm")
    }

    /// Opens the ControlMaster connection (a child `ssh -N`) and waits for its socket.
    fn start_master(&mut self) -> Result<(), String> {
        let mut c = self.ssh_base();
        c.args([
            "-N",
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            "-o",
        ])
        .arg(format!("ControlPath={}", self.control().display()))
        .arg(self.destination())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
        self.master = Some(
            c.spawn()
                .map_err(|e| format!("start the ssh master: {e}"))?,
        );
        let control = self.control();
        wait_for(Duration::from_secs(10), || control.exists().then_some(()))
            .ok_or_else(|| "the ssh master did not open its control socket within 10 s".to_owned())
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // The master first: its session on sshd ends with it.
        if let Some(mut master) = self.master.take() {
            let _ = Command::new("ssh")
                .args(["-F", "/dev/null", "-o"])
                .arg(format!("ControlPath={}", self.control().display()))
                .args(["-O", "exit", "127.0.0.1"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output();
            if wait_for(Duration::from_secs(5), || master.try_wait().ok().flatten()).is_none() {
                let _ = master.kill();
                let _ = master.wait();
            }
        }
        if let Some(mut child) = self.child.take() {
            if let Ok(raw) = i32::try_from(child.id()) {
                let _ = kill(Pid::from_raw(raw), Signal::SIGTERM);
            }
            if wait_for(Duration::from_secs(5), || child.try_wait().ok().flatten()).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Installs `openssh-server` with `apt-get` when `sshd` is missing (once more after
/// `apt-get update` if the first try fails). On machines whose package scripts start services
/// this may also start the system's own sshd; this bench neither starts nor stops that one.
fn ensure_sshd() -> Result<(), String> {
    if Path::new(SSHD).exists() {
        return Ok(());
    }
    progress("sshd is missing: apt-get install -y openssh-server");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=120"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
    };
    let mut last = String::new();
    for attempt in 0..2 {
        if attempt == 1 {
            let _ = apt(&["update"]);
        }
        match apt(&["install", "-y", "openssh-server"]) {
            Ok(out) if out.status.success() && Path::new(SSHD).exists() => return Ok(()),
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                last = err.lines().last().unwrap_or("no message").to_owned();
            }
            Err(e) => return Err(format!("cannot run apt-get to install openssh-server: {e}")),
        }
    }
    Err(format!(
        "`apt-get install -y openssh-server` failed: {last}"
    ))
}

/// Runs a command to completion; `Err` with its stderr unless it succeeds.
fn run_ok(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn free_port() -> Option<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").ok()?;
    listener.local_addr().ok().map(|a| a.port())
}

// ---------------------------------------------------------------------------------------------
// 1. Snapshot reads
// ---------------------------------------------------------------------------------------------

fn snapshot_reads(crew: &Crew, sshd: Option<&mut Sshd>, out: &mut Output) {
    let agent = agent();
    let pane = &crew.reads[0];
    let relayed_url = crew.lead.url(&format!("/api/panes/web-1/{pane}"));
    let local_url = crew.web1.bridge.url(&format!("/api/panes/local/{pane}"));
    let pids = [crew.lead.pid(), crew.web1.bridge.pid()];

    progress("1. snapshot reads through the lead");
    let cpu = CpuMeter::start(&pids);
    let (relayed, relayed_bytes) = measure_get(&agent, &relayed_url, &crew.lead_auth, 200, READS);
    let relayed_cpu = cpu.per(READS);
    progress("1. snapshot reads on the member");
    let cpu = CpuMeter::start(&pids);
    let (local, local_bytes) = measure_get(&agent, &local_url, &crew.web1_auth, 200, READS);
    let local_cpu = cpu.per(READS);
    // Splitting the relayed read: the lead answering a request with no relay, and a relayed
    // request whose answer is small (the member finds no such pane).
    let cpu = CpuMeter::start(&pids);
    let (lead_only, _) = measure_get(
        &agent,
        &crew.lead.url("/api/machines"),
        &crew.lead_auth,
        200,
        READS,
    );
    let lead_only_cpu = cpu.per(READS);
    let cpu = CpuMeter::start(&pids);
    let (relayed_404, _) = measure_get(
        &agent,
        &crew.lead.url("/api/panes/web-1/t1-999"),
        &crew.lead_auth,
        404,
        READS,
    );
    let relayed_404_cpu = cpu.per(READS);

    let tmux = &crew.web1.tmux;
    let capture = tmux.capture_args(&crew.reads_tmux);
    let expected = tmux.run(
        &capture
            .iter()
            .skip(2)
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    progress("1. bare tmux capture-pane");
    let spawn = measure_cmd(
        || {
            let mut c = tmux.cmd();
            // `cmd` already names the socket; keep only the command.
            c.args(&capture[2..]);
            c
        },
        READS,
        &expected,
    );

    let mut ssh_rows: Vec<(String, Stats, String)> = Vec::new();
    let mut mux_p50 = None;
    if let Some(sshd) = sshd {
        let remote = format!("tmux {}", capture.join(" "));
        let fresh_n = std::env::var("COLLIE_BENCH_SSH_FRESH")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(SSH_FRESH_DEFAULT);
        progress(&format!(
            "1. ssh, a fresh connection per read (n = {fresh_n})"
        ));
        let fresh = measure_cmd(
            || {
                let mut c = sshd.ssh(false);
                c.arg(&remote);
                c
            },
            fresh_n,
            &expected,
        );
        match sshd.start_master() {
            Ok(()) => {
                progress("1. ssh over one ControlMaster connection");
                let mux = measure_cmd(
                    || {
                        let mut c = sshd.ssh(true);
                        c.arg(&remote);
                        c
                    },
                    READS,
                    &expected,
                );
                mux_p50 = Some(mux.p50);
                ssh_rows.push((
                    "d. ssh, ControlMaster connection: tmux capture-pane".to_owned(),
                    mux,
                    String::new(),
                ));
            }
            Err(why) => out.note(format!("multiplexed ssh skipped: {why}")),
        }
        ssh_rows.insert(
            0,
            (
                "c. ssh, fresh connection per read: tmux capture-pane".to_owned(),
                fresh,
                if fresh_n == SSH_FRESH_DEFAULT {
                    format!("n = {fresh_n} by default (COLLIE_BENCH_SSH_FRESH)")
                } else {
                    String::new()
                },
            ),
        );
        out.note(format!("ssh: {}; {}", sshd.version, sshd.remote));
    }

    let vs = |s: &Stats| mux_p50.map_or_else(String::new, |m| ratio(m, s.p50));
    let mut t = Table::new(
        "1. Snapshot read of web-1's tmux pane (100 x 30, full of text), sequential",
        &[
            "read",
            "p50",
            "p99",
            "max",
            "n",
            "mux ssh p50 / p50",
            "notes",
        ],
    );
    let mut row = |what: &str, s: &Stats, note: String| {
        t.row(vec![
            what.to_owned(),
            dur(s.p50),
            dur(s.p99),
            dur(s.max),
            s.n.to_string(),
            vs(s),
            note,
        ]);
    };
    row(
        "a. lead: GET /api/panes/web-1/{pane} (relayed)",
        &relayed,
        format!(
            "{relayed_bytes} B answer; CPU per read: lead {}, web-1 {}",
            dur(relayed_cpu[0]),
            dur(relayed_cpu[1])
        ),
    );
    row(
        "b. web-1: GET /api/panes/local/{pane}",
        &local,
        format!(
            "{local_bytes} B answer; CPU per read: web-1 {}",
            dur(local_cpu[1])
        ),
    );
    for (what, s, note) in &ssh_rows {
        row(what, s, note.clone());
    }
    row(
        "e. local spawn: tmux capture-pane -p",
        &spawn,
        format!("{} B of text", expected.len()),
    );
    row(
        "   lead alone: GET /api/machines (no relay)",
        &lead_only,
        format!("CPU per read: lead {}", dur(lead_only_cpu[0])),
    );
    row(
        "   lead: GET /api/panes/web-1/t1-999 (relayed 404)",
        &relayed_404,
        format!(
            "CPU per read: lead {}, web-1 {}",
            dur(relayed_404_cpu[0]),
            dur(relayed_404_cpu[1])
        ),
    );
    out.table(t);

    out.note(format!(
        "relay cost over the member's own read: p50 {} more ({:.2}x); the relayed 404 \
         costs {} over the lead alone",
        dur(relayed.p50.saturating_sub(local.p50)),
        relayed.p50.as_secs_f64() / local.p50.as_secs_f64(),
        dur(relayed_404.p50.saturating_sub(lead_only.p50)),
    ));
    let goal = format!(
        "goal relay p50 <= {}: {} ({})",
        dur(RELAY_P50_GOAL),
        met(relayed.p50 <= RELAY_P50_GOAL),
        dur(relayed.p50)
    );
    let ratio = mux_p50.map_or_else(
        || "goal >= 10x multiplexed ssh: not measured".to_owned(),
        |m| {
            let r = m.as_secs_f64() / relayed.p50.as_secs_f64();
            format!(
                "goal >= {SSH_RATIO_GOAL:.0}x multiplexed ssh: {} ({r:.1}x)",
                met(r >= SSH_RATIO_GOAL)
            )
        },
    );
    out.note(format!("{goal}; {ratio}"));
}

// ---------------------------------------------------------------------------------------------
// 2. Saturation
// ---------------------------------------------------------------------------------------------

fn saturation(crew: &Crew, out: &mut Output) {
    let relayed: Vec<String> = [("web-1", &crew.reads[0]), ("web-2", &crew.reads[1])]
        .iter()
        .map(|(m, p)| crew.lead.url(&format!("/api/panes/{m}/{p}")))
        .collect();
    let local = vec![crew
        .web1
        .bridge
        .url(&format!("/api/panes/local/{}", crew.reads[0]))];
    let pids = [
        crew.lead.pid(),
        crew.web1.bridge.pid(),
        crew.web2.bridge.pid(),
    ];
    let mut t = Table::new(
        &format!(
            "2. Reads per second at saturation ({} s per level, one keep-alive connection per \
             client thread; the clients share the 2 vCPUs with the bridges)",
            SATURATION_FOR.as_secs()
        ),
        &[
            "reads of",
            "clients",
            "reads/s",
            "p50",
            "p99",
            "CPU per read",
        ],
    );
    for &threads in &SATURATION_THREADS {
        progress(&format!(
            "2. saturation through the lead, {threads} clients"
        ));
        let s = saturate(&relayed, &crew.lead_auth, threads, &pids);
        t.row(vec![
            "both members, through the lead".to_owned(),
            threads.to_string(),
            format!("{:.0}", s.rate),
            dur(s.stats.p50),
            dur(s.stats.p99),
            format!(
                "lead {}, web-1 + web-2 {}",
                dur(s.cpu[0]),
                dur(s.cpu[1] + s.cpu[2])
            ),
        ]);
    }
    for &threads in &SATURATION_THREADS {
        progress(&format!(
            "2. saturation on web-1 directly, {threads} clients"
        ));
        let s = saturate(&local, &crew.web1_auth, threads, &pids);
        t.row(vec![
            "web-1's own API, for scale".to_owned(),
            threads.to_string(),
            format!("{:.0}", s.rate),
            dur(s.stats.p50),
            dur(s.stats.p99),
            format!("web-1 {}", dur(s.cpu[1])),
        ]);
    }
    out.table(t);
}

struct Saturation {
    rate: f64,
    stats: Stats,
    /// CPU time per read of each process in `pids`.
    cpu: Vec<Duration>,
}

/// `threads` clients, each on its own keep-alive agent, reading `urls` in turn for
/// [`SATURATION_FOR`] after a short unmeasured warm-up.
fn saturate(urls: &[String], auth: &str, threads: usize, pids: &[u32]) -> Saturation {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<JoinHandle<(Vec<Duration>, Duration)>> = (0..threads)
        .map(|i| {
            let urls = urls.to_vec();
            let auth = auth.to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let agent = agent();
                for k in 0..20 {
                    get_ok(&agent, &urls[(i + k) % urls.len()], &auth);
                }
                barrier.wait();
                let start = Instant::now();
                let mut times = Vec::new();
                let mut k = i;
                while start.elapsed() < SATURATION_FOR {
                    let t = Instant::now();
                    get_ok(&agent, &urls[k % urls.len()], &auth);
                    times.push(t.elapsed());
                    k += 1;
                }
                (times, start.elapsed())
            })
        })
        .collect();
    barrier.wait();
    let cpu = CpuMeter::start(pids);
    let mut all = Vec::new();
    let mut rate = 0.0;
    for h in handles {
        let (times, took) = h.join().expect("a saturation client thread panicked");
        rate += times.len() as f64 / took.as_secs_f64();
        all.extend(times);
    }
    let n = all.len();
    Saturation {
        rate,
        cpu: cpu.per(n),
        stats: Stats::of(all),
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Keystroke -> echo
// ---------------------------------------------------------------------------------------------

fn keystrokes(crew: &Crew, out: &mut Output) {
    let agent = agent();
    let mut t = Table::new(
        &format!(
            "3. Keystroke -> echo on web-1 (`cat` in tmux): POST input {{\"text\":\"x\"}} until the \
             SSE stream shows it (n = {KEYSTROKES} each)"
        ),
        &["path", "spacing", "p50", "p99", "max", "its POST: p50", "p99"],
    );
    let mut p50s = BTreeMap::new();
    for (path, auth, base) in crew.typing_paths() {
        let input = format!("{base}/input");
        progress(&format!("3. keystrokes, {path}"));
        let stream = EventStream::open(&format!("{base}/stream"), auth);
        let mut typist = Typist::default();
        for (spacing, gap) in [
            ("100 ms between keys", TYPING_GAP),
            ("back to back", Duration::ZERO),
        ] {
            let (s, posts) = typist.run(&agent, &input, auth, &stream, gap);
            p50s.insert((path, spacing), s.p50);
            t.row(vec![
                path.to_owned(),
                spacing.to_owned(),
                dur(s.p50),
                dur(s.p99),
                dur(s.max),
                dur(posts.p50),
                dur(posts.p99),
            ]);
        }
        let closed = stream.close(|| post(&agent, &input, auth, &json!({ "keys": ["Enter"] })));
        if !closed {
            out.note(format!(
                "the SSE reader of `{path}` did not end within 20 s; it ends with its bridge"
            ));
        }
    }
    out.table(t);
    let fsync = fsync_probe(&crew.lead.dir().join("fsync-probe"));
    out.note(format!(
        "every write is audited with an fsync before it runs, on the lead and again on the \
         member; an fsync'd append of one line here takes p50 {}, p99 {} (n = {})",
        dur(fsync.p50),
        dur(fsync.p99),
        fsync.n
    ));
    for spacing in ["100 ms between keys", "back to back"] {
        let (Some(r), Some(l)) = (
            p50s.get(&("through the lead", spacing)),
            p50s.get(&("web-1 directly", spacing)),
        ) else {
            continue;
        };
        out.note(format!(
            "keystroke -> echo, {spacing}: the lead adds {} at the median ({} vs {})",
            dur(r.saturating_sub(*l)),
            dur(*r),
            dur(*l)
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// 3b. Writes at once (group commit)
// ---------------------------------------------------------------------------------------------

/// Writers typing into the same `cat` pane at once, each on its own keep-alive connection.
const WRITERS: [usize; 2] = [1, 8];

/// Writes per writer in the "writes at once" figures, after [`KEY_WARM_UP`] unmeasured ones.
const WRITES_EACH: usize = 100;

/// Every write is audited before it runs; writers arriving together share the audit's store write
/// and `fdatasync` (group commit, decision 0020). POST round trips and writes per second with one
/// writer and with eight, through the lead and on the member directly.
fn writes_at_once(crew: &Crew, out: &mut Output) {
    let mut t = Table::new(
        &format!(
            "3b. Writes at once into web-1's `cat` pane: POST input {{\"text\":\"x\"}} back to back \
             from each writer's own connection (n = {WRITES_EACH} per writer)"
        ),
        &["path", "writers", "writes/s", "POST p50", "p99"],
    );
    for (path, auth, base) in crew.typing_paths() {
        let input = format!("{base}/input");
        for writers in WRITERS {
            progress(&format!("3b. {writers} writers at once, {path}"));
            let barrier = Arc::new(Barrier::new(writers + 1));
            let handles: Vec<JoinHandle<(Vec<Duration>, Duration)>> = (0..writers)
                .map(|_| {
                    let (input, auth, barrier) =
                        (input.clone(), auth.to_string(), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        let agent = agent();
                        let x = json!({ "text": "x" });
                        for _ in 0..KEY_WARM_UP {
                            post(&agent, &input, &auth, &x);
                        }
                        barrier.wait();
                        let start = Instant::now();
                        let times = (0..WRITES_EACH)
                            .map(|_| {
                                let t = Instant::now();
                                post(&agent, &input, &auth, &x);
                                t.elapsed()
                            })
                            .collect();
                        (times, start.elapsed())
                    })
                })
                .collect();
            barrier.wait();
            let mut all = Vec::new();
            let mut rate = 0.0;
            for h in handles {
                let (times, took) = h.join().expect("a writer thread panicked");
                rate += times.len() as f64 / took.as_secs_f64();
                all.extend(times);
            }
            let s = Stats::of(all);
            t.row(vec![
                path.to_owned(),
                writers.to_string(),
                format!("{rate:.0}"),
                dur(s.p50),
                dur(s.p99),
            ]);
        }
        // Unmeasured: end the line of x's (cat prints it back).
        post(&agent(), &input, auth, &json!({ "keys": ["Enter"] }));
    }
    out.table(t);
}

/// Appends a 200-byte line to `path` and `sync_data`s it, 200 times, opening the file each time as
/// the audit sink does: what one audit line costs on the disk the bridges' state dirs are on.
fn fsync_probe(path: &Path) -> Stats {
    use std::io::Write;
    let line = [b'x'; 200];
    let times = (0..200)
        .map(|_| {
            let t = Instant::now();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .expect("open the fsync probe file");
            f.write_all(&line).expect("write the fsync probe file");
            f.sync_data().expect("fsync the probe file");
            t.elapsed()
        })
        .collect();
    let _ = std::fs::remove_file(path);
    Stats::of(times)
}

/// Types lines of letters into a `cat` pane, one character per request, and times each echo (and
/// the POST's own round trip: the echo can come before the answer). Each line's letters start at a different place in the alphabet, so no earlier line (cat prints
/// each line back after Enter) can be mistaken for the one being typed.
#[derive(Default)]
struct Typist {
    line: String,
    line_no: usize,
}

impl Typist {
    fn run(
        &mut self,
        agent: &ureq::Agent,
        input: &str,
        auth: &str,
        stream: &EventStream,
        gap: Duration,
    ) -> (Stats, Stats) {
        let mut times = Vec::with_capacity(KEYSTROKES);
        let mut posts = Vec::with_capacity(KEYSTROKES);
        for k in 0..KEY_WARM_UP + KEYSTROKES {
            if self.line.len() == LINE {
                // Unmeasured: end the line (cat prints it back), let the coalescing window pass.
                post(agent, input, auth, &json!({ "keys": ["Enter"] }));
                std::thread::sleep(Duration::from_millis(100));
                self.line.clear();
                self.line_no += 1;
            }
            let letter = (self.line_no * 7 + self.line.len()) % 26;
            let c = char::from(b'a' + u8::try_from(letter).expect("a letter"));
            self.line.push(c);
            if !gap.is_zero() {
                std::thread::sleep(gap);
            }
            stream.drain();
            let sent = Instant::now();
            post(agent, input, auth, &json!({ "text": c.to_string() }));
            let answered = sent.elapsed();
            let seen = stream
                .wait_for_row(&self.line, Duration::from_secs(5))
                .unwrap_or_else(|| panic!("the echo of {:?} did not come within 5 s", self.line));
            if k >= KEY_WARM_UP {
                times.push(seen.saturating_duration_since(sent));
                posts.push(answered);
            }
        }
        (Stats::of(times), Stats::of(posts))
    }
}

/// A pane's SSE stream, read on a thread that stamps each `data:` event with the time it was read.
struct EventStream {
    rx: mpsc::Receiver<(Instant, Value)>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl EventStream {
    /// Opens the stream and waits for its first (full) event.
    fn open(url: &str, auth: &str) -> EventStream {
        // No overall timeout: the stream stays open; a read timeout well above the keep-alive
        // comments' interval (15 s) only guards against a dead connection.
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(5))
            .timeout_read(Duration::from_secs(60))
            .build();
        let resp = agent
            .get(url)
            .set("Authorization", auth)
            .call()
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut reader = BufReader::new(resp.into_reader());
            let mut line = String::new();
            loop {
                line.clear();
                if !matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
                    return;
                }
                let at = Instant::now();
                if flag.load(Ordering::Relaxed) {
                    return; // dropping the reader closes the connection
                }
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
                    continue;
                };
                if tx.send((at, event)).is_err() {
                    return;
                }
            }
        });
        let stream = EventStream { rx, stop, thread };
        let (_, first) = stream
            .rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the stream's first event comes within 10 s");
        assert_eq!(first["full"], true, "the first event carries every row");
        stream
    }

    fn drain(&self) {
        while self.rx.try_recv().is_ok() {}
    }

    /// The time the first event came whose changed rows include one reading exactly `want`.
    fn wait_for_row(&self, want: &str, timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let (at, event) = self.rx.recv_timeout(left).ok()?;
            let shows = event["rows"].as_object().is_some_and(|rows| {
                rows.values()
                    .any(|r| r.as_str().map(str::trim_end) == Some(want))
            });
            if shows {
                return Some(at);
            }
        }
    }

    /// Ends the stream: the reader stops at the next line, which `poke` causes. `false` if the
    /// thread did not end within 20 s (it then ends when its bridge stops).
    fn close(self, poke: impl FnOnce()) -> bool {
        self.stop.store(true, Ordering::Relaxed);
        poke();
        let ended = wait_for(Duration::from_secs(20), || {
            self.thread.is_finished().then_some(())
        })
        .is_some();
        if ended {
            let _ = self.thread.join();
        }
        ended
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Lead memory with 50 members
// ---------------------------------------------------------------------------------------------

fn lead_memory(root: &Path, out: &mut Output) {
    progress(&format!("4. a fresh lead and {MEMBERS} members"));
    let dir = root.join("crew50");
    // A crew port of its own, so the restarted lead below is found where the invites said.
    let crew_port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free UDP port")
        .port()
        .to_string();
    let lead_options = || {
        bridge("lead", Role::Lead)
            .dir(dir.join("lead"))
            .env("COLLIE_CREW_PORT", &crew_port)
    };
    let mut lead = lead_options().start();
    lead.cli_ok(&["crew", "init"]);
    let lead_pid = lead.pid();
    let before = wait_rss_stable(lead_pid);
    let threads_before = status_field(lead_pid, "Threads").unwrap_or(0);
    let split_before = RssSplit::of(lead_pid);

    let started = Instant::now();
    let mut members: Vec<Bridge> = Vec::with_capacity(MEMBERS);
    for i in 1..=MEMBERS {
        let name = format!("m-{i:02}");
        let member = bridge(&name, Role::Member).dir(dir.join(&name)).start();
        let invite = lead.invite();
        member.cli_ok(&["crew", "join", &invite, "--name", &name]);
        members.push(member);
    }
    let joined = started.elapsed();
    let online = wait_for(Duration::from_secs(120), || {
        (lead.members_online() == MEMBERS).then_some(())
    });
    let all_online = started.elapsed();
    let connected = wait_rss_stable(lead_pid);
    let threads_connected = status_field(lead_pid, "Threads").unwrap_or(0);
    let split_connected = RssSplit::of(lead_pid);
    progress(&format!("4. {} s idle", IDLE_FOR.as_secs()));
    std::thread::sleep(IDLE_FOR);
    let idle = rss_bytes(lead_pid);
    let split_idle = RssSplit::of(lead_pid);
    let still_online = lead.members_online();
    let member_rss: u64 = members.iter().map(|m| rss_bytes(m.pid())).sum();

    let mut t = Table::new(
        &format!("4. Lead memory with {MEMBERS} member bridges connected (VmRSS)"),
        &["when", "lead RSS", "anon / file", "threads", "notes"],
    );
    t.row(vec![
        "crew init, no member".to_owned(),
        mib(before),
        split_before.show(),
        threads_before.to_string(),
        String::new(),
    ]);
    t.row(vec![
        format!("{MEMBERS} members online, settled"),
        mib(connected),
        split_connected.show(),
        threads_connected.to_string(),
        format!(
            "{:+.1} KiB per member ({:+.1} anonymous, {:+.1} file pages); {MEMBERS} bridges \
             started and joined in {:.1} s, all online after {:.1} s{}",
            (connected as f64 - before as f64) / 1024.0 / MEMBERS as f64,
            split_connected.anon_per(&split_before, MEMBERS),
            split_connected.file_per(&split_before, MEMBERS),
            joined.as_secs_f64(),
            all_online.as_secs_f64(),
            if online.is_some() {
                String::new()
            } else {
                format!("; ONLY {} ONLINE after 120 s", lead.members_online())
            }
        ),
    ]);
    t.row(vec![
        format!("after {} s more idle", IDLE_FOR.as_secs()),
        mib(idle),
        split_idle.show(),
        status_field(lead_pid, "Threads").unwrap_or(0).to_string(),
        format!(
            "{still_online} online; {:+.1} KiB anonymous per member since no member; members' \
             own RSS {:.2} MiB each on average",
            split_idle.anon_per(&split_before, MEMBERS),
            member_rss as f64 / MIB / MEMBERS as f64
        ),
    ]);
    out.table(t);

    // The same crew once more, without the joins: the lead restarted with its 50 members
    // pinned, measured with none of them online (they are stopped meanwhile), then with all of
    // them reconnected. This is what an idle online member costs; the rows above also hold what
    // 50 joins (a handshake, an invite and audit lines each) left in the allocator.
    progress("4. the lead restarted; the members reconnect");
    for m in &members {
        let _ = kill(Pid::from_raw(m.pid() as i32), Signal::SIGSTOP);
    }
    lead.stop();
    let lead = lead_options().start();
    let lead_pid = lead.pid();
    let offline = wait_rss_stable(lead_pid);
    let split_offline = RssSplit::of(lead_pid);
    let online_while_stopped = lead.members_online();
    for m in &members {
        let _ = kill(Pid::from_raw(m.pid() as i32), Signal::SIGCONT);
    }
    let restarted = Instant::now();
    let back = wait_for(Duration::from_secs(120), || {
        (lead.members_online() == MEMBERS).then_some(())
    });
    let back_after = restarted.elapsed();
    let reconnected = wait_rss_stable(lead_pid);
    progress(&format!("4. {} s idle", IDLE_FOR.as_secs()));
    std::thread::sleep(IDLE_FOR);
    let reconnected_idle = rss_bytes(lead_pid);
    let split_reconnected = RssSplit::of(lead_pid);
    let mut t = Table::new(
        &format!("4b. The same lead restarted, its {MEMBERS} members reconnecting (VmRSS)"),
        &["when", "lead RSS", "anon / file", "notes"],
    );
    t.row(vec![
        "restarted, no member online".to_owned(),
        mib(offline),
        split_offline.show(),
        format!("{online_while_stopped} online (the members are stopped)"),
    ]);
    t.row(vec![
        format!(
            "{MEMBERS} members back online, settled + {} s",
            IDLE_FOR.as_secs()
        ),
        mib(reconnected_idle),
        split_reconnected.show(),
        format!(
            "{:+.1} KiB per member ({:+.1} anonymous, {:+.1} file pages); settled at {}; all \
             online after {:.1} s{}",
            (reconnected_idle as f64 - offline as f64) / 1024.0 / MEMBERS as f64,
            split_reconnected.anon_per(&split_offline, MEMBERS),
            split_reconnected.file_per(&split_offline, MEMBERS),
            mib(reconnected),
            back_after.as_secs_f64(),
            if back.is_some() {
                String::new()
            } else {
                format!("; ONLY {} ONLINE after 120 s", lead.members_online())
            }
        ),
    ]);
    out.table(t);

    progress("4. stopping the members and the lead");
    for m in &members {
        m.signal_stop();
    }
    for mut m in members {
        m.stop();
    }
}

/// A process's resident memory split as `/proc/<pid>/status` gives it: anonymous pages (heap,
/// stacks: what the process keeps) and file pages (mostly the binary's code, faulted in as code
/// runs for the first time — the first join runs code no earlier request did, so part of what the
/// lead grows by while members join is code, once, not memory per member).
struct RssSplit {
    anon_kib: u64,
    file_kib: u64,
}

impl RssSplit {
    fn of(pid: u32) -> RssSplit {
        RssSplit {
            anon_kib: status_field(pid, "RssAnon").unwrap_or(0),
            file_kib: status_field(pid, "RssFile").unwrap_or(0),
        }
    }

    fn show(&self) -> String {
        format!(
            "{:.2} / {:.2} MiB",
            self.anon_kib as f64 / 1024.0,
            self.file_kib as f64 / 1024.0
        )
    }

    fn anon_per(&self, before: &RssSplit, n: usize) -> f64 {
        (self.anon_kib as f64 - before.anon_kib as f64) / n as f64
    }

    fn file_per(&self, before: &RssSplit, n: usize) -> f64 {
        (self.file_kib as f64 - before.file_kib as f64) / n as f64
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

fn post(agent: &ureq::Agent, url: &str, auth: &str, body: &Value) {
    match agent.post(url).set("Authorization", auth).send_json(body) {
        Ok(r) => {
            let _ = r.into_string();
        }
        Err(e) => panic!("POST {url}: {e}"),
    }
}

/// `n` runs of the command `make` builds (after [`SPAWN_WARM_UP`] unmeasured ones), each timed
/// from spawn to exit with its output read, and each checked to print `expected`.
fn measure_cmd(mut make: impl FnMut() -> Command, n: usize, expected: &str) -> Stats {
    let mut times = Vec::with_capacity(n);
    for i in 0..SPAWN_WARM_UP + n {
        let mut cmd = make();
        cmd.stdin(Stdio::null());
        let t = Instant::now();
        let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
        let took = t.elapsed();
        assert!(
            out.status.success() && out.stdout == expected.as_bytes(),
            "{cmd:?} did not print the pane: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i >= SPAWN_WARM_UP {
            times.push(took);
        }
    }
    Stats::of(times)
}

/// CPU time that some processes spend between [`CpuMeter::start`] and [`CpuMeter::per`]: the sum
/// of their threads' run time from `/proc/<pid>/task/*/schedstat`, in nanoseconds (`/proc/<pid>/stat`
/// counts 10 ms ticks, too coarse for a 1,000 reads of tens of microseconds each). A thread that
/// exits in between takes its time with it; the bridges' threads live as long as they do.
struct CpuMeter {
    pids: Vec<u32>,
    start: Vec<u64>,
}

impl CpuMeter {
    fn start(pids: &[u32]) -> CpuMeter {
        CpuMeter {
            pids: pids.to_vec(),
            start: pids.iter().map(|&p| cpu_ns(p)).collect(),
        }
    }

    /// CPU time per operation of each process, for `ops` operations.
    fn per(&self, ops: usize) -> Vec<Duration> {
        self.pids
            .iter()
            .zip(&self.start)
            .map(|(&p, &s)| {
                let ns = cpu_ns(p).saturating_sub(s);
                Duration::from_nanos(ns / u64::try_from(ops.max(1)).unwrap_or(u64::MAX))
            })
            .collect()
    }
}

/// The run time of all threads of a process, in nanoseconds.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

/// Tables and notes, printed at the end (progress goes to stderr meanwhile).
#[derive(Default)]
struct Output {
    parts: Vec<Part>,
}

enum Part {
    Table(Table),
    Note(String),
}

impl Output {
    fn table(&mut self, t: Table) {
        self.parts.push(Part::Table(t));
    }

    fn note(&mut self, n: String) {
        self.parts.push(Part::Note(n));
    }

    fn print(&self) {
        for part in &self.parts {
            match part {
                Part::Table(t) => t.print(),
                Part::Note(n) => println!("  * {n}"),
            }
        }
    }
}

/// A titled table of left-aligned columns.
struct Table {
    title: String,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(title: &str, header: &[&str]) -> Table {
        Table {
            title: title.to_owned(),
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn print(&self) {
        println!();
        println!("{}", self.title);
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in &self.rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            println!("  {}", line.join("  ").trim_end());
        }
    }
}

/// A duration in µs below 10 ms, else in ms with one decimal.
fn dur(d: Duration) -> String {
    if d < Duration::from_millis(10) {
        format!("{} us", d.as_micros())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

/// How many times faster `b` is than `a`, with two significant digits below 1.
fn ratio(a: Duration, b: Duration) -> String {
    let r = a.as_secs_f64() / b.as_secs_f64();
    if r < 1.0 {
        format!("{r:.2}x")
    } else {
        format!("{r:.1}x")
    }
}
