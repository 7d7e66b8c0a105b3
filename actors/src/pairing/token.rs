//! Device tokens (SPEC §4.3): 256 random bits, shown once, stored only as their SHA-256.
//!
//! A token reads `collie_` followed by the 32 random bytes in base64url without padding (43
//! characters), 50 characters in all. The redactor (§6) masks exactly this shape, so it must not
//! change. [`DeviceToken`] never prints itself (`Debug` and `Display` show `(token set)`); the one
//! place that needs the text, the pairing response, calls [`DeviceToken::expose_secret`].
//!
//! What a request presents is hashed with [`TokenHash::from_presented`] and compared with stored
//! hashes in constant time. Hashing first means the comparison never touches the secret itself, and a
//! leaked store holds nothing that can be presented.

use std::fmt;

use rand::{CryptoRng, RngCore};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What every device token starts with.
pub const TOKEN_PREFIX: &str = "collie_";

/// Length of a token: the prefix and 43 base64url characters.
pub const TOKEN_LEN: usize = TOKEN_PREFIX.len() + 43;

/// A device token in the clear. Exists only between its generation and the pairing response.
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceToken(String);

impl DeviceToken {
    /// A fresh token of 256 random bits. Take a cryptographic generator: the token is the device's
    /// credential.
    pub fn generate(rng: &mut (impl RngCore + CryptoRng)) -> DeviceToken {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        let mut s = String::with_capacity(TOKEN_LEN);
        s.push_str(TOKEN_PREFIX);
        base64url_nopad(&bytes, &mut s);
        DeviceToken(s)
    }

    /// The token text, for the one response that hands it to the phone. Nothing else should call
    /// this.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// The SHA-256 the store keeps.
    pub fn hash(&self) -> TokenHash {
        TokenHash::from_presented(&self.0)
    }
}

impl fmt::Debug for DeviceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(token set)")
    }
}

impl fmt::Display for DeviceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(token set)")
    }
}

/// The SHA-256 of a device token: what the store keeps and the policy snapshot looks up.
///
/// Equality is constant-time. Serialized as 64 lowercase hex characters.
#[derive(Clone, Copy)]
pub struct TokenHash([u8; 32]);

impl TokenHash {
    /// Hashes whatever a request presented as its token (the bearer value, without `Bearer `). Any
    /// string is accepted; one that is not a token simply matches no device.
    pub fn from_presented(presented: &str) -> TokenHash {
        TokenHash(Sha256::digest(presented.as_bytes()).into())
    }

    /// Wraps stored hash bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> TokenHash {
        TokenHash(bytes)
    }

    /// The 32 hash bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Constant-time equality.
    pub fn ct_eq(&self, other: &TokenHash) -> bool {
        self.0.ct_eq(&other.0).into()
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 16 hex characters: how the tool sessions, the "No prompts" confirmations and the
    /// starter rows name a device's token (a device re-paired under the same label is another).
    pub fn short_hex(&self) -> String {
        hex::encode(&self.0[..8])
    }

    /// The device's identity as what it owns is bound to (SPEC §10.1: tool sessions, a confirm
    /// token, locally and on crew members): 128 bits of a SHA-256 over this hash under a label of
    /// its own, in hex. Stable for the device's life, another for a device paired again under
    /// the same label, and neither the token nor the hash the policy looks it up by, so it may
    /// travel to a member.
    pub fn device_id(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"collie device id\0");
        h.update(self.0);
        hex::encode(&h.finalize()[..16])
    }
}

impl PartialEq for TokenHash {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other)
    }
}

impl Eq for TokenHash {}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A hash reveals nothing usable, but a short prefix is enough to tell two apart in a log.
        write!(f, "TokenHash({}…)", &self.to_hex()[..8])
    }
}

