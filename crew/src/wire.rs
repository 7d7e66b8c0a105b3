//! The crew wire codec: length-prefixed frames carrying serde values, the only module that names
//! bincode (docs/decisions/0008-bincode-behind-one-module.md).
//!
//! **Frame.** A `u32` big-endian payload length, then that many bytes of payload. The payload
//! length may be at most [`MAX_FRAME`] (16 MiB); a larger prefix is refused before anything is allocated
//! for it, and the bytes of a frame are read only as they arrive, so a peer that announces 16 MiB
//! and sends ten bytes costs ten bytes (plus a small read buffer), not 16 MiB.
//!
//! **Payload.** bincode 2 through its serde layer with one fixed configuration (`config`):
//! `standard()` — little-endian, *variable-length* integers (small ids, lengths and enum indexes
//! take one byte; the frame limit, not the integer width, bounds sizes) — plus a decode limit of
//! [`MAX_FRAME`] bytes. bincode claims the length of every string, byte buffer and container
//! against that limit, and an adapter between bincode and the types (`bounded`) makes a lying
//! length cost nothing: strings and byte buffers are read borrowed, so bincode checks that their
//! bytes are in the payload before anything is allocated, and a list's or map's size hint (which
//! serde reserves room by) is capped at the payload's length (measured in
//! `tests/decoder_limits.rs`, decision 0063). The budget counts integers at their in-memory width (a
//! one-byte varint `u64` counts 8), so it bounds the decoded value's size, not the payload's: a
//! frame near 16 MiB made mostly of small integers would be refused. Crew messages are mostly text,
//! whose bytes count once. Encoding writes into a buffer that refuses to grow past the limit, so a
//! value too large to send is refused without building it whole.
//!
//! **Versioning.** bincode is not self-describing, so "unknown fields are ignored" (SPEC §8) holds
//! only where the format allows it, and the protocol is built around that:
//! - the hello carries a `protocol` number ([`crate::hello::Hello`]); any change a peer of the
//!   previous version could not read bumps it, and the lead refuses versions it does not speak;
//! - [`decode`] ignores trailing bytes, so within one protocol version a newer peer may append
//!   fields at the *end* of a top-level message (after the last field of the outermost struct)
//!   and an older peer still reads the fields it knows;
//! - enums a newer peer may extend (capabilities, request kinds) end in a unit `Unknown` variant
//!   marked `#[serde(other)]`: an index this side does not know decodes as `Unknown`. When that
//!   enum is the last field of the message the rest of the frame is ignored with it, so a newer
//!   request kind is answered with an error instead of closing the stream.
//!
//! **Errors** are per stream: [`read_frame`] and [`FrameDecoder`] report a malformed or oversized
//! frame as a [`WireError`]; the caller closes that stream (never the bridge).

use std::io;

use bincode::config::{Configuration, Limit, LittleEndian, Varint};
use bincode::enc::write::Writer;
use bincode::error::{DecodeError, EncodeError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

mod bounded;

/// The largest payload a frame may carry, in bytes (SPEC §8: 16 MiB).
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Bytes of the length prefix in front of every payload.
pub const FRAME_HEADER: usize = 4;

/// The most a [`FrameDecoder`] ever holds: the rest of one frame of the largest size plus one more
/// whole frame. A caller that pops every complete frame after each push and pushes at most one
/// frame's worth at a time never reaches it.
pub const MAX_BUFFERED: usize = 2 * (FRAME_HEADER + MAX_FRAME);

/// The first allocation for a frame being read from a stream; it grows only as bytes arrive.
const READ_CHUNK: usize = 64 * 1024;

/// The one bincode configuration of the crew protocol: standard (little-endian, varint) with a
/// decode limit of [`MAX_FRAME`] bytes.
type WireConfig = Configuration<LittleEndian, Varint, Limit<MAX_FRAME>>;

/// The configuration every frame is encoded and decoded with.
const fn config() -> WireConfig {
    bincode::config::standard().with_limit::<MAX_FRAME>()
}

/// Codec failures; each ends the stream it happened on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A length prefix or a value to send exceeds [`MAX_FRAME`].
    #[error("frame of {len} bytes exceeds the 16 MiB limit")]
    TooLarge {
        /// The announced or attempted payload length.
        len: u64,
    },
    /// The stream ended inside a frame.
    #[error("stream ended inside a frame")]
    Truncated,
    /// The payload is not a valid encoding of the expected type.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// The value could not be encoded (a serde error of the value itself).
    #[error("cannot encode frame: {0}")]
    Encode(String),
    /// A [`FrameDecoder`] would hold more than [`MAX_BUFFERED`] bytes (the caller did not pop).
    #[error("frame decoder is full")]
    DecoderFull,
    /// A [`FrameDecoder`] already refused this stream.
    #[error("stream already refused")]
    Poisoned,
    /// Reading or writing the stream failed.
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
}

