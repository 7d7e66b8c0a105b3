//! `GET /api/browse/{m}?path=P` (SPEC §11, "File view and browse"): folder names under a
//! machine's home folder, for choosing where a new pane runs. Tier `files` in the route table;
//! the rules are [`crate::app::browse`]'s.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;

use crate::app::browse::{BrowseFolders, Browsed};
use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct At {
    /// A folder (`~/…`, absolute, or relative to home); absent or empty: the home folder.
    path: Option<String>,
}

pub(super) async fn browse(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(machine): ApiPath<String>,
    ApiQuery(q): ApiQuery<At>,
) -> Result<Json<Browsed>, AppError> {
    let op = BrowseFolders { path: q.path };
    Ok(Json(app.run(&caller, &machine, op).await?))
}
