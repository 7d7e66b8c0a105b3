//! `POST /api/speech/{m}` (SPEC §16): a dictation's recording as the body (`Content-Type:
//! audio/wav`, at most 2 MiB, refused by the body limit before more is read), the text back as
//! `{"text"}`. `{m}` names the machine of the pane the text is for; the rules are
//! [`crate::app::speech`]'s.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::{Extension, Json};

use crate::app::speech::Transcribed;
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;

pub(super) async fn transcribe(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath(machine): ApiPath<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Transcribed>, AppError> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if !matches!(
        kind.as_deref(),
        Some("audio/wav" | "audio/x-wav" | "audio/wave")
    ) {
        return Err(AppError::BadRequest(
            "the recording must be sent as Content-Type: audio/wav".into(),
        ));
    }
    Ok(Json(app.transcribe(&caller, &machine, &bytes).await?))
}
