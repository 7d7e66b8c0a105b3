//! Reading the end of a log without reading all of it: where a restarted bridge continues
//! ([`read_tail`]) and `collie audit tail -n N` ([`tail`]).

use std::{
    fs::File,
    io::{self, ErrorKind},
    os::unix::fs::FileExt,
    path::Path,
};

use super::{
    line::{parse_line, LineError},
    AuditError, ChainTail,
};

/// How much is read at a time, backwards from the end.
const CHUNK: u64 = 64 * 1024;

/// The tail of an existing log, so that a restarted bridge continues its chain; `None` when the
/// file does not exist or holds no complete line.
///
/// The tail is the last complete line. A last line without its `\n` is a write that a crash cut
/// short: it is skipped (the next append puts a `\n` after it and the verifier reports it as an
/// interrupted write) — unless it is a whole valid line that only lacks the `\n`, which then is the
/// tail, so that its `seq` is not used twice.
///
/// A last complete line that is not a valid record (unreadable, or not matching its own hash) is an
/// error: the chain cannot continue from it, and writes stay refused until someone looks
/// (`collie audit verify` names the line).
pub fn read_tail(path: &Path) -> Result<Option<ChainTail>, AuditError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(AuditError::read(path, err)),
    };
    let (mut lines, terminated) =
        last_lines(&file, 2).map_err(|err| AuditError::read(path, err))?;
    if !terminated {
        if let Some(Ok(parsed)) = lines.pop().map(|fragment| parse_line(&fragment)) {
            return Ok(Some(ChainTail {
                seq: parsed.seq,
                hash: parsed.hash,
            }));
        }
    }
    let Some(last) = lines.pop() else {
        return Ok(None);
    };
    match parse_line(&last) {
        Ok(parsed) => Ok(Some(ChainTail {
            seq: parsed.seq,
            hash: parsed.hash,
        })),
        Err(err) => Err(AuditError::UnreadableTail {
            path: path.to_owned(),
            reason: match err {
                LineError::Unparseable(reason) => reason,
                LineError::Altered { seq } => format!("seq {seq} does not match its hash"),
            },
        }),
    }
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
    let (lines, _) = last_lines(&file, n).map_err(|err| AuditError::read(path, err))?;
    Ok(lines
        .iter()
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect())
}

/// The last `n` lines of `file` without their `\n` (a final fragment without `\n` counts as a
/// line), and whether the file ends in `\n`.
fn last_lines(file: &File, n: usize) -> io::Result<(Vec<Vec<u8>>, bool)> {
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
    while pos > 0 && separators < n {
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

    #[test]
    fn missing_or_empty_file_has_no_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(read_tail(&path).unwrap(), None);
        fs::write(&path, b"").unwrap();
        assert_eq!(read_tail(&path).unwrap(), None);
        fs::write(&path, b"{\"v\":1,").unwrap();
        assert_eq!(read_tail(&path).unwrap(), None);
    }

    #[test]
    fn tail_is_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 5);
        assert_eq!(read_tail(&path).unwrap(), chain.tail());
    }

    #[test]
    fn a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 3);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"v\":1,\"seq\":4,\"ts");
        fs::write(&path, bytes).unwrap();
        assert_eq!(read_tail(&path).unwrap(), chain.tail());
    }

    #[test]
    fn a_whole_line_missing_only_its_newline_is_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let chain = write_log(&path, 3);
        let mut bytes = fs::read(&path).unwrap();
        bytes.pop();
        fs::write(&path, bytes).unwrap();
        assert_eq!(read_tail(&path).unwrap(), chain.tail());
    }

    #[test]
    fn a_bad_last_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        write_log(&path, 2);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, text.replace("\"pane\":1", "\"pane\":9")).unwrap();
        let err = read_tail(&path).unwrap_err();
        assert!(
            err.to_string().contains("seq 2 does not match its hash"),
            "{err}"
        );
        fs::write(&path, "garbage\n").unwrap();
        assert!(matches!(
            read_tail(&path),
            Err(AuditError::UnreadableTail { .. })
        ));
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
                let (got, ends) = last_lines(&file, n).unwrap();
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
