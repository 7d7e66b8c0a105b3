//! `collie bridge`: assembles the supervision tree of SPEC §1 and runs it until a signal or until
//! the supervisor gives up on a child.
//!
//! Start order: state dir (0700, modes tightened), store, local secret, then the supervisor with its
//! children Redactor → Audit → Pairing → Panes → Crew → Walky → Cards → Durable → Push → Screens → Http.
//! Every child is reached through a [`collie_actors::slot::Slot`] that the supervisor refreshes on
//! restart. A clean exit deletes `local-secret` and the control socket.

mod confined;
mod servers;

// The start's refusal of a sandbox this kernel cannot enforce (SPEC §15, decision 0072).
mod sandbox_check;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use arc_swap::ArcSwap;
use collie_actors::audit::actor::{AuditActor, AuditArgs};
use collie_actors::audit::{AuditMsg, ContentMode};
use collie_actors::cards::actor::{CardsActor, CardsMsg};
use collie_actors::cards::screens::{ScreensActor, ScreensArgs, ScreensMsg};
use collie_actors::crew_link::{CrewActor, CrewArgs, CrewMsg, CrewView, LeadLink, Relays};
use collie_actors::durable::actor::{DurableActor, DurableArgs, DurableMsg};
use collie_actors::machine::MachineName;
use collie_actors::pairing::actor::{PairingActor, PairingArgs};
use collie_actors::pairing::{PairingMsg, Policy, PolicySnapshot};
use collie_actors::panes::actor::{PanesActor, PanesArgs};
use collie_actors::panes::PanesMsg;
use collie_actors::push::actor::{PushActor, PushArgs, PushMsg};
use collie_actors::redact::actor::Redactor;
use collie_actors::redact::Masker;
use collie_actors::slot::Slot;
use collie_actors::store::Store;
use collie_actors::supervisor::{
    BridgeSupervisor, ChildSpec, ExitReason, SupervisorArgs, SupervisorMsg,
};
use collie_actors::tools::search::SearchLimits;
use collie_actors::tools::sessions::{Launcher, SessionLimits, TOOL_GUARD};
use collie_actors::tools::toolbox::{Toolbox, ToolboxConfig};
use collie_actors::tools::workspace::{Guarded, Workspaces};
use collie_actors::walky::actor::{WalkyActor, WalkyArgs, WalkyMsg};
use ractor::{Actor, ActorRef};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::servers::{HttpActor, HttpArgs};
use crate::app::counters::Counters;
use crate::app::{AgentParts, App, CoreParts, CrewParts, DoorParts, PaneParts, ToolParts};
use crate::applied::{ResolveEnv, Snapshot};
use crate::config::{Access, Settings};
use crate::state;

/// How long each step of the shutdown may take.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// A started bridge.
pub struct RunningBridge {
    /// Where the phone API listens.
    pub http_addr: SocketAddr,
    /// The shared context (also used by in-process tests).
    pub ctx: App,
    supervisor: ActorRef<SupervisorMsg>,
    join: JoinHandle<()>,
    exit: ExitReason,
    state_dir: PathBuf,
    signals: Signals,
    /// The root of the cancellation tree: the servers and every background task end with it.
    root: CancellationToken,
    /// Every task outside the actors (the relay and uplink servers, the application's background
    /// work); waited for at shutdown.
    tasks: TaskTracker,
    /// Cancelled when `collie restart` asks this bridge to execute itself again (decision 0077).
    restart: CancellationToken,
}

/// Why a bridge stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// SIGTERM or SIGINT: a clean stop.
    Signal,
    /// The supervisor gave up on a child (the message names it).
    GaveUp(String),
    /// `collie restart` asked for a new start of the same program: the caller executes it once
    /// this bridge is wholly stopped.
    Restart,
}

/// SIGTERM and SIGINT streams, registered before anything starts so an early signal still means
/// a clean shutdown.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

