//! One request to a durable agent over either transport (SPEC §10.3), and what its answer means.
//!
//! - **Socket.** Before *every* connection the whole path is checked from `/` down with `lstat`
//!   ([`crate::private_socket::check`]); a path that fails is unreachable at once — no grace, no
//!   retry on a weaker rule — and a missing one is `no socket at <path>`.
//! - **HTTPS.** [`crate::https`] with the system's roots or only the source's `ca_file`, the bearer
//!   token in `Authorization`, private addresses allowed (the user named the URL; no phone can).
//! - **Both.** `Collie-Wire: 1` on every request and required on every answer (an answer without
//!   it is not from a durable agent, or from one of another version); bodies over
//!   [`wire::MAX_REPLY`] are refused before they are read whole; JSON that does not parse (invalid
//!   UTF-8, nesting deeper than serde_json's limit of 128, wrong types) is refused naming the line
//!   and column, never quoting the agent's bytes.

use std::path::PathBuf;
use std::time::Duration;

use crate::https::{self, HttpsError, Limits, Reply, Target};
use crate::private_socket::{self, PathError};

use super::sources::{Source, Token, Transport, Url};
use super::wire::{self, Started, State, Write};

/// Bounds of a read.
const READ_LIMITS: Limits = Limits {
    connect: Duration::from_secs(5),
    total: Duration::from_secs(10),
    max_body: wire::MAX_REPLY,
};
/// Bounds of a write (its answer is small).
const WRITE_LIMITS: Limits = Limits {
    connect: Duration::from_secs(5),
    total: Duration::from_secs(10),
    max_body: 64 * 1024,
};
/// Longest ETag kept (a longer or non-ASCII one is not sent back).
const MAX_ETAG: usize = 256;

/// Why a request to an agent failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The socket path is not private (or not there): nothing was sent.
    #[error("{0}")]
    Path(#[from] PathError),
    /// The agent could not be reached, or did not answer in time.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The agent refused the token (401).
    #[error("the agent refused the token")]
    TokenRefused,
    /// The agent refused this caller (403, `caller-refused`).
    #[error("the agent refused the request (caller-refused)")]
    CallerRefused,
    /// No such conversation, question or starter (404).
    #[error("the agent has no such conversation, question or starter")]
    NotFound,
    /// Already answered, or otherwise in conflict (409).
    #[error("the agent refused it as answered already or closed")]
    Conflict,
    /// Any other status.
    #[error("the agent answered {0}")]
    Status(u16),
    /// The answer lacks `Collie-Wire: 1`.
    #[error("the answer is not Collie wire version 1")]
    Wire,
    /// The answer's body is not the expected JSON.
    #[error("the agent's answer is not valid ({what} at line {line}, column {column})")]
    Invalid {
        /// serde's category.
        what: &'static str,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
    },
    /// The answer is over the size bound.
    #[error("the agent's answer is too large")]
    TooLarge,
    /// The source itself is unusable (a CA file that cannot be read, a bad URL).
    #[error("{0}")]
    Setup(String),
}

impl TransportError {
    /// Whether this says the agent is refusing the token (the poll slows down and the phone says
    /// so).
    pub fn is_token(&self) -> bool {
        matches!(self, TransportError::TokenRefused)
    }
}

/// What a read got.
#[derive(Debug)]
pub enum Read {
    /// 304: nothing changed since the ETag sent.
    Unchanged,
    /// The state, and its ETag if it sent a usable one.
    State(Box<State>, Option<String>),
}

/// Where one agent is, ready to send to.
#[derive(Clone)]
pub enum Endpoint {
    /// A unix socket.
    Socket(PathBuf),
    /// HTTPS.
    Https {
        /// Host, port and TLS.
        target: Target,
        /// The URL's path.
        base: String,
        /// The bearer token.
        token: Token,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Socket(p) => write!(f, "socket {}", p.display()),
            Endpoint::Https { target, base, .. } => {
                write!(f, "https {}:{}{base}", target.host, target.port)
            }
        }
    }
}

