//! A search's results: a buffer bounded by count and by bytes. Once either cap is reached the
//! buffer refuses more and the search stops collecting — memory never grows past the caps.

use super::args::SearchHit;

/// The results of one search.
#[derive(Debug)]
pub(crate) struct Results {
    hits: Vec<SearchHit>,
    bytes: usize,
    max_count: usize,
    max_bytes: usize,
    full: bool,
}

impl Results {
    pub(crate) fn new(max_count: usize, max_bytes: usize) -> Results {
        Results {
            hits: Vec::new(),
            bytes: 0,
            max_count,
            max_bytes,
            full: false,
        }
    }

    /// Adds as many of `hits` as fit, in order. Answers false once the buffer is full (the
    /// search should stop); a hit that would pass the byte cap is dropped, not cut.
    pub(crate) fn extend(&mut self, hits: impl IntoIterator<Item = SearchHit>) -> bool {
        for hit in hits {
            if self.full {
                break;
            }
            let weight = hit.weight();
            if self.hits.len() >= self.max_count || self.bytes + weight > self.max_bytes {
                self.full = true;
                break;
            }
            self.bytes += weight;
            self.hits.push(hit);
            if self.hits.len() >= self.max_count {
                self.full = true;
            }
        }
        !self.full
    }

    /// Room left, in results.
    pub(crate) fn room(&self) -> usize {
        if self.full {
            0
        } else {
            self.max_count - self.hits.len()
        }
    }

    #[cfg(test)]
    pub(crate) fn is_full(&self) -> bool {
        self.full
    }

    pub(crate) fn len(&self) -> usize {
        self.hits.len()
    }

    /// Bytes held (paths and lines).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The page `[offset, offset + length)`; a negative offset counts from the end.
    pub(crate) fn page(&self, offset: i64, length: usize) -> (usize, Vec<SearchHit>) {
        let total = self.hits.len();
        let start = if offset < 0 {
            let back = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            total.saturating_sub(back)
        } else {
            usize::try_from(offset).unwrap_or(usize::MAX).min(total)
        };
        let end = start.saturating_add(length).min(total);
        (start, self.hits[start..end].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(n: usize, len: usize) -> SearchHit {
        SearchHit {
            file: format!("/w/{n:0len$}", len = len.max(1)),
            line: Some(1),
            text: None,
            before: vec![],
            after: vec![],
        }
    }

    #[test]
    fn stops_at_the_count_cap() {
        let mut r = Results::new(3, 1 << 20);
        assert!(r.extend((0..2).map(|n| hit(n, 4))));
        assert!(!r.extend((2..10).map(|n| hit(n, 4))));
        assert_eq!(r.len(), 3);
        assert!(!r.extend([hit(11, 4)]));
        assert_eq!(r.len(), 3);
        assert_eq!(r.room(), 0);
    }

    #[test]
    fn never_holds_more_bytes_than_the_cap() {
        let mut r = Results::new(1_000, 100);
        assert!(!r.extend((0..1_000).map(|n| hit(n, 20))));
        assert!(r.bytes() <= 100, "{}", r.bytes());
        assert!(r.is_full());
    }

    #[test]
    fn pages_from_the_start_and_from_the_end() {
        let mut r = Results::new(10, 1 << 20);
        r.extend((0..5).map(|n| hit(n, 1)));
        let (start, page) = r.page(1, 2);
        assert_eq!((start, page.len()), (1, 2));
        assert_eq!(page[0].file, "/w/1");
        let (start, page) = r.page(-2, 100);
        assert_eq!((start, page.len()), (3, 2));
        assert_eq!(r.page(99, 5).1.len(), 0);
        assert_eq!(r.page(i64::MIN, 1).0, 0);
    }
}
