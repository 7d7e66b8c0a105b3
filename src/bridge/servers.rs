//! The Http actor: owns the adapters' servers — the phone API, the CLI's control socket and the
//! agents' hook socket — and
//! saves the request counts. It lives with the bridge's assembly, not in `http`, so no adapter
//! depends on another.
//!
//! It holds the already-bound TCP listener (bound once by the bridge, so a restart keeps the port)
//! and serves it with axum until it stops; its `post_stop` cancels both servers (graceful shutdown,
//! capped at a few seconds) so a restarted Http actor can take over at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use collie_actors::store::{Store, Table};

use crate::app::counters::{Counters, STORE_KEY};
use crate::app::App;
use crate::control::server as control_server;

/// The actor.
pub(super) struct HttpActor;

/// Start-up arguments.
#[derive(Clone)]
pub(super) struct HttpArgs {
    /// The handlers' context.
    pub ctx: App,
    /// The bridge's root token: each start serves under a child of it.
    pub cancel: CancellationToken,
    /// Cancelled by `collie restart` over the control socket (decision 0077).
    pub restart: CancellationToken,
    /// The bound listener (cloned for each start).
    pub listener: Arc<std::net::TcpListener>,
    /// `<state>/bridge.sock`.
    pub control_socket: PathBuf,
    /// `<state>/hooks.sock`.
    pub hook_socket: PathBuf,
    /// Where the seven-day counts are saved.
    pub store: Store,
    /// The seven-day counts (the same the handlers' context counts in).
    pub counters: Arc<Counters>,
}

/// How long after a change the counts are saved: the changes of those seconds share one write.
const SAVE_COUNTS: Duration = Duration::from_secs(5);

/// The running servers.
pub(super) struct HttpState {
    cancel: CancellationToken,
    tasks: JoinSet<()>,
    counters: Arc<Counters>,
    store: Store,
}

fn save_counts(counters: &Counters, store: &Store) {
    if let Some(bytes) = counters.take_changes() {
        if let Err(e) = store.put_lazy(Table::Meta, STORE_KEY, &bytes) {
            tracing::warn!(error = %e, "cannot save the request counts");
        }
    }
}

/// The Http actor takes no messages; it exists for custody of the servers.
#[derive(Debug)]
pub(super) enum HttpMsg {}

impl Actor for HttpActor {
    type Msg = HttpMsg;
    type State = HttpState;
    type Arguments = HttpArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: HttpArgs,
    ) -> Result<HttpState, ActorProcessingErr> {
        let cancel = args.cancel.child_token();
        let mut tasks = JoinSet::new();

        let std_listener = args.listener.try_clone()?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let app = crate::http::router(args.ctx.clone());
        let stop = cancel.clone();
        let refused = Arc::new(crate::http::serve::Refused::default());
        tasks.spawn(async move { crate::http::serve::serve(listener, app, stop, refused).await });

        let control = control_server::bind(&args.control_socket)?;
        let stop = cancel.clone();
        let ctx = args.ctx.clone();
        let restart = args.restart.clone();
        tasks.spawn(async move { control_server::serve(control, ctx, stop, restart).await });

        let hooks = crate::hooks::server::bind(&args.hook_socket)?;
        let stop = cancel.clone();
        let ctx = args.ctx.clone();
        tasks.spawn(async move { crate::hooks::server::serve(hooks, ctx, stop).await });

        let (counters, store, stop) = (
            Arc::clone(&args.counters),
            args.store.clone(),
            cancel.clone(),
        );
        tasks.spawn(async move {
            // No clock while nothing is counted: wait for a change, then save a few seconds
            // later with whatever else was counted meanwhile.
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = counters.changed() => {}
                }
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(SAVE_COUNTS) => save_counts(&counters, &store),
                }
            }
        });

        Ok(HttpState {
            cancel,
            tasks,
            counters: args.counters,
            store: args.store,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut HttpState,
    ) -> Result<(), ActorProcessingErr> {
        state.cancel.cancel();
        save_counts(&state.counters, &state.store);
        let _ = state.store.flush();
        let drain = async { while state.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(3), drain)
            .await
            .is_err()
        {
            state.tasks.abort_all();
        }
        Ok(())
    }
}
