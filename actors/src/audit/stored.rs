//! What the audit log keeps in the store (table `audit`): the anchor (the end of the log the store
//! vouches for, see [`super::anchor`]), the recorded breaks, and the lines kept while the log
//! could not be written.
//!
//! **Breaks** are evidence: recorded once, marked acknowledged by a person (`collie audit
//! acknowledge SEQ`), never removed. **Kept lines** are lines that must not be lost although the
//! log refused them — a revocation, which always takes effect (SPEC §7), and the `audit.break`
//! line itself; they are appended, oldest first and `audit.break` lines before all others, as soon
//! as the log is writable, and removed from the store in the same batch as the next anchor.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::anchor::{short, Anchor};
use super::{AuditRecord, ChainTail};
use crate::store::{Change, Store, StoreError, Table};

/// The anchor's key.
pub const ANCHOR_KEY: &str = "anchor";
/// Where a bridge before the anchor kept the last line it had appended (table `meta`).
const LEGACY_TAIL_KEY: &str = "audit.tail";
const BREAK_PREFIX: &str = "break/";
const KEPT_PREFIX: &str = "kept/";

/// A recorded break (SPEC §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakRecord {
    /// The `seq` of its `audit.break` line; names the break.
    pub seq: u64,
    /// What the store vouched for.
    pub expected: Anchor,
    /// What the file held instead, in words.
    pub found: String,
    /// The last whole record the continued chain starts after.
    pub from: Option<ChainTail>,
    /// When it was found (RFC 3339).
    pub at: String,
    /// Set once a person acknowledged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<Acknowledgment>,
}

/// Who acknowledged a break, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acknowledgment {
    /// RFC 3339.
    pub at: String,
    /// `cli` (the only way today).
    pub by: String,
}

impl std::fmt::Display for BreakRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "break at seq {} (recorded {}): the store vouched for {}; instead {}",
            self.seq,
            self.at,
            self.expected.describe(),
            self.found
        )?;
        if let Some(from) = &self.from {
            write!(
                f,
                " (the chain continues after seq {}, hash {})",
                from.seq,
                short(&from.hash)
            )?;
        }
        if let Some(ack) = &self.acknowledged {
            write!(f, " — acknowledged {} by {}", ack.at, ack.by)?;
        }
        Ok(())
    }
}

/// A line kept for later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptLine {
    /// What to write.
    pub record: AuditRecord,
    /// When it happened (unix nanoseconds): the line's `ts`.
    pub ts_nanos: i64,
    /// The `seq` it must take (an `audit.break` line only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_to: Option<u64>,
}

impl KeptLine {
    /// The line's time.
    pub fn ts(&self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.ts_nanos))
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }
}

fn corrupt(key: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    }
}

fn encode<T: Serialize>(key: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| corrupt(key, e))
}

/// The anchor; a store written before the anchor existed vouches for its last appended line
/// (`audit.tail`), with nothing in flight.
pub fn load_anchor(store: &Store) -> Result<Anchor, StoreError> {
    if let Some(bytes) = store.get(Table::Audit, ANCHOR_KEY)? {
        return serde_json::from_slice(&bytes).map_err(|e| corrupt(ANCHOR_KEY, e));
    }
    match store.get(Table::Meta, LEGACY_TAIL_KEY)? {
        Some(bytes) => Ok(Anchor {
            last: Some(serde_json::from_slice(&bytes).map_err(|e| corrupt(LEGACY_TAIL_KEY, e))?),
            pending: None,
        }),
        None => Ok(Anchor::default()),
    }
}

/// The change that stores `anchor`.
pub fn anchor_change(anchor: &Anchor) -> Result<Change, StoreError> {
    Ok(Change::Put(
        ANCHOR_KEY.to_owned(),
        encode(ANCHOR_KEY, anchor)?,
    ))
}

fn break_key(seq: u64) -> String {
    format!("{BREAK_PREFIX}{seq:020}")
}

/// Every recorded break, oldest first.
pub fn load_breaks(store: &Store) -> Result<Vec<BreakRecord>, StoreError> {
    store
        .scan_prefix(Table::Audit, BREAK_PREFIX)?
        .into_iter()
        .map(|(key, bytes)| serde_json::from_slice(&bytes).map_err(|e| corrupt(&key, e)))
        .collect()
}

/// The change that stores `record` (new, or acknowledged).
pub fn break_change(record: &BreakRecord) -> Result<Change, StoreError> {
    let key = break_key(record.seq);
    let bytes = encode(&key, record)?;
    Ok(Change::Put(key, bytes))
}

