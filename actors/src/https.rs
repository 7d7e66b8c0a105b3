//! The bridge's one outgoing HTTPS client: a single POST (or any request) over a fresh TLS
//! connection, with every bound a caller on someone else's network needs. Push posts use it
//! (SPEC §10.4); a durable agent's HTTPS transport (§10.3) is meant to use it too.
//!
//! A durable agent on this machine is reached the same way over a unix socket ([`send_unix`]).
//!
//! - **Where.** The caller names host, port and path; the name is resolved here and, for a
//!   target that must be public, every address is checked and a private, loopback or otherwise
//!   reserved one is refused before any connection is made. Redirects are never followed (a 3xx
//!   is just a status), so an allowed host cannot send the bridge somewhere else.
//! - **Trust.** rustls with the ring provider (already the crew's), TLS 1.2 and 1.3; the public
//!   web roots (`webpki-roots`, compiled in) or, for a self-hosted service, only the CAs of a
//!   PEM file the user names.
//! - **Time and size.** Connecting (resolution, TCP and the TLS handshake) is bounded by
//!   [`Limits::connect`], the whole exchange by [`Limits::total`]; at most [`Limits::max_body`]
//!   bytes of the answer's body are read, and a longer body is an error, not an allocation.
//!
//! One connection per request, HTTP/1.1, closed after: the callers send rarely (a push per
//! question, a poll every few seconds), so a pool would only keep sockets open to the outside.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::task::AbortOnDropHandle;

/// Why a request did not get an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpsError {
    /// The host name did not resolve.
    #[error("cannot resolve {0}")]
    Resolve(String),
    /// Every address of a host that must be public is a private or reserved one.
    #[error("{0} resolves only to non-public addresses")]
    NotPublic(String),
    /// No address accepted a connection.
    #[error("cannot connect to {0}")]
    Connect(String),
    /// The TLS handshake failed (an untrusted certificate, a wrong name).
    #[error("TLS with {host} failed: {reason}")]
    Tls {
        /// The host.
        host: String,
        /// What rustls said.
        reason: String,
    },
    /// The HTTP exchange failed.
    #[error("HTTP exchange with {host} failed: {reason}")]
    Http {
        /// The host.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// Connecting or the whole exchange took too long.
    #[error("{0} did not answer in time")]
    Timeout(String),
    /// The answer's body is over [`Limits::max_body`].
    #[error("the answer of {0} is too large")]
    TooLarge(String),
    /// A CA file could not be read.
    #[error("CA file {path}: {reason}")]
    CaFile {
        /// The file.
        path: String,
        /// What was wrong.
        reason: String,
    },
}

/// Time and size bounds of one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Resolving, connecting and the TLS handshake.
    pub connect: Duration,
    /// The whole request, connecting included.
    pub total: Duration,
    /// Most bytes of the answer's body read.
    pub max_body: usize,
}

/// Where a request goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// Host name or IP address (an IPv6 literal without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Refuse private and reserved addresses (see [`is_public`]).
    pub public_only: bool,
    /// The TLS configuration (see [`tls_config`]).
    pub tls: Arc<ClientConfig>,
}

impl Target {
    /// The target of an `https://host[:port]/path` URL, and the URL's path (with its query):
    /// `tls` and `public_only` as given.
    pub fn of_url(
        url: &str,
        tls: Arc<ClientConfig>,
        public_only: bool,
    ) -> Result<(Target, String), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        if parsed.scheme() != "https" {
            return Err(format!("{url}: not https"));
        }
        let host = match parsed.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => return Err(format!("{url}: no host")),
        };
        let path = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_owned(),
        };
        let target = Target {
            host,
            port: parsed.port_or_known_default().unwrap_or(443),
            public_only,
            tls,
        };
        Ok((target, path))
    }
}

/// An answer.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body, at most [`Limits::max_body`] bytes.
    pub body: Bytes,
}

/// A client configuration trusting the public web roots, or only the CAs in `ca_file` (PEM).
pub fn tls_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, HttpsError> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let bad = |reason: String| HttpsError::CaFile {
                path: path.display().to_string(),
                reason,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no certificate in it".into()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| bad(e.to_string()))?;
            }
        }
    }
    client_config(roots)
}

