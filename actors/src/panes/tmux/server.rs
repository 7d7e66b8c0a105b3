//! One tmux server (one socket): its control clients and the mirrors of its panes.
//!
//! The manager task ([`run`]) discovers the sessions by running `tmux list-sessions` (the only
//! process it spawns besides the control clients), attaches one control client per session, and
//! re-synchronises the pane list (`list-panes` through a control client) whenever a client reports
//! a structural change (`%window-add`, `%layout-change`, `%sessions-changed`, …). New panes, and
//! panes whose size changed, are seeded with `display` + `capture-pane` through the control client
//! of the session that owns them; the reader task applies the seed in stream order (see
//! `client.rs`). When the last client is gone (server exited) every mirror is dropped and the
//! manager tries discovery again once a server makes its socket (`appear.rs`: inotify on the
//! socket's folder, no clock), when woken, or after [`appear::RECHECK`].
//!
//! Scrollback limit: every mirror's screen keeps the lines of the backend's current limit (a
//! `watch` channel, lowered by the Panes actor when the global buffer cap is near). vt100 cannot
//! shrink or grow a screen's scrollback in place, so when the limit changes the manager reseeds
//! every mirror whose screen was built with another limit — the same `display` + `capture-pane`
//! through the control client as after a resize, with `-S -<limit>` — and the capture's reply
//! rebuilds the screen with that many lines. New mirrors start with the current limit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinSet;

use super::appear;
use super::client::{self, Client, Event, Hook};
use super::control::Reply;
use super::{TmuxError, TmuxOptions, TmuxPaneInfo, TmuxSocket};
use crate::panes::screen::Screen;
use crate::panes::snapshot::ScreenSnapshot;
use crate::panes::token::pane_token;

/// The `list-panes` format; the window name comes last because it may hold spaces.
const PANE_FORMAT: &str = "#{session_id} #{window_id} #{pane_id} #{pane_pid} #{pane_width} \
                           #{pane_height} #{window_panes} #{pane_index} #{pane_dead} #{pid} \
                           #{window_activity} #{window_name}";

/// State of one socket shared by the manager, the readers and the backend's queries.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) index: usize,
    socket: TmuxSocket,
    options: Arc<TmuxOptions>,
    salt: Arc<[u8]>,
    state: Mutex<State>,
    /// Wakes the manager from its retry sleep (a session was just created).
    pub(super) wake: Notify,
    /// Lines of scrollback each mirror keeps now (see the module doc).
    scrollback: watch::Receiver<usize>,
    /// True once the manager's first look at the server is done: its panes are mirrored, or
    /// there is no server. Lookups right after a start wait for it (see
    /// [`super::TmuxBackend::settled`]).
    settled: watch::Sender<bool>,
    /// Counts the pane lists merged into the mirrors, so a wait for a new pane wakes when one
    /// lands (see [`Shared::merged`]).
    merged: watch::Sender<u64>,
    /// The backend owner's counter of pane-set changes: bumped when a merge adds, drops or
    /// renames a mirror, or the server's mirrors are dropped (never by a merge that changed none).
    changes: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    server_pid: Option<u32>,
    panes: BTreeMap<u32, Mirror>,
    clients: BTreeMap<u32, Arc<Client>>,
    /// Session id → name, as of the last sync (renames and new sessions trigger one).
    names: BTreeMap<u32, String>,
}

#[derive(Debug)]
struct Mirror {
    /// The session whose control client feeds this mirror (a window linked to several sessions
    /// shows up in each; only one feeds it).
    owner: u32,
    pane_pid: u32,
    name: String,
    screen: Screen,
    seq: u64,
    tx: watch::Sender<u64>,
    alive: bool,
    last_activity: SystemTime,
    /// Cursor and size `(x, y, cols, rows)` from the seed's `display`, until its capture lands.
    seed_cursor: Option<(u16, u16, u16, u16)>,
    /// The scrollback limit of the last seed asked for (the screen's own once it lands).
    scrollback: usize,
}

