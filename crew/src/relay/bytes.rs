//! A byte buffer on the wire as one length-prefixed run of bytes (serde's `bytes`), rather than
//! a sequence of `u8` elements: the codec then copies a 10 MiB upload in one piece instead of
//! ten million calls. The length is checked against the frame's limit before anything is
//! allocated, as for every buffer (`crate::wire`), and a buffer past one upload's cap does not
//! decode.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

/// Serializes `bytes` as serde bytes.
pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

/// Deserializes serde bytes (or, from a self-describing format, a sequence of `u8`).
pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_byte_buf(Bytes)
}

struct Bytes;

impl<'de> Visitor<'de> for Bytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bytes")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        within_cap(v.len())?;
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        within_cap(v.len())?;
        Ok(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        // Only a self-describing format takes this path; the hint is capped so that a claimed
        // length allocates no more than one upload.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(super::MAX_BLOB));
        while let Some(b) = seq.next_element::<u8>()? {
            within_cap(out.len() + 1)?;
            out.push(b);
        }
        Ok(out)
    }
}

/// Refuses more than one upload's bytes: a frame may hold 16 MiB, an upload only
/// [`super::MAX_BLOB`], so a request past it does not decode (the member never sees it).
fn within_cap<E: de::Error>(len: usize) -> Result<(), E> {
    if len > super::MAX_BLOB {
        return Err(E::invalid_length(len, &"at most 10 MiB"));
    }
    Ok(())
}
