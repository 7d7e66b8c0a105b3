//! The held-permission hooks' adapter (SPEC §10.2): the socket the agents' hooks connect to
//! (`<state>/hooks.sock`) and what travels on it.
//!
//! [`wire`] is the one-request, one-reply protocol between `collie hook …` and the bridge;
//! [`server`] the adapter that serves the socket through [`crate::app`], where every rule of a
//! held permission lives (`crate::app::permission`: the held cap, the shared-server refusal, the
//! card, "Always allow", the deny message). The hook command itself is `crate::cli::hook`.

#[cfg(test)]
mod fuzz;
pub mod server;
pub mod wire;
