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
//!
//! **An I/O error is not forever.** sled keeps the first I/O error of its log (a full disk, say) and
//! fails every later write with it for as long as the database is open — so a bridge whose disk
//! filled up once would refuse every audited write, pairing and revocation until restarted, long
//! after the space was freed. After a sled I/O error the store therefore reopens the database
//! before its next operation: what it reads back is what was made durable (every write that
//! returned `Ok`), and a write that failed may be there or not, as after a crash. While the disk is
//! still full the reopen, or the next write, fails again and the caller is refused as before
//! (decision 0062).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

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
    /// Test-only (feature `fault-injection`): a write a test told the store to fail.
    #[cfg(feature = "fault-injection")]
    #[error("store unavailable: injected write failure")]
    Injected,
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
    /// issued invites (`invite/<hash of the join secret>`), and on a lead the audit chain heads
    /// each member sent (`witness/<name>`, see `crate::audit::witness`).
    Crew,
    /// The audit log's anchor (`anchor`: the end of the log the store vouches for), its recorded
    /// breaks (`break/<seq>`) and the lines kept while the log could not be written
    /// (`kept/<nanos>-<nonce>`); see `crate::audit::stored`.
    Audit,
    /// Web Push subscriptions, one per device (`sub/<label>`); see `crate::push`.
    Push,
    /// Starter rows added from a phone (SPEC §12), keyed `<owner>/<id>` where `<owner>` is
    /// the adding device's
    /// [`crate::pairing::TokenHash::short_hex`], so a revocation removes them by prefix.
    StarterRows,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Devices => "devices",
            Table::Meta => "meta",
            Table::Crew => "crew",
            Table::Audit => "audit",
            Table::Push => "push",
            Table::StarterRows => "starter_rows",
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

/// How long [`Store::open`] waits for a lock sled itself still holds.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How often it tries again meanwhile.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(20);

/// Whether sled failed to open because its file lock is held. sled reports it only as an I/O
/// error of kind `Other` with this text (sled 0.34), so the text is what is matched.
fn is_lock_held(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}

/// A handle to the open store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
    /// Test-only (feature `fault-injection`): the table whose durable writes fail, shared by
    /// every clone (decision 0037).
    #[cfg(feature = "fault-injection")]
    failing: std::sync::Arc<std::sync::Mutex<Option<Table>>>,
}

