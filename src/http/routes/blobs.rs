//! `POST /api/blobs` and `GET /api/blobs/{id}` (SPEC §11, uploads): a file from the phone into a
//! pane's folder, and the kept copy served back. Tier `files`; the body is the file's bytes (at
//! most 10 MiB, refused by the body limit before more is read); the rules are
//! [`crate::app::blobs`]'s.
//!
//! A blob is served `private, no-store` (as every API answer) with a type that cannot run in the
//! bridge's origin: an image recognised by its bytes as that image type, anything else as an
//! `application/octet-stream` attachment (`nosniff` is set on every answer).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;

use crate::app::blobs::{Upload, Uploaded};
use crate::app::{App, AppError, Caller};
use crate::http::extract::{ApiPath, ApiQuery};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Target {
    /// `local` when absent.
    machine: Option<String>,
    /// The pane whose folder takes the file.
    pane: String,
    /// The file's name.
    name: String,
}

pub(super) async fn upload(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiQuery(t): ApiQuery<Target>,
    bytes: Bytes,
) -> Result<Json<Uploaded>, AppError> {
    let machine = t.machine.as_deref().unwrap_or("local");
    let op = Upload {
        pane: t.pane,
        name: t.name,
        bytes: bytes.to_vec(),
    };
    Ok(Json(app.run(&caller, machine, op).await?))
}

pub(super) async fn blob(
    State(app): State<App>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, AppError> {
    let blob = app.blob(&id).await?;
    let mut resp = blob.bytes.into_response();
    let h = resp.headers_mut();
    match blob.image {
        Some(kind) => {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        }
        None => {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            h.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment"),
            );
        }
    }
    Ok(resp)
}
