//! `GET /api/cards`, `GET /api/cards/stream` and `POST /api/cards/{id}/answer` (SPEC §10.1): the
//! waiting cards with the last receipts, their changes as they happen, and a device's tap.

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::{Extension, Json};
use futures_util::stream::{self, Stream};
use serde::{Deserialize, Serialize};

use super::body;
use crate::app::cards::{Answered, CardItem, CardTap};
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;
use crate::http::json::cards::{Card, CardList};

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<CardList>, AppError> {
    Ok(Json(CardList::from(app.crew_cards(&caller).await?)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerBody {
    option: String,
    shown: String,
    confirm: Option<String>,
    /// The card's `machine` (this one when absent).
    machine: Option<String>,
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
    let machine = b.machine.as_deref().unwrap_or("local");
    let tap = CardTap::new(id, b.option, b.shown, b.confirm);
    let reply = match app.run(&caller, machine, tap).await? {
        Answered::Confirm(confirm) => AnswerReply::Confirm { confirm },
        Answered::Done { delivered } => AnswerReply::Done {
            ok: true,
            delivered,
        },
    };
    Ok(Json(reply))
}

/// `GET /api/cards/stream`: Server-Sent Events — `cards` (every waiting card and the receipts;
/// first, and again after the stream fell behind), `card` (one card changed), and a last
/// `closed` with the reason when the caller's right to watch or the bridge's cards end.
pub(super) async fn stream(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let source = caller.source();
    let open = app.card_stream(caller, source).await?;
    let events = stream::unfold(open, |mut open| async move {
        let event = match open.next().await? {
            CardItem::All(all) => Event::default()
                .event("cards")
                .data(serde_json::to_string(&CardList::from(all)).unwrap_or_default()),
            CardItem::Change(card) => Event::default()
                .event("card")
                .data(serde_json::to_string(&Card::from(*card)).unwrap_or_default()),
            CardItem::Closed(error) => Event::default()
                .event("closed")
                .data(serde_json::to_string(&Closed { error }).unwrap_or_default()),
        };
        Some((Ok(event), open))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// The `data` of the `closed` event.
#[derive(Serialize)]
struct Closed {
    error: String,
}
