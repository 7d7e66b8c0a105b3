//! HTTP reads against a bridge's API on loopback, on keep-alive connections: the figures are
//! meant to show the bridge's cost, not a TCP handshake per request.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Stats;

/// Unmeasured requests before each measured run, to open the keep-alive connection and fill
/// caches.
pub(crate) const HTTP_WARM_UP: usize = 100;

/// A keep-alive HTTP client (`ureq` reuses the connection once a body is read to its end).
pub(crate) fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(15))
        .build()
}

/// GETs `url` with the `Authorization` header `auth` and reads the whole body (so the connection
/// is reused); returns the status and the body. Error statuses are answers too: a bench may
/// measure a 404.
pub(crate) fn get(agent: &ureq::Agent, url: &str, auth: &str) -> (u16, Vec<u8>) {
    let resp = match agent.get(url).set("Authorization", auth).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let status = resp.status();
    let mut body = Vec::new();
    resp.into_reader()
        .read_to_end(&mut body)
        .unwrap_or_else(|e| panic!("GET {url}: reading the body: {e}"));
    (status, body)
}

/// [`get`], panicking unless the answer is 200; returns the body.
pub(crate) fn get_ok(agent: &ureq::Agent, url: &str, auth: &str) -> Vec<u8> {
    let (status, body) = get(agent, url, auth);
    assert_eq!(status, 200, "GET {url}: {}", String::from_utf8_lossy(&body));
    body
}

/// [`get`] of a JSON answer; `None` unless it is a 200 with a JSON body (for polling).
pub(crate) fn get_json(agent: &ureq::Agent, url: &str, auth: &str) -> Option<Value> {
    let (status, body) = get(agent, url, auth);
    (status == 200)
        .then(|| serde_json::from_slice(&body).ok())
        .flatten()
}

/// `n` sequential GETs on one keep-alive agent after [`HTTP_WARM_UP`] unmeasured ones, each
/// answered with `status`; returns the times and the answer's size.
pub(crate) fn measure_get(
    agent: &ureq::Agent,
    url: &str,
    auth: &str,
    status: u16,
    n: usize,
) -> (Stats, usize) {
    let mut bytes = 0;
    let mut times = Vec::with_capacity(n);
    for i in 0..HTTP_WARM_UP + n {
        let t = Instant::now();
        let (got, body) = get(agent, url, auth);
        let took = t.elapsed();
        assert_eq!(got, status, "GET {url}: {}", String::from_utf8_lossy(&body));
        bytes = body.len();
        if i >= HTTP_WARM_UP {
            times.push(took);
        }
    }
    (Stats::of(times), bytes)
}
