//! A session's output ring: the newest `cap` bytes of what the process wrote, addressed by a byte
//! cursor that counts from the session's first byte, so a reader learns how much it missed.

use std::collections::VecDeque;

/// Bytes in arrival order, at most `cap` of them. Memory grows with the output up to `cap` and
/// never past it.
#[derive(Debug)]
pub(crate) struct Ring {
    cap: usize,
    bytes: VecDeque<u8>,
    /// Every byte ever written (the cursor of the next byte).
    total: u64,
}

/// A slice of the ring.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    /// The bytes, cut before an incomplete UTF-8 sequence at the end (the next read gets it
    /// whole).
    pub(crate) text: String,
    /// Where this slice starts (past `offset` when older bytes were dropped).
    pub(crate) offset: u64,
    /// The cursor to pass next time.
    pub(crate) next_offset: u64,
    /// Bytes between the asked `offset` and `offset` above: dropped from the ring before anyone
    /// read them.
    pub(crate) dropped: u64,
}

impl Ring {
    pub(crate) fn new(cap: usize) -> Ring {
        Ring {
            cap,
            bytes: VecDeque::new(),
            total: 0,
        }
    }

    /// Appends `data`, dropping the oldest bytes past the cap.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let keep = if data.len() > self.cap {
            &data[data.len() - self.cap..]
        } else {
            data
        };
        let over = (self.bytes.len() + keep.len()).saturating_sub(self.cap);
        self.bytes.drain(..over);
        self.bytes.extend(keep);
    }

    /// The bytes held now.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The cursor after the last byte written.
    pub(crate) fn end(&self) -> u64 {
        self.total
    }

    /// The cursor of the oldest byte still held.
    fn start(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    /// Up to `max` bytes from `offset`; `None` when `offset` lies past the end.
    pub(crate) fn read(&self, offset: u64, max: usize) -> Option<Slice> {
        if offset > self.total {
            return None;
        }
        let from = offset.max(self.start());
        let skip = usize::try_from(from - self.start()).unwrap_or(usize::MAX);
        let raw: Vec<u8> = self.bytes.iter().skip(skip).take(max).copied().collect();
        let (text, used) = match std::str::from_utf8(&raw) {
            Ok(text) => (text.to_owned(), raw.len()),
            // An incomplete sequence at the very end: hold it back for the next read.
            Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => (
                String::from_utf8_lossy(&raw[..e.valid_up_to()]).into_owned(),
                e.valid_up_to(),
            ),
            // Not UTF-8: shown with replacement characters; the cursor still counts bytes.
            Err(_) => (String::from_utf8_lossy(&raw).into_owned(), raw.len()),
        };
        Some(Slice {
            text,
            offset: from,
            next_offset: from + used as u64,
            dropped: from - offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_and_counts_the_dropped() {
        let mut r = Ring::new(4);
        r.push(b"abc");
        r.push(b"def");
        assert_eq!(r.len(), 4);
        assert_eq!(r.end(), 6);
        let s = r.read(0, 100).expect("offset 0 is inside");
        assert_eq!(s.text, "cdef");
        assert_eq!(s.dropped, 2);
        assert_eq!((s.offset, s.next_offset), (2, 6));
        let s = r.read(5, 100).expect("inside");
        assert_eq!((s.text.as_str(), s.dropped, s.next_offset), ("f", 0, 6));
        assert_eq!(r.read(6, 10).map(|s| s.text), Some(String::new()));
        assert_eq!(r.read(7, 10), None);
    }

    #[test]
    fn a_write_larger_than_the_ring_keeps_its_tail() {
        let mut r = Ring::new(3);
        r.push(b"0123456789");
        assert_eq!(r.len(), 3);
        assert_eq!(r.read(0, 10).map(|s| s.text), Some("789".to_owned()));
    }

    #[test]
    fn an_incomplete_character_waits_for_the_next_read() {
        let mut r = Ring::new(16);
        let e = "é".as_bytes();
        r.push(b"a");
        r.push(&e[..1]);
        let s = r.read(0, 16).expect("inside");
        assert_eq!((s.text.as_str(), s.next_offset), ("a", 1));
        r.push(&e[1..]);
        let s = r.read(s.next_offset, 16).expect("inside");
        assert_eq!((s.text.as_str(), s.next_offset), ("é", 3));
    }

    #[test]
    fn max_bounds_the_slice() {
        let mut r = Ring::new(16);
        r.push(b"hello world");
        let s = r.read(0, 5).expect("inside");
        assert_eq!((s.text.as_str(), s.next_offset), ("hello", 5));
    }
}
