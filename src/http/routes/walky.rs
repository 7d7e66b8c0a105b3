//! `GET /api/walky` and `GET /api/walky/{id}` (SPEC §9): the phone's walky cards.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;

use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};
use crate::http::json::walky::{Card, Cards};

pub(super) async fn cards(State(app): State<App>) -> Result<Json<Cards>, AppError> {
    Ok(Json(Cards::from(
        crate::app::walky::inbox::cards(&app).await?,
    )))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CardQuery {
    machine: Option<String>,
}

/// One walky card, from the log of `machine` (the machine whose pane shows the header; default
/// this one), asked through the relay for a member.
pub(super) async fn card(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<CardQuery>,
) -> Result<Json<Card>, AppError> {
    let machine = q.machine.as_deref().unwrap_or("local");
    Ok(Json(Card::from(
        crate::app::walky::inbox::card_at(&app, &caller, machine, &id).await?,
    )))
}
