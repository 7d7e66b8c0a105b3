//! RFC 2047 encoded words in a header value, as `tailscale serve` writes a login or a name that is
//! not ASCII (Go's `mime.QEncoding.Encode("utf-8", …)`: `=?utf-8?q?J=C3=B6rg?=`, split into
//! several words past 75 characters). The `b` (base64) encoding is read too, as any RFC 2047
//! writer may use it.
//!
//! Written here rather than taken from a crate: the one maintained decoder on crates.io brings a
//! parser-combinator library and a charset library for what is ~100 lines over the one charset a
//! proxy sends (decision 0073). UTF-8 and US-ASCII are read (ISO-8859-1 too, one byte a
//! character); any other charset is an error, never a guess. Text that is not an encoded word is
//! kept as it is; whitespace between two encoded words is dropped (RFC 2047 §6.2), and the bytes of
//! adjacent words are joined before they are read as UTF-8, so a character split across two words
//! comes out whole. The caller bounds the input's length before it gets here.

use base64::Engine as _;

/// Why a value could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A charset other than UTF-8, US-ASCII or ISO-8859-1.
    #[error("unsupported charset")]
    Charset,
    /// The encoded text is not valid for its encoding.
    #[error("bad encoded text")]
    Encoding,
    /// The bytes are not text in their charset.
    #[error("not text")]
    NotText,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Charset {
    Utf8,
    Latin1,
}

/// The text of header value `raw`.
pub fn decode(raw: &[u8]) -> Result<String, DecodeError> {
    let raw = std::str::from_utf8(raw).map_err(|_| DecodeError::NotText)?;
    let mut out = String::with_capacity(raw.len());
    // The bytes of the run of encoded words being read, with their charset.
    let mut run: Option<(Charset, Vec<u8>)> = None;
    // Whitespace seen since the last word, kept unless an encoded word follows an encoded word.
    let mut space = String::new();
    let mut last_encoded = false;
    let mut rest = raw;
    while !rest.is_empty() {
        let start = rest
            .find(|c: char| !c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        space.push_str(&rest[..start]);
        rest = &rest[start..];
        if rest.is_empty() {
            break;
        }
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        match encoded_word(word)? {
            Some((charset, bytes)) => {
                // Whitespace between two encoded words is not part of the text.
                if !last_encoded {
                    out.push_str(&space);
                }
                space.clear();
                match &mut run {
                    Some((c, held)) if *c == charset => held.extend_from_slice(&bytes),
                    _ => {
                        flush(&mut out, run.take())?;
                        run = Some((charset, bytes));
                    }
                }
                last_encoded = true;
            }
            None => {
                flush(&mut out, run.take())?;
                out.push_str(&space);
                space.clear();
                out.push_str(word);
                last_encoded = false;
            }
        }
    }
    flush(&mut out, run)?;
    out.push_str(&space);
    Ok(out)
}

/// Appends a run of encoded words' bytes as text.
fn flush(out: &mut String, run: Option<(Charset, Vec<u8>)>) -> Result<(), DecodeError> {
    match run {
        None => {}
        Some((Charset::Utf8, bytes)) => {
            out.push_str(std::str::from_utf8(&bytes).map_err(|_| DecodeError::NotText)?)
        }
        Some((Charset::Latin1, bytes)) => out.extend(bytes.iter().map(|&b| char::from(b))),
    }
    Ok(())
}

/// The charset and bytes of `word` when it is an encoded word (`=?charset?q|b?text?=`); `None`
/// when it is plain text.
fn encoded_word(word: &str) -> Result<Option<(Charset, Vec<u8>)>, DecodeError> {
    let Some(inner) = word.strip_prefix("=?").and_then(|w| w.strip_suffix("?=")) else {
        return Ok(None);
    };
    let mut parts = inner.split('?');
    let (Some(charset), Some(encoding), Some(text), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    // RFC 2231 §5: a language may follow the charset after `*`.
    let charset = charset.split('*').next().unwrap_or_default();
    let charset = if charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8") {
        Charset::Utf8
    } else if charset.eq_ignore_ascii_case("us-ascii") {
        // ASCII is UTF-8.
        Charset::Utf8
    } else if charset.eq_ignore_ascii_case("iso-8859-1") || charset.eq_ignore_ascii_case("latin1") {
        Charset::Latin1
    } else {
        return Err(DecodeError::Charset);
    };
    let bytes = match encoding {
        "q" | "Q" => q_decode(text)?,
        "b" | "B" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| DecodeError::Encoding)?,
        _ => return Ok(None),
    };
    Ok(Some((charset, bytes)))
}

