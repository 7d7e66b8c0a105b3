//! Reading the end of a log without reading all of it: what a starting bridge compares with the
//! store ([`examine`]) and `collie audit tail -n N` ([`tail`]).

use std::{
    fs::File,
    io::{self, ErrorKind},
    os::unix::fs::FileExt,
    path::Path,
};

use super::{
    anchor::{Examined, FileEnd},
    line::{parse_line, LineError},
    AuditError, ChainTail, MAX_LINE_BYTES,
};

/// How much is read at a time, backwards from the end.
const CHUNK: u64 = 64 * 1024;

/// How many lines [`examine`] looks back for the last whole record past damaged lines.
const LOOK_BACK_LINES: usize = 16;

/// How many bytes [`examine`] reads back at most (so a huge last "line" cannot exhaust memory).
const LOOK_BACK_BYTES: u64 = 2 * MAX_LINE_BYTES as u64;

/// How the log at `path` ends, and the last whole record in it (see [`Examined`]).
///
/// The last line decides [`FileEnd`]: a whole record that matches its hash (also when only its
/// `\n` is missing), or damaged — cut short (no `\n`, not a whole record), unreadable, or
/// altered. A damaged end is never skipped silently: the caller compares it with the store and
/// records a break. The last whole record is looked for within the last `LOOK_BACK_LINES`
/// lines.
pub fn examine(path: &Path) -> Result<Examined, AuditError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => {
            return Ok(Examined {
                end: FileEnd::Missing,
                last_record: None,
                len: 0,
            })
        }
        Err(err) => return Err(AuditError::read(path, err)),
    };
    let len = file
        .metadata()
        .map_err(|err| AuditError::read(path, err))?
        .len();
    let (lines, terminated) = last_lines(&file, LOOK_BACK_LINES, LOOK_BACK_BYTES)
        .map_err(|err| AuditError::read(path, err))?;
    let parsed: Vec<Result<ChainTail, LineError>> = lines
        .iter()
        .map(|line| {
            parse_line(line).map(|p| ChainTail {
                seq: p.seq,
                hash: p.hash,
            })
        })
        .collect();
    let last_record = parsed.iter().rev().find_map(|p| p.as_ref().ok().cloned());
    let end = match parsed.last() {
        None if len == 0 => FileEnd::Empty,
        // Content, but not one line ended within the look-back: no line of ours is that long.
        None => FileEnd::Damaged {
            reason: "longer than any audit line".to_owned(),
        },
        Some(Ok(tail)) => FileEnd::Record(tail.clone()),
        Some(Err(_)) if !terminated => FileEnd::Damaged {
            reason: "cut short (a partial line)".to_owned(),
        },
        Some(Err(LineError::Altered { seq })) => FileEnd::Damaged {
            reason: format!("seq {seq}, altered (it does not match its hash)"),
        },
        Some(Err(LineError::Unparseable(reason))) => FileEnd::Damaged {
            reason: format!("unreadable ({reason})"),
        },
    };
    Ok(Examined {
        end,
        last_record,
        len,
    })
}

/// The last `n` lines of the log as text (for `collie audit tail -n N`), oldest first, without
/// their `\n`; a last line without `\n` is included as it stands. A missing file has no lines.
/// The file is read backwards in chunks, so only those lines are held in memory.
pub fn tail(path: &Path, n: usize) -> Result<Vec<String>, AuditError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(AuditError::read(path, err)),
    };
    let (lines, _) = last_lines(&file, n, u64::MAX).map_err(|err| AuditError::read(path, err))?;
    Ok(lines
        .iter()
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect())
}

