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
pub mod deputy;
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
pub mod parts;
pub mod permission;
pub mod push;
mod refusals;
pub mod rows;
pub mod sent;
pub mod speech;
pub mod starters;
pub mod status;
pub mod tools;
mod vouch;
pub mod walky;
pub mod windows;
pub mod wire;
pub mod witness;

use std::sync::Arc;

use collie_actors::audit::{AuditMsg, AuditRecord, Denial};
#[cfg(feature = "fault-injection")]
use collie_actors::panes::PanesMsg;
use tokio_util::sync::CancellationToken;

pub use self::caller::{request_id, Caller, Who};
pub use self::error::AppError;
pub use self::parts::{AgentParts, CoreParts, CrewParts, DoorParts, PaneParts, ToolParts};

/// The application every adapter calls: the actors' slots, the policy snapshot and a few settings,
/// in parts by concern ([`parts`]), reachable only through its operations (the parts are private
/// to `app`).
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

/// What an [`App`] holds: its parts, private to `app`.
pub struct Parts {
    core: CoreParts,
    door: DoorParts,
    panes: PaneParts,
    crew: CrewParts,
    agents: AgentParts,
    tools: ToolParts,
}

impl App {
    /// The application over its parts, which the bridge builds when it assembles it.
    pub fn new(
        core: CoreParts,
        door: DoorParts,
        panes: PaneParts,
        crew: CrewParts,
        agents: AgentParts,
        tools: ToolParts,
    ) -> App {
        App(Arc::new(Parts {
            core,
            door,
            panes,
            crew,
            agents,
            tools,
        }))
    }

    /// Runs `work` in the background, tracked by the bridge and cancelled when it stops (never a
    /// detached task: the bridge waits for it at shutdown).
    pub(crate) fn spawn<F>(&self, work: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let stop = self.core.shutdown.clone();
        self.core.tasks.spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = work => {}
            }
        });
    }

    /// This machine's name now.
    pub fn machine_name(&self) -> String {
        self.core.machine.get()
    }

    /// The host names (without port) this bridge answers for.
    pub fn allowed_host_names(&self) -> Vec<String> {
        self.door.allowed_hosts.as_ref().clone()
    }

    /// Cancelled when the bridge stops (for servers the application hands out).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.core.shutdown.clone()
    }

    /// Whether `host` (lowercased, without port) is one this bridge answers for.
    pub fn host_allowed(&self, host: &str) -> bool {
        self.door.allowed_hosts.iter().any(|h| h == host)
    }

    /// The request counts changed since the last call, encoded for the store (`None` if none).
    pub fn take_count_changes(&self) -> Option<Vec<u8>> {
        self.core.counters.take_changes()
    }

    /// The URL phones open on this bridge (`COLLIE_PUBLIC_URL`, else its own address).
    pub fn public_url(&self) -> String {
        self.door.public_url.as_str().to_owned()
    }

    /// The address a phone opens to pair with `code` (the QR code of `collie pair`).
    pub fn pair_url(&self, code: &str) -> String {
        format!(
            "{}/#pair={}",
            self.door.public_url.trim_end_matches('/'),
            code.replace('-', "")
        )
    }

    /// Test-only (feature `fault-injection`): makes every durable write to the device table fail
    /// (`true`) or work again (`false`) — a disk refusing the pairing actor's writes.
    #[cfg(feature = "fault-injection")]
    pub fn fail_device_writes(&self, fail: bool) {
        self.0
            .door
            .store
            .fail_writes_to(fail.then_some(collie_actors::store::Table::Devices));
    }

    /// Test-only (feature `fault-injection`): makes the panes actor fail its next snapshot, once
    /// it runs; `false` when it did not start within 5 s.
    #[cfg(feature = "fault-injection")]
    pub async fn fail_next_snapshot(&self) -> bool {
        for _ in 0..100 {
            if self.panes.actor.get().is_some() {
                return self.panes.actor.cast(PanesMsg::FailNextSnapshot).is_ok();
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
        self.core.counters.denied();
        let denial = Denial {
            source,
            reason: reason.to_owned(),
            record: record.with_detail("reason", reason.to_owned()),
        };
        let _ = self.core.audit.cast(AuditMsg::Denied(Box::new(denial)));
    }
}
