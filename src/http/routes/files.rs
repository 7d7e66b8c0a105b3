//! `GET /api/files/{m}/list|read|changes` (SPEC §11, "File view and browse"): the phone's Files
//! and Changes views. Tier `files` in the route table; the rules (the tools' workspaces, the
//! `.git` rule, masking, audit) are [`crate::app::files`]'s. Answers are `private, no-store`, as
//! every API answer.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;

use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct At {
    /// A folder or file; empty or absent: the workspace root.
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Scope {
    /// A folder; empty or absent: the pane's folder, or the workspace root.
    #[serde(default)]
    path: String,
    /// A pane of this machine whose folder is looked at.
    pane: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Page {
    path: String,
    /// First line (0-based).
    #[serde(default)]
    offset: u64,
    /// Lines wanted.
    length: Option<u64>,
}

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(machine): ApiPath<String>,
    ApiQuery(q): ApiQuery<At>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(app.browse(&caller, &machine, &q.path).await?))
}

pub(super) async fn read(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(machine): ApiPath<String>,
    ApiQuery(q): ApiQuery<Page>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(
        app.open_file(&caller, &machine, &q.path, q.offset, q.length)
            .await?,
    ))
}

pub(super) async fn changes(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(machine): ApiPath<String>,
    ApiQuery(q): ApiQuery<Scope>,
) -> Result<Json<Value>, AppError> {
    Ok(Json(
        app.changes(&caller, &machine, &q.path, q.pane.as_deref())
            .await?,
    ))
}
