//! The phone API's accept loop: hyper's HTTP/1 server with the limits a slow or hostile client
//! meets (SPEC §3.2, issue 9 hole 13), which `axum::serve` has no knobs for.
//!
//! - **Connections**: at most [`MAX_CONNECTIONS`] at once; one past it is closed as soon as it is
//!   accepted (counted, not logged per connection).
//! - **Headers**: a request's head must arrive within [`HEADER_TIMEOUT`] of the connection being
//!   ready for it — which is also how long an idle keep-alive connection stays open between
//!   requests — or the connection is closed.
//! - **Bodies** are read whole, within a time and size limit, by [`super::body`]; **streams** are
//!   capped per device and in all by [`crate::app::follow`].
//!
//! Every connection runs in a task of one `JoinSet` owned by the server; cancelling the token
//! starts a graceful shutdown of each, and the set is aborted when the server returns.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Most open connections (a phone keeps a few; SSE streams hold one each).
pub const MAX_CONNECTIONS: usize = 512;
/// How long a request's head may take to arrive, and how long an idle connection stays open.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish when the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Connections closed at once because [`MAX_CONNECTIONS`] were open.
#[derive(Debug, Default)]
pub struct Refused(AtomicU64);

impl Refused {
    /// How many so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Serves `router` on `listener` until `cancel` fires.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    cancel: CancellationToken,
    refused: Arc<Refused>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        // EMFILE and friends: pause rather than spin.
                        tracing::warn!(error = %e, "http accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    refused.0.fetch_add(1, Ordering::Relaxed);
                    drop(stream);
                    continue;
                };
                let router = router.clone();
                let cancel = cancel.clone();
                conns.spawn(async move {
                    let _slot = slot;
                    serve_connection(stream, peer, router, cancel).await;
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        conns.abort_all();
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    cancel: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let service = router.map_request(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = cancel.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
}
