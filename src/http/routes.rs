//! The phone API's handlers (SPEC §3.2): thin adapters from HTTP to [`crate::ops`].

mod stream;

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Caller;
use super::body::MAX_BODY;
use super::extract::{ApiPath, ApiQuery};
use crate::app::AppError;
use crate::app::{request_id, App};
use crate::ops::{self, Actor};
use crate::relay::lead::{self, Target};

/// The `/api` routes. Every one of them must be listed in [`super::tiers::ROUTES`].
pub(super) fn api() -> Router<App> {
    Router::new()
        .route("/api/health", get(health))
        .route("/api/pair", post(pair))
        .route("/api/machines", get(machines))
        .route("/api/settings", get(settings))
        .route("/api/devices", get(devices))
        .route("/api/devices/{label}", delete(revoke))
        .route("/api/panes", get(panes).post(create))
        .route("/api/panes/{m}/{p}", get(snapshot).delete(close))
        .route("/api/panes/{m}/{p}/stream", get(stream::stream))
        .route("/api/panes/{m}/{p}/input", post(input))
        .route("/api/panes/{m}/{p}/rename", post(rename))
        .route("/api/walky", get(walky_cards))
        .route("/api/walky/{id}", get(walky_card))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// The phone web app (SPEC §3.3): `/` and every file of [`crate::web::ASSETS`].
pub(super) fn web() -> Router<App> {
    crate::web::routes().route("/", get(index))
}

async fn index(headers: HeaderMap) -> Response {
    crate::web::index(&headers)
}

/// Parses a JSON body with an error that names the bad field.
fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, AppError> {
    serde_json::from_slice(bytes).map_err(|e| AppError::BadRequest(format!("invalid body: {e}")))
}

pub(super) fn actor_of(caller: &Caller) -> Actor {
    Actor {
        device: caller.audit_name(),
        request_id: request_id(),
        relayed_by: None,
    }
}

async fn health(State(ctx): State<App>) -> Json<Value> {
    Json(json!({
        "build": option_env!("COLLIE_BUILD").unwrap_or("dev"),
        "version": env!("CARGO_PKG_VERSION"),
        "crew_mode": ctx.crew_view.load().role,
        "counts_7d": ctx.counters.totals(),
        // Recorded breaks in the audit chain nobody acknowledged (`collie audit verify`).
        "audit_breaks": ctx.open_audit_breaks.load(std::sync::atomic::Ordering::Relaxed),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairBody {
    code: String,
    label: String,
}

async fn pair(
    State(ctx): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, AppError> {
    let source = super::auth::source_ip(&headers, peer);
    let b: PairBody = body(&bytes)?;
    if b.code.len() > 64 {
        return Err(AppError::InvalidCode);
    }
    let claimed = ops::claim(&ctx, b.code, b.label, source).await?;
    Ok(Json(json!({
        "token": claimed.token.expose_secret(),
        "device": {
            "label": claimed.device.label.as_str(),
            "tier": claimed.device.tier.as_str(),
            "expires_at": ops::rfc3339(claimed.device.expires_at),
        }
    })))
}

async fn machines(State(ctx): State<App>) -> Json<Value> {
    let view = ctx.crew_view.load();
    let mut machines = vec![json!({
        "name": ctx.machine.get(),
        "role": view.role,
        "online": true,
        "version": env!("CARGO_PKG_VERSION"),
    })];
    for m in view.members.iter() {
        machines.push(json!({
            "name": m.name,
            "role": "member",
            "online": m.online,
            "version": m.version,
        }));
    }
    Json(json!({ "machines": machines }))
}

async fn settings(State(ctx): State<App>) -> Json<Value> {
    Json(json!({
        "machine": ctx.machine.get(),
        "masking": ctx.masker.is_enabled(),
        "audit_content": ctx.audit_content.as_str(),
        "walky": ctx.walky_on,
        "tiers": ["read", "files", "full"],
    }))
}

async fn devices(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, AppError> {
    let current = match &caller {
        Caller::Device { label, .. } => Some(label.as_str()),
        _ => None,
    };
    let list: Vec<Value> = ops::devices(&ctx)
        .await?
        .iter()
        .map(|d| ops::device_json(d, current))
        .collect();
    Ok(Json(json!({ "devices": list })))
}

async fn revoke(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiPath(label): ApiPath<String>,
) -> Result<Json<Value>, AppError> {
    let is_self = matches!(&caller, Caller::Device { label: l, .. } if *l == label);
    let is_full = matches!(
        &caller,
        Caller::Device {
            tier: collie_actors::pairing::Tier::Full,
            ..
        }
    );
    if !is_self && !is_full {
        // A lower device reaching for another's token: a tier refusal like any other (SPEC §7).
        let rec = super::auth::denied_record(
            &ctx,
            &axum::http::Method::DELETE,
            caller.audit_name().as_deref(),
        )
        .with_detail("required", "full")
        .with_detail("label", label);
        super::auth::deny(
            &ctx,
            super::auth::source_of(&headers, peer),
            "insufficient tier",
            rec,
        );
        return Err(AppError::InsufficientTier);
    }
    let d = ops::revoke(&ctx, label, &actor_of(&caller)).await?;
    Ok(Json(json!({ "revoked": d.label.as_str() })))
}

async fn panes(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, AppError> {
    let actor = actor_of(&caller);
    let (local, (members, unreachable)) = tokio::join!(ops::panes(&ctx), lead::panes(&ctx, &actor));
    let mut panes = local?;
    panes.extend(members);
    Ok(Json(json!({ "panes": panes, "unreachable": unreachable })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotQuery {
    scrollback: Option<usize>,
}

async fn snapshot(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<SnapshotQuery>,
) -> Result<Response, AppError> {
    let lines = q.scrollback.unwrap_or(0).min(10_000);
    let snap = match lead::target(&ctx, &m)? {
        Target::Local => ops::snapshot(&ctx, p, lines).await?,
        Target::Member(member) => {
            lead::snapshot(&ctx, &member, &actor_of(&caller), p, lines).await?
        }
    };
    Ok(Json(snap).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputBody {
    text: Option<String>,
    keys: Option<Vec<String>>,
}

async fn input(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    bytes: Bytes,
) -> Result<Json<Value>, AppError> {
    let target = lead::target(&ctx, &m)?;
    let b: InputBody = body(&bytes)?;
    let (actor, text, keys) = (
        actor_of(&caller),
        b.text.unwrap_or_default(),
        b.keys.unwrap_or_default(),
    );
    match target {
        Target::Local => ops::input(&ctx, &actor, p, text, keys).await?,
        Target::Member(member) => lead::input(&ctx, &member, &actor, p, text, keys).await?,
    }
    Ok(Json(json!({ "ok": true })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    machine: String,
    name: Option<String>,
    starter: Option<String>,
}

async fn create(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<Value>, AppError> {
    let b: CreateBody = body(&bytes)?;
    let actor = actor_of(&caller);
    let info = match lead::target(&ctx, &b.machine)? {
        Target::Member(member) => lead::create(&ctx, &member, &actor, b.name, b.starter).await?,
        Target::Local if b.starter.is_some() => {
            return Err(AppError::BadRequest(
                "starter: no starters are configured on this machine".into(),
            ))
        }
        Target::Local => ops::create(&ctx, &actor, b.name, Vec::new()).await?,
    };
    Ok(Json(serde_json::to_value(info).unwrap_or_default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameBody {
    name: String,
}

async fn rename(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    bytes: Bytes,
) -> Result<Json<Value>, AppError> {
    let target = lead::target(&ctx, &m)?;
    let b: RenameBody = body(&bytes)?;
    let actor = actor_of(&caller);
    match target {
        Target::Local => ops::rename(&ctx, &actor, p, b.name).await?,
        Target::Member(member) => lead::rename(&ctx, &member, &actor, p, b.name).await?,
    }
    Ok(Json(json!({ "ok": true })))
}

async fn close(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
) -> Result<Json<Value>, AppError> {
    let actor = actor_of(&caller);
    match lead::target(&ctx, &m)? {
        Target::Local => ops::close(&ctx, &actor, p).await?,
        Target::Member(member) => lead::close(&ctx, &member, &actor, p).await?,
    }
    Ok(Json(json!({ "ok": true })))
}

async fn walky_cards(State(ctx): State<App>) -> Result<Json<Value>, AppError> {
    Ok(Json(crate::walky::inbox::cards(&ctx).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CardQuery {
    machine: Option<String>,
}

/// One walky card, from the log of `machine` (the machine whose pane shows the header; default
/// this one), asked through the relay for a member.
async fn walky_card(
    State(ctx): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<CardQuery>,
) -> Result<Json<Value>, AppError> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppError::BadRequest(
            "invalid message id: 32 hex digits".into(),
        ));
    }
    let card = match lead::target(&ctx, q.machine.as_deref().unwrap_or("local"))? {
        Target::Local => crate::walky::inbox::card_of(&ctx, &id).await?,
        Target::Member(member) => lead::walky_card(&ctx, &member, &actor_of(&caller), id).await?,
    };
    card.map(Json).ok_or(AppError::NoLogEntry)
}
