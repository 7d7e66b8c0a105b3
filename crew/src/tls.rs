//! Pinned mutual TLS for the crew link (SPEC §8): the constants both sides must agree on, the
//! shared pin set, and what a caller learns about its peer after a handshake.
//!
//! Trust is by pin only — no certificate authorities, names or dates. Both sides present their own
//! self-signed [`Identity`](crate::identity::Identity) certificate; one verifier type serving both
//! sides, [`PinnedVerifier`], accepts a peer only if the SHA-256 of its SubjectPublicKeyInfo is
//! pinned, and still checks every handshake signature so that holding a copy of a certificate is
//! worth nothing. [`config`] builds the rustls and quinn configurations around it, with one crypto
//! provider (ring) chosen here rather than a process-wide default.
//!
//! # Joining: admitting an unpinned client for one request
//!
//! A member joining the crew has no pin on the lead yet. The lead's verifier therefore has two
//! modes ([`ClientAdmission`]): `PinnedOnly` refuses unpinned clients during the handshake;
//! `JoinAllowed` lets an unpinned client finish the handshake (its handshake signature is verified
//! all the same, so it proves it holds the key it presents). The verifier is shared by every
//! handshake of the endpoint and has no handle on the connection, so it cannot record a per-
//! connection verdict; instead, after the handshake the caller asks [`peer_status`], which
//! re-evaluates the same pin check against the peer's certificate: [`PeerStatus::Unpinned`] may send
//! the join request (with a valid one-time secret) and nothing else, and is closed otherwise.
//! Re-evaluating also catches a pin removed between the handshake and the first request. The lead
//! can switch modes at run time with `quinn::Endpoint::set_server_config`, e.g. only while an
//! invite is outstanding.
//!
//! Session resumption is off on both sides: a resumed TLS 1.3 session skips certificate
//! verification, which would let a removed member back in on an old ticket.

pub mod config;
#[cfg(test)]
mod tests;
pub mod verifier;

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;

pub use config::{
    client_config, lead_transport_config, quic_client_config, quic_server_config,
    rustls_client_config, rustls_server_config, server_config, transport_config, IDLE_TIMEOUT,
    KEEP_ALIVE_INTERVAL, LEAD_MAX_STREAMS, MAX_STREAMS,
};
pub use verifier::{ClientAdmission, PinnedVerifier, Rejection};

use crate::pin::{Pin, PinError};

/// The one application protocol both sides offer and accept.
pub const ALPN: &[u8] = b"collie-crew/1";

pub use crate::identity::SERVER_NAME;

/// Decides whether a pin is trusted. Evaluated at every handshake, so a pin added or removed at run
/// time applies to the next connection.
pub type PinCheck = Arc<dyn Fn(&Pin) -> bool + Send + Sync>;

/// Why a TLS configuration could not be built or a peer could not be identified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// rustls refused the configuration (e.g. the key does not match the certificate).
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The rustls configuration cannot carry QUIC (no TLS 1.3 initial cipher suite).
    #[error("QUIC TLS configuration: {0}")]
    Quic(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    /// The connection has no peer certificate (handshake not complete, or not rustls).
    #[error("the peer presented no certificate")]
    NoPeerCertificate,
    /// The peer presented more than one certificate.
    #[error("the peer presented a certificate chain")]
    ChainPresent,
    /// The peer's certificate cannot be parsed.
    #[error("the peer's certificate: {0}")]
    PeerCertificate(#[from] PinError),
}

/// The crypto provider of every crew TLS configuration: ring, explicitly, TLS 1.3 suites only.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider
        .cipher_suites
        .retain(|suite| suite.version() == &rustls::version::TLS13);
    Arc::new(provider)
}

/// A shared, mutable set of pins: the simplest [`PinCheck`]. Clones share the set.
#[derive(Debug, Clone, Default)]
pub struct PinSet {
    pins: Arc<RwLock<HashSet<Pin>>>,
}

impl PinSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pins `pin`; returns whether it was new.
    pub fn insert(&self, pin: Pin) -> bool {
        self.pins.write().insert(pin)
    }

    /// Unpins `pin`; returns whether it was pinned.
    pub fn remove(&self, pin: &Pin) -> bool {
        self.pins.write().remove(pin)
    }

    /// Whether `pin` is pinned.
    pub fn contains(&self, pin: &Pin) -> bool {
        self.pins.read().contains(pin)
    }

    /// A [`PinCheck`] reading this set (and its later changes).
    pub fn check(&self) -> PinCheck {
        let set = self.clone();
        Arc::new(move |pin| set.contains(pin))
    }
}

/// What the server knows of a client after the handshake (see the module docs on joining).
///
/// Deliberately exhaustive: code deciding what a peer may do should have to name both cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerStatus {
    /// The peer's pin is pinned: it may be served.
    Pinned(Pin),
    /// The peer is not pinned: only a join request with a valid one-time secret may be served,
    /// after which the connection must be closed or the pin added.
    Unpinned(Pin),
}

impl PeerStatus {
    /// The peer's pin, pinned or not.
    pub fn pin(&self) -> Pin {
        match self {
            Self::Pinned(pin) | Self::Unpinned(pin) => *pin,
        }
    }
}

/// The pin of the peer of an established connection.
pub fn peer_pin(connection: &quinn::Connection) -> Result<Pin, TlsError> {
    let identity = connection
        .peer_identity()
        .ok_or(TlsError::NoPeerCertificate)?;
    let certs = identity
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| TlsError::NoPeerCertificate)?;
    match certs.as_slice() {
        [only] => Ok(Pin::of_certificate(only)?),
        [] => Err(TlsError::NoPeerCertificate),
        _ => Err(TlsError::ChainPresent),
    }
}

/// Whether the peer of an established connection is pinned now, by `check`.
pub fn peer_status(
    connection: &quinn::Connection,
    check: &PinCheck,
) -> Result<PeerStatus, TlsError> {
    let pin = peer_pin(connection)?;
    Ok(if check(&pin) {
        PeerStatus::Pinned(pin)
    } else {
        PeerStatus::Unpinned(pin)
    })
}
