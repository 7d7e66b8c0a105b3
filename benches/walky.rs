//! Walky-talky signing across machines (SPEC §9), per message on one core: the member's signature,
//! a bare verification, the lead's whole pipeline and the receiver's.
//!
//! - `sign`: the member signs a message (canonical encoding + ed25519).
//! - `verify`: one strict ed25519 verification of a signed message (canonical encoding included).
//! - `public_key_of`: parsing a crew certificate (webpki) for its pin and key, part of both
//!   pipelines.
//! - `lead_pipeline`: decode the member's frame payload, check the certificate's pin and the
//!   sender's signature, skew and replay, sign the attestation, encode the `Forwarded`.
//! - `receiver_pipeline`: decode the `Forwarded`, parse the attached certificate, verify the
//!   attestation and the sender's signature, skew and replay.
//!
//! Each is reported as time per message and as messages per second (criterion's `thrpt`, one
//! element per message) — on one core, since every step is single-threaded. Bodies are 200 bytes,
//! a typical request between agents.
//!
//! Run: `cargo bench --bench walky -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use collie_crew::identity::Identity;
use collie_crew::walky::{
    attest, public_key_of, receive, Address, Forwarded, Message, MessageId, ReplayGuard, Signed,
    Signer,
};
use collie_crew::wire;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const NOW: i64 = 1_750_000_000;
/// Distinct pre-signed messages cycled through by the pipelines (each id passes a guard once).
const POOL: usize = 2_000;

struct Machine {
    name: &'static str,
    identity: Identity,
    signer: Signer,
}

fn machine(name: &'static str) -> Machine {
    let identity = Identity::generate().expect("an identity");
    let signer = Signer::from_identity(&identity).expect("a signer");
    Machine {
        name,
        identity,
        signer,
    }
}

fn message(from: &Machine, to: &Machine) -> Message {
    Message::new(
        MessageId::random(),
        Address::new(from.name, "t0-3", "ab2c").expect("an address"),
        "reviewer",
        Address::new(to.name, "p7", "qq77").expect("an address"),
        NOW,
        "x".repeat(200),
    )
    .expect("a message")
}

/// Runs `step` over the pool in order for `iters` messages, timing only the steps; the guard is
/// renewed (untimed) whenever the pool wraps, so every id is new to it.
fn cycle<T>(pool: &[T], iters: u64, mut step: impl FnMut(&T, &mut ReplayGuard)) -> Duration {
    let mut guard = ReplayGuard::new(POOL);
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let n = usize::try_from(i).expect("a small count") % pool.len();
        if n == 0 {
            guard = ReplayGuard::new(POOL);
        }
        let start = Instant::now();
        step(&pool[n], &mut guard);
        total += start.elapsed();
    }
    total
}

fn walky(c: &mut Criterion) {
    let lead = machine("laptop");
    let m1 = machine("m1");
    let m2 = machine("m2");
    let m1_pin = m1.identity.pin();
    let m1_cert = m1.identity.certificate().as_ref().to_vec();
    let lead_key = lead.signer.verifying_key();

    let signed: Vec<Signed> = (0..POOL)
        .map(|_| m1.signer.sign(message(&m1, &m2)))
        .collect();
    let member_frames: Vec<Vec<u8>> = signed
        .iter()
        .map(|s| wire::encode(s).expect("encodes"))
        .collect();
    let forwarded_frames: Vec<Vec<u8>> = signed
        .iter()
        .map(|s| {
            let fwd = attest(
                s,
                &m1_cert,
                &m1_pin,
                "m1",
                &lead.signer,
                &mut ReplayGuard::new(1),
                NOW,
            )
            .expect("attests");
            wire::encode(&fwd).expect("encodes")
        })
        .collect();
    println!(
        "walky frame sizes: member → lead {} bytes, lead → receiver {} bytes (200-byte body)",
        member_frames[0].len(),
        forwarded_frames[0].len()
    );

    let mut g = c.benchmark_group("walky");
    g.throughput(Throughput::Elements(1));
    g.bench_function("sign", |b| {
        b.iter_batched(
            || message(&m1, &m2),
            |m| m1.signer.sign(black_box(m)),
            BatchSize::SmallInput,
        )
    });
    let key = m1.signer.verifying_key();
    g.bench_function("verify", |b| {
        b.iter(|| black_box(&signed[0]).verify(black_box(&key)))
    });
    // For scale: parsing the certificate for its pin and key, which both pipelines pay.
    g.bench_function("public_key_of", |b| {
        b.iter(|| public_key_of(black_box(&m1_cert)))
    });
    g.bench_function("lead_pipeline", |b| {
        b.iter_custom(|iters| {
            cycle(&member_frames, iters, |frame, guard| {
                let s: Signed = wire::decode(frame).expect("decodes");
                let fwd =
                    attest(&s, &m1_cert, &m1_pin, "m1", &lead.signer, guard, NOW).expect("attests");
                black_box(wire::encode(&fwd).expect("encodes"));
            })
        })
    });
    g.bench_function("receiver_pipeline", |b| {
        b.iter_custom(|iters| {
            cycle(&forwarded_frames, iters, |frame, guard| {
                let fwd: Forwarded = wire::decode(frame).expect("decodes");
                black_box(receive(&fwd, &lead_key, "laptop", guard, NOW).expect("accepted"));
            })
        })
    });
    g.finish();
}

criterion_group!(benches, walky);
criterion_main!(benches);
