//! Process sessions (SPEC §11, seed 003 §7.5, §7.6, §8.2, §8.7, §8.11): `start_process`,
//! `interact_with_process`, `read_process_output`, `list_sessions`, `kill_process` and
//! `force_terminate`, and the process machinery `exec_command` shares with them.
//!
//! A session is `sh -c <command>` started under the tool guard ([`guard`]) in a process group of
//! its own, with piped stdin, stdout and stderr. It is named by 128 random bits in hex, never by a
//! pid, and belongs to the owner (the device) that started it: every call names the owner the
//! application layer authenticated, and another owner's session is answered like a missing one.
//!
//! Interaction is polling with a byte cursor (decision 0032): output goes into the session's ring
//! (2 MiB, oldest bytes dropped) whether anyone reads or not; a read names an `offset` and the
//! answer says where to read next and how many bytes the ring dropped in between. Nobody holds a
//! connection, so there is nothing to reconnect: each call is authenticated afresh.
//!
//! The table and its caps are a pure core (`sessions/core.rs`); this shell owns the processes, the
//! pipes and one task per session that notices the exit, enforces the idle timeout and maximum
//! lifetime, and reaps. A session past either limit is killed and forgotten; none survives the
//! bridge:
//! [`Sessions::shutdown`] (and, best effort, dropping the last handle) kills every group, and the
//! guard kills its group when the bridge dies, even by SIGKILL.

pub(crate) mod child;
pub(crate) mod core;
mod forker;
mod gate;
pub mod guard;
mod limits;
mod ring;
mod wire;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use parking_lot::Mutex;
use rand::RngCore;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use self::child::{GroupGuard, Spawned};
use self::core::{millis, Core, Entry, Expiry};
pub use self::guard::guard_main;
pub use self::limits::SessionLimits;
pub use self::wire::{
    InteractWithProcessArgs, KillProcessArgs, Killed, Output, ReadProcessOutputArgs, SessionInfo,
    SessionList, StartProcessArgs, Started,
};
use super::{Done, ToolError};
use crate::command_word::first_word;

/// The hidden first argument of `collie` that runs the tool guard instead of the CLI.
pub const TOOL_GUARD: &str = "__tool-guard";

/// The longest command line a tool runs.
pub(crate) const MAX_COMMAND: usize = 64 * 1024;
/// The most bytes a read answers.
const MAX_READ: u64 = 1024 * 1024;
/// The bytes a read answers when it names no `length`.
const DEFAULT_READ: u64 = 64 * 1024;
/// After the first output, how long without more output ends the wait of `start_process` and
/// `interact_with_process`.
const QUIET: Duration = Duration::from_millis(100);

/// How a command is started: the program and leading arguments of the guard (the bridge passes
/// its own executable and `__tool-guard`; tests pass the built `collie` binary). The guard's own
/// arguments (`<bridge pid> -- [sandbox…] sh -c <command>`) follow.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The guard's program.
    pub program: PathBuf,
    /// Its leading arguments.
    pub args: Vec<OsString>,
    /// The words that confine the command under the applied sandbox policy
    /// (`collie_sandbox::launch::prefix`), placed between the guard and `sh -c`; empty when the
    /// profile is `off`.
    pub sandbox: Vec<OsString>,
}

/// The process sessions of this bridge, and its running `exec_command`s. A cheap handle: clones
/// share the table.
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    launcher: Launcher,
    state: Mutex<State>,
}

struct State {
    core: Core,
    live: HashMap<String, Live>,
}

/// What the shell holds for a session beside its bookkeeping.
struct Live {
    /// The process group (the guard's pid). Signalled only while the entry says `running`.
    group: Pid,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// Bumped on new output and on exit.
    changed: watch::Sender<()>,
    /// The output pumps and the monitor; dropping them ends them.
    _tasks: Vec<AbortOnDropHandle<()>>,
}

impl State {
    /// Forgets a session; its tasks end with it.
    fn forget(&mut self, id: &str) {
        self.core.remove(id);
        self.live.remove(id);
    }
}

impl Sessions {
    /// An empty table under `limits`, starting commands through `launcher`.
    pub fn new(limits: SessionLimits, launcher: Launcher) -> Sessions {
        Sessions {
            inner: Arc::new(Inner {
                launcher,
                state: Mutex::new(State {
                    core: Core::new(limits),
                    live: HashMap::new(),
                }),
            }),
        }
    }

