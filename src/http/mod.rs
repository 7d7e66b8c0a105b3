//! The phone API and the web app, served by axum on hyper (SPEC §3.2): an adapter over
//! [`crate::app`].
//!
//! Middlewares wrap every route: [`headers::security_headers`] (Host/Origin checks and the
//! response headers of §4.8) around everything, then around the API and `/mcp`
//! [`identity::gates`] (the identity a proxy vouches for, SPEC §14) and [`auth::authorize`] (who
//! asks, then the tier gate). Handlers are thin: they decode, call the application through [`App`], and
//! encode; [`error`] maps an [`AppError`] to its status and JSON body.

pub mod auth;
pub mod body;
pub mod error;
pub mod extract;
pub mod headers;
pub mod identity;
pub mod json;
pub mod mcp;
mod routes;
pub mod serve;
pub mod tiers;

use axum::middleware;
use axum::Router;

use crate::app::{App, AppError};

/// The whole HTTP application. The API's fallback and every route sit behind the auth middleware
/// (so an unknown route or method without a token gets `device not paired` first); an
/// authenticated request's body is then read whole, within limits, before any handler runs.
/// `/mcp` is read the same way before rmcp sees it: its limit is the tools' 24 MiB, checked
/// against `Content-Length` before any byte is read, and refused in the API's JSON shape (rmcp's
/// own limit waits for the body and answers in plain text); rmcp's other plain-text refusals are
/// answered in JSON too ([`mcp::json_rejections`]).
pub fn router(ctx: App) -> Router {
    let api = routes::api()
        .fallback(|| async { AppError::NotFound })
        .layer(middleware::from_fn(body::read_whole))
        .layer(middleware::from_fn_with_state(ctx.clone(), auth::authorize))
        .layer(middleware::from_fn_with_state(ctx.clone(), identity::gates));
    let mcp = Router::new()
        .route_service("/mcp", mcp::service(ctx.clone(), ctx.allowed_host_names()))
        .layer(middleware::from_fn(mcp::json_rejections))
        .layer(middleware::from_fn(body::read_whole))
        .layer(middleware::from_fn_with_state(ctx.clone(), mcp::authorize))
        .layer(middleware::from_fn_with_state(ctx.clone(), identity::gates));
    Router::new()
        .merge(api)
        .merge(mcp)
        .merge(routes::web())
        .layer(middleware::from_fn_with_state(
            ctx.clone(),
            headers::security_headers,
        ))
        .with_state(ctx)
}
