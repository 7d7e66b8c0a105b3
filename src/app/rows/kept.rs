//! Where rows are kept: the store's `starter_rows` tree, keyed `<owner>/<id>`, read defensively
//! (a record too large, unreadable or under the wrong key is skipped), and the purge of rows whose
//! device is gone.

use std::collections::BTreeSet;

use collie_actors::store::{Store, Table};

use super::super::AppError;
use super::{RowPolicy, RowShown, StoredRow};

/// A stored row larger than this is not read (a row is a name, a line of at most 4,096
/// characters and a few words).
const MAX_ROW_BYTES: usize = 32 * 1024;

/// The rows' store and the lock that keeps a count and the write after it together.
pub struct Rows {
    pub(super) store: Store,
    pub(super) policy: RowPolicy,
    pub(super) lock: tokio::sync::Mutex<()>,
}

impl Rows {
    /// Rows kept in `store`, under `policy`.
    pub fn new(store: Store, policy: RowPolicy) -> Rows {
        Rows {
            store,
            policy,
            lock: tokio::sync::Mutex::new(()),
        }
    }
}

/// Reads every row the store holds (a record too large or unreadable is skipped and logged).
pub(super) fn load(store: &Store) -> Result<Vec<StoredRow>, AppError> {
    let entries = store
        .scan(Table::StarterRows)
        .map_err(|e| AppError::backend("starter rows", e))?;
    Ok(entries
        .into_iter()
        .filter_map(|(key, value)| {
            let row = (value.len() <= MAX_ROW_BYTES)
                .then(|| serde_json::from_slice::<StoredRow>(&value).ok())
                .flatten()
                .filter(|r| r.key() == key);
            if row.is_none() {
                tracing::warn!(%key, "an unreadable starter row is skipped");
            }
            row
        })
        .collect())
}

/// Removes, at the bridge's start, every row whose device is no longer paired (its revocation's
/// removal failed, or it was taken over after expiry). `paired` holds `label/short hash` of each
/// paired device. Returns how many it removed.
pub fn purge_orphans(store: &Store, paired: &BTreeSet<String>) -> usize {
    let Ok(rows) = load(store) else { return 0 };
    let gone: Vec<_> = rows
        .iter()
        .filter(|r| !paired.contains(&format!("{}/{}", r.device, r.owner)))
        .map(|r| collie_actors::store::Change::Remove(r.key()))
        .collect();
    if gone.is_empty() {
        return 0;
    }
    match store.apply(Table::StarterRows, &gone) {
        Ok(()) => gone.len(),
        Err(e) => {
            tracing::warn!(error = %e, "starter rows of unpaired devices not removed");
            0
        }
    }
}

/// `label/short hash` of every paired device in the store (for [`purge_orphans`]).
pub fn paired_in_store(store: &Store) -> Option<BTreeSet<String>> {
    let devices = store.scan(Table::Devices).ok()?;
    devices
        .into_iter()
        .map(|(_, v)| {
            serde_json::from_slice::<collie_actors::pairing::Device>(&v)
                .ok()
                .map(|d| format!("{}/{}", d.label.as_str(), d.token_hash.short_hex()))
        })
        .collect()
}

/// The rows of paired devices in `store` (a stopped bridge's, for `collie show`); `None` when the
/// store cannot be read.
pub fn shown_from_store(store: &Store) -> Option<Vec<RowShown>> {
    let paired = paired_in_store(store)?;
    Some(
        load(store)
            .ok()?
            .into_iter()
            .filter(|r| paired.contains(&format!("{}/{}", r.device, r.owner)))
            .map(RowShown::from)
            .collect(),
    )
}
