//! The Cloudflare Access gate (SPEC §14, decision 0074) against a real key server: HTTPS on
//! loopback with a certificate from a throwaway CA, serving a JWKS the test controls, fetched by
//! the bridge's own HTTPS client. Tokens are signed with the committed test keys in
//! `tests/fixtures/access/` (ring cannot make RSA keys). The key server's address reaches the gate
//! only through the test-only `fault-injection` feature.
#![cfg(feature = "fault-injection")]

mod support;
#[path = "support/test_ca.rs"]
mod test_ca;

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use collie::identity::access::{AccessGate, AccessRefusal, MAX_KEY_AGE, TOKEN_HEADER};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use serde_json::{json, Value};
use test_ca::TestCa;
use tokio_util::sync::CancellationToken;

const TEAM: &str = "acme";
const ISS: &str = "https://acme.cloudflareaccess.com";
const AUD: &str = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2";

/// A test key pair and the id the JWKS names it by.
struct TestKey {
    kid: &'static str,
    pair: RsaKeyPair,
}

impl TestKey {
    fn load(file: &str, kid: &'static str) -> TestKey {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/access")
            .join(file);
        let der = std::fs::read(&path).expect("fixture key");
        TestKey {
            kid,
            pair: RsaKeyPair::from_pkcs8(&der).expect("PKCS#8 RSA key"),
        }
    }

    /// The public half as Cloudflare's JWKS writes it.
    fn jwk(&self) -> Value {
        let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(self.pair.public());
        json!({"kid": self.kid, "kty": "RSA", "alg": "RS256", "use": "sig",
            "e": URL_SAFE_NO_PAD.encode(&public.e), "n": URL_SAFE_NO_PAD.encode(&public.n)})
    }

    /// A token with `header` and `claims`, signed RS256 by this key.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let message = format!("{}.{}", b64_json(header), b64_json(claims));
        let mut signature = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .expect("sign");
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// A valid token for `claims` under this key's own id.
    fn token(&self, claims: &Value) -> String {
        self.sign(
            &json!({"alg": "RS256", "kid": self.kid, "typ": "JWT"}),
            claims,
        )
    }
}

