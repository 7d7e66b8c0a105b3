//! The masker: finds secret shapes in a text and replaces each secret character with `•`.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::prefilter::{Hit, Prefilter};
use super::shapes::{Value, SHAPES};
use super::MASK;
use super::{assign, pem};

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
    /// Per shape: the spellings of the literal its matches start with, when the rest of every
    /// match is the secret group (see [`literal_prefix`]).
    prefixes: Vec<Option<Vec<String>>>,
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
            prefixes: SHAPES.iter().map(|s| literal_prefix(s.pattern)).collect(),
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

    /// `text` masked as a card shows it (SPEC §10.1): vendor-prefixed tokens, PEM blocks and URL
    /// passwords only — never an assignment to a secret word, whose "value" may be a command
    /// substitution that would run (``API_TOKEN=`curl …|sh` make``): hiding it would hide what
    /// a tap decides. Borrowed when nothing was masked, so `Cow::Owned` means the card masked.
    pub fn mask_card<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self
            .engine
            .as_ref()
            .and_then(|engine| engine.mask_only(text, !ASSIGNMENTS))
        {
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

    /// Where each assignment to a secret word in `line` starts, and its value, as the masker
    /// finds them, worth masking or not (for tests: they must be where the regex finds them).
    #[cfg(test)]
    pub(crate) fn assignment_values(&self, line: &str) -> Vec<(usize, Range<usize>)> {
        let mut found = Vec::new();
        if self.engine.is_some() {
            assign::find(line, |key, value| found.push((key, value)));
        }
        found
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
    /// The shapes whose checks passed at some hit: worth a regex run.
    shapes: u64,
    /// Every literal hit on the line (bit `i` for the prefilter's literal `i`), checked or not:
    /// what can be found on the line once masked.
    literals: u128,
}

impl Engine {
    fn regex(&self, i: usize) -> &Regex {
        self.regexes[i].get_or_init(|| {
            Regex::new(SHAPES[i].pattern).expect("every shape pattern compiles (unit-tested)")
        })
    }

    /// Calls `found(secret)` with the byte range of each secret of `SHAPES[i]` in `line` worth
    /// masking (before `keep` is applied).
    fn for_each_secret(&self, i: usize, line: &str, mut found: impl FnMut(Range<usize>)) {
        match SHAPES[i].value {
            // Found by hand, as the regex would find them (see `assign`).
            Value::Assignment => assign::find(line, |key, value| {
                if assign::is_secret(line, key, value.clone()) {
                    found(value);
                }
            }),
            // The group is the match less its literal prefix: the regex's DFAs find the match,
            // and the captures engine has nothing to add.
            Value::Token if self.prefixes[i].is_some() => {
                let spellings = self.prefixes[i].as_deref().unwrap_or_default();
                let regex = self.regex(i);
                for m in regex.find_iter(line) {
                    let mut starts = spellings
                        .iter()
                        .filter(|p| m.as_str().starts_with(p.as_str()));
                    match (starts.next(), starts.next()) {
                        (Some(prefix), None) => found(m.start() + prefix.len()..m.end()),
                        // Two spellings fit: ask the captures engine which one it took.
                        _ => {
                            let secret = regex
                                .captures_at(line, m.start())
                                .and_then(|caps| caps.get(1));
                            if let Some(secret) = secret {
                                found(secret.range());
                            }
                        }
                    }
                }
            }
            kind => {
                for caps in self.regex(i).captures_iter(line) {
                    let Some(secret) = caps.iter().skip(1).flatten().next() else {
                        continue;
                    };
                    if kind == Value::Token || assign::is_secret_value(secret.as_str()) {
                        found(secret.range());
                    }
                }
            }
        }
    }

    fn mask(&self, text: &str) -> Option<String> {
        self.mask_only(text, u64::MAX)
    }

    /// Masks `text` with the shapes in `only` (a bitset over [`SHAPES`]); `None` when nothing
    /// changed.
    fn mask_only(&self, text: &str, only: u64) -> Option<String> {
        #[cfg(test)]
        if self.every_shape {
            let mut candidates = Vec::new();
            let mut start = 0;
            for line in text.split('\n') {
                let line = start..start + line.len();
                start = line.end + 1;
                candidates.push(Candidate {
                    line,
                    shapes: all_shapes() & only,
                    literals: 0,
                });
            }
            return self.rewrite(text, &candidates, only);
        }
        let (mut hits, mut scratch) = (Vec::new(), Vec::new());
        self.prefilter.hits(text, &mut hits, &mut scratch);
        if hits.is_empty() {
            return None;
        }
        let mut candidates = self.candidates(text, &hits);
        for candidate in &mut candidates {
            candidate.shapes &= only;
        }
        candidates.retain(|candidate| candidate.shapes != 0);
        if candidates.is_empty() {
            return None;
        }
        self.rewrite(text, &candidates, only)
    }

    /// The lines where some hit passes a shape's check, with the shapes of all their hits.
    ///
    /// The checks run on the whole text (they read no further than the hit's line), so a line
    /// is only looked up for a hit that passes one: on clean text, almost never.
    fn candidates(&self, text: &str, hits: &[Hit]) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = Vec::new();
        // The index of the first hit not yet part of a candidate line.
        let mut i = 0;
        while i < hits.len() {
            let confirmed = self.prefilter.confirm(text, hits[i]);
            if confirmed == 0 {
                i += 1;
                continue;
            }
            let at = hits[i].start;
            let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
            let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
            // Earlier hits on this line passed no check, but their literals count.
            let mut literals = 0u128;
            let mut j = i;
            while j > 0 && hits[j - 1].start >= start {
                j -= 1;
                literals |= 1 << hits[j].literal;
            }
            let mut shapes = confirmed;
            literals |= 1 << hits[i].literal;
            i += 1;
            while i < hits.len() && hits[i].start < end {
                shapes |= self.prefilter.confirm(text, hits[i]);
                literals |= 1 << hits[i].literal;
                i += 1;
            }
            candidates.push(Candidate {
                line: start..end,
                shapes,
                literals,
            });
        }
        candidates
    }

    /// Masks the PEM bodies begun on candidate lines and the single-line shapes on the others.
    fn rewrite(&self, text: &str, candidates: &[Candidate], only: u64) -> Option<String> {
        let mut body = Vec::new();
        for candidate in candidates {
            if candidate.shapes & MULTILINE != 0 {
                pem::body_lines(text, candidate.line.clone(), &mut body);
            }
        }
        // A BEGIN line can sit in another block's headers, and the two blocks share a body.
        if !body.is_sorted_by_key(|range| range.start) {
            body.sort_unstable_by_key(|range| range.start);
        }
        body.dedup();
        // The body lines that change and the masked candidate lines, each run in text order and
        // disjoint from the other, are written out as they come.
        let mut bodies = body
            .iter()
            .filter(|range| text[(*range).clone()].chars().any(|c| c != MASK))
            .peekable();
        let mut out: Option<String> = None;
        let mut at = 0;
        let mut emit = |out: &mut Option<String>, range: Range<usize>, new: &str| {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + text.len() / 8));
            out.push_str(&text[at..range.start]);
            out.push_str(new);
            at = range.end;
        };
        let (mut spans, mut masked, mut spare) = (Vec::new(), String::new(), String::new());
        for candidate in candidates {
            let line = candidate.line.clone();
            // Body ranges are sorted, disjoint and each within one line.
            let next = body.partition_point(|b| b.end < line.start);
            let in_body = body.get(next).is_some_and(|b| b.start <= line.end);
            let shapes = candidate.shapes & !MULTILINE;
            if in_body || shapes == 0 {
                continue;
            }
            let buffers = (&mut spans, &mut masked, &mut spare);
            let literals = (candidate.literals, only);
            if self.mask_line(&text[line.clone()], shapes, literals, buffers) {
                while let Some(range) = bodies.next_if(|b| b.start < line.start) {
                    emit(
                        &mut out,
                        range.clone(),
                        &bullets(text[range.clone()].chars().count()),
                    );
                }
                emit(&mut out, line, &masked);
            }
        }
        for range in bodies {
            emit(
                &mut out,
                range.clone(),
                &bullets(text[range.clone()].chars().count()),
            );
        }
        let mut out = out?;
        out.push_str(&text[at..]);
        Some(out)
    }

    /// Masks one line with `shapes`, then again until that finds nothing more: a fixed point,
    /// so that masking the result again is a no-op even where two shapes overlap. False when
    /// nothing changed.
    ///
    /// Each round tries the shapes the prefilter confirms on the masked line, which is what
    /// masking it again would try: a shape it leaves out has no trigger there that passes its
    /// check, and so no match. Those triggers are among the `literals` hit on `line`.
    ///
    /// The masked line is left in `masked`; `spans` and `spare` are buffers to reuse. Only the
    /// shapes in `only` are tried, in every round.
    fn mask_line(
        &self,
        line: &str,
        shapes: u64,
        (literals, only): (u128, u64),
        (spans, masked, spare): (&mut Vec<Range<usize>>, &mut String, &mut String),
    ) -> bool {
        spans.clear();
        self.line_spans(line, shapes & only, spans);
        if !apply(line, spans, masked) {
            return false;
        }
        loop {
            spans.clear();
            let again = self.again(masked, literals) & only;
            self.line_spans(masked, again, spans);
            if !apply(masked, spans, spare) {
                return true;
            }
            std::mem::swap(masked, spare);
        }
    }

    /// The shapes worth trying on a masked line: those the prefilter confirms there.
    fn again(&self, line: &str, literals: u128) -> u64 {
        #[cfg(test)]
        if self.every_shape {
            return all_shapes();
        }
        self.prefilter.confirm_literals(line, literals)
    }

    /// The byte ranges of `line` that the single-line shapes in `shapes` mask.
    fn line_spans(&self, line: &str, shapes: u64, spans: &mut Vec<Range<usize>>) {
        let mut pending = shapes & !MULTILINE;
        while pending != 0 {
            let i = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let keep = SHAPES[i].keep;
            self.for_each_secret(i, line, |secret| {
                let start = skip_chars(line, secret.start, secret.end, keep);
                if start < secret.end {
                    spans.push(start..secret.end);
                }
            });
        }
    }
}

