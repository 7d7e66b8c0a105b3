//! `GET /api/health`, `/api/machines`, `/api/settings`.

use axum::extract::State;
use axum::{Extension, Json};

use crate::app::status::SettingsView;
use crate::app::{App, Caller};
use crate::http::json::meta::{Health, Machines};

pub(super) async fn health(State(app): State<App>) -> Json<Health> {
    Json(Health::from(app.health()))
}

pub(super) async fn machines(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Json<Machines> {
    Json(Machines::from(app.machines_for(&caller)))
}

pub(super) async fn settings(State(app): State<App>) -> Json<SettingsView> {
    Json(app.settings())
}
