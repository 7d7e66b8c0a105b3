//! The held-permission hooks (SPEC §10.2): the socket the agents' hooks connect to
//! (`<state>/hooks.sock`), what travels on it, and how an agent's permission request becomes a
//! card and a card's answer becomes the agent's decision.
//!
//! [`wire`] is the one-request, one-reply protocol between `collie hook …` and the bridge;
//! [`permission`] the pure translation of Claude Code's and Codex's `PermissionRequest` hook
//! input into a card and of a decision into the exact JSON the agent reads (`always` reads the
//! rules "Always allow" adds, shows them and applies exactly what it shows); [`server`] the
//! adapter that serves the socket through [`crate::app`]; [`shared_server`] refuses hooks run by
//! an agent's shared background server, which no pane holds. The hook command itself is
//! `crate::cli::hook`.

mod always;
pub mod permission;
pub mod server;
pub mod shared_server;
pub mod wire;
