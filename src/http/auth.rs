//! Authentication and the tier gate, one middleware on every `/api` route (SPEC §3.2, §4.6, §11).
//!
//! Order: look the route up in the tier registry (unknown → refused), then authenticate the caller
//! from the current policy snapshot (never the store, never a name the request carries), then compare
//! tiers. This runs before the handler, so a `read` device asking for a write gets `insufficient
//! tier`, never `no such pane`. Denials for tier or expiry are audited as `security.denied`.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::{AuthError, PairingMsg, Tier};
use subtle_compare::ct_eq_str;

use super::error::ApiError;
use super::tiers::{self, Access};
use super::Ctx;

/// Who is calling, attached to the request for handlers.
#[derive(Debug, Clone)]
pub enum Caller {
    /// An open route; nobody authenticated.
    Open,
    /// A paired device.
    Device {
        /// Its label.
        label: String,
        /// Its tier at the time of the request.
        tier: Tier,
    },
    /// The CLI presenting the local secret (reads only).
    Local,
}

impl Caller {
    /// The device label for audit lines (`local` for the CLI).
    pub fn audit_name(&self) -> Option<String> {
        match self {
            Caller::Open => None,
            Caller::Device { label, .. } => Some(label.clone()),
            Caller::Local => Some("local-cli".into()),
        }
    }
}

/// The middleware.
pub async fn authorize(
    State(ctx): State<Ctx>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    matched: Option<MatchedPath>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let Some(pattern) = matched.as_ref().map(|m| m.as_str().to_string()) else {
        return ApiError::NotFound.into_response();
    };
    let Some(access) = tiers::required(&method, &pattern) else {
        tracing::error!(%method, %pattern, "route missing from the tier registry; refused");
        return ApiError::InsufficientTier.into_response();
    };
    let caller = match access {
        Access::Open => Caller::Open,
        Access::Device(required) => {
            match authenticate(&ctx, &method, req.headers(), peer, required).await {
                Ok(c) => c,
                Err(e) => {
                    ctx.counters.denied();
                    return e.into_response();
                }
            }
        }
    };
    if matches!(caller, Caller::Device { .. } | Caller::Local) {
        if method == Method::GET {
            ctx.counters.read();
        } else {
            ctx.counters.write();
        }
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

async fn authenticate(
    ctx: &Ctx,
    method: &Method,
    headers: &HeaderMap,
    peer: SocketAddr,
    required: Tier,
) -> Result<Caller, ApiError> {
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
            return Ok(Caller::Local);
        }
        return Err(ApiError::NotPaired);
    }
    let token = value.strip_prefix("Bearer ").unwrap_or("").trim();
    let now = time::OffsetDateTime::now_utc();
    let policy = ctx.policy.load();
    match policy.authorize(token, required, now) {
        Ok(dev) => {
            ctx.pairing_touch(dev.label.as_str());
            Ok(Caller::Device {
                label: dev.label.as_str().to_string(),
                tier: dev.tier,
            })
        }
        Err(AuthError::NotPaired) => Err(ApiError::NotPaired),
        Err(AuthError::Unavailable) => {
            // The phone keeps its token and retries; ask the pairing actor to read the store again.
            let _ = ctx.pairing.cast(PairingMsg::Retry);
            Err(ApiError::PairingUnavailable)
        }
        Err(e @ (AuthError::Expired | AuthError::InsufficientTier)) => {
            // The token is known: name the device in the audit line. Asking for the lowest tier at
            // the start of time cannot fail for a known token, so this only looks the device up.
            let who = policy.authorize(token, Tier::Read, time::OffsetDateTime::UNIX_EPOCH);
            let (label, tier) = who
                .map(|d| (d.label.as_str().to_string(), Some(d.tier)))
                .unwrap_or_else(|_| ("unknown".into(), None));
            if e == AuthError::Expired {
                audit_denied(ctx, &label, "device expired", required, None, method).await;
                Err(ApiError::Expired)
            } else {
                audit_denied(ctx, &label, "insufficient tier", required, tier, method).await;
                Err(ApiError::InsufficientTier)
            }
        }
        Err(_) => Err(ApiError::NotPaired),
    }
}

async fn audit_denied(
    ctx: &Ctx,
    label: &str,
    reason: &str,
    required: Tier,
    tier: Option<Tier>,
    method: &Method,
) {
    let mut detail = serde_json::Map::new();
    detail.insert("reason".into(), reason.into());
    detail.insert("method".into(), method.as_str().into());
    detail.insert("required".into(), required.as_str().into());
    if let Some(t) = tier {
        detail.insert("tier".into(), t.as_str().into());
    }
    let rec = AuditRecord {
        event: AuditEventKind::SecurityDenied,
        machine: ctx.machine.clone(),
        session: None,
        device: Some(label.to_string()),
        request_id: Some(super::request_id()),
        detail,
    };
    if let Err(e) = ctx.audit(rec).await {
        tracing::warn!(error = %e, "could not audit a denial");
    }
}

mod subtle_compare {
    use subtle::ConstantTimeEq;

    /// Constant-time string equality (lengths may leak; the secret's length is public).
    pub(super) fn ct_eq_str(a: &str, b: &str) -> bool {
        !b.is_empty() && a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
    }
}
