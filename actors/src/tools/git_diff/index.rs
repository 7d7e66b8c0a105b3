//! A reader for git's index file (`.git/index`, versions 2 to 4), pure: bytes in, entries out.
//!
//! Why read it ourselves: every git command that loads the index also honours the repository's
//! `core.fsmonitor`, a program the repository names (SPEC §11 lets a `read` device call
//! `git_diff`, and the repository is the attacker's). Reading the file in Rust gives the two
//! things `git_diff` wants from it without running anything: which paths are staged (a new file
//! `git add`ed is "added", not "untracked"; a sparse checkout's absent files are not "deleted"),
//! and each file's recorded size and times, so an unchanged file is recognised without reading it.
//!
//! A file this reader does not understand (a split index, an unknown version, a truncated or
//! corrupt file) is an error, and the caller then does without the index: slower, never wrong.

use std::collections::HashMap;

/// An index entry's stat data and object, as git recorded them when it last saw the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// The raw object id.
    pub(super) oid: Vec<u8>,
    /// `ctime` seconds and nanoseconds (truncated to 32 bits, as git stores them).
    pub(super) ctime: (u32, u32),
    /// `mtime` seconds and nanoseconds.
    pub(super) mtime: (u32, u32),
    /// The inode number, truncated to 32 bits.
    pub(super) ino: u32,
    /// The mode (`0o100644`, `0o100755`, `0o120000`, `0o160000`).
    pub(super) mode: u32,
    /// The size, truncated to 32 bits.
    pub(super) size: u32,
    /// The merge stage: 0 normally, 1–3 for a conflict.
    pub(super) stage: u8,
    /// `skip-worktree`: a sparse checkout keeps this file out of the working tree on purpose.
    pub(super) skip_worktree: bool,
}

/// Why the index was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(super) enum IndexError {
    /// Not an index file, or cut short.
    #[error("index corrupt at byte {0}")]
    Corrupt(usize),
    /// A version this reader does not know.
    #[error("index version {0} not supported")]
    Version(u32),
    /// A split index (`link` extension) or sparse index (`sdir`): the entries here are not all of
    /// them.
    #[error("index extension {0} not supported")]
    Extension(String),
}

/// The entries by path (a conflicted path keeps its last stage's entry).
pub(super) type Index = HashMap<Vec<u8>, Entry>;

/// Fixed stat fields before the object id: ctime, mtime (2 × 2 × u32), dev, ino, mode, uid, gid,
/// size (6 × u32).
const STAT_LEN: usize = 40;

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(IndexError::Corrupt(self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, IndexError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, IndexError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Bytes up to (not including) the next NUL, which is consumed.
    fn until_nul(&mut self) -> Result<&'a [u8], IndexError> {
        let rest = &self.bytes[self.at..];
        let n = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(IndexError::Corrupt(self.at))?;
        let s = &rest[..n];
        self.at += n + 1;
        Ok(s)
    }

    /// Git's offset varint (index v4's prefix length): each continuation adds one before the
    /// shift, so every number has exactly one encoding.
    fn varint(&mut self) -> Result<usize, IndexError> {
        let start = self.at;
        let mut c = self.take(1)?[0];
        let mut v = usize::from(c & 0x7f);
        while c & 0x80 != 0 {
            c = self.take(1)?[0];
            v = v
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .map(|v| v + usize::from(c & 0x7f))
                .ok_or(IndexError::Corrupt(start))?;
        }
        Ok(v)
    }
}

