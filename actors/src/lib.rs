//! Collie's actors and the pure cores they wrap.
//!
//! Each folder is one actor: pure parts — plain state machines and functions with no I/O and no
//! clock reads (callers pass `now`), such as `core.rs`, `crew_link/lead.rs` or `audit/anchor.rs` —
//! and `actor.rs`, the thin ractor shell that owns I/O, timers and the clock. The binary (`src/`)
//! assembles them into the supervision tree of SPEC §1.
#![warn(missing_docs)]

/// The byte strategies of every decoder's fuzz test, shared with the other crates (decision 0063).
#[cfg(test)]
#[path = "../../crew/src/fuzzing.rs"]
mod fuzzing;

pub mod audit;
pub mod cards;
pub mod chat;
pub mod command_word;
pub mod crew_link;
pub mod cut;
pub mod disk;
pub mod durable;
pub mod https;
pub mod machine;
pub mod pairing;
pub mod panes;
pub mod private_file;
pub mod private_socket;
pub mod push;
pub mod redact;
pub mod rfc3339;
pub mod sent;
pub mod slot;
pub mod state_files;
pub mod store;
pub mod supervisor;
pub mod tier;
pub mod tools;
pub mod walky;
