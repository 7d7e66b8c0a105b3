//! The application: everything the bridge does, whichever adapter asks — the phone API (`http`),
//! the CLI's control socket (`control`), the crew relay (`relay`) and MCP. Adapters decode a
//! request, name the caller and encode the answer; resolving the machine, validating,
//! authorizing, auditing and executing an operation happen here, once (SPEC §1).
//!
//! [`App`] is what every operation reaches the actors through; [`AppError`] is how every operation
//! fails, in the words of SPEC §3.2 (the HTTP adapter maps it to a status, the control socket
//! prints it).

mod audit;
mod caller;
pub mod counters;
pub mod crew;
pub mod devices;
mod error;
pub mod follow;
pub mod machine;
pub mod panes;
pub mod status;
pub mod walky;

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use collie_actors::audit::{AuditMsg, AuditRecord, Denial};
use collie_actors::crew_link::{CrewMsg, CrewView, LeadLink, Relays};
use collie_actors::machine::MachineName;
use collie_actors::pairing::{PairingMsg, Policy};
use collie_actors::panes::PanesMsg;
use collie_actors::redact::Masker;
use collie_actors::slot::Slot;
use collie_actors::walky::actor::WalkyMsg;

pub use self::caller::{request_id, Caller, Who};
pub use self::error::AppError;

/// What every handler can reach: the actors' slots, the policy snapshot and a few settings.
#[derive(Clone)]
pub struct App {
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
    /// Test-only (feature `fault-injection`): the last walky message this lead forwarded to a
    /// member, so a test can replay it the way a compromised lead could.
    #[cfg(feature = "fault-injection")]
    pub last_forwarded: Arc<std::sync::Mutex<Option<(String, collie_crew::walky::Forwarded)>>>,
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

    /// Records that a device was seen (best effort, never blocks the request).
    pub fn pairing_touch(&self, label: &str) {
        let _ = self.pairing.cast(PairingMsg::Touch(label.to_string()));
    }
}
