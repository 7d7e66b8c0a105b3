//! The `collie` binary's library half: the CLI, the bridge assembly, the HTTP API and the control
//! socket. `main.rs` only calls [`cli::main`]; integration tests reach the rest through this crate.

/// The byte strategies of every decoder's fuzz test, shared with the other crates (decision 0063).
#[cfg(test)]
#[path = "../crew/src/fuzzing.rs"]
mod fuzzing;

pub mod agent_hooks;
pub mod app;
pub mod applied;
pub mod bridge;
pub mod cli;
pub mod config;
pub mod control;
pub mod hooks;
pub mod http;
pub mod identity;
pub mod mcp;
pub use collie_actors::private_socket;
pub mod relay;
pub mod speech;
pub mod state;
pub mod web;
