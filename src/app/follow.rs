//! Following a pane's screen (SPEC §3.2, §5): the changes a phone's stream is made of, for a pane
//! of this machine or of a member, and the rules every stream lives under.
//!
//! - [`Follow`] follows a pane of this machine (the member serves the lead's subscriptions with it
//!   too). The first change carries every row; later ones carry only rows whose masked text or
//!   colours changed (the whole screen is masked before rows are compared), or every row again
//!   after a resize ([`super::colours::LocalColours`]). A
//!   change is produced at once (leading edge); further changes within [`COALESCE`] are folded into
//!   one produced when the window ends (trailing edge). A consumer that is slow simply asks later and
//!   gets one change covering everything since, so nothing queues up.
//! - [`StreamSlots`] caps open streams per device ([`PER_DEVICE`]) and in all ([`IN_ALL`]); past
//!   either a new stream answers `503 resource limit`. A [`Slot`] gives its place back when the
//!   stream ends, however it ends.
//! - [`StillAllowed`] resolves when the caller's device is revoked, expires or drops below the
//!   route's tier: it checks again each time the pairing actor publishes a policy snapshot, and at
//!   the device's expiry — so a stream ends at once, well within the 1 s the spec allows, and costs
//!   nothing while nothing changes (decision 0018).
//! - [`PaneStream`] is a phone's stream: its source (this machine's [`Follow`], or a member's
//!   stream masked again by this machine), its place under the caps and its [`StillAllowed`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::Tier;
use collie_actors::panes::PanesMsg;
use collie_crew::relay::ColourEvent;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

use super::colours::LocalColours;
use super::machine::{Machine, MemberStream};
use super::{App, AppError, Caller};

/// Changes closer together than this are coalesced.
pub const COALESCE: Duration = Duration::from_millis(30);

/// One followed pane.
pub struct Follow {
    app: App,
    pane: String,
    rx: watch::Receiver<u64>,
    colours: LocalColours,
    started: bool,
    last_sent: Option<Instant>,
    /// The `seq` of the last change produced: a snapshot at the same `seq` shows nothing new.
    last_seq: Option<u64>,
    ended: Option<AppError>,
}

impl Follow {
    /// Starts following `pane` of this machine.
    pub async fn start(app: &App, pane: String) -> Result<Follow, AppError> {
        let wanted = pane.clone();
        let rx = app
            .panes
            .actor
            .call(|r| PanesMsg::Subscribe {
                pane: wanted,
                reply: r,
            })
            .await??;
        Ok(Follow {
            app: app.clone(),
            pane,
            rx,
            colours: LocalColours::default(),
            started: false,
            last_sent: None,
            last_seq: None,
            ended: None,
        })
    }

    /// The next change with its colours (`stream` is 0); `None` once following ended — see
    /// [`Follow::ended`] for why. Waits for a change, except for the first call.
    ///
    /// A change that lands between marking the feed seen and taking the snapshot is in that
    /// snapshot, yet leaves the feed marked changed; the snapshot taken for it then has the `seq`
    /// already sent (as has one taken when a feed is woken without a change, a hosted pane's end).
    /// Such a snapshot is skipped: every change produced has a higher `seq` than the one before.
    pub async fn next(&mut self) -> Option<ColourEvent> {
        loop {
            if self.ended.is_some() {
                return None;
            }
            if self.started {
                // The sender goes away when the pane does, and also when the panes actor stops (a
                // restart, the bridge shutting down): the snapshot below tells the two apart.
                let _ = self.rx.changed().await;
                if let Some(last) = self.last_sent {
                    let window_end = last + COALESCE;
                    if Instant::now() < window_end {
                        tokio::time::sleep_until(window_end).await;
                    }
                }
            }
            self.rx.borrow_and_update();
            let pane = self.pane.clone();
            let snapshot = self
                .app
                .panes
                .actor
                .call(|r| PanesMsg::Snapshot {
                    pane,
                    scrollback: 0,
                    reply: r,
                })
                .await;
            match snapshot
                .map_err(AppError::from)
                .and_then(|s| s.map_err(AppError::from))
            {
                Ok(snap) => {
                    if self.rx.has_changed().is_err() {
                        // The pane is there but its change feed is gone: the actor restarted.
                        self.ended = Some(AppError::Restarting);
                    }
                    if self.last_seq == Some(snap.snapshot.seq) {
                        continue; // nothing new (and, if the feed is gone, the end)
                    }
                    self.last_seq = Some(snap.snapshot.seq);
                    self.last_sent = Some(Instant::now());
                    self.started = true;
                    return Some(self.colours.change(&snap));
                }
                Err(e) => {
                    self.ended = Some(e);
                    return None;
                }
            }
        }
    }

