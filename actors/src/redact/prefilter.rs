//! The literal prefilter: where in a text could a secret shape match, and which shapes?
//!
//! Every shape names literals ("triggers") one of which occurs in each of its matches. Two
//! passes of aho-corasick's packed searcher (Teddy), and a `memmem` pass for the one two-byte
//! literal, find them; a clean text with no trigger costs only those scans. A hit then passes
//! its shapes' cheap [`Check`]s, and the line around it gets the set of shapes whose regexes
//! the masker runs there.
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
//!   by a local search over literal choices and layouts that counted, on the benchmark's clean
//!   terminal text, the positions each layout lets through to verification: about 580 per MiB
//!   for the vendor pass (373 of them real `://` hits) and 919 for the stem pass (all real
//!   words: `key`, `token`, `auth`…), where the three automata before let through about 4,300.
//!   Another order gives the same results, only slower. The stems `pass`, `Pass`, `PASS` and
//!   `pwd`, `Pwd`, `PWD` (for the short secret words) replaced `ssw`, `ASSW`, `sphr` and `SSPH`
//!   later, placed the same way with the older stems kept in their order: 1,403 positions per
//!   MiB, all real words again (`passed` in test output is most of the new ones).
//! - Teddy compares as many leading bytes as its shortest literal has (up to four), so a
//!   two-byte literal would blur a whole group: `SK` (Twilio) in the vendor pass let about
//!   123,000 positions per MiB through instead of 580, and made the scans twenty times slower.
//!   It has a pass of its own instead, where aho-corasick hands a single literal to memchr's
//!   `memmem` (about 18 µs per MiB of the benchmark's clean text, against about 140 µs for
//!   the two Teddy passes, measured with the scans alone).
//! - Slim Teddy (eight buckets, 32 bytes per step with AVX2) is asked for explicitly: for more
//!   than 32 literals aho-corasick would pick fat Teddy, which steps 16 bytes at a time.
//!
//! Where the packed searcher is unavailable (no SSSE3, AVX2 or NEON) the same literals go into
//! ordinary Aho-Corasick automata.

use aho_corasick::packed::{self, Searcher};
use aho_corasick::{AhoCorasick, Input, MatchKind, Span};

use super::assign;
use super::shapes::{is_key_byte, Check, Shape, SECRET_WORD_ENDINGS, SHAPES};

/// The trigger literals, one group per pass, in Teddy bucket order (see the module docs). Every
/// trigger of every shape appears here exactly once, and no literal is a prefix of another in
/// its group (both checked by tests), so restarting each search one byte after a hit reports
/// every occurrence. A group of one literal is searched with `memmem` rather than Teddy.
pub(crate) const AUTOMATA: &[&[&str]] = &[
    // Vendor prefixes and other literals of token shapes; URLs.
    &[
        "HRKU-", "k_test_", "gsk_", "hp_", "ooks.s", "xox", "sq0", "_v1_", ":AA", "ATATT3",
        "glpat-", "ghu_", "ghs_", "KIA", "SG.", "ya29.", "ec_", "sk-", "cale_", "eyJ", "ghr_",
        "ho_", "dp.", "hvs.", "EAAA", "pm_", "dapi", "r8_", "_live_", "ai-", "ypi-", "hf_", "ie_",
        "sntry", "shp", "SIA", "_pat_", "://", "n_api_", "xap", "AIza", "glsa_", "tskey-", "SPX-",
        "ooks/",
    ],
    // Secret-word stems, each spelling's own literal, grouped by what Teddy's buckets share.
    &[
        "pass", "Pass", "UTH", "DENTI", "ecre", "auth", "OKEN", "ARER", "key", "PASS", "rer",
        "oken", "denti", "KEY", "Key", "rization", "ECRET", "PWD", "Pwd", "pwd",
    ],
    // Two bytes: alone, so that the groups above keep their three-byte masks.
    &["SK"],
];

