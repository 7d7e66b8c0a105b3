//! Comments and whitespace out of a JavaScript module, every other character kept.
//!
//! This is not a minifier that understands the program: it reads the file as tokens (strings,
//! template literals with their `${}` expressions, regular expression literals, comments, words
//! and punctuation), copies every token as it is, and replaces what lies between two tokens:
//!
//! - a gap holding a line break (a comment that spans lines counts) becomes one `\n`, so automatic
//!   semicolon insertion reads the same statements it read before;
//! - any other gap becomes one space where two tokens would otherwise fuse (two words, `a - -b`,
//!   `x / /re/`, `1 .toString()`, a regex literal and a following word), else nothing.
//!
//! Where the reading is unsure — a string, comment, template or regex that does not end — it
//! gives up and the file is served as written ([`JsError`]); the tests hold every asset of the app
//! to minifying cleanly. A `/` after `)`, `]` or `}` is read as division (a regex literal right
//! after a block is legal JavaScript, but the app's code never writes one).

use thiserror::Error;

/// Why a file was left as written.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum JsError {
    /// A string, template, comment or regex literal that does not end where it must.
    #[error("unterminated {0} at byte {1}")]
    Unterminated(&'static str, usize),
}

/// Words after which a `/` starts a regular expression rather than a division.
const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

/// The last token copied, as far as the next gap and the next `/` care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Start of the file, or of a template's `${` expression.
    Start,
    /// A word (identifier, keyword or number); `starts_digit` for a number.
    Word { starts_digit: bool, regex_ok: bool },
    /// One punctuation character.
    Punct(u8),
    /// A string or template literal.
    Quoted,
    /// A regular expression literal; `flags` when it ends with one.
    Regex { flags: bool },
}

/// What comes next, for the gap before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Word,
    Punct(u8),
    Quoted,
}

/// Whether punctuation `a` then `b` written together would read as another token: a two-character
/// operator, or the start of a comment or of a longer operator (`a - -b`, `a / /re/`, `a ? ?.b`).
fn fuses(a: u8, b: u8) -> bool {
    const PAIRS: &[&[u8; 2]] = &[
        b"?.", b"??", b"..", b"<=", b">=", b"==", b"!=", b"**", b"++", b"--", b"<<", b">>", b"&&",
        b"||", b"+=", b"-=", b"*=", b"%=", b"&=", b"|=", b"^=", b"/=", b"=>", b"//", b"/*", b"<!",
        b"->",
    ];
    PAIRS.contains(&&[a, b])
}

/// Whether a space must stay between `last` and `next` for the file to read the same.
fn needs_space(last: Last, next: Next) -> bool {
    match (last, next) {
        (Last::Word { .. } | Last::Regex { .. }, Next::Word) => true,
        (Last::Word { starts_digit, .. }, Next::Punct(b'.')) => starts_digit,
        (Last::Punct(a), Next::Punct(b)) => fuses(a, b),
        (Last::Regex { flags: false }, Next::Punct(b)) => fuses(b'/', b),
        _ => false,
    }
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'#' | b'\\') || c >= 0x80
}