fn b64_json(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).expect("json"))
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// The claims Cloudflare Access puts in an application token, valid around `now`.
fn claims(now: SystemTime) -> Value {
    let now = unix(now);
    json!({"aud": [AUD], "email": "alice@example.com", "exp": now + 600, "iat": now,
        "nbf": now, "iss": ISS, "type": "app", "identity_nonce": "n0nce",
        "sub": "7335d417-61da-459d-899c-0a01c76a2f94", "country": "DE"})
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn headers(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(TOKEN_HEADER, HeaderValue::from_str(token).expect("header"));
    headers
}

/// A key server on loopback: HTTPS with a test CA's certificate, answering every request with
/// the body it currently holds.
struct KeyServer {
    url: String,
    body: Arc<Mutex<Vec<u8>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
    ca_file: std::path::PathBuf,
}

impl KeyServer {
    async fn start(keys: &[&TestKey]) -> KeyServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::issue("access test CA", &["127.0.0.1"]);
        let ca_file = dir.path().join("ca.pem");
        ca.write_ca(&ca_file);
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let body = Arc::new(Mutex::new(Vec::new()));
        let served = Arc::clone(&body);
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let served = Arc::clone(&served);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |_request| {
                        let body = served.lock().clone();
                        async move {
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(body))))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let server = KeyServer {
            url: format!("https://127.0.0.1:{port}/cdn-cgi/access/certs"),
            body,
            task: Some(task),
            _dir: dir,
            ca_file,
        };
        server.serve(keys);
        server
    }

    /// Serves a JWKS of `keys`, shaped as Cloudflare's (with the PEM fields beside).
    fn serve(&self, keys: &[&TestKey]) {
        let jwks: Vec<Value> = keys.iter().map(|k| k.jwk()).collect();
        let current = keys.first().map_or("", |k| k.kid);
        self.serve_raw(
            serde_json::to_vec(&json!({"keys": jwks,
                "public_cert": {"kid": current, "cert": "-----BEGIN CERTIFICATE-----\n..."},
                "public_certs": []}))
            .expect("json"),
        );
    }

    fn serve_raw(&self, body: Vec<u8>) {
        *self.body.lock() = body;
    }

    fn gate(&self) -> AccessGate {
        AccessGate::with_keys_at(TEAM, AUD, &self.url, &self.ca_file).expect("gate")
    }

    /// Stops listening: from here on a connection is refused.
    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for KeyServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_valid_token_names_its_person_and_each_broken_claim_is_refused() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    assert_eq!(gate.refresh().await.expect("fetch"), 1);
    let now = SystemTime::now();
    let check = |claims: &Value| gate.check(&headers(&a.token(claims)), now);

    assert_eq!(check(&claims(now)), Ok("alice@example.com".into()));
    // `aud` as a single string, and beside other applications' tags.
    assert_eq!(
        check(&with(claims(now), "aud", json!(AUD))),
        Ok("alice@example.com".into())
    );
    assert_eq!(
        check(&with(claims(now), "aud", json!(["other", AUD]))),
        Ok("alice@example.com".into())
    );
    // A service token has no email: its client id names it.
    let mut service = claims(now);
    service["email"] = json!("");
    service["common_name"] = json!("88bf3b6d86161464f6509f7219099e57.access");
    assert_eq!(
        check(&service),
        Ok("service-token:88bf3b6d86161464f6509f7219099e57.access".into())
    );

    let t = unix(now);
    // Expired: a minute's leeway, no more.
    assert_eq!(
        check(&with(claims(now), "exp", json!(t - 30))),
        Ok("alice@example.com".into())
    );
    assert_eq!(
        check(&with(claims(now), "exp", json!(t - 120))),
        Err(AccessRefusal::Expired)
    );
    let mut no_exp = claims(now);
    no_exp.as_object_mut().expect("object").remove("exp");
    assert_eq!(check(&no_exp), Err(AccessRefusal::Expired));
    // Not yet valid.
    assert_eq!(
        check(&with(claims(now), "nbf", json!(t + 300))),
        Err(AccessRefusal::NotYetValid)
    );
    assert_eq!(
        check(&with(claims(now), "nbf", json!(t + 30))),
        Ok("alice@example.com".into())
    );
    // Wrong audience, as an array, a string, or none.
    for aud in [
        json!(["other"]),
        json!("other"),
        json!([]),
        json!(AUD.to_uppercase()),
    ] {
        assert_eq!(
            check(&with(claims(now), "aud", aud.clone())),
            Err(AccessRefusal::WrongAudience),
            "{aud}"
        );
    }
    let mut no_aud = claims(now);
    no_aud.as_object_mut().expect("object").remove("aud");
    assert_eq!(check(&no_aud), Err(AccessRefusal::WrongAudience));
    // Wrong issuer: another team, plain http, a trailing slash, none.
    for iss in [
        "https://evil.cloudflareaccess.com",
        "http://acme.cloudflareaccess.com",
        "https://acme.cloudflareaccess.com/",
    ] {
        assert_eq!(
            check(&with(claims(now), "iss", json!(iss))),
            Err(AccessRefusal::WrongIssuer),
            "{iss}"
        );
    }
    let mut no_iss = claims(now);
    no_iss.as_object_mut().expect("object").remove("iss");
    assert_eq!(check(&no_iss), Err(AccessRefusal::WrongIssuer));
    // No person at all.
    let mut nobody = claims(now);
    nobody.as_object_mut().expect("object").remove("email");
    assert_eq!(check(&nobody), Err(AccessRefusal::NoPerson));
}

