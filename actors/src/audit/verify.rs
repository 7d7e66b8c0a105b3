//! Checking a whole log (`collie audit verify`).
//!
//! The log is read once, line by line (each line at most [`MAX_LINE_BYTES`]). Every line must be a
//! valid record whose hash matches its bytes, whose `seq` is one more than the line before (1 for
//! the first) and whose `prev` is the hash of the line before ([`GENESIS_PREV`] for the first).
//! The report names the first `seq` at which that fails — the first line of the chain that is not
//! where it belongs — and why.
//!
//! **Interrupted writes.** A crash can cut an append short and leave part of a line; the next
//! append starts on a new line (see [`FileSink`](super::FileSink)). Such a fragment can never parse
//! as JSON (its object is not closed), is never part of the chain, and the chain continues across
//! it. So an unreadable line is accepted as an interrupted write, and listed in the report, only
//! when the next record continues the chain from the record before it, or when it is the end of
//! the file and lacks its `\n`. An unreadable line in any other place is reported as the break; a
//! readable line that does not match its hash never counts as interrupted.
//!
//! **Stored tail.** The bridge keeps the last `seq` and `hash` it committed in its store. Given
//! that tail, the line of that `seq` must exist and carry that hash; otherwise the log was
//! truncated (lines removed at the end, where the chain alone cannot tell) or rewritten. The log may
//! run past the stored tail: the store is written after the line.

use std::{
    fmt,
    fs::File,
    io::{self, BufRead, BufReader, ErrorKind},
    path::Path,
};

use super::{
    line::{loose_seq, parse_line, LineError, GENESIS_PREV},
    AuditError, ChainTail, MAX_LINE_BYTES,
};

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyReport {
    /// Every record chains to the one before it, and to the stored tail when one was given.
    Ok {
        /// Number of records (lines of the chain).
        records: u64,
        /// `seq` of the last record; `None` for an empty log.
        last_seq: Option<u64>,
        /// Line numbers (1-based) of interrupted writes skipped over.
        interrupted: Vec<u64>,
    },
    /// Where the chain first breaks.
    Broken(VerifyFailure),
}

impl VerifyReport {
    /// Whether the log verified.
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok { .. })
    }
}

/// The first break in a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyFailure {
    /// The first bad `seq`: every record before it verified, and the record of this `seq` is not
    /// intact where it belongs.
    pub seq: u64,
    /// The 1-based line of the file where the break shows, if it shows on a line.
    pub line: Option<u64>,
    /// What is wrong.
    pub problem: VerifyProblem,
}

impl fmt::Display for VerifyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {}", self.seq)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// Why a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyProblem {
    /// The line does not match its hash: its bytes were changed.
    Altered,
    /// The line is missing: the next line there has a later `seq`, and this `seq` appears nowhere
    /// after it.
    Removed {
        /// `seq` of the line found in its place.
        found: u64,
    },
    /// Another line stands where this one belongs (an earlier `seq`, or a later one while this
    /// `seq` appears further down).
    Reordered {
        /// `seq` of the line found in its place.
        found: u64,
    },
    /// The line's `prev` is not the hash of the line before it.
    PrevMismatch,
    /// The line is not an audit record.
    Unparseable(String),
    /// The file ends before the stored tail's `seq`.
    Truncated {
        /// The `seq` the store recorded as the last line.
        stored_seq: u64,
    },
    /// The line of the stored tail's `seq` has a different hash than the store recorded.
    TailMismatch,
}

impl fmt::Display for VerifyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Altered => f.write_str("line does not match its hash (altered line)"),
            Self::Removed { found } => {
                write!(f, "line is missing, seq {found} follows (removed line)")
            }
            Self::Reordered { found } => {
                write!(f, "seq {found} stands in its place (reordered lines)")
            }
            Self::PrevMismatch => f.write_str("prev is not the hash of the line before"),
            Self::Unparseable(reason) => write!(f, "unreadable line: {reason}"),
            Self::Truncated { stored_seq } => write!(
                f,
                "log ends before seq {stored_seq}, the last line the store recorded (truncated tail)"
            ),
            Self::TailMismatch => {
                f.write_str("line differs from the last line the store recorded (rewritten log)")
            }
        }
    }
}

/// Verifies the log at `path` (see the module documentation). `stored_tail` is the tail the
/// bridge's store holds, if any. A missing file is an empty log. `Err` only when the file cannot be
/// read; a broken chain is an `Ok(VerifyReport::Broken)`.
pub fn verify(path: &Path, stored_tail: Option<&ChainTail>) -> Result<VerifyReport, AuditError> {
    let report = match File::open(path) {
        Ok(file) => verify_reader(BufReader::new(file), stored_tail),
        Err(err) if err.kind() == ErrorKind::NotFound => verify_reader(io::empty(), stored_tail),
        Err(err) => Err(err),
    };
    report.map_err(|err| AuditError::read(path, err))
}

