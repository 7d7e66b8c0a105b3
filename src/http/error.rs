//! `ApiError`: the one way an HTTP handler fails. It maps to the exact status codes and strings of
//! SPEC §3.2 and never carries internals into the response body (those go to the log).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use collie_actors::slot::CallError;

/// An error answer of the phone API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// 403: no token, unknown token, revoked token (also a write presenting the local secret).
    #[error("device not paired")]
    NotPaired,
    /// 403: the device's expiry has passed.
    #[error("device expired")]
    Expired,
    /// 403: the device's tier is below the route's.
    #[error("insufficient tier")]
    InsufficientTier,
    /// 403: pairing with a wrong, used, expired or invalidated code.
    #[error("invalid or expired code")]
    InvalidCode,
    /// 409: pairing with a label a live device holds.
    #[error("label in use")]
    LabelInUse,
    /// 429 with `Retry-After`.
    #[error("too many attempts")]
    TooManyAttempts {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// 503: the device store cannot be read or written.
    #[error("pairing unavailable")]
    PairingUnavailable,
    /// 503: the audit line of a write could not be appended.
    #[error("audit unavailable")]
    AuditUnavailable,
    /// 503: a pane or session cap is reached.
    #[error("resource limit")]
    ResourceLimit,
    /// 503: the actor serving the request failed mid-request.
    #[error("restarting, try again")]
    Restarting,
    /// 502: the member is offline or did not answer in time (SPEC §8).
    #[error("member unreachable")]
    MemberUnreachable,
    /// 502: the member's answer could not be decoded, so it is not relayed (SPEC §6).
    #[error("member response unreadable")]
    MemberUnreadable,
    /// 501: the member did not declare the capability the request needs (SPEC §8).
    #[error("capability missing")]
    CapabilityMissing,
    /// 404.
    #[error("no such machine")]
    NoSuchMachine,
    /// 404.
    #[error("no such pane")]
    NoSuchPane,
    /// 404: the machine's walky log does not hold the message id (SPEC §9: a header an agent
    /// merely printed gets no card).
    #[error("no log entry on this machine")]
    NoLogEntry,
    /// 404 for an unknown device label.
    #[error("no such device")]
    NoSuchDevice,
    /// 404 for an unknown route.
    #[error("not found")]
    NotFound,
    /// 400 with a message that says what to change (`invalid label`, `unknown key: X`, …).
    #[error("{0}")]
    BadRequest(String),
    /// 403: Host or Origin not allowed.
    #[error("{0}")]
    Forbidden(&'static str),
    /// 500: something inside failed; the details are logged, not sent.
    #[error("internal error")]
    Internal,
    /// 500 like [`ApiError::Internal`], carrying the detail for the bridge's log and for the
    /// local CLI (the machine's own user); a phone gets only `internal error`.
    #[error("internal error")]
    Backend(String),
    /// 413: the request body is over the limit.
    #[error("request body too large: at most 512 KiB")]
    BodyTooLarge,
    /// 408: the request body did not arrive in time.
    #[error("request body too slow")]
    BodyTimeout,
    /// 405: the route exists, the method does not.
    #[error("method not allowed")]
    MethodNotAllowed,
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            NotPaired | Expired | InsufficientTier | InvalidCode | Forbidden(_) => {
                StatusCode::FORBIDDEN
            }
            LabelInUse => StatusCode::CONFLICT,
            TooManyAttempts { .. } => StatusCode::TOO_MANY_REQUESTS,
            PairingUnavailable | AuditUnavailable | ResourceLimit | Restarting => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            NoSuchMachine | NoSuchPane | NoSuchDevice | NoLogEntry | NotFound => {
                StatusCode::NOT_FOUND
            }
            MemberUnreachable | MemberUnreadable => StatusCode::BAD_GATEWAY,
            CapabilityMissing => StatusCode::NOT_IMPLEMENTED,
            BadRequest(_) => StatusCode::BAD_REQUEST,
            Internal | Backend(_) => StatusCode::INTERNAL_SERVER_ERROR,
            BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// The message for the machine's own user (the control socket): the detail of a backend
    /// failure, otherwise the same string a phone gets.
    pub fn for_local_user(&self) -> String {
        match self {
            ApiError::Backend(detail) => detail.clone(),
            other => other.to_string(),
        }
    }

    /// A backend failure: its detail is logged now and goes no further than the local CLI.
    pub fn backend(what: &str, detail: impl std::fmt::Display) -> ApiError {
        let detail = format!("{what}: {detail}");
        tracing::error!(%detail, "request failed inside the bridge");
        ApiError::Backend(detail)
    }
}

impl From<CallError> for ApiError {
    fn from(_: CallError) -> Self {
        ApiError::Restarting
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut resp = (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response();
        if let ApiError::TooManyAttempts { retry_after } = self {
            if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}
