//! The pure part of a file's diff: is it text, what is its git object id, and its unified hunks
//! with the lines added and removed. No I/O and no clock: the caller passes the deadline.

use std::fmt::Write as _;
use std::time::Instant;

use sha1::Digest as _;
use similar::{ChangeTag, TextDiff};

/// How many leading bytes decide whether a file is binary — git's own rule: a NUL byte in the
/// first 8,000 bytes makes a file binary (no text diff is shown for it).
const BINARY_PROBE: usize = 8_000;

/// Whether `bytes` count as binary for a diff.
pub(super) fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_PROBE)].contains(&0)
}

/// The hash a repository names its objects with (`extensions.objectFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ObjectFormat {
    /// SHA-1, 40 hex digits (every repository unless made with `--object-format=sha256`).
    Sha1,
    /// SHA-256, 64 hex digits.
    Sha256,
}

impl ObjectFormat {
    /// The format `git rev-parse --show-object-format` names.
    pub(super) fn parse(name: &str) -> Option<ObjectFormat> {
        match name {
            "sha1" => Some(ObjectFormat::Sha1),
            "sha256" => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }

    /// The raw length of an object id, in bytes.
    pub(super) fn raw_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 20,
            ObjectFormat::Sha256 => 32,
        }
    }
}

/// A running git blob id: the hash of `"blob <len>\0"` followed by the content. Matching a working
/// file to its HEAD blob this way reads the file once and never asks git to (git would apply the
/// repository's filters, which are programs the repository names).
pub(super) enum BlobHasher {
    /// For SHA-1 repositories.
    Sha1(sha1::Sha1),
    /// For SHA-256 repositories.
    Sha256(sha2::Sha256),
}

impl BlobHasher {
    /// A hasher for a blob of `len` bytes.
    pub(super) fn new(format: ObjectFormat, len: u64) -> BlobHasher {
        let header = format!("blob {len}\0");
        match format {
            ObjectFormat::Sha1 => {
                let mut h = sha1::Sha1::new();
                h.update(header.as_bytes());
                BlobHasher::Sha1(h)
            }
            ObjectFormat::Sha256 => {
                let mut h = sha2::Sha256::new();
                h.update(header.as_bytes());
                BlobHasher::Sha256(h)
            }
        }
    }

    /// Feeds the next bytes of the content.
    pub(super) fn update(&mut self, bytes: &[u8]) {
        match self {
            BlobHasher::Sha1(h) => h.update(bytes),
            BlobHasher::Sha256(h) => h.update(bytes),
        }
    }

    /// The object id in lowercase hex, as `git ls-tree` prints it.
    pub(super) fn hex(self) -> String {
        match self {
            BlobHasher::Sha1(h) => hex::encode(h.finalize()),
            BlobHasher::Sha256(h) => hex::encode(h.finalize()),
        }
    }
}

/// The blob id of `bytes`.
pub(super) fn blob_id(format: ObjectFormat, bytes: &[u8]) -> String {
    let mut h = BlobHasher::new(format, bytes.len() as u64);
    h.update(bytes);
    h.hex()
}

/// A file's text diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hunks {
    /// The unified hunks (`@@ -a,b +c,d @@` and their lines), as many whole hunks as fit the
    /// budget.
    pub(super) text: String,
    /// Lines added.
    pub(super) added: u64,
    /// Lines removed.
    pub(super) removed: u64,
    /// Whether hunks were left out for the budget.
    pub(super) cut: bool,
}

/// Diffs `old` against `new` line by line with `context` lines around each change. At most
/// `budget` bytes of hunk text are kept (whole hunks only); the counts cover every change. Past
/// `deadline` the diff algorithm gives up on a minimal diff and answers a coarser but correct one.
pub(super) fn hunks(
    old: &str,
    new: &str,
    context: usize,
    budget: usize,
    deadline: Instant,
) -> Hunks {
    let diff = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new);
    let (mut added, mut removed) = (0u64, 0u64);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let mut text = String::new();
    let mut cut = false;
    let mut piece = String::new();
    for hunk in diff.unified_diff().context_radius(context).iter_hunks() {
        piece.clear();
        // Writing to a String cannot fail.
        let _ = write!(piece, "{hunk}");
        if text.len() + piece.len() > budget {
            cut = true;
            break;
        }
        text.push_str(&piece);
    }
    Hunks {
        text,
        added,
        removed,
        cut,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn a_nul_early_makes_binary_a_nul_late_does_not() {
        assert!(is_binary(b"PK\x03\x04\0\0"));
        assert!(!is_binary(b"plain text\n"));
        let mut late = vec![b'a'; BINARY_PROBE];
        late.push(0);
        assert!(!is_binary(&late));
    }

    /// The ids git itself gives these contents (`git hash-object`), so a changed hashing scheme
    /// shows up here and not as every file reported modified.
    #[test]
    fn blob_ids_are_gits() {
        assert_eq!(
            blob_id(ObjectFormat::Sha1, b""),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            blob_id(ObjectFormat::Sha1, b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            blob_id(ObjectFormat::Sha256, b""),
            "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
        );
    }

    #[test]
    fn hunks_count_and_render() {
        let h = hunks("a\nb\nc\n", "a\nB\nc\nd\n", 3, usize::MAX, later());
        assert_eq!((h.added, h.removed, h.cut), (2, 1, false));
        assert_eq!(h.text, "@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n");
    }

    #[test]
    fn a_missing_final_newline_is_said() {
        let h = hunks("a\n", "a", 3, usize::MAX, later());
        assert_eq!(
            h.text,
            "@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn the_budget_keeps_whole_hunks_and_all_counts() {
        let old: String = (0..100).map(|i| format!("{i}\n")).collect();
        let new = old.replace("10\n", "ten\n").replace("90\n", "ninety\n");
        let all = hunks(&old, &new, 1, usize::MAX, later());
        assert_eq!(all.text.matches("@@ -").count(), 2);
        let first_len = all.text.rfind("@@ -").expect("a second hunk");
        let cut = hunks(&old, &new, 1, first_len, later());
        assert_eq!(cut.text, all.text[..first_len]);
        assert!(cut.cut);
        assert_eq!((cut.added, cut.removed), (2, 2));
        assert_eq!(hunks(&old, &new, 1, 3, later()).text, "");
    }
}
