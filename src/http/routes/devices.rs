//! `POST /api/pair`, `GET /api/devices`, `DELETE /api/devices/{label}`, `GET /api/notices`
//! (SPEC §4).

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use collie_actors::rfc3339;
use serde::{Deserialize, Serialize};

use super::body;
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;
use crate::http::json::devices::{Device, Notices};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PairBody {
    code: String,
    label: String,
}

/// The device a claim paired.
#[derive(Serialize)]
pub(super) struct PairedDevice {
    label: String,
    tier: &'static str,
    expires_at: Option<String>,
}

/// `POST /api/pair`: the token, shown once, and the device.
#[derive(Serialize)]
pub(super) struct Paired {
    token: String,
    device: PairedDevice,
}

pub(super) async fn pair(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Paired>, AppError> {
    let source = crate::http::auth::source_ip(&headers, peer);
    let b: PairBody = body(&bytes)?;
    let claimed = app.claim_as(&caller, b.code, b.label, source).await?;
    Ok(Json(Paired {
        token: claimed.token.expose_secret().to_owned(),
        device: PairedDevice {
            label: claimed.device.label.as_str().to_owned(),
            tier: claimed.device.tier.as_str(),
            expires_at: claimed.device.expires_at.and_then(rfc3339::format),
        },
    }))
}

/// `GET /api/devices`.
#[derive(Serialize)]
pub(super) struct Devices {
    devices: Vec<Device>,
}

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Devices>, AppError> {
    Ok(Json(Devices {
        devices: app
            .devices(&caller)
            .await?
            .into_iter()
            .map(Device::from)
            .collect(),
    }))
}

/// `DELETE /api/devices/{label}`.
#[derive(Serialize)]
pub(super) struct Revoked {
    revoked: String,
}

pub(super) async fn revoke(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(label): ApiPath<String>,
) -> Result<Json<Revoked>, AppError> {
    let d = app.revoke(&caller, label).await?;
    Ok(Json(Revoked {
        revoked: d.label.as_str().to_owned(),
    }))
}

/// `GET /api/notices`: the pairings of the last day, but the asking device's own (SPEC §4.6).
pub(super) async fn notices(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Notices>, AppError> {
    Ok(Json(Notices::from(app.notices(&caller).await?)))
}