/// `src` without comments and with its whitespace cut to what the grammar needs.
pub fn minify(src: &str) -> Result<String, JsError> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut last = Last::Start;
    // Whether a gap is pending, and whether it held a line break.
    let mut gap: Option<bool> = None;
    // One entry per open `${`: the depth of `{` inside that expression.
    let mut templates: Vec<u32> = Vec::new();
    // Emits the pending gap before a token.
    let flush = |out: &mut String, gap: &mut Option<bool>, last: Last, next: Next| match gap.take()
    {
        Some(true) if last != Last::Start => out.push('\n'),
        Some(false) if needs_space(last, next) => out.push(' '),
        _ => {}
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                gap.get_or_insert(false);
                i += 1;
            }
            b'\n' => {
                gap = Some(true);
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
                gap.get_or_insert(false);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let close = src[i + 2..]
                    .find("*/")
                    .ok_or(JsError::Unterminated("comment", i))?;
                let body = &src[i + 2..i + 2 + close];
                let had_break = body.contains('\n') || gap == Some(true);
                gap = Some(had_break);
                i += close + 4;
            }
            b'/' if regex_may_start(last) => {
                let end = regex_end(b, i)?;
                flush(&mut out, &mut gap, last, Next::Punct(b'/'));
                let flags_end = end
                    + b[end..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphabetic())
                        .count();
                out.push_str(&src[i..flags_end]);
                last = Last::Regex {
                    flags: flags_end > end,
                };
                i = flags_end;
            }
            b'\'' | b'"' => {
                let end = super::quoted_end(b, i, c).ok_or(JsError::Unterminated("string", i))?;
                flush(&mut out, &mut gap, last, Next::Quoted);
                out.push_str(&src[i..end]);
                last = Last::Quoted;
                i = end;
            }
            b'`' | b'}' if c == b'`' || templates.last() == Some(&0) => {
                if c == b'`' {
                    flush(&mut out, &mut gap, last, Next::Quoted);
                } else {
                    // The end of a `${…}`: the template goes on.
                    templates.pop();
                    gap = None;
                }
                let (end, opens) = template_part(b, i + 1)?;
                out.push_str(&src[i..end]);
                i = end;
                last = if opens {
                    templates.push(0);
                    Last::Start
                } else {
                    Last::Quoted
                };
            }
            c if is_word_byte(c) || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
                let start = i;
                i += 1;
                while i < b.len()
                    && (is_word_byte(b[i]) || (b[i] == b'.' && b[start].is_ascii_digit()))
                {
                    // A number's `.`, and `\` escapes inside identifiers, stay in the word.
                    i += 1;
                }
                let word = &src[start..i];
                flush(&mut out, &mut gap, last, Next::Word);
                out.push_str(word);
                last = Last::Word {
                    starts_digit: c.is_ascii_digit() || c == b'.',
                    regex_ok: BEFORE_REGEX.contains(&word),
                };
            }
            _ => {
                if let Some(depth) = templates.last_mut() {
                    match c {
                        b'{' => *depth += 1,
                        b'}' => *depth -= 1,
                        _ => {}
                    }
                }
                flush(&mut out, &mut gap, last, Next::Punct(c));
                out.push(char::from(c));
                last = Last::Punct(c);
                i += 1;
            }
        }
    }
    if !templates.is_empty() {
        return Err(JsError::Unterminated("template expression", b.len()));
    }
    if gap == Some(true) {
        out.push('\n');
    }
    Ok(out)
}

/// Whether a `/` after `last` starts a regular expression.
fn regex_may_start(last: Last) -> bool {
    match last {
        Last::Start => true,
        Last::Word { regex_ok, .. } => regex_ok,
        Last::Punct(c) => !matches!(c, b')' | b']' | b'}'),
        Last::Quoted | Last::Regex { .. } => false,
    }
}

/// The byte after the closing `/` of the regex literal at `start` (before its flags).
fn regex_end(b: &[u8], start: usize) -> Result<usize, JsError> {
    let mut i = start + 1;
    let mut class = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => return Ok(i + 1),
            b'\n' | b'\r' => break,
            _ => {}
        }
        i += 1;
    }
    Err(JsError::Unterminated("regex", start))
}

/// From inside a template at `i`: the byte after its closing `` ` `` (false) or after a `${`
/// (true).
fn template_part(b: &[u8], mut i: usize) -> Result<(usize, bool), JsError> {
    let start = i;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'`' => return Ok((i + 1, false)),
            b'$' if b.get(i + 1) == Some(&b'{') => return Ok((i + 2, true)),
            _ => {}
        }
        i += 1;
    }
    Err(JsError::Unterminated("template", start))
}

#[cfg(test)]
mod tests;
