//! The pinned certificate verifiers of the crew link: [`PinnedServerVerifier`] (a member checking
//! the lead) and [`PinnedClientVerifier`] (the lead checking members).
//!
//! Each accepts a peer only if
//! - it presents exactly one certificate — any intermediate is refused ([`Rejection::ChainPresent`]);
//! - that certificate parses and the SHA-256 of its SubjectPublicKeyInfo is pinned
//!   ([`Rejection::Unpinned`]) — the one exception is the lead's join mode, see
//!   [`ClientAdmission::JoinAllowed`];
//! - the handshake is TLS 1.3 ([`Rejection::Tls12`]) and signed with ed25519
//!   ([`Rejection::SchemeNotAllowed`]), and the handshake signature verifies against the
//!   certificate's key through the crypto provider — this is what makes a certificate useless to
//!   anyone who merely has a copy of it.
//!
//! Names, dates, key usages and the certificate's self-signature are deliberately not checked: the
//! pin names the key, and the handshake signature proves its possession. The design follows
//! iroh's `tls/verifier.rs`.

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

/// The only handshake signature scheme offered and accepted: crew keys are ed25519.
const SCHEME: SignatureScheme = SignatureScheme::ED25519;

/// Why a verifier refused a peer. rustls carries it inside its error (see [`Rejection::of`]).
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
    /// The rejection inside a rustls error produced by these verifiers, if it is one.
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

