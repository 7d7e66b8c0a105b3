//! Where a push may go (SPEC §10.4): a subscription's endpoint must be an `https` URL on a known
//! push service or on a host the user listed in `[push] services`. Checked when a phone subscribes
//! (a clear 400 otherwise, and nothing is stored) and again before every post, so the bridge never
//! posts anywhere else and a paired device cannot point it at an address on the private network.
//!
//! The known services are the ones browsers hand out today: Google FCM (Chrome, Edge on Android,
//! Samsung Internet — `fcm.googleapis.com`), Mozilla autopush (Firefox —
//! `updates.push.services.mozilla.com`), Apple (Safari — `web.push.apple.com`) and Windows
//! (Edge on Windows — `*.notify.windows.com`). A known service is reached on port 443 only and its
//! addresses must be public ones (checked when the name is resolved, before connecting:
//! [`crate::https::is_public`]). A host in an IP literal is never a known service.
//!
//! Also here: the subscription's keys (`p256dh`, a P-256 point; `auth`, 16 bytes), decoded and
//! checked before anything is kept.

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::pairing::TokenHash;

/// Longest endpoint URL accepted, in bytes (the services' endpoints are a few hundred).
pub const MAX_ENDPOINT: usize = 2_048;

/// Exact host names of known push services.
const KNOWN_HOSTS: [&str; 1] = ["fcm.googleapis.com"];
/// Domains whose sub-domains are known push services.
const KNOWN_DOMAINS: [&str; 3] = [
    ".push.services.mozilla.com",
    ".push.apple.com",
    ".notify.windows.com",
];

/// Why an endpoint or its keys were refused. `Display` is the 400 message the phone gets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// Longer than [`MAX_ENDPOINT`].
    #[error("push endpoint is too long (at most 2048 bytes)")]
    TooLong,
    /// Not a URL, or not `https`.
    #[error("push endpoint must be an https URL")]
    NotHttps,
    /// `user@` in the URL.
    #[error("push endpoint must not carry user info")]
    UserInfo,
    /// The host is neither a known push service nor listed in `[push] services`.
    #[error("push endpoint host {0} is not a known push service (a self-hosted one must be listed in [push] services)")]
    NotAllowed(String),
    /// A known service named with a port other than 443.
    #[error("push endpoint of a known push service must use port 443")]
    Port,
    /// `keys.p256dh` is not a P-256 public key.
    #[error("keys.p256dh must be an uncompressed P-256 public key in base64url")]
    P256dh,
    /// `keys.auth` is not 16 bytes.
    #[error("keys.auth must be 16 bytes in base64url")]
    Auth,
}

/// A push service the user listed in `[push] services`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// Its host name or IP address, lowercase, without port.
    pub host: String,
    /// A PEM file of the CA(s) its certificate chains to, for a self-hosted service; the public
    /// roots when absent.
    pub ca_file: Option<std::path::PathBuf>,
}

/// An endpoint that passed the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL as given.
    pub url: String,
    /// The host (lowercase; an IPv6 literal without brackets).
    pub host: String,
    /// The port (443 unless given).
    pub port: u16,
    /// Path and query.
    pub path: String,
    /// The listed service it matched, if it is not a known one.
    pub service: Option<Service>,
}

impl Endpoint {
    /// Whether this endpoint's addresses must be public ones (a known service; a listed service
    /// may be on the user's own network).
    pub fn public_only(&self) -> bool {
        self.service.is_none()
    }

    /// The origin (`https://host[:port]`): the `aud` of the VAPID token (RFC 8292 §2).
    pub fn origin(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 443 {
            format!("https://{host}")
        } else {
            format!("https://{host}:{}", self.port)
        }
    }
}

/// Whether `host` is one of the known push services.
pub fn is_known(host: &str) -> bool {
    KNOWN_HOSTS.contains(&host)
        || KNOWN_DOMAINS.iter().any(|d| {
            host.strip_suffix(d).is_some_and(|label| {
                !label.is_empty()
                    && label.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                    })
                    && !label.starts_with(['.', '-'])
            })
        })
}

