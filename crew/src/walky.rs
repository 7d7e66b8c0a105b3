//! Walky-talky across machines (SPEC §9): the pure core of signing, attesting and verifying
//! messages between panes of one crew. No I/O, no clock (callers pass `now` as unix seconds), no
//! actors; the walky actor owns the key, the logs and the clock and calls in here.
//!
//! **The path of a message.** A member's pane sends a [`Message`]; the member signs it with its crew
//! key ([`Signer::sign`], a [`Signed`]) and hands it to the lead. The lead runs [`attest`]: the
//! certificate of the connection it came on must carry the pin the lead stored for that member, the
//! message must name that member as its machine, and the signature must verify against the
//! certificate's key. The lead then signs an [`Attestation`] — "this certificate belongs to crew
//! member `m`, and it signed exactly this message" — and forwards a [`Forwarded`] (the signed
//! message, the certificate, the attestation) to the receiving machine, which runs [`receive`]:
//! the attestation must verify against the lead key it pinned, the sender's signature against the
//! attached certificate. A message from one of the lead's own panes carries no attestation: it is
//! signed with the lead key itself and must name the lead's machine ([`forward_own`]).
//!
//! Why both signatures: the receiver pins only the lead, never the other members, so it cannot tell a
//! member's key from any other key — the lead vouches for it. And why the member signs at all when
//! the lead vouches anyway: so that the lead cannot put words in a member's mouth without the
//! member's key; a receiver that logs the [`Forwarded`] holds proof of who wrote what.
//!
//! **What is signed.** Never JSON text and never bincode: [`Message::canonical`] is a fixed,
//! domain-separated byte string (`collie-walky/1 message\0`, then each field length-prefixed), and
//! the attestation has its own prefix (`collie-walky/1 attest\0`). The same ed25519 key also signs
//! TLS handshakes and the certificate; TLS 1.3 signs 64 spaces first and a certificate's TBS starts
//! with a DER `SEQUENCE` tag (`0x30`), while both prefixes here start with `c`, so no signature made
//! for one purpose verifies for another.
//!
//! **Replay.** Message ids are 128 random bits. Every verifier (the lead in [`attest`], each receiver
//! in [`receive`]) refuses a `sent_at` more than [`MAX_SKEW_SECS`] from its clock and an id its
//! [`ReplayGuard`] has seen. An id is remembered only once every other check passed, so a forged
//! message cannot burn the id of a genuine one. On the lead, use one guard for [`attest`] and
//! another for delivering to its own panes with [`receive`]: the same message passes both.
//!
//! **Results.** Only the lead writes a [`WalkyResult`] back to the sender ([`accept_result`]), and
//! the lead keeps results and delivery records in bounded, expiring [`Records`].
//!
//! **What the caller still checks.** That `message.to` names one of its own panes with the pane's
//! current token (SPEC §9), and [`check_walky_on`]. The sender's name travels inside a header typed
//! into a pane: it holds no control characters ([`Message::validate`]), but it may hold a `"`.

mod address;
mod attest;
mod id;
mod message;
mod records;
mod replay;
mod result;
mod signer;

pub use address::{Address, AddressProblem, MAX_PANE_LEN, TOKEN_LEN};
pub use attest::{attest, forward_own, receive, Attestation, Forwarded, ATTEST_DOMAIN};
pub use id::{MessageId, ID_HEX_LEN};
pub(crate) use message::verifies;
pub use message::{Message, Signed, MAX_FROM_NAME_CHARS, MESSAGE_DOMAIN};
pub use records::Records;
pub use replay::ReplayGuard;
pub use result::{accept_result, check_walky_on, Outcome, WalkyResult};
pub use signer::{public_key_of, Signer};

use crate::pin::Pin;

/// The largest message body, in bytes of UTF-8 (16 KiB). The body is read with `collie walky
/// inbox`, not typed, so this bounds logs and frames rather than screens.
pub const MAX_BODY: usize = 16 * 1024;

/// How far a message's `sent_at` may be from the verifier's clock, either way (±5 minutes, SPEC
/// §9). It also bounds how long a [`ReplayGuard`] must remember an id.
pub const MAX_SKEW_SECS: i64 = 300;

/// How long the lead keeps results and delivery records (10 minutes, SPEC §9).
pub const RECORD_TTL_SECS: i64 = 600;

/// The longest text an error message quotes from its input; longer input is cut with `…`, so a
/// hostile 16 MiB field cannot turn into a 16 MiB log line.
const QUOTE_LEN: usize = 80;

