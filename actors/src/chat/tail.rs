//! The bounded read of a transcript: at most [`MAX_TAIL`] bytes, from the cursor or from the
//! end, split into complete lines (a line still being written waits for the next read). A
//! transcript may be many megabytes; it is never read whole.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The most bytes one read takes from a transcript.
pub const MAX_TAIL: u64 = 256 * 1024;

/// One complete line and where it starts in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its first byte's offset.
    pub offset: u64,
    /// The line without its newline.
    pub bytes: Vec<u8>,
}

/// The lines read and the offset just past the last of them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lines {
    /// Complete lines, in order.
    pub lines: Vec<Line>,
    /// Where the next read starts.
    pub end: u64,
}

/// The complete lines of `file` after `from` (a line start handed out before), or its last
/// lines when `from` is `None` or no longer fits — the newest [`MAX_TAIL`] bytes at most.
pub fn read(file: File, from: Option<u64>) -> Lines {
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return Lines::default();
    };
    let floor = len.saturating_sub(MAX_TAIL);
    let (start, aligned) = match from {
        Some(f) if f <= len && f >= floor => (f, true),
        _ => (floor, floor == 0),
    };
    // `start..len` is at most MAX_TAIL bytes: the allocation is bounded before the read.
    let mut buf = vec![0u8; (len - start) as usize];
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], start + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    buf.truncate(got);
    split(&buf, start, aligned)
}

/// `buf` (read from `start`) as complete lines; when not `aligned` on a line start, the first
/// partial line is skipped.
pub fn split(buf: &[u8], start: u64, aligned: bool) -> Lines {
    let mut at = 0;
    if !aligned {
        match buf.iter().position(|b| *b == b'\n') {
            Some(i) => at = i + 1,
            None => {
                return Lines {
                    lines: Vec::new(),
                    end: start,
                }
            }
        }
    }
    let mut lines = Vec::new();
    while let Some(i) = buf[at..].iter().position(|b| *b == b'\n') {
        let line = &buf[at..at + i];
        if !line.iter().all(u8::is_ascii_whitespace) {
            lines.push(Line {
                offset: start + at as u64,
                bytes: line.to_vec(),
            });
        }
        at += i + 1;
    }
    Lines {
        lines,
        end: start + at as u64,
    }
}
