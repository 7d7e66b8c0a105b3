//! `/api/panes…` (SPEC §3.2, §5): the list, a snapshot, input, create, rename, close — for a pane of
//! this machine or a member's alike (the application resolves the machine).

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;

use super::colours::SnapshotJson;
use super::{body, Done, DONE};
use crate::app::chat::ReadChat;
use crate::app::create::CreateAsk;
use crate::app::pane_writes::{PaneClose, PaneInput, PaneRename};
use crate::app::panes::ReadScreen;
use crate::app::windows::ListSessions;
use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};
use crate::http::json::chat::Chat;
use crate::http::json::panes::{Pane, PaneList, SessionList};

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<PaneList>, AppError> {
    Ok(Json(PaneList::from(app.pane_list(&caller).await?)))
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
) -> Result<Response, AppError> {
    let op = ReadScreen {
        pane: p,
        scrollback: q.scrollback.unwrap_or(0),
    };
    let snap = app.run(&caller, &m, op).await?;
    Ok(Json(SnapshotJson::new(&snap)).into_response())
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
    Ok(Json(Chat::from(
        app.run(
            &caller,
            &m,
            ReadChat {
                pane: p,
                after: q.after.unwrap_or_default(),
            },
        )
        .await?,
    )))
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
    let op = PaneInput {
        pane: p,
        text: b.text.unwrap_or_default(),
        keys: b.keys.unwrap_or_default(),
    };
    app.run(&caller, &m, op).await?;
    Ok(Json(DONE))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateBody {
    machine: String,
    name: Option<String>,
    starter: Option<String>,
    /// A starter row phones added (its id; exclusive with `starter`; decision 0041).
    row: Option<String>,
    /// The device confirms, once, a starter that skips the agent's permission prompts (SPEC §12).
    #[serde(default)]
    confirm_no_prompts: bool,
    /// The folder the pane starts in (absolute or `~/…`), inside one of the machine's
    /// workspaces.
    folder: Option<String>,
    /// A tmux session of the machine (`t<i>:<name>`, as `GET /api/sessions/{m}` lists it): open
    /// a new window there instead of a hosted pane (decision 0042).
    session: Option<String>,
}

pub(super) async fn create(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    bytes: Bytes,
) -> Result<Json<Pane>, AppError> {
    let b: CreateBody = body(&bytes)?;
    let ask = CreateAsk {
        machine: b.machine,
        name: b.name,
        starter: b.starter,
        row: b.row,
        command: Vec::new(),
        folder: b.folder,
        session: b.session,
        confirm_no_prompts: b.confirm_no_prompts,
    };
    Ok(Json(Pane::from(app.new_pane(&caller, ask).await?)))
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
    app.run(
        &caller,
        &m,
        PaneRename {
            pane: p,
            name: b.name,
        },
    )
    .await?;
    Ok(Json(DONE))
}

pub(super) async fn close(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, p)): ApiPath<(String, String)>,
) -> Result<Json<Done>, AppError> {
    app.run(&caller, &m, PaneClose { pane: p }).await?;
    Ok(Json(DONE))
}

/// `GET /api/sessions/{m}`: the tmux sessions the machine mirrors, where a new window can open
/// (decision 0042).
pub(super) async fn sessions(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(m): ApiPath<String>,
) -> Result<Json<SessionList>, AppError> {
    Ok(Json(SessionList::from(
        app.run(&caller, &m, ListSessions).await?,
    )))
}

/// `GET /api/starters/{m}`: the machine's applied starters for the New page (SPEC §12).
pub(super) async fn starters(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(m): ApiPath<String>,
) -> Result<Json<crate::app::starters::StarterList>, AppError> {
    Ok(Json(app.starters(&caller, &m).await?))
}

/// `POST /api/starters/{m}/rows`: a phone adds a starter row (decision 0041).
pub(super) async fn add_row(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(m): ApiPath<String>,
    bytes: Bytes,
) -> Result<Json<crate::app::rows::RowView>, AppError> {
    let b: crate::app::rows::NewRow = body(&bytes)?;
    Ok(Json(app.add_row(&caller, &m, b).await?))
}

/// `DELETE /api/starters/{m}/rows/{id}`: a phone removes a starter row.
pub(super) async fn remove_row(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((m, id)): ApiPath<(String, String)>,
) -> Result<Json<Done>, AppError> {
    app.remove_row(&caller, &m, &id).await?;
    Ok(Json(DONE))
}