impl Mirror {
    fn bump(&mut self) {
        self.seq += 1;
        self.tx.send_replace(self.seq);
    }
}

/// A pane to seed: through the control client of `owner`, with `scrollback` lines of history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seed {
    pane: u32,
    owner: u32,
    scrollback: usize,
}

/// One line of `list-panes`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PaneRow {
    session: u32,
    pane: u32,
    pane_pid: u32,
    cols: u16,
    rows: u16,
    name: String,
    dead: bool,
    server_pid: u32,
    activity: u64,
}

impl Shared {
    /// A `tmux` command for this socket: `-S <path>` for an explicit socket, nothing for the
    /// default one (tmux then honours `TMUX_TMPDIR`). `TMUX` is removed so that a bridge running
    /// inside tmux neither picks that server instead nor trips tmux's nesting check.
    pub(super) fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.options.program);
        cmd.env_remove("TMUX");
        for (k, v) in &self.options.env {
            cmd.env(k, v);
        }
        if let TmuxSocket::Path(path) = &self.socket {
            cmd.arg("-S").arg(path);
        }
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        cmd
    }

    pub(super) fn new(
        index: usize,
        socket: TmuxSocket,
        options: Arc<TmuxOptions>,
        salt: Arc<[u8]>,
        scrollback: watch::Receiver<usize>,
        changes: watch::Sender<u64>,
    ) -> Shared {
        Shared {
            index,
            socket,
            options,
            salt,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            scrollback,
            settled: watch::channel(false).0,
            merged: watch::channel(0).0,
            changes,
        }
    }

    /// Tells the owner the set of panes (or a name) changed.
    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes each time a pane list is merged into the mirrors.
    pub(super) fn merged(&self) -> watch::Receiver<u64> {
        self.merged.subscribe()
    }

    /// A receiver that turns true once the first discovery (and sync) of this server is done.
    pub(super) fn settled(&self) -> watch::Receiver<bool> {
        self.settled.subscribe()
    }

    // ---- queries (from the backend) ----

    pub(super) fn list(&self) -> Vec<TmuxPaneInfo> {
        let state = self.state.lock();
        let server_pid = state.server_pid.unwrap_or(0);
        state
            .panes
            .iter()
            .map(|(pane, m)| self.pane_info(server_pid, *pane, m))
            .collect()
    }

    /// One pane's entry of [`Shared::list`].
    pub(super) fn info(&self, pane: u32) -> Option<TmuxPaneInfo> {
        let state = self.state.lock();
        let server_pid = state.server_pid.unwrap_or(0);
        state
            .panes
            .get(&pane)
            .map(|m| self.pane_info(server_pid, pane, m))
    }

    /// The id and token of pane `%pane` (SPEC §5: the token follows the pane instance).
    fn id_and_token(&self, server_pid: u32, pane: u32, pane_pid: u32) -> (String, String) {
        (
            format!("t{}-{pane}", self.index),
            pane_token(&self.salt, &format!("tmux:{server_pid}:%{pane}:{pane_pid}")),
        )
    }

    fn pane_info(&self, server_pid: u32, pane: u32, m: &Mirror) -> TmuxPaneInfo {
        let (rows, cols) = m.screen.size();
        let (id, token) = self.id_and_token(server_pid, pane, m.pane_pid);
        TmuxPaneInfo {
            id,
            token,
            name: m.name.clone(),
            cols,
            rows,
            alive: m.alive,
            last_activity: m.last_activity,
            asking_password: m.screen.asking_password(),
            pid: m.pane_pid,
        }
    }

    pub(super) fn snapshot(
        &self,
        pane: u32,
        scrollback: usize,
        mask: &dyn Fn(&str) -> String,
    ) -> Option<(String, String, ScreenSnapshot)> {
        let mut state = self.state.lock();
        let server_pid = state.server_pid.unwrap_or(0);
        let m = state.panes.get_mut(&pane)?;
        let (_, token) = self.id_and_token(server_pid, pane, m.pane_pid);
        let screen = ScreenSnapshot::capture(&mut m.screen, m.seq, scrollback, mask);
        Some((token, m.name.clone(), screen))
    }

    pub(super) fn subscribe(&self, pane: u32) -> Option<watch::Receiver<u64>> {
        self.state.lock().panes.get(&pane).map(|m| m.tx.subscribe())
    }

    pub(super) fn has_pane(&self, pane: u32) -> bool {
        self.state.lock().panes.contains_key(&pane)
    }

    pub(super) fn allocated_bytes(&self) -> usize {
        self.state
            .lock()
            .panes
            .values()
            .map(|m| m.screen.allocated_bytes())
            .sum()
    }

    /// Bytes one more line of scrollback costs across all mirrors of this socket.
    pub(super) fn scrollback_line_bytes(&self) -> usize {
        self.state
            .lock()
            .panes
            .values()
            .map(|m| m.screen.line_bytes())
            .sum()
    }

    /// The control client to send commands about `pane` through.
    pub(super) fn client_for(&self, pane: u32) -> Result<Arc<Client>, TmuxError> {
        let state = self.state.lock();
        let m = state.panes.get(&pane).ok_or(TmuxError::NoSuchPane)?;
        state
            .clients
            .get(&m.owner)
            .cloned()
            .ok_or(TmuxError::NoSuchPane)
    }

    /// The control client of the first session, if any.
    pub(super) fn first_client(&self) -> Option<Arc<Client>> {
        self.state.lock().clients.values().next().cloned()
    }

    /// The mirrored sessions (a control client is attached to each) with their names, by id.
    pub(super) fn sessions(&self) -> Vec<(u32, String)> {
        let state = self.state.lock();
        state
            .clients
            .keys()
            .filter_map(|id| state.names.get(id).map(|name| (*id, name.clone())))
            .collect()
    }

    // ---- manager ----

    /// Lists session ids by spawning `tmux list-sessions`; empty when no server runs.
    async fn discover(&self) -> Result<Vec<u32>, TmuxError> {
        let out = self
            .command()
            .arg("list-sessions")
            .arg("-F")
            .arg("#{session_id}")
            .stderr(std::process::Stdio::null())
            .output()
            .await
            .map_err(|e| TmuxError::NotFound(e.to_string()))?;
        if !out.status.success() {
            return Ok(Vec::new());
        }
        Ok(parse_sessions(&String::from_utf8_lossy(&out.stdout)))
    }

    fn attach(
        self: &Arc<Self>,
        session: u32,
        events: &mpsc::UnboundedSender<Event>,
        readers: &mut JoinSet<()>,
    ) {
        match client::spawn(self.as_ref(), session) {
            Ok(spawned) => {
                self.state
                    .lock()
                    .clients
                    .insert(session, spawned.client.clone());
                readers.spawn(client::run_client(spawned, self.clone(), events.clone()));
            }
            Err(e) => {
                tracing::warn!(socket = self.index, session, error = %e, "tmux attach failed")
            }
        }
    }

    /// Re-reads sessions and panes through the control clients and seeds new or resized panes.
    async fn sync(
        self: &Arc<Self>,
        events: &mpsc::UnboundedSender<Event>,
        readers: &mut JoinSet<()>,
    ) {
        let Some(any) = self.first_client() else {
            return;
        };
        let listed = any
            .run_one("list-sessions -F '#{session_id} #{session_name}'".into())
            .await;
        if let Ok(reply) = listed {
            let names = parse_named_sessions(&reply.text());
            let live: BTreeSet<u32> = names.keys().copied().collect();
            let known: BTreeSet<u32> = self.state.lock().clients.keys().copied().collect();
            for s in live.difference(&known) {
                self.attach(*s, events, readers);
            }
            let mut state = self.state.lock();
            state.clients.retain(|s, _| live.contains(s));
            state.names = names;
        }
        let clients: Vec<Arc<Client>> = self.state.lock().clients.values().cloned().collect();
        let mut rows = Vec::new();
        for c in &clients {
            let command = format!("list-panes -s -t '${}' -F '{PANE_FORMAT}'", c.session);
            if let Ok(reply) = c.run_one(command).await {
                rows.extend(
                    reply
                        .lines
                        .iter()
                        .filter_map(|l| parse_pane_row(&String::from_utf8_lossy(l))),
                );
            }
        }
        let to_seed = self.merge(&rows);
        self.seed(&to_seed, &clients).await;
    }

    /// Reseeds every mirror whose screen was built (or is being seeded) with another scrollback
    /// limit than the current one.
    async fn rescale(&self) {
        let limit = *self.scrollback.borrow();
        let (to_seed, clients) = {
            let mut state = self.state.lock();
            let mut to_seed = Vec::new();
            for (pane, m) in &mut state.panes {
                if m.scrollback != limit {
                    m.scrollback = limit;
                    to_seed.push(Seed {
                        pane: *pane,
                        owner: m.owner,
                        scrollback: limit,
                    });
                }
            }
            let clients: Vec<Arc<Client>> = state.clients.values().cloned().collect();
            (to_seed, clients)
        };
        if !to_seed.is_empty() {
            tracing::debug!(
                socket = self.index,
                limit,
                panes = to_seed.len(),
                "tmux scrollback limit changed"
            );
        }
        self.seed(&to_seed, &clients).await;
    }

    /// Asks each pane's owning control client for its cursor and content; the reader rebuilds the
    /// screen when the capture's reply arrives (see `client.rs`).
    async fn seed(&self, to_seed: &[Seed], clients: &[Arc<Client>]) {
        for &Seed {
            pane,
            owner,
            scrollback,
        } in to_seed
        {
            let Some(c) = clients.iter().find(|c| c.session == owner) else {
                continue;
            };
            let commands = [
                (
                    format!("display -p -t '%{pane}' '#{{cursor_x}} #{{cursor_y}} #{{pane_width}} #{{pane_height}}'"),
                    Hook::SeedCursor(pane),
                ),
                (
                    format!("capture-pane -p -e -J -S -{scrollback} -t '%{pane}'"),
                    Hook::SeedCapture { pane, scrollback },
                ),
            ];
            if let Err(e) = c.run(&commands).await {
                tracing::debug!(socket = self.index, pane, error = %e, "tmux seed failed");
            }
        }
    }

    /// Applies a fresh pane list to the mirrors; returns the panes to seed.
    fn merge(&self, rows: &[PaneRow]) -> Vec<Seed> {
        let limit = *self.scrollback.borrow();
        let mut state = self.state.lock();
        let mut seen = BTreeMap::<u32, &PaneRow>::new();
        for row in rows {
            let keep_owner = state
                .panes
                .get(&row.pane)
                .is_some_and(|m| m.owner == row.session);
            if keep_owner || !seen.contains_key(&row.pane) {
                seen.insert(row.pane, row);
            }
        }
        if let Some(row) = rows.first() {
            state.server_pid = Some(row.server_pid);
        }
        let before = state.panes.len();
        state.panes.retain(|pane, _| seen.contains_key(pane));
        let mut set_changed = state.panes.len() != before;
        let mut to_seed = Vec::new();
        for (pane, row) in seen {
            match state.panes.get_mut(&pane) {
                Some(m) => {
                    set_changed |= m.name != row.name;
                    m.name.clone_from(&row.name);
                    m.alive = !row.dead;
                    let resized = m.screen.size() != (row.rows, row.cols);
                    if resized || m.owner != row.session || m.pane_pid != row.pane_pid {
                        m.owner = row.session;
                        m.pane_pid = row.pane_pid;
                        m.screen.resize(row.rows, row.cols);
                        m.scrollback = limit;
                        to_seed.push(Seed {
                            pane,
                            owner: row.session,
                            scrollback: limit,
                        });
                    }
                }
                None => {
                    set_changed = true;
                    let (tx, _) = watch::channel(0);
                    state.panes.insert(
                        pane,
                        Mirror {
                            owner: row.session,
                            pane_pid: row.pane_pid,
                            name: row.name.clone(),
                            screen: Screen::new(row.rows, row.cols, limit),
                            seq: 0,
                            tx,
                            alive: !row.dead,
                            last_activity: SystemTime::UNIX_EPOCH
                                + Duration::from_secs(row.activity),
                            seed_cursor: None,
                            scrollback: limit,
                        },
                    );
                    to_seed.push(Seed {
                        pane,
                        owner: row.session,
                        scrollback: limit,
                    });
                }
            }
        }
        drop(state);
        self.merged.send_modify(|n| *n += 1);
        if set_changed {
            self.changed();
        }
        to_seed
    }

    /// Serves the server while it runs: returns when discovery finds nothing or the last
    /// control client is gone.
    async fn serve(self: &Arc<Self>) {
        let sessions = match self.discover().await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(socket = self.index, error = %e, "tmux not available");
                return;
            }
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut readers = JoinSet::new();
        for s in sessions {
            self.attach(s, &tx, &mut readers);
        }
        if self.state.lock().clients.is_empty() {
            return;
        }
        // Mirrors made from here on use the limit as it is now; later changes reseed them.
        let mut limit = self.scrollback.clone();
        limit.mark_unchanged();
        let mut limit_open = true;
        self.sync(&tx, &mut readers).await;
        self.settled.send_replace(true);
        loop {
            let first = tokio::select! {
                event = rx.recv() => event,
                changed = limit.changed(), if limit_open => {
                    // Closed only when the backend is dropped, which aborts this task anyway.
                    limit_open = changed.is_ok();
                    limit.mark_unchanged();
                    self.rescale().await;
                    continue;
                }
            };
            let Some(first) = first else { return };
            let mut pending = vec![first];
            while let Ok(e) = rx.try_recv() {
                pending.push(e);
            }
            for event in pending {
                match event {
                    Event::ClientGone(session) => {
                        self.state.lock().clients.remove(&session);
                    }
                    Event::Changed(n) => tracing::trace!(socket = self.index, ?n, "tmux change"),
                }
            }
            if self.state.lock().clients.is_empty() {
                return;
            }
            self.sync(&tx, &mut readers).await;
            // Reap finished readers so the set does not grow.
            while readers.try_join_next().is_some() {}
        }
    }

    fn clear(&self) {
        let mut state = self.state.lock();
        let had_panes = !state.panes.is_empty();
        state.panes.clear();
        state.clients.clear();
        state.names.clear();
        state.server_pid = None;
        drop(state);
        if had_panes {
            self.changed();
        }
    }
}