#[cfg(test)]
fn all_shapes() -> u64 {
    u64::MAX >> (64 - SHAPES.len())
}

/// The multi-line shapes, which the line-by-line masking leaves to [`pem`].
const MULTILINE: u64 = {
    let (mut set, mut i) = (0, 0);
    while i < SHAPES.len() {
        if SHAPES[i].multiline {
            set |= 1 << i;
        }
        i += 1;
    }
    set
};

/// The assignments to secret words, which a card never masks ([`Masker::mask_card`]).
const ASSIGNMENTS: u64 = {
    let (mut set, mut i) = (0, 0);
    while i < SHAPES.len() {
        if matches!(SHAPES[i].value, Value::Assignment) {
            set |= 1 << i;
        }
        i += 1;
    }
    set
};

/// The byte offset after the first `keep` characters of `line[start..end]`.
fn skip_chars(line: &str, start: usize, end: usize, keep: usize) -> usize {
    line[start..end]
        .char_indices()
        .nth(keep)
        .map_or(end, |(i, _)| start + i)
}

/// Writes `line` with the characters in `spans` replaced by `•` to `out`; false (and `out`
/// left as it may be) if that changes nothing.
fn apply(line: &str, spans: &mut [Range<usize>], out: &mut String) -> bool {
    // Most often (the last round of `mask_line`) nothing changes: find out before copying.
    let changes = |span: &Range<usize>| {
        line[span.clone()]
            .chars()
            .any(|c| !matches!(c, MASK | '\n' | '\r'))
    };
    if !spans.iter().any(changes) {
        return false;
    }
    if !spans.is_sorted_by_key(|r| r.start) {
        spans.sort_unstable_by_key(|r| r.start);
    }
    out.clear();
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
    changed
}

