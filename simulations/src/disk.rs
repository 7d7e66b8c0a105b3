//! What the lead keeps across a restart, as sled and the audit log keep it: the store's `crew`
//! table, changed only by the [`Change`] batches the real `LeadCore` asks for, and the audit lines
//! it asked to have written. A restarted lead reads its members and invites back from the table
//! with the actor's own parser ([`registry_from_entries`]), so a change the core forgot to make
//! durable is lost at a restart here exactly as it would be on a real machine.

use std::collections::BTreeMap;

use collie_actors::audit::AuditRecord;
use collie_actors::crew_link::core::MemberRecord;
use collie_actors::crew_link::registry_from_entries;
use collie_actors::store::Change;
use collie_crew::hello::{CrewSecret, Invite};
use collie_crew::pin::Pin;

/// The lead's durable state.
#[derive(Debug)]
pub(crate) struct Disk {
    /// The crew secret (in the real store, inside the `role` record).
    pub(crate) secret: CrewSecret,
    /// The `crew` table: key → the bytes the core serialized.
    crew: BTreeMap<String, Vec<u8>>,
    /// The members the table holds, read back with the actor's parser as each entry is written
    /// (so the checker compares without parsing the whole table after every commit).
    pub(crate) stored: BTreeMap<String, (String, Pin)>,
    /// Every audit line written, in order.
    pub(crate) audit: Vec<AuditRecord>,
    /// The request ids of the relayed writes whose lines the lead wrote (or kept to write), in
    /// order.
    pub(crate) relayed: Vec<String>,
    /// Whether an audit line can be written now (a fault takes the log away for a while).
    pub(crate) audit_up: bool,
}

impl Disk {
    pub(crate) fn new(secret: CrewSecret) -> Self {
        Self {
            secret,
            crew: BTreeMap::new(),
            stored: BTreeMap::new(),
            audit: Vec::new(),
            relayed: Vec::new(),
            audit_up: true,
        }
    }

    /// Applies one batch to the `crew` table, all of it (sled applies a batch atomically).
    pub(crate) fn apply(&mut self, changes: &[Change]) {
        for change in changes {
            match change {
                Change::Put(key, bytes) => {
                    self.crew.insert(key.clone(), bytes.clone());
                    let (members, _) = registry_from_entries([(key, bytes)])
                        .expect("the crew table holds only what LeadCore serialized");
                    match members.into_iter().next() {
                        Some(m) => self.stored.insert(key.clone(), (m.name, m.pin)),
                        None => self.stored.remove(key),
                    };
                }
                Change::Remove(key) => {
                    self.crew.remove(key);
                    self.stored.remove(key);
                }
            }
        }
    }

    /// The members and invites as a starting lead reads them.
    pub(crate) fn registry(&self) -> (Vec<MemberRecord>, Vec<Invite>) {
        registry_from_entries(&self.crew)
            .expect("the crew table holds only what LeadCore serialized with serde_json")
    }
}
