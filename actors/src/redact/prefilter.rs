//! The literal prefilter: where in a text could a secret shape match, and which shapes?
//!
//! Every shape names literals ("triggers") one of which occurs in each of its matches. A few
//! Aho-Corasick automata find them; a clean text with no trigger costs only those scans. A hit
//! then passes its shapes' cheap [`Check`]s, and the line around it gets the set of shapes whose
//! regexes the masker runs there.
//!
//! The automata are case-sensitive on purpose. An ASCII-case-insensitive automaton loses the
//! SIMD literal search (Teddy) and scans at about half a gigabyte per second; so secret words
//! are listed in lower, Title and UPPER case instead (see [`super::shapes`]). Teddy also stops
//! at 64 literals and slows down as literals crowd its buckets, so the literals are split into
//! three automata (measured on the benchmark's terminal text: one automaton of all 62 literals
//! scans at about 0.5 GB/s, these three together at about 2.5 GB/s).

use aho_corasick::{AhoCorasick, Input, MatchKind};

use super::shapes::{is_key_byte, Check, Shape, SECRET_WORD_ENDINGS, SHAPES};

/// The trigger literals, grouped into automata. Every trigger of every shape appears here
/// exactly once, and no literal is a prefix of another in its group (both checked by tests), so
/// restarting each search one byte after a hit reports every occurrence.
pub(crate) const AUTOMATA: &[&[&str]] = &[
    // Three-byte vendor prefixes: Teddy fingerprints as many bytes as the shortest literal of
    // its automaton has, so these are kept apart from the longer ones.
    &[
        "sk-", "xox", "hf_", "SG.", "eyJ", "shp", "dp.", ":AA", "sq0", "r8_", "://",
    ],
    // Vendor prefixes of four bytes or more.
    &[
        "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "_pat_", "AKIA", "ASIA", "xapp-", "hooks",
        "k_live_", "k_test_", "whsec_", "AIza", "GOCSPX-", "ya29.", "glpat-", "npm_", "pypi-",
        "glsa_", "_v1_", "dapi", "lin_api_", "sntry", "ATATT3", "EAAA", "pscale_", "HRKU-", "gsk_",
        "xai-", "tskey-", "hvs.", "collie_",
    ],
    // Secret-word stems: one spelling of each word first, so that the words spread over Teddy's
    // buckets and each other spelling joins its word's (Teddy groups literals differing in case).
    &[
        "oken", "ssw", "ssph", "ecret", "key", "auth", "rer", "edential", "rization", "OKEN",
        "SSW", "SSPH", "ECRET", "Key", "KEY", "AUTH", "RER", "EDENTIAL",
    ],
];

/// A trigger occurrence: byte offsets in the scanned text and the literal's global index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) literal: usize,
}

/// The automata and, per literal, the shapes it triggers.
#[derive(Debug)]
pub(crate) struct Prefilter {
    automata: Vec<AhoCorasick>,
    /// Global literal index of each automaton's first literal.
    offsets: Vec<usize>,
    /// Per global literal index: bit `i` set when `SHAPES[i]` lists the literal.
    shapes: Vec<u64>,
}

impl Prefilter {
    pub(crate) fn new() -> Prefilter {
        let mut automata = Vec::with_capacity(AUTOMATA.len());
        let mut offsets = Vec::with_capacity(AUTOMATA.len());
        let mut shapes = Vec::new();
        for group in AUTOMATA {
            offsets.push(shapes.len());
            for literal in group.iter() {
                shapes.push(shapes_of(literal));
            }
            let automaton = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(group.iter())
                .expect("a few dozen short literals are far below Aho-Corasick's limits");
            automata.push(automaton);
        }
        Prefilter {
            automata,
            offsets,
            shapes,
        }
    }

    /// Appends every trigger occurrence in `text` to `hits`, sorted by start.
    pub(crate) fn hits(&self, text: &str, hits: &mut Vec<Hit>) {
        for (automaton, offset) in self.automata.iter().zip(&self.offsets) {
            let mut at = 0;
            while let Some(m) = automaton.find(Input::new(text).range(at..)) {
                hits.push(Hit {
                    start: m.start(),
                    end: m.end(),
                    literal: offset + m.pattern().as_usize(),
                });
                // One byte on, not `m.end()`: a literal overlapping this one is reported too.
                at = m.start() + 1;
            }
        }
        if self.automata.len() > 1 {
            hits.sort_unstable_by_key(|h| h.start);
        }
    }

    /// The shapes worth trying on `line` because of `hit` (offsets relative to `line`).
    pub(crate) fn confirm(&self, line: &str, hit: Hit) -> u64 {
        let mut confirmed = 0;
        let mut candidates = self.shapes[hit.literal];
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if passes(SHAPES[i].check, line, hit) {
                confirmed |= 1 << i;
            }
        }
        confirmed
    }

    /// Every shape that names `hit`'s literal, whether or not its check passes.
    pub(crate) fn triggered(&self, hit: Hit) -> u64 {
        self.shapes[hit.literal]
    }
}

fn shapes_of(literal: &str) -> u64 {
    SHAPES
        .iter()
        .enumerate()
        .filter(|(_, shape): &(usize, &Shape)| shape.triggers.contains(&literal))
        .fold(0, |set, (i, _)| set | 1 << i)
}

fn passes(check: Check, line: &str, hit: Hit) -> bool {
    match check {
        Check::None => true,
        Check::StartsWith(prefix) => line[hit.start..].starts_with(prefix),
        Check::Assignment => is_assignment(line.as_bytes(), hit.start),
        Check::UrlUserinfo => has_userinfo(line.as_bytes(), hit.end),
    }
}

/// Is the word that contains `at` a key ending with a secret word, followed by `:` or `=`?
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