fn bullets(n: usize) -> String {
    std::iter::repeat_n(MASK, n).collect()
}

/// For a pattern `(?-u:\b)LITERAL(GROUP)` or `(?-u:\b)LITERAL(GROUP)(?-u:\b)`, where LITERAL
/// is plain characters with at most one choice of plain strings in it (`(?:AKIA|ASIA)`,
/// `sk-(?:proj|svcacct|admin)-`) and GROUP holds no other group: every spelling of the literal.
/// Every match is then one of them followed by the group, so the group is found from the match
/// alone. `None` for any other pattern.
fn literal_prefix(pattern: &str) -> Option<Vec<String>> {
    const BOUNDARY: &str = r"(?-u:\b)";
    let rest = pattern.strip_prefix(BOUNDARY)?;
    let (head, rest) = rest.split_at(rest.find('(')?);
    plain(head)?;
    let (spellings, rest) = match rest.strip_prefix("(?:") {
        Some(choice) => {
            let (choices, rest) = choice.split_at(choice.find(')')?);
            let rest = &rest[1..];
            let (tail, rest) = rest.split_at(rest.find('(')?);
            let tail = plain(tail)?;
            let spellings = choices
                .split('|')
                .map(|alt| Some(format!("{}{}{tail}", plain(head)?, plain(alt)?)))
                .collect::<Option<Vec<_>>>()?;
            (spellings, rest)
        }
        None => (vec![plain(head)?], rest),
    };
    let group = rest.strip_prefix('(')?;
    let (inner, tail) = group.split_at(group.find(')')?);
    // No group inside (a `(` before the first `)`), no choice, no escaped `)`.
    let plain_group = !inner.contains(['(', '|']) && !inner.ends_with('\\');
    let tail = &tail[1..];
    (plain_group && (tail.is_empty() || tail == BOUNDARY)).then_some(spellings)
}

