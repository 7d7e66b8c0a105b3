//! The crew key as a walky signer, and the public key inside a crew certificate.
//!
//! A machine signs walky messages with the same ed25519 key its crew certificate carries, so the
//! pin peers already trust for TLS is also what vouches for its messages — no second key to
//! distribute or pin. The domain prefixes keep the two uses apart (see the module docs of
//! [`crate::walky`]). Only the walky signing actor should hold a [`Signer`].

use std::fmt;

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use rustls::pki_types::CertificateDer;
use rustls::server::ParsedCertificate;

use super::{Message, Signed, WalkyError};
use crate::identity::Identity;
use crate::pin::Pin;

/// Signs walky messages (and, on the lead, attestations) with a machine's crew key. `Debug` shows
/// the pin only.
pub struct Signer {
    key: SigningKey,
    pin: Pin,
}

impl Signer {
    /// The signer of `identity`'s key.
    pub fn from_identity(identity: &Identity) -> Result<Self, WalkyError> {
        let key = SigningKey::from_pkcs8_der(identity.private_key().secret_der())
            .map_err(|e| WalkyError::BadKey(e.to_string()))?;
        Ok(Self {
            key,
            pin: identity.pin(),
        })
    }

    /// Signs `message` over its [`Message::canonical`] bytes. The message is not checked here;
    /// build it with [`Message::new`] (every verifier checks it again).
    pub fn sign(&self, message: Message) -> Signed {
        let signature = self.sign_bytes(&message.canonical());
        Signed { message, signature }
    }

    /// The public half, as peers find it in this machine's certificate.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// This machine's pin (that of its certificate).
    pub fn pin(&self) -> Pin {
        self.pin
    }

    /// A raw signature; callers put their own domain prefix in `bytes`.
    pub(crate) fn sign_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        self.key.sign(bytes).to_bytes().to_vec()
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("pin", &self.pin)
            .field("key", &"(secret)")
            .finish()
    }
}

/// The pin and the ed25519 public key of a DER certificate.
///
/// The certificate is parsed by webpki and the key decoded from its SubjectPublicKeyInfo by
/// ed25519-dalek (no hand-written DER); anything but an ed25519 key is refused. As everywhere in
/// the crew, the certificate's dates, names and self-signature mean nothing: the pin does.
pub fn public_key_of(cert_der: &[u8]) -> Result<(Pin, VerifyingKey), WalkyError> {
    let der = CertificateDer::from(cert_der);
    let parsed = ParsedCertificate::try_from(&der).map_err(|_| WalkyError::BadCertificate)?;
    let spki = parsed.subject_public_key_info();
    let key =
        VerifyingKey::from_public_key_der(spki.as_ref()).map_err(|_| WalkyError::BadCertificate)?;
    Ok((Pin::of_spki(spki.as_ref()), key))
}