#[tokio::test]
async fn forged_tokens_are_refused() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let c = TestKey::load("key-c.pk8.der", "kid-c");
    let server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    gate.refresh().await.expect("fetch");
    let now = SystemTime::now();
    let good = a.token(&claims(now));
    assert_eq!(
        gate.check(&headers(&good), now),
        Ok("alice@example.com".into())
    );

    // A key the team never served.
    assert_eq!(
        gate.check(&headers(&c.token(&claims(now))), now),
        Err(AccessRefusal::UnknownKey)
    );
    // Another key's signature under a served key's id.
    let forged = c.sign(&json!({"alg": "RS256", "kid": "kid-a"}), &claims(now));
    assert_eq!(
        gate.check(&headers(&forged), now),
        Err(AccessRefusal::BadSignature)
    );
    // Claims changed after signing (the email), the signature kept.
    let mut parts: Vec<&str> = good.split('.').collect();
    let other = b64_json(&with(claims(now), "email", json!("mallory@example.com")));
    parts[1] = &other;
    assert_eq!(
        gate.check(&headers(&parts.join(".")), now),
        Err(AccessRefusal::BadSignature)
    );
    // A truncated signature.
    assert_eq!(
        gate.check(&headers(&good[..good.len() - 10]), now),
        Err(AccessRefusal::BadSignature)
    );
    // `alg: none` with no signature, and HS256 keyed with the public key (key confusion).
    let unsigned = format!(
        "{}.{}.",
        b64_json(&json!({"alg": "none", "kid": "kid-a"})),
        b64_json(&claims(now))
    );
    assert_eq!(
        gate.check(&headers(&unsigned), now),
        Err(AccessRefusal::WrongAlgorithm)
    );
    let message = format!(
        "{}.{}",
        b64_json(&json!({"alg": "HS256", "kid": "kid-a"})),
        b64_json(&claims(now))
    );
    let public = a.jwk()["n"].as_str().expect("n").to_owned();
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, public.as_bytes()),
        message.as_bytes(),
    );
    let hs256 = format!("{message}.{}", URL_SAFE_NO_PAD.encode(mac.as_ref()));
    assert_eq!(
        gate.check(&headers(&hs256), now),
        Err(AccessRefusal::WrongAlgorithm)
    );
    // No header, an oversized one (refused before any decoding), garbage.
    assert_eq!(
        gate.check(&HeaderMap::new(), now),
        Err(AccessRefusal::NoToken)
    );
    let huge = format!("{good}{}", "A".repeat(8 * 1024));
    assert_eq!(
        gate.check(&headers(&huge), now),
        Err(AccessRefusal::TooLarge)
    );
    assert_eq!(
        gate.check(&headers("not-a-token"), now),
        Err(AccessRefusal::Malformed)
    );
}

#[tokio::test]
async fn a_rotated_key_is_kept_one_more_fetch_then_refused() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let b = TestKey::load("key-b.pk8.der", "kid-b");
    let server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    gate.refresh().await.expect("fetch");
    let now = SystemTime::now();
    let old = headers(&a.token(&claims(now)));
    let new = headers(&b.token(&claims(now)));
    assert_eq!(gate.check(&old, now), Ok("alice@example.com".into()));
    assert_eq!(gate.check(&new, now), Err(AccessRefusal::UnknownKey));

    // The team rotates: only the new key is served.
    server.serve(&[&b]);
    assert_eq!(gate.refresh().await.expect("fetch"), 1);
    assert_eq!(gate.check(&new, now), Ok("alice@example.com".into()));
    assert_eq!(gate.check(&old, now), Ok("alice@example.com".into()));
    let state = gate.state();
    assert_eq!(state.current_keys, ["kid-b"]);
    assert_eq!(state.previous_keys, ["kid-a"]);

    // A second fetch without it: the old key has left both sets.
    gate.refresh().await.expect("fetch");
    assert_eq!(gate.check(&old, now), Err(AccessRefusal::UnknownKey));
    assert_eq!(gate.check(&new, now), Ok("alice@example.com".into()));
    assert_eq!(gate.state().keys_held(), 1);

    // Cloudflare's own overlap (both keys served) keeps both for as long as it lasts.
    server.serve(&[&a, &b]);
    gate.refresh().await.expect("fetch");
    gate.refresh().await.expect("fetch");
    assert_eq!(gate.check(&old, now), Ok("alice@example.com".into()));
}

