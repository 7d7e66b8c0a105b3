//! The tmux backend (SPEC §5): in-memory mirrors of the user's tmux panes, fed by control mode.
//!
//! For each configured socket (index 0 is the default socket, then the listed ones, in order) a
//! manager task keeps ONE control client per session (`tmux -C attach-session -t $<id> -f
//! ignore-size`, so the user's windows are never resized) and follows `%sessions-changed` to
//! attach to new sessions and drop closed ones. Each pane `%n` has a mirror: a [`Screen`] sized
//! to the pane, seeded with `capture-pane` and the cursor from `display`, then fed with
//! `%output`; a `seq` that grows on every change; its name and liveness. Reads ([`TmuxBackend::
//! list`], [`TmuxBackend::snapshot`]) come from memory and never spawn a process; writes are
//! commands sent through a control client. Processes are spawned only to discover the sessions
//! of a socket, to attach, to create the first session of a socket that has none, and to open a
//! window in a chosen session ([`TmuxBackend::new_window_in`]: argv words, no command parser).
//!
//! Scrollback: mirrors keep [`TmuxOptions::scrollback`] lines until the owner lowers the limit
//! with [`TmuxBackend::set_scrollback_limit`] (the Panes actor does when the global buffer cap is
//! near, SPEC §5); each manager then rebuilds its mirrors with the new limit, reseeding them from
//! tmux through their control clients.
//!
//! Failure: if tmux is not installed or no server runs on a socket, that socket simply has no
//! panes, and its manager tries discovery again when a server makes its socket (inotify on the
//! socket's folder; every [`TmuxOptions::retry`], 3 s by default, where inotify cannot be
//! used). When a control client dies its session's panes are dropped at the next resync; when
//! the last one dies (server gone) every mirror of the socket is dropped, and their `subscribe`
//! channels close. Dropping the [`TmuxBackend`] aborts every task it owns, which kills the control
//! clients (`kill_on_drop`).
//!
//! [`Screen`]: crate::panes::screen::Screen

pub mod control;

mod appear;
mod client;
mod server;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::panes::keys::{KeyError, NamedKey, MAX_TEXT_BYTES};
use crate::panes::pane_ref::indexed_id;
use crate::panes::snapshot::ScreenSnapshot;

/// Bytes of text typed per `send-keys -H` command (each byte becomes three characters).
const SEND_CHUNK: usize = 4096;

/// How long [`TmuxBackend::new_window`] waits for the new pane's mirror to appear.
const NEW_PANE_WAIT: Duration = Duration::from_secs(5);

/// Which tmux server to mirror.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TmuxSocket {
    /// The default socket: tmux runs without `-L`/`-S` and picks it itself (honouring
    /// `TMUX_TMPDIR`; `TMUX` is removed from the environment of every tmux Collie runs).
    Default,
    /// An explicit socket path, passed as `tmux -S <path>`.
    Path(PathBuf),
}

/// Settings of the backend; [`TmuxOptions::default`] suits the bridge.
#[derive(Debug, Clone)]
pub struct TmuxOptions {
    /// The tmux program (default `tmux`, looked up in `PATH`).
    pub program: PathBuf,
    /// Extra environment for every tmux process (tests set `TMUX_TMPDIR` here).
    pub env: Vec<(OsString, OsString)>,
    /// Lines of scrollback each mirror keeps and seeds (default 2,000); the most
    /// [`TmuxBackend::set_scrollback_limit`] allows.
    pub scrollback: usize,
    /// Pause between discovery attempts on a socket without a server when its folder cannot be
    /// watched (default 3 s).
    pub retry: Duration,
}

impl Default for TmuxOptions {
    fn default() -> TmuxOptions {
        TmuxOptions {
            program: PathBuf::from("tmux"),
            env: Vec::new(),
            scrollback: 2000,
            retry: Duration::from_secs(3),
        }
    }
}

