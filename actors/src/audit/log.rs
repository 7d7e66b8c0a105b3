//! [`AuditLog`]: the chain, a sink, the content mode and the mask, tied together.

use std::{path::Path, sync::Arc};

use time::OffsetDateTime;

use super::{
    read_tail, AuditChain, AuditError, AuditRecord, AuditSink, ChainTail, ContentMode, FileSink,
    MAX_LINE_BYTES,
};

/// The masker audit lines pass through (the redactor's, or the identity when masking is off).
pub type Mask = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A writable audit log. Synchronous: the audit actor owns one and calls it from its handler.
pub struct AuditLog {
    chain: AuditChain,
    sink: Box<dyn AuditSink>,
    mode: ContentMode,
    mask: Mask,
}

impl AuditLog {
    /// A log that continues `chain` into `sink`.
    pub fn new(chain: AuditChain, sink: Box<dyn AuditSink>, mode: ContentMode, mask: Mask) -> Self {
        Self {
            chain,
            sink,
            mode,
            mask,
        }
    }

    /// The log file at `path`, continuing the chain from its last line (see [`read_tail`]).
    pub fn open(path: &Path, mode: ContentMode, mask: Mask) -> Result<Self, AuditError> {
        let chain = AuditChain::resume(read_tail(path)?);
        Ok(Self::new(chain, Box::new(FileSink::new(path)), mode, mask))
    }

    /// Appends `rec` at `ts` and returns the new tail (for the store). Fails closed: when the line
    /// cannot be appended, nothing is committed, the error says so, and the write being audited must
    /// be refused; the next append takes the same `seq`.
    pub fn append(
        &mut self,
        rec: &AuditRecord,
        ts: OffsetDateTime,
    ) -> Result<ChainTail, AuditError> {
        let line = self.chain.render(rec, ts, self.mode, &*self.mask);
        let len = line.bytes().len();
        if len > MAX_LINE_BYTES {
            return Err(AuditError::LineTooLong {
                len,
                limit: MAX_LINE_BYTES,
            });
        }
        self.sink.append(line.bytes()).map_err(AuditError::Append)?;
        self.chain.commit(&line);
        Ok(line.tail())
    }

    /// The last committed line, or `None` for an empty log.
    pub fn tail(&self) -> Option<ChainTail> {
        self.chain.tail()
    }

    /// The content mode in force.
    pub fn mode(&self) -> ContentMode {
        self.mode
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io,
        sync::{Arc, Mutex},
    };

    use serde_json::Value;

    use super::*;
    use crate::audit::{verify, AuditEventKind, VerifyReport};

    /// A sink that keeps lines in memory and fails while told to.
    #[derive(Clone, Default)]
    struct MemSink {
        lines: Arc<Mutex<Vec<Vec<u8>>>>,
        failing: Arc<Mutex<bool>>,
    }

    impl AuditSink for MemSink {
        fn append(&mut self, line: &[u8]) -> io::Result<()> {
            if *self.failing.lock().unwrap() {
                return Err(io::Error::other("disk full"));
            }
            self.lines.lock().unwrap().push(line.to_vec());
            Ok(())
        }
    }

    fn identity() -> Mask {
        Arc::new(|s: &str| s.to_owned())
    }

    fn rec(n: u64) -> AuditRecord {
        AuditRecord::new(AuditEventKind::PaneInput, "m").with_detail("n", n)
    }

    #[test]
    fn a_failing_sink_leaves_the_chain_unchanged() {
        let sink = MemSink::default();
        let mut log = AuditLog::new(
            AuditChain::resume(None),
            Box::new(sink.clone()),
            ContentMode::Preview,
            identity(),
        );
        let ts = OffsetDateTime::UNIX_EPOCH;
        let first = log.append(&rec(1), ts).unwrap();
        assert_eq!(first.seq, 1);

        *sink.failing.lock().unwrap() = true;
        let err = log.append(&rec(2), ts).unwrap_err();
        assert!(matches!(err, AuditError::Append(_)));
        assert_eq!(err.to_string(), "cannot append to the audit log: disk full");
        assert_eq!(log.tail(), Some(first.clone()));

        *sink.failing.lock().unwrap() = false;
        let second = log.append(&rec(3), ts).unwrap();
        assert_eq!(second.seq, 2);

        let lines = sink.lines.lock().unwrap();
        assert_eq!(lines.len(), 2);
        let parsed: Value = serde_json::from_slice(&lines[1]).unwrap();
        assert_eq!(parsed["seq"], 2);
        assert_eq!(parsed["prev"], first.hash.as_str());
        assert_eq!(parsed["detail"]["n"], 3);
    }

    #[test]
    fn a_line_over_the_limit_is_refused() {
        let sink = MemSink::default();
        let mut log = AuditLog::new(
            AuditChain::resume(None),
            Box::new(sink.clone()),
            ContentMode::Preview,
            identity(),
        );
        let big = AuditRecord::new(AuditEventKind::PaneRename, "m")
            .with_detail("name", "x".repeat(MAX_LINE_BYTES));
        let err = log.append(&big, OffsetDateTime::UNIX_EPOCH).unwrap_err();
        assert!(matches!(err, AuditError::LineTooLong { .. }));
        assert_eq!(log.tail(), None);
        assert!(sink.lines.lock().unwrap().is_empty());
    }

    #[test]
    fn the_chain_continues_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ts = OffsetDateTime::UNIX_EPOCH;
        let mut log = AuditLog::open(&path, ContentMode::Preview, identity()).unwrap();
        log.append(&rec(1), ts).unwrap();
        log.append(&rec(2), ts).unwrap();
        drop(log);

        let mut log = AuditLog::open(&path, ContentMode::None, identity()).unwrap();
        assert_eq!(log.tail().map(|t| t.seq), Some(2));
        assert_eq!(log.mode(), ContentMode::None);
        let tail = log.append(&rec(3), ts).unwrap();
        assert_eq!(tail.seq, 3);
        assert_eq!(
            verify(&path, Some(&tail)).unwrap(),
            VerifyReport::Ok {
                records: 3,
                last_seq: Some(3),
                interrupted: vec![],
            }
        );
    }

    #[test]
    fn a_directory_in_the_logs_place_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ts = OffsetDateTime::UNIX_EPOCH;
        let mut log = AuditLog::open(&path, ContentMode::Preview, identity()).unwrap();
        let first = log.append(&rec(1), ts).unwrap();
        std::fs::rename(&path, dir.path().join("moved.log")).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(matches!(
            log.append(&rec(2), ts),
            Err(AuditError::Append(_))
        ));
        assert_eq!(log.tail(), Some(first));
    }
}