/// rustls with ring, TLS 1.2 and 1.3, `roots`, HTTP/1.1 by ALPN.
fn client_config(roots: RootCertStore) -> Result<Arc<ClientConfig>, HttpsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpsError::CaFile {
            path: String::new(),
            reason: e.to_string(),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A client configuration trusting the system's roots (the platform's store, `SSL_CERT_FILE`
/// when set), read once and shared; the public web roots when the system has none.
pub fn system_tls_config() -> Result<Arc<ClientConfig>, HttpsError> {
    static SYSTEM: std::sync::OnceLock<Option<Arc<ClientConfig>>> = std::sync::OnceLock::new();
    let made = SYSTEM.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            tracing::warn!("no system CA certificates found; using the public web roots");
            return tls_config(None).ok();
        }
        client_config(roots).ok()
    });
    made.clone().ok_or_else(|| HttpsError::CaFile {
        path: "the system's store".into(),
        reason: "cannot build a TLS configuration".into(),
    })
}

/// Sends `request` (its URI's path and query are used; its host is `target`'s) and reads the
/// answer, within `limits`.
pub async fn send(
    target: &Target,
    request: http::Request<Vec<u8>>,
    limits: Limits,
) -> Result<Reply, HttpsError> {
    let host = target.host.clone();
    tokio::time::timeout(limits.total, exchange(target, request, limits))
        .await
        .map_err(|_| HttpsError::Timeout(host))?
}

async fn exchange(
    target: &Target,
    request: http::Request<Vec<u8>>,
    limits: Limits,
) -> Result<Reply, HttpsError> {
    let host = target.host.as_str();
    let tls = tokio::time::timeout(limits.connect, connect(target))
        .await
        .map_err(|_| HttpsError::Timeout(host.to_owned()))??;
    let authority = match (host.contains(':'), target.port) {
        (false, 443) => host.to_owned(),
        (false, port) => format!("{host}:{port}"),
        (true, port) => format!("[{host}]:{port}"),
    };
    http1(tls, host, &authority, request, limits).await
}

/// Sends `request` over the unix socket at `path` (plain HTTP/1.1; the caller has checked that
/// the path is private) and reads the answer, within `limits`. `Host` is `localhost`.
pub async fn send_unix(
    path: &Path,
    request: http::Request<Vec<u8>>,
    limits: Limits,
) -> Result<Reply, HttpsError> {
    let name = path.display().to_string();
    let exchange = async {
        let stream = tokio::time::timeout(limits.connect, tokio::net::UnixStream::connect(path))
            .await
            .map_err(|_| HttpsError::Timeout(name.clone()))?
            .map_err(|_| HttpsError::Connect(name.clone()))?;
        http1(stream, &name, "localhost", request, limits).await
    };
    tokio::time::timeout(limits.total, exchange)
        .await
        .map_err(|_| HttpsError::Timeout(name.clone()))?
}

/// One HTTP/1.1 request and its answer over a connected stream; `name` is what errors call the
/// other end, `authority` the `Host` header.
async fn http1<S>(
    io: S,
    name: &str,
    authority: &str,
    request: http::Request<Vec<u8>>,
    limits: Limits,
) -> Result<Reply, HttpsError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let http_err = |e: hyper::Error| HttpsError::Http {
        host: name.to_owned(),
        reason: e.to_string(),
    };
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Full<Bytes>>(TokioIo::new(io))
        .await
        .map_err(http_err)?;
    // The connection is driven until the answer is read; dropping the handle ends it.
    let _driver = AbortOnDropHandle::new(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    parts.uri = path.parse().map_err(|_| HttpsError::Http {
        host: name.to_owned(),
        reason: "bad path".into(),
    })?;
    let authority = http::HeaderValue::from_str(authority).map_err(|_| HttpsError::Http {
        host: name.to_owned(),
        reason: "bad host".into(),
    })?;
    parts.headers.insert(http::header::HOST, authority);
    parts.headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    let request = http::Request::from_parts(parts, Full::new(Bytes::from(body)));
    let response = sender.send_request(request).await.map_err(http_err)?;
    let (parts, body) = response.into_parts();
    // A declared length over the bound is refused before a byte of the body is read.
    if let Some(len) = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limits.max_body as u64 {
            return Err(HttpsError::TooLarge(name.to_owned()));
        }
    }
    let body = Limited::new(body, limits.max_body)
        .collect()
        .await
        .map_err(|_| HttpsError::TooLarge(name.to_owned()))?
        .to_bytes();
    Ok(Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

/// Whether `ip` is a public address: not loopback, private, link-local, shared (CGNAT),
/// documentation, multicast, unspecified or otherwise reserved. A [`Target`] with `public_only`
/// connects to nothing else.
pub fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
                || (a == 192 && b == 0) // IETF protocol assignments
                || (a == 198 && (18..20).contains(&b)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || first == 0x2001 && v6.segments()[1] == 0x0db8 // documentation
                || first == 0x0064 && v6.segments()[1] == 0xff9b) // NAT64
        }
    }
}