/// One mirrored pane, machine-agnostic (the caller adds the machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxPaneInfo {
    /// `t<socket index>-<n>` for tmux pane `%n`.
    pub id: String,
    /// The 4-character pane token (SPEC §5).
    pub token: String,
    /// The window name, or `<window name>.<pane index>` when the window has several panes.
    /// Not masked: the caller masks names that leave the machine.
    pub name: String,
    /// Width in columns.
    pub cols: u16,
    /// Height in rows.
    pub rows: u16,
    /// False when the pane's program exited and tmux keeps the pane (`remain-on-exit`).
    pub alive: bool,
    /// The last output seen (before any, tmux's window activity time).
    pub last_activity: SystemTime,
    /// Best effort: the cursor line looks like a password prompt.
    pub asking_password: bool,
    /// The pane's first process (what tmux started on its terminal).
    pub pid: u32,
}

/// One mirrored tmux session (a control client is attached to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxSessionInfo {
    /// The socket's index (0 is the default server, then the configured sockets in order).
    pub socket: usize,
    /// tmux's session id (`$<id>`).
    pub id: u32,
    /// Its name. Not masked: the caller masks names that leave the machine.
    pub name: String,
}

/// Errors of the tmux backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TmuxError {
    /// The id is not a mirrored tmux pane.
    #[error("no such pane")]
    NoSuchPane,
    /// No mirrored session of that name on that socket.
    #[error("no such session")]
    NoSuchSession,
    /// No tmux server runs on that socket.
    #[error("tmux not running on socket {0}")]
    NotRunning(usize),
    /// tmux could not be started.
    #[error("tmux not found: {0}")]
    NotFound(String),
    /// tmux refused the command (its message).
    #[error("tmux command failed: {0}")]
    CommandFailed(String),
    /// The control client ended before answering.
    #[error("tmux control client gone")]
    ClientGone,
    /// A name or command argument tmux cannot take.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// Bad key or text (the §3.2 strings).
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// Splits a pane id `t<i>-<n>` into `(socket index, pane number)`. Only the canonical spelling is
/// an id: `t01-0` or `t1-00` would name the same pane as `t1-0`, and an id that reaches an audit
/// line or a walky address must be the one the pane list shows.
pub fn parse_pane_id(id: &str) -> Option<(usize, u32)> {
    indexed_id('t', id)
}

/// The mirrors of every pane of the configured tmux servers, and the commands to drive them.
#[derive(Debug)]
pub struct TmuxBackend {
    servers: Vec<Arc<server::Shared>>,
    options: Arc<TmuxOptions>,
    /// Lines of scrollback each mirror keeps now; every manager follows it.
    scrollback: watch::Sender<usize>,
    /// The manager tasks; dropping the set aborts them (and so kills the control clients).
    _tasks: JoinSet<()>,
}

impl TmuxBackend {
    /// Starts mirroring `sockets` (index = position: pass [`TmuxSocket::Default`] first, then the
    /// config's sockets, then `COLLIE_TMUX_SOCKETS`). `salt` is the per-bridge pane-token salt.
    /// Must be called inside a tokio runtime.
    pub fn start(sockets: Vec<TmuxSocket>, salt: &[u8], options: TmuxOptions) -> TmuxBackend {
        TmuxBackend::start_telling(sockets, salt, options, watch::channel(0).0)
    }

    /// [`TmuxBackend::start`], bumping `changes` each time the set of mirrored panes (or a pane's
    /// name) changes: the owner's watchers then wait for that instead of listing the panes on a
    /// clock.
    pub fn start_telling(
        sockets: Vec<TmuxSocket>,
        salt: &[u8],
        options: TmuxOptions,
        changes: watch::Sender<u64>,
    ) -> TmuxBackend {
        let options = Arc::new(options);
        let salt: Arc<[u8]> = Arc::from(salt);
        let mut tasks = JoinSet::new();
        let (scrollback, _) = watch::channel(options.scrollback);
        let servers: Vec<Arc<server::Shared>> = sockets
            .into_iter()
            .enumerate()
            .map(|(i, socket)| {
                let shared = Arc::new(server::Shared::new(
                    i,
                    socket,
                    options.clone(),
                    salt.clone(),
                    scrollback.subscribe(),
                    changes.clone(),
                ));
                tasks.spawn(server::run(shared.clone()));
                shared
            })
            .collect();
        TmuxBackend {
            servers,
            options,
            scrollback,
            _tasks: tasks,
        }
    }