/// The manager task of one socket; runs until aborted.
pub(super) async fn run(shared: Arc<Shared>) {
    let socket = appear::socket_path(&shared.socket, &shared.options.env);
    loop {
        let tried = SystemTime::now();
        shared.serve().await;
        shared.clear();
        // No server (or it went away): nothing to wait for.
        shared.settled.send_replace(true);
        // Until a server makes its socket (see `appear`), or a session is made here.
        let appeared = async {
            if let Err(e) = appear::created_near(&socket, tried).await {
                tracing::debug!(
                    socket = shared.index,
                    error = %e,
                    "cannot watch for a tmux server; retrying on a clock"
                );
                tokio::time::sleep(shared.options.retry).await;
            }
        };
        tokio::select! {
            () = appeared => {}
            () = shared.wake.notified() => {}
        }
    }
}

fn parse_sessions(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix('$')?.parse().ok())
        .collect()
}

/// `list-sessions -F '#{session_id} #{session_name}'` → id → name (a name may hold spaces).
fn parse_named_sessions(text: &str) -> BTreeMap<u32, String> {
    text.lines()
        .filter_map(|l| {
            let (id, name) = l.split_once(' ')?;
            Some((id.strip_prefix('$')?.parse().ok()?, name.to_owned()))
        })
        .collect()
}

