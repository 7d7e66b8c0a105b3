//! The Panes actor: custody of both pane backends (SPEC §5).
//!
//! It owns the tmux backend (one control client per session per socket, mirrors in memory) and the
//! hosted pty panes, and answers list, snapshot, subscribe and write requests from the HTTP layer
//! and the control socket. Reads are served from memory (never a spawned process); everything that
//! leaves through a reply is masked here with the redactor's masker — names too. A request's pane
//! id is resolved once into a [`PaneRef`], on which each operation matches; both backends read a
//! screen into the same [`ScreenSnapshot`](super::snapshot::ScreenSnapshot).
//!
//! Caps: at most [`MAX_HOSTED`] hosted panes, and the buffers of all panes stay under
//! [`BUFFER_CAP`] (or [`PanesArgs::buffer_cap`]); past either a new hosted pane is refused
//! (`resource limit`, naming the cap for the caller's `resource.denied` line). As use nears the buffer cap
//! tmux mirrors keep less scrollback: every [`BUDGET_PERIOD`] while there is any pane, and after
//! the set of panes changed, the actor feeds its measurements to the pure policy in
//! [`super::budget`] and hands a changed limit to the tmux backend, which rebuilds its mirrors in
//! the background. With no pane there is nothing to measure and no timer runs.
//!
//! The set of panes has a change counter ([`PanesMsg::WatchSet`]), bumped when a pane appears,
//! goes or is renamed, on either backend: watchers (the screen-prompt watcher, the budget) wait
//! for it instead of listing the panes on a clock.
//!
//! If the actor fails it is restarted: tmux mirrors are rebuilt from the tmux servers (the panes
//! live on), hosted panes end with the failed instance (their processes are killed on drop).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rand::RngCore;
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::budget::{tmux_scrollback_limit, BudgetInput};
use super::foreground::{at_prompt, Processes};
use super::keys::NamedKey;
use super::pane_ref::PaneRef;
use super::pty::{HostedPane, SpawnOptions, DEFAULT_SCROLLBACK_LINES};
use super::ring::DEFAULT_RING_BYTES;
use super::screen::lines_hash;
use super::tmux::{TmuxBackend, TmuxOptions, TmuxSessionInfo, TmuxSocket};
use super::token::pane_token;
use super::zellij::{ZellijBackend, ZellijOptions, ZellijPaneInfo};
use crate::machine::MachineName;
use crate::redact::Masker;
use crate::rfc3339;
use crate::store::{Store, Table};

/// Most hosted panes at once.
pub const MAX_HOSTED: usize = 64;
/// Cap on the buffers of all panes together (rings, screens, scrollback).
pub const BUFFER_CAP: usize = 128 * 1024 * 1024;
/// How often the actor re-evaluates the tmux scrollback limit against the buffer cap, while there
/// is a pane whose output could grow the buffers.
pub const BUDGET_PERIOD: Duration = Duration::from_secs(5);
/// Store key of the pane-token salt.
/// How long after its start the Panes actor's first request may wait for the tmux mirrors'
/// first look (see [`TmuxBackend::settled`]); a hung tmux must not keep requests waiting longer.
const SETTLE_WITHIN: Duration = Duration::from_secs(3);
const SALT_KEY: &str = "panes.salt";

/// The actor.
pub struct PanesActor;

/// Start-up arguments.
#[derive(Clone)]
pub struct PanesArgs {
    /// This machine's name.
    pub machine: MachineName,
    /// Holds the pane-token salt.
    pub store: Store,
    /// Masks everything that leaves.
    pub masker: Arc<Masker>,
    /// Extra tmux sockets besides the default one, in order.
    pub tmux_sockets: Vec<PathBuf>,
    /// Cap on the buffers of all panes together, in bytes ([`BUFFER_CAP`] in the bridge; tests
    /// pass a smaller one).
    pub buffer_cap: usize,
}

// The pane shapes are the relay's (`collie_crew::relay`): a member sends the lead exactly what a
// phone would get, so there is one definition of each.
pub use collie_crew::relay::{ColourSnapshot, Cursor, PaneInfo, PaneSnapshot};

pub use super::error::PaneError;

type Reply<T> = RpcReplyPort<Result<T, PaneError>>;