fn verify_reader<R: BufRead>(
    mut reader: R,
    stored: Option<&ChainTail>,
) -> io::Result<VerifyReport> {
    let mut expected = 1u64;
    let mut prev = GENESIS_PREV.to_owned();
    let mut interrupted = Vec::new();
    // Unreadable lines since the last record: interrupted writes if the chain continues after them.
    let mut skipped: Vec<(u64, String)> = Vec::new();
    let mut buf = Vec::new();
    let mut line_no = 0u64;

    while let Some(read) = next_line(&mut reader, &mut buf)? {
        line_no += 1;
        let parsed = if read.too_long {
            Err(LineError::Unparseable("line too long".to_owned()))
        } else {
            parse_line(&buf)
        };
        let problem = match parsed {
            Ok(rec) if rec.seq == expected && rec.prev == prev => {
                interrupted.extend(skipped.drain(..).map(|(line, _)| line));
                if stored.is_some_and(|tail| tail.seq == rec.seq && tail.hash != rec.hash) {
                    VerifyProblem::TailMismatch
                } else {
                    expected += 1;
                    prev = rec.hash;
                    continue;
                }
            }
            Ok(rec) if rec.seq == expected => VerifyProblem::PrevMismatch,
            Ok(rec) if rec.seq < expected => VerifyProblem::Reordered { found: rec.seq },
            Ok(rec) => {
                if seq_appears(&mut reader, &mut buf, expected)? {
                    VerifyProblem::Reordered { found: rec.seq }
                } else {
                    VerifyProblem::Removed { found: rec.seq }
                }
            }
            Err(LineError::Altered { .. }) => VerifyProblem::Altered,
            Err(LineError::Unparseable(_)) if !read.terminated => {
                interrupted.push(line_no);
                continue;
            }
            Err(LineError::Unparseable(reason)) => {
                skipped.push((line_no, reason));
                continue;
            }
        };
        // An unreadable line before this one, that the chain did not continue across, is the
        // first break.
        let (line, problem) = match skipped.into_iter().next() {
            Some((line, reason)) => (line, VerifyProblem::Unparseable(reason)),
            None => (line_no, problem),
        };
        return Ok(VerifyReport::Broken(VerifyFailure {
            seq: expected,
            line: Some(line),
            problem,
        }));
    }

    if let Some((line, reason)) = skipped.into_iter().next() {
        return Ok(VerifyReport::Broken(VerifyFailure {
            seq: expected,
            line: Some(line),
            problem: VerifyProblem::Unparseable(reason),
        }));
    }
    if let Some(tail) = stored.filter(|tail| tail.seq >= expected) {
        return Ok(VerifyReport::Broken(VerifyFailure {
            seq: expected,
            line: None,
            problem: VerifyProblem::Truncated {
                stored_seq: tail.seq,
            },
        }));
    }
    Ok(VerifyReport::Ok {
        records: expected - 1,
        last_seq: (expected > 1).then(|| expected - 1),
        interrupted,
    })
}