/// Checks `url` against the allow-list (see the module docs); `services` is `[push] services`.
pub fn check(url: &str, services: &[Service]) -> Result<Endpoint, EndpointError> {
    if url.len() > MAX_ENDPOINT {
        return Err(EndpointError::TooLong);
    }
    let uri: http::Uri = url.parse().map_err(|_| EndpointError::NotHttps)?;
    if uri.scheme_str() != Some("https") {
        return Err(EndpointError::NotHttps);
    }
    let authority = uri.authority().ok_or(EndpointError::NotHttps)?;
    if authority.as_str().contains('@') {
        return Err(EndpointError::UserInfo);
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if host.is_empty() {
        return Err(EndpointError::NotHttps);
    }
    let port = authority.port_u16().unwrap_or(443);
    let path = uri
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    if let Some(service) = services.iter().find(|s| s.host == host) {
        return Ok(Endpoint {
            url: url.to_owned(),
            host,
            port,
            path,
            service: Some(service.clone()),
        });
    }
    if host.parse::<std::net::IpAddr>().is_ok() || !is_known(&host) {
        return Err(EndpointError::NotAllowed(host));
    }
    if port != 443 {
        return Err(EndpointError::Port);
    }
    Ok(Endpoint {
        url: url.to_owned(),
        host,
        port,
        path,
        service: None,
    })
}

/// A subscription's keys, decoded and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// The browser's P-256 public key, uncompressed (65 bytes).
    pub p256dh: Vec<u8>,
    /// The browser's auth secret (16 bytes).
    pub auth: [u8; 16],
}

fn b64url(s: &str) -> Option<Vec<u8>> {
    if s.len() > 256 {
        return None;
    }
    URL_SAFE_NO_PAD
        .decode(s)
        .or_else(|_| URL_SAFE.decode(s))
        .ok()
}

impl Keys {
    /// Decodes `p256dh` and `auth` as a browser's `PushSubscription.toJSON()` gives them.
    pub fn parse(p256dh: &str, auth: &str) -> Result<Keys, EndpointError> {
        let p256dh = b64url(p256dh).ok_or(EndpointError::P256dh)?;
        if p256dh.len() != 65 || web_push_native::p256::PublicKey::from_sec1_bytes(&p256dh).is_err()
        {
            return Err(EndpointError::P256dh);
        }
        let auth: [u8; 16] = b64url(auth)
            .and_then(|a| a.try_into().ok())
            .ok_or(EndpointError::Auth)?;
        Ok(Keys { p256dh, auth })
    }
}

/// One device's subscription, as the store keeps it (JSON under `sub/<label>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The device's label.
    pub device: String,
    /// The SHA-256 of the device's token when it subscribed: a later device under the same label
    /// (a label taken over) is another device and gets nothing.
    pub token: TokenHash,
    /// The endpoint URL.
    pub endpoint: String,
    /// `keys.p256dh`, base64url.
    pub p256dh: String,
    /// `keys.auth`, base64url.
    pub auth: String,
    /// Unix milliseconds.
    pub created: u64,
}