    /// Why following ended: `no such pane` when the pane closed, another error (`restarting, try
    /// again`) when the bridge could not serve it any longer. `None` while it runs.
    pub fn ended(&self) -> Option<&AppError> {
        self.ended.as_ref()
    }

    /// Why a followed pane's relayed stream ended, as the relay says it: `None` when the pane
    /// closed (or is gone), else `restarting` so the lead's phone retries.
    pub fn relay_ended(&self) -> Option<collie_crew::relay::RelayError> {
        match self.ended() {
            None | Some(AppError::NoSuchPane) => None,
            Some(_) => Some(collie_crew::relay::RelayError::Restarting),
        }
    }
}

/// Most open streams of one device.
pub const PER_DEVICE: usize = 32;
/// Most open streams in all.
pub const IN_ALL: usize = 256;

/// Open streams, by device.
#[derive(Debug, Default)]
pub struct StreamSlots {
    /// A panic while holding it leaves only counts behind, so it is not poisoned: keep serving.
    open: Mutex<HashMap<String, usize>>,
}

impl StreamSlots {
    /// A place for one more stream of `who`, or `None` past a cap.
    pub fn acquire(self: &Arc<Self>, who: &str) -> Option<Slot> {
        let mut open = self.open.lock();
        let total: usize = open.values().sum();
        let mine = open.get(who).copied().unwrap_or(0);
        if total >= IN_ALL || mine >= PER_DEVICE {
            return None;
        }
        open.insert(who.to_owned(), mine + 1);
        Some(Slot {
            slots: Arc::clone(self),
            who: who.to_owned(),
        })
    }

    /// Open streams in all.
    pub fn open(&self) -> usize {
        self.open.lock().values().sum()
    }
}

/// One open stream's place; given back on drop.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<StreamSlots>,
    who: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock();
        if let Some(n) = open.get_mut(&self.who) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}

/// Watches whether a caller may still do what needs `required`.
pub struct StillAllowed {
    app: App,
    caller: Caller,
    required: Tier,
    changed: watch::Receiver<u64>,
}

impl StillAllowed {
    /// Starts watching (the caller was authorized when the request started).
    pub fn new(app: &App, caller: Caller, required: Tier) -> Self {
        Self {
            changed: app.door.policy.watch(),
            app: app.clone(),
            caller,
            required,
        }
    }

    /// Resolves with the reason once the caller may no longer go on: `device not paired`
    /// (revoked), `device expired`, `insufficient tier`, or `pairing unavailable`. Cancel-safe.
    pub async fn lost(&mut self) -> AppError {
        loop {
            if let Err(e) = self.caller.still_allowed(&self.app, self.required) {
                return e;
            }
            let expiry = self.caller.expires_at(&self.app).map(|at| {
                let left = at - time::OffsetDateTime::now_utc();
                let left = std::time::Duration::try_from(left).unwrap_or_default();
                tokio::time::Instant::now() + left
            });
            tokio::select! {
                changed = self.changed.changed() => {
                    if changed.is_err() {
                        // The policy is gone with the bridge: nothing can be authorized any more.
                        return AppError::Restarting;
                    }
                }
                () = async {
                    match expiry {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {}
                // A lead's device at a deputy's standby door loses its right when the lead is
                // back, which no snapshot announces: it is looked at again each second.
                () = tokio::time::sleep(DEPUTY_RECHECK),
                    if matches!(self.caller.who(), super::Who::Deputy { .. }) => {}
            }
        }
    }
}

/// How often a stream of a lead's device served by a deputy checks that the deputy still stands in.
const DEPUTY_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a stream's changes come from.
enum Source {
    Local(Box<Follow>),
    Member(Box<MemberStream>),
    Done,
}

/// What a stream yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    /// A change of the screen, with its colours.
    Change(ColourEvent),
    /// The stream is over: `None` when the pane closed, otherwise why (the caller lost its right
    /// to watch, the member went away, the bridge is restarting).
    Closed(Option<String>),
}

/// A phone's stream of a pane, on this machine or a member (see the module docs).
pub struct PaneStream {
    source: Source,
    allowed: StillAllowed,
    /// The bridge stopping (a stop, a restart): the stream ends at once with `restarting, try
    /// again`, so the server's graceful shutdown does not wait out its grace for streams that
    /// would never end by themselves, and the phone knows to reconnect.
    stopping: tokio_util::sync::CancellationToken,
    _slot: Slot,
}

impl PaneStream {
    /// The next item; `None` after [`StreamItem::Closed`].
    pub async fn next(&mut self) -> Option<StreamItem> {
        if matches!(self.source, Source::Done) {
            return None;
        }
        let item = tokio::select! {
            biased;
            () = self.stopping.cancelled() => StreamItem::Closed(Some(AppError::Restarting.to_string())),
            lost = self.allowed.lost() => StreamItem::Closed(Some(lost.to_string())),
            item = Self::next_change(&mut self.source) => item,
        };
        if matches!(item, StreamItem::Closed(_)) {
            self.source = Source::Done;
        }
        Some(item)
    }

