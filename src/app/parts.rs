//! What the application holds, split by concern: each part is what one kind of operation reaches
//! the actors and settings through. The bridge builds the six parts when it assembles the
//! application ([`super::App::new`]); inside the application they are reached only through
//! [`super::App`]'s operations (an adapter holding an `App` sees none of them).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use collie_actors::audit::{AuditMsg, ChainTail};
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
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{counters, follow, rows, sent, starters};

/// What every operation uses: the machine's name, the audit log, the masker, the counters and
/// the bridge's background work.
pub struct CoreParts {
    /// This machine's name (one value for every part of the bridge; a crew join may change it).
    pub machine: MachineName,
    /// The audit actor.
    pub audit: Slot<AuditMsg>,
    /// Recorded audit breaks nobody acknowledged yet (published by the audit actor; SPEC §7).
    pub open_audit_breaks: Arc<AtomicU64>,
    /// The audit log's last line (published by the audit actor; a member sends it to its lead,
    /// [`super::witness`]).
    pub audit_head: watch::Receiver<Option<ChainTail>>,
    /// `preview` or `none`.
    pub audit_content: Arc<String>,
    /// The masker handed out by the redactor.
    pub masker: Arc<Masker>,
    /// Read / write / denial counts for `/api/health`.
    pub counters: Arc<counters::Counters>,
    /// The bridge's background work: every task the application starts is tracked here and ends
    /// with `shutdown` (a child of the bridge's root token), so none outlives the bridge.
    pub tasks: TaskTracker,
    /// Cancelled when the bridge stops.
    pub shutdown: CancellationToken,
}

/// Who may come in: the devices, the local secret, the host names and the pairing.
pub struct DoorParts {
    /// The pairing actor.
    pub pairing: Slot<PairingMsg>,
    /// The current device policy, published by the pairing actor after each durable change.
    pub policy: Policy,
    /// The current local secret.
    pub local_secret: Arc<String>,
    /// HTTP bind address (the local secret is also accepted from it when it is not loopback).
    pub bind_host: IpAddr,
    /// Host names (without port) the Host header may name.
    pub allowed_hosts: Arc<Vec<String>>,
    /// The URL phones open (QR code of `collie pair`).
    pub public_url: Arc<String>,
    /// The identity gates every `/api` request but health passes besides pairing (SPEC §14).
    pub gates: Arc<crate::identity::Gates>,
    /// Test-only (feature `fault-injection`): the store, so a test can make its device writes
    /// fail (decision 0037).
    #[cfg(feature = "fault-injection")]
    pub store: collie_actors::store::Store,
}

/// This machine's panes and what is started in them.
pub struct PaneParts {
    /// The panes actor.
    pub actor: Slot<PanesMsg>,
    /// The tmux sockets the bridge mirrors, in pane-id index order (the default socket first).
    pub tmux_sockets: Arc<Vec<PathBuf>>,
    /// Open SSE streams, capped per device and in all.
    pub streams: Arc<follow::StreamSlots>,
    /// The applied configuration's starters (SPEC §12; none without a configuration).
    pub starters: Arc<Vec<crate::applied::ResolvedStarter>>,
    /// The devices' "No prompts" confirmations (`<state>/no-prompts.json`).
    pub no_prompts: Arc<starters::NoPrompts>,
    /// The words every new pane's command runs behind under the applied sandbox policy
    /// (`collie __sandbox …`, decision 0071); `None` with the profile `off`.
    pub confined: Option<Arc<Vec<String>>>,
    /// The starter rows phones added, and `[phone] adds` / `free_text` (decision 0041).
    pub rows: Arc<rows::Rows>,
    /// The sent log and the one-shot commands (SPEC §11).
    pub sent: Arc<sent::Sent>,
}

/// The crew: the link, the members' relays, and walky-talky.
pub struct CrewParts {
    /// The crew actor.
    pub actor: Slot<CrewMsg>,
    /// The crew's current view, published by the crew actor (read without a message).
    pub view: Arc<ArcSwap<CrewView>>,
    /// On a lead: the relay clients of the online members, published by the crew actor.
    pub relays: Relays,
    /// On the deputy: the relay clients of the members at its door (SPEC §13), for a lead's
    /// device served at the standby door only.
    pub door_relays: Relays,
    /// On a member: the live connection to the lead.
    pub lead_link: LeadLink,
    /// The crew's deputy as this bridge knows it (SPEC §13).
    pub deputy: Arc<super::deputy::Deputy>,
    /// `[crew] tools`: whether a lead may call this machine's tools and upload into its panes.
    pub tools: bool,
    /// The walky actor.
    pub walky: Slot<WalkyMsg>,
    /// `COLLIE_WALKY`: whether this machine's panes accept walky messages.
    pub walky_on: bool,
    /// Test-only (feature `fault-injection`): the last walky message this lead forwarded to a
    /// member, so a test can replay it the way a compromised lead could.
    #[cfg(feature = "fault-injection")]
    pub last_forwarded: Arc<std::sync::Mutex<Option<(String, collie_crew::walky::Forwarded)>>>,
}

/// What the agents ask of a person: cards, durable agents, screen prompts and pushes.
pub struct AgentParts {
    /// The cards actor.
    pub cards: Slot<CardsMsg>,
    /// How long a held permission waits for a tap (SPEC §10.2: 10 minutes by default).
    pub hold: Duration,
    /// The durable actor.
    pub durable: Slot<DurableMsg>,
    /// The screens actor (screen prompts offered as cards).
    pub screens: Slot<ScreensMsg>,
    /// The push actor (SPEC §10.4).
    pub push: Slot<PushMsg>,
}

/// The tools and the files a phone reaches (SPEC §11).
pub struct ToolParts {
    /// The tools' workspaces, searches and sessions.
    pub toolbox: Toolbox,
    /// `<state>/blobs/`: the uploads kept to be served back (SPEC §2, §11).
    pub blobs_dir: PathBuf,
    /// The dictation's transcriber (SPEC §16).
    pub speech: Arc<crate::speech::Speech>,
}
