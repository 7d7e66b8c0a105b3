//! The application: everything the bridge does, whichever adapter asks — the phone API (`http`),
//! the CLI's control socket (`control`), the crew relay (`relay`) and MCP. Adapters decode a
//! request, name the caller and encode the answer; resolving the machine, validating,
//! authorizing, auditing and executing an operation happen here, once (SPEC §1).
//!
//! [`App`] is what every operation reaches the actors through; [`AppError`] is how every operation
//! fails, in the words of SPEC §3.2 (the HTTP adapter maps it to a status, the control socket
//! prints it).

mod error;

use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use collie_actors::audit::{AuditMsg, AuditRecord};
use collie_actors::crew_link::{CrewMsg, CrewView, LeadLink, Relays};
use collie_actors::machine::MachineName;
use collie_actors::pairing::{PairingMsg, Policy};
use collie_actors::panes::PanesMsg;
use collie_actors::redact::Masker;
use collie_actors::slot::Slot;
use collie_actors::walky::actor::WalkyMsg;
use rand::RngCore;

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
    pub counters: Arc<crate::http::counters::Counters>,
    /// `preview` or `none`.
    pub audit_content: Arc<String>,
    /// The URL phones open (QR code of `collie pair`).
    pub public_url: Arc<String>,
    /// Open SSE streams, capped per device and in all.
    pub streams: Arc<crate::http::streams::StreamSlots>,
    /// Connections closed at once because too many were open.
    pub refused_connections: Arc<crate::http::serve::Refused>,
    /// Test-only (feature `fault-injection`): the last walky message this lead forwarded to a
    /// member, so a test can replay it the way a compromised lead could.
    #[cfg(feature = "fault-injection")]
    pub last_forwarded: Arc<std::sync::Mutex<Option<(String, collie_crew::walky::Forwarded)>>>,
}

impl App {
    /// Whether `host_header` names a host this bridge answers for.
    pub fn host_allowed(&self, host_header: &str) -> bool {
        let h = crate::http::headers::host_part(host_header);
        self.allowed_hosts.contains(&h)
    }

    /// Appends an audit line, failing closed: the caller must not perform the write on error.
    pub async fn audit(&self, rec: AuditRecord) -> Result<(), AppError> {
        match self.audit.call(|r| AuditMsg::Append(rec, r)).await? {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, "audit append failed; refusing the write");
                Err(AppError::AuditUnavailable)
            }
        }
    }

    /// Records that a device was seen (best effort, never blocks the request).
    pub fn pairing_touch(&self, label: &str) {
        let _ = self.pairing.cast(PairingMsg::Touch(label.to_string()));
    }
}

/// A fresh request id for audit lines (128 random bits, hex).
pub fn request_id() -> String {
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}
