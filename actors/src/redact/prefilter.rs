//! The literal prefilter: where in a text could a secret shape match, and which shapes?
//!
//! Every shape names literals ("triggers") one of which occurs in each of its matches. Two
//! passes of aho-corasick's packed searcher (Teddy) find them; a clean text with no trigger
//! costs only those scans. A hit then passes its shapes' cheap [`Check`]s, and the line around
//! it gets the set of shapes whose regexes the masker runs there.
//!
//! The scans decide the cost of clean text, so the literals are chosen for them. Teddy compares
//! the first three bytes of the text at each position with eight "buckets" of literals, one
//! nibble mask per byte and bucket, and verifies each position that passes; literals sharing a
//! bucket blur its masks, and every false candidate costs a verification. So:
//! - The searches are case-sensitive: an ASCII-case-insensitive one loses Teddy altogether.
//!   Secret words are listed in lower, Title and UPPER case instead (see [`super::shapes`]).
//! - A trigger need not be a shape's vendor prefix, only a literal every match contains: `hp_`
//!   for `ghp_`, `ooks.s` for `hooks.slack.com/`, `UTH` for `AUTH` (an upper-case `AUTH` would
//!   share `auth`'s bucket and masks and fire on every `Author:` of a `git log`).
//! - Teddy puts the literals into buckets in the order given (the `i`-th literal with new low
//!   nibbles into bucket `7 - i % 8`), so the order below *is* the bucket layout. It was chosen
//!   by counting, over the benchmark's terminal text, the positions each layout lets through
//!   (a local search over literal choices and layouts): the vendor pass passes about 580
//!   positions per MiB, 373 of them real `://` hits, where the earlier three automata passed
//!   about 4,300. Reordering keeps results the same and only costs speed.
//! - Slim Teddy (eight buckets, 32 bytes per step with AVX2) is asked for explicitly: for more
//!   than 32 literals aho-corasick would pick fat Teddy, which steps 16 bytes at a time.
//!
//! Where the packed searcher is unavailable (no SSSE3, AVX2 or NEON) the same literals go into
//! ordinary Aho-Corasick automata.

use aho_corasick::packed::{self, Searcher};
use aho_corasick::{AhoCorasick, Input, MatchKind, Span};

use super::shapes::{is_key_byte, Check, Shape, SECRET_WORD_ENDINGS, SHAPES};

/// The trigger literals, one group per pass, in Teddy bucket order (see the module docs). Every
/// trigger of every shape appears here exactly once, and no literal is a prefix of another in
/// its group (both checked by tests), so restarting each search one byte after a hit reports
/// every occurrence.
pub(crate) const AUTOMATA: &[&[&str]] = &[
    // Vendor prefixes and other literals of token shapes; URLs.
    &[
        "HRKU-", "k_test_", "gsk_", "hp_", "ooks.s", "xox", "sq0", "_v1_", ":AA", "ATATT3",
        "glpat-", "ghu_", "ghs_", "KIA", "SG.", "ya29.", "ec_", "sk-", "cale_", "eyJ", "ghr_",
        "ho_", "dp.", "hvs.", "EAAA", "pm_", "dapi", "r8_", "_live_", "ai-", "ypi-", "hf_", "ie_",
        "sntry", "shp", "SIA", "_pat_", "://", "n_api_", "xap", "AIza", "glsa_", "tskey-",
        "SPX-", "ooks/",
    ],
    // Secret-word stems, each spelling's own literal, grouped by what Teddy's buckets share.
    &[
        "UTH", "DENTI", "ecre", "auth", "OKEN", "ARER", "ASSW", "SSPH", "key", "sphr", "rer",
        "ssw", "oken", "denti", "KEY", "Key", "rization", "ECRET",
    ],
];

/// A trigger occurrence: byte offsets in the scanned text and the literal's global index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) literal: usize,
}

/// One pass over the text for one group of literals.
#[derive(Debug)]
enum Scanner {
    Packed(Searcher),
    Automaton(AhoCorasick),
}

impl Scanner {
    fn new(group: &[&str]) -> Scanner {
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .only_teddy_fat(Some(false))
            .heuristic_pattern_limits(false)
            .builder()
            .extend(group.iter())
            .build();
        match packed {
            Some(searcher) => Scanner::Packed(searcher),
            None => Scanner::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(group.iter())
                    .expect("a few dozen short literals are far below Aho-Corasick's limits"),
            ),
        }
    }

    /// The leftmost occurrence in `text[at..]`: `(start, end, literal index in the group)`.
    fn find(&self, text: &str, at: usize) -> Option<(usize, usize, usize)> {
        match self {
            Scanner::Packed(searcher) => searcher
                .find_in(text, Span::from(at..text.len()))
                .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
            Scanner::Automaton(automaton) => automaton
                .find(Input::new(text).range(at..))
                .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
        }
    }
}