/// The checks common to both sides: one certificate, well-formed. Returns its pin.
fn single_certificate_pin(
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> Result<Pin, Rejection> {
    if !intermediates.is_empty() {
        return Err(Rejection::ChainPresent);
    }
    Pin::of_certificate(end_entity).map_err(|_| Rejection::MalformedCertificate)
}

/// Verifies a TLS 1.3 handshake signature: ed25519 only, through the provider's algorithms.
fn verify_signature(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, Error> {
    if dss.scheme != SCHEME {
        return Err(Rejection::SchemeNotAllowed(dss.scheme).into_error());
    }
    rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
}

/// Used by a member (the TLS client): accepts exactly the lead's pin.
pub struct PinnedServerVerifier {
    lead: Pin,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedServerVerifier {
    /// A verifier accepting only `lead`, checking signatures with `provider`'s algorithms.
    pub fn new(lead: Pin, provider: &CryptoProvider) -> Self {
        Self {
            lead,
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl fmt::Debug for PinnedServerVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedServerVerifier")
            .field("lead", &self.lead)
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for PinnedServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let pin = single_certificate_pin(end_entity, intermediates)
            .map_err(Rejection::into_certificate_error)?;
        if pin != self.lead {
            return Err(Rejection::Unpinned { pin }.into_certificate_error());
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        Err(Rejection::Tls12.into_error())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SCHEME]
    }
}

/// Used by the lead (the TLS server): requires a client certificate and accepts pins for which the
/// shared [`PinCheck`] answers true at handshake time (and unpinned ones in
/// [`ClientAdmission::JoinAllowed`]).
pub struct PinnedClientVerifier {
    pins: PinCheck,
    admission: ClientAdmission,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedClientVerifier {
    /// A verifier consulting `pins` at every handshake, admitting per `admission`, checking
    /// signatures with `provider`'s algorithms.
    pub fn new(pins: PinCheck, admission: ClientAdmission, provider: &CryptoProvider) -> Self {
        Self {
            pins,
            admission,
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl fmt::Debug for PinnedClientVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedClientVerifier")
            .field("admission", &self.admission)
            .finish_non_exhaustive()
    }
}

impl ClientCertVerifier for PinnedClientVerifier {
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
        let pin = single_certificate_pin(end_entity, intermediates)
            .map_err(Rejection::into_certificate_error)?;
        let admitted = match self.admission {
            ClientAdmission::PinnedOnly => (self.pins)(&pin),
            ClientAdmission::JoinAllowed => true,
        };
        if !admitted {
            return Err(Rejection::Unpinned { pin }.into_certificate_error());
        }
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        Err(Rejection::Tls12.into_error())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SCHEME]
    }
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::pkcs8::DecodePrivateKey;
    use ed25519_dalek::Signer;
    // Test-only: rustls offers no public constructor for a DigitallySignedStruct, so the tests
    // decode one from its wire form through rustls' (unstable, doc-hidden) codec.
    use rustls::internal::msgs::codec::{Codec, Reader};

    use super::*;
    use crate::identity::Identity;
    use crate::tls::{crypto_provider, PinSet, SERVER_NAME};

    const MESSAGE: &[u8] = b"TLS 1.3, server CertificateVerify\x00transcript hash";

    fn dss(scheme: u16, signature: &[u8]) -> DigitallySignedStruct {
        let mut wire = scheme.to_be_bytes().to_vec();
        wire.extend_from_slice(&u16::try_from(signature.len()).unwrap().to_be_bytes());
        wire.extend_from_slice(signature);
        DigitallySignedStruct::read(&mut Reader::init(&wire)).unwrap()
    }

    /// An ed25519 handshake signature over `message` by `identity`'s key.
    fn signed_by(identity: &Identity, message: &[u8]) -> DigitallySignedStruct {
        let key = identity.private_key();
        let signing = ed25519_dalek::SigningKey::from_pkcs8_der(key.secret_der()).unwrap();
        dss(0x0807, &signing.sign(message).to_bytes())
    }

    fn server_verifier(lead: &Identity) -> PinnedServerVerifier {
        PinnedServerVerifier::new(lead.pin(), &crypto_provider())
    }

    fn client_verifier(pins: &PinSet, admission: ClientAdmission) -> PinnedClientVerifier {
        PinnedClientVerifier::new(pins.check(), admission, &crypto_provider())
    }

    fn check_server(
        verifier: &PinnedServerVerifier,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
    ) -> Result<ServerCertVerified, Error> {
        let name = ServerName::try_from(SERVER_NAME).unwrap();
        verifier.verify_server_cert(end_entity, intermediates, &name, &[], UnixTime::now())
    }

    fn rejection<T: fmt::Debug>(result: Result<T, Error>) -> Rejection {
        let error = result.unwrap_err();
        Rejection::of(&error)
            .unwrap_or_else(|| panic!("not a crew rejection: {error:?}"))
            .clone()
    }

    #[test]
    fn server_verifier_accepts_the_pinned_lead() {
        let lead = Identity::generate().unwrap();
        check_server(&server_verifier(&lead), lead.certificate(), &[]).unwrap();
    }

    #[test]
    fn server_verifier_rejects_an_unpinned_peer() {
        let lead = Identity::generate().unwrap();
        let impostor = Identity::generate().unwrap();
        let got = rejection(check_server(
            &server_verifier(&lead),
            impostor.certificate(),
            &[],
        ));
        assert_eq!(
            got,
            Rejection::Unpinned {
                pin: impostor.pin()
            }
        );
    }

    #[test]
    fn server_verifier_rejects_a_chain() {
        let lead = Identity::generate().unwrap();
        let intermediate = Identity::generate().unwrap();
        let got = rejection(check_server(
            &server_verifier(&lead),
            lead.certificate(),
            std::slice::from_ref(intermediate.certificate()),
        ));
        assert_eq!(got, Rejection::ChainPresent);
    }

    #[test]
    fn server_verifier_rejects_a_malformed_certificate() {
        let lead = Identity::generate().unwrap();
        let garbage = CertificateDer::from(vec![0x30, 0x00]);
        let got = rejection(check_server(&server_verifier(&lead), &garbage, &[]));
        assert_eq!(got, Rejection::MalformedCertificate);
    }

    #[test]
    fn server_verifier_refuses_tls12_signatures() {
        let lead = Identity::generate().unwrap();
        let verifier = server_verifier(&lead);
        // A signature that is valid — refused all the same, for being TLS 1.2.
        let good = signed_by(&lead, MESSAGE);
        let got = rejection(verifier.verify_tls12_signature(MESSAGE, lead.certificate(), &good));
        assert_eq!(got, Rejection::Tls12);
    }

    #[test]
    fn server_verifier_rejects_a_bad_signature() {
        let lead = Identity::generate().unwrap();
        let impostor = Identity::generate().unwrap();
        let verifier = server_verifier(&lead);
        // The impostor holds a copy of the lead's certificate but signs with its own key.
        let forged = signed_by(&impostor, MESSAGE);
        let error = verifier
            .verify_tls13_signature(MESSAGE, lead.certificate(), &forged)
            .unwrap_err();
        assert_eq!(
            error,
            Error::InvalidCertificate(CertificateError::BadSignature)
        );
        // A signature over another message fails too; the genuine one passes.
        let other_message = signed_by(&lead, b"another transcript");
        assert!(verifier
            .verify_tls13_signature(MESSAGE, lead.certificate(), &other_message)
            .is_err());
        let good = signed_by(&lead, MESSAGE);
        verifier
            .verify_tls13_signature(MESSAGE, lead.certificate(), &good)
            .unwrap();
    }

    #[test]
    fn server_verifier_rejects_other_signature_schemes() {
        let lead = Identity::generate().unwrap();
        let verifier = server_verifier(&lead);
        assert_eq!(
            verifier.supported_verify_schemes(),
            [SignatureScheme::ED25519]
        );
        let good = signed_by(&lead, MESSAGE);
        // rsa_pss_rsae_sha256 (0x0804) label on an ed25519 signature.
        let relabelled = dss(0x0804, good.signature());
        let got =
            rejection(verifier.verify_tls13_signature(MESSAGE, lead.certificate(), &relabelled));
        assert_eq!(
            got,
            Rejection::SchemeNotAllowed(SignatureScheme::RSA_PSS_SHA256)
        );
    }

    #[test]
    fn client_verifier_requires_a_certificate() {
        let verifier = client_verifier(&PinSet::new(), ClientAdmission::PinnedOnly);
        assert!(verifier.offer_client_auth());
        assert!(verifier.client_auth_mandatory());
        assert!(verifier.root_hint_subjects().is_empty());
    }

    #[test]
    fn client_verifier_rejects_an_unpinned_peer_and_follows_the_pin_set() {
        let member = Identity::generate().unwrap();
        let pins = PinSet::new();
        let verifier = client_verifier(&pins, ClientAdmission::PinnedOnly);
        let got =
            rejection(verifier.verify_client_cert(member.certificate(), &[], UnixTime::now()));
        assert_eq!(got, Rejection::Unpinned { pin: member.pin() });

        // Pins added and removed at run time apply to the next handshake.
        pins.insert(member.pin());
        verifier
            .verify_client_cert(member.certificate(), &[], UnixTime::now())
            .unwrap();
        pins.remove(&member.pin());
        assert!(verifier
            .verify_client_cert(member.certificate(), &[], UnixTime::now())
            .is_err());
    }

    #[test]
    fn client_verifier_rejects_a_chain() {
        let member = Identity::generate().unwrap();
        let intermediate = Identity::generate().unwrap();
        let pins = PinSet::new();
        pins.insert(member.pin());
        pins.insert(intermediate.pin());
        for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
            let verifier = client_verifier(&pins, admission);
            let got = rejection(verifier.verify_client_cert(
                member.certificate(),
                std::slice::from_ref(intermediate.certificate()),
                UnixTime::now(),
            ));
            assert_eq!(got, Rejection::ChainPresent, "{admission:?}");
        }
    }

    #[test]
    fn client_verifier_refuses_tls12_signatures() {
        let member = Identity::generate().unwrap();
        let pins = PinSet::new();
        pins.insert(member.pin());
        let verifier = client_verifier(&pins, ClientAdmission::PinnedOnly);
        let good = signed_by(&member, MESSAGE);
        let got = rejection(verifier.verify_tls12_signature(MESSAGE, member.certificate(), &good));
        assert_eq!(got, Rejection::Tls12);
    }

    #[test]
    fn client_verifier_rejects_a_bad_signature() {
        let member = Identity::generate().unwrap();
        let impostor = Identity::generate().unwrap();
        let pins = PinSet::new();
        pins.insert(member.pin());
        for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
            let verifier = client_verifier(&pins, admission);
            let forged = signed_by(&impostor, MESSAGE);
            let error = verifier
                .verify_tls13_signature(MESSAGE, member.certificate(), &forged)
                .unwrap_err();
            assert_eq!(
                error,
                Error::InvalidCertificate(CertificateError::BadSignature),
                "{admission:?}"
            );
            let good = signed_by(&member, MESSAGE);
            verifier
                .verify_tls13_signature(MESSAGE, member.certificate(), &good)
                .unwrap();
        }
    }

    #[test]
    fn join_mode_admits_an_unpinned_but_well_formed_peer() {
        let newcomer = Identity::generate().unwrap();
        let verifier = client_verifier(&PinSet::new(), ClientAdmission::JoinAllowed);
        verifier
            .verify_client_cert(newcomer.certificate(), &[], UnixTime::now())
            .unwrap();
        let garbage = CertificateDer::from(vec![0x30, 0x00]);
        let got = rejection(verifier.verify_client_cert(&garbage, &[], UnixTime::now()));
        assert_eq!(got, Rejection::MalformedCertificate);
    }
}
