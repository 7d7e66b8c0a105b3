//! Checking a whole log (`collie audit verify`).
//!
//! The log is read once, line by line (each line at most [`MAX_LINE_BYTES`]). Every line must be a
//! valid record whose hash matches its bytes, whose `seq` is one more than the line before (1 for
//! the first) and whose `prev` is the hash of the line before ([`GENESIS_PREV`] for the first).
//! One kind of line may skip `seq` forward: an `audit.break` line, which a bridge writes when it
//! finds the log does not end where its store says (see [`super::anchor`]); it still chains from
//! the line before it. The report names the first `seq` at which the chain fails — the first line
//! that is not where it belongs — and why.
//!
//! **Interrupted writes.** A crash can cut an append short and leave part of a line; the next
//! append starts on a new line (see [`FileSink`](super::FileSink)). Such a fragment can never parse
//! as JSON (its object is not closed) and is never part of the chain: an unreadable line is listed
//! as interrupted when the next record continues the chain from the record before it. (The bridge
//! that found the fragment at the end of the log when it started recorded that as a break, so the
//! log does not verify until someone acknowledges it.) An unreadable line in any other place is
//! the break; a readable line that does not match its hash never counts as interrupted, and a cut
//! last line is reported, never skipped.
//!
//! **The anchor.** The store vouches for the end of the log: the last line it knows on disk and
//! the line it was about to append ([`Anchor`]). The log must end with one of the two: ending
//! earlier is a truncated tail, running on is lines the store never saw (forged onto the end, their
//! hashes recomputed), and the same `seq` with another hash is a rewritten log.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    fs::File,
    io::{self, BufRead, BufReader, ErrorKind, Read},
    path::Path,
};

use super::{
    anchor::Anchor,
    line::{loose_seq, parse_line, LineError, GENESIS_PREV},
    AuditError, ChainTail, MAX_LINE_BYTES,
};

/// The event of a line that may skip `seq` forward.
const BREAK_EVENT: &str = "audit.break";

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Number of records (lines of the chain) read before the first failure, or in all.
    pub records: u64,
    /// `seq` of the last record read; `None` for an empty log.
    pub last_seq: Option<u64>,
    /// Line numbers (1-based) of interrupted writes skipped over.
    pub interrupted: Vec<u64>,
    /// Where the chain first breaks, if it does.
    pub failure: Option<VerifyFailure>,
}

impl VerifyReport {
    /// Whether the log verified.
    pub fn is_ok(&self) -> bool {
        self.failure.is_none()
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
    /// The last line is cut short (a partial line).
    CutShort,
    /// The file ends before the line the store vouches for.
    Truncated {
        /// The `seq` the store recorded as the last line.
        stored_seq: u64,
    },
    /// The file runs on past the line the store vouches for.
    Extra {
        /// The last `seq` the store vouches for (0: none).
        stored_seq: u64,
    },
    /// The line of the stored `seq` has a different hash than the store recorded.
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
            Self::CutShort => f.write_str("the last line is cut short (partial line)"),
            Self::Truncated { stored_seq } => write!(
                f,
                "log ends before seq {stored_seq}, the last line the store recorded (truncated tail)"
            ),
            Self::Extra { stored_seq: 0 } => f.write_str(
                "the store vouches for no line, yet the log holds some (lines added, or the store replaced)",
            ),
            Self::Extra { stored_seq } => write!(
                f,
                "log runs on past seq {stored_seq}, the last line the store recorded (lines added)"
            ),
            Self::TailMismatch => {
                f.write_str("line differs from the last line the store recorded (rewritten log)")
            }
        }
    }
}

/// Verifies the log at `path` (see the module documentation). `anchor` is what the bridge's store
/// vouches for, if a store is known; `limit` reads only the first `limit` bytes (a running
/// bridge's length when it was asked, so lines appended since are not read half-way). A missing
/// file is an empty log. `Err` only when the file cannot be read; a broken chain is a report with
/// a [`VerifyFailure`].
pub fn verify(
    path: &Path,
    anchor: Option<&Anchor>,
    limit: Option<u64>,
) -> Result<VerifyReport, AuditError> {
    verify_at(path, anchor, limit, &BTreeSet::new()).map(|(report, _)| report)
}