/// A bincode writer into a `Vec` that refuses to grow past [`MAX_FRAME`].
struct LimitedVec {
    buf: Vec<u8>,
    overflow: bool,
}

impl Writer for LimitedVec {
    fn write(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        if self.buf.len() + bytes.len() > MAX_FRAME {
            self.overflow = true;
            return Err(EncodeError::Other("frame too large"));
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }
}

/// Encodes `value` as a frame payload (without the length prefix).
///
/// Refuses with [`WireError::TooLarge`] once the encoding would pass [`MAX_FRAME`].
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, WireError> {
    let mut out = LimitedVec {
        buf: Vec::new(),
        overflow: false,
    };
    match bincode::serde::encode_into_writer(value, &mut out, config()) {
        Ok(()) => Ok(out.buf),
        Err(_) if out.overflow => Err(WireError::TooLarge {
            len: MAX_FRAME as u64 + 1,
        }),
        Err(e) => Err(WireError::Encode(e.to_string())),
    }
}

/// Encodes `value` as a whole frame: length prefix and payload, ready to write or to push into a
/// [`FrameDecoder`].
pub fn encode_frame<T: Serialize>(value: &T) -> Result<Vec<u8>, WireError> {
    let payload = encode(value)?;
    let mut frame = Vec::with_capacity(FRAME_HEADER + payload.len());
    frame.extend_from_slice(&prefix(payload.len())?);
    frame.extend_from_slice(&payload);
    Ok(frame)
}

/// Decodes a frame payload (without the length prefix) into a `T`.
///
/// Trailing bytes after the value are ignored: that is where a newer peer appends fields (see the
/// module docs). A length the payload claims costs nothing until the bytes it claims are there
/// (see the module docs).
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, WireError> {
    if payload.len() > MAX_FRAME {
        return Err(WireError::TooLarge {
            len: payload.len() as u64,
        });
    }
    let seed = bounded::Seed::<T>::new(payload.len());
    match bincode::serde::seed_decode_from_slice(seed, payload, config()) {
        Ok((value, _read)) => Ok(value),
        Err(DecodeError::LimitExceeded) => Err(WireError::Malformed(
            "an inner length exceeds the frame limit".to_owned(),
        )),
        Err(DecodeError::UnexpectedEnd { .. }) => Err(WireError::Malformed(
            "payload ends inside a value".to_owned(),
        )),
        Err(e) => Err(WireError::Malformed(e.to_string())),
    }
}

/// The length prefix for a payload of `len` bytes, refused past [`MAX_FRAME`].
fn prefix(len: usize) -> Result<[u8; FRAME_HEADER], WireError> {
    if len > MAX_FRAME {
        return Err(WireError::TooLarge { len: len as u64 });
    }
    let len = u32::try_from(len).map_err(|_| WireError::TooLarge { len: len as u64 })?;
    Ok(len.to_be_bytes())
}

/// Checks a length prefix against [`MAX_FRAME`] and returns the payload length.
fn check_prefix(header: [u8; FRAME_HEADER]) -> Result<usize, WireError> {
    let len = u32::from_be_bytes(header);
    let len = usize::try_from(len).map_err(|_| WireError::TooLarge { len: len.into() })?;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge { len: len as u64 });
    }
    Ok(len)
}

/// Writes one frame (length prefix and `payload`) and flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    payload: &[u8],
) -> Result<(), WireError> {
    let header = prefix(payload.len())?;
    writer.write_all(&header).await?;
    writer.write_all(payload).await?;
    writer.flush().await?;
    Ok(())
}

