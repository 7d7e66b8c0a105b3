//! The held-permission hooks (SPEC §10.2): the socket the agents' hooks connect to
//! (`<state>/hooks.sock`), what travels on it, and how an agent's permission request becomes a
//! card and a card's answer becomes the agent's decision.
//!
//! [`wire`] is the one-request, one-reply protocol between `collie hook …` and the bridge;
//! [`permission`] the pure translation of Claude Code's and Codex's `PermissionRequest` hook
//! input into a card and of a decision into the exact JSON the agent reads; [`server`] the
//! adapter that serves the socket through [`crate::app`]. The hook command itself is
//! `crate::cli::hook`.

pub mod permission;
pub mod server;
pub mod wire;
