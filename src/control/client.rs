//! The CLI side of the control socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::protocol::{Reply, Request};
use super::MAX_REPLY;

/// Why the CLI could not get an answer from its bridge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Nothing listens on the socket.
    #[error("no collie bridge is running for this state dir; start one with `collie bridge`")]
    NotRunning,
    /// The bridge answered with an error.
    #[error("{0}")]
    Refused(String),
    /// The connection broke or the reply was unreadable.
    #[error("bridge connection failed: {0}")]
    Io(String),
}

/// Sends one request and reads its reply as `T`, the type the dispatcher answers that request
/// with ([`super::replies`] or the application's own).
pub fn ask<T: DeserializeOwned>(socket: &Path, req: &Request) -> Result<T, ClientError> {
    let data = call(socket, req)?;
    serde_json::from_value(data).map_err(|e| ClientError::Io(format!("bad reply: {e}")))
}

/// Sends one request and waits for its reply's data.
fn call(socket: &Path, req: &Request) -> Result<serde_json::Value, ClientError> {
    let mut stream = UnixStream::connect(socket).map_err(|_| ClientError::NotRunning)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| ClientError::Io(e.to_string()))?;
    let mut line = serde_json::to_vec(req).map_err(|e| ClientError::Io(e.to_string()))?;
    line.push(b'\n');
    stream
        .write_all(&line)
        .map_err(|e| ClientError::Io(e.to_string()))?;
    let mut reader = BufReader::new(stream.take(MAX_REPLY as u64));
    let mut buf = String::new();
    reader
        .read_line(&mut buf)
        .map_err(|e| ClientError::Io(e.to_string()))?;
    let reply: Reply =
        serde_json::from_str(&buf).map_err(|e| ClientError::Io(format!("bad reply: {e}")))?;
    if reply.ok {
        Ok(reply.data.unwrap_or(serde_json::Value::Null))
    } else {
        Err(ClientError::Refused(
            reply.error.unwrap_or_else(|| "failed".into()),
        ))
    }
}
