//! The application: everything the bridge does, whichever adapter asks — the phone API (`http`),
//! the CLI's control socket (`control`), the crew relay (`relay`) and MCP. Adapters decode a
//! request, name the caller and encode the answer; resolving the machine, validating,
//! authorizing, auditing and executing an operation happen here, once (SPEC §1).
//!
//! [`App`] is what every operation reaches the actors through; [`AppError`] is how every operation
//! fails, in the words of SPEC §3.2 (the HTTP adapter maps it to a status, the control socket
//! prints it).

mod audit;
pub mod authn;
pub mod blobs;
pub mod browse;
mod caller;
pub mod cards;
pub mod chat;
pub mod colours;
pub mod commands;
pub mod counters;
pub mod create;
pub mod crew;
pub mod devices;
pub mod durable;
pub mod durable_verb;
pub mod ended;
mod error;
pub mod files;
pub mod follow;
mod local_changes;
pub mod machine;
pub mod new_pane;
pub mod notices;
pub mod operation;
pub mod ops;
mod pair_guard;
pub mod pane_writes;
pub mod panes;
pub mod permission;
pub mod push;
mod refusals;
pub mod rows;
pub mod sent;
pub mod starters;
pub mod status;
pub mod tools;
pub mod walky;
pub mod windows;
pub mod wire;

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use collie_actors::audit::{AuditMsg, AuditRecord, Denial};
use collie_actors::cards::actor::CardsMsg;
use collie_actors::cards::screens::ScreensMsg;
use collie_actors::crew_link::{CrewMsg, CrewView, LeadLink, Relays};
use collie_actors::durable::actor::DurableMsg;
use collie_actors::machine::MachineName;
use collie_actors::pairing::{PairingMsg, Policy};
use collie_actors::panes::PanesMsg;
use collie_actors::push::actor::PushMsg;
use collie_actors::redact::Masker;
use collie_actors::slot::Slot;
use collie_actors::tools::toolbox::Toolbox;
use collie_actors::walky::actor::WalkyMsg;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use self::caller::{request_id, Caller, Who};
pub use self::error::AppError;

/// What the bridge hands the application when it assembles it: the actors' slots, the views they
/// publish, and the settings the operations need. Only [`App::new`] reads it.
pub struct Wiring {
    /// This machine's name (one value for every part of the bridge; a crew join may change it).
    pub machine: MachineName,
    /// Recorded audit breaks nobody acknowledged yet (published by the audit actor; SPEC §7).
    pub open_audit_breaks: Arc<std::sync::atomic::AtomicU64>,
    /// HTTP bind address (the local secret is also accepted from it when it is not loopback).
    pub bind_host: IpAddr,
    /// Host names (without port) the Host header may name.
    pub allowed_hosts: Arc<Vec<String>>,
    /// The current local secret.
    pub local_secret: Arc<String>,
    /// The current device policy, published by the pairing actor after each durable change.
    pub policy: Policy,
    /// The pairing actor.
    pub pairing: Slot<PairingMsg>,
    /// The audit actor.
    pub audit: Slot<AuditMsg>,
    /// The panes actor.
    pub panes: Slot<PanesMsg>,
    /// The crew actor.
    pub crew: Slot<CrewMsg>,
    /// The crew's current view, published by the crew actor (read without a message).
    pub crew_view: Arc<ArcSwap<CrewView>>,
    /// On a lead: the relay clients of the online members, published by the crew actor.
    pub relays: Relays,
    /// On a member: the live connection to the lead.
    pub lead_link: LeadLink,
    /// The walky actor.
    pub walky: Slot<WalkyMsg>,
    /// `COLLIE_WALKY`: whether this machine's panes accept walky messages.
    pub walky_on: bool,
    /// The cards actor.
    pub cards: Slot<CardsMsg>,
    /// The durable actor.
    pub durable: Slot<DurableMsg>,
    /// The screens actor (screen prompts offered as cards).
    pub screens: Slot<ScreensMsg>,
    /// The push actor (SPEC §10.4).
    pub push: Slot<PushMsg>,
    /// The tools' workspaces, searches and sessions (SPEC §11).
    pub toolbox: Toolbox,
    /// `[crew] tools`: whether a lead may call this machine's tools and upload into its panes.
    pub crew_tools: bool,
    /// `<state>/blobs/`: the uploads kept to be served back (SPEC §2, §11).
    pub blobs_dir: std::path::PathBuf,
    /// How long a held permission waits for a tap (SPEC §10.2: 10 minutes by default).
    pub hold: std::time::Duration,
    /// The tmux sockets the bridge mirrors, in pane-id index order (the default socket first).
    pub tmux_sockets: Arc<Vec<std::path::PathBuf>>,
    /// The masker handed out by the redactor.
    pub masker: Arc<Masker>,
    /// Read / write / denial counts for `/api/health`.
    pub counters: Arc<counters::Counters>,
    /// `preview` or `none`.
    pub audit_content: Arc<String>,
    /// The URL phones open (QR code of `collie pair`).
    pub public_url: Arc<String>,
    /// Open SSE streams, capped per device and in all.
    pub streams: Arc<follow::StreamSlots>,
    /// The sent log and the one-shot commands (SPEC §11).
    pub sent: Arc<sent::Sent>,
    /// The applied configuration's starters (SPEC §12; none without a configuration).
    pub starters: Arc<Vec<crate::applied::ResolvedStarter>>,
    /// The devices' "No prompts" confirmations (`<state>/no-prompts.json`).
    pub no_prompts: Arc<starters::NoPrompts>,
    /// The starter rows phones added, and `[phone] adds` / `free_text` (decision 0041).
    pub rows: Arc<rows::Rows>,
    /// The bridge's background work: every task the application starts is tracked here and ends
    /// with `shutdown` (a child of the bridge's root token), so none outlives the bridge.
    pub tasks: TaskTracker,
    /// Cancelled when the bridge stops.
    pub shutdown: CancellationToken,
    /// Test-only (feature `fault-injection`): the last walky message this lead forwarded to a
    /// member, so a test can replay it the way a compromised lead could.
    #[cfg(feature = "fault-injection")]
    pub last_forwarded: Arc<std::sync::Mutex<Option<(String, collie_crew::walky::Forwarded)>>>,
    /// Test-only (feature `fault-injection`): the store, so a test can make its device writes
    /// fail (decision 0037).
    #[cfg(feature = "fault-injection")]
    pub store: collie_actors::store::Store,
}

