//! The masker: finds secret shapes in a text and replaces each secret character with `•`.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::pem;
use super::prefilter::{Hit, Prefilter};
use super::shapes::{Shape, Value, SHAPES};
use super::MASK;

const _: () = assert!(SHAPES.len() <= 64, "shape sets are u64 bitsets");

/// Masks known secret shapes in text that leaves the machine (SPEC §6).
///
/// Built once and shared (`Arc<Masker>`): it holds no mutable state, and [`Masker::mask`] is a
/// plain function of its input. Each masked character becomes one `•`, so a line keeps its
/// character count and a text its line count; masking twice changes nothing more.
///
/// Multi-line shapes (PEM private key blocks) are only seen when the lines come in one call:
/// mask a screen or a file as a whole rather than line by line.
pub struct Masker {
    engine: Option<Engine>,
}

/// The compiled prefilter, and each shape's regex, compiled when first needed.
struct Engine {
    prefilter: Prefilter,
    regexes: Vec<OnceLock<Regex>>,
    /// Test only: skip the prefilter and try every shape on every line.
    #[cfg(test)]
    every_shape: bool,
}

impl Masker {
    /// A masker; `enabled == false` (`COLLIE_REDACT=off`) masks nothing and builds nothing.
    pub fn new(enabled: bool) -> Masker {
        let engine = enabled.then(|| Engine {
            prefilter: Prefilter::new(),
            regexes: SHAPES.iter().map(|_| OnceLock::new()).collect(),
            #[cfg(test)]
            every_shape: false,
        });
        Masker { engine }
    }

    /// Whether masking is on.
    pub fn is_enabled(&self) -> bool {
        self.engine.is_some()
    }

    /// `text` with every secret masked; borrowed, without a copy, when there was nothing to mask.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.engine.as_ref().and_then(|engine| engine.mask(text)) {
            Some(masked) => Cow::Owned(masked),
            None => Cow::Borrowed(text),
        }
    }

    /// [`Masker::mask`] for an owned string, which is handed back as is when nothing matched.
    pub fn mask_string(&self, text: String) -> String {
        match self.engine.as_ref().and_then(|engine| engine.mask(&text)) {
            Some(masked) => masked,
            None => text,
        }
    }

    /// A masker that tries every shape on every line, as if the prefilter had fired everywhere
    /// (for tests: its output must equal the real masker's).
    #[cfg(test)]
    pub(crate) fn without_prefilter() -> Masker {
        let mut masker = Masker::new(true);
        if let Some(engine) = &mut masker.engine {
            engine.every_shape = true;
        }
        masker
    }

    /// The names of the shapes that mask something in `text` (for tests).
    #[cfg(test)]
    pub(crate) fn shapes_found(&self, text: &str) -> Vec<&'static str> {
        let Some(engine) = &self.engine else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (i, shape) in SHAPES.iter().enumerate() {
            let mut spans = Vec::new();
            let mut start = 0;
            for line in text.split('\n') {
                if shape.multiline {
                    pem::body_lines(text, start..start + line.len(), &mut spans);
                } else {
                    engine.line_spans(line, 1 << i, &mut spans);
                }
                start += line.len() + 1;
            }
            if !spans.is_empty() {
                found.push(shape.name);
            }
        }
        found
    }
}

impl fmt::Debug for Masker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Masker")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

/// A line of the text with trigger hits, and the shapes they make worth trying.
struct Candidate {
    line: Range<usize>,
    shapes: u64,
}

impl Engine {
    fn regex(&self, i: usize) -> &Regex {
        self.regexes[i].get_or_init(|| {
            Regex::new(SHAPES[i].pattern).expect("every shape pattern compiles (unit-tested)")
        })
    }

