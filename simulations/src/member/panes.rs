//! The stand-in for a member's pane backend: a few panes of text lines, behind the shipped relay
//! server's [`Handler`] and [`Events`] traits. `collie_crew::relay::server::serve` reads each relay
//! stream's request, calls this handler, and writes the answer and a subscription's events; this
//! file only knows what a request does to the panes.
//!
//! The bridge's own handler (`src/relay/member.rs`) runs the application's operations against tmux,
//! masks screens and audits writes; here a write appends its request id to the member's write log
//! (its audit log) and is reported to the checker. The state is shared with the member through an
//! `Arc<Mutex<…>>` because the trait asks for `Send + Sync + 'static`; the simulation is
//! single-threaded, so the lock is never contended.

use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use collie_actors::pairing::Tier;
use collie_crew::relay::server::{Events, Handler};
use collie_crew::relay::{
    Cursor, PaneInfo, PaneSnapshot, RelayError, RelayKind, RelayOk, RelayRequest, StreamEvent,
};

use crate::deputy::{door, held, DoorAnswer, Held};

/// Lines a pane keeps.
const PANE_LINES: usize = 8;

#[derive(Debug)]
struct Pane {
    name: String,
    lines: Vec<String>,
    seq: u64,
}

/// Locks a mutex of the model. Nothing panics while holding one (the simulation would stop), so a
/// poisoned lock still holds consistent state.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug)]
struct State {
    machine: String,
    panes: BTreeMap<String, Pane>,
    /// Request ids of the writes executed here, in order (the member's audit log, kept across
    /// restarts).
    write_log: Vec<String>,
    /// Writes executed since the member last took them (it reports each to the checker).
    executed: Vec<String>,
    /// Counts pane changes: the member polls every stream again while it moves, so that a
    /// subscription sends the change a write made.
    changes: u64,
    /// The lead's registry copy, if this member is the deputy (kept across restarts, as the
    /// bridge keeps it in its state folder).
    held: Option<Held>,
    /// [`crate::Bug::DeputyKeepsFirstCopy`]: a copy is taken only if none is held.
    keep_first: bool,
}

/// One machine's panes: the [`Handler`] its relay streams are served with.
#[derive(Debug, Clone)]
pub(crate) struct Panes {
    state: Arc<Mutex<State>>,
}

impl Panes {
    /// Panes `p0` and `p1` of `machine`, each showing a prompt.
    pub(super) fn new(machine: &str) -> Self {
        let panes = ["p0", "p1"]
            .into_iter()
            .map(|p| {
                let pane = Pane {
                    name: format!("{p}-name"),
                    lines: vec![format!("{machine} {p} $")],
                    seq: 0,
                };
                (p.to_owned(), pane)
            })
            .collect();
        let state = State {
            machine: machine.to_owned(),
            panes,
            write_log: Vec::new(),
            executed: Vec::new(),
            changes: 0,
            held: None,
            keep_first: false,
        };
        Self {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The write log (the member's audit log).
    pub(crate) fn write_log(&self) -> Vec<String> {
        lock(&self.state).write_log.clone()
    }

    /// The writes executed since the last call.
    pub(crate) fn take_executed(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).executed)
    }

    /// Plants [`crate::Bug::DeputyKeepsFirstCopy`].
    pub(crate) fn keep_first_copy(&self) {
        lock(&self.state).keep_first = true;
    }

    /// The standby door's decision for a lead's device (see [`crate::deputy::door`]).
    pub(crate) fn door(
        &self,
        hash: &[u8; 32],
        required: Tier,
        reach: (bool, u64),
        now: u64,
        ignore_standby: bool,
    ) -> DoorAnswer {
        let state = lock(&self.state);
        door(
            state.held.as_ref(),
            hash,
            required,
            reach.0,
            reach.1,
            now,
            ignore_standby,
        )
    }

    /// Runs a request the standby door admitted, as the relay server would (one call of the
    /// [`Handler`]; the pane model answers at once).
    pub(crate) fn serve_door(&self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut call = std::pin::pin!(Handler::handle(self, request));
        match call.as_mut().poll(&mut cx) {
            Poll::Ready(answer) => answer,
            Poll::Pending => Err(RelayError::Unreachable),
        }
    }

    /// How many pane changes there have been.
    pub(super) fn changes(&self) -> u64 {
        lock(&self.state).changes
    }
}

impl State {
    fn handle(&mut self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        match &request.kind {
            RelayKind::PaneList => Ok(RelayOk::PaneList(
                self.panes.iter().map(|(id, p)| self.info(id, p)).collect(),
            )),
            RelayKind::Snapshot { pane, .. } => match self.panes.get(pane) {
                Some(p) => Ok(RelayOk::Snapshot(PaneSnapshot {
                    machine: self.machine.clone(),
                    pane: pane.clone(),
                    token: "abcd".to_owned(),
                    name: p.name.clone(),
                    cols: 80,
                    rows: 24,
                    cursor: Cursor { x: 0, y: 0 },
                    lines: p.lines.clone(),
                    scrollback: Vec::new(),
                    seq: p.seq,
                })),
                None => Err(RelayError::NoSuchPane),
            },
            // Kept in the protocol, answered `Done`; the lead drops the stream instead.
            RelayKind::Unsubscribe { .. } => Ok(RelayOk::Done),
            RelayKind::Input { pane, text, keys } => {
                let line = format!("{}{}", text.as_deref().unwrap_or(""), keys.join(" "));
                self.write(pane, &request.request_id, |p| {
                    p.lines.push(line);
                    if p.lines.len() > PANE_LINES {
                        p.lines.remove(0);
                    }
                })
            }
            RelayKind::Rename { pane, name } => {
                self.write(pane, &request.request_id, |p| p.name = name.clone())
            }
            RelayKind::Close { pane } => self.write(pane, &request.request_id, |p| p.lines.clear()),
            // The lead's copy (SPEC §13): kept whole or refused, answered with the door.
            RelayKind::Deputy { copy } => match copy {
                None => {
                    self.held = None;
                    Ok(RelayOk::Done)
                }
                Some(copy) => {
                    if !(self.keep_first && self.held.is_some()) {
                        let Some(held) = held(copy) else {
                            return Err(RelayError::BadInput(
                                "a device of the copy does not read".into(),
                            ));
                        };
                        self.held = Some(held);
                    }
                    Ok(RelayOk::DeputyDoor {
                        port: 7421,
                        url: format!("https://{}.example", self.machine),
                    })
                }
            },
            _ => Err(RelayError::UnknownKind),
        }
    }

