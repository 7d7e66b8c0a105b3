//! Throughput of the durable-agent sanitizer (SPEC §10.3, `collie_actors::durable::sanitize`)
//! against a naive filter written here: `chars().filter(..).collect()`, then the same cut.
//!
//! The corpus is about 1 MiB, generated from a fixed seed: ASCII prose, CJK, Arabic and Hebrew
//! with direction marks and isolates, emoji joined by U+200D, terminal escapes, C1 controls,
//! zero-width characters and tag characters, in lines. Four cases:
//! - `mixed`: that corpus as a multi-line field with no limit in reach (every removal is done);
//! - `clean`: the same text with nothing to remove (the common case: scan, then one copy), with
//!   `to_owned` of the same string as the floor;
//! - `ascii`: 1 MiB of clean ASCII prose, with `to_owned` as the floor;
//! - `labels`: the mixed corpus cut into 10,000 fields of 100 bytes, each sanitized to a 64-byte
//!   label (one line), as a reply's many short strings are.
//!
//! Run: `cargo bench --bench sanitize -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use collie_actors::durable::sanitize;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// A fixed-seed xorshift generator: the corpus is the same on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PROSE: &[&str] = &[
    "The build failed because the test harness could not find the fixture directory.",
    "I updated the parser to reject ids longer than 128 bytes and added a regression test.",
    "Running cargo test --workspace now; this usually takes about two minutes on CI.",
    "Should I also bump the version in Cargo.toml, or leave that for the release commit?",
    "error[E0502]: cannot borrow `state` as mutable because it is also borrowed as immutable",
    "    --> actors/src/durable/view.rs:212:17",
    "Done. 412 passed, 0 failed, 3 skipped (finished in 93.4s).",
];
const CJK: &[&str] = &[
    "テストがすべて通りました。次に設定ファイルを更新します。",
    "这个函数在处理空字符串时会崩溃，我已经修复了。",
    "빌드가 완료되었습니다. 변경 사항을 검토해 주세요.",
];
const RTL: &[&str] = &[
    "\u{200F}مرحبا بالعالم\u{200F} — تم تحديث الملف",
    "\u{2067}שלום עולם\u{2069} (\u{200E}v2.1\u{200E})",
    "العدد\u{061C} 42 \u{202B}نص\u{202C}",
    "עברית \u{2068}English\u{2069} עברית",
];
const EMOJI: &[&str] = &[
    "👩\u{200D}💻 shipped it",
    "👨\u{200D}👩\u{200D}👧 family",
    "🏳\u{FE0F}\u{200D}🌈",
    "✅ ok ❌ failed 🚀",
    "👍🏽",
];
const NOISE: &[&str] = &[
    "\u{1B}[31m",
    "\u{1B}[0m",
    "\r",
    "\u{7}",
    "\u{85}",
    "\u{9B}2J",
    "\u{7F}",
    "\u{200B}",
    "\u{200C}",
    "\u{2060}",
    "\u{FEFF}",
    "\u{E0001}\u{E0068}\u{E0069}\u{E007F}",
    "\u{202E}",
    "\t",
];

fn mixed_corpus() -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(1 << 20);
    while s.len() < 1 << 20 {
        match rng.below(10) {
            0..=4 => s.push_str(rng.pick(PROSE)),
            5 | 6 => s.push_str(rng.pick(CJK)),
            7 => s.push_str(rng.pick(RTL)),
            _ => s.push_str(rng.pick(EMOJI)),
        }
        if rng.below(4) == 0 {
            s.push_str(rng.pick(NOISE));
        }
        s.push(if rng.below(3) == 0 { '\n' } else { ' ' });
    }
    s
}

fn ascii_corpus() -> String {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut s = String::with_capacity(1 << 20);
    while s.len() < 1 << 20 {
        s.push_str(rng.pick(PROSE));
        s.push('\n');
    }
    s
}

/// The naive baseline's notion of a removed character, written out on its own.
fn naive_removed(c: char, multi_line: bool) -> bool {
    if c == '\n' || c == '\t' {
        return !multi_line;
    }
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{061C}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

/// Filter every character into a new string, then cut to the limit with a `…`.
fn naive(s: &str, multi_line: bool, limit: usize) -> (String, bool) {
    let mut out: String = s
        .chars()
        .filter(|&c| !naive_removed(c, multi_line))
        .collect();
    if out.len() <= limit {
        let changed = out.len() != s.len();
        return (out, changed);
    }
    let mut cut = if limit >= 3 { limit - 3 } else { limit };
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    if limit >= 3 {
        out.push('…');
    }
    (out, true)
}

fn bench(c: &mut Criterion) {
    let mixed = mixed_corpus();
    let clean = sanitize::text(&mixed, true, usize::MAX).0;
    let ascii = ascii_corpus();
    let fields: Vec<&str> = {
        let mut at = 0;
        let mut v = Vec::new();
        while v.len() < 10_000 {
            let mut end = (at + 100).min(mixed.len());
            while !mixed.is_char_boundary(end) {
                end += 1;
            }
            v.push(&mixed[at..end]);
            at = if end >= mixed.len() { 0 } else { end };
        }
        v
    };
    let field_bytes: usize = fields.iter().map(|f| f.len()).sum();
    // Both sides agree before anything is timed.
    for (text, multi_line, limit) in [
        (mixed.as_str(), true, usize::MAX),
        (clean.as_str(), true, usize::MAX),
        (ascii.as_str(), true, usize::MAX),
    ] {
        assert_eq!(
            sanitize::text(text, multi_line, limit),
            naive(text, multi_line, limit)
        );
    }
    for f in &fields {
        assert_eq!(sanitize::text(f, false, 64), naive(f, false, 64));
    }
    println!(
        "corpus: mixed {} bytes ({} after sanitizing), ascii {} bytes, {} labels of {} bytes in all",
        mixed.len(),
        clean.len(),
        ascii.len(),
        fields.len(),
        field_bytes
    );

    for (name, text) in [("mixed", &mixed), ("clean", &clean), ("ascii", &ascii)] {
        let mut group = c.benchmark_group(format!("sanitize/{name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(BenchmarkId::from_parameter("sanitize"), |b| {
            b.iter(|| sanitize::text(black_box(text), true, usize::MAX))
        });
        group.bench_function(BenchmarkId::from_parameter("naive"), |b| {
            b.iter(|| naive(black_box(text), true, usize::MAX))
        });
        if name != "mixed" {
            group.bench_function(BenchmarkId::from_parameter("to_owned"), |b| {
                b.iter(|| black_box(text.as_str()).to_owned())
            });
        }
        group.finish();
    }

    let mut group = c.benchmark_group("sanitize/labels");
    group.throughput(Throughput::Bytes(field_bytes as u64));
    group.bench_function(BenchmarkId::from_parameter("sanitize"), |b| {
        b.iter(|| {
            for f in &fields {
                black_box(sanitize::text(black_box(f), false, 64));
            }
        })
    });
    group.bench_function(BenchmarkId::from_parameter("naive"), |b| {
        b.iter(|| {
            for f in &fields {
                black_box(naive(black_box(f), false, 64));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