impl Serialize for TokenHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for TokenHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(&s, &mut bytes).map_err(|e| {
            serde::de::Error::custom(format!("token hash must be 64 hex characters: {e}"))
        })?;
        Ok(TokenHash(bytes))
    }
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// RFC 4648 §5 base64url without padding. Written here rather than taken from a crate because this
/// is its only use in Collie and it is a dozen lines.
fn base64url_nopad(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let group = (b(0) << 16) | (b(1) << 8) | b(2);
        // n input bytes carry 8n bits: n + 1 characters of 6 bits.
        for i in 0..=chunk.len() {
            let six = (group >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(BASE64URL[six as usize]));
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    fn b64(bytes: &[u8]) -> String {
        let mut s = String::new();
        base64url_nopad(bytes, &mut s);
        s
    }

    #[test]
    fn a_device_id_is_stable_per_token_and_reveals_no_hash_prefix() {
        let a = DeviceToken::generate(&mut StdRng::seed_from_u64(1)).hash();
        let b = DeviceToken::generate(&mut StdRng::seed_from_u64(2)).hash();
        assert_eq!(a.device_id(), a.device_id());
        assert_ne!(a.device_id(), b.device_id());
        assert_eq!(a.device_id().len(), 32);
        assert!(!a.to_hex().contains(&a.device_id()[..8]));
    }

    #[test]
    fn base64url_matches_rfc4648_vectors() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg");
        assert_eq!(b64(b"fo"), "Zm8");
        assert_eq!(b64(b"foo"), "Zm9v");
        assert_eq!(b64(b"foob"), "Zm9vYg");
        assert_eq!(b64(b"fooba"), "Zm9vYmE");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
        // The URL-safe characters: standard base64 of fb ff bf is "+/+/".
        assert_eq!(b64(&[0xfb, 0xff, 0xbf]), "-_-_");
        assert_eq!(b64(&[0xff; 32]).len(), 43);
    }

    #[test]
    fn tokens_have_the_shape_the_redactor_masks() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..100 {
            let t = DeviceToken::generate(&mut rng);
            let s = t.expose_secret();
            assert_eq!(s.len(), TOKEN_LEN);
            assert_eq!(TOKEN_LEN, 50);
            let body = s.strip_prefix("collie_").expect("prefix");
            assert_eq!(body.len(), 43);
            assert!(body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        }
    }

    #[test]
    fn tokens_are_random_and_deterministic_under_a_seed() {
        let a = DeviceToken::generate(&mut StdRng::seed_from_u64(9));
        let b = DeviceToken::generate(&mut StdRng::seed_from_u64(9));
        let c = DeviceToken::generate(&mut StdRng::seed_from_u64(10));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn debug_and_display_never_show_the_token() {
        let t = DeviceToken::generate(&mut StdRng::seed_from_u64(1));
        assert_eq!(format!("{t:?}"), "(token set)");
        assert_eq!(format!("{t}"), "(token set)");
        assert_eq!(format!("{:?}", Some(&t)), "Some((token set))");
    }

    #[test]
    fn hash_is_sha256_of_the_token_text() {
        let t = DeviceToken::generate(&mut StdRng::seed_from_u64(1));
        assert_eq!(t.hash(), TokenHash::from_presented(t.expose_secret()));
        assert_ne!(t.hash(), TokenHash::from_presented(""));
        // SHA-256("abc")
        assert_eq!(
            TokenHash::from_presented("abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hash_serializes_as_hex_and_back() {
        let h = TokenHash::from_presented("abc");
        let json = serde_json::to_string(&h).expect("serializes");
        assert_eq!(json, format!("\"{}\"", h.to_hex()));
        let back: TokenHash = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, h);
        assert!(serde_json::from_str::<TokenHash>("\"abcd\"").is_err());
        assert!(serde_json::from_str::<TokenHash>(&format!("\"{}\"", "g".repeat(64))).is_err());
        assert_eq!(format!("{h:?}"), "TokenHash(ba7816bf…)");
    }
}
