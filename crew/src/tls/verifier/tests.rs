//! One test per rejection path of [`PinnedVerifier`], called directly (the real handshakes are in
//! `tls/tests.rs`). The verifier implements both rustls traits, whose methods share names, so every
//! call names its trait; the signature tests go through both traits and every kind of trust, since
//! none of them may change how a signature is judged.

use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::Signer;
// Test-only: rustls offers no public constructor for a DigitallySignedStruct, so the tests decode
// one from its wire form through rustls' (unstable, doc-hidden) codec.
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

/// A member's verifier, trusting `lead`.
fn trusting_lead(lead: &Identity) -> PinnedVerifier {
    PinnedVerifier::trusting_lead(lead.pin(), &crypto_provider())
}

/// The lead's verifier, trusting `pins` under `admission`.
fn trusting_members(pins: &PinSet, admission: ClientAdmission) -> PinnedVerifier {
    PinnedVerifier::trusting_members(pins.check(), admission, &crypto_provider())
}

/// Every kind of verifier, each trusting `peer`: the signature checks must not depend on which.
fn every_verifier(peer: &Identity) -> [PinnedVerifier; 3] {
    let pins = PinSet::new();
    pins.insert(peer.pin());
    [
        trusting_lead(peer),
        trusting_members(&pins, ClientAdmission::PinnedOnly),
        trusting_members(&pins, ClientAdmission::JoinAllowed),
    ]
}

