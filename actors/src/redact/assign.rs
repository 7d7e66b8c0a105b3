//! Assignments to secret words — `password: hunter2`, `"api_key": "…"`, `DB_TOKEN=…`,
//! `Authorization: Bearer …` — where they are, where their value is, and whether it is worth
//! masking.
//!
//! The secret-assignment regex defines an assignment; the masker finds them by hand instead
//! ([`find`]), and [`value`] walks each to its value. Both mirror the regex (tests compare
//! [`find`] with the regex's matches, and [`value`] with its capture groups, on every line they
//! generate): run through the regex engine, the assignment regex costs about a microsecond per
//! line, for it backtracks through every secret word and every character of a long value.

use std::ops::Range;

use super::shapes::is_key_byte;
use super::MASK;

/// The secret words a key may end with, spelled as the regex spells them ([`super::shapes`]),
/// apart from the `…key` compounds and the short words, which [`ends_with_secret_word`] spells
/// out.
const WORDS: &[&str] = &[
    "token",
    "Token",
    "TOKEN",
    "passwd",
    "Passwd",
    "PASSWD",
    "password",
    "Password",
    "PASSWORD",
    "passphrase",
    "Passphrase",
    "PASSPHRASE",
    "secret",
    "Secret",
    "SECRET",
    "credential",
    "Credential",
    "CREDENTIAL",
    "credentials",
    "Credentials",
    "CREDENTIALS",
    "auth",
    "AUTH",
    "bearer",
    "Bearer",
    "BEARER",
    "authorization",
    "Authorization",
    "AUTHORIZATION",
];

/// The short secret words in lower and UPPER case, which must start a word of the key: be the
/// whole key or follow `_`, `.` or `-` (`DB_PASS`, `smtp.pass`, `MYSQL_PWD`, not `COMPASS`,
/// `bypass` or `OLDPWD`). See [`super::shapes`] for why.
const SHORT_WORDS: &[&str] = &["pass", "PASS", "pwd", "PWD"];

/// The short secret words in Title case, which start a camelCase word wherever they are
/// (`dbPass`, `dbPwd`).
const SHORT_TITLE_WORDS: &[&str] = &["Pass", "Pwd"];

/// What may come before `key`, `Key` or `KEY` in a `…key` compound (then an optional `_`, `.`
/// or `-`).
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "Api",
    "API",
    "access",
    "Access",
    "ACCESS",
    "private",
    "Private",
    "PRIVATE",
    "secret",
    "Secret",
    "SECRET",
    "client",
    "Client",
    "CLIENT",
    "master",
    "Master",
    "MASTER",
    "signing",
    "Signing",
    "SIGNING",
    "encryption",
    "Encryption",
    "ENCRYPTION",
];

/// Calls `found(key, value)` for each assignment to a secret word in `line`, where the
/// secret-assignment regex's `find_iter` would find one: `key` is where its match starts,
/// `value` what [`value`] gives for it.
///
/// A match starts where a run of key bytes (`[A-Za-z0-9_.-]`) starts: the key's leading
/// `[A-Za-z0-9_.-]*` takes the whole run, and the secret word must end it, since what follows
/// the word (a quote, a blank, `:` or `=`) is no key byte. The next match is looked for after
/// this one's end, which is never inside a run.
pub(crate) fn find(line: &str, mut found: impl FnMut(usize, Range<usize>)) {
    let b = line.as_bytes();
    let mut at = 0;
    while let Some(skip) = b[at..].iter().position(|&c| is_key_byte(c)) {
        let key = at + skip;
        let end = key + b[key..].iter().take_while(|&&c| is_key_byte(c)).count();
        at = end;
        if !has_operator(b, end) || !ends_with_secret_word(&b[key..end]) {
            continue;
        }
        if let Some(value) = value(line, key) {
            // The match takes the closing quote of a quoted value too.
            let quote = b[value.start - 1];
            let closed = matches!(quote, b'"' | b'\'' | b'`') && b.get(value.end) == Some(&quote);
            at = value.end + usize::from(closed);
            found(key, value);
        }
    }
}

