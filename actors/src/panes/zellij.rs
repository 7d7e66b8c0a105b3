//! The zellij backend (issue 34, decision 0083): mirrors of the panes of the user's zellij
//! sessions, read and written through zellij's own command line.
//!
//! A manager task asks `zellij list-sessions` every [`ZellijOptions::poll`] and keeps one task
//! per running session (`session.rs`); that task asks the session's panes (`action list-panes
//! --json`) as often, keeps a [`Mirror`] per terminal pane, and one `zellij subscribe` child that
//! follows all of them and feeds the mirrors. Reads ([`ZellijBackend::list`],
//! [`ZellijBackend::snapshot`]) come from memory; writes start one `zellij action write` each.
//! zellij missing or older than 0.44: no panes, and [`ZellijBackend::status`] says why. Dropping
//! the backend aborts its tasks, which kills their children (`kill_on_drop`).
//!
//! Pane ids are `z<i>-<n>`: session `i` in the order this bridge first saw them, zellij's
//! `terminal_<n>` in it.

pub mod cli;
pub mod mirror;
mod process;
mod session;
mod sockets;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::cli::{CliError, Input};
use self::mirror::Mirror;
use crate::panes::keys::{KeyError, NamedKey, MAX_TEXT_BYTES};
use crate::panes::pane_ref::indexed_id;
use crate::panes::snapshot::ScreenSnapshot;
use crate::panes::token::pane_token;

/// Bytes a `zellij action` may print before Collie stops reading it.
const MAX_OUTPUT: usize = cli::MAX_LINE;

/// Bytes of text written per `zellij action write` (each byte one argument).
const WRITE_CHUNK: usize = 4096;

/// How long one `zellij` command may take.
const COMMAND_TIME: Duration = Duration::from_secs(10);

/// Settings of the backend; [`ZellijOptions::default`] suits the bridge.
#[derive(Debug, Clone)]
pub struct ZellijOptions {
    /// The zellij program (default `zellij`, looked up in `PATH`).
    pub program: PathBuf,
    /// Extra environment for every zellij process (tests set `ZELLIJ_SOCKET_DIR` here).
    pub env: Vec<(OsString, OsString)>,
    /// Lines of scrollback each mirror keeps and asks for on a subscription's first update.
    pub scrollback: usize,
    /// How often sessions and their panes are asked for (default 2 s: a new pane shows within
    /// about that).
    pub poll: Duration,
}

impl Default for ZellijOptions {
    fn default() -> ZellijOptions {
        ZellijOptions {
            program: PathBuf::from("zellij"),
            env: Vec::new(),
            scrollback: 2000,
            poll: Duration::from_secs(2),
        }
    }
}

/// Whether zellij panes can be served here, and if not why (for `collie doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZellijStatus {
    /// Not asked yet.
    Starting,
    /// zellij of this version runs the sessions listed.
    Ready(cli::Version),
    /// No zellij panes: why (not installed, too old, unreadable version).
    Unavailable(String),
}

/// One zellij pane, machine-agnostic (the caller adds the machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZellijPaneInfo {
    /// `z<session index>-<n>` for `terminal_<n>`.
    pub id: String,
    /// The 4-character pane token (SPEC §5).
    pub token: String,
    /// The tab's name, or `<tab>.<pane>` when the tab has several panes. Not masked.
    pub name: String,
    /// The session's name. Not masked.
    pub session: String,
    /// Width in columns.
    pub cols: u16,
    /// Height in rows.
    pub rows: u16,
    /// False when the pane's program exited and zellij holds the pane.
    pub alive: bool,
    /// The last change seen.
    pub last_activity: SystemTime,
    /// Best effort: the cursor line looks like a password prompt.
    pub asking_password: bool,
    /// The pane's first process (the shell zellij started), once read from `/proc`.
    pub pid: Option<u32>,
}