/// [`verify`], and the hashes of the chain's lines at `seqs` (for the heads a lead witnessed,
/// [`super::witness`]). Only lines that are part of the verified chain are returned: a line
/// after the chain's first failure, or an unreadable one, is not.
pub fn verify_at(
    path: &Path,
    anchor: Option<&Anchor>,
    limit: Option<u64>,
    seqs: &BTreeSet<u64>,
) -> Result<(VerifyReport, BTreeMap<u64, String>), AuditError> {
    let mut found = BTreeMap::new();
    let report = match File::open(path) {
        Ok(file) => {
            let limited = file.take(limit.unwrap_or(u64::MAX));
            verify_reader(BufReader::new(limited), anchor, seqs, &mut found)
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {
            verify_reader(io::empty(), anchor, seqs, &mut found)
        }
        Err(err) => Err(err),
    };
    let report = report.map_err(|err| AuditError::read(path, err))?;
    Ok((report, found))
}

fn verify_reader<R: BufRead>(
    mut reader: R,
    anchor: Option<&Anchor>,
    seqs: &BTreeSet<u64>,
    found: &mut BTreeMap<u64, String>,
) -> io::Result<VerifyReport> {
    let mut expected = 1u64;
    let mut prev = GENESIS_PREV.to_owned();
    let mut last: Option<ChainTail> = None;
    let mut interrupted = Vec::new();
    // Unreadable lines since the last record: interrupted writes if the chain continues after them.
    let mut skipped: Vec<(u64, String)> = Vec::new();
    // Where the records of the seqs the anchor names (and the one after) stand.
    let watched: Vec<u64> = anchor
        .map(|a| {
            let mut seqs = vec![a.max_seq() + 1];
            seqs.extend(a.last.as_ref().map(|t| t.seq));
            seqs.extend(a.pending.as_ref().map(|p| p.line.seq));
            seqs
        })
        .unwrap_or_default();
    let mut lines_of: BTreeMap<u64, u64> = BTreeMap::new();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut records = 0u64;

    let report =
        |records: u64, last: &Option<ChainTail>, interrupted: Vec<u64>, failure| VerifyReport {
            records,
            last_seq: last.as_ref().map(|t| t.seq),
            interrupted,
            failure,
        };

    while let Some(read) = next_line(&mut reader, &mut buf)? {
        line_no += 1;
        let parsed = if read.too_long {
            Err(LineError::Unparseable("line too long".to_owned()))
        } else {
            parse_line(&buf)
        };
        let problem = match parsed {
            Ok(rec)
                if rec.prev == prev
                    && (rec.seq == expected
                        || (rec.event == BREAK_EVENT && rec.seq > expected)) =>
            {
                interrupted.extend(skipped.drain(..).map(|(line, _)| line));
                if watched.contains(&rec.seq) {
                    lines_of.insert(rec.seq, line_no);
                }
                if seqs.contains(&rec.seq) {
                    found.insert(rec.seq, rec.hash.clone());
                }
                expected = rec.seq + 1;
                records += 1;
                prev.clone_from(&rec.hash);
                last = Some(ChainTail {
                    seq: rec.seq,
                    hash: rec.hash,
                });
                continue;
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
                // The file's last bytes, cut short: reported, never skipped.
                let at = skipped.first().map_or(line_no, |(line, _)| *line);
                return Ok(report(
                    records,
                    &last,
                    interrupted,
                    Some(VerifyFailure {
                        seq: expected,
                        line: Some(at),
                        problem: match skipped.into_iter().next() {
                            Some((_, reason)) => VerifyProblem::Unparseable(reason),
                            None => VerifyProblem::CutShort,
                        },
                    }),
                ));
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
        return Ok(report(
            records,
            &last,
            interrupted,
            Some(VerifyFailure {
                seq: expected,
                line: Some(line),
                problem,
            }),
        ));
    }

    if let Some((line, reason)) = skipped.into_iter().next() {
        return Ok(report(
            records,
            &last,
            interrupted,
            Some(VerifyFailure {
                seq: expected,
                line: Some(line),
                problem: VerifyProblem::Unparseable(reason),
            }),
        ));
    }
    let failure = anchor.and_then(|a| end_failure(a, last.as_ref(), expected, &lines_of));
    Ok(report(records, &last, interrupted, failure))
}

/// Whether the chain's end (`last`) is one the anchor vouches for; if not, the failure.
fn end_failure(
    anchor: &Anchor,
    last: Option<&ChainTail>,
    expected: u64,
    lines_of: &BTreeMap<u64, u64>,
) -> Option<VerifyFailure> {
    let pending = anchor.pending.as_ref().map(|p| &p.line);
    let honest = match last {
        None => anchor.last.is_none(),
        Some(t) => anchor.vouches_for(t),
    };
    if honest {
        return None;
    }
    let stored = anchor.last.as_ref().or(pending);
    let end_seq = last.map_or(0, |t| t.seq);
    let failure = |seq: u64, problem| VerifyFailure {
        seq,
        line: lines_of.get(&seq).copied(),
        problem,
    };
    Some(match stored {
        // Nothing vouched for, yet lines.
        None => failure(1, VerifyProblem::Extra { stored_seq: 0 }),
        Some(s) if end_seq < s.seq => VerifyFailure {
            seq: expected,
            line: None,
            problem: VerifyProblem::Truncated { stored_seq: s.seq },
        },
        Some(_) if end_seq > anchor.max_seq() => {
            let stored_seq = anchor.max_seq();
            let first_extra = if lines_of.contains_key(&(stored_seq + 1)) {
                stored_seq + 1
            } else {
                end_seq
            };
            failure(first_extra, VerifyProblem::Extra { stored_seq })
        }
        // The same seq as a vouched-for line, another hash.
        Some(_) => failure(end_seq, VerifyProblem::TailMismatch),
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
    use crate::audit::anchor::Pending;
    use crate::audit::{AuditChain, AuditEventKind, AuditRecord, ContentMode};

    pub(crate) fn check(bytes: &[u8], anchor: Option<&Anchor>) -> VerifyReport {
        verify_reader(
            Cursor::new(bytes),
            anchor,
            &BTreeSet::new(),
            &mut BTreeMap::new(),
        )
        .unwrap()
    }

    /// What the store vouches for after the log ended at `tail` (nothing in flight).
    pub(crate) fn at(tail: Option<ChainTail>) -> Anchor {
        Anchor {
            last: tail,
            pending: None,
        }
    }

    fn identity(s: &str) -> String {
        s.to_owned()
    }

    fn record(i: u64) -> AuditRecord {
        AuditRecord::new(AuditEventKind::PaneInput, "web-1")
            .with_device("phone")
            .with_detail("pane", "t0-1")
            .with_detail("text", "hello")
            .with_detail("i", i)
    }

    /// A log of `count` lines (one `Vec` per line, each ending in `\n`) and its anchor.
    fn log(count: u64) -> (Vec<Vec<u8>>, Anchor) {
        let mut chain = AuditChain::resume(None);
        let mut lines = Vec::new();
        for i in 1..=count {
            let line = chain.render(
                &record(i),
                OffsetDateTime::UNIX_EPOCH,
                ContentMode::Preview,
                &identity,
            );
            lines.push(line.bytes().to_vec());
            chain.commit(&line);
        }
        (lines, at(chain.tail()))
    }

    fn ok(records: u64, interrupted: Vec<u64>) -> VerifyReport {
        VerifyReport {
            records,
            last_seq: (records > 0).then_some(records),
            interrupted,
            failure: None,
        }
    }

    fn failure(report: VerifyReport) -> VerifyFailure {
        report.failure.expect("the log should not verify")
    }

    fn fail(seq: u64, line: Option<u64>, problem: VerifyProblem) -> VerifyFailure {
        VerifyFailure { seq, line, problem }
    }

    #[test]
    fn an_intact_log_verifies() {
        let (lines, anchor) = log(5);
        assert_eq!(check(&lines.concat(), Some(&anchor)), ok(5, vec![]));
        assert_eq!(check(&lines.concat(), None), ok(5, vec![]));
        assert_eq!(check(b"", None), ok(0, vec![]));
        assert_eq!(check(b"", Some(&Anchor::default())), ok(0, vec![]));
    }

    #[test]
    fn a_missing_file_is_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(verify(&path, None, None).unwrap(), ok(0, vec![]));
        let anchor = at(Some(ChainTail {
            seq: 3,
            hash: "a".repeat(64),
        }));
        assert_eq!(
            failure(verify(&path, Some(&anchor), None).unwrap()),
            fail(1, None, VerifyProblem::Truncated { stored_seq: 3 })
        );
    }

    #[test]
    fn one_altered_byte_of_a_detail() {
        let (mut lines, anchor) = log(5);
        let text = String::from_utf8(lines[2].clone()).unwrap();
        lines[2] = text.replace("t0-1", "t0-2").into_bytes();
        let f = failure(check(&lines.concat(), Some(&anchor)));
        assert_eq!(f, fail(3, Some(3), VerifyProblem::Altered));
        assert_eq!(
            f.to_string(),
            "seq 3 (line 3): line does not match its hash (altered line)"
        );
    }

    #[test]
    fn a_deleted_middle_line() {
        let (mut lines, anchor) = log(5);
        lines.remove(2);
        assert_eq!(
            failure(check(&lines.concat(), Some(&anchor))),
            fail(3, Some(3), VerifyProblem::Removed { found: 4 })
        );
    }

    #[test]
    fn two_swapped_lines() {
        let (mut lines, anchor) = log(5);
        lines.swap(1, 2);
        assert_eq!(
            failure(check(&lines.concat(), Some(&anchor))),
            fail(2, Some(2), VerifyProblem::Reordered { found: 3 })
        );
        // A line moved back in the file: an earlier seq stands where a later one belongs.
        let (mut lines, anchor) = log(5);
        let moved = lines.remove(1);
        lines.push(moved);
        assert_eq!(
            failure(check(&lines.concat(), Some(&anchor))),
            fail(2, Some(2), VerifyProblem::Reordered { found: 3 })
        );
        let (mut lines, _) = log(3);
        lines.push(lines[1].clone());
        assert_eq!(
            failure(check(&lines.concat(), None)),
            fail(4, Some(4), VerifyProblem::Reordered { found: 2 })
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
            &identity,
        );
        chain.commit(&line);
        lines[1] = line.bytes().to_vec();
        assert_eq!(
            failure(check(&lines.concat(), None)),
            fail(2, Some(2), VerifyProblem::PrevMismatch)
        );
        assert_eq!(check(&other.concat(), None), ok(3, vec![]));
    }

    #[test]
    fn a_cut_last_line_is_reported_not_skipped() {
        let (lines, anchor) = log(4);
        let mut bytes = lines.concat();
        bytes.truncate(bytes.len() - 20);
        assert_eq!(
            failure(check(&bytes, None)),
            fail(4, Some(4), VerifyProblem::CutShort)
        );
        assert_eq!(
            failure(check(&bytes, Some(&anchor))),
            fail(4, Some(4), VerifyProblem::CutShort)
        );
        // The last line removed whole: only the anchor can tell.
        let bytes = lines[..3].concat();
        assert!(check(&bytes, None).is_ok());
        assert_eq!(
            failure(check(&bytes, Some(&anchor))),
            fail(4, None, VerifyProblem::Truncated { stored_seq: 4 })
        );
    }

    #[test]
    fn a_stored_tail_beyond_the_end() {
        let (lines, _) = log(3);
        let anchor = at(Some(ChainTail {
            seq: 9,
            hash: "b".repeat(64),
        }));
        let f = failure(check(&lines.concat(), Some(&anchor)));
        assert_eq!(f, fail(4, None, VerifyProblem::Truncated { stored_seq: 9 }));
        assert_eq!(
            f.to_string(),
            "seq 4: log ends before seq 9, the last line the store recorded (truncated tail)"
        );
    }

    #[test]
    fn a_stored_tail_with_another_hash() {
        let (lines, _) = log(3);
        let anchor = at(Some(ChainTail {
            seq: 3,
            hash: "c".repeat(64),
        }));
        assert_eq!(
            failure(check(&lines.concat(), Some(&anchor))),
            fail(3, Some(3), VerifyProblem::TailMismatch)
        );
    }

    #[test]
    fn lines_past_the_anchor_are_a_failure() {
        // A line forged onto the end with the next seq and a recomputed hash chains perfectly;
        // only the store knows it was never written by the bridge.
        let (lines, _) = log(4);
        let (_, anchor2) = log(2);
        let f = failure(check(&lines.concat(), Some(&anchor2)));
        assert_eq!(f, fail(3, Some(3), VerifyProblem::Extra { stored_seq: 2 }));
        assert_eq!(
            f.to_string(),
            "seq 3 (line 3): log runs on past seq 2, the last line the store recorded (lines added)"
        );
        let f = failure(check(&lines.concat(), Some(&Anchor::default())));
        assert_eq!(f.problem, VerifyProblem::Extra { stored_seq: 0 });
    }

    #[test]
    fn the_line_in_flight_may_or_may_not_be_there() {
        let (lines, a3) = log(3);
        let (_, a4) = log(4);
        let anchor = Anchor {
            last: a3.last,
            pending: Some(Pending {
                line: a4.last.clone().unwrap(),
                kept: None,
                earlier: Vec::new(),
            }),
        };
        assert_eq!(check(&lines.concat(), Some(&anchor)), ok(3, vec![]));
        let (lines4, _) = log(4);
        assert_eq!(check(&lines4.concat(), Some(&anchor)), ok(4, vec![]));
        let (lines5, _) = log(5);
        assert_eq!(
            failure(check(&lines5.concat(), Some(&anchor))).problem,
            VerifyProblem::Extra { stored_seq: 4 }
        );
    }

    #[test]
    fn a_break_line_may_skip_seq_forward_and_still_chains() {
        let (mut lines, _) = log(2);
        let mut chain = AuditChain::resume(None);
        for line in &lines {
            let parsed = parse_line(&line[..line.len() - 1]).unwrap();
            chain = AuditChain::resume(Some(ChainTail {
                seq: parsed.seq,
                hash: parsed.hash,
            }));
        }
        chain.skip_to(9);
        let brk = chain.render(
            &AuditRecord::new(AuditEventKind::AuditBreak, "m"),
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &identity,
        );
        chain.commit(&brk);
        let next = chain.render(
            &record(10),
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &identity,
        );
        chain.commit(&next);
        lines.push(brk.bytes().to_vec());
        lines.push(next.bytes().to_vec());
        let report = check(&lines.concat(), Some(&at(chain.tail())));
        assert_eq!(report.failure, None);
        assert_eq!((report.records, report.last_seq), (4, Some(10)));

        // Any other event skipping forward is a removed line.
        let (mut plain, _) = log(2);
        let mut jump = AuditChain::resume(Some(ChainTail {
            seq: 2,
            hash: parse_line(&plain[1][..plain[1].len() - 1]).unwrap().hash,
        }));
        jump.skip_to(9);
        let line = jump.render(
            &record(9),
            OffsetDateTime::UNIX_EPOCH,
            ContentMode::Preview,
            &identity,
        );
        plain.push(line.bytes().to_vec());
        assert_eq!(
            failure(check(&plain.concat(), None)),
            fail(3, Some(3), VerifyProblem::Removed { found: 9 })
        );
    }

    #[test]
    fn unreadable_lines() {
        let (lines, anchor) = log(3);
        let mut bad = lines.clone();
        bad[1] = b"not json\n".to_vec();
        assert_eq!(
            failure(check(&bad.concat(), Some(&anchor))),
            fail(
                2,
                Some(2),
                VerifyProblem::Unparseable("not a JSON object".into())
            )
        );
        // An unreadable last line that ends in a newline was not cut short by a crash.
        let mut bad = lines.clone();
        bad.push(b"{\"v\":1\n".to_vec());
        assert_eq!(
            failure(check(&bad.concat(), None)),
            fail(
                4,
                Some(4),
                VerifyProblem::Unparseable("not a JSON object".into())
            )
        );
        // Too long to read.
        let mut bad = lines.clone();
        bad.insert(1, vec![b'x'; MAX_LINE_BYTES + 1]);
        assert_eq!(
            failure(check(&bad.concat(), None)),
            fail(
                2,
                Some(2),
                VerifyProblem::Unparseable("line too long".into())
            )
        );
    }

    #[test]
    fn an_interrupted_write_is_skipped_when_the_chain_continues() {
        let (lines, anchor) = log(4);
        let mut bytes = lines[..2].concat();
        bytes.extend_from_slice(&lines[2][..30]);
        bytes.push(b'\n'); // what the sink adds before the next append
        bytes.extend_from_slice(&lines[2..].concat());
        assert_eq!(check(&bytes, Some(&anchor)), ok(4, vec![3]));
    }

    #[test]
    fn a_whole_line_lacking_its_newline_counts() {
        let (lines, anchor) = log(3);
        let mut bytes = lines.concat();
        bytes.pop();
        assert_eq!(check(&bytes, Some(&anchor)), ok(3, vec![]));
    }

    #[test]
    fn every_flipped_byte_breaks_the_chain() {
        let (lines, anchor) = log(3);
        let bytes = lines.concat();
        for at in 0..bytes.len() {
            for flip in [0x01, 0x20, 0x80] {
                let mut bad = bytes.clone();
                bad[at] ^= flip;
                assert!(
                    !check(&bad, Some(&anchor)).is_ok(),
                    "flipping byte {at} with {flip:#x} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn verify_reads_the_file_up_to_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let (lines, anchor) = log(3);
        let (_, anchor2) = log(2);
        std::fs::write(&path, lines.concat()).unwrap();
        assert_eq!(verify(&path, Some(&anchor), None).unwrap(), ok(3, vec![]));
        // A running bridge's length: what was appended after it is not read.
        let two = (lines[0].len() + lines[1].len()) as u64;
        assert_eq!(
            verify(&path, Some(&anchor2), Some(two)).unwrap(),
            ok(2, vec![])
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(matches!(
            verify(&path, None, None),
            Err(AuditError::Read { .. })
        ));
    }
}
