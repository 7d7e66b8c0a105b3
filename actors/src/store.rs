//! The bridge's durable store, the only module that knows sled (SPEC §2: `<state>/db/`).
//!
//! Everything the bridge must remember across restarts goes through this narrow API: device records
//! (by label), and a few named values (the audit chain's tail, the pane-token salt). Values are
//! opaque bytes (callers serialize with serde_json), so another embedded store can replace sled by
//! reimplementing this file alone — see `docs/decisions/0002-sled-store.md`.
//!
//! Every write returns only after `flush` made it durable: the callers acknowledge a change (and
//! publish a new policy snapshot) only after this returns `Ok`. Each write is a single-key insert or
//! remove, which sled applies atomically, so a crash never leaves a half-written record visible.

use std::path::Path;

/// Store failures. The HTTP layer maps them to `pairing unavailable`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// sled reported an error (I/O, corruption).
    #[error("store unavailable: {0}")]
    Sled(#[from] sled::Error),
    /// A stored value could not be decoded.
    #[error("stored record {key} is unreadable: {reason}")]
    Corrupt {
        /// The key whose value is bad.
        key: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// Named trees of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Table {
    /// Paired devices, keyed by label.
    Devices,
    /// Small named values (audit tail, salts, versions).
    Meta,
    /// The crew: this bridge's role and crew secret (`role`), pinned members (`member/<name>`) and
    /// issued invites (`invite/<hash of the join secret>`).
    Crew,
    /// The audit log's anchor (`anchor`: the end of the log the store vouches for), its recorded
    /// breaks (`break/<seq>`) and the lines kept while the log could not be written
    /// (`kept/<nanos>-<nonce>`); see `crate::audit::stored`.
    Audit,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Devices => "devices",
            Table::Meta => "meta",
            Table::Crew => "crew",
            Table::Audit => "audit",
        }
    }
}

/// One change of an atomic [`Store::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Insert or replace a value.
    Put(String, Vec<u8>),
    /// Remove a value (absent is fine).
    Remove(String),
}

/// A handle to the open store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .open()?;
        Ok(Store { db })
    }

    fn tree(&self, table: Table) -> Result<sled::Tree, StoreError> {
        Ok(self.db.open_tree(table.name())?)
    }

    /// All entries of a table, in key order.
    pub fn scan(&self, table: Table) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.scan_prefix(table, "")
    }

    /// One value.
    pub fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.tree(table)?.get(key)?.map(|v| v.to_vec()))
    }

    /// Writes one value and returns once it is durable.
    pub fn put(&self, table: Table, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.tree(table)?.insert(key, value)?;
        self.db.flush()?;
        Ok(())
    }

    /// Removes one value and returns once the removal is durable.
    pub fn remove(&self, table: Table, key: &str) -> Result<(), StoreError> {
        self.tree(table)?.remove(key)?;
        self.db.flush()?;
        Ok(())
    }

    /// The entries of a table whose keys start with `prefix`, in key order.
    pub fn scan_prefix(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(table)?.scan_prefix(prefix) {
            let (k, v) = item?;
            let key = String::from_utf8(k.to_vec()).map_err(|_| StoreError::Corrupt {
                key: hex::encode(&k),
                reason: "key is not utf-8".into(),
            })?;
            out.push((key, v.to_vec()));
        }
        Ok(out)
    }

    /// Applies several puts and removes to one table as a single atomic batch (all or none, also
    /// across a crash) and returns once it is durable.
    pub fn apply(&self, table: Table, changes: &[Change]) -> Result<(), StoreError> {
        self.apply_lazy(table, changes)?;
        self.flush()
    }

    /// [`Store::apply`] without waiting for durability: the batch is applied at once and reaches
    /// the disk with the next flush (sled flushes on its own within half a second, and on
    /// [`Store::flush`]). For bookkeeping that a crash may lose without harm.
    pub fn apply_lazy(&self, table: Table, changes: &[Change]) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for change in changes {
            match change {
                Change::Put(key, value) => batch.insert(key.as_bytes(), value.as_slice()),
                Change::Remove(key) => batch.remove(key.as_bytes()),
            }
        }
        self.tree(table)?.apply_batch(batch)?;
        Ok(())
    }

    /// Makes every change so far durable.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }

    /// Writes a value without waiting for durability (for bookkeeping that may be lost in a crash,
    /// such as a device's last-seen time).
    pub fn put_lazy(&self, table: Table, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.tree(table)?.insert(key, value)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let s = Store::open(dir.path()).expect("open");
            s.put(Table::Devices, "phone", b"{\"a\":1}").expect("put");
            s.put(Table::Meta, "salt", b"xyz").expect("put");
            s.put(Table::Devices, "gone", b"1").expect("put");
            s.remove(Table::Devices, "gone").expect("remove");
        }
        let s = Store::open(dir.path()).expect("reopen");
        assert_eq!(
            s.scan(Table::Devices).expect("scan"),
            vec![("phone".to_string(), b"{\"a\":1}".to_vec())]
        );
        assert_eq!(
            s.get(Table::Meta, "salt").expect("get"),
            Some(b"xyz".to_vec())
        );
        assert_eq!(s.get(Table::Meta, "nope").expect("get"), None);
    }

    #[test]
    fn batches_apply_whole_and_prefix_scans_stay_inside_the_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = Store::open(dir.path()).expect("open");
        s.put(Table::Audit, "kept/2", b"old").expect("put");
        s.apply(
            Table::Audit,
            &[
                Change::Put("kept/1".into(), b"a".to_vec()),
                Change::Put("break/7".into(), b"b".to_vec()),
                Change::Remove("kept/2".into()),
            ],
        )
        .expect("apply");
        drop(s);
        let s = Store::open(dir.path()).expect("reopen");
        assert_eq!(
            s.scan_prefix(Table::Audit, "kept/").expect("scan"),
            vec![("kept/1".to_string(), b"a".to_vec())]
        );
        assert_eq!(
            s.get(Table::Audit, "break/7").expect("get"),
            Some(b"b".to_vec())
        );
    }
}
