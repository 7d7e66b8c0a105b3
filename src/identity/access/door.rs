//! The Access gate among the others ([`crate::identity::Gate`]): the token is read, like every
//! identity header, only from the proxy (SPEC §14; `cloudflared` runs beside the bridge and reaches
//! it on loopback), and its refusal becomes the gate's fixed cause for the audit line.

use super::token::MAX_TOKEN_BYTES;
use super::{AccessGate, AccessRefusal, TOKEN_HEADER};
use crate::identity::{Cause, Gate, Seen};

impl Gate for AccessGate {
    fn name(&self) -> &'static str {
        "access"
    }

    fn check(&self, seen: &Seen<'_>) -> Result<Option<String>, Cause> {
        let raw = seen
            .header_within(TOKEN_HEADER, MAX_TOKEN_BYTES)?
            .ok_or(Cause::Missing)?;
        self.check_token(raw, seen.now()).map(Some).map_err(cause)
    }

    fn describe(&self) -> String {
        let state = self.state();
        format!(
            "Cf-Access-Jwt-Assertion must be signed by a key of {} for audience {} ({} keys held)",
            state.issuer,
            state.aud,
            state.keys_held()
        )
    }
}

/// The refusal in the gate's words (fixed, for the audit line's `cause`).
fn cause(refusal: AccessRefusal) -> Cause {
    match refusal {
        AccessRefusal::NoToken => Cause::Missing,
        AccessRefusal::SeveralTokens => Cause::Repeated,
        AccessRefusal::TooLarge | AccessRefusal::Malformed => Cause::Unreadable,
        AccessRefusal::WrongAlgorithm => Cause::Invalid("wrong algorithm"),
        AccessRefusal::UnknownKey => Cause::Invalid("unknown key"),
        AccessRefusal::BadSignature => Cause::Invalid("bad signature"),
        AccessRefusal::Expired => Cause::Invalid("expired"),
        AccessRefusal::NotYetValid => Cause::Invalid("not yet valid"),
        AccessRefusal::WrongAudience => Cause::Invalid("wrong audience"),
        AccessRefusal::WrongIssuer => Cause::Invalid("wrong issuer"),
        AccessRefusal::NoPerson => Cause::Invalid("no person in token"),
        AccessRefusal::NoKeys => Cause::Invalid("no keys"),
        AccessRefusal::StaleKeys => Cause::Invalid("keys too old"),
    }
}
