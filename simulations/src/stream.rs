//! Stream numbers on a simulated connection, numbered as QUIC numbers bidirectional streams, so a
//! trace reads like the real thing and either side can tell who opened a stream from its number.
//!
//! The member dials, so it is QUIC's client: the streams it opens are 0, 4, 8, … — stream 0 is its
//! opening (the join request, or the hello and then the link's heartbeat), the others are uplinks.
//! The lead is the server: its streams are 1, 5, 9, …, one per relayed request (decision 0011).

/// The member's first stream: its opening, then the link itself.
pub(crate) const OPENING: u64 = 0;

/// The `n`-th stream the lead opens on a connection (from 0).
pub(crate) fn lead_opened(n: u64) -> u64 {
    4 * n + 1
}

/// The `n`-th stream the member opens on a connection (0 is [`OPENING`]).
pub(crate) fn member_opened(n: u64) -> u64 {
    4 * n
}

/// Whether the lead opened `stream`.
pub(crate) fn is_lead_opened(stream: u64) -> bool {
    stream % 4 == 1
}
