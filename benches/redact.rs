//! Masking throughput (SPEC §6): about 1 MiB of realistic terminal text, clean and with a secret
//! every 4 KiB, through the [`Masker`] and through a naive baseline that runs every shape's regex
//! over the whole text in turn, without the literal prefilter. The goal for clean text is at
//! least 1 GB/s.
//!
//! Run: `cargo bench --bench redact -- --warm-up-time 1 --measurement-time 3`.

use std::borrow::Cow;
use std::hint::black_box;
use std::ops::Range;

use collie_actors::redact::{shape_patterns, Masker, MASK};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use regex::Regex;

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

    fn chars(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| char::from(alphabet[self.below(alphabet.len())]))
            .collect()
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| self.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

const HEX: &[u8] = b"0123456789abcdef";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const FILES: &[&str] = &[
    "main.rs",
    "lib.rs",
    "screen.rs",
    "ring.rs",
    "tmux.rs",
    "auth.rs",
    "config.toml",
    "Cargo.lock",
    "README.md",
    "index.ts",
    "server.py",
    "handler.go",
    "Makefile",
    "build.sh",
    "package.json",
    "tokenizer.rs",
    "session.rs",
    "routes.rs",
    "keymap.rs",
];
const DIRS: &[&str] = &[
    "src",
    "actors/src/panes",
    "web",
    "tests",
    "docs/guide",
    "target/debug",
    "node_modules/.bin",
];
const WORDS: &[&str] = &[
    "the",
    "value",
    "borrowed",
    "here",
    "after",
    "move",
    "expected",
    "found",
    "struct",
    "type",
    "lifetime",
    "closure",
    "may",
    "outlive",
    "current",
    "function",
    "but",
    "it",
    "borrows",
    "which",
    "is",
    "owned",
    "by",
    "consider",
    "adding",
    "annotation",
    "to",
    "this",
    "trait",
    "bound",
    "not",
    "satisfied",
    "for",
    "in",
    "scope",
    "unused",
    "variable",
    "mutable",
    "reference",
    "session",
    "request",
    "response",
    "handler",
    "pane",
    "screen",
    "scrollback",
    "cursor",
    "width",
    "height",
    "config",
];

/// About `len` bytes of what a terminal pane shows while someone works: prompts and commands,
/// compiler errors and warnings, `ls -l`, `git log`, build progress, test results, log lines,
/// an agent's prose with links, diff hunks. No ANSI escapes, no secrets.
fn clean_text(len: usize) -> String {
    let mut r = Rng(0x5eed_c011_1e00_0001);
    let mut out = String::with_capacity(len + 4096);
    while out.len() < len {
        let block = match r.below(9) {
            0 => format!(
                "alice@devbox:~/src/collie/{}$ {}\n",
                r.pick(DIRS),
                r.pick(&[
                    "cargo build --release",
                    "cargo test -p collie-actors",
                    "git status",
                    "ls -la",
                    "git log -n 4",
                    "npm run build",
                    "python3 server.py --port 8080",
                    "tmux ls",
                    "make -j8",
                ])
            ),
            1 => {
                let (line, col) = (1 + r.below(900), 1 + r.below(80));
                format!(
                    "error[E0{}]: {}\n  --> {}/{}:{line}:{col}\n   |\n{line:>4} |     let {} = {}.{}(&mut {});\n   |         ^^^^^ {}\n   |\n   = note: {}\n\n",
                    100 + r.below(700),
                    r.words(6),
                    r.pick(DIRS),
                    r.pick(FILES),
                    r.pick(WORDS),
                    r.pick(WORDS),
                    r.pick(WORDS),
                    r.pick(WORDS),
                    r.words(5),
                    r.words(9),
                )
            }
            2 => format!(
                "warning: unused variable: `{}`\n  --> {}/{}:{}:{}\n   |\n   = note: `#[warn(unused_variables)]` on by default\n\n",
                r.pick(WORDS),
                r.pick(DIRS),
                r.pick(FILES),
                1 + r.below(500),
                1 + r.below(60)
            ),
            3 => (0..6)
                .map(|_| {
                    format!(
                        "{} {:>2} alice staff {:>8} Mar {:>2} {:02}:{:02} {}\n",
                        r.pick(&["-rw-r--r--", "-rwxr-xr-x", "drwxr-xr-x", "-rw-------"]),
                        1 + r.below(9),
                        r.below(2_000_000),
                        1 + r.below(28),
                        r.below(24),
                        r.below(60),
                        r.pick(FILES)
                    )
                })
                .collect(),
            4 => (0..4)
                .map(|_| {
                    format!(
                        "commit {}\nAuthor: Alice <alice@example.org>\nDate:   Tue Mar 4 {:02}:{:02}:11 2025 +0100\n\n    {}\n\n",
                        r.chars(HEX, 40),
                        r.below(24),
                        r.below(60),
                        r.words(7)
                    )
                })
                .collect(),
            5 => {
                let mut s: String = (0..5)
                    .map(|_| {
                        format!(
                            "   Compiling {} v1.{}.{}\n",
                            r.pick(&["serde", "tokio", "regex", "ractor", "axum", "sled", "vt100"]),
                            r.below(40),
                            r.below(20)
                        )
                    })
                    .collect();
                s += &format!(
                    "test panes::screen::tests::{}_{} ... ok\ntest result: ok. {} passed; 0 failed; 0 ignored; finished in {}.{:02}s\n",
                    r.pick(WORDS),
                    r.pick(WORDS),
                    r.below(300),
                    r.below(10),
                    r.below(100)
                );
                s
            }
            6 => format!(
                "2025-03-04T{:02}:{:02}:{:02}.{:03}Z  INFO collie::http: request id={}-{}-{}-{}-{} path=/api/panes/{} status=200 elapsed={}ms\n",
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1000),
                r.chars(HEX, 8),
                r.chars(HEX, 4),
                r.chars(HEX, 4),
                r.chars(HEX, 4),
                r.chars(HEX, 12),
                r.below(64),
                r.below(900)
            ),
            7 if r.below(4) == 0 => r
                .pick(&[
                    "[sudo] password for alice: \n",
                    "error: expected one of `,`, `:`, or `}`, found token `=>`\n",
                    "   = help: consider borrowing here: `&key`\n",
                    "Enter passphrase for key '/home/alice/.ssh/id_ed25519': \n",
                    "warning: the `auth` feature is deprecated; use `tokens` instead\n",
                    "  Some(key) => map.insert(key, token_count),\n",
                ])
                .to_owned(),
            7 => format!(
                "● {}. {} — see https://docs.rs/{}/latest and {}/{}.\n",
                r.words(12),
                r.words(8),
                r.pick(WORDS),
                r.pick(DIRS),
                r.pick(FILES)
            ),
            _ => format!(
                "@@ -{},7 +{},8 @@ fn {}()\n-    let {} = {};\n+    let {} = {}.clone();\n     {}\n",
                r.below(400),
                r.below(400),
                r.pick(WORDS),
                r.pick(WORDS),
                r.pick(WORDS),
                r.pick(WORDS),
                r.pick(WORDS),
                r.words(4)
            ),
        };
        out.push_str(&block);
    }
    out
}

