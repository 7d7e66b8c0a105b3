//! `/api/panes…` (SPEC §3.2, §5): the list, a snapshot, input, create, rename, close — for a pane of
//! this machine or a member's alike (the application resolves the machine).

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use collie_actors::chat::Chat;
use collie_actors::panes::actor::{PaneInfo, PaneSnapshot};
use serde::Deserialize;

use super::{body, Done, DONE};
use crate::app::panes::{Launch, PaneList};
use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<PaneList>, AppError> {
    Ok(Json(app.pane_list(&caller).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SnapshotQuery {
    scrollback: Option<usize>,
}

pub(super) async fn snapshot(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<SnapshotQuery>,
) -> Result<Json<PaneSnapshot>, AppError> {
    let snap = app
        .snapshot(&caller, &m, p, q.scrollback.unwrap_or(0))
        .await?;
    Ok(Json(snap))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChatQuery {
    after: Option<String>,
}

/// `GET /api/panes/{m}/{p}/chat?after=<cursor>`: the agent's turns (SPEC §3.3). The phone polls
/// with the cursor of the last answer to follow new turns.
pub(super) async fn chat(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<ChatQuery>,
) -> Result<Json<Chat>, AppError> {
    Ok(Json(
        app.chat(&caller, &m, p, q.after.unwrap_or_default())
            .await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InputBody {
    text: Option<String>,
    keys: Option<Vec<String>>,
}

pub(super) async fn input(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    bytes: Bytes,
) -> Result<Json<Done>, AppError> {
    let b: InputBody = body(&bytes)?;
    app.input(
        &caller,
        &m,
        p,
        b.text.unwrap_or_default(),
        b.keys.unwrap_or_default(),
    )
    .await?;
    Ok(Json(DONE))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateBody {
    machine: String,
    name: Option<String>,
    starter: Option<String>,
    /// The device confirms, once, a starter that skips the agent's permission prompts (SPEC §12).
    #[serde(default)]
    confirm_no_prompts: bool,
    /// The folder the pane starts in (absolute or `~/…`), inside one of the machine's
    /// workspaces.
    folder: Option<String>,
}

pub(super) async fn create(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<PaneInfo>, AppError> {
    let b: CreateBody = body(&bytes)?;
    Ok(Json(match b.starter {
        Some(starter) => {
            app.start_starter(
                &caller,
                &b.machine,
                starter,
                b.name,
                b.folder,
                b.confirm_no_prompts,
            )
            .await?
        }
        None => {
            app.create_pane_in(&caller, &b.machine, b.name, Launch::Shell, b.folder)
                .await?
        }
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RenameBody {
    name: String,
}

pub(super) async fn rename(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
    bytes: Bytes,
) -> Result<Json<Done>, AppError> {
    let b: RenameBody = body(&bytes)?;
    app.rename_pane(&caller, &m, p, b.name).await?;
    Ok(Json(DONE))
}

pub(super) async fn close(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
) -> Result<Json<Done>, AppError> {
    app.close_pane(&caller, &m, p).await?;
    Ok(Json(DONE))
}

/// `GET /api/starters/{m}`: the machine's applied starters for the New page (SPEC §12).
pub(super) async fn starters(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(m): ApiPath<String>,
) -> Result<Json<crate::app::starters::StarterList>, AppError> {
    Ok(Json(app.starters(&caller, &m).await?))
}