/// Does the run of key bytes `key` end with a secret word, as the regex spells them?
///
/// `key` is a whole run, so the byte before it, if any, is no key byte and so no ASCII word
/// byte: the regex's word boundary before a short word is the run's start or a `.` or `-`.
fn ends_with_secret_word(key: &[u8]) -> bool {
    if WORDS.iter().any(|w| key.ends_with(w.as_bytes()))
        || SHORT_TITLE_WORDS
            .iter()
            .any(|w| key.ends_with(w.as_bytes()))
    {
        return true;
    }
    let starts_a_word = |rest: &[u8]| matches!(rest.last(), None | Some(b'_' | b'.' | b'-'));
    if SHORT_WORDS
        .iter()
        .any(|w| key.strip_suffix(w.as_bytes()).is_some_and(starts_a_word))
    {
        return true;
    }
    let Some(rest) = [b"key".as_slice(), b"Key", b"KEY"]
        .iter()
        .find_map(|k| key.strip_suffix(*k))
    else {
        return false;
    };
    let rest = rest
        .strip_suffix(b"_")
        .or_else(|| rest.strip_suffix(b"."))
        .or_else(|| rest.strip_suffix(b"-"))
        .unwrap_or(rest);
    KEY_QUALIFIERS.iter().any(|q| rest.ends_with(q.as_bytes()))
}

/// After the key: an optional quote and blanks, then `:` or `=`.
fn has_operator(b: &[u8], mut at: usize) -> bool {
    if matches!(b.get(at), Some(b'"' | b'\'')) {
        at += 1;
    }
    at += blanks(b, at);
    matches!(b.get(at), Some(b':' | b'='))
}

/// The auth schemes an assignment's value may start with (`Authorization: Bearer …`).
const SCHEMES: &[&str] = &[
    "bearer", "Bearer", "BEARER", "basic", "Basic", "BASIC", "token", "Token", "TOKEN",
];

/// The value of the assignment whose key starts at `key`: the byte range the regex's first
/// participating group would give, without the quotes around it.
pub(crate) fn value(line: &str, key: usize) -> Option<Range<usize>> {
    let b = line.as_bytes();
    let mut at = key + b[key..].iter().take_while(|&&c| is_key_byte(c)).count();
    if matches!(b.get(at), Some(b'"' | b'\'')) {
        at += 1;
    }
    at += blanks(b, at);
    // `:=` and `=>` before `:` and `=`, unless nothing that can be a value follows them.
    let two = b[at..].starts_with(b":=") || b[at..].starts_with(b"=>");
    let operators: &[usize] = if two { &[2, 1] } else { &[1] };
    operators.iter().find_map(|&len| {
        let after = at + len;
        after_operator(b, after + blanks(b, after))
    })
}

/// An optional scheme word and blanks, then the value.
fn after_operator(b: &[u8], at: usize) -> Option<Range<usize>> {
    SCHEMES
        .iter()
        .filter(|scheme| b[at..].starts_with(scheme.as_bytes()))
        .find_map(|scheme| {
            let past = at + scheme.len();
            let n = blanks(b, past);
            if n > 0 {
                quoted_or_bare(b, past + n)
            } else {
                None
            }
        })
        .or_else(|| quoted_or_bare(b, at))
}

/// A quoted value (to its closing quote, or the end of the line when there is none) or a bare
/// one (up to a blank, quote, `,`, `;` or `&`).
fn quoted_or_bare(b: &[u8], at: usize) -> Option<Range<usize>> {
    let &first = b.get(at)?;
    let start = at + 1;
    match first {
        b'"' => {
            // Backslash escapes, as in JSON; a backslash at the end of the line ends the value.
            let mut i = start;
            while i < b.len() {
                match b[i] {
                    b'"' | b'\r' | b'\n' => break,
                    b'\\' if i + 1 < b.len() && !matches!(b[i + 1], b'\r' | b'\n') => i += 2,
                    b'\\' => break,
                    _ => i += 1,
                }
            }
            Some(start..i.min(b.len()))
        }
        b'\'' | b'`' => {
            let len = b[start..]
                .iter()
                .take_while(|&&c| !matches!(c, b'\r' | b'\n') && c != first)
                .count();
            Some(start..start + len)
        }
        _ => {
            let len = b[at..].iter().take_while(|&&c| is_bare(c)).count();
            (len > 0).then_some(at..at + len)
        }
    }
}

/// A byte of an unquoted value: not ASCII whitespace, a quote, `,`, `;` or `&`.
fn is_bare(c: u8) -> bool {
    BARE[usize::from(c)]
}

/// [`is_bare`] as a table: the bare-value walk runs over every byte of long tokens.
const BARE: [bool; 256] = {
    let mut table = [true; 256];
    let mut c = b'\t';
    while c <= b'\r' {
        table[c as usize] = false;
        c += 1;
    }
    let mut i = 0;
    let stops = b" \"'`,;&";
    while i < stops.len() {
        table[stops[i] as usize] = false;
        i += 1;
    }
    table
};

