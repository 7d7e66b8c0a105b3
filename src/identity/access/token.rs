//! Checking one `Cf-Access-Jwt-Assertion` token against the key ring: pure, with the time passed
//! in. The order is fixed so that nothing the sender wrote is trusted before it must be: size
//! and shape first, then the header's algorithm and key id (the only part read unsigned), then the
//! RS256 signature, and only then the claims.

use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::keys::{valid_kid, KeyRing};

/// Longest token accepted, checked before it is decoded (Cloudflare's are 1–2 KB).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew allowed on `exp` and `nbf`, in seconds: Cloudflare's clock and this machine's may
/// differ a little, and an Access token lives for hours, so a minute either way costs nothing.
pub const LEEWAY_SECS: u64 = 60;
/// What a service token's person is prefixed with, so an audit line tells a machine from a person.
pub const SERVICE_PREFIX: &str = "service-token:";

/// Why a request was refused at the Access gate. Its `Display` is the short reason `collie
/// doctor`, the log and the audit line show; the client only ever gets `identity required`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AccessRefusal {
    /// No `Cf-Access-Jwt-Assertion` header.
    #[error("no token")]
    NoToken,
    /// The header appears more than once.
    #[error("more than one token")]
    SeveralTokens,
    /// Over [`MAX_TOKEN_BYTES`].
    #[error("token too large")]
    TooLarge,
    /// Not three base64url parts with a JSON header and claims.
    #[error("malformed token")]
    Malformed,
    /// The header names an algorithm other than RS256 (`none`, HS256…).
    #[error("wrong algorithm")]
    WrongAlgorithm,
    /// No key id, or one neither of the last two fetches had.
    #[error("unknown key")]
    UnknownKey,
    /// The signature does not verify with the named key.
    #[error("bad signature")]
    BadSignature,
    /// `exp` is past (beyond the leeway), or missing.
    #[error("expired")]
    Expired,
    /// `nbf` is ahead (beyond the leeway).
    #[error("not yet valid")]
    NotYetValid,
    /// `aud` does not hold the application's AUD tag.
    #[error("wrong audience")]
    WrongAudience,
    /// `iss` is not the team's domain.
    #[error("wrong issuer")]
    WrongIssuer,
    /// Neither `email` nor `common_name`.
    #[error("no person in token")]
    NoPerson,
    /// No key fetch has succeeded yet: every token is refused.
    #[error("no keys")]
    NoKeys,
    /// The last good fetch is older than the gate keeps keys without one.
    #[error("keys too old")]
    StaleKeys,
}

/// What a token must say.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// `https://<team>.cloudflareaccess.com`.
    pub(crate) issuer: String,
    /// The application's AUD tag.
    pub(crate) aud: String,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

#[derive(Deserialize)]
struct Claims {
    exp: Option<u64>,
    nbf: Option<u64>,
    email: Option<String>,
    common_name: Option<String>,
}