/// The scanners and, per literal, the shapes it triggers.
#[derive(Debug)]
pub(crate) struct Prefilter {
    scanners: Vec<Scanner>,
    /// Global literal index of each group's first literal.
    offsets: Vec<usize>,
    /// Per global literal index: bit `i` set when `SHAPES[i]` lists the literal.
    shapes: Vec<u64>,
}

impl Prefilter {
    pub(crate) fn new() -> Prefilter {
        let mut scanners = Vec::with_capacity(AUTOMATA.len());
        let mut offsets = Vec::with_capacity(AUTOMATA.len());
        let mut shapes = Vec::new();
        for group in AUTOMATA {
            offsets.push(shapes.len());
            for literal in group.iter() {
                shapes.push(shapes_of(literal));
            }
            scanners.push(Scanner::new(group));
        }
        Prefilter {
            scanners,
            offsets,
            shapes,
        }
    }

    /// Every trigger occurrence in `text`, sorted by start. `scratch` is a buffer to reuse.
    pub(crate) fn hits(&self, text: &str, hits: &mut Vec<Hit>, scratch: &mut Vec<Hit>) {
        hits.clear();
        for (scanner, offset) in self.scanners.iter().zip(&self.offsets) {
            // Each pass finds its hits in order: merge the sorted runs.
            scratch.clear();
            let mut at = 0;
            while let Some((start, end, literal)) = scanner.find(text, at) {
                scratch.push(Hit {
                    start,
                    end,
                    literal: offset + literal,
                });
                // One byte on, not `end`: a literal overlapping this one is reported too.
                at = start + 1;
            }
            merge(hits, scratch);
        }
    }

    /// The shapes worth trying because of `hit`. `text` is the hit's line or any text around
    /// it: the checks look no further than the line.
    pub(crate) fn confirm(&self, text: &str, hit: Hit) -> u64 {
        let mut confirmed = 0;
        let mut candidates = self.shapes[hit.literal];
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if passes(SHAPES[i].check, text, hit) {
                confirmed |= 1 << i;
            }
        }
        confirmed
    }
}

/// Merges the sorted `run` into the sorted `hits`.
fn merge(hits: &mut Vec<Hit>, run: &[Hit]) {
    if run.is_empty() {
        return;
    }
    if hits.is_empty() {
        hits.extend_from_slice(run);
        return;
    }
    let mut merged = Vec::with_capacity(hits.len() + run.len());
    let (mut a, mut b) = (hits.iter().peekable(), run.iter().peekable());
    while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
        if x.start <= y.start {
            merged.push(**x);
            a.next();
        } else {
            merged.push(**y);
            b.next();
        }
    }
    merged.extend(a.copied());
    merged.extend(b.copied());
    *hits = merged;
}

fn shapes_of(literal: &str) -> u64 {
    SHAPES
        .iter()
        .enumerate()
        .filter(|(_, shape): &(usize, &Shape)| shape.triggers.contains(&literal))
        .fold(0, |set, (i, _)| set | 1 << i)
}

/// Each check reads forward from the hit no further than the line's end, and backward only
/// bytes that cannot be a line break, so it gives the same answer on the line and on the text.
fn passes(check: Check, text: &str, hit: Hit) -> bool {
    match check {
        Check::None => true,
        Check::StartsWith(prefix) => text[hit.start..].starts_with(prefix),
        Check::Assignment => is_assignment(text.as_bytes(), hit.start),
        Check::UrlUserinfo => has_userinfo(text.as_bytes(), hit.end),
    }
}

/// Is the word that contains `at` a key ending with a secret word, followed by `:` or `=`?
/// (A secret word is letters only, so matching it as a suffix of `line[..end]` never looks
/// before the key.)
fn is_assignment(line: &[u8], at: usize) -> bool {
    let end = at + line[at..].iter().take_while(|&&b| is_key_byte(b)).count();
    let key = &line[..end];
    let ends_with_secret_word = SECRET_WORD_ENDINGS.iter().any(|word| {
        key.len() >= word.len()
            && key[key.len() - word.len()..].eq_ignore_ascii_case(word.as_bytes())
    });
    if !ends_with_secret_word {
        return false;
    }
    let mut rest = &line[end..];
    if let [b'"' | b'\'', tail @ ..] = rest {
        rest = tail;
    }
    let blanks = rest
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    matches!(rest.get(blanks), Some(b':' | b'='))
}

/// Does the URL authority that starts at `at` (just after `://`) hold `user:password@`?
fn has_userinfo(line: &[u8], at: usize) -> bool {
    let authority = &line[at..];
    let len = authority
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b"/?#\"'`<>".contains(&b))
        .unwrap_or(authority.len());
    let authority = &authority[..len];
    match (
        authority.iter().position(|&b| b == b':'),
        authority.iter().rposition(|&b| b == b'@'),
    ) {
        (Some(colon), Some(at_sign)) => colon + 1 < at_sign,
        _ => false,
    }
}
