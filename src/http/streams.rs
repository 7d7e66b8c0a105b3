//! Long requests (SSE streams, local or relayed): how many may be open, and how each keeps
//! checking that its caller may still watch (SPEC §3.2).
//!
//! - [`StreamSlots`] caps open streams per device ([`PER_DEVICE`]) and in all ([`IN_ALL`]); past
//!   either a new stream answers `503 resource limit`. A [`Slot`] gives its place back when the
//!   stream ends, however it ends.
//! - [`StillAllowed`] resolves when the caller's device is revoked, expires or drops below the
//!   route's tier: it checks again each time the pairing actor publishes a policy snapshot, and at
//!   the device's expiry — so a stream ends at once, well within the 1 s the spec allows, and
//!   costs nothing while nothing changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use collie_actors::pairing::Tier;
use tokio::sync::watch;

use super::auth::Caller;
use crate::app::App;
use crate::app::AppError;

/// Most open streams of one device.
pub const PER_DEVICE: usize = 32;
/// Most open streams in all.
pub const IN_ALL: usize = 256;

/// Open streams, by device.
#[derive(Debug, Default)]
pub struct StreamSlots {
    open: Mutex<HashMap<String, usize>>,
}

fn lock(m: &Mutex<HashMap<String, usize>>) -> MutexGuard<'_, HashMap<String, usize>> {
    // A panic while holding this lock leaves only counts behind; keep serving.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl StreamSlots {
    /// A place for one more stream of `who`, or `None` past a cap.
    pub fn acquire(self: &Arc<Self>, who: &str) -> Option<Slot> {
        let mut open = lock(&self.open);
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
        lock(&self.open).values().sum()
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
        let mut open = lock(&self.slots.open);
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
    ctx: App,
    caller: Caller,
    required: Tier,
    changed: watch::Receiver<u64>,
}

impl StillAllowed {
    /// Starts watching (the caller was authorized when the request started).
    pub fn new(ctx: &App, caller: Caller, required: Tier) -> Self {
        Self {
            changed: ctx.policy.watch(),
            ctx: ctx.clone(),
            caller,
            required,
        }
    }

    /// Resolves with the reason once the caller may no longer go on: `device not paired`
    /// (revoked), `device expired`, `insufficient tier`, or `pairing unavailable`. Cancel-safe.
    pub async fn lost(&mut self) -> AppError {
        loop {
            if let Err(e) = self.caller.still_allowed(&self.ctx, self.required) {
                return e;
            }
            let expiry = self.caller.expires_at(&self.ctx).map(|at| {
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
            }
        }
    }
}

/// The place for one more stream of `caller`, or `503 resource limit` — audited as
/// `resource.denied` with the device and the request id, at most once a minute per source.
pub fn slot_for(ctx: &App, caller: &Caller, source: String) -> Result<Slot, AppError> {
    let who = caller.audit_name().unwrap_or_else(|| "open".to_owned());
    ctx.streams.acquire(&who).ok_or_else(|| {
        let rec = collie_actors::audit::AuditRecord::new(
            collie_actors::audit::AuditEventKind::ResourceDenied,
            ctx.machine.get(),
        )
        .with_device(who)
        .with_request_id(crate::app::request_id());
        super::auth::deny(ctx, source, "stream limit", rec);
        AppError::ResourceLimit
    })
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