/// Messages the panes actor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum PanesMsg {
    /// All panes.
    List(RpcReplyPort<Vec<PaneInfo>>),
    /// One pane, as the list shows it (without building the whole list).
    Info {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<PaneInfo>,
    },
    /// One pane's masked screen, with its visible rows' colours.
    Snapshot {
        /// Pane id.
        pane: String,
        /// Scrollback lines wanted.
        scrollback: usize,
        /// The answer.
        reply: Reply<ColourSnapshot>,
    },
    /// A receiver of the pane-set counter: it changes when a pane appears, goes or is renamed
    /// (hosted or tmux), and closes when this actor stops.
    WatchSet(RpcReplyPort<watch::Receiver<u64>>),
    /// A receiver of the pane's change counter.
    Subscribe {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<watch::Receiver<u64>>,
    },
    /// Type text, then press keys (already audited by the caller).
    Input {
        /// Pane id.
        pane: String,
        /// Typed literally first.
        text: String,
        /// Then these keys.
        keys: Vec<NamedKey>,
        /// The answer.
        reply: Reply<()>,
    },
    /// The pane whose process is on `chain` (a process and its parents, see
    /// [`super::foreground::ancestry`]); `None` when no pane's is.
    Holding {
        /// The process and its parents, the process first.
        chain: Vec<u32>,
        /// The answer.
        reply: RpcReplyPort<Option<PaneInfo>>,
    },
    /// The names of the processes in the pane's foreground (`None`: they cannot be read).
    Foreground {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<Option<Vec<String>>>,
    },
    /// The folder the pane's foreground process works in, read now (`None`: it cannot be read) —
    /// what tmux shows as `#{pane_current_path}`; an upload lands there (SPEC §11).
    Cwd {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<Option<PathBuf>>,
    },
    /// The pane's first process (a tmux pane's `pane_pid`, a hosted pane's child; `None` when it
    /// has none): where the chat view looks for the agent in the pane's foreground.
    Process {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<Option<u32>>,
    },
    /// Type a walky header and Enter, unless the pane's foreground process is a shell or its
    /// screen shows a prompt.
    Deliver {
        /// Pane id.
        pane: String,
        /// The header line (already inert: see the walky header).
        line: String,
        /// Whether screen lines show a dialog that the typed Enter would answer (the cards'
        /// screen-prompt recognizer; passed in, so panes do not depend on cards).
        showing_prompt: fn(&[String]) -> bool,
        /// The answer: `AtShell` / `ForegroundUnknown` / `ShowingPrompt` when refused.
        reply: Reply<()>,
    },
    /// Answer a screen prompt: type `keys` only if the pane's screen rows `rows` still hash to
    /// `hash` (SPEC §10.2) — checked and typed in this one turn, so nothing the actor does in
    /// between can move the dialog. `keys: None` checks without typing. Refused with
    /// [`PaneError::ScreenChanged`].
    Prompt {
        /// Pane id.
        pane: String,
        /// The first and one-past-the-last screen row the card was made from.
        rows: (usize, usize),
        /// SHA-256 (hex) of those rows then.
        hash: String,
        /// What to type (the option's number).
        keys: Option<String>,
        /// The answer.
        reply: Reply<()>,
    },
    /// Start a hosted pane.
    Create {
        /// Its name.
        name: Option<String>,
        /// argv; empty = the user's shell.
        command: Vec<String>,
        /// The folder it starts in (already checked by the caller); `None`: the home folder.
        cwd: Option<PathBuf>,
        /// The answer.
        reply: Reply<PaneInfo>,
    },
    /// The mirrored tmux sessions (where a new window can open).
    Sessions(RpcReplyPort<Vec<TmuxSessionInfo>>),
    /// Open a new window in the mirrored tmux session `session` of socket `socket` (the user's
    /// server: no hosted-pane cap applies; its mirror counts under the buffer cap like any tmux
    /// pane's). Answered once the window's pane is mirrored.
    CreateWindow {
        /// The socket's index.
        socket: usize,
        /// The session's name.
        session: String,
        /// The window's name.
        name: Option<String>,
        /// argv; empty = the session's default shell.
        command: Vec<String>,
        /// The folder it starts in (already checked by the caller); `None`: tmux's choice.
        cwd: Option<PathBuf>,
        /// The answer.
        reply: Reply<PaneInfo>,
    },
    /// Rename a pane (tmux: its window).
    Rename {
        /// Pane id.
        pane: String,
        /// New name.
        name: String,
        /// The answer.
        reply: Reply<()>,
    },
    /// Close a pane (tmux: kill-pane).
    Close {
        /// Pane id.
        pane: String,
        /// The answer.
        reply: Reply<()>,
    },
    /// Re-evaluate the tmux scrollback limit against the buffer cap (sent by the actor's own
    /// timer every [`BUDGET_PERIOD`] while there are panes, and when the pane set changes;
    /// harmless from anyone else).
    CheckBudget,
    /// Test-only fault: the next snapshot request fails the actor mid-request.
    #[cfg(feature = "fault-injection")]
    FailNextSnapshot,
}