/// Errors of the zellij backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZellijError {
    /// The id is not a mirrored zellij pane.
    #[error("no such pane")]
    NoSuchPane,
    /// zellij could not be started.
    #[error("zellij not found: {0}")]
    NotFound(String),
    /// zellij refused the command, or did not answer in time.
    #[error("zellij command failed: {0}")]
    CommandFailed(String),
    /// zellij printed what this version does not.
    #[error(transparent)]
    Cli(#[from] CliError),
    /// Bad key or text (the §3.2 strings).
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// Splits a pane id `z<i>-<n>` into `(session index, terminal number)`; only the canonical
/// spelling is an id.
pub fn parse_pane_id(id: &str) -> Option<(usize, u32)> {
    indexed_id('z', id)
}

/// One mirrored pane.
#[derive(Debug)]
struct Entry {
    session: String,
    name: String,
    alive: bool,
    mirror: Mirror,
    seq: watch::Sender<u64>,
    last_activity: SystemTime,
    token: String,
    /// History may have been lost since the last seed: read it again with `dump-screen`.
    lost: bool,
    /// The pane's first process, once found.
    pid: Option<u32>,
    /// The id of the tab it is in, as `list-panes` last said.
    tab: Option<usize>,
}

/// What the tasks share with the backend's readers.
#[derive(Debug)]
struct State {
    options: ZellijOptions,
    salt: Vec<u8>,
    status: Mutex<ZellijStatus>,
    /// Session names by index, in the order first seen (an index is never reused in a run).
    sessions: Mutex<Vec<String>>,
    panes: Mutex<HashMap<(usize, u32), Entry>>,
    /// The owner's pane-set counter, bumped when a pane comes, goes or is renamed.
    set: watch::Sender<u64>,
    /// The lines of scrollback each mirror keeps now: [`ZellijOptions::scrollback`], lowered by
    /// the Panes actor near the global buffer cap (SPEC §5 "Caps").
    scrollback: Mutex<usize>,
}

impl State {
    /// A `zellij` command with the backend's environment.
    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.options.program);
        c.envs(self.options.env.iter().map(|(k, v)| (k, v)))
            // Never a child of the user's own session's environment.
            .env_remove("ZELLIJ")
            .env_remove("ZELLIJ_SESSION_NAME")
            .env_remove("ZELLIJ_PANE_ID")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        c
    }

    /// Runs `zellij <args>` and gives what it printed (at most [`MAX_OUTPUT`] bytes read).
    async fn run(&self, args: &[String]) -> Result<String, ZellijError> {
        let mut c = self.command();
        c.args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c
            .spawn()
            .map_err(|e| ZellijError::NotFound(e.to_string()))?;
        let out = tokio::time::timeout(COMMAND_TIME, child.wait_with_output())
            .await
            .map_err(|_| ZellijError::CommandFailed("no answer in time".into()))?
            .map_err(|e| ZellijError::CommandFailed(e.to_string()))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            return Err(ZellijError::CommandFailed(
                said.trim().chars().take(200).collect(),
            ));
        }
        if out.stdout.len() > MAX_OUTPUT {
            return Err(CliError::TooLong.into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The index of session `name`, given one the first time it is seen.
    fn session_index(&self, name: &str) -> usize {
        let mut sessions = self.sessions.lock();
        if let Some(i) = sessions.iter().position(|s| s == name) {
            return i;
        }
        sessions.push(name.to_owned());
        sessions.len() - 1
    }

    /// Tells the owner the pane set changed.
    fn set_changed(&self) {
        self.set.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn info(&self, index: usize, pane: u32, e: &Entry) -> ZellijPaneInfo {
        let (rows, cols) = e.mirror.screen().size();
        ZellijPaneInfo {
            id: format!("z{index}-{pane}"),
            token: e.token.clone(),
            name: e.name.clone(),
            session: e.session.clone(),
            cols,
            rows,
            alive: e.alive,
            last_activity: e.last_activity,
            asking_password: e.mirror.screen().asking_password(),
            pid: e.pid,
        }
    }

    /// The socket folder the backend's zellij uses, when set (`ZELLIJ_SOCKET_DIR`).
    fn socket_dir(&self) -> Option<PathBuf> {
        self.var("ZELLIJ_SOCKET_DIR").map(PathBuf::from)
    }

    /// The folder zellij's sessions' sockets are in, set or not (`sockets::root`).
    fn socket_root(&self) -> PathBuf {
        sockets::root(self.socket_dir(), self.var("XDG_RUNTIME_DIR"))
    }

    /// Variable `key` of the environment zellij runs in: the backend's own, else the bridge's.
    fn var(&self, key: &str) -> Option<OsString> {
        self.options
            .env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os(key))
    }
}

/// The mirrors of every pane of the user's zellij sessions, and the commands to drive them.
#[derive(Debug)]
pub struct ZellijBackend {
    state: Arc<State>,
    _tasks: JoinSet<()>,
}

impl ZellijBackend {
    /// Starts the manager; `salt` makes the pane tokens (SPEC §5).
    pub fn start(salt: &[u8], options: ZellijOptions) -> ZellijBackend {
        ZellijBackend::start_telling(salt, options, watch::channel(0).0)
    }

    /// [`ZellijBackend::start`], bumping `set` whenever a pane comes, goes or is renamed.
    pub fn start_telling(
        salt: &[u8],
        options: ZellijOptions,
        set: watch::Sender<u64>,
    ) -> ZellijBackend {
        let state = Arc::new(State {
            scrollback: Mutex::new(options.scrollback),
            options,
            salt: salt.to_vec(),
            status: Mutex::new(ZellijStatus::Starting),
            sessions: Mutex::new(Vec::new()),
            panes: Mutex::new(HashMap::new()),
            set,
        });
        let mut tasks = JoinSet::new();
        tasks.spawn(session::manage(Arc::clone(&state)));
        ZellijBackend {
            state,
            _tasks: tasks,
        }
    }

    /// Whether zellij panes can be served here.
    pub fn status(&self) -> ZellijStatus {
        self.state.status.lock().clone()
    }

    /// Every mirrored pane, by session then pane number.
    pub fn list(&self) -> Vec<ZellijPaneInfo> {
        let panes = self.state.panes.lock();
        let mut keys: Vec<_> = panes.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|k| panes.get(&k).map(|e| self.state.info(k.0, k.1, e)))
            .collect()
    }

    /// One pane's entry of [`ZellijBackend::list`]; `None` for an unknown id.
    pub fn info(&self, id: &str) -> Option<ZellijPaneInfo> {
        let key = parse_pane_id(id)?;
        let panes = self.state.panes.lock();
        panes.get(&key).map(|e| self.state.info(key.0, key.1, e))
    }

    /// The pane's token, its name (unmasked) and its screen with up to `scrollback` lines of
    /// history, masked by `mask`, read under one lock. `None` for an unknown id.
    pub fn snapshot(
        &self,
        id: &str,
        scrollback: usize,
        mask: &dyn Fn(&str) -> String,
    ) -> Option<(String, String, ScreenSnapshot)> {
        let key = parse_pane_id(id)?;
        let mut panes = self.state.panes.lock();
        let e = panes.get_mut(&key)?;
        let seq = *e.seq.borrow();
        let snap = ScreenSnapshot::capture(e.mirror.screen_mut(), seq, scrollback, mask);
        Some((e.token.clone(), e.name.clone(), snap))
    }

    /// A receiver of the pane's `seq`, which changes on every screen change; it closes when the
    /// pane is gone. `None` for an unknown id.
    pub fn subscribe(&self, id: &str) -> Option<watch::Receiver<u64>> {
        let key = parse_pane_id(id)?;
        self.state.panes.lock().get(&key).map(|e| e.seq.subscribe())
    }

    /// Estimated bytes held by all mirrors.
    pub fn allocated_bytes(&self) -> usize {
        self.state
            .panes
            .lock()
            .values()
            .map(|e| e.mirror.screen().allocated_bytes())
            .sum()
    }

    /// Bytes one more line of scrollback costs across all mirrors (for the buffer cap's policy).
    pub fn scrollback_line_bytes(&self) -> usize {
        self.state
            .panes
            .lock()
            .values()
            .map(|e| e.mirror.screen().line_bytes())
            .sum()
    }

    /// The lines of scrollback each mirror keeps now.
    pub fn scrollback_limit(&self) -> usize {
        *self.state.scrollback.lock()
    }

    /// Sets the lines of scrollback each mirror keeps, at most [`ZellijOptions::scrollback`], as
    /// the tmux backend's limit is set. Returns at once: mirrors made later start with it, and each
    /// existing one is rebuilt at its session's next poll from zellij's own history (`dump-screen
    /// --full`), keeping the newest lines; its memory drops then.
    pub fn set_scrollback_limit(&self, lines: usize) {
        let lines = lines.min(self.state.options.scrollback);
        {
            let mut limit = self.state.scrollback.lock();
            if *limit == lines {
                return;
            }
            *limit = lines;
        }
        for e in self.state.panes.lock().values_mut() {
            e.mirror.set_scrollback(lines);
            e.lost = true;
        }
    }

    /// Renames the tab pane `id` is in (`action rename-tab`): a zellij pane is named by its tab, as a
    /// tmux pane by its window. The list shows the new name from the session's next poll.
    pub async fn rename(&self, id: &str, name: &str) -> Result<(), ZellijError> {
        let (session, tab) = {
            let key = parse_pane_id(id).ok_or(ZellijError::NoSuchPane)?;
            let panes = self.state.panes.lock();
            let e = panes.get(&key).ok_or(ZellijError::NoSuchPane)?;
            let tab = e.tab.ok_or_else(|| {
                ZellijError::CommandFailed("zellij did not say which tab the pane is in".into())
            })?;
            (e.session.clone(), tab)
        };
        self.state
            .run(&cli::rename_tab_args(&session, tab, name))
            .await
            .map(|_| ())
    }

    /// Closes pane `id` (`action close-pane`; its program is ended, its tab closes with its last
    /// pane). It leaves the list at once.
    pub async fn kill(&self, id: &str) -> Result<(), ZellijError> {
        let key = parse_pane_id(id).ok_or(ZellijError::NoSuchPane)?;
        let session = self
            .state
            .panes
            .lock()
            .get(&key)
            .map(|e| e.session.clone())
            .ok_or(ZellijError::NoSuchPane)?;
        self.state
            .run(&cli::close_pane_args(&session, key.1))
            .await?;
        if self.state.panes.lock().remove(&key).is_some() {
            self.state.set_changed();
        }
        Ok(())
    }

    /// Types `text` into the pane as its bytes. At most 64 KiB.
    pub async fn send_text(&self, id: &str, text: &str) -> Result<(), ZellijError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(KeyError::TextTooLong.into());
        }
        // A chunk per command keeps the argument list well under the system's limit.
        let mut at = 0;
        while at < text.len() {
            let mut end = (at + WRITE_CHUNK).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.write(id, &Input::Text(&text[at..end])).await?;
            at = end;
        }
        Ok(())
    }

    /// Presses a named key in the pane.
    pub async fn send_key(&self, id: &str, key: NamedKey) -> Result<(), ZellijError> {
        self.write(id, &Input::Key(key)).await
    }

    async fn write(&self, id: &str, input: &Input<'_>) -> Result<(), ZellijError> {
        let (index, pane) = parse_pane_id(id).ok_or(ZellijError::NoSuchPane)?;
        let session = {
            let panes = self.state.panes.lock();
            panes
                .get(&(index, pane))
                .map(|e| e.session.clone())
                .ok_or(ZellijError::NoSuchPane)?
        };
        let mut args = vec!["--session".to_owned(), session];
        args.extend(cli::write_args(pane, input));
        self.state.run(&args).await.map(|_| ())
    }
}

/// The token of pane `n` of session `session` under `salt`: the session's name and `instance`
/// (its server process, see `session::instance_of`) tell a reused name apart; zellij numbers a
/// server's panes without reuse.
fn token_of(salt: &[u8], session: &str, instance: &str, n: u32) -> String {
    pane_token(salt, &format!("zellij:{session}:{instance}:terminal_{n}"))
}

#[cfg(test)]
mod tests;
