//! Terminal panes: hosted (pty) panes and mirrors of the user's tmux panes (SPEC §5).
//!
//! The pure pieces (screen model, named keys, pane tokens, raw ring) sit beside the two backends;
//! the `Panes` actor owns both backends and answers list, snapshot, stream and write requests.

pub mod actor;
pub mod budget;
pub mod foreground;
pub mod keys;
pub mod pty;
pub mod ring;
pub mod screen;
pub mod tmux;
pub mod token;

pub use self::actor::PanesMsg;
