//! The team's signing keys: the JWKS document Cloudflare serves at
//! `https://<team>.cloudflareaccess.com/cdn-cgi/access/certs`, parsed into verification keys,
//! and the ring of the last two fetches that tokens are checked against. Pure: no I/O, no clock.
//!
//! The document holds `keys` (every key Cloudflare still accepts — the current one and the one
//! rotated out up to seven days ago — as JWKs with `kid`, `kty`, `alg`, `use`, `n`, `e`) and the
//! same keys as PEM (`public_cert`, `public_certs`), which are ignored: the JWKs say the same.

use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::DecodingKey;
use serde::Deserialize;

/// Most bytes of a JWKS document read or parsed (Cloudflare's, with two keys and their PEM
/// certificates, is about 5 KB).
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
/// Most usable keys one document may hold (Cloudflare serves two).
pub const MAX_KEYS: usize = 16;
/// Longest key id accepted (Cloudflare's are 64 hex digits).
pub const MAX_KID_CHARS: usize = 128;
/// The modulus sizes accepted, in bytes: 2048 to 8192 bits, as ring verifies RS256.
const MODULUS_BYTES: std::ops::RangeInclusive<usize> = 256..=1024;

/// Why a JWKS document gave no keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// Over [`MAX_JWKS_BYTES`].
    #[error("key document too large")]
    TooLarge,
    /// Not the JSON of a key set.
    #[error("key document is not a key set: {0}")]
    NotJson(String),
    /// No RS256 signing key in it.
    #[error("no usable key in the key document")]
    NoUsableKey,
    /// More than [`MAX_KEYS`] usable keys.
    #[error("more than {MAX_KEYS} keys in the key document")]
    TooManyKeys,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    kid: Option<String>,
    kty: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    usage: Option<String>,
    n: Option<String>,
    e: Option<String>,
}

/// One verification key and the id tokens name it by.
#[derive(Clone)]
pub struct Key {
    kid: String,
    decoding: DecodingKey,
}

impl Key {
    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub(crate) fn decoding(&self) -> &DecodingKey {
        &self.decoding
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("kid", &self.kid).finish()
    }
}

/// The usable keys of a JWKS document: RSA keys for RS256 signatures (`kty` `RSA`, `alg` absent
/// or `RS256`, `use` absent or `sig`) with a key id, a 2048–8192-bit modulus and a small
/// exponent. Other keys are skipped; a repeated key id keeps its first key.
pub fn parse_jwks(body: &[u8]) -> Result<Vec<Key>, JwksError> {
    if body.len() > MAX_JWKS_BYTES {
        return Err(JwksError::TooLarge);
    }
    let jwks: Jwks = serde_json::from_slice(body).map_err(|e| JwksError::NotJson(e.to_string()))?;
    let mut keys: Vec<Key> = Vec::new();
    for jwk in jwks.keys {
        let Some(key) = usable(jwk) else { continue };
        if keys.iter().any(|k| k.kid == key.kid) {
            continue;
        }
        if keys.len() == MAX_KEYS {
            return Err(JwksError::TooManyKeys);
        }
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(JwksError::NoUsableKey);
    }
    Ok(keys)
}

/// The key a JWK describes, if it is one this gate verifies with.
fn usable(jwk: Jwk) -> Option<Key> {
    if jwk.kty.as_deref() != Some("RSA")
        || jwk.alg.as_deref().is_some_and(|a| a != "RS256")
        || jwk.usage.as_deref().is_some_and(|u| u != "sig")
    {
        return None;
    }
    let kid = jwk.kid.filter(|k| valid_kid(k))?;
    let n = URL_SAFE_NO_PAD.decode(jwk.n?).ok()?;
    let e = URL_SAFE_NO_PAD.decode(jwk.e?).ok()?;
    let n = strip_leading_zeros(&n);
    let e = strip_leading_zeros(&e);
    if !MODULUS_BYTES.contains(&n.len()) || e.is_empty() || e.len() > 4 {
        return None;
    }
    Some(Key {
        kid,
        decoding: DecodingKey::from_rsa_raw_components(n, e),
    })
}

/// A key id of visible ASCII, 1 to [`MAX_KID_CHARS`] long.
pub(crate) fn valid_kid(kid: &str) -> bool {
    !kid.is_empty() && kid.len() <= MAX_KID_CHARS && kid.bytes().all(|b| b.is_ascii_graphic())
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

/// The keys tokens are checked against: those of the last good fetch and of the good fetch
/// before it. Cloudflare's document already holds the key rotated out (for seven days); keeping
/// the previous fetch's keys too means a key leaves only after two good fetches without it, so a
/// token signed just before a rotation is never refused because of the moment the bridge fetched.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    current: Vec<Key>,
    previous: Vec<Key>,
    fetched_at: Option<SystemTime>,
}