    async fn next_change(source: &mut Source) -> StreamItem {
        match source {
            Source::Local(follow) => match follow.next().await {
                Some(event) => StreamItem::Change(event),
                // A closed pane ends the stream plainly; anything else says why, so the phone
                // retries instead of showing the pane as closed.
                None => StreamItem::Closed(
                    follow
                        .ended()
                        .filter(|e| !matches!(e, AppError::NoSuchPane))
                        .map(ToString::to_string),
                ),
            },
            Source::Member(member) => match member.next().await {
                Ok(Some(event)) => StreamItem::Change(event),
                Ok(None) => StreamItem::Closed(None),
                Err(e) => StreamItem::Closed(Some(e.to_string())),
            },
            Source::Done => StreamItem::Closed(None),
        }
    }
}

/// The tier a pane stream needs (the route registry's entry for it).
const STREAM_TIER: Tier = Tier::Read;

impl App {
    /// Opens a phone's stream of `pane` on `machine` for `caller`, who asks from `source` (for the
    /// `resource.denied` line when a stream cap is reached, at most once a minute per source).
    pub async fn follow(
        &self,
        caller: Caller,
        source: String,
        machine: &str,
        pane: String,
    ) -> Result<PaneStream, AppError> {
        let slot = self.stream_slot(&caller, source)?;
        let source = match self.machine_for(&caller, machine)? {
            Machine::Local => Source::Local(Box::new(Follow::start(self, pane).await?)),
            Machine::Member(member) => {
                Source::Member(Box::new(member.subscribe(self, caller.on(), pane).await?))
            }
        };
        Ok(PaneStream {
            source,
            allowed: StillAllowed::new(self, caller, STREAM_TIER),
            stopping: self.core.shutdown.clone(),
            _slot: slot,
        })
    }

    /// The place for one more stream of `caller`, or `503 resource limit` — audited as
    /// `resource.denied` with the device and the request id.
    pub(super) fn stream_slot(&self, caller: &Caller, source: String) -> Result<Slot, AppError> {
        let who = caller.audit_name().unwrap_or_else(|| "open".to_owned());
        self.panes.streams.acquire(&who).ok_or_else(|| {
            let rec = AuditRecord::new(AuditEventKind::ResourceDenied, self.core.machine.get())
                .with_device(who)
                .with_request_id(caller.request_id().to_owned());
            self.deny(source, "stream limit", rec);
            AppError::ResourceLimit
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_device_and_in_all_and_places_come_back() {
        let slots = Arc::new(StreamSlots::default());
        let mine: Vec<Slot> = (0..PER_DEVICE)
            .map(|_| slots.acquire("phone").expect("under the cap"))
            .collect();
        assert!(slots.acquire("phone").is_none(), "per device");
        let other = slots.acquire("tablet").expect("another device has its own");
        drop(mine);
        assert_eq!(slots.open(), 1);
        let many: Vec<Slot> = (0..IN_ALL - 1)
            .map(|i| {
                slots
                    .acquire(&format!("d{}", i % 100))
                    .expect("under the cap")
            })
            .collect();
        assert_eq!(slots.open(), IN_ALL);
        assert!(slots.acquire("fresh").is_none(), "in all");
        drop(other);
        assert!(slots.acquire("fresh").is_some());
        drop(many);
    }
}
