//! The pinned certificate verifier of the crew link: one type, [`PinnedVerifier`], for both sides —
//! a member checking the lead (rustls' [`ServerCertVerifier`]) and the lead checking members
//! ([`ClientCertVerifier`]).
//!
//! It is one type so that what makes a peer trusted is written once: the two sides differ only in
//! whom they trust (the one lead pin, or the lead's shared [`PinCheck`]), not in how a certificate
//! or a handshake signature is judged. Two copies of those checks could drift apart, and a rule
//! loosened on one side would go unnoticed on the other.
//!
//! The verifier accepts a peer only if
//! - it presents exactly one certificate — any intermediate is refused ([`Rejection::ChainPresent`]);
//! - that certificate parses ([`Rejection::MalformedCertificate`]) and the SHA-256 of its
//!   SubjectPublicKeyInfo is trusted ([`Rejection::Unpinned`]) — the one exception is the lead's
//!   join mode, see [`ClientAdmission::JoinAllowed`], which only ever applies to a client;
//! - the handshake is TLS 1.3 ([`Rejection::Tls12`]) and signed with ed25519
//!   ([`Rejection::SchemeNotAllowed`]), and the handshake signature verifies against the
//!   certificate's key through the crypto provider — this is what makes a certificate useless to
//!   anyone who merely has a copy of it.
//!
//! Names, dates, key usages and the certificate's self-signature are deliberately not checked: the
//! pin names the key, and the handshake signature proves its possession. The design follows
//! iroh's `tls/verifier.rs` (one struct implementing both rustls traits).

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, OtherError};
use rustls::{Error, SignatureScheme};

use crate::pin::Pin;
use crate::tls::PinCheck;

/// The handshake signature schemes offered and accepted, in order of preference: ed25519 only, as
/// crew keys are ed25519.
const SCHEMES: &[SignatureScheme] = &[SignatureScheme::ED25519];

/// Why the verifier refused a peer. rustls carries it inside its error (see [`Rejection::of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The peer presented intermediates: crew certificates are self-signed and stand alone.
    #[error("the peer presented a certificate chain")]
    ChainPresent,
    /// The peer's key is not pinned.
    #[error("the peer's pin {pin} is not pinned")]
    Unpinned {
        /// The peer's pin, for logs and for `collie crew status`.
        pin: Pin,
    },
    /// The peer's certificate is not a well-formed X.509 certificate.
    #[error("the peer's certificate cannot be parsed")]
    MalformedCertificate,
    /// The peer tried to authenticate a TLS 1.2 handshake.
    #[error("TLS 1.2 is refused; the crew speaks TLS 1.3 only")]
    Tls12,
    /// The handshake was signed with a scheme other than ed25519.
    #[error("signature scheme {0:?} is refused; crew keys are ed25519")]
    SchemeNotAllowed(SignatureScheme),
}

impl Rejection {
    /// The rejection inside a rustls error produced by [`PinnedVerifier`], if it is one.
    pub fn of(error: &Error) -> Option<&Rejection> {
        let other = match error {
            Error::InvalidCertificate(CertificateError::Other(other)) | Error::Other(other) => {
                other
            }
            _ => return None,
        };
        other.0.downcast_ref::<Rejection>()
    }

    fn into_certificate_error(self) -> Error {
        Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(self))))
    }

    fn into_error(self) -> Error {
        Error::Other(OtherError(Arc::new(self)))
    }
}

/// Who the lead lets finish a handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAdmission {
    /// Pinned clients only; an unpinned one fails the handshake.
    PinnedOnly,
    /// Pinned clients, and unpinned ones with a well-formed ed25519 certificate and a valid
    /// handshake signature — for the join request only. The caller must classify each connection
    /// with [`crate::tls::peer_status`] and close an unpinned one that does not join.
    JoinAllowed,
}

