//! Request bodies of the API, read whole before any handler runs: at most [`MAX_BODY`] bytes
//! (checked against `Content-Length` before anything is read, and while reading), within
//! [`BODY_TIMEOUT`]. A body that is too large answers 413 and one that dribbles answers 408, both in
//! the JSON error shape; a handler only ever sees a complete body.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::app::AppError;

/// Largest request body the API reads (input text is at most 64 KiB, JSON-escaped).
pub const MAX_BODY: usize = 512 * 1024;
/// Largest body of a tool call (`POST /api/tools/{tool}` and `POST /mcp`): a `write_file` of up
/// to 16 MiB, JSON-escaped.
pub const MAX_TOOL_BODY: usize = super::mcp::MAX_MCP_BODY;

/// Largest upload (`POST /api/blobs`, SPEC §11).
pub const MAX_UPLOAD_BODY: usize = crate::app::blobs::MAX_UPLOAD;

/// Largest dictation (`POST /api/speech/{m}`, SPEC §16): 60 s of 16 kHz mono 16-bit samples and
/// a header.
pub const MAX_SPEECH_BODY: usize = crate::speech::wav::MAX_WAV_BYTES;

/// The limit of the request to `path`, and how an answer names it.
fn limit_of(path: &str) -> (usize, &'static str) {
    if path.starts_with("/api/tools/") || path == "/mcp" {
        (MAX_TOOL_BODY, "24 MiB")
    } else if path == "/api/blobs" {
        (MAX_UPLOAD_BODY, "10 MiB")
    } else if path.starts_with("/api/speech/") {
        (MAX_SPEECH_BODY, "2 MiB")
    } else {
        (MAX_BODY, "512 KiB")
    }
}
/// How long a whole body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(15);

/// The middleware.
pub async fn read_whole(req: Request<Body>, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (limit, named) = limit_of(req.uri().path());
    if declared.is_some_and(|n| n > limit as u64) {
        return AppError::BodyTooLarge(named).into_response();
    }
    let (parts, body) = req.into_parts();
    let collected = tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, limit).collect());
    let bytes = match collected.await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return AppError::BodyTooLarge(named).into_response()
        }
        // The client broke the body off.
        Ok(Err(_)) => {
            return AppError::BadRequest("the request body is incomplete".into()).into_response()
        }
        Err(_) => return AppError::BodyTimeout.into_response(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
