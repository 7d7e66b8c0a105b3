//! The bridge side of the control socket: accept, check the peer is our own user, read one request
//! (size-capped), dispatch to the application ([`super::dispatch`]), write one reply.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use super::protocol::{Reply, Request};
use super::MAX_REQUEST;
use crate::app::App;

/// Binds `<state>/bridge.sock` with mode 0600, replacing a stale socket file.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    crate::private_socket::bind(path)
}

/// Serves until cancelled. A `collie restart` cancels `restart` (decision 0077).
pub async fn serve(
    listener: UnixListener,
    ctx: App,
    cancel: CancellationToken,
    restart: CancellationToken,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let ctx = ctx.clone();
                    let restart = restart.clone();
                    conns.spawn(async move { handle(stream, ctx, restart).await });
                }
                Err(e) => tracing::warn!(error = %e, "control socket accept failed"),
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
}

async fn handle(stream: UnixStream, ctx: App, restart: CancellationToken) {
    let me = nix::unistd::Uid::current().as_raw();
    let peer = match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => cred.pid().and_then(|p| u32::try_from(p).ok()),
        _ => return, // not our user: say nothing
    };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read.take(MAX_REQUEST as u64 + 1));
    let mut line = String::new();
    let mut restarting = false;
    let reply = match reader.read_line(&mut line).await {
        Ok(_) if line.len() > MAX_REQUEST => Reply::err("request too large"),
        Ok(_) => match serde_json::from_str::<Request>(&line) {
            Ok(req) => {
                restarting = matches!(req, Request::Restart);
                super::dispatch::dispatch(&ctx, req, peer).await
            }
            Err(e) => Reply::err(format!("bad request: {e}")),
        },
        Err(e) => Reply::err(format!("bad request: {e}")),
    };
    let mut out = serde_json::to_vec(&reply).unwrap_or_else(|_| b"{\"ok\":false}".to_vec());
    out.push(b'\n');
    let _ = write.write_all(&out).await;
    let _ = write.shutdown().await;
    if restarting {
        // After the answer is out: the shutdown that follows ends this server's connections.
        // Bridge starts and stops are not audit events (SPEC §7); the log says who asked.
        tracing::info!(peer, "restarting at the request of `collie restart`");
        restart.cancel();
    }
}