/// Checks `token` and returns the person it names: its `email`, or for a service token (no
/// email) [`SERVICE_PREFIX`] and its `common_name` (the token's client id).
pub(crate) fn verify(
    token: &str,
    ring: &KeyRing,
    expected: &Expected,
    now: SystemTime,
) -> Result<String, AccessRefusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AccessRefusal::TooLarge);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AccessRefusal::Malformed);
    };
    let header = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| AccessRefusal::Malformed)?;
    let header: Header = serde_json::from_slice(&header).map_err(|_| AccessRefusal::Malformed)?;
    if header.alg != "RS256" {
        return Err(AccessRefusal::WrongAlgorithm);
    }
    let kid = header
        .kid
        .filter(|k| valid_kid(k))
        .ok_or(AccessRefusal::UnknownKey)?;
    let key = ring.find(&kid).ok_or(AccessRefusal::UnknownKey)?;

    let mut validation = Validation::new(Algorithm::RS256);
    // `exp` and `nbf` are checked below against the `now` passed in, not the crate's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.set_issuer(&[expected.issuer.as_str()]);
    validation.set_audience(&[expected.aud.as_str()]);
    let data = jsonwebtoken::decode::<Claims>(token, key.decoding(), &validation).map_err(|e| {
        match e.kind() {
            ErrorKind::InvalidSignature => AccessRefusal::BadSignature,
            ErrorKind::InvalidAlgorithm => AccessRefusal::WrongAlgorithm,
            ErrorKind::InvalidAudience => AccessRefusal::WrongAudience,
            ErrorKind::InvalidIssuer => AccessRefusal::WrongIssuer,
            ErrorKind::MissingRequiredClaim(c) if c == "aud" => AccessRefusal::WrongAudience,
            ErrorKind::MissingRequiredClaim(c) if c == "iss" => AccessRefusal::WrongIssuer,
            ErrorKind::MissingRequiredClaim(c) if c == "exp" => AccessRefusal::Expired,
            // A signature of the wrong length is ring's `Unspecified`, like a wrong one.
            ErrorKind::Crypto(_) => AccessRefusal::BadSignature,
            _ => AccessRefusal::Malformed,
        }
    })?;
    let claims = data.claims;
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match claims.exp {
        Some(exp) if exp.saturating_add(LEEWAY_SECS) >= now => {}
        _ => return Err(AccessRefusal::Expired),
    }
    if claims
        .nbf
        .is_some_and(|nbf| nbf > now.saturating_add(LEEWAY_SECS))
    {
        return Err(AccessRefusal::NotYetValid);
    }
    person(claims.email, claims.common_name)
}

/// The person a token names (see [`verify`]).
fn person(email: Option<String>, common_name: Option<String>) -> Result<String, AccessRefusal> {
    let usable = |s: &String| !s.is_empty() && s.len() <= 320 && !s.chars().any(char::is_control);
    if let Some(email) = email.filter(usable) {
        return Ok(email);
    }
    if let Some(name) = common_name.filter(usable) {
        return Ok(format!("{SERVICE_PREFIX}{name}"));
    }
    Err(AccessRefusal::NoPerson)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    fn expected() -> Expected {
        Expected {
            issuer: "https://team.cloudflareaccess.com".into(),
            aud: "abc".into(),
        }
    }

    fn refusal(token: &str) -> AccessRefusal {
        verify(token, &KeyRing::default(), &expected(), SystemTime::now()).expect_err(token)
    }

    #[test]
    fn shape_is_checked_before_anything_is_decoded() {
        assert_eq!(
            refusal(&"a".repeat(MAX_TOKEN_BYTES + 1)),
            AccessRefusal::TooLarge
        );
        assert_eq!(refusal("a.b"), AccessRefusal::Malformed);
        assert_eq!(refusal("a.b.c.d"), AccessRefusal::Malformed);
        assert_eq!(refusal("!!.b.c"), AccessRefusal::Malformed);
        assert_eq!(
            refusal(&format!("{}.b.c", b64("not json"))),
            AccessRefusal::Malformed
        );
    }

    #[test]
    fn only_rs256_with_a_known_key_id_reaches_the_signature() {
        for alg in ["none", "HS256", "RS384", "ES256", "rs256"] {
            let token = format!("{}.e30.", b64(&format!(r#"{{"alg":"{alg}","kid":"a"}}"#)));
            assert_eq!(refusal(&token), AccessRefusal::WrongAlgorithm, "{alg}");
        }
        for header in [
            r#"{"alg":"RS256"}"#,
            r#"{"alg":"RS256","kid":""}"#,
            r#"{"alg":"RS256","kid":"a"}"#,
        ] {
            let token = format!("{}.e30.c2ln", b64(header));
            assert_eq!(refusal(&token), AccessRefusal::UnknownKey, "{header}");
        }
    }

    #[test]
    fn the_person_is_the_email_else_the_service_token_s_name() {
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(person(s("a@b.c"), s("x.access")), Ok("a@b.c".into()));
        assert_eq!(
            person(s(""), s("x.access")),
            Ok("service-token:x.access".into())
        );
        assert_eq!(
            person(None, s("x.access")),
            Ok("service-token:x.access".into())
        );
        assert_eq!(person(None, None), Err(AccessRefusal::NoPerson));
        assert_eq!(person(s("a\nb"), None), Err(AccessRefusal::NoPerson));
    }
}