    /// The caps in force.
    pub fn limits(&self) -> SessionLimits {
        self.inner.state.lock().core.limits().clone()
    }

    /// The output bytes all session rings hold now (for tests and figures: it never exceeds
    /// `max_sessions × ring_bytes`).
    pub fn buffered_bytes(&self) -> usize {
        self.inner.state.lock().core.buffered_bytes()
    }

    /// The guard's launcher.
    pub(crate) fn launcher(&self) -> &Launcher {
        &self.inner.launcher
    }

    /// Admits an `exec_command` of `owner` (see [`Core::begin_exec`]).
    pub(crate) fn begin_exec(&self, owner: &str) -> Result<(), ToolError> {
        self.inner
            .state
            .lock()
            .core
            .begin_exec(owner, Instant::now())
    }

    /// An `exec_command` of `owner` ended.
    pub(crate) fn end_exec(&self, owner: &str) {
        self.inner.state.lock().core.end_exec(owner);
    }

    /// `start_process`: starts `a.command` in `cwd` as a session of `owner` and answers its first
    /// output.
    pub async fn start_process(
        &self,
        owner: &str,
        cwd: PathBuf,
        a: StartProcessArgs,
    ) -> Result<Done<Started>, ToolError> {
        check_command(&a.command)?;
        let wait = self.wait(a.timeout_ms);
        let id = new_id()?;
        self.inner
            .state
            .lock()
            .core
            .open(id.clone(), owner, &a.command, Instant::now())?;
        let spawned = match child::spawn(&self.inner.launcher, &cwd, &a.command, true) {
            Ok(s) => s,
            Err(e) => {
                self.inner.state.lock().forget(&id);
                return Err(e);
            }
        };
        let Spawned {
            child,
            group,
            stdin,
            stdout,
            stderr,
        } = spawned;
        let (changed, rx) = watch::channel(());
        let weak = Arc::downgrade(&self.inner);
        let tasks = vec![
            AbortOnDropHandle::new(tokio::spawn(pump(
                weak.clone(),
                id.clone(),
                stdout,
                changed.clone(),
            ))),
            AbortOnDropHandle::new(tokio::spawn(pump(
                weak.clone(),
                id.clone(),
                stderr,
                changed.clone(),
            ))),
            AbortOnDropHandle::new(tokio::spawn(monitor(
                weak,
                id.clone(),
                child,
                group,
                changed.clone(),
            ))),
        ];
        self.inner.state.lock().live.insert(
            id.clone(),
            Live {
                group,
                stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
                changed,
                _tasks: tasks,
            },
        );
        self.settle(&id, rx, 0, wait).await;
        let output = self.slice(owner, &id, 0, DEFAULT_READ)?;
        Ok(Done::new(Started {
            session: id.clone(),
            output,
        })
        .with("session", id)
        .with("command", first_word(&a.command))
        .with("command_len", a.command.len()))
    }

