//! Fuzz tests of `applied.json`'s reader (docs/decisions/0063): [`Snapshot::read`] takes at most
//! [`MAX_SNAPSHOT_BYTES`] of the file and parses them. Arbitrary bytes and damaged valid
//! snapshots: never a panic, a refusal is [`SnapshotError::Corrupt`] naming the file, and a
//! snapshot `collie apply` wrote reads back equal.

use proptest::prelude::*;

use super::snapshot::{Snapshot, SnapshotError, MAX_SNAPSHOT_BYTES};
use crate::fuzzing::{arbitrary, mutated};

/// A snapshot with a pinned file, two workspaces and a starter.
fn valid() -> Snapshot {
    serde_json::from_value(serde_json::json!({
        "schema_version": 1,
        "resolved": {
            "config": {"path": "/home/u/.config/collie/config.toml", "sha256": "ab".repeat(32)},
            "workspaces": [
                {"given": "~/code", "path": "/home/u/code", "access": "write"},
                {"given": "/srv/docs", "path": "/srv/docs", "access": "read"}
            ],
            "starters": [{
                "name": "Claude", "agent": "claude", "exec_given": "claude",
                "exec": "/usr/local/bin/claude", "sha256": "cd".repeat(32),
                "args": ["--model", "opus"], "no_prompts": false
            }]
        },
        "applied_at": "2026-12-06T15:00:00Z",
        "confirmed": "yes"
    }))
    .expect("a valid snapshot")
}

fn read(bytes: &[u8]) -> Result<Option<Snapshot>, TestCaseError> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("applied.json");
    std::fs::write(&path, bytes).expect("write the snapshot");
    match Snapshot::read(&path) {
        Ok(read) => Ok(read),
        Err(e) => {
            prop_assert!(matches!(e, SnapshotError::Corrupt { .. }), "{e:?}");
            prop_assert!(e.to_string().contains("applied.json"));
            Ok(None)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in arbitrary(256)) {
        read(&bytes)?;
    }

    #[test]
    fn damaged_snapshots_read_or_are_refused(
        bytes in mutated(serde_json::to_vec(&valid()).expect("encodes")),
    ) {
        if let Some(s) = read(&bytes)? {
            // What reads is a whole snapshot: it writes back as JSON that reads equal.
            let again = serde_json::to_vec(&s).expect("encodes");
            prop_assert_eq!(read(&again)?, Some(s));
        }
    }
}

#[test]
fn a_written_snapshot_reads_back_equal_and_the_cap_is_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("applied.json");
    valid().write(&path, || {}).expect("write");
    assert_eq!(Snapshot::read(&path).expect("reads"), Some(valid()));
    let big = vec![b' '; usize::try_from(MAX_SNAPSHOT_BYTES).expect("fits") + 1];
    std::fs::write(&path, big).expect("write");
    assert!(matches!(
        Snapshot::read(&path),
        Err(SnapshotError::Corrupt { .. })
    ));
}