impl Subscription {
    /// Its keys, decoded.
    pub fn keys(&self) -> Result<Keys, EndpointError> {
        Keys::parse(&self.p256dh, &self.auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<Service> {
        vec![Service {
            host: "ntfy.home.arpa".into(),
            ca_file: None,
        }]
    }

    #[test]
    fn the_known_services_pass() {
        for url in [
            "https://fcm.googleapis.com/fcm/send/abc:def",
            "https://fcm.googleapis.com/wp/xyz",
            "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
            "https://web.push.apple.com/QGx7",
            "https://wns2-par02p.notify.windows.com/w/?token=AQE",
            "https://FCM.googleapis.com:443/fcm/send/x",
        ] {
            let e = check(url, &[]).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(e.public_only(), "{url}");
            assert_eq!(e.port, 443);
        }
        let e = check("https://web.push.apple.com/QGx7?a=1", &[]).expect("apple");
        assert_eq!(
            (e.origin().as_str(), e.path.as_str()),
            ("https://web.push.apple.com", "/QGx7?a=1")
        );
    }

    #[test]
    fn anything_else_is_refused_with_a_clear_reason() {
        let refused = |url: &str| check(url, &listed()).expect_err(url);
        assert_eq!(
            refused("http://fcm.googleapis.com/fcm/send/x"),
            EndpointError::NotHttps
        );
        assert_eq!(refused("fcm.googleapis.com/x"), EndpointError::NotHttps);
        assert_eq!(refused("not a url"), EndpointError::NotHttps);
        assert_eq!(
            refused("https://user:pw@fcm.googleapis.com/x"),
            EndpointError::UserInfo
        );
        assert_eq!(
            refused("https://fcm.googleapis.com:8443/x"),
            EndpointError::Port
        );
        for (url, host) in [
            ("https://example.com/push", "example.com"),
            ("https://10.0.0.5/push", "10.0.0.5"),
            ("https://192.168.1.10/push", "192.168.1.10"),
            ("https://127.0.0.1:8080/push", "127.0.0.1"),
            ("https://[::1]/push", "::1"),
            ("https://localhost/push", "localhost"),
            (
                "https://evil.push.apple.com.attacker.net/x",
                "evil.push.apple.com.attacker.net",
            ),
            ("https://push.apple.com/x", "push.apple.com"),
            (
                "https://fcm.googleapis.com.evil/x",
                "fcm.googleapis.com.evil",
            ),
            ("https://notify.windows.com/x", "notify.windows.com"),
        ] {
            assert_eq!(
                refused(url),
                EndpointError::NotAllowed(host.to_owned()),
                "{url}"
            );
        }
        assert_eq!(
            refused(&format!(
                "https://fcm.googleapis.com/{}",
                "a".repeat(MAX_ENDPOINT)
            )),
            EndpointError::TooLong
        );
        assert!(refused("https://example.com/push")
            .to_string()
            .contains("[push] services"));
    }

    #[test]
    fn a_listed_service_passes_on_any_port_and_may_be_private() {
        let e = check("https://NTFY.home.arpa:2586/up/abc", &listed()).expect("listed");
        assert_eq!((e.host.as_str(), e.port), ("ntfy.home.arpa", 2586));
        assert!(!e.public_only());
        assert_eq!(e.origin(), "https://ntfy.home.arpa:2586");
        let ip = vec![Service {
            host: "127.0.0.1".into(),
            ca_file: None,
        }];
        assert!(check("https://127.0.0.1:9999/p", &ip).is_ok());
        assert!(
            check("http://127.0.0.1:9999/p", &ip).is_err(),
            "still https only"
        );
    }

    #[test]
    fn keys_must_be_a_p256_point_and_16_bytes() {
        // The uncompressed generator point of P-256 is a valid public key.
        let g = "BGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU";
        let auth = "AAECAwQFBgcICQoLDA0ODw";
        let k = Keys::parse(g, auth).expect("valid keys");
        assert_eq!((k.p256dh.len(), k.auth[15]), (65, 15));
        assert_eq!(Keys::parse("AAAA", auth), Err(EndpointError::P256dh));
        let mut off_curve = URL_SAFE_NO_PAD.decode(g).expect("b64");
        off_curve[64] ^= 1;
        assert_eq!(
            Keys::parse(&URL_SAFE_NO_PAD.encode(off_curve), auth),
            Err(EndpointError::P256dh)
        );
        assert_eq!(Keys::parse(g, "AAECAw"), Err(EndpointError::Auth));
        assert_eq!(Keys::parse(g, "!!!"), Err(EndpointError::Auth));
    }
}
