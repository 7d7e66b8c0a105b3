//! Where the current [`PolicySnapshot`] lives for the request path, and how a long request learns
//! that it changed (SPEC §3.2: authorization holds for the whole life of a request).
//!
//! The pairing actor is the only writer: it [`publish`](Policy::publish)es each snapshot after the
//! store flush (see [`PolicySnapshot`]'s publication contract). Requests [`load`](Policy::load)
//! it without a message; a stream or a held request also [`watch`](Policy::watch)es it, and
//! checks its device again each time a new snapshot is published — so a revocation, an expiry
//! change or a lower tier ends it at once.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use super::policy::PolicySnapshot;

/// The published snapshot and its change signal; cheap to clone.
#[derive(Clone)]
pub struct Policy {
    current: Arc<ArcSwap<PolicySnapshot>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Policy {
    /// A policy holding `snapshot`.
    pub fn new(snapshot: PolicySnapshot) -> Self {
        let (changed, _) = watch::channel(snapshot.version());
        Self {
            current: Arc::new(ArcSwap::from_pointee(snapshot)),
            changed: Arc::new(changed),
        }
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<PolicySnapshot> {
        self.current.load_full()
    }

    /// Replaces the snapshot and wakes every watcher.
    pub fn publish(&self, snapshot: PolicySnapshot) {
        let version = snapshot.version();
        self.current.store(Arc::new(snapshot));
        self.changed.send_replace(version);
    }

    /// A receiver that changes whenever a snapshot is published.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watchers_wake_on_publish() {
        let policy = Policy::new(PolicySnapshot::empty(1));
        let mut rx = policy.watch();
        assert!(!rx.has_changed().unwrap());
        policy.publish(PolicySnapshot::empty(2));
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), 2);
        assert_eq!(policy.load().version(), 2);
    }
}
