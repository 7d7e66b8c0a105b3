//! The phone API's own answer types (SPEC §3.2): what an HTTP answer serialises, declared here and
//! built from what the application returns.
//!
//! The application's results are often types of the crew wire (a pane is a `PaneInfo` of the
//! relay) or of an actor. Serialising those as they are would tie two wires together: a field
//! added to the relay for a member would appear on the phone's JSON, and a change meant for the
//! phone would change what crosses the crew link — without the compiler saying so. Each type here
//! spells out the JSON it gives, field by field and in order, and a conversion that stops
//! compiling when either side changes. The tests check that each gives byte for byte the JSON the
//! phone got before these types existed.

pub mod cards;
pub mod chat;
pub mod devices;
pub mod durable;
pub mod meta;
pub mod panes;
pub mod walky;
