//! The bridge side of `<state>/hooks.sock`: accept a hook, check it is our user's process, read
//! its one request (size-capped), and hand it to the application
//! ([`crate::app::App::ask_permission`], where every rule of SPEC §10.2 lives) until a device
//! decides, the deadline passes, or the hook goes away.
//!
//! Every refusal is silence: a connection from another user, a request that does not parse, and
//! whatever the application refuses — the bridge closes the connection without a reply, and the
//! hook prints nothing, so the agent asks in its own terminal (SPEC §10.2). Nothing here can
//! decide a card.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use super::wire::{HookReply, HookRequest, MAX_REQUEST};
use crate::app::App;

/// Binds `path` with mode 0600, replacing a stale socket file.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    crate::private_socket::bind(path)
}

/// Serves until cancelled; every held hook is dropped then (its hook prints nothing).
pub async fn serve(listener: UnixListener, app: App, cancel: CancellationToken) {
    let mut held = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if app.may_hold_another(held.len()) => {
                    let app = app.clone();
                    held.spawn(async move { handle(stream, app).await });
                }
                Ok(_) => tracing::warn!("too many held hooks; one was let go to its terminal"),
                Err(e) => tracing::warn!(error = %e, "hook socket accept failed"),
            },
            Some(_) = held.join_next(), if !held.is_empty() => {}
        }
    }
    held.abort_all();
}

async fn handle(stream: UnixStream, app: App) {
    let me = nix::unistd::Uid::current().as_raw();
    let pid = match stream.peer_cred() {
        Ok(cred) if cred.uid() == me => cred.pid().and_then(|p| u32::try_from(p).ok()),
        _ => None,
    };
    let Some(pid) = pid else { return };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    let limited = (&mut reader)
        .take(MAX_REQUEST as u64 + 1)
        .read_until(b'\n', &mut line)
        .await;
    if limited.is_err() || line.len() > MAX_REQUEST || !line.ends_with(b"\n") {
        return;
    }
    let Ok(request) = serde_json::from_slice::<HookRequest>(&line) else {
        return;
    };
    // The hook sends nothing more: the end of its stream is its process going away.
    let gone = async move {
        let mut byte = [0u8; 64];
        while matches!(reader.read(&mut byte).await, Ok(n) if n > 0) {}
    };
    let Some(print) = app
        .ask_permission(pid, request.agent, &request.input, gone)
        .await
    else {
        return;
    };
    let reply = HookReply { print };
    if let Ok(mut out) = serde_json::to_vec(&reply) {
        out.push(b'\n');
        let _ = write.write_all(&out).await;
        let _ = write.shutdown().await;
    }
}