    /// Executes a write on a pane and logs it.
    fn write(
        &mut self,
        pane: &str,
        request_id: &str,
        change: impl FnOnce(&mut Pane),
    ) -> Result<RelayOk, RelayError> {
        let Some(p) = self.panes.get_mut(pane) else {
            return Err(RelayError::NoSuchPane);
        };
        change(p);
        p.seq += 1;
        self.changes += 1;
        self.write_log.push(request_id.to_owned());
        self.executed.push(request_id.to_owned());
        Ok(RelayOk::Done)
    }

    fn info(&self, id: &str, pane: &Pane) -> PaneInfo {
        PaneInfo {
            machine: self.machine.clone(),
            pane: id.to_owned(),
            token: "abcd".to_owned(),
            name: pane.name.clone(),
            backend: "tmux".to_owned(),
            alive: true,
            cols: 80,
            rows: 24,
            last_activity: None,
            asking_password: false,
            at_shell: false,
            activity: Default::default(),
        }
    }
}

impl Handler for Panes {
    type Events = Following;

    async fn handle(&self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        lock(&self.state).handle(request)
    }

    async fn subscribe(
        &self,
        _request: &RelayRequest,
        pane: &str,
    ) -> Result<Following, RelayError> {
        if !lock(&self.state).panes.contains_key(pane) {
            return Err(RelayError::NoSuchPane);
        }
        Ok(Following {
            state: Arc::clone(&self.state),
            pane: pane.to_owned(),
            seen: None,
        })
    }
}

/// A followed pane: its whole screen first, then its last row each time it changed. Changes made
/// between two polls are sent as one, as a pane backend coalesces them.
#[derive(Debug)]
pub(crate) struct Following {
    state: Arc<Mutex<State>>,
    pane: String,
    /// The pane's `seq` last sent.
    seen: Option<u64>,
}

impl Events for Following {
    async fn next(&mut self) -> Option<StreamEvent> {
        poll_fn(|_| {
            let state = lock(&self.state);
            let Some(pane) = state.panes.get(&self.pane) else {
                return Poll::Ready(None);
            };
            let full = match self.seen {
                None => true,
                Some(seq) if seq != pane.seq => false,
                // Nothing new: the member polls again after the next change.
                Some(_) => return Poll::Pending,
            };
            self.seen = Some(pane.seq);
            Poll::Ready(Some(screen(pane, full)))
        })
        .await
    }
}

/// A pane's screen as a stream event: every row when `full`, else the last one. `stream` is
/// filled in by the server.
fn screen(pane: &Pane, full: bool) -> StreamEvent {
    let mut rows = pane
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (u16::try_from(i).unwrap_or(u16::MAX), l.clone()));
    StreamEvent {
        stream: 0,
        seq: pane.seq,
        cursor: Cursor { x: 0, y: 0 },
        cols: 80,
        height: 24,
        full,
        rows: if full {
            rows.collect()
        } else {
            rows.next_back().into_iter().collect()
        },
    }
}