#[tokio::test]
async fn with_the_key_server_down_from_the_start_every_request_is_refused() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let mut server = KeyServer::start(&[&a]).await;
    server.stop().await;
    let gate = server.gate();
    assert!(gate.refresh().await.is_err());
    let now = SystemTime::now();
    assert_eq!(
        gate.check(&headers(&a.token(&claims(now))), now),
        Err(AccessRefusal::NoKeys)
    );
    let state = gate.state();
    assert_eq!(state.keys_held(), 0);
    assert!(matches!(state.last_result, Some(Err(_))), "{state:?}");
    assert!(state.last_fetch.is_some() && state.last_good_fetch.is_none());

    // A key server that answers, but not with keys: still none.
    let server = KeyServer::start(&[]).await;
    let gate = server.gate();
    assert!(gate.refresh().await.is_err());
    server.serve_raw(b"<html>maintenance</html>".to_vec());
    assert!(gate.refresh().await.is_err());
    assert_eq!(
        gate.check(&headers(&a.token(&claims(now))), now),
        Err(AccessRefusal::NoKeys)
    );
}

#[tokio::test]
async fn after_a_good_fetch_a_dead_key_server_leaves_the_last_good_keys() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let mut server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    gate.refresh().await.expect("fetch");
    let good_at = gate.state().last_good_fetch.expect("fetched");

    // A bad answer, then no server at all: the keys stay.
    server.serve_raw(b"{\"keys\": []}".to_vec());
    assert!(gate.refresh().await.is_err());
    server.stop().await;
    assert!(gate.refresh().await.is_err());
    let now = SystemTime::now();
    let token = headers(&a.token(&claims(now)));
    assert_eq!(gate.check(&token, now), Ok("alice@example.com".into()));
    let state = gate.state();
    assert_eq!(state.current_keys, ["kid-a"]);
    assert_eq!(state.last_good_fetch, Some(good_at));
    assert!(matches!(state.last_result, Some(Err(_))), "{state:?}");

    // But not for ever: keys not refreshed for a week are no longer used.
    let later = good_at + MAX_KEY_AGE + Duration::from_secs(1);
    assert_eq!(
        gate.check(&headers(&a.token(&claims(later))), later),
        Err(AccessRefusal::StaleKeys)
    );
}

#[tokio::test]
async fn an_oversized_key_document_is_refused_and_changes_nothing() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let b = TestKey::load("key-b.pk8.der", "kid-b");
    let server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    gate.refresh().await.expect("fetch");
    // A valid JWKS of the new key, padded past 64 KiB with whitespace.
    let mut body = serde_json::to_vec(&json!({"keys": [b.jwk()]})).expect("json");
    body.extend(std::iter::repeat_n(b' ', 64 * 1024));
    server.serve_raw(body);
    let refused = gate.refresh().await.expect_err("too large");
    assert!(refused.to_string().contains("too large"), "{refused}");
    let now = SystemTime::now();
    assert_eq!(
        gate.check(&headers(&b.token(&claims(now))), now),
        Err(AccessRefusal::UnknownKey)
    );
    assert_eq!(
        gate.check(&headers(&a.token(&claims(now))), now),
        Ok("alice@example.com".into())
    );
}

