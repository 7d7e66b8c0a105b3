//! The crew link (SPEC §8): this bridge's place in a crew, and the connection between lead and
//! members.
//!
//! **What it owns.** The role (solo, lead or member, kept in the store's `crew` table with the crew
//! secret), the machine's crew identity (`<state>/crew/`, created by `crew init` or `crew join`),
//! the QUIC endpoint, and the tasks that serve it. On the lead: the registry of pinned members and
//! issued invites (only the hash of each join secret is stored) and which members are online. On a
//! member: the lead's pin and address and whether the link is up.
//!
//! **Who sends it what.** The CLI (through the control socket and `src/app/crew.rs`) sends `Init`,
//! `Invite`, `Join` and `Remove`; the link's own tasks ([`link`]) ask it to decide join requests and
//! hellos and report connections that ended. Readers (`collie crew status`, `GET /api/machines`,
//! `/api/health`) never send it a message: the actor publishes a [`CrewView`] in an `ArcSwap` after
//! every change.
//!
//! **Pure cores.** [`lead::LeadCore`] is the lead's orchestration — joins, hellos, the online
//! table, removals — with events in and effects out, driven by this actor (`lead_role.rs`) and by
//! the simulations alike; it keeps the members and invites in [`core::Registry`] (`now` passed
//! in). [`backoff::Backoff`] gives reconnect delays (the random fraction passed in), and the link
//! tasks' deadlines are [`link::accepted::Accepted`] on the lead and [`link::dialer::Dialer`] on a
//! member, run by `link.rs` and by the simulations alike. [`invite`] is
//! the invite string, `persist.rs` what the `crew` table holds ([`registry_from_entries`] reads
//! the registry back from its entries). A member's side is `member_role.rs`. `lead_witness.rs` keeps
//! the members' audit chain heads ([`crate::audit::witness`]).
//!
//! **When it fails.** The supervisor restarts it; `pre_start` reads the role from the store and
//! reopens the endpoint (a lead on the address it had), so members reconnect by themselves. The
//! tasks are owned by the actor's state and aborted when it stops.

pub mod actor;
pub mod backoff;
pub mod core;
pub mod invite;
pub mod lead;
mod lead_deputy;
mod lead_role;
mod lead_witness;
pub mod link;
mod member_deputy;
mod member_role;
mod persist;
pub mod reach;
pub mod registry_copy;
pub mod standby;

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use collie_crew::relay::client::{RelayClient, Subscription};
use collie_crew::transport::quic::{QuicConnection, QuicRecv, QuicSend};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

pub use self::actor::{CrewActor, CrewArgs, CrewMsg};
pub use self::persist::{registry_from_entries, stored_member_name};
pub use self::reach::LeadReach;

/// On the deputy: the relay clients of the members connected to its door, by name (published by
/// the actor like [`Relays`]; only a lead's device served at the standby door may use them).
pub type DoorRelays = Relays;

/// On a lead: a relay client per online member, by name, published by the actor whenever a member
/// comes or goes. The phone API reads it without a message, so a relayed request costs no actor
/// round trip.
pub type Relays = Arc<RelaySet>;

/// The relay clients of the online members, by name.
pub type RelayMap = BTreeMap<String, Arc<MemberRelay>>;

/// What [`Relays`] points at: the published map, and a counter that moves with each publication,
/// so a watcher of the members waits for a change instead of looking on a clock.
#[derive(Debug)]
pub struct RelaySet {
    current: ArcSwap<RelayMap>,
    published: watch::Sender<u64>,
}

impl Default for RelaySet {
    fn default() -> RelaySet {
        RelaySet {
            current: ArcSwap::default(),
            published: watch::channel(0).0,
        }
    }
}

impl RelaySet {
    /// The map as last published.
    pub fn load(&self) -> arc_swap::Guard<Arc<RelayMap>> {
        self.current.load()
    }

    /// Publishes `map` and tells the watchers.
    pub fn store(&self, map: Arc<RelayMap>) {
        self.current.store(map);
        self.published.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes with each publication.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }
}

/// On a lead: the relay client of one member, over the link's transport. A name of its own so the
/// application names the relay, never the transport it runs on (SPEC §1: `app` never names QUIC).
pub type MemberRelay = RelayClient<QuicConnection>;

/// On a lead: a running stream from a member (screen changes or card changes), over the link's
/// transport; see [`MemberRelay`].
pub type MemberSubscription = Subscription<QuicConnection>;

/// On a member: one relay stream the lead (or, while the lead is out of reach, the deputy) opened,
/// handed to the bridge's relay server (which knows panes, masking and auditing; this actor knows
/// only the link).
#[derive(Debug)]
pub struct RelayStream {
    /// The sending half.
    pub send: QuicSend,
    /// The receiving half.
    pub recv: QuicRecv,
    /// The deputy's name when the deputy opened it (SPEC §13); `None` for the lead.
    pub deputy: Option<String>,
}