/// The application every adapter calls: the actors' slots, the policy snapshot and a few settings,
/// reachable only through its operations (the fields are private to `app`).
///
/// One `Arc`: axum clones the state for every middleware and handler a request passes, so a clone
/// is one reference count, not one per field (the cancellation token's takes a lock).
#[derive(Clone)]
pub struct App(Arc<Parts>);

impl std::ops::Deref for App {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

/// What an [`App`] holds; its fields are private to `app`.
pub struct Parts {
    /// This machine's name (one value for every part of the bridge; a crew join may change it).
    machine: MachineName,
    /// Recorded audit breaks nobody acknowledged yet (published by the audit actor; SPEC §7).
    open_audit_breaks: Arc<std::sync::atomic::AtomicU64>,
    /// HTTP bind address (the local secret is also accepted from it when it is not loopback).
    bind_host: IpAddr,
    /// Host names (without port) the Host header may name.
    allowed_hosts: Arc<Vec<String>>,
    /// The current local secret.
    local_secret: Arc<String>,
    /// The current device policy, published by the pairing actor after each durable change.
    policy: Policy,
    /// The pairing actor.
    pairing: Slot<PairingMsg>,
    /// The audit actor.
    audit: Slot<AuditMsg>,
    /// The panes actor.
    panes: Slot<PanesMsg>,
    /// The crew actor.
    crew: Slot<CrewMsg>,
    /// The crew's current view, published by the crew actor (read without a message).
    crew_view: Arc<ArcSwap<CrewView>>,
    /// On a lead: the relay clients of the online members, published by the crew actor.
    relays: Relays,
    /// On a member: the live connection to the lead.
    lead_link: LeadLink,
    /// The walky actor.
    walky: Slot<WalkyMsg>,
    /// `COLLIE_WALKY`: whether this machine's panes accept walky messages.
    walky_on: bool,
    /// The cards actor.
    cards: Slot<CardsMsg>,
    /// The durable actor.
    durable: Slot<DurableMsg>,
    /// The screens actor.
    screens: Slot<ScreensMsg>,
    /// The push actor.
    push: Slot<PushMsg>,
    /// The tools' workspaces, searches and sessions.
    toolbox: Toolbox,
    /// Whether a lead may call this machine's tools.
    crew_tools: bool,
    /// `<state>/blobs/`: the uploads kept to be served back.
    blobs_dir: std::path::PathBuf,
    /// How long a held permission waits for a tap.
    hold: std::time::Duration,
    /// The tmux sockets the bridge mirrors, in pane-id index order (the default socket first).
    tmux_sockets: Arc<Vec<std::path::PathBuf>>,
    /// The masker handed out by the redactor.
    masker: Arc<Masker>,
    /// Read / write / denial counts for `/api/health`.
    counters: Arc<counters::Counters>,
    /// `preview` or `none`.
    audit_content: Arc<String>,
    /// The URL phones open (QR code of `collie pair`).
    public_url: Arc<String>,
    /// Open SSE streams, capped per device and in all.
    streams: Arc<follow::StreamSlots>,
    /// The sent log and the one-shot commands (SPEC §11).
    sent: Arc<sent::Sent>,
    /// The applied starters.
    starters: Arc<Vec<crate::applied::ResolvedStarter>>,
    /// The devices' "No prompts" confirmations.
    no_prompts: Arc<starters::NoPrompts>,
    /// The starter rows phones added.
    rows: Arc<rows::Rows>,
    /// The bridge's background work: every task the application starts is tracked here and ends
    /// with `shutdown` (a child of the bridge's root token), so none outlives the bridge.
    tasks: TaskTracker,
    /// Cancelled when the bridge stops.
    shutdown: CancellationToken,
    /// Test-only (feature `fault-injection`): the last walky message this lead forwarded to a
    /// member, so a test can replay it the way a compromised lead could.
    #[cfg(feature = "fault-injection")]
    last_forwarded: Arc<std::sync::Mutex<Option<(String, collie_crew::walky::Forwarded)>>>,
    /// Test-only: see [`Wiring::store`].
    #[cfg(feature = "fault-injection")]
    store: collie_actors::store::Store,
}

impl App {
    /// The application over `w`.
    pub fn new(w: Wiring) -> App {
        App(Arc::new(Parts {
            machine: w.machine,
            open_audit_breaks: w.open_audit_breaks,
            bind_host: w.bind_host,
            allowed_hosts: w.allowed_hosts,
            local_secret: w.local_secret,
            policy: w.policy,
            pairing: w.pairing,
            audit: w.audit,
            panes: w.panes,
            crew: w.crew,
            crew_view: w.crew_view,
            relays: w.relays,
            lead_link: w.lead_link,
            walky: w.walky,
            walky_on: w.walky_on,
            cards: w.cards,
            durable: w.durable,
            screens: w.screens,
            push: w.push,
            toolbox: w.toolbox,
            crew_tools: w.crew_tools,
            blobs_dir: w.blobs_dir,
            hold: w.hold,
            tmux_sockets: w.tmux_sockets,
            masker: w.masker,
            counters: w.counters,
            audit_content: w.audit_content,
            public_url: w.public_url,
            streams: w.streams,
            sent: w.sent,
            starters: w.starters,
            no_prompts: w.no_prompts,
            rows: w.rows,
            tasks: w.tasks,
            shutdown: w.shutdown,
            #[cfg(feature = "fault-injection")]
            last_forwarded: w.last_forwarded,
            #[cfg(feature = "fault-injection")]
            store: w.store,
        }))
    }

