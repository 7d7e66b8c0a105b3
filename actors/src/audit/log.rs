//! [`AuditLog`]: the chain, a sink, the content mode and the mask, tied together.

use std::{path::Path, sync::Arc};

use time::OffsetDateTime;

use super::{
    AuditChain, AuditError, AuditRecord, AuditSink, ChainTail, ContentMode, FileSink, RenderedLine,
    MAX_LINE_BYTES,
};

/// The masker audit lines pass through (the redactor's, or the identity when masking is off).
pub type Mask = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A writable audit log. Synchronous: the audit actor owns one and calls it from its handler.
///
/// Writing is two steps so the actor can record a line in its store before the line reaches the
/// file ([`super::anchor`]): [`render`](Self::render) makes the next line's bytes, and
/// [`write`](Self::write) appends them and advances the chain. Before appending, `write` checks that
/// the file still has the length this log left it with; a file that changed under it (cut, grown,
/// replaced) is [`AuditError::Changed`], and the caller records a break instead of writing on.
pub struct AuditLog {
    chain: AuditChain,
    sink: Box<dyn AuditSink>,
    mode: ContentMode,
    mask: Mask,
    /// The file's length after this log's last append, if known.
    expected_len: Option<u64>,
}

impl AuditLog {
    /// A log that continues `chain` into `sink`, without checking the sink's length before the
    /// first append.
    pub fn new(chain: AuditChain, sink: Box<dyn AuditSink>, mode: ContentMode, mask: Mask) -> Self {
        Self {
            chain,
            sink,
            mode,
            mask,
            expected_len: None,
        }
    }

    /// The log file at `path`, `len` bytes long, continuing after `from` (what
    /// [`super::examine`] found and [`super::anchor::decide`] accepted).
    pub fn file(
        path: &Path,
        from: Option<ChainTail>,
        len: u64,
        mode: ContentMode,
        mask: Mask,
    ) -> Self {
        Self {
            chain: AuditChain::resume(from),
            sink: Box::new(FileSink::new(path)),
            mode,
            mask,
            expected_len: Some(len),
        }
    }

    /// Continues after `from` in a file now `len` bytes long (after a break was recorded).
    pub fn resume(&mut self, from: Option<ChainTail>, len: u64) {
        self.chain = AuditChain::resume(from);
        self.expected_len = Some(len);
    }

    /// The next line for `rec` at `ts`; `skip_to` moves its `seq` forward (an `audit.break` line
    /// only). Nothing is written.
    pub fn render(
        &mut self,
        rec: &AuditRecord,
        ts: OffsetDateTime,
        skip_to: Option<u64>,
    ) -> Result<RenderedLine, AuditError> {
        if let Some(seq) = skip_to {
            self.chain.skip_to(seq);
        }
        let line = self.chain.render(rec, ts, self.mode, &*self.mask);
        let len = line.bytes().len();
        if len > MAX_LINE_BYTES {
            return Err(AuditError::LineTooLong {
                len,
                limit: MAX_LINE_BYTES,
            });
        }
        Ok(line)
    }

    /// Appends `line` (the latest [`render`](Self::render)) and returns the new tail. Fails
    /// closed: when the file changed under this log or the line cannot be appended, nothing is
    /// committed and the write being audited must be refused; the next append takes the same
    /// `seq`.
    pub fn write(&mut self, line: &RenderedLine) -> Result<ChainTail, AuditError> {
        if let Some(expected) = self.expected_len {
            let found = self.sink.file_len().map_err(AuditError::Append)?;
            if found != expected {
                return Err(AuditError::Changed { expected, found });
            }
        }
        let len = self.sink.append(line.bytes()).map_err(AuditError::Append)?;
        self.chain.commit(line);
        if self.expected_len.is_some() {
            self.expected_len = Some(len);
        }
        Ok(line.tail())
    }

    /// The lines for `records`, in order, each chained to the one before (the first to the log's
    /// tail), without writing or committing anything: a batch for [`write_batch`](Self::write_batch).
    /// A record whose line is too long gets its error and no line; the others go on.
    pub fn render_batch<'a>(
        &self,
        records: impl IntoIterator<Item = (&'a AuditRecord, OffsetDateTime)>,
    ) -> Vec<Result<RenderedLine, AuditError>> {
        let mut chain = self.chain.clone();
        records
            .into_iter()
            .map(|(rec, ts)| {
                let line = chain.render(rec, ts, self.mode, &*self.mask);
                let len = line.bytes().len();
                if len > MAX_LINE_BYTES {
                    return Err(AuditError::LineTooLong {
                        len,
                        limit: MAX_LINE_BYTES,
                    });
                }
                chain.commit(&line);
                Ok(line)
            })
            .collect()
    }