impl Endpoint {
    /// The endpoint of `source` (reads its CA file, if it names one).
    pub fn new(source: &Source) -> Result<Endpoint, TransportError> {
        match &source.transport {
            Transport::Socket { socket } => Ok(Endpoint::Socket(socket.clone())),
            Transport::Https {
                url,
                token,
                ca_file,
            } => {
                let url = Url::parse(url).map_err(|e| TransportError::Setup(e.to_string()))?;
                let tls = match ca_file {
                    Some(file) => https::tls_config(Some(file)),
                    None => https::system_tls_config(),
                }
                .map_err(|e| TransportError::Setup(e.to_string()))?;
                Ok(Endpoint::Https {
                    target: Target {
                        host: url.host,
                        port: url.port,
                        public_only: false,
                        tls,
                    },
                    base: url.base,
                    token: token.clone(),
                })
            }
        }
    }

    /// `GET /v1/state`, with `If-None-Match: etag` when given.
    pub async fn read(&self, etag: Option<&str>) -> Result<Read, TransportError> {
        let mut request = self.request(http::Method::GET, wire::STATE_PATH, Vec::new())?;
        if let Some(etag) = etag.and_then(|e| http::HeaderValue::from_str(e).ok()) {
            request
                .headers_mut()
                .insert(http::header::IF_NONE_MATCH, etag);
        }
        let reply = self.send(request, READ_LIMITS).await?;
        if reply.status == 304 {
            return Ok(Read::Unchanged);
        }
        ok_status(reply.status)?;
        let etag = reply
            .headers
            .get(http::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= MAX_ETAG && v.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_owned);
        let state: State = parse(&reply.body)?;
        Ok(Read::State(Box::new(state), etag))
    }

    /// One write; a starter's answer names the conversation it made.
    pub async fn write(
        &self,
        conversation: &str,
        write: &Write,
        request_id: &str,
    ) -> Result<Started, TransportError> {
        let body =
            serde_json::to_vec(&write.body()).map_err(|e| TransportError::Setup(e.to_string()))?;
        let mut request = self.request(http::Method::POST, &write.path(conversation), body)?;
        let headers = request.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        if let Ok(id) = http::HeaderValue::from_str(request_id) {
            headers.insert(wire::REQUEST_HEADER, id);
        }
        let reply = self.send(request, WRITE_LIMITS).await?;
        ok_status(reply.status)?;
        // Only a starter's answer is read; any other body is ignored.
        match write {
            Write::Starter { .. } if !reply.body.is_empty() => parse(&reply.body),
            _ => Ok(Started::default()),
        }
    }

    fn request(
        &self,
        method: http::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<http::Request<Vec<u8>>, TransportError> {
        let base = match self {
            Endpoint::Socket(_) => "",
            Endpoint::Https { base, .. } => base.as_str(),
        };
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("{base}{path}"))
            .header(wire::HEADER, wire::VERSION)
            .header(http::header::ACCEPT, "application/json");
        if let Endpoint::Https { token, .. } = self {
            builder = builder.header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", token.expose()),
            );
        }
        // The error would name the header, never its value.
        builder
            .body(body)
            .map_err(|_| TransportError::Setup("cannot build the request".into()))
    }

    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        limits: Limits,
    ) -> Result<Reply, TransportError> {
        let reply = match self {
            Endpoint::Socket(path) => {
                // Checked before every connection: a path made public since the last one is
                // unreachable from this request on.
                private_socket::check(path)?;
                https::send_unix(path, request, limits).await
            }
            Endpoint::Https { target, .. } => https::send(target, request, limits).await,
        }
        .map_err(|e| match e {
            HttpsError::TooLarge(_) => TransportError::TooLarge,
            other => TransportError::Unreachable(other.to_string()),
        })?;
        if reply.status == 401 {
            return Err(TransportError::TokenRefused);
        }
        let version = reply
            .headers
            .get(wire::HEADER)
            .and_then(|v| v.to_str().ok());
        if version != Some(wire::VERSION) {
            return Err(TransportError::Wire);
        }
        Ok(reply)
    }
}

/// Maps a status to the refusal it says.
fn ok_status(status: u16) -> Result<(), TransportError> {
    match status {
        200..=299 => Ok(()),
        403 => Err(TransportError::CallerRefused),
        404 => Err(TransportError::NotFound),
        409 => Err(TransportError::Conflict),
        other => Err(TransportError::Status(other)),
    }
}

/// Parses an answer's JSON; the error names where, never what.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, TransportError> {
    serde_json::from_slice(body).map_err(|e| TransportError::Invalid {
        what: match e.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "a syntax error",
            serde_json::error::Category::Data => "an unexpected value",
            serde_json::error::Category::Eof => "an early end",
        },
        line: e.line(),
        column: e.column(),
    })
}

#[cfg(test)]
mod fuzz;