/// The last `n` lines of `file` without their `\n` (a final fragment without `\n` counts as a
/// line), and whether the file ends in `\n`. At most about `max_bytes` are read: lines that start
/// before that are left out.
fn last_lines(file: &File, n: usize, max_bytes: u64) -> io::Result<(Vec<Vec<u8>>, bool)> {
    let len = file.metadata()?.len();
    if len == 0 || n == 0 {
        return Ok((Vec::new(), true));
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    let terminated = last[0] == b'\n';
    // The lines are file[..content_end] split at `\n`.
    let content_end = if terminated { len - 1 } else { len };

    // Read backwards until `n` separators lie before `content_end` (then the piece before the
    // first of them may be partial and is dropped) or the start of the file is reached.
    let mut chunks = Vec::new();
    let mut pos = len;
    let mut separators = 0;
    while pos > 0 && separators < n && len - pos < max_bytes {
        let step = CHUNK.min(pos);
        pos -= step;
        let mut chunk = vec![0u8; usize::try_from(step).map_err(io::Error::other)?];
        file.read_exact_at(&mut chunk, pos)?;
        let before_end =
            usize::try_from(content_end.saturating_sub(pos).min(step)).map_err(io::Error::other)?;
        separators += chunk[..before_end].iter().filter(|&&b| b == b'\n').count();
        chunks.push(chunk);
    }
    let buf: Vec<u8> = chunks.into_iter().rev().flatten().collect();
    let content = &buf[..usize::try_from(content_end - pos).map_err(io::Error::other)?];

    let mut pieces: Vec<&[u8]> = content.split(|&b| b == b'\n').collect();
    if pos > 0 {
        pieces.remove(0);
    }
    let skip = pieces.len().saturating_sub(n);
    Ok((
        pieces[skip..].iter().map(|piece| piece.to_vec()).collect(),
        terminated,
    ))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use time::OffsetDateTime;

    use super::*;
    use crate::audit::{AuditChain, AuditEventKind, AuditRecord, ContentMode};

    fn identity(s: &str) -> String {
        s.to_owned()
    }

    /// A log of `count` lines and the chain after them.
    fn write_log(path: &Path, count: u64) -> AuditChain {
        let mut chain = AuditChain::resume(None);
        let mut bytes = Vec::new();
        for i in 0..count {
            let rec = AuditRecord::new(AuditEventKind::PaneClose, "m").with_detail("pane", i);
            let line = chain.render(
                &rec,
                OffsetDateTime::UNIX_EPOCH,
                ContentMode::Preview,
                &identity,
            );
            bytes.extend_from_slice(line.bytes());
            chain.commit(&line);
        }
        fs::write(path, bytes).unwrap();
        chain
    }

    fn end(path: &Path) -> FileEnd {
        examine(path).unwrap().end
    }

    #[test]
    fn missing_empty_and_fragment_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(end(&path), FileEnd::Missing);
        fs::write(&path, b"").unwrap();
        assert_eq!(end(&path), FileEnd::Empty);
        fs::write(&path, b"{\"v\":1,").unwrap();
        let e = examine(&path).unwrap();
        assert!(matches!(e.end, FileEnd::Damaged { ref reason } if reason.contains("cut short")));
        assert_eq!(e.last_record, None);
        assert_eq!(e.len, 7);
    }

    #[test]
    fn the_end_is_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 5);
        let e = examine(&path).unwrap();
        assert_eq!(e.end, FileEnd::Record(chain.tail().unwrap()));
        assert_eq!(e.last_record, chain.tail());
        assert_eq!(e.len, fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn a_cut_last_line_is_damaged_and_the_record_before_it_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 3);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"v\":1,\"seq\":4,\"ts");
        fs::write(&path, bytes).unwrap();
        let e = examine(&path).unwrap();
        assert!(matches!(e.end, FileEnd::Damaged { .. }), "{e:?}");
        assert_eq!(e.last_record, chain.tail());
    }

    #[test]
    fn a_whole_line_missing_only_its_newline_is_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 3);
        let mut bytes = fs::read(&path).unwrap();
        bytes.pop();
        fs::write(&path, bytes).unwrap();
        assert_eq!(end(&path), FileEnd::Record(chain.tail().unwrap()));
    }

    #[test]
    fn an_altered_or_unreadable_last_line_is_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 2);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, text.replace("\"pane\":1", "\"pane\":9")).unwrap();
        let e = examine(&path).unwrap();
        assert!(
            matches!(&e.end, FileEnd::Damaged { reason } if reason.contains("seq 2, altered")),
            "{e:?}"
        );
        // The altered line is not a whole record: the one before it is.
        assert_eq!(e.last_record.map(|t| t.seq), Some(1));
        assert_ne!(chain.tail().map(|t| t.seq), Some(1));
        fs::write(&path, "garbage\n").unwrap();
        assert!(matches!(end(&path), FileEnd::Damaged { reason } if reason.contains("unreadable")));
    }

    #[test]
    fn a_huge_last_line_is_damaged_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        write_log(&path, 1);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE_BYTES));
        fs::write(&path, bytes).unwrap();
        let e = examine(&path).unwrap();
        assert!(matches!(e.end, FileEnd::Damaged { .. }), "{:?}", e.end);
        assert_eq!(e.last_record, None);
    }

    #[test]
    fn tail_returns_the_last_n_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(tail(&path, 3).unwrap(), Vec::<String>::new());
        write_log(&path, 6);
        let all: Vec<String> = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(tail(&path, 0).unwrap(), Vec::<String>::new());
        assert_eq!(tail(&path, 2).unwrap(), all[4..]);
        assert_eq!(tail(&path, 6).unwrap(), all);
        assert_eq!(tail(&path, 100).unwrap(), all);
    }

    #[test]
    fn last_lines_across_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        // Lines of varied lengths around the chunk size, with and without a final newline.
        let lines: Vec<String> = (0..40)
            .map(|i| "x".repeat((i * 7919) % (CHUNK as usize + 300)))
            .collect();
        for terminated in [true, false] {
            let mut text = lines.join("\n");
            if terminated {
                text.push('\n');
            }
            fs::write(&path, &text).unwrap();
            let file = File::open(&path).unwrap();
            for n in [1, 2, 3, 17, 40, 41] {
                let (got, ends) = last_lines(&file, n, u64::MAX).unwrap();
                assert_eq!(ends, terminated);
                let want: Vec<Vec<u8>> = lines[lines.len().saturating_sub(n)..]
                    .iter()
                    .map(|l| l.as_bytes().to_vec())
                    .collect();
                assert_eq!(got, want, "n={n} terminated={terminated}");
            }
        }
    }
}
