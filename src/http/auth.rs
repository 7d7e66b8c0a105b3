//! Authentication and the tier gate, one middleware in front of every `/api` request (SPEC §3.2,
//! §4.6, §11): it names the [`Caller`] handlers pass to the application.
//!
//! Order: an open route (`/api/health`, `/api/pair`) goes straight on. Every other request —
//! including an unknown route or an unsupported method — must first name a paired device (or
//! present the local secret for a read): without one it gets `403 device not paired`, quietly (a
//! counter and a rate-limited `security.denied` line, never a log line per request), so a scanner
//! learns nothing about which routes exist. Then an unknown route answers 404 and an unknown
//! method 405; then the tier registry decides (`insufficient tier`). All of this runs before the
//! handler, so a `read` device asking for a write gets `insufficient tier`, never `no such pane`.
//! The rules are the application's ([`crate::app::authn`]); this adapter reads the headers and the
//! route's tier.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use collie_actors::pairing::pairing_source;

use super::tiers::{self, Access};
use crate::app::authn::{Credential, Origin};
use crate::app::{App, AppError, Caller, Who};
use crate::identity::Vouched;

/// Where a request comes from, for rate limits: the peer, or behind a loopback proxy the last
/// `X-Forwarded-For` entry. Repeated `X-Forwarded-For` headers are one list (RFC 9110 §5.3), so
/// "the last entry" is the last one the nearest proxy added.
pub fn source_ip(headers: &HeaderMap, peer: SocketAddr) -> std::net::IpAddr {
    let xff: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let xff = (!xff.is_empty()).then(|| xff.join(","));
    pairing_source(peer.ip(), xff.as_deref())
}

/// [`source_ip`] as the text a denial line carries.
pub fn source_of(headers: &HeaderMap, peer: SocketAddr) -> String {
    source_ip(headers, peer).to_string()
}

/// The request as the application's authentication sees it.
pub fn origin(headers: &HeaderMap, method: &Method, peer: SocketAddr) -> Origin {
    Origin {
        peer: peer.ip(),
        proxied: ["x-forwarded-for", "forwarded", "x-real-ip"]
            .iter()
            .any(|h| headers.contains_key(*h)),
        source: source_of(headers, peer),
        method: method.as_str().to_owned(),
        reads: *method == Method::GET,
        identity: None,
    }
}

/// The middleware.
pub async fn authorize(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    matched: Option<MatchedPath>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    if !req.uri().path().starts_with("/api/") {
        // An unmatched path outside the API (the app's files are routed before this).
        return AppError::NotFound.into_response();
    }
    let method = req.method().clone();
    let access = matched
        .as_ref()
        .and_then(|m| tiers::required(&method, m.as_str()));
    // Who the identity gates vouched for (SPEC §14): they ran before this, and refused already.
    let identity = req.extensions().get::<Vouched>().and_then(|v| v.0.clone());
    if access == Some(Access::Open) {
        req.extensions_mut()
            .insert(Caller::new(Who::Open).with_identity(identity));
        return next.run(req).await;
    }
    let mut from = origin(req.headers(), &method, peer);
    from.identity = identity.clone();
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let caller = match app.authenticate(Credential::of(header), &from) {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let gate = match access {
        Some(access) => access.gate(),
        // Known to a paired caller only: which routes exist is not for strangers.
        None if matched.is_some() => return AppError::MethodNotAllowed.into_response(),
        None => return AppError::NotFound.into_response(),
    };
    if let Err(e) = app.admit(&caller, gate, &from) {
        return e.into_response();
    }
    req.extensions_mut().insert(caller.with_identity(identity));
    next.run(req).await
}