struct Hosted {
    pane: HostedPane,
    name: String,
    token: String,
}

/// The actor's state.
pub struct PanesState {
    args: PanesArgs,
    tmux: TmuxBackend,
    /// The user's zellij sessions' panes (issue 34): none where zellij is missing or too old.
    zellij: ZellijBackend,
    hosted: BTreeMap<u32, Hosted>,
    next_hosted: u32,
    salt: Vec<u8>,
    /// The pane-set counter (see [`PanesMsg::WatchSet`]); the tmux backend bumps it too.
    set: watch::Sender<u64>,
    /// The timer that sends [`PanesMsg::CheckBudget`] while there are panes; stopped with the
    /// state.
    budget_timer: Option<AbortOnDropHandle<()>>,
    /// Sends [`PanesMsg::CheckBudget`] when the pane set changes; stopped with the state.
    _set_follower: AbortOnDropHandle<()>,
    /// Until the tmux mirrors' first look is done: the deadline of the wait for it.
    settling: Option<tokio::time::Instant>,
    #[cfg(feature = "fault-injection")]
    fail_next_snapshot: bool,
}

fn load_salt(store: &Store) -> Result<Vec<u8>, crate::store::StoreError> {
    if let Some(s) = store.get(Table::Meta, SALT_KEY)? {
        if s.len() == 32 {
            return Ok(s);
        }
    }
    let mut salt = vec![0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut salt);
    store.put(Table::Meta, SALT_KEY, &salt)?;
    Ok(salt)
}