/// Builds the tree and starts serving.
pub async fn start(settings: Settings) -> Result<RunningBridge> {
    use tokio::signal::unix::{signal, SignalKind};
    let signals = Signals {
        term: signal(SignalKind::terminate())?,
        int: signal(SignalKind::interrupt())?,
    };
    for change in state::prepare_state_dir(&settings.state_dir)? {
        tracing::warn!("{change}");
    }
    // SPEC §12: nothing runs unless the configuration is exactly what `collie apply` pinned.
    let resolve_env = ResolveEnv::for_settings(&settings, std::env::var("PATH").ok());
    let applied = crate::applied::check(&settings, &resolve_env).map_err(anyhow::Error::new)?;
    sandbox_check::enforceable(applied.as_ref())?;
    let store = Store::open(&settings.state_dir.join("db"))
        .with_context(|| format!("opening the store in {}", settings.state_dir.display()))?;
    // A starter row never outlives the device that added it (decision 0041): rows whose device
    // is gone (a removal at revocation that failed) are removed before anything can list them.
    if let Some(paired) = crate::app::rows::paired_in_store(&store) {
        let removed = crate::app::rows::purge_orphans(&store, &paired);
        if removed > 0 {
            tracing::info!(
                removed,
                "starter rows of devices no longer paired were removed"
            );
        }
    }
    let local_secret = state::write_local_secret(&settings.state_dir)?;
    // One name everywhere (SPEC §3.1): a member is called what it joined its crew as.
    let name = match collie_actors::crew_link::stored_member_name(&store) {
        Some(joined) if joined != settings.name => {
            tracing::warn!(
                configured = %settings.name,
                joined = %joined,
                "this bridge joined its crew as `{joined}`: that is its name (the configured one is not used)"
            );
            joined
        }
        _ => settings.name.clone(),
    };
    let machine = MachineName::new(name.clone());

    let listener = TcpListener::bind((settings.host, settings.port)).with_context(|| {
        format!(
            "cannot listen on {}:{} (is another bridge running? set COLLIE_PORT or --port)",
            settings.host, settings.port
        )
    })?;
    listener.set_nonblocking(true)?;
    let http_addr = listener.local_addr()?;

    let masker = Arc::new(Masker::new(settings.redact));
    let policy = Policy::new(PolicySnapshot::empty(0));
    let audit_slot: Slot<AuditMsg> = Slot::default();
    let pairing_slot: Slot<PairingMsg> = Slot::default();
    let panes_slot: Slot<PanesMsg> = Slot::default();
    let crew_slot: Slot<CrewMsg> = Slot::default();
    let walky_slot: Slot<WalkyMsg> = Slot::default();
    let cards_slot: Slot<CardsMsg> = Slot::default();
    let durable_slot: Slot<DurableMsg> = Slot::default();
    let screens_slot: Slot<ScreensMsg> = Slot::default();
    let push_slot: Slot<PushMsg> = Slot::default();
    let crew_view = Arc::new(ArcSwap::from_pointee(CrewView::solo(&name)));
    let (relay_streams, relay_streams_rx) = tokio::sync::mpsc::channel(crate::relay::member::QUEUE);
    let (uplink_streams, uplink_streams_rx) =
        tokio::sync::mpsc::channel(crate::relay::uplink::QUEUE);
    let mut tmux_sockets = vec![crate::app::walky::sender::default_tmux_socket()];
    tmux_sockets.extend(settings.tmux_sockets.iter().cloned());
    let content_mode: ContentMode = settings
        .audit_content
        .parse()
        .map_err(|e| anyhow::anyhow!("COLLIE_AUDIT_CONTENT: {e}"))?;

    let mut allowed_hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
        settings.host.to_string(),
    ];
    if let Some(url) = &settings.public_url {
        if let Some(h) = public_host(url) {
            allowed_hosts.push(h);
        }
    }

    let confined = confined::prefix(applied.as_ref())?;
    let toolbox = toolbox(&settings, applied.as_ref(), confined.as_deref())?;
    let root = CancellationToken::new();
    let restart = CancellationToken::new();
    let tasks = TaskTracker::new();
    // Cloudflare Access (SPEC §14): its keys are fetched now and hourly; until the first fetch
    // succeeds every request is refused (fail-closed).
    let access = match &settings.gates.access {
        Some(cfg) => {
            let gate = cfg.gate()?;
            let refresher = gate.clone();
            let stop = root.child_token();
            tasks.spawn(async move { refresher.run_refresher(stop).await });
            Some(gate)
        }
        None => None,
    };
    let open_audit_breaks = Arc::new(AtomicU64::new(0));
    let (audit_head_tx, audit_head) = tokio::sync::watch::channel(None);
    let relays = Relays::default();
    let door_relays = Relays::default();
    let lead_link = LeadLink::default();
    let reach = Arc::new(collie_actors::crew_link::LeadReach::new());
    let counters = Arc::new(Counters::restored(
        store
            .get(
                collie_actors::store::Table::Meta,
                crate::app::counters::STORE_KEY,
            )
            .ok()
            .flatten()
            .as_deref(),
    ));
    let updates = Arc::new(crate::update::Updates::new(
        settings.update_check,
        &settings.state_dir,
    ));
    if settings.update_check {
        // At start and daily, one anonymous GET of the latest release's tag (SPEC §17).
        match crate::update::Source::of_build() {
            Ok(Some(source)) => {
                let run = Arc::clone(&updates).run(
                    source,
                    settings.state_dir.clone(),
                    root.child_token(),
                );
                tasks.spawn(run);
            }
            Ok(None) => tracing::info!("this build names no release host: no update check"),
            Err(e) => tracing::warn!(error = %e, "the update check cannot start"),
        }
    }
    let core = CoreParts {
        machine: machine.clone(),
        audit: audit_slot.clone(),
        open_audit_breaks: Arc::clone(&open_audit_breaks),
        audit_head,
        audit_content: Arc::new(settings.audit_content.clone()),
        masker: Arc::clone(&masker),
        counters: Arc::clone(&counters),
        tasks: tasks.clone(),
        shutdown: root.child_token(),
        updates,
    };
    let door = DoorParts {
        pairing: pairing_slot.clone(),
        policy: policy.clone(),
        local_secret: Arc::new(local_secret),
        bind_host: settings.host,
        allowed_hosts: Arc::new(allowed_hosts),
        public_url: Arc::new(
            settings
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{http_addr}")),
        ),
        gates: Arc::new(settings.gates.gates_around(access.map(|a| {
            let gate: Arc<dyn crate::identity::Gate> = Arc::new(a);
            gate
        }))),
        #[cfg(feature = "fault-injection")]
        store: store.clone(),
    };
    let panes = PaneParts {
        actor: panes_slot.clone(),
        tmux_sockets: Arc::new(tmux_sockets),
        streams: Arc::default(),
        starters: Arc::new(
            applied
                .as_ref()
                .map(|a| a.resolved.starters.clone())
                .unwrap_or_default(),
        ),
        no_prompts: Arc::new(crate::app::starters::NoPrompts::load(&settings.state_dir)),
        confined: confined.map(Arc::new),
        rows: Arc::new(crate::app::rows::Rows::new(
            store.clone(),
            settings.phone_rows,
        )),
        sent: Arc::new(crate::app::sent::Sent::new(
            &settings.state_dir,
            settings.sent,
            settings.phone_run,
        )),
    };
    let crew = CrewParts {
        actor: crew_slot.clone(),
        view: Arc::clone(&crew_view),
        relays: Arc::clone(&relays),
        door_relays: Arc::clone(&door_relays),
        lead_link: Arc::clone(&lead_link),
        deputy: Arc::new(crate::app::deputy::Deputy::load(
            &settings.state_dir,
            Arc::clone(&reach),
        )),
        tools: settings.crew_tools,
        walky: walky_slot.clone(),
        walky_on: settings.walky,
        #[cfg(feature = "fault-injection")]
        last_forwarded: Arc::default(),
    };
    let agents = AgentParts {
        cards: cards_slot.clone(),
        hold: settings.hold,
        durable: durable_slot.clone(),
        screens: screens_slot.clone(),
        push: push_slot.clone(),
    };
    let tools = ToolParts {
        toolbox,
        blobs_dir: settings.state_dir.join("blobs"),
        speech: Arc::new(
            crate::speech::Speech::new(applied.as_ref(), &settings.state_dir)
                .context("preparing the folder of dictations")?,
        ),
    };
    let ctx = App::new(core, door, panes, crew, agents, tools);

    let audit_args = AuditArgs {
        path: settings
            .state_dir
            .join(collie_actors::state_files::AUDIT_LOG),
        store: store.clone(),
        mode: content_mode,
        mask: {
            let masker = Arc::clone(&masker);
            Arc::new(move |s: &str| masker.mask(s).into_owned())
        },
        machine: machine.clone(),
        open_breaks: open_audit_breaks,
        head: Arc::new(audit_head_tx),
    };
    let pairing_args = PairingArgs {
        store: store.clone(),
        policy: policy.clone(),
        audit: audit_slot.clone(),
        machine: machine.clone(),
    };
    let panes_args = PanesArgs {
        machine: machine.clone(),
        store: store.clone(),
        masker: Arc::clone(&masker),
        tmux_sockets: settings.tmux_sockets.clone(),
        buffer_cap: collie_actors::panes::actor::BUFFER_CAP,
    };
    let crew_args = CrewArgs {
        store: store.clone(),
        audit: audit_slot.clone(),
        state_dir: settings.state_dir.clone(),
        machine: machine.clone(),
        bind: SocketAddr::new(settings.host, settings.crew_port),
        address: settings.crew_address.clone(),
        view: Arc::clone(&crew_view),
        relays,
        door_relays,
        relay_streams,
        lead_link,
        reach,
        uplink_streams,
        serve_tools: settings.crew_tools,
    };
    let walky_args = WalkyArgs {
        dir: settings.state_dir.join("walky"),
        identity_dir: settings.state_dir.join("crew"),
        crew_view: Arc::clone(&crew_view),
    };
    let push_args = PushArgs {
        store: store.clone(),
        dir: settings.state_dir.join("push"),
        services: settings.push_services.clone(),
        policy: policy.clone(),
        cards: cards_slot.clone(),
        masker: Arc::clone(&masker),
        machine: machine.clone(),
    };
    ctx.spawn(crate::relay::uplink::run(ctx.clone(), uplink_streams_rx));
    ctx.spawn(crate::app::push::watch::run(ctx.clone()));
    ctx.spawn(crate::app::ended::watch(ctx.clone()));
    ctx.spawn(crate::app::deputy::push::run(ctx.clone()));
    ctx.spawn(crate::relay::member::run(ctx.clone(), relay_streams_rx));
    let screens_args = ScreensArgs {
        machine: machine.clone(),
        panes: panes_slot.clone(),
        cards: cards_slot.clone(),
        hold: settings.hold,
    };
    let durable_args = DurableArgs {
        sources: settings
            .state_dir
            .join(collie_actors::durable::sources::FILE),
        machine: machine.clone(),
        cards: cards_slot.clone(),
        masker: Arc::clone(&masker),
        hold: collie_actors::durable::actor::HOLD,
    };
    let http_args = HttpArgs {
        ctx: ctx.clone(),
        cancel: root.clone(),
        restart: restart.clone(),
        listener: Arc::new(listener),
        control_socket: settings.control_socket(),
        hook_socket: settings.hook_socket(),
        store: store.clone(),
        counters,
    };
    let children = vec![
        child("redactor", || Redactor, Arc::clone(&masker), None),
        child("audit", || AuditActor, audit_args, Some(audit_slot)),
        child("pairing", || PairingActor, pairing_args, Some(pairing_slot)),
        child("panes", || PanesActor, panes_args, Some(panes_slot)),
        child("crew", || CrewActor, crew_args, Some(crew_slot)),
        child("walky", || WalkyActor, walky_args, Some(walky_slot)),
        child("cards", || CardsActor, (), Some(cards_slot)),
        child("durable", || DurableActor, durable_args, Some(durable_slot)),
        child("push", || PushActor, push_args, Some(push_slot)),
        child("screens", || ScreensActor, screens_args, Some(screens_slot)),
        child("http", || HttpActor, http_args, None),
    ];

    let exit = ExitReason::default();
    let (supervisor, join) = Actor::spawn(
        None,
        BridgeSupervisor,
        SupervisorArgs {
            children,
            exit: exit.clone(),
        },
    )
    .await
    .context("starting the supervision tree")?;
    // After the actors started: the crew's role and the log's head are known.
    ctx.spawn(crate::app::witness::run(
        ctx.clone(),
        settings
            .state_dir
            .join(collie_actors::state_files::AUDIT_LOG),
    ));

    Ok(RunningBridge {
        http_addr,
        ctx,
        supervisor,
        join,
        exit,
        state_dir: settings.state_dir.clone(),
        signals,
        root,
        tasks,
        restart,
    })
}

