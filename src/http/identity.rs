//! The identity gates in front of the API (SPEC §14): a middleware outside [`super::auth`] that
//! runs every configured gate for every `/api` request but `/api/health` — `POST /api/pair`
//! included, and `/mcp` — and puts who they vouched for in the request's extensions, where the
//! auth middleware attaches it to the [`crate::app::Caller`]. A refusal is `403 identity required`
//! with the gate's name, before the request names a device: pairing and identity must both pass,
//! and a stranger learns nothing of the routes.
//!
//! Which peer is the proxy is [`crate::identity::is_proxy`]'s to say (a loopback peer); the
//! headers of any other peer are never read.

use std::net::SocketAddr;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::origin;
use crate::app::App;
use crate::identity::{is_proxy, Seen, Vouched};

/// The one open route the gates leave alone: it names no one (SPEC §4.7).
const HEALTH: &str = "/api/health";

/// The middleware.
pub async fn gates(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let path = req.uri().path();
    let gated = path == "/mcp" || (path.starts_with("/api/") && path != HEALTH);
    if !gated || !app.has_gates() {
        return next.run(req).await;
    }
    let from = origin(req.headers(), req.method(), peer);
    let seen = Seen::new(req.headers(), is_proxy(peer.ip()), SystemTime::now());
    match app.vouch(&seen, &from) {
        Ok(identity) => {
            req.extensions_mut().insert(Vouched(identity));
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}
