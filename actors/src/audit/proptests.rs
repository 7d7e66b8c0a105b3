//! Properties of the whole chain: whatever is recorded verifies, and no single changed byte does.

use proptest::{collection, prelude::*};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::{
    verify::tests::{at as anchor_at, check},
    AuditChain, AuditEventKind, AuditRecord, ContentMode, VerifyReport,
};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9-]{0,12}",
        ".{0,16}",
        "[\n\r\t\"\\\\\u{0}\u{7f}\u{2028}•é]{0,6}",
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            detail_with(inner).prop_map(Value::Object),
        ]
    })
}

fn detail_with(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Map<String, Value>> {
    let key = prop_oneof![
        Just("text".to_owned()),
        Just("keys".to_owned()),
        Just("pane".to_owned()),
        text(),
    ];
    collection::btree_map(key, values, 0..4).prop_map(|m| m.into_iter().collect())
}

fn record() -> impl Strategy<Value = AuditRecord> {
    (
        0..AuditEventKind::ALL.len(),
        text(),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(text()),
        detail_with(json()),
    )
        .prop_map(
            |(event, machine, session, device, request_id, detail)| AuditRecord {
                event: AuditEventKind::ALL[event],
                machine,
                session,
                device,
                request_id,
                detail,
            },
        )
}

/// Records, each with a timestamp, a content mode and whether the mask is on.
fn entries(
    len: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<(AuditRecord, OffsetDateTime, ContentMode, bool)>> {
    let ts = (0i64..4_102_444_800_000).prop_map(|ms| {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .expect("the range is within time's limits")
    });
    let mode = prop_oneof![Just(ContentMode::Preview), Just(ContentMode::None)];
    collection::vec((record(), ts, mode, any::<bool>()), len)
}

/// Renders the entries into a log, resuming the chain from its tail at `restart` (a bridge
/// restart); returns the bytes and the final tail's chain.
fn write(
    entries: &[(AuditRecord, OffsetDateTime, ContentMode, bool)],
    restart: usize,
) -> (Vec<u8>, AuditChain) {
    let identity = |s: &str| s.to_owned();
    let mask = |s: &str| s.replace('a', "•");
    let mut chain = AuditChain::resume(None);
    let mut bytes = Vec::new();
    for (i, (rec, ts, mode, masked)) in entries.iter().enumerate() {
        if i == restart {
            chain = AuditChain::resume(chain.tail());
        }
        let mask: &dyn Fn(&str) -> String = if *masked { &mask } else { &identity };
        let line = chain.render(rec, *ts, *mode, mask);
        assert_eq!(line.bytes().iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(line.bytes().last(), Some(&b'\n'));
        bytes.extend_from_slice(line.bytes());
        chain.commit(&line);
    }
    (bytes, chain)
}

proptest! {
    #[test]
    fn any_records_render_a_chain_that_verifies(
        entries in entries(0..8),
        restart in 0usize..8,
    ) {
        let (bytes, chain) = write(&entries, restart);
        let n = entries.len() as u64;
        let expected = VerifyReport {
            records: n,
            last_seq: (n > 0).then_some(n),
            interrupted: vec![],
            failure: None,
        };
        prop_assert_eq!(&check(&bytes, Some(&anchor_at(chain.tail()))), &expected);
        prop_assert_eq!(&check(&bytes, None), &expected);
    }

    #[test]
    fn flipping_any_byte_fails_verification(
        entries in entries(1..6),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let (mut bytes, chain) = write(&entries, usize::MAX);
        let index = at.index(bytes.len());
        bytes[index] ^= flip;
        let report = check(&bytes, Some(&anchor_at(chain.tail())));
        prop_assert!(!report.is_ok(), "byte {} ^ {:#x} went unnoticed: {:?}", index, flip, report);
    }

    /// The reader of the log (`collie audit verify`, the bridge's start) on bytes of any kind:
    /// a report, never a panic (decision 0063).
    #[test]
    fn arbitrary_bytes_are_reported_not_panicked_on(bytes in crate::fuzzing::arbitrary(512)) {
        let _ = check(&bytes, None);
        let _ = super::line::parse_line(&bytes);
        let _ = super::line::loose_seq(&bytes);
    }

    /// A real log damaged anywhere — cut short, bytes flipped, inserted, removed, a line
    /// repeated: verification and the start's look at the log's end report it without a panic.
    #[test]
    fn damaged_logs_are_reported_not_panicked_on(
        (entries, damage) in entries(1..5).prop_flat_map(|entries| {
            let (bytes, _) = write(&entries, usize::MAX);
            (Just(entries), crate::fuzzing::mutated(bytes))
        }),
    ) {
        let (_, chain) = write(&entries, usize::MAX);
        let _ = check(&damage, Some(&anchor_at(chain.tail())));
        let _ = check(&damage, None);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.log");
        std::fs::write(&path, &damage).expect("write the damaged log");
        let _ = super::tail::examine(&path).expect("a readable file is examined");
        let _ = super::tail::tail(&path, 3).expect("a readable file has a tail");
    }
}