    /// Waits, at most `within`, until every socket's first discovery is done — its panes are
    /// mirrored, or no server runs there. Right after a start the mirrors are empty for a few
    /// milliseconds; an answer of `no such pane` for a pane tmux has had all along would make a
    /// reconnecting phone give the pane up. Returns whether everything settled in time.
    pub async fn settled(&self, within: std::time::Duration) -> bool {
        let receivers: Vec<_> = self.servers.iter().map(|s| s.settled()).collect();
        let all = async move {
            for mut settled in receivers {
                // An error means the manager is gone, which only happens when the backend drops.
                let _ = settled.wait_for(|done| *done).await;
            }
        };
        tokio::time::timeout(within, all).await.is_ok()
    }

    /// Every mirrored pane of every socket, by socket then pane number.
    pub fn list(&self) -> Vec<TmuxPaneInfo> {
        self.servers.iter().flat_map(|s| s.list()).collect()
    }

    /// One pane's entry of [`TmuxBackend::list`]; `None` for an unknown id.
    pub fn info(&self, id: &str) -> Option<TmuxPaneInfo> {
        let (server, pane) = self.lookup(id).ok()?;
        server.info(pane)
    }

    /// The pane's token, its name (unmasked, see [`TmuxPaneInfo::name`]) and its screen with up
    /// to `scrollback` lines of history, every logical line masked by `mask` — all three read
    /// under one lock, so they describe the same pane at the same `seq`. `None` for an unknown id.
    /// Served from memory.
    pub fn snapshot(
        &self,
        id: &str,
        scrollback: usize,
        mask: &dyn Fn(&str) -> String,
    ) -> Option<(String, String, ScreenSnapshot)> {
        let (server, pane) = self.lookup(id).ok()?;
        server.snapshot(pane, scrollback, mask)
    }

    /// A receiver of the pane's `seq`, which changes on every screen change; it closes when the
    /// pane is gone. `None` for an unknown id.
    pub fn subscribe(&self, id: &str) -> Option<watch::Receiver<u64>> {
        let (server, pane) = self.lookup(id).ok()?;
        server.subscribe(pane)
    }

    /// Estimated bytes held by all mirrors (for the global buffer cap, SPEC §5).
    pub fn allocated_bytes(&self) -> usize {
        self.servers.iter().map(|s| s.allocated_bytes()).sum()
    }

    /// Bytes one more line of scrollback costs across all mirrors (the sum of their widths times
    /// the size of a cell): what the buffer-cap policy needs to foresee growing the limit.
    pub fn scrollback_line_bytes(&self) -> usize {
        self.servers.iter().map(|s| s.scrollback_line_bytes()).sum()
    }

    /// The lines of scrollback each mirror keeps now.
    pub fn scrollback_limit(&self) -> usize {
        *self.scrollback.borrow()
    }

    /// Sets the lines of scrollback each mirror keeps, at most [`TmuxOptions::scrollback`].
    /// Returns at once: mirrors made later start with the new limit, and each socket's manager
    /// rebuilds the existing ones in the background, reseeding them through their control clients
    /// (no process is spawned). A mirror's memory drops when its reseed lands.
    pub fn set_scrollback_limit(&self, lines: usize) {
        let lines = lines.min(self.options.scrollback);
        self.scrollback.send_if_modified(|limit| {
            let changed = *limit != lines;
            *limit = lines;
            changed
        });
    }

