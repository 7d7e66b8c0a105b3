//! Every refusal `/mcp` answers is JSON (SPEC §3.2): rmcp's transport refuses a wrong method, a
//! missing `Accept`, a wrong `Content-Type` and a body that is not one JSON-RPC message in plain
//! text, carrying its parser's words. [`json_rejections`] replaces such an answer with Collie's:
//! `{"error"}` for what is wrong with the HTTP request, and a JSON-RPC error object for a body that
//! is not a message — never the transport's own text (it is logged at debug level instead).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::http::error::ErrorBody;

/// JSON-RPC's code for a body that does not parse as a message.
const PARSE_ERROR: i64 = -32700;

/// A JSON-RPC error answer with no request to name (`"id": null`).
#[derive(Debug, Serialize)]
struct RpcError {
    jsonrpc: &'static str,
    id: Option<()>,
    error: RpcErrorData,
}

#[derive(Debug, Serialize)]
struct RpcErrorData {
    code: i64,
    message: &'static str,
}

/// What Collie answers in place of a plain-text refusal of `status`.
fn replacement(status: StatusCode) -> Response {
    let error = |status: StatusCode, text: &str| {
        let mut r = (
            status,
            Json(ErrorBody {
                error: text.to_owned(),
                lead: None,
                gate: None,
            }),
        )
            .into_response();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        r
    };
    match status {
        StatusCode::METHOD_NOT_ALLOWED => error(status, "method not allowed"),
        StatusCode::NOT_ACCEPTABLE => error(
            status,
            "Accept must list application/json and text/event-stream",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            error(status, "Content-Type must be application/json")
        }
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => (
            StatusCode::BAD_REQUEST,
            Json(RpcError {
                jsonrpc: "2.0",
                id: None,
                error: RpcErrorData {
                    code: PARSE_ERROR,
                    message: "the body is not one JSON-RPC message (a batch is not served)",
                },
            }),
        )
            .into_response(),
        StatusCode::NOT_FOUND => error(status, "not found"),
        s if s.is_client_error() => error(s, "bad request"),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    }
}

/// Whether `resp` is a refusal that is not JSON.
fn plain_refusal(resp: &Response) -> bool {
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("application/json")
        });
    !resp.status().is_success() && !json
}

/// What is wrong with a request before it reaches the transport, if anything: the checks
/// rmcp makes, made first so each refusal has its own answer (rmcp answers a body it cannot parse
/// 415, like a wrong `Content-Type`).
fn refusal(method: &Method, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    if method != Method::POST {
        return Some(replacement(StatusCode::METHOD_NOT_ALLOWED));
    }
    let listed = |name: header::HeaderName| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|t| {
                t.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .collect()
    };
    let accepts = listed(header::ACCEPT);
    if !accepts.iter().any(|t| t == "application/json")
        || !accepts.iter().any(|t| t == "text/event-stream")
    {
        return Some(replacement(StatusCode::NOT_ACCEPTABLE));
    }
    if listed(header::CONTENT_TYPE) != ["application/json"] {
        return Some(replacement(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let one_message = matches!(
        serde_json::from_slice::<serde_json::Value>(body),
        Ok(serde_json::Value::Object(_))
    );
    (!one_message).then(|| replacement(StatusCode::BAD_REQUEST))
}

/// The middleware, innermost around the MCP service (the body was read whole before it).
pub async fn json_rejections(req: Request<Body>, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return replacement(StatusCode::BAD_REQUEST);
    };
    if let Some(refused) = refusal(&parts.method, &parts.headers, &bytes) {
        return refused;
    }
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if !plain_refusal(&resp) {
        return resp;
    }
    tracing::debug!(status = %resp.status(), "mcp: the transport's plain refusal answered as JSON");
    replacement(resp.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_becomes_json_and_keeps_its_status() {
        for (status, expected) in [
            (
                StatusCode::METHOD_NOT_ALLOWED,
                StatusCode::METHOD_NOT_ALLOWED,
            ),
            (StatusCode::NOT_ACCEPTABLE, StatusCode::NOT_ACCEPTABLE),
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (StatusCode::BAD_REQUEST, StatusCode::BAD_REQUEST),
            (StatusCode::UNPROCESSABLE_ENTITY, StatusCode::BAD_REQUEST),
            (StatusCode::IM_A_TEAPOT, StatusCode::IM_A_TEAPOT),
            (StatusCode::BAD_GATEWAY, StatusCode::INTERNAL_SERVER_ERROR),
        ] {
            let r = replacement(status);
            assert_eq!(r.status(), expected, "{status}");
            assert!(!plain_refusal(&r), "{status} answers JSON");
        }
    }

    #[test]
    fn a_request_is_checked_as_the_transport_would_before_it() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(refusal(&Method::POST, &h, ok).is_none());
        let status = |m: &Method, h: &HeaderMap, b: &[u8]| refusal(m, h, b).map(|r| r.status());
        assert_eq!(
            status(&Method::GET, &h, ok),
            Some(StatusCode::METHOD_NOT_ALLOWED)
        );
        for bad in [&b"{"[..], b"[{}]", b"null", b""] {
            assert_eq!(
                status(&Method::POST, &h, bad),
                Some(StatusCode::BAD_REQUEST)
            );
        }
        let mut only_json = h.clone();
        only_json.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert_eq!(
            status(&Method::POST, &only_json, ok),
            Some(StatusCode::NOT_ACCEPTABLE)
        );
        let mut text = h.clone();
        text.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(
            status(&Method::POST, &text, ok),
            Some(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
    }

    #[test]
    fn a_json_answer_or_a_success_is_left_alone() {
        let ok = (StatusCode::ACCEPTED, "").into_response();
        assert!(!plain_refusal(&ok));
        let json = (
            StatusCode::BAD_REQUEST,
            Json(ErrorBody {
                error: "x".into(),
                lead: None,
                gate: None,
            }),
        )
            .into_response();
        assert!(!plain_refusal(&json));
        let plain = (StatusCode::BAD_REQUEST, "parser said: expected value").into_response();
        assert!(plain_refusal(&plain));
    }
}
