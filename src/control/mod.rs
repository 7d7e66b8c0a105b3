//! The local control socket `<state>/bridge.sock` (SPEC §2, §3.1): how the CLI talks to its own
//! running bridge.
//!
//! One request per connection: the CLI writes one JSON line ([`protocol::Request`]) and reads one JSON line
//! ([`protocol::Reply`]). The socket is 0600 inside the 0700 state dir, and the server also checks the peer's
//! uid, so only the user who runs the bridge can use it. Requests are capped at [`MAX_REQUEST`]
//! bytes before they are parsed.

pub mod client;
pub mod dispatch;
#[cfg(test)]
mod fuzz;
pub mod protocol;
pub mod replies;
pub mod server;

/// Largest request line accepted (text sent to a pane is at most 64 KiB; JSON escaping can grow it).
pub const MAX_REQUEST: usize = 512 * 1024;
/// Largest reply line the client accepts (a snapshot with scrollback).
pub const MAX_REPLY: usize = 32 * 1024 * 1024;