impl Actor for PanesActor {
    type Msg = PanesMsg;
    type State = PanesState;
    type Arguments = PanesArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: PanesArgs,
    ) -> Result<PanesState, ActorProcessingErr> {
        let salt = load_salt(&args.store)?;
        let mut sockets = vec![TmuxSocket::Default];
        sockets.extend(args.tmux_sockets.iter().cloned().map(TmuxSocket::Path));
        let (set, _) = watch::channel(0);
        let tmux = TmuxBackend::start_telling(sockets, &salt, TmuxOptions::default(), set.clone());
        let zellij = ZellijBackend::start_telling(&salt, ZellijOptions::default(), set.clone());
        // The first look at tmux (a `tmux list-sessions` process, then the control clients) is
        // waited for by the first request, not here: the rest of the bridge starts serving
        // meanwhile (see `handle`).
        let mut follows = set.subscribe();
        let me = myself.clone();
        let set_follower = AbortOnDropHandle::new(tokio::spawn(async move {
            while follows.changed().await.is_ok() {
                if me.cast(PanesMsg::CheckBudget).is_err() {
                    return;
                }
            }
        }));
        let mut state = PanesState {
            args,
            tmux,
            zellij,
            hosted: BTreeMap::new(),
            next_hosted: 1,
            salt,
            set,
            budget_timer: None,
            _set_follower: set_follower,
            settling: Some(tokio::time::Instant::now() + SETTLE_WITHIN),
            #[cfg(feature = "fault-injection")]
            fail_next_snapshot: false,
        };
        state.arm_budget(&myself);
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: PanesMsg,
        state: &mut PanesState,
    ) -> Result<(), ActorProcessingErr> {
        // Answer nothing until tmux's panes are mirrored: a phone reconnecting right after a
        // restart must find its pane, not `no such pane`.
        if let Some(deadline) = state.settling.take() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !state.tmux.settled(left).await {
                tracing::warn!(
                    "tmux did not answer within {SETTLE_WITHIN:?}; its panes appear later"
                );
            }
        }
        match msg {
            PanesMsg::WatchSet(reply) => {
                let _ = reply.send(state.set.subscribe());
            }
            PanesMsg::List(reply) => {
                let _ = reply.send(state.list());
            }
            PanesMsg::Holding { chain, reply } => {
                let _ = reply.send(state.holding(&chain));
            }
            PanesMsg::Foreground { pane, reply } => {
                let _ = reply.send(state.foreground(PaneRef::parse(&pane)));
            }
            PanesMsg::Cwd { pane, reply } => {
                let _ = reply.send(state.cwd(PaneRef::parse(&pane)));
            }
            PanesMsg::Process { pane, reply } => {
                let _ = reply.send(state.process(PaneRef::parse(&pane)));
            }
            PanesMsg::Deliver {
                pane,
                line,
                showing_prompt,
                reply,
            } => {
                let pane = PaneRef::parse(&pane);
                let _ = reply.send(state.deliver(pane, &line, showing_prompt).await);
            }
            PanesMsg::Prompt {
                pane,
                rows,
                hash,
                keys,
                reply,
            } => {
                let pane = PaneRef::parse(&pane);
                let answer = match state.prompt_still(pane, rows, &hash) {
                    Ok(()) => match keys {
                        Some(keys) => state.input(pane, &keys, &[]).await,
                        None => Ok(()),
                    },
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            PanesMsg::Info { pane, reply } => {
                let _ = reply.send(state.info(PaneRef::parse(&pane)));
            }
            PanesMsg::Snapshot {
                pane,
                scrollback,
                reply,
            } => {
                #[cfg(feature = "fault-injection")]
                if std::mem::take(&mut state.fail_next_snapshot) {
                    // Fail with the reply port still unanswered: the caller must get
                    // `restarting, try again`, not a hang.
                    drop(reply);
                    return Err("injected fault: snapshot".into());
                }
                let _ = reply.send(state.snapshot(PaneRef::parse(&pane), scrollback));
            }
            PanesMsg::Subscribe { pane, reply } => {
                let _ = reply.send(state.subscribe(PaneRef::parse(&pane)));
            }
            PanesMsg::Input {
                pane,
                text,
                keys,
                reply,
            } => {
                let _ = reply.send(state.input(PaneRef::parse(&pane), &text, &keys).await);
            }
            PanesMsg::Create {
                name,
                command,
                cwd,
                reply,
            } => {
                let _ = reply.send(state.create(name, command, cwd).await);
                state.check_budget();
            }
            PanesMsg::Sessions(reply) => {
                let _ = reply.send(state.tmux.sessions());
            }
            PanesMsg::CreateWindow {
                socket,
                session,
                name,
                command,
                cwd,
                reply,
            } => {
                let created = state
                    .tmux
                    .new_window_in(socket, &session, name.as_deref(), &command, cwd.as_deref())
                    .await;
                let answer = match created {
                    Ok(id) => state.info(PaneRef::parse(&id)),
                    Err(e) => Err(e.into()),
                };
                let _ = reply.send(answer);
                state.check_budget();
            }
            PanesMsg::Rename { pane, name, reply } => {
                let _ = reply.send(state.rename(PaneRef::parse(&pane), name).await);
            }
            PanesMsg::Close { pane, reply } => {
                let _ = reply.send(state.close(PaneRef::parse(&pane)).await);
                state.check_budget();
            }
            PanesMsg::CheckBudget => {
                state.check_budget();
                state.arm_budget(&myself);
            }
            #[cfg(feature = "fault-injection")]
            PanesMsg::FailNextSnapshot => state.fail_next_snapshot = true,
        }
        Ok(())
    }
}

impl PanesState {
    fn mask(&self, s: &str) -> String {
        self.args.masker.mask(s).into_owned()
    }

    fn hosted_pane(&self, n: u32) -> Result<&Hosted, PaneError> {
        self.hosted.get(&n).ok_or(PaneError::NoSuchPane)
    }

    fn tmux_info(&self, p: super::tmux::TmuxPaneInfo) -> PaneInfo {
        PaneInfo {
            machine: self.args.machine.get(),
            pane: p.id,
            token: p.token,
            name: self.mask(&p.name),
            backend: "tmux".to_owned(),
            alive: p.alive,
            cols: p.cols,
            rows: p.rows,
            last_activity: rfc3339::format(OffsetDateTime::from(p.last_activity)),
            asking_password: p.asking_password,
            at_shell: false,
            activity: Default::default(),
        }
    }