/// RFC 2047 §4.2: `_` is a space, `=XX` a byte in hex, anything else itself.
fn q_decode(text: &str) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'_' => out.push(b' '),
            b'=' => {
                let hi = bytes.next().and_then(hex).ok_or(DecodeError::Encoding)?;
                let lo = bytes.next().and_then(hex).ok_or(DecodeError::Encoding)?;
                out.push(hi << 4 | lo);
            }
            b => out.push(b),
        }
    }
    Ok(out)
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Go's `mime.QEncoding.Encode("utf-8", s)` as `tailscale serve` calls it: each word at most 75
    /// characters, a character never split, words joined by a space.
    fn go_q_encode(s: &str) -> String {
        if s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            return s.to_owned();
        }
        let mut words = Vec::new();
        let mut cur = String::new();
        for c in s.chars() {
            let mut enc = String::new();
            let mut buf = [0u8; 4];
            for &b in c.encode_utf8(&mut buf).as_bytes() {
                match b {
                    b' ' => enc.push('_'),
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                        enc.push(char::from(b))
                    }
                    _ => enc.push_str(&format!("={b:02X}")),
                }
            }
            if "=?utf-8?q??=".len() + cur.len() + enc.len() > 75 {
                words.push(format!("=?utf-8?q?{cur}?="));
                cur.clear();
            }
            cur.push_str(&enc);
        }
        words.push(format!("=?utf-8?q?{cur}?="));
        words.join(" ")
    }

    #[test]
    fn what_tailscale_serve_writes_comes_back() {
        assert_eq!(decode(b"alice@example.com").unwrap(), "alice@example.com");
        assert_eq!(
            decode(b"=?utf-8?q?j=C3=B6rg@example.com?=").unwrap(),
            "jörg@example.com"
        );
        assert_eq!(
            decode(b"=?UTF-8?B?asO2cmdAZXhhbXBsZS5jb20=?=").unwrap(),
            "jörg@example.com"
        );
        assert_eq!(decode(b"=?utf-8?q?J=C3=B6rg_M?=").unwrap(), "Jörg M");
        let long = "Jörg Ämilius Überlänge-Östreicher von und zu Weißenfels-Ähnlich";
        let enc = go_q_encode(long);
        assert!(enc.contains("?= =?"), "several words: {enc}");
        assert_eq!(decode(enc.as_bytes()).unwrap(), long);
        // A character split across two words comes out whole.
        assert_eq!(decode(b"=?utf-8?q?=C3?= =?utf-8?q?=B6?=").unwrap(), "ö");
        // Text around words is kept, with its spaces.
        assert_eq!(
            decode(b"Dr. =?utf-8?q?J=C3=B6rg?= M").unwrap(),
            "Dr. Jörg M"
        );
        assert_eq!(decode(b"=?iso-8859-1?q?J=F6rg?=").unwrap(), "Jörg");
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        assert_eq!(decode(b"=?koi8-r?q?abc?="), Err(DecodeError::Charset));
        assert_eq!(decode(b"=?utf-8?q?=ZZ?="), Err(DecodeError::Encoding));
        assert_eq!(decode(b"=?utf-8?b?***?="), Err(DecodeError::Encoding));
        assert_eq!(decode(b"=?utf-8?q?=FF?="), Err(DecodeError::NotText));
        assert_eq!(decode(b"\xff"), Err(DecodeError::NotText));
        // Not an encoded word: plain text.
        assert_eq!(decode(b"=?utf-8?x?abc?=").unwrap(), "=?utf-8?x?abc?=");
        assert_eq!(decode(b"=?broken").unwrap(), "=?broken");
    }

    proptest! {
        #[test]
        fn any_text_survives_go_s_encoding(s in "\\PC{0,80}") {
            let enc = go_q_encode(&s);
            prop_assert_eq!(decode(enc.as_bytes()).unwrap(), s);
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(bytes in crate::fuzzing::arbitrary(600)) {
            let _ = decode(&bytes);
        }
    }
}