/// Resolves, checks and connects, then shakes hands.
async fn connect(
    target: &Target,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, HttpsError> {
    let host = target.host.as_str();
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, target.port)],
        Err(_) => tokio::net::lookup_host((host, target.port))
            .await
            .map_err(|_| HttpsError::Resolve(host.to_owned()))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(HttpsError::Resolve(host.to_owned()));
    }
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| !target.public_only || is_public(a.ip()))
        .collect();
    if allowed.is_empty() {
        return Err(HttpsError::NotPublic(host.to_owned()));
    }
    let mut tcp = None;
    for addr in allowed {
        if let Ok(stream) = TcpStream::connect(addr).await {
            tcp = Some(stream);
            break;
        }
    }
    let tcp = tcp.ok_or_else(|| HttpsError::Connect(host.to_owned()))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(host.to_owned()).map_err(|e| HttpsError::Tls {
        host: host.to_owned(),
        reason: e.to_string(),
    })?;
    TlsConnector::from(Arc::clone(&target.tls))
        .connect(name, tcp)
        .await
        .map_err(|e| HttpsError::Tls {
            host: host.to_owned(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    use super::*;

    const LIMITS: Limits = Limits {
        connect: Duration::from_millis(500),
        total: Duration::from_millis(1_500),
        max_body: 1024,
    };

    /// What the test server does with a request.
    #[derive(Clone, Copy)]
    enum Mode {
        /// `302` to an internal address.
        Redirect,
        /// `200` with a body of this many bytes.
        Body(usize),
        /// Reads the request and never answers.
        Silent,
    }

    /// A TLS server on loopback with a certificate from a fresh CA; returns its port, the CA's
    /// PEM file (in `dir`) and the count of requests it got.
    async fn server(dir: &Path, mode: Mode) -> (u16, std::path::PathBuf, Arc<AtomicUsize>) {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("ca");
        let key = rcgen::KeyPair::generate().expect("key");
        let mut leaf = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        leaf.subject_alt_names
            .push(rcgen::SanType::IpAddress("127.0.0.1".parse().expect("ip")));
        let cert = leaf.signed_by(&key, &ca_cert, &ca_key).expect("leaf");
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |_req| {
                        seen.fetch_add(1, Ordering::SeqCst);
                        async move {
                            let res = match mode {
                                Mode::Redirect => hyper::Response::builder()
                                    .status(302)
                                    .header("location", "https://10.0.0.1/steal")
                                    .body(Full::new(Bytes::new())),
                                Mode::Body(n) => hyper::Response::builder()
                                    .status(200)
                                    .body(Full::new(Bytes::from(vec![b'x'; n]))),
                                Mode::Silent => {
                                    std::future::pending::<()>().await;
                                    unreachable!("never answers")
                                }
                            };
                            Ok::<_, std::convert::Infallible>(res.expect("response"))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        (port, ca_file, count)
    }

    fn target(port: u16, tls: Arc<ClientConfig>, public_only: bool) -> Target {
        Target {
            host: "127.0.0.1".into(),
            port,
            public_only,
            tls,
        }
    }

    fn post() -> http::Request<Vec<u8>> {
        http::Request::post("https://127.0.0.1/push/x")
            .body(b"hello".to_vec())
            .expect("request")
    }

    #[test]
    fn public_addresses() {
        for ok in ["142.250.74.42", "17.57.146.20", "2a00:1450:4001::200a"] {
            assert!(is_public(ok.parse().expect(ok)), "{ok}");
        }
        for bad in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.1",
            "127.0.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(bad.parse().expect(bad)), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_target_that_must_be_public_is_never_connected_to_on_loopback() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, ca, count) = server(dir.path(), Mode::Body(2)).await;
        let tls = tls_config(Some(&ca)).expect("tls");
        let refused = send(&target(port, Arc::clone(&tls), true), post(), LIMITS).await;
        assert!(
            matches!(refused, Err(HttpsError::NotPublic(_))),
            "{refused:?}"
        );
        let named = Target {
            host: "localhost".into(),
            ..target(port, Arc::clone(&tls), true)
        };
        assert!(matches!(
            send(&named, post(), LIMITS).await,
            Err(HttpsError::NotPublic(_))
        ));
        assert_eq!(count.load(Ordering::SeqCst), 0);
        // The same service, listed (not public-only), is reached.
        let ok = send(&target(port, tls, false), post(), LIMITS)
            .await
            .expect("reached");
        assert_eq!((ok.status, ok.body.as_ref()), (200, b"xx".as_slice()));
    }

    #[tokio::test]
    async fn a_redirect_is_an_answer_never_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, ca, count) = server(dir.path(), Mode::Redirect).await;
        let tls = tls_config(Some(&ca)).expect("tls");
        let reply = send(&target(port, tls, false), post(), LIMITS)
            .await
            .expect("an answer");
        assert_eq!(reply.status, 302);
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "one request, no second one"
        );
    }

    #[tokio::test]
    async fn an_oversized_answer_and_a_silent_server_are_errors_within_the_limits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, ca, _) = server(dir.path(), Mode::Body(LIMITS.max_body + 1)).await;
        let tls = tls_config(Some(&ca)).expect("tls");
        assert!(matches!(
            send(&target(port, tls, false), post(), LIMITS).await,
            Err(HttpsError::TooLarge(_))
        ));

        let dir = tempfile::tempdir().expect("tempdir");
        let (port, ca, _) = server(dir.path(), Mode::Silent).await;
        let tls = tls_config(Some(&ca)).expect("tls");
        let started = std::time::Instant::now();
        assert!(matches!(
            send(&target(port, tls, false), post(), LIMITS).await,
            Err(HttpsError::Timeout(_))
        ));
        assert!(started.elapsed() < LIMITS.total + Duration::from_millis(500));

        // A peer that takes the TCP connection and never shakes hands: the connect bound.
        let mute = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let mute_port = mute.local_addr().expect("addr").port();
        let tls = tls_config(None).expect("tls");
        let started = std::time::Instant::now();
        assert!(matches!(
            send(&target(mute_port, tls, false), post(), LIMITS).await,
            Err(HttpsError::Timeout(_))
        ));
        assert!(started.elapsed() < LIMITS.connect + Duration::from_millis(500));
        drop(mute);
    }

    #[tokio::test]
    async fn a_certificate_from_another_ca_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, _, count) = server(dir.path(), Mode::Body(0)).await;
        // The public roots do not know the test CA.
        let web = tls_config(None).expect("tls");
        assert!(matches!(
            send(&target(port, web, false), post(), LIMITS).await,
            Err(HttpsError::Tls { .. })
        ));
        // Nor does another CA.
        let other = tempfile::tempdir().expect("tempdir");
        let (_, other_ca, _) = server(other.path(), Mode::Body(0)).await;
        let tls = tls_config(Some(&other_ca)).expect("tls");
        assert!(matches!(
            send(&target(port, tls, false), post(), LIMITS).await,
            Err(HttpsError::Tls { .. })
        ));
        assert_eq!(count.load(Ordering::SeqCst), 0);
        // A CA file that holds no certificate is refused when read.
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").expect("write");
        assert!(matches!(
            tls_config(Some(&empty)),
            Err(HttpsError::CaFile { .. })
        ));
    }
}