/// On a member: the live connection to the lead, if the link is up (the bridge opens uplink
/// streams on it, e.g. to send a walky message through the lead).
pub type LeadLink = Arc<arc_swap::ArcSwapOption<QuicConnection>>;

/// On the lead: one stream a member opened after its hello (an uplink request, e.g. a walky
/// message to forward), with who opened it.
#[derive(Debug)]
pub struct UplinkStream {
    /// The member's crew name.
    pub member: String,
    /// The certificate the member presented on this connection (its pin is pinned for `member`).
    pub certificate: Option<Vec<u8>>,
    /// The sending half.
    pub send: QuicSend,
    /// The receiving half.
    pub recv: QuicRecv,
}

/// Why a crew command failed; `Display` is the message the CLI prints.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrewError {
    /// `crew init` on a lead.
    #[error("this bridge already leads a crew")]
    AlreadyLead,
    /// `crew init` or `crew join` on a member.
    #[error("this bridge is already a member of a crew")]
    AlreadyMember,
    /// A lead-only command on a bridge that does not lead.
    #[error("this bridge does not lead a crew (run `collie crew init` first)")]
    NotLead,
    /// No member has the name.
    #[error("no member named {0} in this crew")]
    NoSuchMember(String),
    /// `crew deputy set` naming a member whose bridge does not stand in for a lead (it did not
    /// declare the `deputy` capability in its hello).
    #[error("{0} cannot stand in as a deputy (its bridge is older; update it)")]
    CannotDeputize(String),
    /// The invite string is unreadable.
    #[error(transparent)]
    Invite(#[from] invite::InviteError),
    /// The lead refused the join.
    #[error("join refused: {0}")]
    Refused(collie_crew::hello::JoinError),
    /// The lead presented a certificate whose pin is not the invite's.
    #[error(
        "the lead at {0} does not have the pin in the invite: check the invite, or ask the lead for a new one"
    )]
    LeadPinMismatch(String),
    /// The lead's TLS refused this machine's certificate: it has no open invite.
    #[error(
        "the lead refused this machine: the invite is used or expired; ask the lead for a new one (`collie crew invite`)"
    )]
    NotAdmitted,
    /// The lead could not be reached.
    #[error("cannot reach the lead: {0}")]
    Unreachable(String),
    /// A bad `--address`, `--expires` or name.
    #[error("{0}")]
    BadInput(String),
    /// The audit line could not be written; nothing was changed.
    #[error("audit unavailable")]
    AuditUnavailable,
    /// The store, the identity or the endpoint failed.
    #[error("crew unavailable: {0}")]
    Unavailable(String),
}

/// What part a bridge plays in its crew; serialized `solo`, `lead`, `member`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CrewRole {
    /// Not in a crew.
    Solo,
    /// The crew's lead: members connect to it, the phone talks to it.
    Lead,
    /// A member: keeps a link to its lead.
    Member,
}

impl CrewRole {
    /// `solo`, `lead` or `member`.
    pub fn as_str(self) -> &'static str {
        match self {
            CrewRole::Solo => "solo",
            CrewRole::Lead => "lead",
            CrewRole::Member => "member",
        }
    }
}

/// What `collie crew status`, `/api/machines` and `/api/health` show; published by the actor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CrewView {
    /// Solo, lead or member.
    pub role: CrewRole,
    /// This machine's crew name.
    pub name: String,
    /// This machine's pin (not on a solo bridge).
    pub pin: Option<String>,
    /// Where a lead listens for members.
    pub address: Option<String>,
    /// On a member: its lead.
    pub lead: Option<MachineView>,
    /// On a lead: its members, by name.
    pub members: Vec<MachineView>,
    /// The crew's deputy (SPEC §13), if any: on a lead the member it named, on a member the one
    /// its lead's notice names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deputy: Option<String>,
    /// This bridge's version.
    pub version: String,
}

/// One other machine of the crew.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MachineView {
    /// Its name.
    pub name: String,
    /// Its pin.
    pub pin: String,
    /// Its address (the lead's, on a member).
    pub address: Option<String>,
    /// Whether a link to it is up now.
    pub online: bool,
    /// Its bridge version, from its last hello.
    pub version: Option<String>,
}

impl CrewView {
    /// The view of a solo bridge called `name`.
    pub fn solo(name: &str) -> Self {
        Self {
            role: CrewRole::Solo,
            name: name.to_owned(),
            pin: None,
            address: None,
            lead: None,
            members: Vec::new(),
            deputy: None,
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}
