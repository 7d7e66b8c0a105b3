//! `GET /api/push/key`, `GET|POST|DELETE /api/push/subscribe` (SPEC §10.4): the bridge's VAPID
//! public key, and the asking device's Web Push subscription.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::body;
use crate::app::push::PushView;
use crate::app::{App, AppError, Caller};

/// `{"key": "<base64url>"}`: the phone's `applicationServerKey`.
#[derive(Serialize)]
pub(super) struct Key {
    key: String,
}

pub(super) async fn key(State(app): State<App>) -> Result<Json<Key>, AppError> {
    Ok(Json(Key {
        key: app.push_key().await?,
    }))
}

/// The browser's `PushSubscription.toJSON()`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubscribeBody {
    endpoint: String,
    keys: SubscriptionKeys,
    /// Sent by browsers (usually null); not used.
    #[serde(rename = "expirationTime", default)]
    _expiration_time: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubscriptionKeys {
    p256dh: String,
    auth: String,
}

pub(super) async fn subscribe(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<PushView>, AppError> {
    let b: SubscribeBody = body(&bytes)?;
    app.push_subscribe(&caller, b.endpoint, b.keys.p256dh, b.keys.auth)
        .await?;
    Ok(Json(app.push_view(&caller).await?))
}

pub(super) async fn unsubscribe(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<PushView>, AppError> {
    app.push_unsubscribe(&caller).await?;
    Ok(Json(app.push_view(&caller).await?))
}

pub(super) async fn view(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<PushView>, AppError> {
    Ok(Json(app.push_view(&caller).await?))
}
