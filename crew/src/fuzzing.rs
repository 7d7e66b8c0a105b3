//! Test-only: the byte strategies every decoder's fuzz test draws from (docs/decisions/0063).
//!
//! A decoder of outside bytes must survive two kinds of input: bytes with no structure at all
//! (`arbitrary`), and a valid encoding damaged the way a broken or hostile peer damages it
//! (`mutated`): cut short, bits flipped, bytes inserted or overwritten, a length prefix or count
//! made huge. The second kind reaches far deeper into a decoder than random bytes do, because
//! most of the input still parses.
//!
//! This one file serves all three crates of the workspace: `collie-actors` and `collie` include it
//! with `#[path]` under `cfg(test)`, so the strategies are written once and no crate needs a
//! feature or a test-support crate for them.

#![allow(dead_code, unreachable_pub)]

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

/// Up to `max` bytes of anything.
pub fn arbitrary(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..=max)
}

/// One damage done to a valid encoding.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Keep only the first bytes (the stream ended early).
    Truncate(Index),
    /// XOR one byte with a non-zero mask.
    Flip(Index, u8),
    /// Overwrite one byte.
    Set(Index, u8),
    /// Insert bytes at a place.
    Insert(Index, Vec<u8>),
    /// Remove a run of bytes.
    Remove(Index, u8),
    /// Write a big-endian `u32` over four bytes (a frame's length prefix, or any count).
    BigU32(Index, u32),
    /// Write bytes that claim a huge length in bincode's varint (`0xfd` then a `u64`).
    HugeVarint(Index, u64),
    /// Duplicate a run of bytes (a repeated field, a doubled frame).
    Repeat(Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), 1u8..=255).prop_map(|(i, m)| Mutation::Flip(i, m)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<Index>(), vec(any::<u8>(), 1..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1u8..16).prop_map(|(i, n)| Mutation::Remove(i, n)),
        (any::<Index>(), big_u32()).prop_map(|(i, n)| Mutation::BigU32(i, n)),
        (any::<Index>(), big_u64()).prop_map(|(i, n)| Mutation::HugeVarint(i, n)),
        (any::<Index>(), 1u8..32).prop_map(|(i, n)| Mutation::Repeat(i, n)),
    ]
}

/// Lengths around the limits that matter: the 16 MiB frame limit and the integer edges.
fn big_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(16 * 1024 * 1024),
        Just(16 * 1024 * 1024 + 1),
        Just(u32::MAX),
        Just(u32::MAX / 2),
        any::<u32>(),
    ]
}

fn big_u64() -> impl Strategy<Value = u64> {
    prop_oneof![Just(u64::MAX), Just(1 << 40), Just(1 << 32), any::<u64>()]
}

impl Mutation {
    /// Applies this damage to `bytes`.
    pub fn apply(&self, bytes: &mut Vec<u8>) {
        let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len) };
        match self {
            Mutation::Truncate(i) => {
                let keep = at(i, bytes.len());
                bytes.truncate(keep);
            }
            Mutation::Flip(i, m) if !bytes.is_empty() => {
                let p = at(i, bytes.len());
                bytes[p] ^= m;
            }
            Mutation::Set(i, b) if !bytes.is_empty() => {
                let p = at(i, bytes.len());
                bytes[p] = *b;
            }
            Mutation::Insert(i, b) => {
                let p = at(i, bytes.len() + 1);
                bytes.splice(p..p, b.iter().copied());
            }
            Mutation::Remove(i, n) if !bytes.is_empty() => {
                let p = at(i, bytes.len());
                let end = (p + usize::from(*n)).min(bytes.len());
                bytes.drain(p..end);
            }
            Mutation::BigU32(i, n) => {
                let p = at(i, bytes.len() + 1).min(bytes.len().saturating_sub(4));
                let end = (p + 4).min(bytes.len());
                bytes.splice(p..end, n.to_be_bytes());
            }
            Mutation::HugeVarint(i, n) => {
                let p = at(i, bytes.len() + 1);
                let mut claim = vec![0xfd];
                claim.extend_from_slice(&n.to_le_bytes());
                bytes.splice(p..p, claim);
            }
            Mutation::Repeat(i, n) if !bytes.is_empty() => {
                let p = at(i, bytes.len());
                let end = (p + usize::from(*n)).min(bytes.len());
                let run = bytes[p..end].to_vec();
                bytes.splice(end..end, run);
            }
            _ => {}
        }
    }
}

/// `valid` with one to four mutations applied.
pub fn mutated(valid: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    vec(mutation(), 1..=4).prop_map(move |ms| {
        let mut bytes = valid.clone();
        for m in &ms {
            m.apply(&mut bytes);
        }
        bytes
    })
}

/// Like [`mutated`], for a strategy of valid encodings.
pub fn mutated_from<S: Strategy<Value = Vec<u8>>>(valid: S) -> impl Strategy<Value = Vec<u8>> {
    (valid, vec(mutation(), 1..=4)).prop_map(|(mut bytes, ms)| {
        for m in &ms {
            m.apply(&mut bytes);
        }
        bytes
    })
}

/// Text for decoders of text: mutated bytes, read as UTF-8 where they are (lossily otherwise).
pub fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
