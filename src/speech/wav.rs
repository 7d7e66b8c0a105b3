//! The recording a phone posts (SPEC §16): a RIFF/WAVE file of 16 kHz mono 16-bit PCM, at most
//! 60 s, which the page makes itself so the machine needs no audio decoder. Read here strictly —
//! any other format, a chunk that runs past the end, an empty or a longer recording is refused —
//! and written out again with a header Collie makes ([`Recording::canonical`]), so the engine
//! never parses a header a phone wrote.

/// Samples per second.
pub const RATE: u32 = 16_000;
/// Bytes of samples per second (mono, 16 bits).
pub const BYTES_PER_SECOND: usize = 32_000;
/// The longest recording, in seconds.
pub const MAX_SECONDS: usize = 60;
/// The largest request body: 60 s of samples and room for a header.
pub const MAX_WAV_BYTES: usize = 2 * 1024 * 1024;
/// Most chunks read before the samples (a browser writes two).
const MAX_CHUNKS: usize = 16;

/// Why a body is not a recording Collie transcribes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    /// Not RIFF/WAVE, or a chunk runs past the end of the body.
    #[error("not a WAV recording: {0}")]
    NotWav(&'static str),
    /// A WAV of another format.
    #[error("the recording must be 16 kHz mono 16-bit PCM WAV ({0})")]
    Format(String),
    /// No samples.
    #[error("the recording is empty")]
    Empty,
    /// Longer than [`MAX_SECONDS`].
    #[error("the recording is longer than {MAX_SECONDS} s")]
    TooLong,
}

/// A recording's samples, read from a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recording<'a> {
    samples: &'a [u8],
}

impl Recording<'_> {
    /// How long it is, in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        (self.samples.len() as u64 * 1000) / BYTES_PER_SECOND as u64
    }

    /// The recording as a WAV file with Collie's own 44-byte header.
    pub fn canonical(&self) -> Vec<u8> {
        encode(self.samples)
    }
}

/// 16 kHz mono 16-bit `samples` as a WAV file with a 44-byte header (the form [`read`] takes and
/// [`Recording::canonical`] writes).
pub fn encode(samples: &[u8]) -> Vec<u8> {
    let len = samples.len() as u32;
    let mut out = Vec::with_capacity(44 + samples.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&(BYTES_PER_SECOND as u32).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes()); // block align
    out.extend_from_slice(&16u16.to_le_bytes()); // bits
    out.extend_from_slice(b"data");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(samples);
    out
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads `body` as a recording (see the module docs).
pub fn read(body: &[u8]) -> Result<Recording<'_>, WavError> {
    if body.len() < 12 || &body[..4] != b"RIFF" || &body[8..12] != b"WAVE" {
        return Err(WavError::NotWav("no RIFF/WAVE header"));
    }
    let mut at = 12;
    let mut format_seen = false;
    for _ in 0..MAX_CHUNKS {
        if body.len().saturating_sub(at) < 8 {
            break;
        }
        let id = &body[at..at + 4];
        let size = u32_at(body, at + 4) as usize;
        let start = at + 8;
        let Some(chunk) = start.checked_add(size).and_then(|end| body.get(start..end)) else {
            return Err(WavError::NotWav("a chunk runs past the end"));
        };
        match id {
            b"fmt " => {
                format(chunk)?;
                format_seen = true;
            }
            b"data" if !format_seen => return Err(WavError::NotWav("samples before the format")),
            b"data" => {
                if chunk.len() % 2 != 0 {
                    return Err(WavError::NotWav("half a sample"));
                }
                if chunk.is_empty() {
                    return Err(WavError::Empty);
                }
                if chunk.len() > MAX_SECONDS * BYTES_PER_SECOND {
                    return Err(WavError::TooLong);
                }
                return Ok(Recording { samples: chunk });
            }
            _ => {}
        }
        // Chunks are padded to an even length.
        at = start + size + size % 2;
    }
    Err(WavError::NotWav("no samples"))
}

fn format(chunk: &[u8]) -> Result<(), WavError> {
    if chunk.len() < 16 {
        return Err(WavError::NotWav("a short format chunk"));
    }
    let (tag, channels, rate) = (u16_at(chunk, 0), u16_at(chunk, 2), u32_at(chunk, 4));
    let (byte_rate, align, bits) = (u32_at(chunk, 8), u16_at(chunk, 12), u16_at(chunk, 14));
    if tag != 1 {
        return Err(WavError::Format(format!("format {tag}, not PCM")));
    }
    if channels != 1 || rate != RATE || bits != 16 {
        return Err(WavError::Format(format!(
            "{channels} channels, {rate} Hz, {bits} bits"
        )));
    }
    if byte_rate as usize != BYTES_PER_SECOND || align != 2 {
        return Err(WavError::Format(format!(
            "{byte_rate} bytes a second, blocks of {align}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(seconds_x100: usize) -> Vec<u8> {
        let samples = vec![1u8; seconds_x100 * BYTES_PER_SECOND / 100];
        Recording { samples: &samples }.canonical()
    }

    #[test]
    fn reads_what_it_writes_and_measures_it() {
        let body = wav(250);
        let rec = read(&body).unwrap();
        assert_eq!(rec.duration_ms(), 2500);
        assert_eq!(rec.canonical(), body);
        assert_eq!(&body[..4], b"RIFF");
        assert_eq!(body.len(), 44 + 80_000);
    }

    #[test]
    fn sixty_seconds_pass_and_a_sample_more_does_not() {
        assert!(read(&wav(6000)).is_ok());
        let mut long = wav(6000);
        long.extend_from_slice(&[0, 0]);
        let n = (long.len() - 44) as u32;
        long[40..44].copy_from_slice(&n.to_le_bytes());
        assert_eq!(read(&long), Err(WavError::TooLong));
    }

    #[test]
    fn other_formats_and_broken_files_are_refused() {
        let good = wav(100);
        let mut stereo = good.clone();
        stereo[22] = 2;
        assert!(matches!(read(&stereo), Err(WavError::Format(_))));
        let mut rate = good.clone();
        rate[24..28].copy_from_slice(&44_100u32.to_le_bytes());
        assert!(matches!(read(&rate), Err(WavError::Format(_))));
        let mut float = good.clone();
        float[20] = 3;
        assert!(matches!(read(&float), Err(WavError::Format(_))));
        // The data chunk claims more than was sent: half a recording is never read as whole.
        let cut = &good[..good.len() - 10];
        assert!(matches!(read(cut), Err(WavError::NotWav(_))));
        let mut huge = good.clone();
        huge[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(read(&huge), Err(WavError::NotWav(_))));
        assert!(matches!(
            read(b"RIFF\0\0\0\0WAVE"),
            Err(WavError::NotWav(_))
        ));
        assert!(matches!(read(b"ID3"), Err(WavError::NotWav(_))));
        let empty = Recording { samples: &[] }.canonical();
        assert_eq!(read(&empty), Err(WavError::Empty));
    }

    #[test]
    fn other_chunks_before_the_samples_are_skipped() {
        let good = wav(100);
        let mut with_list = good[..36].to_vec();
        with_list.extend_from_slice(b"LIST");
        with_list.extend_from_slice(&3u32.to_le_bytes());
        with_list.extend_from_slice(b"abc\0"); // padded to even
        with_list.extend_from_slice(&good[36..]);
        assert_eq!(read(&with_list).unwrap().duration_ms(), 1000);
    }
}
