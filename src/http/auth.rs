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
//! The caller is authenticated from the current policy snapshot (never the store, never a name the
//! request carries).

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::{pairing_source, AuthError, PairingMsg, Tier, TokenHash};
use subtle_compare::ct_eq_str;

use super::tiers::{self, Access};
use crate::app::AppError;
use crate::app::{App, Caller, Who};

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

/// Records a refusal (see [`App::deny`]).
pub fn deny(app: &App, source: String, reason: &str, record: AuditRecord) {
    app.deny(source, reason, record);
}

/// A `security.denied` record of this request.
pub fn denied_record(app: &App, method: &Method, device: Option<&str>) -> AuditRecord {
    let mut rec = AuditRecord::new(AuditEventKind::SecurityDenied, app.machine.get())
        .with_request_id(crate::app::request_id())
        .with_detail("method", method.as_str());
    if let Some(d) = device {
        rec = rec.with_device(d);
    }
    rec
}

/// The middleware.
pub async fn authorize(
    State(ctx): State<App>,
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
    if access == Some(Access::Open) {
        req.extensions_mut().insert(Caller::new(Who::Open));
        return next.run(req).await;
    }
    let caller = match identify(&ctx, &method, req.headers(), peer) {
        Ok(caller) => caller.from_source(source_of(req.headers(), peer)),
        Err((e, device)) => {
            let source = source_of(req.headers(), peer);
            let rec = denied_record(&ctx, &method, device.as_deref());
            deny(&ctx, source, &e.to_string(), rec);
            return e.into_response();
        }
    };
    let required = match access {
        Some(Access::Device(tier)) => tier,
        Some(Access::Open) => Tier::Read,
        // Known to a paired caller only: which routes exist is not for strangers.
        None if matched.is_some() => return AppError::MethodNotAllowed.into_response(),
        None => return AppError::NotFound.into_response(),
    };
    if let Who::Device { label, tier, .. } = caller.who() {
        if !tier.allows(required) {
            let source = source_of(req.headers(), peer);
            let rec = denied_record(&ctx, &method, Some(label))
                .with_detail("required", required.as_str())
                .with_detail("tier", tier.as_str());
            deny(&ctx, source, "insufficient tier", rec);
            return AppError::InsufficientTier.into_response();
        }
    }
    if method == Method::GET {
        ctx.counters.read();
    } else {
        ctx.counters.write();
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// The caller a request names, or why it names none (with the device label when the token is
/// known, for the audit line).
fn identify(
    ctx: &App,
    method: &Method,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Caller, (AppError, Option<String>)> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if let Some(secret) = value.strip_prefix("Local ") {
        // The local secret is only ever a read credential, and only from this machine, and never
        // through a proxy (SPEC §4.6). Anything else gets `device not paired`.
        let proxied = ["x-forwarded-for", "forwarded", "x-real-ip"]
            .iter()
            .any(|h| headers.contains_key(*h));
        let from_here = peer.ip().is_loopback() || peer.ip() == ctx.bind_host;
        if *method == Method::GET
            && !proxied
            && from_here
            && ct_eq_str(secret.trim(), &ctx.local_secret)
        {
            return Ok(Caller::new(Who::LocalSecret));
        }
        return Err((AppError::NotPaired, None));
    }
    let token = TokenHash::from_presented(value.strip_prefix("Bearer ").unwrap_or("").trim());
    let now = time::OffsetDateTime::now_utc();
    let policy = ctx.policy.load();
    // The lowest tier: who the device is; the route's tier is compared by the caller.
    match policy.authorize_hash(&token, Tier::Read, now) {
        Ok(dev) => {
            ctx.pairing_touch(dev.label.as_str());
            Ok(Caller::new(Who::Device {
                label: dev.label.as_str().to_string(),
                tier: dev.tier,
                token,
            }))
        }
        Err(AuthError::Unavailable) => {
            // The phone keeps its token and retries; ask the pairing actor to read the store again.
            let _ = ctx.pairing.cast(PairingMsg::Retry);
            Err((AppError::PairingUnavailable, None))
        }
        Err(AuthError::Expired) => {
            // The token is known: name the device in the audit line. Asking at the start of time
            // cannot fail for a known token, so this only looks the device up.
            let label = policy
                .authorize_hash(&token, Tier::Read, time::OffsetDateTime::UNIX_EPOCH)
                .map(|d| d.label.as_str().to_string())
                .ok();
            Err((AppError::Expired, label))
        }
        Err(_) => Err((AppError::NotPaired, None)),
    }
}

mod subtle_compare {
    use subtle::ConstantTimeEq;

    /// Constant-time string equality (lengths may leak; the secret's length is public).
    pub(super) fn ct_eq_str(a: &str, b: &str) -> bool {
        !b.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
    }
}
