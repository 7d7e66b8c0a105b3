//! A throwaway certificate authority for the tests that serve HTTPS on loopback (the scripted
//! durable agent, the push service, the reference agent): a fresh CA and one leaf it signed, made
//! with rcgen for each test, so the bridge's real TLS client is exercised against a certificate it
//! must be told to trust (a `ca_file`) — never a verifier turned off.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and a leaf certificate for `names`.
pub struct TestCa {
    /// The CA's certificate (PEM), for the client's `ca_file`.
    pub ca_pem: String,
    /// The leaf certificate (PEM).
    pub leaf_pem: String,
    /// The leaf's private key (PKCS#8 PEM).
    pub leaf_key_pem: String,
    leaf_der: CertificateDer<'static>,
    leaf_key_der: Vec<u8>,
}

impl TestCa {
    /// Makes a CA named `common_name` and a leaf for `names`; a name that parses as an IP address
    /// becomes an IP SAN, any other a DNS SAN.
    pub fn issue(common_name: &str, names: &[&str]) -> TestCa {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        let ca_cert = ca.self_signed(&ca_key).expect("CA cert");
        let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
        let mut leaf = rcgen::CertificateParams::new(Vec::<String>::new()).expect("leaf params");
        for name in names {
            leaf.subject_alt_names.push(match name.parse() {
                Ok(ip) => rcgen::SanType::IpAddress(ip),
                Err(_) => rcgen::SanType::DnsName((*name).try_into().expect("dns name")),
            });
        }
        let leaf_cert = leaf
            .signed_by(&leaf_key, &ca_cert, &ca_key)
            .expect("leaf cert");
        TestCa {
            ca_pem: ca_cert.pem(),
            leaf_pem: leaf_cert.pem(),
            leaf_key_pem: leaf_key.serialize_pem(),
            leaf_der: leaf_cert.der().clone(),
            leaf_key_der: leaf_key.serialize_der(),
        }
    }

    /// Writes the CA's certificate to `path` (what the client is told to trust).
    pub fn write_ca(&self, path: &Path) {
        std::fs::write(path, &self.ca_pem).expect("write CA");
    }

    /// A rustls server configuration presenting the leaf (no client authentication).
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![self.leaf_der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key_der.clone())),
            )
            .expect("server config");
        Arc::new(config)
    }
}