/// `clean` with a line holding a secret inserted after the first line break past every
/// `every` bytes; the secrets rotate through several shapes, a PEM block among them.
fn with_secrets(clean: &str, every: usize) -> String {
    let mut r = Rng(0x5ec2_e75e_c2e7_0002);
    let mut out = String::with_capacity(clean.len() + clean.len() / 32);
    let mut at = 0;
    let mut n = 0;
    while at < clean.len() {
        let from = (at + every).min(clean.len());
        let cut = clean.as_bytes()[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(clean.len(), |i| from + i + 1);
        out.push_str(&clean[at..cut]);
        let secret = match n % 8 {
            0 => format!("export GITHUB_TOKEN=ghp_{}\n", r.chars(ALNUM, 36)),
            1 => format!(
                "DATABASE_URL=postgres://app:{}@db.internal:5432/app\n",
                r.chars(ALNUM, 16)
            ),
            2 => format!("aws_access_key_id = AKIA{}\n", r.chars(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
            3 => format!(
                "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.{}' https://api.example.com/v1/me\n",
                r.chars(ALNUM, 43)
            ),
            4 => format!("OPENAI_API_KEY=sk-proj-{}\n", r.chars(ALNUM, 120)),
            5 => format!("  \"password\": \"{}\",\n", r.chars(ALNUM, 20)),
            6 => format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
                r.chars(BASE64, 64),
                r.chars(BASE64, 64),
                r.chars(BASE64, 24)
            ),
            _ => format!("paired: collie_{}\n", r.chars(ALNUM, 43)),
        };
        if cut < clean.len() {
            out.push_str(&secret);
        }
        at = cut;
        n += 1;
    }
    out
}

/// The baseline: every shape's regex over the whole text in turn, no prefilter; the first
/// participating group of each match is masked but for its first character.
struct Naive {
    regexes: Vec<Regex>,
}

impl Naive {
    fn new() -> Naive {
        let regexes = shape_patterns()
            .into_iter()
            .map(|(name, pattern)| {
                Regex::new(pattern).unwrap_or_else(|e| panic!("shape {name}: {e}"))
            })
            .collect();
        Naive { regexes }
    }

    fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut spans: Vec<Range<usize>> = Vec::new();
        for regex in &self.regexes {
            for caps in regex.captures_iter(text) {
                if let Some(secret) = caps.iter().skip(1).flatten().next() {
                    let first = secret.as_str().chars().next().map_or(0, char::len_utf8);
                    spans.push(secret.start() + first..secret.end());
                }
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable_by_key(|s| s.start);
        let mut out = String::with_capacity(text.len() * 2);
        let mut at = 0;
        for span in spans {
            let start = span.start.max(at);
            if start >= span.end {
                continue;
            }
            out.push_str(&text[at..start]);
            out.extend(
                text[start..span.end]
                    .chars()
                    .map(|c| if c == '\n' { c } else { MASK }),
            );
            at = span.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

fn redact(c: &mut Criterion) {
    let masker = Masker::new(true);
    let naive = Naive::new();
    let clean = clean_text(1 << 20);
    let secrets = with_secrets(&clean, 4096);
    assert!(
        matches!(masker.mask(&clean), Cow::Borrowed(_)),
        "the clean corpus holds something the masker masks"
    );
    // (The baseline lacks the masker's value checks and does mask `let token = cursor;`.)
    let masked = masker.mask(&secrets);
    let bullets = |s: &str| s.chars().filter(|&c| c == MASK).count();
    assert!(bullets(&masked) > 0 && bullets(&naive.mask(&secrets)) > 0);

    for (name, text) in [("clean", &clean), ("secret-every-4KiB", &secrets)] {
        let mut group = c.benchmark_group(format!("redact/{name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function("masker", |b| b.iter(|| masker.mask(black_box(text)).len()));
        group.bench_function("naive", |b| b.iter(|| naive.mask(black_box(text)).len()));
        group.finish();
    }
}

criterion_group!(benches, redact);
criterion_main!(benches);
