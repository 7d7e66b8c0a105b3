//! The audit log (SPEC §7): `<state>/audit.log`, mode 0600, append-only, one hash-chained JSON
//! object per line.
//!
//! **What it owns.** The log file and the chain's position in it (the next `seq` and `prev`).
//! Every write a phone makes — keystrokes and text, pane and tab lifecycle, device pairing,
//! revocation, expiry and tier changes, walky traffic, denials, resource refusals — is handed in as
//! an [`AuditRecord`] before the write is carried out. Before each line reaches the file the store
//! records it as pending ([`Anchor`]), so `collie audit verify` and a restarted bridge notice a
//! removed, truncated, changed or extended tail, and never mistake a line in flight at a crash for
//! any of them. A log that does not end where the store says is a break: recorded in the store,
//! written as an `audit.break` line, reported until a person acknowledges it — never laundered.
//!
//! **When it fails.** An append that cannot be completed is an error and advances nothing
//! ([`AuditLog::append`] fails closed); the write it was meant to record must be refused with
//! `503 audit unavailable`. The next successful append takes the same `seq`. The log is never cut
//! by buffer limits.
//!
//! **Pieces.**
//! - [`AuditChain`] is the pure core: it renders a record into the exact bytes of the next line and
//!   advances only on [`commit`](AuditChain::commit), after the caller appended the line. No I/O,
//!   no clock (the caller passes `ts`).
//! - [`ContentMode`] (`COLLIE_AUDIT_CONTENT`) decides what of `detail` is written. Typed text never
//!   is: under a `text` member it becomes one `•` per character (`preview`) or `[redacted]`
//!   (`none`); `none` also redacts every string except identifiers ([`IDENTIFIER_KEYS`]). Then
//!   every caller string passes the redactor's mask.
//! - [`FileSink`] appends synchronously (open per append, `O_APPEND`, 0600, `fdatasync`);
//!   [`AuditLog`] ties chain, sink, mode and mask together and notices a file that changed under
//!   it; [`examine`] reads how the file ends.
//! - [`anchor`] is the pure decision between continuing and recording a break; [`stored`] is what
//!   the store holds (anchor, breaks, kept lines); [`denials`] limits `security.denied` lines to
//!   one a minute per source and reason.
//! - [`verify`] checks a whole log and names the first bad `seq`; [`tail`] returns the last lines.
//! - [`witness`]: the member's chain head, sent to the lead and kept there, so that `collie audit
//!   verify --witnessed` notices a history rewritten with every hash and the anchor recomputed.
//!
//! **Line format.** Members in this order, no whitespace, then `\n`:
//!
//! ```text
//! {"v":1,"seq":N,"ts":"2025-01-02T03:04:05.006Z","event":"pane.input","machine":"web-1","session":null,"device":"phone","request_id":"…","detail":{…},"prev":"<64 hex>","hash":"<64 hex>"}
//! ```
//!
//! `seq` starts at 1 and grows by one per line; `ts` is UTC with milliseconds and `Z`; `session`,
//! `device` and `request_id` are a string or `null`. The line's **body** is the same object without
//! the `hash` member — its bytes up to and including the `"` that closes `prev`, then `}` — and
//!
//! ```text
//! hash = lowercase_hex(SHA-256(prev ‖ body))
//! ```
//!
//! with `prev` taken as its 64 ASCII hex characters; the first line's `prev` is [`GENESIS_PREV`]
//! (64 zeros) and every other line's `prev` is the `hash` of the line before. The verifier hashes
//! the bytes as they stand, so the order of `detail`'s members is whatever was written.
//!
//! The ractor shell is [`actor`]: it owns an [`AuditLog`], stamps each record with the clock and
//! keeps the tail in the store.
//!
//! **Crash mid-write.** A torn last line is a break like any other damaged end: the restarted
//! bridge records it, the next append begins with a `\n` so that the fragment sits on a line of
//! its own, and [`verify`] lists it as an interrupted write as long as the chain continues across
//! it (the recorded break still fails verification until acknowledged). An append that fails while
//! the bridge runs cuts the file back to its previous length instead; see [`FileSink`].

pub mod actor;
pub mod anchor;
mod chain;
mod content;
pub mod denials;
mod error;
mod event;
mod line;
mod log;
mod sink;
pub mod stored;
mod tail;
mod verify;
pub mod witness;

#[cfg(test)]
mod proptests;

pub use actor::{AuditMsg, AuditStatus, Kept};
pub use anchor::{Anchor, FileEnd};
pub use chain::{AuditChain, ChainTail, RenderedLine};
pub use content::{typed_text_detail, ContentMode, IDENTIFIER_KEYS, REDACTED, TYPED_TEXT_KEY};
pub use denials::Denial;
pub use error::AuditError;
pub use event::{AuditEventKind, AuditRecord};
pub use line::{GENESIS_PREV, MAX_LINE_BYTES};
pub use log::{AuditLog, Mask};
pub use sink::{AuditSink, FileSink};
pub use stored::BreakRecord;
pub use tail::{examine, tail};
pub use verify::{verify, verify_at, VerifyFailure, VerifyProblem, VerifyReport};
