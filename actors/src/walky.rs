//! Walky-talky on this machine (SPEC §9): the message log, local delivery and, in a crew, the
//! signed path through the lead.
//!
//! [`log`] is the log on disk (`<state>/walky/`), [`prune`] its pure pruning rule, [`actor`] the
//! actor that owns the log, the crew key for signing, the replay guards and the lead's records,
//! and [`error`] how its requests fail.

pub mod actor;
pub mod error;
pub mod log;
pub mod prune;