#[tokio::test]
async fn the_refresher_fetches_at_start_and_stops_when_cancelled() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let server = KeyServer::start(&[&a]).await;
    let gate = server.gate();
    let cancel = CancellationToken::new();
    let task = gate.spawn_refresher(cancel.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while gate.state().keys_held() == 0 {
        assert!(Instant::now() < deadline, "no keys fetched at start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let now = SystemTime::now();
    assert_eq!(
        gate.check(&headers(&a.token(&claims(now))), now),
        Ok("alice@example.com".into())
    );
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the refresher ends when cancelled")
        .expect("no panic");
}

#[tokio::test]
async fn the_test_variables_point_a_fault_injection_build_at_the_test_server() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let server = KeyServer::start(&[&a]).await;
    // Only this test in this file reads the variables (AccessGate::new); the others name the
    // server directly.
    std::env::set_var("COLLIE_TEST_ACCESS_CERTS_URL", &server.url);
    std::env::set_var("COLLIE_TEST_ACCESS_CA", &server.ca_file);
    let gate = AccessGate::new(TEAM, AUD);
    std::env::remove_var("COLLIE_TEST_ACCESS_CERTS_URL");
    std::env::remove_var("COLLIE_TEST_ACCESS_CA");
    let gate = gate.expect("gate");
    assert_eq!(gate.state().keys_url, server.url);
    assert_eq!(gate.refresh().await.expect("fetch"), 1);
    // The issuer is still the team's, whatever the key server's address.
    assert_eq!(gate.state().issuer, ISS);
}

/// Through a bridge: with `COLLIE_ACCESS_TEAM`/`COLLIE_ACCESS_AUD` every `/api` request but health
/// needs a valid token — pairing too, and pairing and the token must both pass; the device list
/// names the person who paired; an expired token, or none, is `403 identity required` from the
/// `access` gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_behind_access_lets_in_only_a_valid_token() {
    let a = TestKey::load("key-a.pk8.der", "kid-a");
    let server = KeyServer::start(&[&a]).await;
    let now = SystemTime::now();
    let valid = a.token(&claims(now));
    let expired = a.token(&with(claims(now), "exp", json!(unix(now) - 3600)));
    let env = vec![
        ("COLLIE_ACCESS_TEAM".to_owned(), TEAM.to_owned()),
        ("COLLIE_ACCESS_AUD".to_owned(), AUD.to_owned()),
        (
            "COLLIE_TEST_ACCESS_CERTS_URL".to_owned(),
            server.url.clone(),
        ),
        (
            "COLLIE_TEST_ACCESS_CA".to_owned(),
            server.ca_file.display().to_string(),
        ),
    ];
    tokio::task::spawn_blocking(move || {
        let b = support::TestBridge::start_with(support::Opts {
            env,
            ..support::Opts::default()
        });
        let with_token = |t: &str| vec![(TOKEN_HEADER, t.to_owned())];
        let ask = |method: &str,
                   path: &str,
                   device: Option<&str>,
                   token: &[(&str, String)],
                   body: Option<&Value>| {
            let headers: Vec<(&str, &str)> = token.iter().map(|(k, v)| (*k, v.as_str())).collect();
            b.request(method, path, device, body, &headers)
        };
        // Health stays open and names no one.
        let (s, _) = ask("GET", "/api/health", None, &[], None);
        assert_eq!(s, 200);
        // The keys come with the first fetch; until then even a valid token is refused.
        let code = b.code("full");
        let claim = json!({"code": code, "label": "alice-phone"});
        let refused = ask("POST", "/api/pair", None, &[], Some(&claim));
        assert_eq!(refused.0, 403, "{}", refused.1);
        assert_eq!(refused.1["error"], "identity required");
        assert_eq!(refused.1["gate"], "access");
        let expired_claim = ask(
            "POST",
            "/api/pair",
            None,
            &with_token(&expired),
            Some(&claim),
        );
        assert_eq!(
            (expired_claim.0, &expired_claim.1["gate"]),
            (403, &json!("access"))
        );
        let mut last = None;
        let paired = support::wait_for(Duration::from_secs(20), || {
            let (s, v) = ask("POST", "/api/pair", None, &with_token(&valid), Some(&claim));
            last = Some((s, v.clone()));
            (s == 200).then_some(v)
        })
        .unwrap_or_else(|| panic!("a valid token pairs once the keys are fetched: {last:?}"));
        let device = paired["token"].as_str().expect("token").to_owned();
        // The device alone is not enough, nor an expired token with it.
        let (s, v) = ask("GET", "/api/panes", Some(&device), &[], None);
        assert_eq!((s, &v["error"]), (403, &json!("identity required")));
        let (s, _) = ask(
            "GET",
            "/api/panes",
            Some(&device),
            &with_token(&expired),
            None,
        );
        assert_eq!(s, 403);
        // Both together pass, and the device list names who paired.
        let (s, list) = ask(
            "GET",
            "/api/devices",
            Some(&device),
            &with_token(&valid),
            None,
        );
        assert_eq!(s, 200, "{list}");
        assert_eq!(list["devices"][0]["paired_by"], "alice@example.com");
        let denied = b
            .audit_lines()
            .into_iter()
            .filter(|l| l["event"] == "security.denied" && l["detail"]["gate"] == "access")
            .count();
        assert!(denied > 0, "the refusals were not audited");
    })
    .await
    .expect("no panic");
}