/// `verifier` checking a server's certificate, as a member's rustls does.
fn check_server(
    verifier: &PinnedVerifier,
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> Result<ServerCertVerified, Error> {
    let name = ServerName::try_from(SERVER_NAME).unwrap();
    ServerCertVerifier::verify_server_cert(
        verifier,
        end_entity,
        intermediates,
        &name,
        &[],
        UnixTime::now(),
    )
}

/// `verifier` checking a client's certificate, as the lead's rustls does.
fn check_client(
    verifier: &PinnedVerifier,
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> Result<ClientCertVerified, Error> {
    ClientCertVerifier::verify_client_cert(verifier, end_entity, intermediates, UnixTime::now())
}

/// The outcome of both traits' answers, which must agree (rustls errors carrying a rejection do not
/// compare equal, so they are compared by their debug form).
fn agreed(
    as_server: Result<HandshakeSignatureValid, Error>,
    as_client: Result<HandshakeSignatureValid, Error>,
) -> Result<HandshakeSignatureValid, Error> {
    assert_eq!(
        format!("{:?}", as_server.as_ref().err()),
        format!("{:?}", as_client.as_ref().err()),
        "the two traits judged a signature differently"
    );
    as_server
}

/// A TLS 1.2 handshake signature, through both traits.
fn tls12(
    verifier: &PinnedVerifier,
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, Error> {
    agreed(
        ServerCertVerifier::verify_tls12_signature(verifier, MESSAGE, cert, dss),
        ClientCertVerifier::verify_tls12_signature(verifier, MESSAGE, cert, dss),
    )
}

/// A TLS 1.3 handshake signature over [`MESSAGE`], through both traits.
fn tls13(
    verifier: &PinnedVerifier,
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, Error> {
    agreed(
        ServerCertVerifier::verify_tls13_signature(verifier, MESSAGE, cert, dss),
        ClientCertVerifier::verify_tls13_signature(verifier, MESSAGE, cert, dss),
    )
}

fn rejection<T: fmt::Debug>(result: Result<T, Error>) -> Rejection {
    let error = result.unwrap_err();
    Rejection::of(&error)
        .unwrap_or_else(|| panic!("not a crew rejection: {error:?}"))
        .clone()
}

// The member's side: certificates.

#[test]
fn member_side_accepts_the_pinned_lead() {
    let lead = Identity::generate().unwrap();
    check_server(&trusting_lead(&lead), lead.certificate(), &[]).unwrap();
}

#[test]
fn member_side_rejects_an_unpinned_lead() {
    let lead = Identity::generate().unwrap();
    let impostor = Identity::generate().unwrap();
    let got = rejection(check_server(
        &trusting_lead(&lead),
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
fn member_side_rejects_a_chain() {
    let lead = Identity::generate().unwrap();
    let intermediate = Identity::generate().unwrap();
    let got = rejection(check_server(
        &trusting_lead(&lead),
        lead.certificate(),
        std::slice::from_ref(intermediate.certificate()),
    ));
    assert_eq!(got, Rejection::ChainPresent);
}

#[test]
fn member_side_rejects_a_malformed_certificate() {
    let lead = Identity::generate().unwrap();
    let garbage = CertificateDer::from(vec![0x30, 0x00]);
    let got = rejection(check_server(&trusting_lead(&lead), &garbage, &[]));
    assert_eq!(got, Rejection::MalformedCertificate);
}

// The lead's side: certificates and admission.

#[test]
fn lead_side_requires_a_client_certificate() {
    for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
        let verifier = trusting_members(&PinSet::new(), admission);
        assert!(verifier.offer_client_auth(), "{admission:?}");
        assert!(verifier.client_auth_mandatory(), "{admission:?}");
        assert!(
            ClientCertVerifier::root_hint_subjects(&verifier).is_empty(),
            "{admission:?}"
        );
    }
}

#[test]
fn lead_side_rejects_an_unpinned_member_and_follows_the_pin_set() {
    let member = Identity::generate().unwrap();
    let pins = PinSet::new();
    let verifier = trusting_members(&pins, ClientAdmission::PinnedOnly);
    let got = rejection(check_client(&verifier, member.certificate(), &[]));
    assert_eq!(got, Rejection::Unpinned { pin: member.pin() });

    // Pins added and removed at run time apply to the next handshake.
    pins.insert(member.pin());
    check_client(&verifier, member.certificate(), &[]).unwrap();
    pins.remove(&member.pin());
    let got = rejection(check_client(&verifier, member.certificate(), &[]));
    assert_eq!(got, Rejection::Unpinned { pin: member.pin() });
}

#[test]
fn lead_side_rejects_a_chain() {
    let member = Identity::generate().unwrap();
    let intermediate = Identity::generate().unwrap();
    let pins = PinSet::new();
    pins.insert(member.pin());
    pins.insert(intermediate.pin());
    for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
        let verifier = trusting_members(&pins, admission);
        let got = rejection(check_client(
            &verifier,
            member.certificate(),
            std::slice::from_ref(intermediate.certificate()),
        ));
        assert_eq!(got, Rejection::ChainPresent, "{admission:?}");
    }
}

#[test]
fn lead_side_rejects_a_malformed_certificate() {
    let member = Identity::generate().unwrap();
    let pins = PinSet::new();
    pins.insert(member.pin());
    let garbage = CertificateDer::from(vec![0x30, 0x00]);
    for admission in [ClientAdmission::PinnedOnly, ClientAdmission::JoinAllowed] {
        let verifier = trusting_members(&pins, admission);
        let got = rejection(check_client(&verifier, &garbage, &[]));
        assert_eq!(got, Rejection::MalformedCertificate, "{admission:?}");
    }
}

#[test]
fn join_mode_admits_an_unpinned_but_well_formed_member() {
    let newcomer = Identity::generate().unwrap();
    let verifier = trusting_members(&PinSet::new(), ClientAdmission::JoinAllowed);
    check_client(&verifier, newcomer.certificate(), &[]).unwrap();
}

// Either trust means the same through both traits, except that joining is for clients only.

#[test]
fn join_mode_never_admits_an_unpinned_server() {
    let member = Identity::generate().unwrap();
    let stranger = Identity::generate().unwrap();
    let pins = PinSet::new();
    pins.insert(member.pin());
    let verifier = trusting_members(&pins, ClientAdmission::JoinAllowed);
    let got = rejection(check_server(&verifier, stranger.certificate(), &[]));
    assert_eq!(
        got,
        Rejection::Unpinned {
            pin: stranger.pin()
        }
    );
    check_server(&verifier, member.certificate(), &[]).unwrap();
}

#[test]
fn a_lead_pin_is_the_only_one_trusted_as_a_client_too() {
    let lead = Identity::generate().unwrap();
    let impostor = Identity::generate().unwrap();
    let verifier = trusting_lead(&lead);
    check_client(&verifier, lead.certificate(), &[]).unwrap();
    let got = rejection(check_client(&verifier, impostor.certificate(), &[]));
    assert_eq!(
        got,
        Rejection::Unpinned {
            pin: impostor.pin()
        }
    );
}

// Handshake signatures, through both traits and every kind of trust.

#[test]
fn tls12_signatures_are_refused() {
    let peer = Identity::generate().unwrap();
    // A signature that is valid — refused all the same, for being TLS 1.2.
    let good = signed_by(&peer, MESSAGE);
    for verifier in every_verifier(&peer) {
        let got = rejection(tls12(&verifier, peer.certificate(), &good));
        assert_eq!(got, Rejection::Tls12, "{verifier:?}");
    }
}

#[test]
fn a_bad_signature_is_rejected() {
    let peer = Identity::generate().unwrap();
    let impostor = Identity::generate().unwrap();
    // The impostor holds a copy of the peer's certificate but signs with its own key.
    let forged = signed_by(&impostor, MESSAGE);
    // A signature by the right key over another transcript.
    let other_message = signed_by(&peer, b"another transcript");
    let good = signed_by(&peer, MESSAGE);
    for verifier in every_verifier(&peer) {
        let error = tls13(&verifier, peer.certificate(), &forged).unwrap_err();
        assert_eq!(
            error,
            Error::InvalidCertificate(CertificateError::BadSignature),
            "{verifier:?}"
        );
        let error = tls13(&verifier, peer.certificate(), &other_message).unwrap_err();
        assert_eq!(
            error,
            Error::InvalidCertificate(CertificateError::BadSignature),
            "{verifier:?}"
        );
        tls13(&verifier, peer.certificate(), &good).unwrap();
    }
}

#[test]
fn other_signature_schemes_are_rejected() {
    let peer = Identity::generate().unwrap();
    let good = signed_by(&peer, MESSAGE);
    // rsa_pss_rsae_sha256 (0x0804) label on an ed25519 signature.
    let relabelled = dss(0x0804, good.signature());
    for verifier in every_verifier(&peer) {
        assert_eq!(
            ServerCertVerifier::supported_verify_schemes(&verifier),
            [SignatureScheme::ED25519]
        );
        assert_eq!(
            ClientCertVerifier::supported_verify_schemes(&verifier),
            [SignatureScheme::ED25519]
        );
        let got = rejection(tls13(&verifier, peer.certificate(), &relabelled));
        assert_eq!(
            got,
            Rejection::SchemeNotAllowed(SignatureScheme::RSA_PSS_SHA256),
            "{verifier:?}"
        );
    }
}
