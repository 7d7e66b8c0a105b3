//! A bounded ring of a hosted pane's raw output bytes (SPEC §5: at most 2 MiB per pane).
//!
//! The pty reader pushes every chunk it reads; the ring keeps only the newest `capacity` bytes.
//! Memory grows with use up to the capacity and never past it: an idle pane costs little, and a
//! busy one costs exactly its capacity once the ring has filled. The global buffer cap counts the
//! ring by [`RawRing::allocated_bytes`] (what is really allocated), which never exceeds
//! [`RawRing::capacity`]. The module is pure: no I/O, no clock.

/// The default ring size, 2 MiB (SPEC §5).
pub const DEFAULT_RING_BYTES: usize = 2 * 1024 * 1024;

/// The smallest step the backing buffer grows by, so many tiny pushes do not reallocate often.
const MIN_GROWTH: usize = 4096;

/// A bounded byte ring that keeps the newest `capacity` bytes pushed into it.
#[derive(Debug, Clone)]
pub struct RawRing {
    /// The stored bytes. While not full they sit in order from index 0; once full
    /// (`buf.len() == capacity`) the oldest byte is at `start`.
    buf: Vec<u8>,
    /// Index of the oldest byte once the ring is full; 0 before.
    start: usize,
    /// The most bytes kept.
    capacity: usize,
    /// Every byte ever pushed, kept or not.
    total_written: u64,
}

impl Default for RawRing {
    fn default() -> Self {
        RawRing::new(DEFAULT_RING_BYTES)
    }
}

impl RawRing {
    /// An empty ring that will keep at most `capacity` bytes. Nothing is allocated until the first
    /// push; a capacity of 0 keeps nothing (but still counts [`RawRing::total_written`]).
    pub fn new(capacity: usize) -> RawRing {
        RawRing {
            buf: Vec::new(),
            start: 0,
            capacity,
            total_written: 0,
        }
    }

    /// Appends `bytes`, dropping the oldest bytes past the capacity.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total_written = self.total_written.saturating_add(bytes.len() as u64);
        let cap = self.capacity;
        if cap == 0 || bytes.is_empty() {
            return;
        }
        // Only the last `cap` bytes of a large chunk can survive.
        let mut bytes = &bytes[bytes.len().saturating_sub(cap)..];

        if self.buf.len() < cap {
            let take = bytes.len().min(cap - self.buf.len());
            self.grow_for(self.buf.len() + take);
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }

        // Full: overwrite the oldest bytes in place, wrapping at the end.
        let first = bytes.len().min(cap - self.start);
        self.buf[self.start..self.start + first].copy_from_slice(&bytes[..first]);
        let rest = bytes.len() - first;
        self.buf[..rest].copy_from_slice(&bytes[first..]);
        self.start = (self.start + bytes.len()) % cap;
    }

    /// Makes room for `needed` bytes, growing geometrically but never past the capacity.
    fn grow_for(&mut self, needed: usize) {
        if needed <= self.buf.capacity() {
            return;
        }
        let target = needed
            .max(self.buf.capacity().saturating_mul(2))
            .max(MIN_GROWTH)
            .min(self.capacity);
        self.buf.reserve_exact(target - self.buf.len());
    }

    /// How many bytes the ring holds now (at most [`RawRing::capacity`]).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the ring holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The most bytes the ring keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of memory the ring has allocated for its contents; never more than the capacity.
    pub fn allocated_bytes(&self) -> usize {
        self.buf.capacity().min(self.capacity)
    }

    /// The kept bytes, oldest first.
    pub fn contents(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buf.len());
        out.extend_from_slice(&self.buf[self.start..]);
        out.extend_from_slice(&self.buf[..self.start]);
        out
    }

    /// How many bytes were ever pushed, including those already dropped.
    pub fn total_written(&self) -> u64 {
        self.total_written
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn keeps_everything_below_capacity() {
        let mut ring = RawRing::new(10);
        assert!(ring.is_empty());
        ring.push(b"abc");
        ring.push(b"");
        ring.push(b"def");
        assert_eq!(ring.contents(), b"abcdef");
        assert_eq!(ring.len(), 6);
        assert_eq!(ring.total_written(), 6);
    }

    #[test]
    fn drops_oldest_past_capacity() {
        let mut ring = RawRing::new(5);
        ring.push(b"abcd");
        ring.push(b"efg");
        assert_eq!(ring.contents(), b"cdefg");
        ring.push(b"h");
        assert_eq!(ring.contents(), b"defgh");
        ring.push(b"0123456789");
        assert_eq!(ring.contents(), b"56789");
        assert_eq!(ring.len(), 5);
        assert_eq!(ring.total_written(), 18);
    }

    #[test]
    fn zero_capacity_keeps_nothing_but_counts() {
        let mut ring = RawRing::new(0);
        ring.push(b"abc");
        assert!(ring.contents().is_empty());
        assert_eq!(ring.total_written(), 3);
        assert_eq!(ring.allocated_bytes(), 0);
    }

    #[test]
    fn default_is_two_mib_and_allocates_lazily() {
        let ring = RawRing::default();
        assert_eq!(ring.capacity(), 2 * 1024 * 1024);
        assert_eq!(ring.allocated_bytes(), 0);
    }

    #[test]
    fn memory_never_exceeds_capacity_after_a_flood() {
        let cap = 100_000;
        let mut ring = RawRing::new(cap);
        let chunk = vec![b'a'; 4093];
        for _ in 0..1000 {
            ring.push(&chunk);
            assert!(ring.allocated_bytes() <= cap);
        }
        assert_eq!(ring.len(), cap);
        assert_eq!(ring.allocated_bytes(), cap);
        assert_eq!(ring.total_written(), 4093 * 1000);
    }

    #[test]
    fn small_pushes_stay_small() {
        let mut ring = RawRing::default();
        ring.push(b"hello");
        assert!(ring.allocated_bytes() <= MIN_GROWTH);
    }

    proptest! {
        #[test]
        fn matches_a_naive_model(
            cap in 0..64usize,
            pushes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..40),
        ) {
            let mut ring = RawRing::new(cap);
            let mut model: Vec<u8> = Vec::new();
            for push in &pushes {
                ring.push(push);
                model.extend_from_slice(push);
                let kept = &model[model.len().saturating_sub(cap)..];
                prop_assert_eq!(ring.contents(), kept.to_vec());
                prop_assert_eq!(ring.len(), kept.len());
                prop_assert_eq!(ring.total_written(), model.len() as u64);
                prop_assert!(ring.allocated_bytes() <= cap);
            }
        }
    }
}
