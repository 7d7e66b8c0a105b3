//! Terminal panes: hosted (pty) panes and mirrors of the user's tmux panes (SPEC §5).
//!
//! The pure pieces (screen model, screen snapshot, named keys, pane ids and tokens, raw ring) sit
//! beside the two backends; the `Panes` actor owns both backends and answers list, snapshot,
//! stream and write requests.

pub mod actor;
pub mod attrs;
pub mod budget;
pub mod error;
pub mod foreground;
pub mod keys;
pub mod line_reader;
pub mod pane_ref;
pub mod pty;
pub mod ring;
pub mod screen;
pub mod snapshot;
pub mod tmux;
pub mod token;
pub mod zellij;

pub use self::actor::PanesMsg;