/// How many literals there are: sets of them are `u128` bitsets.
const LITERALS: usize = {
    let (mut n, mut i) = (0, 0);
    while i < AUTOMATA.len() {
        n += AUTOMATA[i].len();
        i += 1;
    }
    n
};
const _: () = assert!(LITERALS <= 128, "literal sets are u128 bitsets");

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
        // For one literal, aho-corasick's automaton searches with memchr's `memmem` alone,
        // several times faster than Teddy (and a two-byte literal would give Teddy two-byte
        // masks).
        if let [_] = group {
            return Scanner::automaton(group);
        }
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .only_teddy_fat(Some(false))
            .heuristic_pattern_limits(false)
            .builder()
            .extend(group.iter())
            .build();
        match packed {
            Some(searcher) => Scanner::Packed(searcher),
            None => Scanner::automaton(group),
        }
    }

    fn automaton(group: &[&str]) -> Scanner {
        Scanner::Automaton(
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(group.iter())
                .expect("a few dozen short literals are far below Aho-Corasick's limits"),
        )
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
    /// Every literal, by global index.
    literals: Vec<&'static str>,
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
        let (mut literals, mut shapes) = (Vec::new(), Vec::new());
        for group in AUTOMATA {
            offsets.push(shapes.len());
            for literal in group.iter() {
                literals.push(*literal);
                shapes.push(shapes_of(literal));
            }
            scanners.push(Scanner::new(group));
        }
        Prefilter {
            literals,
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

impl Prefilter {
    /// The shapes confirmed on `line` by the literals in the set `literals` (bit `i` for global
    /// literal `i`): on a line masked from one where those were all the hits, what the
    /// prefilter would confirm, since masking never creates a literal (all are ASCII, and a `•`
    /// only ever replaces characters).
    pub(crate) fn confirm_literals(&self, line: &str, literals: u128) -> u64 {
        let mut confirmed = 0;
        let mut pending = literals;
        while pending != 0 {
            let literal = pending.trailing_zeros() as usize;
            pending &= pending - 1;
            let text = self.literals[literal];
            for (start, _) in line.match_indices(text) {
                let hit = Hit {
                    start,
                    end: start + text.len(),
                    literal,
                };
                confirmed |= self.confirm(line, hit);
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
        Check::StartsWithAny(prefixes) => prefixes.iter().any(|p| text[hit.start..].starts_with(p)),
        Check::Preceded(prefix) => text[..hit.start].ends_with(prefix),
        Check::Followed(class, n) => {
            text.as_bytes()[hit.end..]
                .iter()
                .take(n)
                .filter(|&&b| class.contains(b))
                .count()
                == n
        }
        Check::Assignment => is_assignment(text, hit.start),
        Check::UrlUserinfo => has_userinfo(text, hit.end),
    }
}

/// Is the word that contains `at` a key ending with a secret word, followed by `:` or `=`?
/// (A secret word is letters only, so matching it as a suffix of `line[..end]` never looks
/// before the key.)
///
/// Also, since only a change matters: does the value hold a character other than `•` after
/// its first? The value's first character stays readable, so a value masked already
/// (`token=g•••`, `"password": "h•••",`, `Authorization: Bearer e•••`) is not worth the walk
/// again.
fn is_assignment(text: &str, at: usize) -> bool {
    let line = text.as_bytes();
    let end = at + line[at..].iter().take_while(|&&b| is_key_byte(b)).count();
    // The operator first: it rules out most words cheaply.
    let mut rest = &line[end..];
    if let [b'"' | b'\'', tail @ ..] = rest {
        rest = tail;
    }
    let blanks = rest
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    if !matches!(rest.get(blanks), Some(b':' | b'=')) {
        return false;
    }
    let key = &line[..end];
    if !SECRET_WORD_ENDINGS.iter().any(|word| {
        key.len() >= word.len()
            && key[key.len() - word.len()..].eq_ignore_ascii_case(word.as_bytes())
    }) {
        return false;
    }
    // The value the walk finds for the key that holds `at` (it reads the key forward from
    // any of its bytes, and no further than the line): masked but for its first character
    // already, or absent, the assignment changes nothing.
    assign::value(text, at).is_some_and(|value| unmasked_after_first(&text[value]))
}

/// Does the URL authority that starts at `at` (just after `://`) hold `user:password@`?
///
/// Also, since only a change matters: does the password hold a character other than `•`
/// after its first (which stays readable)?
fn has_userinfo(text: &str, at: usize) -> bool {
    // One pass to the authority's end: its first `:` and last `@`.
    let (mut colon, mut at_sign) = (None, None);
    for (i, &b) in text.as_bytes()[at..].iter().enumerate() {
        match AUTHORITY[usize::from(b)] {
            Authority::End => break,
            Authority::Colon if colon.is_none() => colon = Some(i),
            Authority::At => at_sign = Some(i),
            _ => {}
        }
    }
    match (colon, at_sign) {
        (Some(colon), Some(at_sign)) => {
            // Both are ASCII, so the password between them is whole characters.
            colon + 1 < at_sign && unmasked_after_first(&text[at + colon + 1..at + at_sign])
        }
        _ => false,
    }
}

/// What a byte is to [`has_userinfo`].
#[derive(Clone, Copy)]
enum Authority {
    /// Part of the authority.
    Other,
    Colon,
    At,
    /// ASCII whitespace or one of `/?#"'`<>`: the authority ends before it.
    End,
}

const AUTHORITY: [Authority; 256] = {
    let mut table = [Authority::Other; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        if b.is_ascii_whitespace() {
            table[i] = Authority::End;
        }
        i += 1;
    }
    let ends = b"/?#\"'`<>";
    let mut i = 0;
    while i < ends.len() {
        table[ends[i] as usize] = Authority::End;
        i += 1;
    }
    table[b':' as usize] = Authority::Colon;
    table[b'@' as usize] = Authority::At;
    table
};

/// Does the line that `rest` starts hold a character other than `•`, `\r` (which masking
/// keeps) and its first character?
fn unmasked_after_first(rest: &str) -> bool {
    let line = rest.split('\n').next().unwrap_or_default();
    let mut chars = line.chars();
    chars.next();
    chars.any(|c| c != super::MASK && c != '\r')
}
