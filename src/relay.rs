//! The crew relay adapter (SPEC §8), on top of `collie_crew::relay`'s framing and the crew actor's
//! link: on a member, the relay streams the lead opens are decoded and served with the same
//! operations a phone gets ([`crate::app`]) — masked by the member, writes audited as relayed by
//! the lead for the lead's device, with the lead's request id — and the answers encoded.
//!
//! The lead's side of the relay (a phone's request for a member's pane) is the application's:
//! [`crate::app::machine`].

pub mod member;
pub mod uplink;
