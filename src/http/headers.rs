//! Response headers and the Host / Origin checks of SPEC §4.8, as one middleware in front of every
//! route. The header values are requirements: change them only with the spec.
//!
//! One cross origin is opened, for the phone's failover to the deputy (SPEC §13, decision 0069):
//! on a bridge holding a deputy's registry copy, the API answers the **lead's** origin (taken from
//! the copy) with CORS — a preflight, and `Access-Control-Allow-Origin` naming that origin on the
//! real answer, never `*`, never credentials (the token is an `Authorization` header, not a
//! cookie) — and accepts writes carrying that `Origin`. On the lead, the app shell's
//! `connect-src` names the deputy's origin (from the URL it reported) so the page may reach it.
//! A bridge that is neither opens nothing.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::app::AppError;

/// `Permissions-Policy` on every response.
pub const PERMISSIONS_POLICY: &str =
    "camera=(), geolocation=(), microphone=(self), payment=(), usb=()";
/// `Content-Security-Policy` of the app shell.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'";
/// The `connect-src` of [`CONTENT_SECURITY_POLICY`], which a lead with a deputy widens by one origin.
const CONNECT_SRC: &str = "connect-src 'self'";
/// The methods the API answers, as a preflight names them.
pub const CORS_METHODS: &str = "GET, POST, DELETE";
/// The request headers the app sends, as a preflight names them (`Last-Event-ID` on a resumed
/// stream).
pub const CORS_HEADERS: &str = "Authorization, Content-Type, Last-Event-ID";
/// How long a browser may keep a preflight's answer, in seconds.
const CORS_MAX_AGE: &str = "600";
/// `Strict-Transport-Security` for requests that arrived over HTTPS (no `includeSubDomains`).
pub const HSTS: &str = "max-age=31536000";

/// Checks Host and Origin, then adds the security headers to whatever the route answered.
pub async fn security_headers(
    State(ctx): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let https = arrived_over_https(req.headers(), peer);
    // `/mcp` answers carry file contents and command output like the API's.
    let is_api = req.uri().path().starts_with("/api/") || req.uri().path() == "/mcp";
    // On a deputy: the lead's origin, the one cross origin its phone API answers.
    let lead_origin = ctx.deputy_lead_origin();
    let cors = match &lead_origin {
        Some(lead) if req.uri().path().starts_with("/api/") => cross_origin(req.headers(), lead),
        _ => None,
    };
    let preflight = cors.is_some()
        && req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut resp = match check_host_and_origin(&ctx, req.method(), req.uri(), req.headers()) {
        // A preflight carries no token: it is answered here, before the auth middleware.
        Ok(()) if preflight => preflight_answer(),
        Ok(()) => next.run(req).await,
        Err(e) => {
            ctx.refuse_request(&super::auth::origin(req.headers(), req.method(), peer), &e);
            e.into_response()
        }
    };
    let h = resp.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "permissions-policy",
        HeaderValue::from_static(PERMISSIONS_POLICY),
    );
    if !is_api {
        h.insert(header::CONTENT_SECURITY_POLICY, shell_policy(&ctx));
    }
    if lead_origin.is_some() && is_api {
        // The answer depends on the Origin asked from: no cache may hand one to the other.
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
    if let Some(origin) = cors {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("retry-after"),
        );
    }
    if is_api {
        // API answers may carry pane content; none of it belongs in any cache.
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-store"),
        );
    }
    if https {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    resp
}

/// The app shell's policy: [`CONTENT_SECURITY_POLICY`], with the deputy's origin added to
/// `connect-src` on a lead that has one (the page turns to it when the lead does not answer).
fn shell_policy(ctx: &App) -> HeaderValue {
    ctx.deputy_origin()
        .and_then(|origin| {
            let policy = CONTENT_SECURITY_POLICY.replacen(
                CONNECT_SRC,
                &format!("{CONNECT_SRC} {origin}"),
                1,
            );
            HeaderValue::from_str(&policy).ok()
        })
        .unwrap_or(HeaderValue::from_static(CONTENT_SECURITY_POLICY))
}

/// The request's one `Origin`, when it is exactly `lead` (the origin a deputy answers).
fn cross_origin(headers: &HeaderMap, lead: &str) -> Option<HeaderValue> {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let origin = values.next()?;
    if values.next().is_some() || origin.as_bytes() != lead.as_bytes() {
        return None;
    }
    Some(origin.clone())
}

/// The answer to the lead's origin's preflight (its `Access-Control-Allow-Origin` is added with
/// the other headers).
fn preflight_answer() -> Response {
    let mut resp = axum::http::StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(CORS_METHODS),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(CORS_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(CORS_MAX_AGE),
    );
    resp
}

/// HTTPS means a TLS listener (none yet) or `X-Forwarded-Proto: https` set by a loopback proxy.
fn arrived_over_https(headers: &HeaderMap, peer: SocketAddr) -> bool {
    peer.ip().is_loopback()
        && headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The one value of header `name`; two are refused (a proxy and the bridge could each read a
/// different one).
fn single(
    headers: &HeaderMap,
    name: header::HeaderName,
    twice: AppError,
) -> Result<Option<&HeaderValue>, AppError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(twice);
    }
    Ok(first)
}

fn check_host_and_origin(
    ctx: &App,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<(), AppError> {
    let host = single(
        headers,
        header::HOST,
        AppError::BadRequest("more than one Host header".into()),
    )?
    .and_then(|v| v.to_str().ok())
    .ok_or(AppError::Forbidden("host not allowed"))?;
    if !host_allowed(ctx, host) {
        return Err(AppError::Forbidden("host not allowed"));
    }
    // An absolute-form target (`GET http://other.example/api/…`) names the host that counts
    // (RFC 9112 §3.2.2): it must be this bridge, and the same the Host header names.
    if let Some(authority) = uri.authority() {
        if !host_allowed(ctx, authority.as_str())
            || !authority.as_str().eq_ignore_ascii_case(host.trim())
        {
            return Err(AppError::Forbidden("host not allowed"));
        }
    }
    let origin = single(
        headers,
        header::ORIGIN,
        AppError::Forbidden("origin not allowed"),
    )?;
    let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if changes_state {
        if let Some(origin) = origin {
            let origin = origin
                .to_str()
                .map_err(|_| AppError::Forbidden("origin not allowed"))?;
            let origin_host = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .unwrap_or("");
            // Same origin, or — on a deputy — the lead's page turning to it (SPEC §13).
            let lead_page = ctx
                .deputy_lead_origin()
                .is_some_and(|lead| lead.as_str() == origin);
            if !origin_host.eq_ignore_ascii_case(host) && !lead_page {
                return Err(AppError::Forbidden("origin not allowed"));
            }
        }
    }
    Ok(())
}

/// Whether `host_header` names a host this bridge answers for.
fn host_allowed(app: &App, host_header: &str) -> bool {
    app.host_allowed(&host_part(host_header))
}

/// Splits `host[:port]` (with `[v6]` brackets) and returns the host part, lowercased.
pub fn host_part(host_header: &str) -> String {
    let h = host_header.trim();
    let name = if let Some(rest) = h.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        h.rsplit_once(':').map_or(h, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                h
            }
        })
    };
    name.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::host_part;

    #[test]
    fn host_part_strips_ports_and_brackets() {
        assert_eq!(host_part("127.0.0.1:7420"), "127.0.0.1");
        assert_eq!(host_part("[::1]:7420"), "::1");
        assert_eq!(host_part("LOCALHOST"), "localhost");
        assert_eq!(host_part("phone.example.ts.net"), "phone.example.ts.net");
    }
}