/// Reads an index file's entries. `oid_len` is the repository's raw object id length (20 or 32).
pub(super) fn parse(bytes: &[u8], oid_len: usize) -> Result<Index, IndexError> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(4)? != b"DIRC" {
        return Err(IndexError::Corrupt(0));
    }
    let version = c.u32()?;
    if !(2..=4).contains(&version) {
        return Err(IndexError::Version(version));
    }
    let count = c.u32()? as usize;
    // The count comes from the file: never reserve more than its bytes could hold.
    let mut index = Index::with_capacity(count.min(bytes.len() / (STAT_LEN + oid_len + 2)));
    let mut path: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = c.at;
        let ctime = (c.u32()?, c.u32()?);
        let mtime = (c.u32()?, c.u32()?);
        let _dev = c.u32()?;
        let ino = c.u32()?;
        let mode = c.u32()?;
        let _uid = c.u32()?;
        let _gid = c.u32()?;
        let size = c.u32()?;
        let oid = c.take(oid_len)?.to_vec();
        let flags = c.u16()?;
        let extended = flags & 0x4000 != 0;
        if extended && version < 3 {
            return Err(IndexError::Corrupt(start));
        }
        let ext_flags = if extended { c.u16()? } else { 0 };
        if version == 4 {
            let strip = c.varint()?;
            if strip > path.len() {
                return Err(IndexError::Corrupt(start));
            }
            path.truncate(path.len() - strip);
            path.extend_from_slice(c.until_nul()?);
        } else {
            path.clear();
            path.extend_from_slice(c.until_nul()?);
            // Entries are padded with NULs to a multiple of 8 bytes; the NUL ending the path is
            // the first of them.
            let len = c.at - start;
            let padded = (len + 7) & !7;
            c.take(padded - len)?;
        }
        // A sparse index stores whole folders as entries (mode 040000): not something this
        // reader can answer for files.
        if mode & 0o170000 == 0o040000 {
            return Err(IndexError::Extension("sdir".into()));
        }
        index.insert(
            path.clone(),
            Entry {
                oid,
                ctime,
                mtime,
                ino,
                mode,
                size,
                stage: ((flags >> 12) & 0x3) as u8,
                skip_worktree: ext_flags & 0x4000 != 0,
            },
        );
    }
    // Extensions follow until the trailing checksum; one of them makes this list partial.
    while bytes.len().saturating_sub(c.at) > oid_len {
        let sig = c.take(4)?;
        let len = c.u32()? as usize;
        if sig == b"link" || sig == b"sdir" {
            return Err(IndexError::Extension(String::from_utf8_lossy(sig).into()));
        }
        c.take(len)?;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// One entry as git writes it, for the versions without prefix compression.
    fn entry_v2(path: &[u8], size: u32, flags_extra: u16, ext: Option<u16>) -> Vec<u8> {
        let mut e = Vec::new();
        for v in [1u32, 2, 3, 4, 0, 77, 0o100644, 0, 0, size] {
            e.extend_from_slice(&v.to_be_bytes());
        }
        e.extend_from_slice(&[0xab; 20]);
        let flags =
            (path.len().min(0xfff) as u16) | flags_extra | if ext.is_some() { 0x4000 } else { 0 };
        e.extend_from_slice(&flags.to_be_bytes());
        if let Some(x) = ext {
            e.extend_from_slice(&x.to_be_bytes());
        }
        e.extend_from_slice(path);
        let padded = (e.len() + 8) & !7;
        e.resize(padded, 0);
        e
    }

    fn file(version: u32, entries: &[Vec<u8>]) -> Vec<u8> {
        let mut f = b"DIRC".to_vec();
        f.extend_from_slice(&version.to_be_bytes());
        f.extend_from_slice(&(entries.len() as u32).to_be_bytes());
        for e in entries {
            f.extend_from_slice(e);
        }
        f.extend_from_slice(&[0; 20]);
        f
    }

    #[test]
    fn reads_v2_and_v3_entries() {
        let f = file(
            2,
            &[
                entry_v2(b"a.txt", 5, 0, None),
                entry_v2(b"dir/b", 9, 0x2000, None),
            ],
        );
        let ix = parse(&f, 20).expect("parses");
        assert_eq!(ix.len(), 2);
        let a = &ix[&b"a.txt".to_vec()];
        assert_eq!(
            (a.ctime, a.mtime, a.ino, a.size, a.stage),
            ((1, 2), (3, 4), 77, 5, 0)
        );
        assert_eq!(ix[&b"dir/b".to_vec()].stage, 2);

        let f = file(3, &[entry_v2(b"sparse", 1, 0, Some(0x4000))]);
        assert!(parse(&f, 20).expect("parses")[&b"sparse".to_vec()].skip_worktree);
    }

    #[test]
    fn refuses_what_it_cannot_read_whole() {
        assert_eq!(parse(b"DIRX", 20), Err(IndexError::Corrupt(0)));
        let mut v5 = file(2, &[]);
        v5[7] = 5;
        assert_eq!(parse(&v5, 20), Err(IndexError::Version(5)));
        // Claims a million entries in a few bytes: an error, not an allocation.
        let mut many = file(2, &[entry_v2(b"x", 1, 0, None)]);
        many[8..12].copy_from_slice(&1_000_000u32.to_be_bytes());
        assert!(matches!(parse(&many, 20), Err(IndexError::Corrupt(_))));
        let mut split = file(2, &[]);
        let at = split.len() - 20;
        split.splice(at..at, b"link\0\0\0\0".iter().copied());
        assert_eq!(parse(&split, 20), Err(IndexError::Extension("link".into())));
    }

    #[test]
    fn a_cut_file_never_panics() {
        let f = file(
            2,
            &[
                entry_v2(b"a.txt", 5, 0, None),
                entry_v2(b"b.txt", 9, 0, None),
            ],
        );
        for n in 0..f.len() - 20 {
            let _ = parse(&f[..n], 20);
        }
    }

    #[test]
    fn varints_are_gits() {
        let read = |b: &[u8]| Cursor { bytes: b, at: 0 }.varint();
        assert_eq!(read(&[0x05]), Ok(5));
        assert_eq!(read(&[0x80, 0x00]), Ok(128));
        assert_eq!(read(&[0x80, 0x01]), Ok(129));
        assert!(read(&[0xff; 20]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// A repository's index is outside bytes (a cloned repository may carry any): arbitrary
        /// bytes and damaged real files read or are refused, never panic, and never reserve
        /// more entries than the bytes could hold (decision 0063).
        #[test]
        fn damaged_index_files_read_or_are_refused(
            bytes in prop_oneof![
                crate::fuzzing::arbitrary(256),
                crate::fuzzing::mutated(file(
                    2,
                    &[entry_v2(b"a.txt", 5, 0, None), entry_v2(b"src/b.rs", 9, 0, None)],
                )),
                crate::fuzzing::mutated(file(3, &[entry_v2(b"c", 1, 0, Some(0x4000))])),
            ],
            oid_len in prop_oneof![Just(20usize), Just(32usize)],
        ) {
            if let Ok(index) = parse(&bytes, oid_len) {
                prop_assert!(index.len() <= bytes.len() / (STAT_LEN + oid_len + 2) + 1);
            }
        }
    }
}