    fn zellij_info(&self, p: ZellijPaneInfo) -> PaneInfo {
        PaneInfo {
            machine: self.args.machine.get(),
            pane: p.id,
            token: p.token,
            name: self.mask(&p.name),
            backend: "zellij".to_owned(),
            alive: p.alive,
            cols: p.cols,
            rows: p.rows,
            last_activity: rfc3339::format(OffsetDateTime::from(p.last_activity)),
            asking_password: p.asking_password,
            at_shell: false,
            activity: Default::default(),
        }
    }

    fn hosted_info(&self, n: u32, h: &Hosted) -> PaneInfo {
        let (rows, cols) = h.pane.size();
        PaneInfo {
            machine: self.args.machine.get(),
            pane: PaneRef::Hosted(n).to_string(),
            token: h.token.clone(),
            name: self.mask(&h.name),
            backend: "pty".to_owned(),
            alive: h.pane.is_alive(),
            cols,
            rows,
            last_activity: rfc3339::format(h.pane.last_activity()),
            asking_password: h.pane.asking_password(),
            at_shell: false,
            activity: Default::default(),
        }
    }

    /// Every pane, each marked if it is at a shell prompt (read from `/proc` now, once for all
    /// panes; a pane whose foreground cannot be read is marked too).
    fn list(&self) -> Vec<PaneInfo> {
        let procs = Processes::scan();
        let mut out: Vec<PaneInfo> = self
            .tmux
            .list()
            .into_iter()
            .map(|p| {
                let pid = p.pid;
                let mut info = self.tmux_info(p);
                info.at_shell = procs.at_prompt(pid);
                info
            })
            .collect();
        out.extend(self.zellij.list().into_iter().map(|p| {
            // A pane whose process is not found yet counts as at a shell: nothing that refuses a
            // shell (a walky line) types into it.
            let at_shell = p.pid.is_none_or(|pid| procs.at_prompt(pid));
            let mut info = self.zellij_info(p);
            info.at_shell = at_shell;
            info
        }));
        out.extend(self.hosted.iter().map(|(n, h)| {
            let mut info = self.hosted_info(*n, h);
            info.at_shell = h.pane.pid().is_none_or(|pid| procs.at_prompt(pid));
            info
        }));
        out
    }

    /// The pane whose process (a tmux pane's `pane_pid`, a hosted pane's child) is on `chain`.
    fn holding(&self, chain: &[u32]) -> Option<PaneInfo> {
        if let Some(p) = self
            .tmux
            .list()
            .into_iter()
            .find(|p| chain.contains(&p.pid))
        {
            return Some(self.tmux_info(p));
        }
        if let Some(p) = self
            .zellij
            .list()
            .into_iter()
            .find(|p| p.pid.is_some_and(|pid| chain.contains(&pid)))
        {
            return Some(self.zellij_info(p));
        }
        self.hosted
            .iter()
            .find(|(_, h)| h.pane.pid().is_some_and(|pid| chain.contains(&pid)))
            .map(|(n, h)| self.hosted_info(*n, h))
    }

    /// The pane's first process (`None`: a hosted pane whose child is gone, a zellij pane whose
    /// process is not found yet).
    fn process(&self, pane: PaneRef<'_>) -> Result<Option<u32>, PaneError> {
        Ok(match pane {
            PaneRef::Hosted(n) => self.hosted_pane(n)?.pane.pid(),
            PaneRef::Tmux(id) => Some(self.tmux.info(id).ok_or(PaneError::NoSuchPane)?.pid),
            PaneRef::Zellij(id) => self.zellij.info(id).ok_or(PaneError::NoSuchPane)?.pid,
        })
    }

    /// The names of the processes in the pane's terminal's foreground group, read now; `None`
    /// when they cannot be read.
    fn foreground(&self, pane: PaneRef<'_>) -> Result<Option<Vec<String>>, PaneError> {
        Ok(self
            .process(pane)?
            .and_then(|pid| Processes::scan().foreground_of(pid)))
    }

    /// The working folder of the pane's foreground process, read now.
    fn cwd(&self, pane: PaneRef<'_>) -> Result<Option<PathBuf>, PaneError> {
        Ok(self.process(pane)?.and_then(super::foreground::cwd_of))
    }

