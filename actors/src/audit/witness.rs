//! The witnessed audit log (issue 28): a member's chain head, kept by its lead, so that a history
//! rewritten on the member — every hash recomputed, the store's anchor too — no longer matches
//! what the lead saw.
//!
//! The chain (SPEC §7) and the anchor make a changed, removed or reordered line evident to whoever
//! trusts the machine's own store. Someone with the state dir can rewrite both consistently. The
//! lead is another machine: the member sends it `(seq, hash)` of its last line, and a later
//! `collie audit verify --witnessed` on the member asks the lead what it kept and checks that each
//! of those heads is still a line of the local chain, with that exact hash. A line's hash covers
//! every line before it, so one matching head vouches for the whole history up to it.
//!
//! Three pure parts, each with its own file:
//! - [`HeadSchedule`] (member): when to send the head — after 10 new lines, a minute after the
//!   first unsent line, at the start of each run, and when the bridge stops cleanly;
//! - [`KeptHeads`] (lead): which heads to keep per member (a bounded set spread over the member's
//!   history, contradicted heads held back from thinning) and when a head is worth an
//!   `audit.witnessed` line on the lead;
//! - [`check_head`] (member): one witnessed head against the local chain.

mod book;
mod compare;
mod schedule;

pub use book::{KeptHead, KeptHeads, Observed, LINE_EVERY_SECS, MAX_HEADS, RECENT};
pub use compare::{check_head, HeadCheck};
pub use schedule::{HeadSchedule, EVERY, EVERY_LINES, RETRY};
