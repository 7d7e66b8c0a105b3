//! Fuzz tests of the Access gate's two decoders of outside bytes (docs/decisions/0063): the key
//! document a key server sends ([`parse_jwks`], cut at [`MAX_JWKS_BYTES`]) and the token a request
//! carries ([`verify`], cut at [`MAX_TOKEN_BYTES`]). Arbitrary bytes and damaged valid ones: never
//! a panic; a key document gives at most [`MAX_KEYS`] keys; a damaged token that still passes
//! names the person the signed one named (the claims cannot be changed without the key).

use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use proptest::prelude::*;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};

use super::keys::{parse_jwks, KeyRing, MAX_JWKS_BYTES, MAX_KEYS};
use super::token::{verify, Expected, MAX_TOKEN_BYTES};
use crate::fuzzing::{arbitrary, mutated, text_of};

const KEY: &[u8] = include_bytes!("../../../tests/fixtures/access/key-a.pk8.der");
const ISS: &str = "https://acme.cloudflareaccess.com";
const AUD: &str = "abc123";
/// The moment the tokens are checked at (fixed: the fuzz cases do not depend on the clock).
const NOW: u64 = 1_800_000_000;

fn pair() -> RsaKeyPair {
    RsaKeyPair::from_pkcs8(KEY).expect("the test key")
}

fn jwks() -> Vec<u8> {
    let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(pair().public());
    serde_json::to_vec(
        &serde_json::json!({"keys": [{"kid": "k1", "kty": "RSA", "alg": "RS256",
        "use": "sig", "e": URL_SAFE_NO_PAD.encode(&public.e),
        "n": URL_SAFE_NO_PAD.encode(&public.n)}],
        "public_cert": {"kid": "k1", "cert": "-----BEGIN CERTIFICATE-----"}}),
    )
    .expect("json")
}

fn token() -> String {
    let b64 = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).expect("json"));
    let message = format!(
        "{}.{}",
        b64(serde_json::json!({"alg": "RS256", "kid": "k1", "typ": "JWT"})),
        b64(
            serde_json::json!({"aud": [AUD], "iss": ISS, "email": "alice@example.com",
            "exp": NOW + 600, "nbf": NOW, "iat": NOW})
        )
    );
    let pair = pair();
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        message.as_bytes(),
        &mut signature,
    )
    .expect("sign");
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn ring() -> KeyRing {
    KeyRing::default().rotated(parse_jwks(&jwks()).expect("keys"), SystemTime::UNIX_EPOCH)
}

fn expected() -> Expected {
    Expected {
        issuer: ISS.into(),
        aud: AUD.into(),
    }
}

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
}

fn read_jwks(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(keys) = parse_jwks(bytes) {
        prop_assert!(bytes.len() <= MAX_JWKS_BYTES);
        prop_assert!(!keys.is_empty() && keys.len() <= MAX_KEYS);
    }
    Ok(())
}

fn check_token(text: &str, ring: &KeyRing) -> Result<(), TestCaseError> {
    if let Ok(person) = verify(text, ring, &expected(), now()) {
        prop_assert!(text.len() <= MAX_TOKEN_BYTES);
        prop_assert_eq!(person, "alice@example.com");
    }
    Ok(())
}

#[test]
fn the_valid_ones_pass() {
    assert_eq!(parse_jwks(&jwks()).expect("keys").len(), 1);
    assert_eq!(
        verify(&token(), &ring(), &expected(), now()),
        Ok("alice@example.com".into())
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_key_documents_never_panic(bytes in arbitrary(512)) {
        read_jwks(&bytes)?;
    }

    #[test]
    fn damaged_key_documents_never_panic(bytes in mutated(jwks())) {
        read_jwks(&bytes)?;
    }

    #[test]
    fn arbitrary_tokens_never_pass(bytes in arbitrary(512)) {
        let text = text_of(bytes);
        prop_assert!(verify(&text, &ring(), &expected(), now()).is_err());
    }

    #[test]
    fn damaged_tokens_never_name_anyone_else(bytes in mutated(token().into_bytes())) {
        check_token(&text_of(bytes), &ring())?;
    }
}