    /// Types one line and Enter into `pane` only if its foreground process is not a shell and
    /// its screen, as the screen-prompt watcher reads it (the visible rows, masked), shows no
    /// dialog `showing_prompt` recognizes — a walky header (SPEC §9). The checks and the typing
    /// happen in one turn of the actor, so nothing the actor does in between can change them.
    async fn deliver(
        &self,
        pane: PaneRef<'_>,
        line: &str,
        showing_prompt: fn(&[String]) -> bool,
    ) -> Result<(), PaneError> {
        match self.foreground(pane)? {
            Some(names) if !at_prompt(&names) => {}
            Some(_) => return Err(PaneError::AtShell),
            None => return Err(PaneError::ForegroundUnknown),
        }
        if showing_prompt(&self.snapshot(pane, 0)?.snapshot.lines) {
            return Err(PaneError::ShowingPrompt);
        }
        self.input(pane, line, &[NamedKey::Enter]).await
    }

    fn info(&self, pane: PaneRef<'_>) -> Result<PaneInfo, PaneError> {
        match pane {
            PaneRef::Hosted(n) => Ok(self.hosted_info(n, self.hosted_pane(n)?)),
            PaneRef::Tmux(id) => self
                .tmux
                .info(id)
                .map(|p| self.tmux_info(p))
                .ok_or(PaneError::NoSuchPane),
            PaneRef::Zellij(id) => self
                .zellij
                .info(id)
                .map(|p| self.zellij_info(p))
                .ok_or(PaneError::NoSuchPane),
        }
    }

    fn snapshot(&self, pane: PaneRef<'_>, scrollback: usize) -> Result<ColourSnapshot, PaneError> {
        let mask = |s: &str| self.mask(s);
        let (token, name, screen) = match pane {
            PaneRef::Hosted(n) => {
                let h = self.hosted_pane(n)?;
                let screen = h.pane.snapshot(scrollback, &mask);
                (h.token.clone(), h.name.clone(), screen)
            }
            PaneRef::Tmux(id) => self
                .tmux
                .snapshot(id, scrollback, &mask)
                .ok_or(PaneError::NoSuchPane)?,
            PaneRef::Zellij(id) => self
                .zellij
                .snapshot(id, scrollback, &mask)
                .ok_or(PaneError::NoSuchPane)?,
        };
        let machine = self.args.machine.get();
        Ok(screen.into_pane_snapshot(machine, pane.to_string(), token, self.mask(&name)))
    }

    /// Whether the pane's screen rows `rows` hash to `hash` now.
    fn prompt_still(
        &self,
        pane: PaneRef<'_>,
        (first, end): (usize, usize),
        hash: &str,
    ) -> Result<(), PaneError> {
        let screen = self.snapshot(pane, 0)?.snapshot;
        match screen.lines.get(first..end) {
            Some(rows) if lines_hash(rows) == hash => Ok(()),
            _ => Err(PaneError::ScreenChanged),
        }
    }

    fn subscribe(&self, pane: PaneRef<'_>) -> Result<watch::Receiver<u64>, PaneError> {
        match pane {
            PaneRef::Hosted(n) => Ok(self.hosted_pane(n)?.pane.subscribe()),
            PaneRef::Tmux(id) => self.tmux.subscribe(id).ok_or(PaneError::NoSuchPane),
            PaneRef::Zellij(id) => self.zellij.subscribe(id).ok_or(PaneError::NoSuchPane),
        }
    }

    async fn input(
        &self,
        pane: PaneRef<'_>,
        text: &str,
        keys: &[NamedKey],
    ) -> Result<(), PaneError> {
        match pane {
            PaneRef::Hosted(n) => self
                .hosted_pane(n)?
                .pane
                .write_input(text, keys)
                .map_err(|e| PaneError::Backend(e.to_string())),
            PaneRef::Tmux(id) => {
                if !text.is_empty() {
                    self.tmux.send_text(id, text).await?;
                }
                for key in keys {
                    self.tmux.send_key(id, *key).await?;
                }
                Ok(())
            }
            PaneRef::Zellij(id) => {
                if !text.is_empty() {
                    self.zellij.send_text(id, text).await?;
                }
                for key in keys {
                    self.zellij.send_key(id, *key).await?;
                }
                Ok(())
            }
        }
    }

    fn allocated_bytes(&self) -> usize {
        self.tmux.allocated_bytes()
            + self.zellij.allocated_bytes()
            + self
                .hosted
                .values()
                .map(|h| h.pane.allocated_bytes())
                .sum::<usize>()
    }

