//! What the decoders of outside bytes allocate, measured with a counting allocator (this test
//! binary's own, so nothing else in the suite pays for it): a frame announcing more than the
//! 16 MiB limit is refused before anything is allocated for it; one announcing the limit and
//! sending a few bytes costs a read buffer, not 16 MiB; a lying length inside a frame costs
//! nothing; the line readers' JSON costs what the line holds
//! (docs/decisions/0063).
//!
//! One test function: the allocator's counters are the whole process's, so the measurements run
//! one after another on one thread.

use std::alloc::System;

use collie_crew::relay::{MemberMessage, RelayRequest};
use collie_crew::wire::{self, FrameDecoder, WireError, MAX_FRAME};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const KIB: usize = 1024;

/// Bytes allocated (never subtracting frees: an upper bound of the peak) while `f` runs.
fn allocated<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let region = Region::new(ALLOCATOR);
    let out = f();
    let change = region.change();
    (
        out,
        change.bytes_allocated + change.bytes_reallocated.max(0) as usize,
    )
}

/// A frame prefix announcing `len` bytes, then `body`.
fn frame(len: u32, body: &[u8]) -> Vec<u8> {
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A payload whose first value is a byte string claiming `len` bytes (bincode's varint: `0xfd`
/// then a little-endian `u64`), followed by `body`.
fn lying_payload(len: u64, body: &[u8]) -> Vec<u8> {
    let mut out = vec![0xfd];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[test]
fn decoders_allocate_within_their_limits() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");

    // A prefix past the limit: refused, and nothing of its size allocated.
    let too_big = frame(MAX_FRAME as u32 + 1, b"0123456789");
    let (res, bytes) = allocated(|| rt.block_on(wire::read_frame(&mut too_big.as_slice())));
    assert!(matches!(res, Err(WireError::TooLarge { .. })), "{res:?}");
    assert!(bytes < 4 * KIB, "a refused prefix allocated {bytes} bytes");

    let mut dec = FrameDecoder::new();
    let (res, bytes) = allocated(|| dec.push(&too_big));
    assert!(matches!(res, Err(WireError::TooLarge { .. })), "{res:?}");
    assert!(
        bytes < 4 * KIB,
        "the splitter allocated {bytes} bytes for a refused prefix"
    );

    // A prefix announcing the whole 16 MiB and ten bytes behind it: a read buffer, not 16 MiB.
    let teaser = frame(MAX_FRAME as u32, b"0123456789");
    let (res, bytes) = allocated(|| rt.block_on(wire::read_frame(&mut teaser.as_slice())));
    assert!(matches!(res, Err(WireError::Truncated)), "{res:?}");
    assert!(
        bytes <= 128 * KIB,
        "ten bytes of a 16 MiB frame allocated {bytes} bytes"
    );

    let mut dec = FrameDecoder::new();
    let (res, bytes) = allocated(|| dec.push(&teaser));
    assert!(res.is_ok(), "{res:?}");
    assert!(
        bytes < 4 * KIB,
        "the splitter allocated {bytes} bytes for ten"
    );
    assert!(dec.capacity() < 4 * KIB);

    // A lying inner length, past the frame limit or within it, for a string, a list, a string
    // in a list, a whole message: nothing of the claimed size is allocated before the claimed
    // bytes are there (they never are). Before the wire's adapter (decision 0063) a string
    // claiming 16 MiB made bincode reserve 16 MiB, and a list serde's "cautious" 1 MiB.
    for claim in [
        u64::MAX,
        1 << 40,
        MAX_FRAME as u64 + 1,
        MAX_FRAME as u64 - 64,
        1 << 20,
    ] {
        let payload = lying_payload(claim, b"abc");
        let (res, bytes) = allocated(|| wire::decode::<String>(&payload));
        assert!(res.is_err());
        assert!(
            bytes < 4 * KIB,
            "a string claiming {claim} bytes allocated {bytes}"
        );
        let (res, bytes) = allocated(|| wire::decode::<Vec<u8>>(&payload));
        assert!(res.is_err());
        assert!(bytes < 4 * KIB, "a list claiming {claim} allocated {bytes}");
        let (res, bytes) = allocated(|| wire::decode::<RelayRequest>(&payload));
        assert!(res.is_err());
        assert!(
            bytes < 4 * KIB,
            "a request claiming {claim} allocated {bytes}"
        );
        let (res, bytes) = allocated(|| wire::decode::<MemberMessage>(&payload));
        assert!(res.is_err());
        assert!(
            bytes < 4 * KIB,
            "a member message claiming {claim} allocated {bytes}"
        );
        let mut nested = lying_payload(1 << 40, &[]);
        nested.extend(&payload);
        let (res, bytes) = allocated(|| wire::decode::<Vec<String>>(&nested));
        assert!(res.is_err());
        assert!(
            bytes < 4 * KIB,
            "a string claiming {claim} in a lying list allocated {bytes}"
        );
    }

    // JSON lines (control socket, hook socket, an agent's answer): no length to lie about, so a
    // line costs a small multiple of its own bytes; a deep one is refused by serde_json's
    // recursion limit, not the stack.
    let deep = "[".repeat(64 * KIB);
    let (res, bytes) = allocated(|| serde_json::from_str::<serde_json::Value>(&deep));
    assert!(res.is_err());
    assert!(bytes < 64 * KIB, "a deep line allocated {bytes} bytes");
    let long = format!(
        "{{\"cmd\":\"panes-send\",\"pane\":\"p1\",\"text\":\"{}\",\"enter\":true}}",
        "x".repeat(256 * KIB)
    );
    let (res, bytes) =
        allocated(|| serde_json::from_str::<collie::control::protocol::Request>(&long));
    assert!(res.is_ok(), "{res:?}");
    assert!(
        bytes < 4 * long.len(),
        "a {} byte line allocated {bytes}",
        long.len()
    );
}
