//! `GET /api/cards` and `POST /api/cards/{id}/answer` (SPEC §10.1): the waiting cards with the
//! last receipts, and a device's tap.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use collie_actors::cards::actor::CardList;
use serde::{Deserialize, Serialize};

use super::body;
use crate::app::cards::Answered;
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;

pub(super) async fn list(State(app): State<App>) -> Result<Json<CardList>, AppError> {
    Ok(Json(app.cards().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerBody {
    option: String,
    shown: String,
    confirm: Option<String>,
}

/// The answer to a tap: a token to confirm "Always allow" with, or done.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum AnswerReply {
    Confirm { confirm: String },
    Done { ok: bool, delivered: bool },
}

pub(super) async fn answer(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    bytes: Bytes,
) -> Result<Json<AnswerReply>, AppError> {
    let b: AnswerBody = body(&bytes)?;
    let reply = match app
        .answer_card(&caller, id, b.option, b.shown, b.confirm)
        .await?
    {
        Answered::Confirm(confirm) => AnswerReply::Confirm { confirm },
        Answered::Done { delivered } => AnswerReply::Done {
            ok: true,
            delivered,
        },
    };
    Ok(Json(reply))
}