    /// Runs `work` in the background, tracked by the bridge and cancelled when it stops (never a
    /// detached task: the bridge waits for it at shutdown).
    pub(crate) fn spawn<F>(&self, work: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let stop = self.shutdown.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = work => {}
            }
        });
    }

    /// This machine's name now.
    pub fn machine_name(&self) -> String {
        self.machine.get()
    }

    /// The host names (without port) this bridge answers for.
    pub fn allowed_host_names(&self) -> Vec<String> {
        self.allowed_hosts.as_ref().clone()
    }

    /// Cancelled when the bridge stops (for servers the application hands out).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Whether `host` (lowercased, without port) is one this bridge answers for.
    pub fn host_allowed(&self, host: &str) -> bool {
        self.allowed_hosts.iter().any(|h| h == host)
    }

    /// The request counts changed since the last call, encoded for the store (`None` if none).
    pub fn take_count_changes(&self) -> Option<Vec<u8>> {
        self.counters.take_changes()
    }

    /// The address a phone opens to pair with `code` (the QR code of `collie pair`).
    pub fn pair_url(&self, code: &str) -> String {
        format!(
            "{}/#pair={}",
            self.public_url.trim_end_matches('/'),
            code.replace('-', "")
        )
    }

    /// Test-only (feature `fault-injection`): makes every durable write to the device table fail
    /// (`true`) or work again (`false`) — a disk refusing the pairing actor's writes.
    #[cfg(feature = "fault-injection")]
    pub fn fail_device_writes(&self, fail: bool) {
        self.0
            .store
            .fail_writes_to(fail.then_some(collie_actors::store::Table::Devices));
    }

    /// Test-only (feature `fault-injection`): makes the panes actor fail its next snapshot, once
    /// it runs; `false` when it did not start within 5 s.
    #[cfg(feature = "fault-injection")]
    pub async fn fail_next_snapshot(&self) -> bool {
        for _ in 0..100 {
            if self.panes.get().is_some() {
                return self.panes.cast(PanesMsg::FailNextSnapshot).is_ok();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    }
}

impl App {
    /// Records a refusal: the health counter, and a line (`security.denied`, or `resource.denied`
    /// for a stream cap) the audit actor writes at most once a minute per source and reason. Never
    /// waits: a refusal is never held up by the log.
    pub fn deny(&self, source: String, reason: &str, record: AuditRecord) {
        self.counters.denied();
        let denial = Denial {
            source,
            reason: reason.to_owned(),
            record: record.with_detail("reason", reason.to_owned()),
        };
        let _ = self.audit.cast(AuditMsg::Denied(Box::new(denial)));
    }
}