/// `text` as the string it matches, if it is a regex of plain characters only (letters,
/// digits, `_`, `-`, `\.`).
fn plain(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next() == Some('.') => out.push('.'),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod literal_prefix_tests {
    use super::literal_prefix;
    use crate::redact::shapes::SHAPES;

    #[test]
    fn literal_prefixes_of_the_shapes() {
        let found: Vec<(&str, Vec<String>)> = SHAPES
            .iter()
            .filter_map(|s| literal_prefix(s.pattern).map(|n| (s.name, n)))
            .collect();
        let has = |name: &str, spellings: &[&str]| {
            found.iter().any(|(n, s)| {
                *n == name && s.iter().map(String::as_str).eq(spellings.iter().copied())
            })
        };
        assert!(has("github-pat", &["ghp_"]), "{found:?}");
        assert!(has("aws-access-key-id", &["AKIA", "ASIA"]), "{found:?}");
        assert!(has("jwt", &["eyJ"]), "{found:?}");
        assert!(
            has("openai-project", &["sk-proj-", "sk-svcacct-", "sk-admin-"]),
            "{found:?}"
        );
        assert!(
            has(
                "doppler",
                &[
                    "dp.pt.",
                    "dp.st.",
                    "dp.sa.",
                    "dp.ct.",
                    "dp.scim.",
                    "dp.audit."
                ]
            ),
            "{found:?}"
        );
        assert!(
            has("stripe-secret-key", &["sk_live_", "sk_test_"]),
            "{found:?}"
        );
        assert!(has("twilio-api-key", &["SK"]), "{found:?}");
        for name in [
            "databricks",
            "telegram-bot",
            "collie-device-token",
            "mailgun",
            "url-password",
            "secret-assignment",
            "private-key-block",
            "slack-token",
            "digitalocean",
        ] {
            assert!(found.iter().all(|(n, _)| *n != name), "{name}: {found:?}");
        }
        // One group, the secret.
        for (name, _) in &found {
            let shape = SHAPES.iter().find(|s| s.name == *name).expect("listed");
            let re = regex::Regex::new(shape.pattern).expect("compiles");
            assert_eq!(re.captures_len(), 2, "{name}");
        }
    }
}
