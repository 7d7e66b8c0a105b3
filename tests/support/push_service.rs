#![allow(dead_code, unreachable_pub)]
//! A push service for the push tests: HTTPS on loopback with a certificate from a test CA made
//! here (the bridge is told to trust it through `[push] services` with a `ca_file`), recording
//! every request it gets and answering with the statuses a test queues (201 when none is). It
//! plays the browser too: [`Browser`] makes a subscription's P-256 key and auth secret and
//! decrypts what the bridge sends with them.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use web_push_native::p256;

// The includer brings `support/test_ca.rs` in as `test_ca` beside this module (one copy even
// when it includes both HTTPS test services).
use crate::test_ca::TestCa;

/// One request the service got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
    /// Unix milliseconds when it arrived (to compare with a card's `created`).
    pub wall_ms: u64,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Reply = (u16, Vec<(String, String)>);

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    replies: Mutex<VecDeque<Reply>>,
}

/// The running service; stopped on drop.
pub struct PushService {
    pub addr: SocketAddr,
    pub ca_file: PathBuf,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PushService {
    /// Starts the service; its CA certificate is written to `<dir>/push-ca.pem`.
    pub fn start(dir: &Path) -> PushService {
        let pki = TestCa::issue("collie test push CA", &["localhost", "127.0.0.1"]);
        let ca_file = dir.join("push-ca.pem");
        pki.write_ca(&ca_file);
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server_config());
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                let mut stopped = stopped;
                loop {
                    let (tcp, _) = tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => match accepted {
                            Ok(a) => a,
                            Err(_) => continue,
                        },
                    };
                    let acceptor = acceptor.clone();
                    let shared = Arc::clone(&serving);
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = hyper::service::service_fn(move |req| {
                            let shared = Arc::clone(&shared);
                            async move { Ok::<_, hyper::Error>(handle(&shared, req).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
        });
        PushService {
            addr,
            ca_file,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// An endpoint URL on this service.
    pub fn endpoint(&self, name: &str) -> String {
        format!("https://127.0.0.1:{}/push/{name}", self.addr.port())
    }

    /// The origin the bridge's VAPID token must name.
    pub fn origin(&self) -> String {
        format!("https://127.0.0.1:{}", self.addr.port())
    }

    /// Answers the next request with `status` and `headers`.
    pub fn reply_next(&self, status: u16, headers: &[(&str, &str)]) {
        self.shared.replies.lock().expect("lock").push_back((
            status,
            headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ));
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().expect("lock").clone()
    }

    /// Waits until the service got at least `n` requests; returns them.
    pub fn wait_for(&self, n: usize, what: &str) -> Vec<Received> {
        crate::support::wait_for(Duration::from_secs(20), || {
            let got = self.received();
            (got.len() >= n).then_some(got)
        })
        .unwrap_or_else(|| panic!("the push service did not get {what}: {:?}", self.received()))
    }
}

async fn handle(
    shared: &Shared,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    shared.received.lock().expect("lock").push(Received {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body,
        at: Instant::now(),
        wall_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    });
    let (status, headers) = shared
        .replies
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or((201, Vec::new()));
    let mut res = hyper::Response::builder().status(status);
    for (k, v) in headers {
        res = res.header(k, v);
    }
    res.body(Full::new(Bytes::new())).expect("response")
}

impl Drop for PushService {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The browser's side of a subscription: its own P-256 key pair and auth secret.
pub struct Browser {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    pub fn new() -> Browser {
        let secret = loop {
            if let Ok(k) = p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
                break k;
            }
        };
        Browser {
            secret,
            auth: rand::random(),
        }
    }

    /// The subscription JSON a browser's `PushSubscription.toJSON()` gives for `endpoint`.
    pub fn subscription(&self, endpoint: &str) -> serde_json::Value {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let public = self.secret.public_key().to_encoded_point(false);
        serde_json::json!({
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {
                "p256dh": URL_SAFE_NO_PAD.encode(public.as_bytes()),
                "auth": URL_SAFE_NO_PAD.encode(self.auth),
            }
        })
    }

    /// Decrypts a push body (RFC 8291) with this browser's keys.
    pub fn decrypt(&self, body: &[u8]) -> Vec<u8> {
        let auth = web_push_native::Auth::clone_from_slice(&self.auth);
        web_push_native::decrypt(body.to_vec(), &self.secret, &auth).expect("the push decrypts")
    }
}
