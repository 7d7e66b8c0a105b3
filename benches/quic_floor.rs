//! The floor under every relayed request: one request and its answer over this crate's QUIC
//! transport on loopback, with nothing else — no HTTP, no pane, no masking, no audit. A relayed
//! read through the lead pays this on top of the member's own read, so the relay's overhead
//! (`cargo bench --bench relay`, part 1) can be no smaller than this on the same machine.
//!
//! Two runtimes stand for the lead's and the member's processes (two sockets, two sets of threads
//! to wake), each with one worker thread as the bridge runs (decision 0061;
//! `COLLIE_BENCH_WORKERS=2` gives the two of a bridge before it); the connection is pinned mutual
//! TLS like a crew link's.
//! The member answers each stream the way the relay server does: it accepts the stream, reads one
//! frame, writes one frame and finishes. Answers of 16 bytes (a write's `Done`) and of 3 KiB (a
//! 100 × 30 screen, the relay bench's snapshot).
//!
//! Run: `cargo bench --bench quic_floor -- --warm-up-time 1 --measurement-time 5`.

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;

use collie_crew::identity::Identity;
use collie_crew::tls::{ClientAdmission, PinSet};
use collie_crew::transport::quic::{QuicConnection, QuicEndpoint};
use collie_crew::transport::{Connection, RecvFrames, SendFrames, Transport};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tokio::runtime::Runtime;

/// The size of a relayed request (a snapshot request with a device and a request id).
const REQUEST: usize = 100;

fn runtime() -> Runtime {
    let workers = std::env::var("COLLIE_BENCH_WORKERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The member's side: answers every stream with one frame of `answer` bytes, then finishes.
async fn serve(conn: QuicConnection, answer: usize) {
    let body = vec![b'x'; answer];
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        let body = body.clone();
        tokio::spawn(async move {
            if let Ok(Some(_request)) = recv.recv().await {
                let _ = send.send(&body).await;
                let _ = send.finish();
            }
        });
    }
}

/// A lead and a member on loopback, connected; the member's runtime serves `answer`-byte frames.
struct Link {
    lead_rt: Runtime,
    _member_rt: Runtime,
    lead: QuicConnection,
    _endpoints: (QuicEndpoint, QuicEndpoint),
}

impl Link {
    fn new(answer: usize) -> Self {
        let lead_rt = runtime();
        let member_rt = runtime();
        let lead_identity = Arc::new(Identity::generate().expect("an identity"));
        let member_identity = Arc::new(Identity::generate().expect("an identity"));
        let pins = PinSet::new();
        pins.insert(member_identity.pin());
        let loopback: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let lead_endpoint = lead_rt
            .block_on(async {
                QuicEndpoint::lead(
                    lead_identity.clone(),
                    loopback,
                    pins.check(),
                    ClientAdmission::PinnedOnly,
                )
            })
            .expect("a lead endpoint");
        let member_endpoint = member_rt
            .block_on(async { QuicEndpoint::member(member_identity, loopback) })
            .expect("a member endpoint");
        let address = lead_endpoint.local_addr().expect("the lead's address");
        let pin = lead_identity.pin();
        let member = member_rt
            .block_on(member_endpoint.dial(&address, pin))
            .expect("the member dials");
        let lead = lead_rt
            .block_on(lead_endpoint.accept())
            .expect("the lead accepts");
        member_rt.spawn(serve(member, answer));
        Self {
            lead_rt,
            _member_rt: member_rt,
            lead,
            _endpoints: (lead_endpoint, member_endpoint),
        }
    }

    /// One request and its answer, on a stream of its own.
    async fn round_trip(&self, request: &[u8]) -> usize {
        let (mut send, mut recv) = self.lead.open_bi().await.expect("a stream");
        send.send(request).await.expect("the request");
        let answer = recv.recv().await.expect("the answer").expect("a frame");
        answer.len()
    }
}

fn round_trips(c: &mut Criterion) {
    let mut group = c.benchmark_group("quic_round_trip");
    let request = vec![b'r'; REQUEST];
    for answer in [16, 3 * 1024] {
        let link = Link::new(answer);
        group.bench_with_input(BenchmarkId::new("answer_bytes", answer), &answer, |b, _| {
            b.iter(|| {
                link.lead_rt
                    .block_on(async { black_box(link.round_trip(&request).await) })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, round_trips);
criterion_main!(benches);