fn parse_pane_row(line: &str) -> Option<PaneRow> {
    let mut parts = line.splitn(12, ' ');
    let mut next = || parts.next();
    let session = next()?.strip_prefix('$')?.parse().ok()?;
    let _window = next()?;
    let pane = next()?.strip_prefix('%')?.parse().ok()?;
    let pane_pid = next()?.parse().ok()?;
    let cols = next()?.parse().ok()?;
    let rows = next()?.parse().ok()?;
    let window_panes: u32 = next()?.parse().ok()?;
    let pane_index: u32 = next()?.parse().ok()?;
    let dead = next()? == "1";
    let server_pid = next()?.parse().ok()?;
    let activity = next()?.parse().ok()?;
    let window_name = next().unwrap_or("");
    let name = if window_panes <= 1 {
        window_name.to_owned()
    } else {
        format!("{window_name}.{pane_index}")
    };
    Some(PaneRow {
        session,
        pane,
        pane_pid,
        cols,
        rows,
        name,
        dead,
        server_pid,
        activity,
    })
}

/// What the control clients of this socket report, called from their reader tasks in stream
/// order.
impl client::Server for Shared {
    fn command(&self) -> tokio::process::Command {
        Shared::command(self)
    }

    fn apply_output(&self, session: u32, pane: u32, bytes: &[u8]) {
        let mut state = self.state.lock();
        if let Some(m) = state.panes.get_mut(&pane) {
            if m.owner == session {
                m.screen.feed(bytes);
                m.last_activity = SystemTime::now();
                m.bump();
            }
        }
    }