    fn mask(&self, text: &str) -> Option<String> {
        #[cfg(test)]
        if self.every_shape {
            let mut candidates = Vec::new();
            let mut start = 0;
            for line in text.split('\n') {
                let line = start..start + line.len();
                start = line.end + 1;
                candidates.push(Candidate {
                    line,
                    shapes: all_shapes(),
                });
            }
            return self.rewrite(text, &candidates);
        }
        let mut hits = Vec::new();
        self.prefilter.hits(text, &mut hits);
        if hits.is_empty() {
            return None;
        }
        let candidates = self.candidates(text, &hits);
        self.rewrite(text, &candidates)
    }

    /// Groups the hits by line and keeps the lines where some shape passed its check.
    fn candidates(&self, text: &str, hits: &[Hit]) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = Vec::new();
        // The end of the last line looked at: the next hit's line starts after it.
        let mut floor = 0;
        let mut i = 0;
        while i < hits.len() {
            let first = hits[i].start;
            let start = text[floor..first]
                .rfind('\n')
                .map_or(floor, |n| floor + n + 1);
            let end = text[first..].find('\n').map_or(text.len(), |n| first + n);
            let line = &text[start..end];
            let mut shapes = 0;
            while i < hits.len() && hits[i].start < end {
                let hit = Hit {
                    start: hits[i].start - start,
                    end: hits[i].end - start,
                    literal: hits[i].literal,
                };
                shapes |= self.prefilter.confirm(line, hit);
                i += 1;
            }
            floor = end;
            if shapes != 0 {
                candidates.push(Candidate {
                    line: start..end,
                    shapes,
                });
            }
        }
        candidates
    }

    /// Masks the PEM bodies begun on candidate lines and the single-line shapes on the others.
    fn rewrite(&self, text: &str, candidates: &[Candidate]) -> Option<String> {
        let mut body = Vec::new();
        for candidate in candidates {
            if candidate.shapes & multiline_shapes() != 0 {
                pem::body_lines(text, candidate.line.clone(), &mut body);
            }
        }
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        for range in &body {
            if text[range.clone()].chars().any(|c| c != MASK) {
                edits.push((range.clone(), bullets(text[range.clone()].chars().count())));
            }
        }
        for candidate in candidates {
            let line = candidate.line.clone();
            let in_body = body
                .binary_search_by(|b| {
                    if b.end < line.start {
                        std::cmp::Ordering::Less
                    } else if b.start > line.end {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .is_ok();
            let shapes = candidate.shapes & !multiline_shapes();
            if in_body || shapes == 0 {
                continue;
            }
            if let Some(masked) = self.mask_line(&text[line.clone()], shapes) {
                edits.push((line, masked));
            }
        }
        if edits.is_empty() {
            return None;
        }
        edits.sort_unstable_by_key(|(range, _)| range.start);
        let mut out = String::with_capacity(text.len() + text.len() / 8);
        let mut at = 0;
        for (range, replacement) in &edits {
            out.push_str(&text[at..range.start]);
            out.push_str(replacement);
            at = range.end;
        }
        out.push_str(&text[at..]);
        Some(out)
    }

    /// Masks one line until masking finds nothing more (a fixed point, so that masking the
    /// result again is a no-op even where two shapes overlap). `None` when nothing changed.
    fn mask_line(&self, line: &str, shapes: u64) -> Option<String> {
        let mut spans = Vec::new();
        self.line_spans(line, shapes, &mut spans);
        let mut masked = apply(line, &mut spans)?;
        let mut scratch = Vec::new();
        loop {
            #[cfg(test)]
            let shapes = if self.every_shape {
                all_shapes()
            } else {
                self.prefilter.line_shapes(&masked, &mut scratch)
            };
            #[cfg(not(test))]
            let shapes = self.prefilter.line_shapes(&masked, &mut scratch);
            spans.clear();
            self.line_spans(&masked, shapes, &mut spans);
            match apply(&masked, &mut spans) {
                Some(again) => masked = again,
                None => return Some(masked),
            }
        }
    }

    /// The byte ranges of `line` that the single-line shapes in `shapes` mask.
    fn line_spans(&self, line: &str, shapes: u64, spans: &mut Vec<Range<usize>>) {
        let mut pending = shapes & !multiline_shapes();
        while pending != 0 {
            let i = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let shape = &SHAPES[i];
            for caps in self.regex(i).captures_iter(line) {
                let Some(secret) = caps.iter().skip(1).flatten().next() else {
                    continue;
                };
                if shape.value == Value::Assigned {
                    // `https://x-access-token:…@host` is a URL's user and password, not an
                    // assignment to `x-access-token`: the URL shape masks just the password.
                    let whole = caps.get(0).map_or(secret.start(), |m| m.start());
                    let in_url = line[..whole].ends_with("//");
                    let quoted = line[..secret.start()].ends_with(['"', '\'', '`']);
                    if in_url
                        || !is_secret_value(secret.as_str())
                        || (!quoted && is_code(line, whole))
                    {
                        continue;
                    }
                }
                let start = skip_chars(line, secret.start(), secret.end(), shape);
                if start < secret.end() {
                    spans.push(start..secret.end());
                }
            }
        }
    }
}

#[cfg(test)]
fn all_shapes() -> u64 {
    u64::MAX >> (64 - SHAPES.len())
}

/// The multi-line shapes, which the line-by-line masking leaves to [`pem`].
fn multiline_shapes() -> u64 {
    SHAPES
        .iter()
        .enumerate()
        .filter(|(_, s)| s.multiline)
        .fold(0, |set, (i, _)| set | 1 << i)
}

/// The byte offset after the first `shape.keep` characters of `line[start..end]`.
fn skip_chars(line: &str, start: usize, end: usize, shape: &Shape) -> usize {
    line[start..end]
        .char_indices()
        .nth(shape.keep)
        .map_or(end, |(i, _)| start + i)
}

/// `line` with the characters in `spans` replaced by `•`; `None` if that changes nothing.
fn apply(line: &str, spans: &mut [Range<usize>]) -> Option<String> {
    spans.sort_unstable_by_key(|r| r.start);
    let mut out =
        String::with_capacity(line.len() + 2 * spans.iter().map(|r| r.len()).sum::<usize>());
    let mut changed = false;
    let mut at = 0;
    for span in spans.iter() {
        let start = span.start.max(at);
        if start >= span.end {
            continue;
        }
        out.push_str(&line[at..start]);
        for c in line[start..span.end].chars() {
            if c == '\n' || c == '\r' {
                out.push(c);
            } else {
                changed |= c != MASK;
                out.push(MASK);
            }
        }
        at = span.end;
    }
    out.push_str(&line[at..]);
    changed.then_some(out)
}

fn bullets(n: usize) -> String {
    std::iter::repeat_n(MASK, n).collect()
}

/// Whether a value assigned to a secret word is worth masking: not empty, not a placeholder
/// (`null`, `true`, `***`), not a reference to where the secret lives (`$VAR`, `${VAR}`,
/// `$(cmd)`, `{{ secrets.X }}`, `%VAR%`, `<token>`) and not a call (`get_token()`).
fn is_secret_value(value: &str) -> bool {
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

/// Whether the assignment whose key starts at `key` is a declaration or a field in source code
/// (`let token = cursor;`, `self.password = password`): there an unquoted value names a
/// variable, and only a quoted literal is a secret.
fn is_code(line: &str, key: usize) -> bool {
    const DECLARATIONS: &[&str] = &[
        "let", "mut", "const", "var", "val", "my", "auto", "static", "final", "readonly",
    ];
    let before = line[..key].trim_end_matches([' ', '\t']);
    let separated = before.len() < key;
    let declared = separated
        && DECLARATIONS.iter().any(|word| {
            before.strip_suffix(word).is_some_and(|rest| {
                !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        });
    declared || line[key..].starts_with("self.") || line[key..].starts_with("this.")
}