/// Reads one frame's payload.
///
/// `Ok(None)` when the stream ends cleanly between frames; [`WireError::Truncated`] when it ends
/// inside one; [`WireError::TooLarge`] as soon as a prefix announces more than [`MAX_FRAME`],
/// before anything is allocated for it. The payload buffer grows with the bytes actually received.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Vec<u8>>, WireError> {
    let mut header = [0u8; FRAME_HEADER];
    let mut got = 0;
    while got < FRAME_HEADER {
        let n = reader.read(&mut header[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(WireError::Truncated)
            };
        }
        got += n;
    }
    let len = check_prefix(header)?;
    let mut payload = Vec::with_capacity(len.min(READ_CHUNK));
    let read = (&mut *reader)
        .take(len as u64)
        .read_to_end(&mut payload)
        .await?;
    if read < len {
        return Err(WireError::Truncated);
    }
    Ok(Some(payload))
}

/// Writes `value` as one frame.
pub async fn write_message<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    value: &T,
) -> Result<(), WireError> {
    let payload = encode(value)?;
    write_frame(writer, &payload).await
}

/// Reads one frame and decodes it; `Ok(None)` on a clean end of stream.
pub async fn read_message<R: AsyncRead + Unpin, T: DeserializeOwned>(
    reader: &mut R,
) -> Result<Option<T>, WireError> {
    match read_frame(reader).await? {
        Some(payload) => decode(&payload).map(Some),
        None => Ok(None),
    }
}

/// A pure, incremental frame splitter: push bytes as they arrive, pop complete payloads.
///
/// Used by the in-memory transport and the simulations, where bytes arrive in arbitrary pieces. A
/// length prefix is checked against [`MAX_FRAME`] as soon as its four bytes are in, and the buffer
/// never holds more than [`MAX_BUFFERED`] bytes. After any error the decoder is poisoned: the
/// stream is out of step and every later call fails with [`WireError::Poisoned`].
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// Received bytes; `buf[start..]` is not yet popped.
    buf: Vec<u8>,
    /// Offset of the first byte not yet popped.
    start: usize,
    /// Offset of the next length prefix not yet checked (may lie past `buf.len()`).
    scan: usize,
    poisoned: bool,
}

impl FrameDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held and not yet popped.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Bytes the decoder has allocated (at most [`MAX_BUFFERED`]).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Appends received bytes; refuses an oversized length prefix at once.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        if self.poisoned {
            return Err(WireError::Poisoned);
        }
        self.compact();
        let needed = self.buf.len() + bytes.len();
        if needed > MAX_BUFFERED {
            self.poison();
            return Err(WireError::DecoderFull);
        }
        if needed > self.buf.capacity() {
            // Amortized growth, but never past the cap.
            let target = needed.max(self.buf.capacity() * 2).min(MAX_BUFFERED);
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend_from_slice(bytes);
        while self.scan + FRAME_HEADER <= self.buf.len() {
            let mut header = [0u8; FRAME_HEADER];
            header.copy_from_slice(&self.buf[self.scan..self.scan + FRAME_HEADER]);
            match check_prefix(header) {
                Ok(len) => self.scan += FRAME_HEADER + len,
                Err(e) => {
                    self.poison();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Pops the next complete payload, if one is in.
    pub fn pop(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        if self.poisoned {
            return Err(WireError::Poisoned);
        }
        let avail = self.buf.len() - self.start;
        if avail < FRAME_HEADER {
            return Ok(None);
        }
        let mut header = [0u8; FRAME_HEADER];
        header.copy_from_slice(&self.buf[self.start..self.start + FRAME_HEADER]);
        // Already checked by `push`; checked again rather than trusted.
        let len = check_prefix(header)?;
        if avail < FRAME_HEADER + len {
            return Ok(None);
        }
        let from = self.start + FRAME_HEADER;
        let payload = self.buf[from..from + len].to_vec();
        self.start = from + len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.scan -= self.start;
            self.start = 0;
        }
        Ok(Some(payload))
    }

    /// Pops and decodes the next complete frame, if one is in.
    pub fn pop_message<T: DeserializeOwned>(&mut self) -> Result<Option<T>, WireError> {
        match self.pop()? {
            Some(payload) => match decode(&payload) {
                Ok(value) => Ok(Some(value)),
                Err(e) => {
                    self.poison();
                    Err(e)
                }
            },
            None => Ok(None),
        }
    }

    /// Moves the unpopped bytes to the front once the popped prefix is worth reclaiming.
    fn compact(&mut self) {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
    }

    fn poison(&mut self) {
        self.poisoned = true;
        self.buf = Vec::new();
        self.start = 0;
        self.scan = 0;
    }
}

#[cfg(test)]
mod tests;
