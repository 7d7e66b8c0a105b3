//! The phone API's routes (SPEC §3.2), one file per resource. Every handler decodes (typed bodies,
//! `ApiPath`/`ApiQuery`), calls [`crate::app`] with the [`Caller`] the auth middleware named, and
//! encodes a typed answer; no rule lives here.

mod blobs;
mod browse;
mod cards;
mod colours;
mod devices;
mod durable;
mod files;
#[cfg(test)]
mod fuzz;
mod meta;
mod panes;
mod push;
mod sent;
mod speech;
mod stream;
mod tools;
mod walky;

use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::body::MAX_TOOL_BODY;
use crate::app::{App, AppError};

/// The `/api` routes. Every one of them must be listed in [`super::tiers::ROUTES`].
pub(super) fn api() -> Router<App> {
    Router::new()
        .route("/api/health", get(meta::health))
        .route("/api/pair", post(devices::pair))
        .route("/api/machines", get(meta::machines))
        .route("/api/settings", get(meta::settings))
        .route("/api/devices", get(devices::list))
        .route("/api/devices/{label}", delete(devices::revoke))
        .route("/api/notices", get(devices::notices))
        .route("/api/panes", get(panes::list).post(panes::create))
        .route(
            "/api/panes/{m}/{p}",
            get(panes::snapshot).delete(panes::close),
        )
        .route("/api/panes/{m}/{p}/stream", get(stream::stream))
        .route("/api/panes/{m}/{p}/chat", get(panes::chat))
        .route("/api/panes/{m}/{p}/input", post(panes::input))
        .route("/api/panes/{m}/{p}/rename", post(panes::rename))
        .route("/api/walky", get(walky::cards))
        .route("/api/walky/{id}", get(walky::card))
        .route("/api/cards", get(cards::list))
        .route("/api/cards/stream", get(cards::stream))
        .route("/api/cards/{id}/answer", post(cards::answer))
        .route("/api/durable", get(durable::list))
        .route(
            "/api/durable/{name}/{conversation}/{verb}",
            post(durable::write),
        )
        .route("/api/push/key", get(push::key))
        .route(
            "/api/push/subscribe",
            get(push::view)
                .post(push::subscribe)
                .delete(push::unsubscribe),
        )
        .route("/api/tools/{tool}", post(tools::call))
        .route("/api/sent", get(sent::list))
        .route("/api/sent/{m}", delete(sent::clear))
        .route("/api/sent/{m}/{id}", delete(sent::discard))
        .route("/api/starters/{m}", get(panes::starters))
        .route("/api/sessions/{m}", get(panes::sessions))
        .route("/api/starters/{m}/rows", post(panes::add_row))
        .route("/api/starters/{m}/rows/{id}", delete(panes::remove_row))
        .route("/api/commands", post(sent::run))
        .route("/api/commands/recent", get(sent::recent))
        .route("/api/files/{m}/list", get(files::list))
        .route("/api/files/{m}/read", get(files::read))
        .route("/api/files/{m}/changes", get(files::changes))
        .route("/api/browse/{m}", get(browse::browse))
        .route("/api/blobs", post(blobs::upload))
        .route("/api/blobs/{id}", get(blobs::blob))
        .route("/api/speech/{m}", post(speech::transcribe))
        .layer(DefaultBodyLimit::max(MAX_TOOL_BODY))
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

/// `{"ok": true}`, the answer of a write with nothing else to say.
#[derive(Serialize)]
struct Done {
    ok: bool,
}

const DONE: Done = Done { ok: true };