    /// Tells the pane-set watchers that a pane appeared, went or was renamed.
    fn set_changed(&self) {
        self.set.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Runs the budget timer while there is a pane (whose output could grow the buffers), and
    /// stops it when there is none: an idle bridge without panes has nothing to re-evaluate.
    fn arm_budget(&mut self, myself: &ActorRef<PanesMsg>) {
        let any = !self.hosted.is_empty()
            || !self.tmux.list().is_empty()
            || !self.zellij.list().is_empty();
        match (any, self.budget_timer.is_some()) {
            (true, false) => {
                let timer = myself.send_interval(BUDGET_PERIOD, || PanesMsg::CheckBudget);
                self.budget_timer = Some(AbortOnDropHandle::new(timer));
            }
            (false, true) => self.budget_timer = None,
            _ => {}
        }
    }

    /// Applies the scrollback policy to the tmux and zellij mirrors (SPEC §5 "Caps"), one limit
    /// for both; the backends rebuild them in the background when it changes.
    fn check_budget(&self) {
        let current = self.tmux.scrollback_limit();
        let limit = tmux_scrollback_limit(BudgetInput {
            cap: self.args.buffer_cap,
            allocated: self.allocated_bytes(),
            mirror_line_bytes: self.tmux.scrollback_line_bytes()
                + self.zellij.scrollback_line_bytes(),
            full: self.tmux.options().scrollback,
            current,
        });
        if limit != current {
            tracing::info!(
                from = current,
                to = limit,
                "mirror scrollback limit changed"
            );
            self.tmux.set_scrollback_limit(limit);
        }
        self.zellij.set_scrollback_limit(limit);
    }

    async fn create(
        &mut self,
        name: Option<String>,
        command: Vec<String>,
        cwd: Option<PathBuf>,
    ) -> Result<PaneInfo, PaneError> {
        // What one more hosted pane may grow to: its ring plus a full screen and scrollback at the
        // size it starts with (vt100 cells are 32 bytes).
        let start = SpawnOptions::default();
        let reserve = DEFAULT_RING_BYTES
            + (DEFAULT_SCROLLBACK_LINES + usize::from(start.rows)) * usize::from(start.cols) * 32;
        let over_count = self.hosted.len() >= MAX_HOSTED;
        let over_bytes = self.allocated_bytes() + reserve > self.args.buffer_cap;
        if over_count {
            return Err(PaneError::ResourceLimit("hosted pane limit"));
        }
        if over_bytes {
            return Err(PaneError::ResourceLimit("pane buffer cap"));
        }
        let n = self.next_hosted;
        self.next_hosted += 1;
        let id = PaneRef::Hosted(n);
        let mut nonce = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let token = pane_token(&self.salt, &format!("hosted:{}:{n}", hex::encode(nonce)));
        let opts = SpawnOptions {
            command: if command.is_empty() {
                None
            } else {
                Some(command)
            },
            env: vec![(
                "COLLIE_PANE".into(),
                format!("{}/{id}#{token}", self.args.machine),
            )],
            cwd,
            ..SpawnOptions::default()
        };
        let pane = HostedPane::spawn(opts)
            .map_err(|e| PaneError::Backend(format!("cannot start the pane: {e}")))?;
        let name = name.unwrap_or_else(|| format!("pane {n}"));
        self.hosted.insert(n, Hosted { pane, name, token });
        self.set_changed();
        self.info(id)
    }

    async fn rename(&mut self, pane: PaneRef<'_>, name: String) -> Result<(), PaneError> {
        match pane {
            PaneRef::Hosted(n) => {
                self.hosted.get_mut(&n).ok_or(PaneError::NoSuchPane)?.name = name;
                self.set_changed();
                Ok(())
            }
            PaneRef::Tmux(id) => Ok(self.tmux.rename(id, &name).await?),
            PaneRef::Zellij(id) => Ok(self.zellij.rename(id, &name).await?),
        }
    }

    async fn close(&mut self, pane: PaneRef<'_>) -> Result<(), PaneError> {
        match pane {
            PaneRef::Hosted(n) => {
                self.hosted
                    .remove(&n)
                    .ok_or(PaneError::NoSuchPane)?
                    .pane
                    .kill();
                self.set_changed();
                Ok(())
            }
            PaneRef::Tmux(id) => Ok(self.tmux.kill(id).await?),
            PaneRef::Zellij(id) => Ok(self.zellij.kill(id).await?),
        }
    }
}