impl RunningBridge {
    /// Waits until a shutdown signal or the supervisor gives up; stops the tree and cleans up.
    /// Returns the give-up message if a child failed too often.
    pub async fn run_until_signal(self) -> Result<Option<String>> {
        Ok(match self.run().await? {
            Ended::GaveUp(why) => Some(why),
            Ended::Signal | Ended::Restart => None,
        })
    }

    /// Waits until a shutdown signal, a `collie restart`, or the supervisor giving up; stops the
    /// tree and cleans up — the same stop for each, so a restart frees the port and the store
    /// exactly as SIGTERM does.
    pub async fn run(mut self) -> Result<Ended> {
        let ended = tokio::select! {
            _ = self.signals.term.recv() => Ended::Signal,
            _ = self.signals.int.recv() => Ended::Signal,
            _ = self.restart.cancelled() => Ended::Restart,
            _ = &mut self.join => match self.exit.gave_up() {
                Some(why) => Ended::GaveUp(why),
                None => Ended::Signal,
            },
        };
        self.stop().await;
        Ok(ended)
    }

    /// Stops the tree and cleans up (for in-process tests).
    pub async fn shutdown(self) {
        self.stop().await;
    }

    /// The one shutdown: cancel the root (servers stop accepting, background tasks end), stop the
    /// actors (the supervisor stops them in reverse start order and waits), wait for the tasks,
    /// remove the ephemeral files. Each wait is capped at 5 s.
    async fn stop(self) {
        // Sessions first: their processes must not outlive the bridge (SPEC §11).
        self.ctx.stop_tools().await;
        // A member's lead witnesses where its audit log stands as it stops (issue 28), while the
        // link and the audit actor still run.
        self.ctx.send_final_head().await;
        let RunningBridge {
            supervisor,
            mut join,
            state_dir,
            root,
            tasks,
            ..
        } = self;
        root.cancel();
        tasks.close();
        if !join.is_finished() {
            supervisor.stop(Some("shutdown".into()));
            if tokio::time::timeout(STOP_WITHIN, &mut join).await.is_err() {
                tracing::warn!("actors did not stop within 5 s");
                join.abort();
            }
        }
        if tokio::time::timeout(STOP_WITHIN, tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not end within 5 s");
        }
        for f in state::ephemeral_files(&state_dir) {
            let _ = std::fs::remove_file(f);
        }
    }

