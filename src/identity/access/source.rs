//! Where the team's keys are fetched from, and the one fetch: a GET of
//! `https://<team>.cloudflareaccess.com/cdn-cgi/access/certs` through the bridge's one HTTPS
//! client (`collie_actors::https`), trusting the public web roots compiled in (Cloudflare's
//! certificate chains to one), refusing any non-public address, following no redirect, with
//! time and size bounds.
//!
//! Only a `fault-injection` build (a test build, never shipped) can point the fetch elsewhere:
//! `AccessGate::with_keys_at`, or the variables `COLLIE_TEST_ACCESS_CERTS_URL` (an `https://` URL, e.g.
//! `https://127.0.0.1:<port>/certs`) and `COLLIE_TEST_ACCESS_CA` (the PEM file of the CA its
//! certificate comes from) read by `AccessGate::new`.

use std::time::Duration;

use collie_actors::https::{self, HttpsError, Limits, Target};

use super::keys::{parse_jwks, JwksError, Key, MAX_JWKS_BYTES};

/// The bounds of one fetch.
const LIMITS: Limits = Limits {
    connect: Duration::from_secs(10),
    total: Duration::from_secs(20),
    max_body: MAX_JWKS_BYTES,
};

/// Why a fetch of the keys failed (the keys already held stay).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessFetchError {
    /// The request got no answer (resolution, connection, TLS, time) or too long a one.
    #[error(transparent)]
    Https(#[from] HttpsError),
    /// An answer other than 200.
    #[error("key server answered {0}")]
    Status(u16),
    /// The answer held no usable key set.
    #[error(transparent)]
    Jwks(#[from] JwksError),
}

/// Where the keys come from.
#[derive(Debug, Clone)]
pub(crate) struct KeySource {
    target: Target,
    path: String,
    url: String,
}

impl KeySource {
    /// The team's own key document, over the public web roots, public addresses only. In a
    /// `fault-injection` build the test variables (see the module) take its place when set.
    pub(crate) fn for_team(team: &str) -> Result<KeySource, String> {
        #[cfg(feature = "fault-injection")]
        if let Ok(url) = std::env::var("COLLIE_TEST_ACCESS_CERTS_URL") {
            let ca = std::env::var_os("COLLIE_TEST_ACCESS_CA")
                .ok_or("COLLIE_TEST_ACCESS_CA is not set")?;
            return KeySource::at(&url, std::path::Path::new(&ca));
        }
        let host = format!("{team}.cloudflareaccess.com");
        Ok(KeySource {
            url: format!("https://{host}/cdn-cgi/access/certs"),
            target: Target {
                host,
                port: 443,
                public_only: true,
                tls: https::tls_config(None).map_err(|e| e.to_string())?,
            },
            path: "/cdn-cgi/access/certs".into(),
        })
    }

    /// A test's key server: `url` (`https://host:port/path`) whose certificate comes from the CA
    /// in `ca_file`; loopback allowed.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn at(url: &str, ca_file: &std::path::Path) -> Result<KeySource, String> {
        let tls = https::tls_config(Some(ca_file)).map_err(|e| e.to_string())?;
        let (target, path) = Target::of_url(url, tls, false)?;
        Ok(KeySource {
            url: url.to_owned(),
            target,
            path,
        })
    }

    /// The URL fetched, for `collie doctor`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One fetch and parse of the key document.
    pub(crate) async fn fetch(&self) -> Result<Vec<Key>, AccessFetchError> {
        let request = axum::http::Request::get(self.path.as_str())
            .header(axum::http::header::ACCEPT, "application/json")
            .header(axum::http::header::USER_AGENT, "collie-access-keys")
            .body(Vec::new())
            .map_err(|e| HttpsError::Http {
                host: self.target.host.clone(),
                reason: e.to_string(),
            })?;
        let reply = https::send(&self.target, request, LIMITS).await?;
        if reply.status != 200 {
            return Err(AccessFetchError::Status(reply.status));
        }
        Ok(parse_jwks(&reply.body)?)
    }
}