/// What every clone of a [`Store`] shares: the open database, and whether it must be reopened.
struct Shared {
    /// Where the database lives.
    dir: PathBuf,
    /// The open database; `None` only while a reopen failed (the next operation tries again).
    db: RwLock<Option<sled::Db>>,
    /// sled reported an I/O error: reopen before the next operation (see the module docs).
    broken: AtomicBool,
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    ///
    /// sled locks its file for as long as its background flusher runs, and that thread ends a
    /// moment *after* the last handle is dropped — so opening the store right after closing it
    /// (a bridge restarted at once, `collie audit verify` just after a stop, a test reopening)
    /// can find the lock still held. A held lock is tried again for up to 2 s (`LOCK_WAIT`); after
    /// that it is another process's (a bridge running), and the error says so.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = open_db(dir)?;
        Ok(Store {
            shared: Arc::new(Shared {
                dir: dir.to_owned(),
                db: RwLock::new(Some(db)),
                broken: AtomicBool::new(false),
            }),
            #[cfg(feature = "fault-injection")]
            failing: std::sync::Arc::default(),
        })
    }

    /// Runs `f` on the open database, reopening it first after an I/O error; an I/O error `f`
    /// meets marks the database for the next reopen.
    fn with_db<T>(&self, f: impl FnOnce(&sled::Db) -> sled::Result<T>) -> Result<T, StoreError> {
        if self.shared.broken.load(Ordering::Acquire) {
            self.reopen()?;
        }
        let guard = self.shared.db.read();
        let db = guard.as_ref().ok_or_else(|| {
            StoreError::Sled(sled::Error::Io(std::io::Error::other(
                "the store is being reopened after an I/O error",
            )))
        })?;
        let result = f(db);
        if let Err(sled::Error::Io(_)) = &result {
            self.shared.broken.store(true, Ordering::Release);
        }
        Ok(result?)
    }

    /// Closes the database and opens it again, so that sled forgets an I/O error it met (see the
    /// module docs). Every other operation waits meanwhile.
    fn reopen(&self) -> Result<(), StoreError> {
        let mut db = self.shared.db.write();
        if !self.shared.broken.load(Ordering::Acquire) {
            return Ok(());
        }
        // The old database must be gone (its file lock released) before the new one opens.
        drop(db.take());
        let fresh = open_db(&self.shared.dir)?;
        *db = Some(fresh);
        self.shared.broken.store(false, Ordering::Release);
        tracing::warn!(dir = %self.shared.dir.display(), "reopened the store after an I/O error");
        Ok(())
    }

    fn tree(db: &sled::Db, table: Table) -> sled::Result<sled::Tree> {
        db.open_tree(table.name())
    }

    /// Test-only (feature `fault-injection`): from now on every durable write to `table` (a
    /// `put`, `remove` or `apply`) fails with [`StoreError::Injected`] and changes nothing, until
    /// called again with `None`. Reads and lazy writes are not affected. It stands for a disk that
    /// refuses the write (full, or failing), which a test cannot produce for sled's already open
    /// files (decision 0037).
    #[cfg(feature = "fault-injection")]
    pub fn fail_writes_to(&self, table: Option<Table>) {
        if let Ok(mut failing) = self.failing.lock() {
            *failing = table;
        }
    }

    /// Whether a durable write to `table` must fail now (always `Ok` without the feature).
    fn writable(&self, table: Table) -> Result<(), StoreError> {
        #[cfg(feature = "fault-injection")]
        if self.failing.lock().is_ok_and(|f| *f == Some(table)) {
            return Err(StoreError::Injected);
        }
        let _ = table;
        Ok(())
    }

    /// All entries of a table, in key order.
    pub fn scan(&self, table: Table) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.scan_prefix(table, "")
    }

    /// One value.
    pub fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.with_db(|db| Ok(Self::tree(db, table)?.get(key)?.map(|v| v.to_vec())))
    }

    /// Writes one value and returns once it is durable.
    pub fn put(&self, table: Table, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.writable(table)?;
        self.with_db(|db| Self::tree(db, table)?.insert(key, value))?;
        self.flush()
    }

    /// Removes one value and returns once the removal is durable.
    pub fn remove(&self, table: Table, key: &str) -> Result<(), StoreError> {
        self.writable(table)?;
        self.with_db(|db| Self::tree(db, table)?.remove(key))?;
        self.flush()
    }

    /// The entries of a table whose keys start with `prefix`, in key order.
    pub fn scan_prefix(
        &self,
        table: Table,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let items = self.with_db(|db| {
            Self::tree(db, table)?
                .scan_prefix(prefix)
                .collect::<sled::Result<Vec<_>>>()
        })?;
        let mut out = Vec::new();
        for (k, v) in items {
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
        self.writable(table)?;
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
        self.with_db(|db| Self::tree(db, table)?.apply_batch(batch))
    }

    /// Makes every change so far durable.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.with_db(|db| crate::disk::wait(|| db.flush()))?;
        Ok(())
    }

    /// Writes a value without waiting for durability (for bookkeeping that may be lost in a crash,
    /// such as a device's last-seen time).
    pub fn put_lazy(&self, table: Table, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.with_db(|db| Self::tree(db, table)?.insert(key, value))?;
        Ok(())
    }
}

/// Opens the database in `dir`, waiting out a lock sled itself still holds (see [`Store::open`]).
fn open_db(dir: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .open()
        {
            Ok(db) => return Ok(db),
            Err(e) if is_lock_held(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(LOCK_RETRY);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_released_soon_is_waited_for_and_a_held_one_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Store::open(dir.path()).expect("open");
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(first);
        });
        let second = Store::open(dir.path()).expect("opened once the first let go");
        closer.join().expect("closer");
        let held = Store::open(dir.path());
        assert!(held.is_err(), "a lock held past the wait is an error");
        drop(second);
    }

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
