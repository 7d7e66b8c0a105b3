//! PEM private key blocks, and OpenPGP armored ones: the BEGIN and END lines stay readable, the
//! body lines are masked.
//!
//! The block is walked line by line from its BEGIN line rather than matched whole, so a block
//! whose END line is not in the text (a screen showing the top of `cat id_ed25519`) is masked
//! too: the body runs until the END line or the first line that is not base64.
//!
//! An armored PGP key (`gpg --export-secret-keys --armor`) has the same layout as an encrypted
//! PEM key: `-----BEGIN PGP PRIVATE KEY BLOCK-----`, header lines (`Version: …`,
//! `Comment: …`), a blank line, base64 lines, a checksum line (`=AbCd`, base64 too) and the
//! END line. So one walk serves both; only the BEGIN line's suffix differs. Public key blocks
//! and signatures (`PGP PUBLIC KEY BLOCK`, `PGP SIGNATURE`) are public and left alone.

use std::ops::Range;

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const PRIVATE_KEY: &str = "PRIVATE KEY-----";
const PRIVATE_KEY_BLOCK: &str = "PRIVATE KEY BLOCK-----";

/// If `text[line]` is the BEGIN line of a private key block, appends the byte range of each
/// body line's content (without its indentation and trailing blanks) to `body`.
pub(crate) fn body_lines(text: &str, line: Range<usize>, body: &mut Vec<Range<usize>>) {
    if !is_begin_line(&text[line.clone()]) {
        return;
    }
    let mut seen_body = false;
    let mut start = line.end + 1;
    while start < text.len() {
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let content = text[start..end].trim();
        if content.starts_with(END) {
            break;
        }
        if is_body(content) {
            let indent = text[start..end].len() - text[start..end].trim_start().len();
            body.push(start + indent..start + indent + content.len());
            seen_body = true;
        } else if seen_body || !(content.is_empty() || is_header(content)) {
            // Headers (`Proc-Type: 4,ENCRYPTED`) and a blank line may precede the body only.
            break;
        }
        start = end + 1;
    }
}

/// `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----` or `-----BEGIN [A-Z0-9 ]*PRIVATE KEY BLOCK-----`
/// (PGP), possibly indented, as the end of its line.
fn is_begin_line(line: &str) -> bool {
    let line = line.trim_end();
    let Some(head) = line
        .strip_suffix(PRIVATE_KEY)
        .or_else(|| line.strip_suffix(PRIVATE_KEY_BLOCK))
    else {
        return false;
    };
    let Some(at) = head.rfind(BEGIN) else {
        return false;
    };
    head[at + BEGIN.len()..]
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
}

/// A body line: base64 only, or — once masked — bullets only. A mix of both is not a body line,
/// so masking the line after a cut-off block never turns it into one.
fn is_body(content: &str) -> bool {
    !content.is_empty()
        && (content
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            || content.chars().all(|c| c == super::MASK))
}

/// An RFC 1421 header line such as `Proc-Type: 4,ENCRYPTED` or `DEK-Info: AES-128-CBC,…`, or
/// an OpenPGP armor header such as `Version: GnuPG v2` or `Comment: …` (RFC 4880, 6.2).
fn is_header(content: &str) -> bool {
    content.split_once(": ").is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}
