//! `POST /api/tools/{tool}` (SPEC §11): a device's call of one tool, JSON in and JSON out. The
//! body is the tool's arguments (an object; `machine` names a crew member); everything else —
//! the tool's tier, validation, audit, masking, relaying — is [`App::call_tool`]'s.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use serde_json::Value;

use super::body;
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;

pub(super) async fn call(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(tool): ApiPath<String>,
    bytes: Bytes,
) -> Result<Json<Value>, AppError> {
    let args: Value = if bytes.is_empty() {
        Value::Null
    } else {
        body(&bytes)?
    };
    Ok(Json(app.call_tool(&caller, &tool, args).await?))
}
