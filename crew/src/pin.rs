//! A pin: the SHA-256 of a certificate's DER SubjectPublicKeyInfo, in lowercase hex (SPEC §8).
//!
//! Pins are what invites, the store and `collie crew status` show, and the only thing the TLS
//! verifiers trust (see [`crate::tls::verifier`]). A pin names a key, not a certificate: re-issuing a
//! certificate for the same key keeps the pin. Pins are public values, so they print in full.

use std::fmt;
use std::str::FromStr;

use rustls::pki_types::CertificateDer;
use rustls::server::ParsedCertificate;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Length of a pin's text form: 32 bytes as 64 lowercase hex digits.
pub const PIN_HEX_LEN: usize = 64;

/// Why a pin could not be parsed or computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The text is not exactly [`PIN_HEX_LEN`] characters long.
    #[error("a pin is {PIN_HEX_LEN} lowercase hex digits, got {0} characters")]
    Length(usize),
    /// The text holds something other than `0-9a-f`.
    #[error("a pin is lowercase hex (0-9, a-f)")]
    NotLowercaseHex,
    /// The certificate is not a well-formed X.509 certificate.
    #[error("the certificate cannot be parsed")]
    Certificate,
}

/// The SHA-256 of a DER SubjectPublicKeyInfo. `Display` and `FromStr` use the lowercase hex form;
/// serde uses it too.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pin([u8; 32]);

impl Pin {
    /// The pin of a DER-encoded SubjectPublicKeyInfo (the whole `SEQUENCE`, tag and length included).
    pub fn of_spki(spki_der: &[u8]) -> Self {
        Self(Sha256::digest(spki_der).into())
    }

    /// The pin of a DER certificate: the hash of its SubjectPublicKeyInfo, extracted by webpki (no
    /// hand-written DER parsing here).
    pub fn of_certificate(cert: &CertificateDer<'_>) -> Result<Self, PinError> {
        let parsed = ParsedCertificate::try_from(cert).map_err(|_| PinError::Certificate)?;
        Ok(Self::of_spki(parsed.subject_public_key_info().as_ref()))
    }

    /// The 32 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl From<[u8; 32]> for Pin {
    fn from(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl FromStr for Pin {
    type Err = PinError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != PIN_HEX_LEN {
            return Err(PinError::Length(s.chars().count()));
        }
        // `hex` accepts upper case too; the canonical form is lower case only, so one pin has
        // exactly one spelling in invites, the store and the CLI.
        if !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(PinError::NotLowercaseHex);
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(s, &mut bytes).map_err(|_| PinError::NotLowercaseHex)?;
        Ok(Self(bytes))
    }
}

impl TryFrom<String> for Pin {
    type Error = PinError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Pin> for String {
    fn from(pin: Pin) -> Self {
        pin.to_string()
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pin({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn parses_and_prints_the_canonical_form() {
        let pin: Pin = SAMPLE.parse().unwrap();
        assert_eq!(pin.to_string(), SAMPLE);
        assert_eq!(format!("{pin:?}"), format!("Pin({SAMPLE})"));
    }

    #[test]
    fn refuses_wrong_length_upper_case_and_non_hex() {
        assert!(matches!("ab".parse::<Pin>(), Err(PinError::Length(2))));
        assert!(matches!(
            format!("{SAMPLE}0").parse::<Pin>(),
            Err(PinError::Length(65))
        ));
        assert!(matches!(
            SAMPLE.to_uppercase().parse::<Pin>(),
            Err(PinError::NotLowercaseHex)
        ));
        let not_hex = format!("g{}", &SAMPLE[1..]);
        assert!(matches!(
            not_hex.parse::<Pin>(),
            Err(PinError::NotLowercaseHex)
        ));
        // 64 bytes but multi-byte characters: still not a pin.
        let wide = "é".repeat(32);
        assert!(wide.parse::<Pin>().is_err());
    }

    #[test]
    fn serde_uses_the_text_form() {
        let pin: Pin = SAMPLE.parse().unwrap();
        let json = serde_json::to_string(&pin).unwrap();
        assert_eq!(json, format!("\"{SAMPLE}\""));
        let back: Pin = serde_json::from_str(&json).unwrap();
        assert_eq!(back, pin);
        assert!(serde_json::from_str::<Pin>("\"ABC\"").is_err());
    }

    #[test]
    fn of_spki_is_sha256() {
        // SHA-256 of the empty string.
        assert_eq!(
            Pin::of_spki(b"").to_string(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn garbage_is_not_a_certificate() {
        let der = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        assert!(matches!(
            Pin::of_certificate(&der),
            Err(PinError::Certificate)
        ));
    }
}