/// A fresh key for a kept line at `ts`: keys sort by time, and the nonce keeps two writers (the
/// audit actor, and the pairing actor while the audit actor restarts) apart.
pub fn kept_key(ts: OffsetDateTime) -> String {
    let nanos = i64::try_from(ts.unix_timestamp_nanos()).unwrap_or(0).max(0);
    format!("{KEPT_PREFIX}{nanos:020}-{:08x}", rand::random::<u32>())
}

/// Every kept line with its key: `audit.break` lines first, then the others oldest first.
pub fn load_kept(store: &Store) -> Result<Vec<(String, KeptLine)>, StoreError> {
    let mut kept = store
        .scan_prefix(Table::Audit, KEPT_PREFIX)?
        .into_iter()
        .map(|(key, bytes)| {
            let line = serde_json::from_slice(&bytes).map_err(|e| corrupt(&key, e))?;
            Ok((key, line))
        })
        .collect::<Result<Vec<(String, KeptLine)>, StoreError>>()?;
    kept.sort_by(|(a, la), (b, lb)| {
        (la.skip_to.is_none(), a.as_str()).cmp(&(lb.skip_to.is_none(), b.as_str()))
    });
    Ok(kept)
}

/// The change that stores a kept line under `key`.
pub fn kept_change(key: &str, line: &KeptLine) -> Result<Change, StoreError> {
    Ok(Change::Put(key.to_owned(), encode(key, line)?))
}

/// Keeps `record` at `ts` in the store (durable when this returns), to be appended when the log
/// can be written. For a write that must happen even though the log refuses it.
pub fn keep(store: &Store, record: &AuditRecord, ts: OffsetDateTime) -> Result<String, StoreError> {
    let key = kept_key(ts);
    let line = KeptLine {
        record: record.clone(),
        ts_nanos: i64::try_from(ts.unix_timestamp_nanos()).unwrap_or(0),
        skip_to: None,
    };
    store.apply(Table::Audit, &[kept_change(&key, &line)?])?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::anchor::Pending;
    use crate::audit::AuditEventKind;

    fn tail(seq: u64) -> ChainTail {
        ChainTail {
            seq,
            hash: "d".repeat(64),
        }
    }

    #[test]
    fn the_anchor_round_trips_and_a_legacy_tail_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(load_anchor(&store).unwrap(), Anchor::default());
        store
            .put(
                Table::Meta,
                LEGACY_TAIL_KEY,
                &serde_json::to_vec(&tail(7)).unwrap(),
            )
            .unwrap();
        assert_eq!(
            load_anchor(&store).unwrap(),
            Anchor {
                last: Some(tail(7)),
                pending: None
            }
        );
        let anchor = Anchor {
            last: Some(tail(7)),
            pending: Some(Pending {
                line: tail(8),
                kept: Some("kept/x".into()),
                earlier: vec![tail(6)],
            }),
        };
        store
            .apply(Table::Audit, &[anchor_change(&anchor).unwrap()])
            .unwrap();
        assert_eq!(load_anchor(&store).unwrap(), anchor);
    }

    #[test]
    fn breaks_and_kept_lines_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let record = |seq| BreakRecord {
            seq,
            expected: Anchor::default(),
            found: "x".into(),
            from: None,
            at: "2026-12-01T00:00:00Z".into(),
            acknowledged: None,
        };
        store
            .apply(
                Table::Audit,
                &[
                    break_change(&record(12)).unwrap(),
                    break_change(&record(3)).unwrap(),
                ],
            )
            .unwrap();
        let seqs: Vec<u64> = load_breaks(&store).unwrap().iter().map(|b| b.seq).collect();
        assert_eq!(seqs, [3, 12]);

        let rec = AuditRecord::new(AuditEventKind::DeviceRevoked, "m");
        let t0 = OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(10);
        let first = keep(&store, &rec, t0).unwrap();
        let second = keep(&store, &rec, t0 + time::Duration::seconds(1)).unwrap();
        let brk = kept_key(t0 + time::Duration::seconds(2));
        store
            .apply(
                Table::Audit,
                &[kept_change(
                    &brk,
                    &KeptLine {
                        record: AuditRecord::new(AuditEventKind::AuditBreak, "m"),
                        ts_nanos: 0,
                        skip_to: Some(9),
                    },
                )
                .unwrap()],
            )
            .unwrap();
        let keys: Vec<String> = load_kept(&store)
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, [brk, first, second]);
        let (_, line) = &load_kept(&store).unwrap()[1];
        assert_eq!(line.record, rec);
        assert_eq!(line.ts(), t0);
    }
}