    /// `interact_with_process`: writes `a.input` (and a newline) to the session's stdin and
    /// answers the output that follows.
    pub async fn interact(
        &self,
        owner: &str,
        a: InteractWithProcessArgs,
    ) -> Result<Done<Output>, ToolError> {
        let id = self.writable(owner, &a)?;
        let wait = self.wait(a.timeout_ms);
        let (stdin, rx, from) = {
            let mut st = self.inner.state.lock();
            // Again under the lock that holds on: it may have exited or gone meanwhile.
            let e = st.core.get(owner, &id, Instant::now())?;
            gate::still_running(e)?;
            let from = e.ring.end();
            let live = st.live.get(&id).ok_or(ToolError::NoSuchSession)?;
            (live.stdin.clone(), live.changed.subscribe(), from)
        };
        let mut line = a.input.into_bytes();
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        {
            let mut stdin = stdin.lock().await;
            let Some(w) = stdin.as_mut() else {
                return Err(ToolError::BadArgument(
                    "session: its stdin is closed".into(),
                ));
            };
            let write = async {
                w.write_all(&line).await?;
                w.flush().await
            };
            match tokio::time::timeout(wait, write).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    return Err(ToolError::BadArgument(
                        "session: its stdin is closed".into(),
                    ));
                }
                // The process does not read: its pipe is full (backpressure reaches the caller).
                Err(_) => return Err(ToolError::ResourceLimit("session stdin")),
            }
        }
        self.settle(&id, rx, from, wait).await;
        let output = self.slice(owner, &id, from, DEFAULT_READ)?;
        Ok(Done::new(output)
            .with("session", id)
            .with("input_bytes", line.len()))
    }

    /// `read_process_output`: the session's output from `a.offset` (default: where the last read
    /// ended).
    pub fn read_output(
        &self,
        owner: &str,
        a: ReadProcessOutputArgs,
    ) -> Result<Done<Output>, ToolError> {
        let id = parse_id(&a.session)?;
        let length = a.length.unwrap_or(DEFAULT_READ);
        if length > MAX_READ {
            return Err(ToolError::BadArgument(format!(
                "length: at most {MAX_READ}"
            )));
        }
        let mut st = self.inner.state.lock();
        let output = read(&mut st.core, owner, &id, a.offset, length)?;
        let bytes = output.next_offset - output.offset;
        Ok(Done::new(output).with("session", id).with("bytes", bytes))
    }

    /// `list_sessions`: `owner`'s sessions, oldest first.
    pub fn list(&self, owner: &str) -> Done<SessionList> {
        let now = Instant::now();
        let st = self.inner.state.lock();
        let sessions: Vec<SessionInfo> = st
            .core
            .owned_by(owner)
            .into_iter()
            .map(|(id, e)| SessionInfo {
                session: id.clone(),
                command: e.command.clone(),
                running: e.exit.is_none(),
                exit_code: e.exit.and_then(|x| x.code),
                signal: e.exit.and_then(|x| x.signal),
                age_ms: millis(now.saturating_duration_since(e.created)),
                idle_ms: millis(now.saturating_duration_since(e.last_access)),
                output_end: e.ring.end(),
            })
            .collect();
        let n = sessions.len();
        Done::new(SessionList { sessions }).with("count", n)
    }

    /// `kill_process` (SIGTERM) or, with `force`, `force_terminate` (SIGKILL): signals the
    /// session's own process group — nothing else can be named — and waits for it to end (the
    /// guard kills what SIGTERM leaves after its grace). An ended session is forgotten; one that
    /// had already exited is not signalled again.
    pub async fn kill(
        &self,
        owner: &str,
        a: KillProcessArgs,
        force: bool,
    ) -> Result<Done<Killed>, ToolError> {
        let id = self.named(owner, &a.session)?;
        let sig = if force {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        let (sent, rx) = {
            let mut st = self.inner.state.lock();
            let e = st.core.get(owner, &id, Instant::now())?;
            let running = e.running;
            let Some(live) = st.live.get(&id) else {
                return Err(ToolError::NoSuchSession);
            };
            // `running` is cleared (under this lock) before the group's leader is reaped, so the
            // group id still names this session's group here.
            let sent = if running {
                child::signal_group(live.group, sig);
                Some(sig.as_str().to_owned())
            } else {
                None
            };
            (sent, live.changed.subscribe())
        };
        let deadline = Instant::now() + guard::GRACE + Duration::from_secs(1);
        let exited = self.wait_for(&id, rx, deadline, |e| e.exit.is_some()).await;
        let exit = {
            let mut st = self.inner.state.lock();
            let exit = st.core.entry(&id).and_then(|e| e.exit);
            if exited {
                st.forget(&id);
            }
            exit
        };
        let mut done = Done::new(Killed {
            session: id.clone(),
            signal: sent.clone(),
            exited,
        })
        .with("session", id)
        .with("signal", sent);
        if let Some(x) = exit {
            done = done.with("exit_code", x.code).with("exit_signal", x.signal);
        }
        Ok(done)
    }

    /// Kills every session of `owner` with its process group, reaps and forgets them: the device
    /// that owns them may no longer use them (SPEC §3.2: revoked, expired or below `full`). For
    /// `refuse_for` after, `owner` starts nothing (a start already on its way is refused rather
    /// than left running). Answers each session ended with its command's first word, for the
    /// audit.
    pub async fn end_owner(&self, owner: &str, refuse_for: Duration) -> Vec<(String, String)> {
        let ending: Vec<(String, String, Option<watch::Receiver<()>>)> = {
            let mut st = self.inner.state.lock();
            let now = Instant::now();
            st.core.end_owner(owner, now + refuse_for, now);
            st.core
                .owned_by(owner)
                .into_iter()
                .map(|(id, e)| {
                    let live = st.live.get(id);
                    if let Some(live) = live.filter(|_| e.running) {
                        // `running` is cleared under this lock before the leader is reaped: the
                        // group is still this session's.
                        child::signal_group(live.group, Signal::SIGKILL);
                    }
                    let rx = live.map(|l| l.changed.subscribe());
                    (id.clone(), first_word(&e.command).to_owned(), rx)
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut ended = Vec::with_capacity(ending.len());
        for (id, command, rx) in ending {
            if let Some(rx) = rx {
                self.wait_for(&id, rx, deadline, |e| e.exit.is_some()).await;
            }
            self.inner.state.lock().forget(&id);
            ended.push((id, command));
        }
        ended
    }

    /// Kills every session's process group and reaps them: the bridge is stopping. No session
    /// outlives its bridge.
    pub async fn shutdown(&self) {
        let waits: Vec<(String, watch::Receiver<()>)> = {
            let st = self.inner.state.lock();
            st.live
                .iter()
                .map(|(id, live)| {
                    if st.core.entry_ref(id).is_some_and(|e| e.running) {
                        child::signal_group(live.group, Signal::SIGKILL);
                    }
                    (id.clone(), live.changed.subscribe())
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        for (id, rx) in waits {
            self.wait_for(&id, rx, deadline, |e| e.exit.is_some()).await;
        }
        let mut st = self.inner.state.lock();
        for id in st.core.ids() {
            st.forget(&id);
        }
    }

    /// The wait a call asked for, or the default, at most the cap.
    fn wait(&self, timeout_ms: Option<u64>) -> Duration {
        let st = self.inner.state.lock();
        let l = st.core.limits();
        timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(l.default_wait)
            .min(l.max_wait)
    }

    /// Output from `from` for `owner`, as an answer.
    fn slice(&self, owner: &str, id: &str, from: u64, max: u64) -> Result<Output, ToolError> {
        let mut st = self.inner.state.lock();
        read(&mut st.core, owner, id, Some(from), max)
    }

    /// Waits until `done` holds for the session (true), or the deadline passes (false). A
    /// forgotten session counts as done.
    async fn wait_for(
        &self,
        id: &str,
        mut rx: watch::Receiver<()>,
        deadline: Instant,
        done: impl Fn(&Entry) -> bool,
    ) -> bool {
        loop {
            match self.inner.state.lock().core.entry_ref(id) {
                None => return true,
                Some(e) if done(e) => return true,
                Some(_) => {}
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { return true },
                _ = tokio::time::sleep_until(deadline.into()) => return false,
            }
        }
    }

    /// Waits for output past `from` (or the exit), then until [`QUIET`] passes without more, at
    /// most `wait` in all.
    async fn settle(&self, id: &str, rx: watch::Receiver<()>, from: u64, wait: Duration) {
        let deadline = Instant::now() + wait;
        let seen = self
            .wait_for(id, rx.clone(), deadline, |e| {
                e.ring.end() > from || e.exit.is_some()
            })
            .await;
        if !seen {
            return;
        }
        let mut rx = rx;
        loop {
            let quiet = (Instant::now() + QUIET).min(deadline);
            tokio::select! {
                r = rx.changed() => {
                    if r.is_err() || Instant::now() >= deadline {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(quiet.into()) => return,
            }
        }
    }
}

impl Drop for Inner {
    /// The last handle is gone without `shutdown`: kill every group still running (best effort;
    /// the runtime reaps the guards it is left with).
    fn drop(&mut self) {
        let st = self.state.lock();
        for (id, live) in &st.live {
            if st.core.entry_ref(id).is_some_and(|e| e.running) {
                child::signal_group(live.group, Signal::SIGKILL);
            }
        }
    }
}

/// Reads a session as an answer.
fn read(
    core: &mut Core,
    owner: &str,
    id: &str,
    offset: Option<u64>,
    max: u64,
) -> Result<Output, ToolError> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let (s, e) = core.read(owner, id, offset, max, Instant::now())?;
    Ok(Output {
        output: s.text,
        offset: s.offset,
        next_offset: s.next_offset,
        dropped: s.dropped,
        running: e.exit.is_none(),
        exit_code: e.exit.and_then(|x| x.code),
        signal: e.exit.and_then(|x| x.signal),
    })
}

/// Copies a pipe into the session's ring until it closes.
async fn pump(
    inner: Weak<Inner>,
    id: String,
    mut pipe: impl AsyncRead + Unpin,
    changed: watch::Sender<()>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let Some(inner) = inner.upgrade() else { return };
        inner.state.lock().core.output(&id, &buf[..n]);
        changed.send_replace(());
    }
}

/// A session's life after its start: waits for the guard to exit — or kills its group at the idle
/// timeout or maximum lifetime — sweeps and reaps it, and forgets the session once it expires.
async fn monitor(
    inner: Weak<Inner>,
    id: String,
    mut child: Child,
    group: Pid,
    changed: watch::Sender<()>,
) {
    // Declared after `child`, so dropped (and the group killed) before it if this task ends early.
    let mut group_guard = GroupGuard::new(group);
    let exited = child::exited(group);
    tokio::pin!(exited);
    let mut ended = false;
    while !ended {
        let Some(next) = deadline(&inner, &id) else {
            break;
        };
        tokio::select! {
            _ = &mut exited => ended = true,
            _ = tokio::time::sleep_until(next.into()) => {}
        }
    }
    if !ended {
        // Expired (or forgotten) while running. The guard is ours and unreaped: the group is ours.
        child::signal_group(group, Signal::SIGKILL);
        (&mut exited).await;
    }
    if let Some(inner) = inner.upgrade() {
        if let Some(e) = inner.state.lock().core.entry(&id) {
            e.running = false;
        }
    }
    // What the command left in its group in the background goes with it; then reap.
    child::signal_group(group, Signal::SIGKILL);
    group_guard.disarm();
    let status = child::exit_info(child.wait().await);
    if let Some(inner) = inner.upgrade() {
        if let Some(e) = inner.state.lock().core.entry(&id) {
            e.exit = Some(status);
        }
    }
    changed.send_replace(());
    // Kept for its output until it expires.
    while let Some(next) = deadline(&inner, &id) {
        tokio::time::sleep_until(next.into()).await;
    }
    if let Some(inner) = inner.upgrade() {
        inner.state.lock().forget(&id);
    }
}

/// When the session `id` expires, or `None` when it has expired or is gone.
fn deadline(inner: &Weak<Inner>, id: &str) -> Option<Instant> {
    let inner = inner.upgrade()?;
    let st = inner.state.lock();
    match st.core.expiry(id, Instant::now()) {
        Expiry::Until(t) => Some(t),
        Expiry::Expired | Expiry::Gone => None,
    }
}

/// A fresh session id: 128 bits from the OS, in hex.
fn new_id() -> Result<String, ToolError> {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| ToolError::Internal(format!("OS random source: {e}")))?;
    Ok(hex::encode(bytes))
}

/// A session id as the caller wrote it: 32 lowercase hex digits.
fn parse_id(s: &str) -> Result<String, ToolError> {
    if s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(s.to_owned())
    } else {
        Err(ToolError::BadArgument(
            "session: 32 hex digits, as start_process answered".into(),
        ))
    }
}

/// A command line a tool may run: not blank, no NUL, at most [`MAX_COMMAND`] bytes.
pub(crate) fn check_command(command: &str) -> Result<(), ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::BadArgument("command: empty".into()));
    }
    if command.len() > MAX_COMMAND {
        return Err(ToolError::BadArgument(format!(
            "command: at most {MAX_COMMAND} bytes"
        )));
    }
    if command.contains('\0') {
        return Err(ToolError::BadArgument(
            "command: contains a NUL byte".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let a = new_id().expect("OS rng");
        let b = new_id().expect("OS rng");
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert_eq!(parse_id(&a), Ok(a.clone()));
        assert!(parse_id(&a.to_uppercase()).is_err() || a.bytes().all(|c| c.is_ascii_digit()));
        assert!(parse_id("1234").is_err());
        assert!(parse_id(&format!("{}g", &a[..31])).is_err());
    }

    #[test]
    fn commands_are_checked() {
        assert!(check_command("ls").is_ok());
        assert!(check_command("  ").is_err());
        assert!(check_command("a\0b").is_err());
        assert!(check_command(&"x".repeat(MAX_COMMAND + 1)).is_err());
    }
}
