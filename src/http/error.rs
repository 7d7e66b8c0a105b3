//! The HTTP face of [`AppError`]: its status, and `{"error": "<string>"}` (SPEC §3.2). A backend
//! failure's detail was logged where it happened; the phone gets `internal error`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::app::AppError;

/// The body of every error answer.
#[derive(serde::Serialize)]
pub struct ErrorBody {
    /// The exact string of SPEC §3.2.
    pub error: String,
    /// On a deputy's standby door (SPEC §13): the lead's URL, where the phone belongs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    /// On `identity required` (SPEC §14): the gate that refused, so the phone can say which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<&'static str>,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (
            status,
            Json(ErrorBody {
                error: self.to_string(),
                lead: match &self {
                    AppError::Standby(url) => Some(url.clone()),
                    _ => None,
                },
                gate: match &self {
                    AppError::IdentityRequired { gate } => Some(gate),
                    _ => None,
                },
            }),
        )
            .into_response();
        if let AppError::TooManyAttempts { retry_after } = self {
            if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}