    /// Types `text` literally into the pane (`send-keys -H`, hex bytes: nothing is parsed as a key
    /// name or by tmux's command parser). At most 64 KiB.
    pub async fn send_text(&self, id: &str, text: &str) -> Result<(), TmuxError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(KeyError::TextTooLong.into());
        }
        let (server, pane) = self.lookup(id)?;
        let client = server.client_for(pane)?;
        for chunk in text.as_bytes().chunks(SEND_CHUNK) {
            let mut command = format!("send-keys -t '%{pane}' -H");
            for b in chunk {
                command.push_str(&format!(" {b:02x}"));
            }
            client.run_one(command).await?;
        }
        Ok(())
    }

    /// Presses a named key in the pane (`send-keys -t %n <tmux name>`).
    pub async fn send_key(&self, id: &str, key: NamedKey) -> Result<(), TmuxError> {
        let (server, pane) = self.lookup(id)?;
        let client = server.client_for(pane)?;
        client
            .run_one(format!(
                "send-keys -t '%{pane}' {}",
                quote(key.tmux_name())?
            ))
            .await?;
        Ok(())
    }

    /// Opens a window (detached: the user's view does not jump) in the first session of the
    /// first socket, running `command` (argv; the default shell when `None`), named `name`.
    /// Creates a session when the socket's server has none. Returns the new pane's id; its mirror
    /// usually exists by then (the call waits up to 5 s for it).
    pub async fn new_window(
        &self,
        name: Option<&str>,
        command: Option<&[String]>,
    ) -> Result<String, TmuxError> {
        let server = self.servers.first().ok_or(TmuxError::NotRunning(0))?;
        let pane = match server.first_client() {
            Some(client) => {
                let mut line = format!(
                    "new-window -d -P -F '#{{pane_id}}' -t '${}:'",
                    client.session
                );
                if let Some(name) = name {
                    line.push_str(&format!(" -n {}", quote(&literal(name)?)?));
                }
                if let Some(argv) = command {
                    line.push_str(" --");
                    for arg in argv {
                        line.push(' ');
                        line.push_str(&quote(arg)?);
                    }
                }
                let reply = client.run_one(line).await?;
                parse_new_pane(&reply.text())?
            }
            None => {
                // No server or no session: start one (arguments go through argv, not tmux's
                // command parser, so no quoting is involved).
                let mut cmd = server.command();
                cmd.args(["new-session", "-d", "-P", "-F", "#{pane_id}"]);
                if let Some(name) = name {
                    cmd.arg("-n").arg(literal(name)?);
                }
                if let Some(argv) = command {
                    cmd.arg("--").args(argv);
                }
                let pane = new_pane_of(cmd).await?;
                server.wake.notify_one();
                pane
            }
        };
        wait_for_mirror(server, pane).await;
        Ok(format!("t{}-{pane}", server.index))
    }

    /// Every mirrored session of every socket, by socket then session id.
    pub fn sessions(&self) -> Vec<TmuxSessionInfo> {
        self.servers
            .iter()
            .flat_map(|s| {
                s.sessions().into_iter().map(|(id, name)| TmuxSessionInfo {
                    socket: s.index,
                    id,
                    name,
                })
            })
            .collect()
    }

    /// Opens a window (detached) in the mirrored session named `session` of socket `socket`,
    /// running `command` (argv; the session's default shell when empty) in `cwd` (tmux's choice,
    /// the session's folder, when `None`), named `name`. Returns the new pane's id once its
    /// mirror exists (waiting up to 5 s; if it does not appear, the window is killed again and
    /// the call fails, so nothing opens that the caller cannot name).
    ///
    /// The session is targeted by its id (`$n`), never by the name: tmux matches a name target
    /// by prefix and by pattern, so a name would reach sessions the caller did not mean. tmux runs
    /// as a process with argv words, so nothing is parsed by tmux's command parser or by a shell;
    /// `-n` and `-c` are format strings to tmux (`#{…}`, and `#(…)` runs a command), so every `#`
    /// in them is doubled (`literal`). tmux runs a one-word command through the shell (`sh -c
    /// WORD`), so one word is passed as `/bin/sh -c 'exec "$0"' WORD`: the word is an argument,
    /// never shell text.
    pub async fn new_window_in(
        &self,
        socket: usize,
        session: &str,
        name: Option<&str>,
        command: &[String],
        cwd: Option<&Path>,
    ) -> Result<String, TmuxError> {
        let server = self.servers.get(socket).ok_or(TmuxError::NoSuchSession)?;
        let id = server
            .sessions()
            .into_iter()
            .find(|(_, n)| n == session)
            .map(|(id, _)| id)
            .ok_or(TmuxError::NoSuchSession)?;
        let mut cmd = server.command();
        cmd.args(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t"])
            .arg(format!("${id}:"));
        if let Some(dir) = cwd {
            let dir = dir
                .to_str()
                .ok_or(TmuxError::InvalidArgument("folder (not UTF-8)"))?;
            cmd.arg("-c").arg(literal(dir)?);
        }
        if let Some(name) = name {
            cmd.arg("-n").arg(literal(name)?);
        }
        match command {
            [] => {}
            [one] => {
                cmd.args(["--", "/bin/sh", "-c", "exec \"$0\"", one]);
            }
            argv => {
                cmd.arg("--").args(argv);
            }
        }
        let pane = new_pane_of(cmd).await?;
        if !wait_for_mirror(server, pane).await {
            let _ = server
                .command()
                .args(["kill-pane", "-t"])
                .arg(format!("%{pane}"))
                .output()
                .await;
            return Err(TmuxError::CommandFailed(
                "the new window was not mirrored in time".to_owned(),
            ));
        }
        Ok(format!("t{}-{pane}", server.index))
    }

    /// Renames the pane's window (`rename-window`; tmux then stops renaming it automatically).
    pub async fn rename(&self, id: &str, name: &str) -> Result<(), TmuxError> {
        let (server, pane) = self.lookup(id)?;
        let client = server.client_for(pane)?;
        client
            .run_one(format!(
                "rename-window -t '%{pane}' {}",
                quote(&literal(name)?)?
            ))
            .await?;
        Ok(())
    }

    /// Kills the pane (`kill-pane`; its window closes with its last pane).
    pub async fn kill(&self, id: &str) -> Result<(), TmuxError> {
        let (server, pane) = self.lookup(id)?;
        let client = server.client_for(pane)?;
        client.run_one(format!("kill-pane -t '%{pane}'")).await?;
        Ok(())
    }

    /// The options the backend runs with.
    pub fn options(&self) -> &TmuxOptions {
        &self.options
    }

    fn lookup(&self, id: &str) -> Result<(&Arc<server::Shared>, u32), TmuxError> {
        let (index, pane) = parse_pane_id(id).ok_or(TmuxError::NoSuchPane)?;
        let server = self.servers.get(index).ok_or(TmuxError::NoSuchPane)?;
        if !server.has_pane(pane) {
            return Err(TmuxError::NoSuchPane);
        }
        Ok((server, pane))
    }
}

