//! The authorization decision on the hot path (SPEC §11): SHA-256 of the presented token, lookup in
//! the policy snapshot, constant-time hash comparison, expiry and tier checks.
//!
//! Run: `cargo bench --bench authorize -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use collie_actors::pairing::{Device, DeviceToken, Label, PolicySnapshot, Tier, TokenHash};
use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::SeedableRng;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

const DEVICES: usize = 50;
const NOW: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

/// A snapshot of 50 devices of mixed tiers, every third one with an expiry a day ahead, and the
/// tokens in the clear.
fn snapshot() -> (PolicySnapshot, Vec<DeviceToken>) {
    let mut rng = StdRng::seed_from_u64(0x00c0_111e);
    let tokens: Vec<DeviceToken> = (0..DEVICES)
        .map(|_| DeviceToken::generate(&mut rng))
        .collect();
    let devices: Vec<Device> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| Device {
            label: Label::parse(&format!("device-{i:02}")).expect("a valid label"),
            tier: Tier::ALL[i % 3],
            token_hash: t.hash(),
            created_at: NOW - Duration::days(30),
            last_seen: None,
            expires_at: (i % 3 == 0).then(|| NOW + Duration::days(1)),
            paired_by: None,
        })
        .collect();
    (PolicySnapshot::build(1, &devices), tokens)
}

fn authorize(c: &mut Criterion) {
    let (snap, tokens) = snapshot();
    // Device 26 holds `full`; device 25 holds `files`.
    let full = tokens[26].expose_secret().to_owned();
    let files = tokens[25].expose_secret().to_owned();
    assert!(snap.authorize(&full, Tier::Full, NOW).is_ok());
    let stranger = DeviceToken::generate(&mut StdRng::seed_from_u64(7))
        .expose_secret()
        .to_owned();

    let mut g = c.benchmark_group("authorize");
    g.bench_function("granted", |b| {
        b.iter(|| snap.authorize(black_box(&full), black_box(Tier::Full), black_box(NOW)))
    });
    g.bench_function("insufficient_tier", |b| {
        b.iter(|| snap.authorize(black_box(&files), black_box(Tier::Full), black_box(NOW)))
    });
    g.bench_function("not_paired", |b| {
        b.iter(|| snap.authorize(black_box(&stranger), black_box(Tier::Read), black_box(NOW)))
    });
    // For scale: the SHA-256 alone, which every decision pays.
    g.bench_function("sha256_only", |b| {
        b.iter(|| TokenHash::from_presented(black_box(&full)))
    });
    g.finish();
}

criterion_group!(benches, authorize);
criterion_main!(benches);