    /// Restart counts per child.
    pub async fn restarts(&self) -> Vec<(&'static str, usize)> {
        ractor::call_t!(self.supervisor, SupervisorMsg::Restarts, 2000).unwrap_or_default()
    }
}

/// A child of the supervisor: spawns `make()` linked to the supervisor with a clone of `args`, and
/// publishes it in `slot` (when callers reach it through one) at every (re)start.
fn child<A>(
    name: &'static str,
    make: fn() -> A,
    args: A::Arguments,
    slot: Option<Slot<A::Msg>>,
) -> ChildSpec
where
    A: Actor,
    A::Arguments: Clone + Sync,
{
    ChildSpec {
        name,
        start: Arc::new(move |sup| {
            let args = args.clone();
            let slot = slot.clone();
            Box::pin(async move {
                let (actor, _) = Actor::spawn_linked(None, make(), args, sup).await?;
                if let Some(slot) = slot {
                    slot.set(actor.clone());
                }
                Ok(actor.get_cell())
            })
        }),
    }
}

/// The tools' workspaces, bounds and process launcher (SPEC §11). Without a home folder there is
/// no workspace, and every file tool refuses every path.
/// The tools' toolbox. Their workspaces are the applied configuration's (SPEC §12), or the home
/// folder when nothing is configured (SPEC §11).
fn toolbox(
    settings: &Settings,
    applied: Option<&Snapshot>,
    confined: Option<&[String]>,
) -> Result<Toolbox> {
    let paths = &settings.tool_paths;
    let guarded = Guarded {
        state_dirs: paths.state_dirs.clone(),
        config_dirs: vec![settings.config_dir.clone()],
        agent_settings_dirs: paths.agent_settings_dirs.clone(),
    };
    let (roots, read_only): (Vec<PathBuf>, Vec<PathBuf>) = match applied {
        Some(snapshot) => {
            let ws = &snapshot.resolved.workspaces;
            (
                ws.iter().map(|w| w.path.clone()).collect(),
                ws.iter()
                    .filter(|w| w.access == Access::Read)
                    .map(|w| w.path.clone())
                    .collect(),
            )
        }
        None => (paths.home.iter().cloned().collect(), Vec::new()),
    };
    let workspaces = if roots.is_empty() {
        None
    } else {
        match Workspaces::new(roots, guarded) {
            Ok(ws) => {
                let ws = ws.with_read_only(&read_only);
                Some(match &paths.home {
                    Some(home) => ws.with_home(home.clone()),
                    None => ws,
                })
            }
            Err(e) => {
                tracing::warn!(error = %e, "no workspace for the file tools");
                None
            }
        }
    };
    let program = std::env::current_exe().context("finding this program for the tools' guard")?;
    Ok(Toolbox::new(ToolboxConfig {
        workspaces,
        search: SearchLimits::default(),
        sessions: SessionLimits::default(),
        launcher: Launcher {
            program,
            args: vec![TOOL_GUARD.into()],
            sandbox: confined
                .unwrap_or_default()
                .iter()
                .map(Into::into)
                .collect(),
        },
    }))
}

/// The host of the configured public URL (`http` or `https`), lowercased, an IPv6 address
/// without brackets: as [`crate::http::headers::host_part`] reads a `Host` header.
fn public_host(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(match url.host()? {
        url::Host::Domain(name) => name.to_owned(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::public_host;

    #[test]
    fn the_public_url_names_a_host_as_a_host_header_would() {
        for (url, host) in [
            (
                "https://Phone.Example.ts.net/",
                Some("phone.example.ts.net"),
            ),
            ("http://phone.example:8443/collie", Some("phone.example")),
            ("https://[::1]:7420", Some("::1")),
            ("https://127.0.0.1", Some("127.0.0.1")),
            ("ftp://phone.example/", None),
            ("phone.example", None),
        ] {
            assert_eq!(public_host(url).as_deref(), host, "{url}");
        }
    }
}
