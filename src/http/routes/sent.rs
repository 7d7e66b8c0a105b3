//! `/api/sent…` and `/api/commands…` (SPEC §11): the sent log — read, discard a line, clear a
//! machine — and one-shot commands with their recent list.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;

use super::body;
use crate::app::commands::{RecentCommands, RunCommand};
use crate::app::sent::{Discarded, SentDiscard, SentList};
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;
use crate::http::json::panes::CommandRan;

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<SentList>, AppError> {
    Ok(Json(app.sent_list(&caller).await?))
}

pub(super) async fn discard(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, id)): ApiPath<(String, u64)>,
) -> Result<Json<Discarded>, AppError> {
    Ok(Json(
        app.run(&caller, &m, SentDiscard { id: Some(id) }).await?,
    ))
}

pub(super) async fn clear(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(m): ApiPath<String>,
) -> Result<Json<Discarded>, AppError> {
    Ok(Json(app.run(&caller, &m, SentDiscard { id: None }).await?))
}

/// `POST /api/commands`: the line, and the machine it runs on (this one when absent).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CommandBody {
    machine: Option<String>,
    command: String,
}

pub(super) async fn run(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<CommandRan>, AppError> {
    let b: CommandBody = body(&bytes)?;
    let machine = b.machine.as_deref().unwrap_or("local");
    let op = RunCommand { command: b.command };
    Ok(Json(CommandRan::from(app.run(&caller, machine, op).await?)))
}

pub(super) async fn recent(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<RecentCommands>, AppError> {
    Ok(Json(app.recent_commands(&caller).await?))
}