/// Why a walky message, attestation or result was refused. `Display` is what the sender or the
/// log is told, and says what to change where something can be changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WalkyError {
    /// The body is longer than [`MAX_BODY`] bytes.
    #[error("message body is {len} bytes, more than the limit of {MAX_BODY} (16 KiB): shorten it")]
    BodyTooLarge {
        /// The body's length in bytes.
        len: usize,
    },
    /// The sender's pane name is too long or holds control characters.
    #[error(
        "sender name {0:?} is not a pane name: at most {MAX_FROM_NAME_CHARS} characters, no control characters"
    )]
    InvalidSenderName(String),
    /// An address is malformed.
    #[error("invalid address {address:?}: {problem}")]
    InvalidAddress {
        /// The address as given (cut to a readable length).
        address: String,
        /// What is wrong with it.
        problem: AddressProblem,
    },
    /// A message id is not 32 lowercase hex digits.
    #[error("invalid message id {0:?}: an id is {ID_HEX_LEN} lowercase hex digits, as printed in the walky header")]
    InvalidId(String),
    /// The crew key could not be loaded for signing.
    #[error("the crew key cannot be used for walky signing: {0}")]
    BadKey(String),
    /// The sender's certificate is not a well-formed certificate for an ed25519 key.
    #[error("sender certificate is not an ed25519 certificate")]
    BadCertificate,
    /// The certificate the sender presented is not the one the lead pinned for it.
    #[error("certificate presented by {machine} is not the one pinned for it")]
    PinMismatch {
        /// The member the certificate came from.
        machine: String,
        /// The pin stored for that member.
        pinned: Pin,
        /// The pin of the certificate presented.
        presented: Pin,
    },
    /// The message names another machine as its sender than the one it came from.
    #[error("message claims to come from {claimed} but was sent by {actual}")]
    SenderMismatch {
        /// The machine in `message.from`.
        claimed: String,
        /// The machine that sent (or was attested as sending) it.
        actual: String,
    },
    /// The sender's signature does not verify (a forged or altered message, or another key).
    #[error("signature of message {id} does not verify")]
    BadSignature {
        /// The message's id.
        id: MessageId,
    },
    /// The attestation does not verify against the pinned lead key for this message, sender and
    /// certificate: not made by the lead, or made for something else.
    #[error("lead attestation of message {id} is invalid (not by the pinned lead, or for another message, sender or certificate)")]
    AttestationInvalid {
        /// The message's id.
        id: MessageId,
    },
    /// A message without an attestation that does not come from the lead.
    #[error("message {id} from {machine} has no lead attestation: only the lead ({lead}) may send without one")]
    NotFromLead {
        /// The message's id.
        id: MessageId,
        /// The machine it claims to come from.
        machine: String,
        /// The lead's machine.
        lead: String,
    },
    /// `sent_at` is more than [`MAX_SKEW_SECS`] away from the verifier's clock.
    #[error(
        "message {id} is {} s off this machine's clock (limit ±{MAX_SKEW_SECS} s): check the clocks of both machines",
        i128::from(*.sent_at) - i128::from(*.now)
    )]
    Skew {
        /// The message's id.
        id: MessageId,
        /// When the sender says it sent the message (unix seconds).
        sent_at: i64,
        /// The verifier's clock (unix seconds).
        now: i64,
    },
    /// The id was already accepted.
    #[error("message {id} was already received (replay)")]
    Replayed {
        /// The message's id.
        id: MessageId,
    },
    /// The message is older than what the [`ReplayGuard`] still remembers (its cap was reached or
    /// the clock went back), so a replay could not be told apart from a first delivery.
    #[error("message {id} is older than this machine's replay memory reaches: refused as a possible replay")]
    TooOldToCheck {
        /// The message's id.
        id: MessageId,
    },
    /// A result that did not come from the pinned lead.
    #[error("result for message {id} refused: results are accepted from the lead only")]
    ResultNotFromLead {
        /// The message the result is about.
        id: MessageId,
    },
    /// A result for a message this machine did not send, or no longer has in its log.
    #[error("result for message {id} refused: no such message in this machine's walky log")]
    UnknownResult {
        /// The message the result is about.
        id: MessageId,
    },
    /// Walky is turned off on the receiving machine (`COLLIE_WALKY=off`). Its `Display` is the
    /// exact rejection text the sender sees.
    #[error("walky off on {machine}")]
    WalkyOff {
        /// The machine that refused.
        machine: String,
    },
}

/// `text` for an error message: at most [`QUOTE_LEN`] characters, then `…`.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LEN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
