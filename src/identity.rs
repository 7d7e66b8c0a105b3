//! Identity at the door (SPEC §14): gates that require a person a proxy in front of the bridge
//! vouches for, beside pairing.

pub mod access;