    fn seed_cursor(&self, session: u32, pane: u32, reply: &Reply) {
        let Some(line) = reply.lines.first() else {
            return;
        };
        let nums: Vec<u16> = String::from_utf8_lossy(line)
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let [x, y, cols, rows] = nums[..] else { return };
        let mut state = self.state.lock();
        if let Some(m) = state.panes.get_mut(&pane) {
            if m.owner == session {
                m.seed_cursor = Some((x, y, cols, rows));
            }
        }
    }

    fn seed_capture(&self, session: u32, pane: u32, scrollback: usize, reply: &Reply) {
        let mut state = self.state.lock();
        let Some(m) = state.panes.get_mut(&pane) else {
            return;
        };
        if m.owner != session {
            return;
        }
        let (rows, cols) = m.screen.size();
        let (x, y, cols, rows) = m.seed_cursor.take().unwrap_or((0, 0, cols, rows));
        let mut screen = Screen::new(rows, cols, scrollback);
        for (i, line) in reply.lines.iter().enumerate() {
            if i > 0 {
                screen.feed(b"\r\n");
            }
            screen.feed(line);
        }
        screen.feed(format!("\x1b[0m\x1b[{};{}H", y + 1, x + 1).as_bytes());
        m.screen = screen;
        m.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pane_rows_and_names() {
        let r = parse_pane_row("$0 @1 %5 1234 80 24 1 0 0 999 1700000000 my window").expect("row");
        assert_eq!(
            r,
            PaneRow {
                session: 0,
                pane: 5,
                pane_pid: 1234,
                cols: 80,
                rows: 24,
                name: "my window".into(),
                dead: false,
                server_pid: 999,
                activity: 1_700_000_000,
            }
        );
        let r = parse_pane_row("$2 @1 %6 1235 40 24 2 1 1 999 1700000000 editor").expect("row");
        assert_eq!(r.name, "editor.1");
        assert!(r.dead);
        assert_eq!(parse_pane_row("garbage"), None);
        assert_eq!(parse_sessions("$0\n$12\nbad\n"), vec![0, 12]);
        assert_eq!(
            parse_named_sessions("$0 main\n$12 my work\nbad\n$x y\n"),
            BTreeMap::from([(0, "main".to_owned()), (12, "my work".to_owned())])
        );
    }
}