/// Whom a [`PinnedVerifier`] trusts.
enum Trust {
    /// Exactly this pin: a member trusts only its lead.
    Lead(Pin),
    /// The pins the shared check accepts at handshake time: the lead trusts its members, and
    /// (as a TLS server) unpinned clients too under [`ClientAdmission::JoinAllowed`].
    Members {
        pins: PinCheck,
        admission: ClientAdmission,
    },
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Lead(pin) => f.debug_tuple("Lead").field(pin).finish(),
            // The check is a closure; only the admission says something.
            Self::Members { admission, .. } => f
                .debug_struct("Members")
                .field("admission", admission)
                .finish_non_exhaustive(),
        }
    }
}

/// Which side of the handshake the peer being verified is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerRole {
    /// The peer is the TLS server: this side is a member dialling the lead.
    Server,
    /// The peer is the TLS client: this side is the lead accepting a member.
    Client,
}

/// The crew's certificate verifier for both TLS sides: accepts a peer presenting exactly one
/// certificate whose pin it trusts, and verifies every TLS 1.3 ed25519 handshake signature.
///
/// Build it with [`PinnedVerifier::trusting_lead`] on a member (it then serves as rustls'
/// [`ServerCertVerifier`]) and with [`PinnedVerifier::trusting_members`] on the lead (as its
/// [`ClientCertVerifier`]). Either one implements both traits with the same rules; the join
/// exception of [`ClientAdmission::JoinAllowed`] applies only when verifying a client, so no
/// verifier ever accepts an unpinned server.
#[derive(Debug)]
pub struct PinnedVerifier {
    trust: Trust,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedVerifier {
    /// The verifier of a member: trusts only `lead`, checking signatures with `provider`'s
    /// algorithms.
    pub fn trusting_lead(lead: Pin, provider: &CryptoProvider) -> Self {
        Self {
            trust: Trust::Lead(lead),
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// The verifier of the lead: consults `pins` at every handshake, admits clients per
    /// `admission`, and checks signatures with `provider`'s algorithms.
    pub fn trusting_members(
        pins: PinCheck,
        admission: ClientAdmission,
        provider: &CryptoProvider,
    ) -> Self {
        Self {
            trust: Trust::Members { pins, admission },
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// Whether a peer whose certificate has `pin` may finish the handshake.
    fn admits(&self, pin: &Pin, role: PeerRole) -> bool {
        match &self.trust {
            Trust::Lead(lead) => pin == lead,
            Trust::Members { pins, admission } => match (role, admission) {
                (PeerRole::Client, ClientAdmission::JoinAllowed) => true,
                (PeerRole::Client, ClientAdmission::PinnedOnly) | (PeerRole::Server, _) => {
                    pins(pin)
                }
            },
        }
    }

    /// The certificate check of both sides: exactly one certificate, well-formed, its pin admitted.
    fn verify_certificate(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        role: PeerRole,
    ) -> Result<(), Error> {
        if !intermediates.is_empty() {
            return Err(Rejection::ChainPresent.into_certificate_error());
        }
        let pin = Pin::of_certificate(end_entity)
            .map_err(|_| Rejection::MalformedCertificate.into_certificate_error())?;
        if !self.admits(&pin, role) {
            return Err(Rejection::Unpinned { pin }.into_certificate_error());
        }
        Ok(())
    }

    /// Verifies a TLS 1.3 handshake signature: ed25519 only, through the provider's algorithms.
    fn verify_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        if !SCHEMES.contains(&dss.scheme) {
            return Err(Rejection::SchemeNotAllowed(dss.scheme).into_error());
        }
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }
}

/// The answer to any TLS 1.2 handshake signature, valid or not: the crew speaks TLS 1.3 only (the
/// configurations offer nothing else; this refuses it again should one ever be negotiated).
fn refuse_tls12() -> Result<HandshakeSignatureValid, Error> {
    Err(Rejection::Tls12.into_error())
}

// The two trait implementations below only route each call to the shared checks above.

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.verify_certificate(end_entity, intermediates, PeerRole::Server)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        refuse_tls12()
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verify_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        SCHEMES.to_vec()
    }
}

impl ClientCertVerifier for PinnedVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.verify_certificate(end_entity, intermediates, PeerRole::Client)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        refuse_tls12()
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verify_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        SCHEMES.to_vec()
    }
}

#[cfg(test)]
mod tests;
