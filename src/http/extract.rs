//! Extractors whose rejections are [`AppError`]s, so a malformed query string or path parameter
//! answers in the JSON error shape of SPEC §3.2, never axum's plain text.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::app::AppError;

/// `Query<T>` that answers `400 {"error":"invalid query string: …"}`.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(AppError::BadRequest(format!(
                "invalid query string: {}",
                what_is_wrong(&rejection.body_text())
            ))),
        }
    }
}

/// `Path<T>` that answers `400 {"error":"invalid path: …"}`.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(AppError::BadRequest(format!(
                "invalid path: {}",
                what_is_wrong(&rejection.body_text())
            ))),
        }
    }
}

/// The part of axum's rejection text that names the field (`scrollback: invalid digit found in
/// string`), without its "Failed to deserialize…" preamble.
fn what_is_wrong(text: &str) -> String {
    let text = text.rsplit_once(": ").map_or(text, |(head, tail)| {
        // Keep `field: why` when the head ends with a field name.
        match head.rsplit_once(": ") {
            Some((_, field)) if !field.contains(' ') => {
                &text[text.len() - tail.len() - field.len() - 2..]
            }
            _ => tail,
        }
    });
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::what_is_wrong;

    #[test]
    fn the_field_and_reason_are_kept() {
        assert_eq!(
            what_is_wrong(
                "Failed to deserialize query string: scrollback: invalid digit found in string"
            ),
            "scrollback: invalid digit found in string"
        );
        assert_eq!(
            what_is_wrong("Invalid URL: Cannot parse `%zz` to a `String`"),
            "Cannot parse `%zz` to a `String`"
        );
        assert_eq!(what_is_wrong("plain"), "plain");
    }
}