    /// Appends `lines` (the latest [`render_batch`](Self::render_batch), oldest first) with one
    /// append and one sync, and returns the new tail. Fails closed as [`write`](Self::write) does:
    /// the sink takes all the lines or none, and on failure the chain stays where it was.
    pub fn write_batch(&mut self, lines: &[RenderedLine]) -> Result<Option<ChainTail>, AuditError> {
        if let Some(expected) = self.expected_len {
            let found = self.sink.file_len().map_err(AuditError::Append)?;
            if found != expected {
                return Err(AuditError::Changed { expected, found });
            }
        }
        let bytes: Vec<u8> = lines.iter().flat_map(|l| l.bytes()).copied().collect();
        if bytes.is_empty() {
            return Ok(self.chain.tail());
        }
        let len = self.sink.append(&bytes).map_err(AuditError::Append)?;
        for line in lines {
            self.chain.commit(line);
        }
        if self.expected_len.is_some() {
            self.expected_len = Some(len);
        }
        Ok(self.chain.tail())
    }

    /// [`render`](Self::render) then [`write`](Self::write).
    pub fn append(
        &mut self,
        rec: &AuditRecord,
        ts: OffsetDateTime,
    ) -> Result<ChainTail, AuditError> {
        let line = self.render(rec, ts, None)?;
        self.write(&line)
    }

    /// The last committed line, or `None` for an empty log.
    pub fn tail(&self) -> Option<ChainTail> {
        self.chain.tail()
    }

    /// The file's length after the last append, if this log tracks it.
    pub fn file_len(&self) -> Option<u64> {
        self.expected_len
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
    use crate::audit::{examine, verify, AuditEventKind, FileEnd};

    /// A sink that keeps lines in memory and fails while told to.
    #[derive(Clone, Default)]
    struct MemSink {
        lines: Arc<Mutex<Vec<Vec<u8>>>>,
        failing: Arc<Mutex<bool>>,
    }

    impl AuditSink for MemSink {
        fn file_len(&self) -> io::Result<u64> {
            Ok(self
                .lines
                .lock()
                .unwrap()
                .iter()
                .map(|l| l.len() as u64)
                .sum())
        }

        fn append(&mut self, line: &[u8]) -> io::Result<u64> {
            if *self.failing.lock().unwrap() {
                return Err(io::Error::other("disk full"));
            }
            self.lines.lock().unwrap().push(line.to_vec());
            self.file_len()
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

    fn open(path: &Path, mode: ContentMode) -> AuditLog {
        let found = examine(path).unwrap();
        let from = match found.end {
            FileEnd::Record(t) => Some(t),
            _ => None,
        };
        AuditLog::file(path, from, found.len, mode, identity())
    }

    #[test]
    fn the_chain_continues_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ts = OffsetDateTime::UNIX_EPOCH;
        let mut log = open(&path, ContentMode::Preview);
        log.append(&rec(1), ts).unwrap();
        log.append(&rec(2), ts).unwrap();
        drop(log);

        let mut log = open(&path, ContentMode::None);
        assert_eq!(log.tail().map(|t| t.seq), Some(2));
        assert_eq!(log.mode(), ContentMode::None);
        let tail = log.append(&rec(3), ts).unwrap();
        assert_eq!(tail.seq, 3);
        let anchor = crate::audit::Anchor {
            last: Some(tail),
            pending: None,
        };
        let report = verify(&path, Some(&anchor), None).unwrap();
        assert!(report.is_ok(), "{report:?}");
        assert_eq!(report.records, 3);
    }

    #[test]
    fn a_file_changed_under_the_log_is_refused_until_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ts = OffsetDateTime::UNIX_EPOCH;
        let mut log = open(&path, ContentMode::Preview);
        log.append(&rec(1), ts).unwrap();
        let second = log.append(&rec(2), ts).unwrap();
        let first_len = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .len()
            + 1;
        let full = std::fs::metadata(&path).unwrap().len();
        // Cut back to the first line behind the log's back.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(first_len as u64)
            .unwrap();
        let err = log.append(&rec(3), ts).unwrap_err();
        assert!(
            matches!(err, AuditError::Changed { expected, found } if expected == full && found == first_len as u64),
            "{err:?}"
        );
        assert_eq!(log.tail(), Some(second));
        // Resumed from what the file holds, it writes on.
        let found = examine(&path).unwrap();
        let FileEnd::Record(t) = found.end else {
            panic!("{found:?}")
        };
        log.resume(Some(t), found.len);
        assert_eq!(log.append(&rec(3), ts).unwrap().seq, 2);
    }

    #[test]
    fn a_directory_in_the_logs_place_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let ts = OffsetDateTime::UNIX_EPOCH;
        let mut log = AuditLog::new(
            AuditChain::resume(None),
            Box::new(FileSink::new(&path)),
            ContentMode::Preview,
            identity(),
        );
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