/// Quotes `s` as one word for tmux's command parser: single quotes (inside which tmux expands
/// nothing), with each `'` written as `"'"` between them. Control characters are refused (a
/// newline would end the control-mode command line).
fn quote(s: &str) -> Result<String, TmuxError> {
    if s.chars().any(char::is_control) {
        return Err(TmuxError::InvalidArgument("control character"));
    }
    Ok(format!("'{}'", s.replace('\'', "'\"'\"'")))
}

/// `s` as tmux takes it literally where it expands formats (a window name, a start folder):
/// every `#` doubled, so `#{…}` shows as written and `#(…)` runs nothing. Control characters are
/// refused.
fn literal(s: &str) -> Result<String, TmuxError> {
    if s.chars().any(char::is_control) {
        return Err(TmuxError::InvalidArgument("control character"));
    }
    Ok(s.replace('#', "##"))
}

/// Waits, at most [`NEW_PANE_WAIT`], until the server's mirror has pane `%pane`; whether it does.
/// Woken by each pane list the manager merges, not by a clock.
async fn wait_for_mirror(server: &server::Shared, pane: u32) -> bool {
    let mut merged = server.merged();
    let deadline = tokio::time::Instant::now() + NEW_PANE_WAIT;
    loop {
        // Marked seen before the check: a merge after it wakes the wait below.
        merged.borrow_and_update();
        if server.has_pane(pane) {
            return true;
        }
        match tokio::time::timeout_at(deadline, merged.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => return false,
        }
    }
}

/// Runs a tmux process that makes a pane (`new-session`/`new-window` with `-P -F '#{pane_id}'`)
/// and returns the pane's number; tmux's stderr when it refuses.
async fn new_pane_of(mut cmd: tokio::process::Command) -> Result<u32, TmuxError> {
    let out = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .map_err(|e| TmuxError::NotFound(e.to_string()))?;
    if !out.status.success() {
        return Err(TmuxError::CommandFailed(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    parse_new_pane(&String::from_utf8_lossy(&out.stdout))
}

/// `%12` (the `-P -F '#{pane_id}'` output) → 12.
fn parse_new_pane(text: &str) -> Result<u32, TmuxError> {
    text.trim()
        .strip_prefix('%')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| TmuxError::CommandFailed(format!("unexpected reply: {}", text.trim())))
}

#[cfg(test)]
mod tests;