/// Whether a line with `seq` comes later in `reader` (read loosely: hash not checked).
fn seq_appears<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>, seq: u64) -> io::Result<bool> {
    while let Some(read) = next_line(reader, buf)? {
        if !read.too_long && loose_seq(buf) == Some(seq) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How [`next_line`] found a line.
struct LineRead {
    /// The line ended in `\n` (only the last line of a file can lack it).
    terminated: bool,
    /// The line was longer than [`MAX_LINE_BYTES`]; `buf` holds none of it.
    too_long: bool,
}

/// Reads the next line into `buf` (without its `\n`), holding at most [`MAX_LINE_BYTES`] of it.
fn next_line<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<LineRead>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(any.then_some(LineRead {
                terminated: false,
                too_long,
            }));
        }
        any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let part = &available[..newline.unwrap_or(available.len())];
        if !too_long && buf.len() + part.len() > MAX_LINE_BYTES {
            too_long = true;
            buf.clear();
        }
        if !too_long {
            buf.extend_from_slice(part);
        }
        let used = part.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(LineRead {
                terminated: true,
                too_long,
            }));
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Cursor;

    use time::OffsetDateTime;

    use super::*;
    use crate::audit::{AuditChain, AuditEventKind, AuditRecord, ContentMode};

    pub(crate) fn check(bytes: &[u8], stored: Option<&ChainTail>) -> VerifyReport {
        verify_reader(Cursor::new(bytes), stored).unwrap()
    }

    /// A log of `count` lines (one `Vec` per line, each ending in `\n`) and its tail.
    fn log(count: u64) -> (Vec<Vec<u8>>, Option<ChainTail>) {
        let mut chain = AuditChain::resume(None);
        let mut lines = Vec::new();
        for i in 1..=count {
            let rec = AuditRecord::new(AuditEventKind::PaneInput, "web-1")
                .with_device("phone")
                .with_detail("pane", "t0-1")
                .with_detail("text", "hello")
                .with_detail("i", i);
            let line = chain.render(
                &rec,
                OffsetDateTime::UNIX_EPOCH,
                ContentMode::Preview,
                &|s: &str| s.to_owned(),
            );
            lines.push(line.bytes().to_vec());
            chain.commit(&line);
        }
        (lines, chain.tail())
    }

    fn failure(seq: u64, line: Option<u64>, problem: VerifyProblem) -> VerifyReport {
        VerifyReport::Broken(VerifyFailure { seq, line, problem })
    }

    fn ok(records: u64, interrupted: Vec<u64>) -> VerifyReport {
        VerifyReport::Ok {
            records,
            last_seq: (records > 0).then_some(records),
            interrupted,
        }
    }

    #[test]
    fn an_intact_log_verifies() {
        let (lines, tail) = log(5);
        assert_eq!(check(&lines.concat(), tail.as_ref()), ok(5, vec![]));
        assert_eq!(check(&lines.concat(), None), ok(5, vec![]));
        assert_eq!(check(b"", None), ok(0, vec![]));
    }

    #[test]
    fn a_missing_file_is_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(verify(&path, None).unwrap(), ok(0, vec![]));
        let tail = ChainTail {
            seq: 3,
            hash: "a".repeat(64),
        };
        assert_eq!(
            verify(&path, Some(&tail)).unwrap(),
            failure(1, None, VerifyProblem::Truncated { stored_seq: 3 })
        );
    }

    #[test]
    fn one_altered_byte_of_a_detail() {
        let (mut lines, tail) = log(5);
        let text = String::from_utf8(lines[2].clone()).unwrap();
        lines[2] = text.replace("t0-1", "t0-2").into_bytes();
        let report = check(&lines.concat(), tail.as_ref());
        assert_eq!(report, failure(3, Some(3), VerifyProblem::Altered));
        let VerifyReport::Broken(f) = report else {
            unreachable!()
        };
        assert_eq!(
            f.to_string(),
            "seq 3 (line 3): line does not match its hash (altered line)"
        );
    }

    #[test]
    fn a_deleted_middle_line() {
        let (mut lines, tail) = log(5);
        lines.remove(2);
        assert_eq!(
            check(&lines.concat(), tail.as_ref()),
            failure(3, Some(3), VerifyProblem::Removed { found: 4 })
        );
    }

    #[test]
    fn two_swapped_lines() {
        let (mut lines, tail) = log(5);
        lines.swap(1, 2);
        assert_eq!(
            check(&lines.concat(), tail.as_ref()),
            failure(2, Some(2), VerifyProblem::Reordered { found: 3 })
        );
        // A line moved back in the file: an earlier seq stands where a later one belongs.
        let (mut lines, tail) = log(5);
        let moved = lines.remove(1);
        lines.push(moved);
        assert_eq!(
            check(&lines.concat(), tail.as_ref()),
            failure(2, Some(2), VerifyProblem::Reordered { found: 3 })
        );
        let (mut lines, _) = log(3);
        lines.push(lines[1].clone());
        assert_eq!(
            check(&lines.concat(), None),
            failure(4, Some(4), VerifyProblem::Reordered { found: 2 })
        );
    }

    #[test]
    fn a_line_from_another_chain() {
        let (mut lines, _) = log(3);
        let (other, _) = log(3);
        // A valid line with the right seq whose prev belongs elsewhere.
        let mut chain = AuditChain::resume(Some(ChainTail {
            seq: 1,
            hash: "f".repeat(64),
        }));
        let line = chain.render(
            &AuditRecord::new(AuditEventKind::TabRename, "m"),
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &|s: &str| s.to_owned(),
        );
        chain.commit(&line);
        lines[1] = line.bytes().to_vec();
        assert_eq!(
            check(&lines.concat(), None),
            failure(2, Some(2), VerifyProblem::PrevMismatch)
        );
        assert_eq!(check(&other.concat(), None), ok(3, vec![]));
    }

    #[test]
    fn a_truncated_last_line() {
        let (lines, tail) = log(4);
        let mut bytes = lines.concat();
        bytes.truncate(bytes.len() - 20);
        // The chain alone cannot tell a cut line from an interrupted write…
        assert_eq!(check(&bytes, None), ok(3, vec![4]));
        // …the stored tail can.
        assert_eq!(
            check(&bytes, tail.as_ref()),
            failure(4, None, VerifyProblem::Truncated { stored_seq: 4 })
        );
        // The last line removed whole.
        let bytes = lines[..3].concat();
        assert_eq!(
            check(&bytes, tail.as_ref()),
            failure(4, None, VerifyProblem::Truncated { stored_seq: 4 })
        );
    }

    #[test]
    fn a_stored_tail_beyond_the_end() {
        let (lines, _) = log(3);
        let tail = ChainTail {
            seq: 9,
            hash: "b".repeat(64),
        };
        let report = check(&lines.concat(), Some(&tail));
        assert_eq!(
            report,
            failure(4, None, VerifyProblem::Truncated { stored_seq: 9 })
        );
        let VerifyReport::Broken(f) = report else {
            unreachable!()
        };
        assert_eq!(
            f.to_string(),
            "seq 4: log ends before seq 9, the last line the store recorded (truncated tail)"
        );
    }

    #[test]
    fn a_stored_tail_with_another_hash() {
        let (lines, _) = log(3);
        let tail = ChainTail {
            seq: 2,
            hash: "c".repeat(64),
        };
        assert_eq!(
            check(&lines.concat(), Some(&tail)),
            failure(2, Some(2), VerifyProblem::TailMismatch)
        );
    }

    #[test]
    fn the_log_may_run_past_the_stored_tail() {
        let (lines, _) = log(3);
        let (_, tail2) = log(2);
        assert_eq!(check(&lines.concat(), tail2.as_ref()), ok(3, vec![]));
    }

    #[test]
    fn unreadable_lines() {
        let (lines, tail) = log(3);
        let mut bad = lines.clone();
        bad[1] = b"not json\n".to_vec();
        assert_eq!(
            check(&bad.concat(), tail.as_ref()),
            failure(
                2,
                Some(2),
                VerifyProblem::Unparseable("not a JSON object".into())
            )
        );
        // An unreadable last line that ends in a newline was not cut short by a crash.
        let mut bad = lines.clone();
        bad.push(b"{\"v\":1\n".to_vec());
        assert_eq!(
            check(&bad.concat(), None),
            failure(
                4,
                Some(4),
                VerifyProblem::Unparseable("not a JSON object".into())
            )
        );
        // Too long to read.
        let mut bad = lines.clone();
        bad.insert(1, vec![b'x'; MAX_LINE_BYTES + 1]);
        assert_eq!(
            check(&bad.concat(), None),
            failure(
                2,
                Some(2),
                VerifyProblem::Unparseable("line too long".into())
            )
        );
    }

    #[test]
    fn an_interrupted_write_is_skipped_when_the_chain_continues() {
        let (lines, tail) = log(4);
        let mut bytes = lines[..2].concat();
        bytes.extend_from_slice(&lines[2][..30]);
        bytes.push(b'\n'); // what the sink adds before the next append
        bytes.extend_from_slice(&lines[2..].concat());
        assert_eq!(check(&bytes, tail.as_ref()), ok(4, vec![3]));
    }

    #[test]
    fn a_tail_mismatch_after_an_interrupted_write() {
        let (lines, _) = log(3);
        let mut bytes = lines[0].clone();
        bytes.extend_from_slice(b"{\"v\":1,\n");
        bytes.extend_from_slice(&lines[1..].concat());
        assert_eq!(check(&bytes, None), ok(3, vec![2]));
        let tail = ChainTail {
            seq: 2,
            hash: "c".repeat(64),
        };
        assert_eq!(
            check(&bytes, Some(&tail)),
            failure(2, Some(3), VerifyProblem::TailMismatch)
        );
    }

    #[test]
    fn a_whole_line_lacking_its_newline_counts() {
        let (lines, tail) = log(3);
        let mut bytes = lines.concat();
        bytes.pop();
        assert_eq!(check(&bytes, tail.as_ref()), ok(3, vec![]));
    }

    #[test]
    fn every_flipped_byte_breaks_the_chain() {
        let (lines, tail) = log(3);
        let bytes = lines.concat();
        for at in 0..bytes.len() {
            for flip in [0x01, 0x20, 0x80] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                assert!(
                    !check(&bad, tail.as_ref()).is_ok(),
                    "flipping byte {at} with {flip:#x} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn verify_reads_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let (lines, tail) = log(3);
        std::fs::write(&path, lines.concat()).unwrap();
        assert_eq!(verify(&path, tail.as_ref()).unwrap(), ok(3, vec![]));
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(matches!(verify(&path, None), Err(AuditError::Read { .. })));
    }
}
