//! `GET /api/health`, `/api/machines`, `/api/settings`.

use axum::extract::State;
use axum::Json;

use crate::app::status::{Health, Machines, SettingsView};
use crate::app::App;

pub(super) async fn health(State(app): State<App>) -> Json<Health> {
    Json(app.health())
}

pub(super) async fn machines(State(app): State<App>) -> Json<Machines> {
    Json(app.machines())
}

pub(super) async fn settings(State(app): State<App>) -> Json<SettingsView> {
    Json(app.settings())
}