impl KeyRing {
    /// The ring after a good fetch of `keys` at `at`: they become current, the current ones
    /// previous, and the previous ones are dropped.
    pub fn rotated(&self, keys: Vec<Key>, at: SystemTime) -> KeyRing {
        KeyRing {
            previous: self.current.clone(),
            current: keys,
            fetched_at: Some(at),
        }
    }

    /// The key named `kid`, from the last fetch or the one before.
    pub fn find(&self, kid: &str) -> Option<&Key> {
        self.current
            .iter()
            .chain(self.previous.iter())
            .find(|k| k.kid == kid)
    }

    /// Whether no fetch has ever succeeded (every token is then refused).
    pub fn is_empty(&self) -> bool {
        self.current.is_empty() && self.previous.is_empty()
    }

    /// When the last good fetch was.
    pub fn fetched_at(&self) -> Option<SystemTime> {
        self.fetched_at
    }

    /// The key ids of the last good fetch.
    pub fn current_kids(&self) -> Vec<String> {
        self.current.iter().map(|k| k.kid.clone()).collect()
    }

    /// The key ids of the good fetch before it that the last one no longer has.
    pub fn previous_only_kids(&self) -> Vec<String> {
        self.previous
            .iter()
            .filter(|p| !self.current.iter().any(|c| c.kid == p.kid))
            .map(|k| k.kid.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn jwk(kid: &str, n_bytes: usize) -> serde_json::Value {
        let mut n = vec![0xc5; n_bytes];
        n[n_bytes - 1] = 0x01;
        serde_json::json!({"kid": kid, "kty": "RSA", "alg": "RS256", "use": "sig",
            "e": b64(&[1, 0, 1]), "n": b64(&n)})
    }

    fn doc(keys: Vec<serde_json::Value>) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"keys": keys,
            "public_cert": {"kid": "a", "cert": "-----BEGIN CERTIFICATE-----"},
            "public_certs": []}))
        .expect("json")
    }

    #[test]
    fn cloudflare_s_shape_gives_its_rsa_keys() {
        let keys = parse_jwks(&doc(vec![jwk("a", 256), jwk("b", 512)])).expect("keys");
        let kids: Vec<_> = keys.iter().map(Key::kid).collect();
        assert_eq!(kids, ["a", "b"]);
    }

    #[test]
    fn unusable_keys_are_skipped_and_none_usable_is_an_error() {
        let mut ec = jwk("ec", 256);
        ec["kty"] = "EC".into();
        let mut hs = jwk("hs", 256);
        hs["alg"] = "HS256".into();
        let mut enc = jwk("enc", 256);
        enc["use"] = "enc".into();
        let small = jwk("small", 128); // 1024 bits
        let mut no_kid = jwk("x", 256);
        no_kid.as_object_mut().expect("object").remove("kid");
        let bad_kid = jwk("has space", 256);
        let mut big_e = jwk("e", 256);
        big_e["e"] = b64(&[1; 5]).into();
        let all = vec![ec, hs, enc, small, no_kid, bad_kid, big_e];
        assert_eq!(
            parse_jwks(&doc(all.clone())).err(),
            Some(JwksError::NoUsableKey)
        );
        let mut with_good = all;
        with_good.push(jwk("good", 256));
        let keys = parse_jwks(&doc(with_good)).expect("keys");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid(), "good");
    }

    #[test]
    fn size_count_and_shape_bounds() {
        assert_eq!(
            parse_jwks(&vec![b' '; MAX_JWKS_BYTES + 1]).err(),
            Some(JwksError::TooLarge)
        );
        let many = (0..=MAX_KEYS).map(|i| jwk(&format!("k{i}"), 256)).collect();
        assert_eq!(parse_jwks(&doc(many)).err(), Some(JwksError::TooManyKeys));
        assert!(matches!(parse_jwks(b"{}"), Err(JwksError::NotJson(_))));
        assert!(matches!(parse_jwks(b"<html>"), Err(JwksError::NotJson(_))));
        // A repeated id keeps the first key, and counts once.
        let keys = parse_jwks(&doc(vec![jwk("a", 256), jwk("a", 300)])).expect("keys");
        assert_eq!(keys.len(), 1);
    }

    #[test]
    fn a_key_stays_for_one_more_good_fetch() {
        let t = SystemTime::UNIX_EPOCH;
        let a = parse_jwks(&doc(vec![jwk("a", 256)])).expect("a");
        let b = parse_jwks(&doc(vec![jwk("b", 256)])).expect("b");
        let empty = KeyRing::default();
        assert!(empty.is_empty() && empty.find("a").is_none());
        let one = empty.rotated(a, t);
        assert!(one.find("a").is_some());
        let two = one.rotated(b.clone(), t);
        assert!(two.find("a").is_some() && two.find("b").is_some());
        assert_eq!(two.previous_only_kids(), ["a"]);
        let three = two.rotated(b, t);
        assert!(three.find("a").is_none() && three.find("b").is_some());
        assert!(three.previous_only_kids().is_empty());
    }
}