fn blanks(b: &[u8], at: usize) -> usize {
    b[at..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count()
}

/// Whether the assignment whose key starts at `key` has a value worth masking at `value`.
pub(crate) fn is_secret(line: &str, key: usize, value: Range<usize>) -> bool {
    // `https://x-access-token:…@host` is a URL's user and password, not an assignment to
    // `x-access-token`: the URL shape masks just the password.
    let in_url = line[..key].ends_with("//");
    let quoted = line[..value.start].ends_with(['"', '\'', '`']);
    !in_url
        && !is_not_a_secret_key(line, key)
        && is_secret_value(&line[value.clone()])
        && (quoted || !is_code(line, key, value.end))
}

/// Whether the key that starts at `key` ends with a secret word but names something else.
///
/// - `PWD` and `OLDPWD` are the shell's current and previous working directories, which `env`,
///   `set` and `export -p` print on every run (`PWD=/home/me/src`): paths, never secrets.
///   Only these exact keys, in the shell's spelling; `MYSQL_PWD` and `DB_PWD` are passwords.
///   (`OLDPWD` has no word boundary before its `PWD` and is no assignment to begin with; it is
///   named here so that the reason sits in one place.)
/// - `PASS:` with nothing between key and colon is a test result, not a password: `--- PASS:
///   TestParse (0.00s)` (`go test -v`), `PASS: tests/t1.sh` (automake). `PASS=…`, `PASS := …`
///   and `"PASS": …` stay assignments.
fn is_not_a_secret_key(line: &str, key: usize) -> bool {
    let b = line.as_bytes();
    let end = key + b[key..].iter().take_while(|&&c| is_key_byte(c)).count();
    match &line[key..end] {
        "PWD" | "OLDPWD" => true,
        "PASS" => b.get(end) == Some(&b':') && b.get(end + 1) != Some(&b'='),
        _ => false,
    }
}

/// Whether a value assigned to a secret word is worth masking: not empty, not a placeholder
/// (`null`, `true`, `***`), not a reference to where the secret lives (`$VAR`, `${VAR}`,
/// `$(cmd)`, `{{ secrets.X }}`, `%VAR%`, `<token>`) and not a call (`get_token()`).
pub(crate) fn is_secret_value(value: &str) -> bool {
    const NOT_SECRETS: &[&str] = &[
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "yes",
        "no",
        "~",
        // Types, as in `password: string;` or `token: String,`.
        "string",
        "str",
        "number",
        "bool",
        "boolean",
        "any",
        "bytes",
    ];
    let is_ident = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let value = value.trim();
    if value.is_empty()
        || NOT_SECRETS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || value.chars().all(|c| c == '*' || c == MASK)
        || value.starts_with("${")
        || value.starts_with("$(")
        || value.starts_with("{{")
        || value.strip_prefix('$').is_some_and(is_ident)
        || (value.len() > 2 && value.starts_with('%') && value.ends_with('%'))
        || (value.starts_with('<') && value.ends_with('>'))
    {
        return false;
    }
    // `get_token()`, `os.environ.get(`, `Secret::new(`, `request.headers[`: code.
    if let Some((callee, _)) = value.split_once(['(', '[']) {
        let is_path = callee.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && callee
                .split(['.', ':'])
                .all(|part| part.is_empty() || is_ident(part));
        if is_path {
            return false;
        }
    }
    true
}

/// Whether the assignment whose key starts at `key` and whose unquoted value ends at `end` is
/// source code — a declaration (`let token = cursor;`, `pub token: Token`), a field or a
/// member (`self.password = password`, `    token: Token,`), a parameter (`fn new(token:
/// Token)`): there the value names a variable or a type, and only a quoted literal is a secret.
fn is_code(line: &str, key: usize, end: usize) -> bool {
    const DECLARATIONS: &[&str] = &[
        "let",
        "mut",
        "const",
        "var",
        "val",
        "my",
        "auto",
        "static",
        "final",
        "readonly",
        "pub",
        "pub(crate)",
        "private",
        "public",
        "protected",
    ];
    let before = line[..key].trim_end_matches([' ', '\t']);
    let separated = before.len() < key;
    let declared = separated
        && DECLARATIONS.iter().any(|word| {
            before.strip_suffix(word).is_some_and(|rest| {
                !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        });
    let member = line[key..].starts_with("self.") || line[key..].starts_with("this.");
    let parameter = before.ends_with('(');
    // A field of a struct or object literal ends its line with a comma.
    let field = line[end..]
        .strip_prefix(',')
        .is_some_and(|rest| rest.trim().is_empty());
    declared || member || parameter || field
}
