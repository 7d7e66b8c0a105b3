//! Collie's crew protocol (SPEC §8), knowing nothing of actors, HTTP or the store: machine identity
//! and pinned mutual TLS, the wire codec, the hello/capability handshake as a pure state machine, the
//! relay message types, the transports (QUIC, and an in-memory one for tests), and the pure core of
//! walky-talky signing across machines (SPEC §9).
#![warn(missing_docs)]

#[cfg(test)]
mod fuzzing;
pub mod hello;
pub mod identity;
pub mod name;
pub mod pin;
pub mod relay;
pub mod tls;
pub mod transport;
pub mod uplink;
pub mod walky;
pub mod wire;
