//! When a device's authorization ends — it is revoked, expires, or drops below the tier a request
//! needs — everything of it ends with it (SPEC §3.2; decision 0050):
//!
//! - **A request in flight.** [`App::while_allowed`] races an operation against the device's
//!   [`StillAllowed`] (decision 0018's watcher: it wakes on each published policy snapshot and at
//!   the device's expiry). When the right is lost first the operation's future is dropped — an
//!   `exec_command`'s process group is killed with it, a relayed call's stream is dropped, so the
//!   member drops its side too — and the caller gets why (`device not paired`, `device expired`,
//!   `insufficient tier`); nothing the operation produced is delivered. The tool dispatch (every
//!   door: `/api/tools`, MCP, the relay) and the card answer run under it.
//! - **Its sessions.** [`watch`] compares each policy snapshot with the last one: for each device
//!   that held `full` (the sessions' tier) and no longer does, it kills that device's tool sessions
//!   here with their process groups (each audited `tool.force_terminate`, reason `authorization
//!   ended`) and tells every online member that declared `tools`
//!   ([`RelayKind::DeviceEnded`], by the device's identity), which does the same for the sessions
//!   the device owns there — both through one operation, [`App::device_ended`], whose caller
//!   (the bridge's watcher, or the lead relaying) says whose device it is. A snapshot read from a store that
//!   cannot be read ends nothing (the phone keeps its token and retries).
//! - **A start on its way.** A start the end overtook is covered twice: here the dropped call ends
//!   its owner's sessions itself once the right is lost; on a member the owner starts nothing for
//!   [`MEMBER_REFUSE`] after the notice (the relayed call's stream may close after the notice
//!   arrives).
//!
//! A member that is offline when the device ends misses the notice; its sessions of that device
//! then end at their idle timeout, and nothing can reach them meanwhile (the lead refuses the
//! device).

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::Tier;
use collie_actors::tools::ToolName;
use collie_crew::relay::client::On;
use collie_crew::relay::RelayKind;
use time::OffsetDateTime;

use super::caller::{device_owner, is_device_id, relay_owner};
use super::follow::StillAllowed;
use super::ops::Op;
use super::{App, AppError, Caller, Who};

/// A device whose authorization ended, as whoever tells it names it.
#[derive(Debug, Clone)]
pub struct EndedDevice {
    /// Its identity ([`collie_actors::pairing::TokenHash::device_id`]): what its sessions are
    /// owned by.
    pub id: String,
    /// Its label, for the audit lines.
    pub label: String,
}

/// The tier a tool session needs: below it a device's sessions end.
const SESSIONS_TIER: Tier = Tier::Full;

/// How long a member refuses starts of a device it was told ended.
pub const MEMBER_REFUSE: Duration = Duration::from_secs(10);

/// The reason an audit line gives for a session killed this way.
const REASON: &str = "authorization ended";

impl App {
    /// Runs `work` for `caller` while it holds `required`; once it no longer does, `work` is
    /// dropped and the answer is why (see the module docs). Only a device's right can end while
    /// the bridge runs; for any other caller this is `work` itself.
    pub async fn while_allowed<T>(
        &self,
        caller: &Caller,
        required: Tier,
        work: impl Future<Output = Result<T, AppError>>,
    ) -> Result<T, AppError> {
        if !matches!(caller.who(), Who::Device { .. }) {
            return work.await;
        }
        let mut allowed = StillAllowed::new(self, caller.clone(), required);
        let lost = tokio::select! {
            biased;
            lost = allowed.lost() => lost,
            done = work => return done,
        };
        // The work may have started a session before it was dropped: it is this device's, and
        // the policy watcher may have looked before it existed.
        if caller.still_allowed(self, SESSIONS_TIER).is_err() {
            let base = AuditRecord::new(
                AuditEventKind::Tool(ToolName::ForceTerminate),
                self.machine_name(),
            )
            .with_request_id(caller.request_id().to_owned());
            let base = match caller.audit_name() {
                Some(device) => base.with_device(device),
                None => base,
            };
            self.end_sessions(&caller.owner(), Duration::ZERO, base)
                .await;
        }
        Err(lost)
    }

    /// Kills `owner`'s sessions (refusing its starts for `refuse_for`), one audit line each:
    /// `base` with the session, the command's first word and the reason.
    async fn end_sessions(&self, owner: &str, refuse_for: Duration, base: AuditRecord) {
        for (session, command) in self.tools.toolbox.end_owner(owner, refuse_for).await {
            let rec = base
                .clone()
                .with_detail("session", session)
                .with_detail("command", command)
                .with_detail("reason", REASON);
            if let Err(e) = self.audit(rec).await {
                tracing::error!(error = %e, "cannot audit a session ended with its device");
            }
        }
    }

    /// Device `ended` no longer holds `full` (see the module docs): the sessions it owns here end,
    /// each audited `tool.force_terminate`. `caller` says whose device it is:
    ///
    /// - this bridge's own policy watcher ([`Caller::cli`]): a device of this machine. Its lines
    ///   say `"via": "bridge"` and name the device, and every online member that serves tools is
    ///   told, under the same request id;
    /// - the lead, relaying ([`Who::Relay`]): a device of the lead's. Its lines are relayed lines
    ///   (the device, `"via": "relay"`, the lead), it starts none for [`MEMBER_REFUSE`], and it
    ///   tells no one further.
    ///
    /// Sessions are the tools' (capability `tools`, [`Op::DeviceEnded`]): a member whose `[crew]
    /// tools = false` left the capability out of its hello refuses a lead that asks anyway, as
    /// the lead refuses itself before relaying.
    pub async fn device_ended(&self, caller: &Caller, ended: EndedDevice) -> Result<(), AppError> {
        self.authorize(caller, Op::DeviceEnded)?;
        let (owner, refuse_for, base) = match caller.who() {
            Who::Relay { lead, .. } => (
                relay_owner(lead, &ended.id),
                MEMBER_REFUSE,
                caller.record(self, AuditEventKind::Tool(ToolName::ForceTerminate)),
            ),
            Who::Cli => (
                device_owner(&ended.id),
                Duration::ZERO,
                AuditRecord::new(
                    AuditEventKind::Tool(ToolName::ForceTerminate),
                    self.machine_name(),
                )
                .with_request_id(caller.request_id().to_owned())
                .with_device(ended.label.clone())
                .with_detail("via", "bridge"),
            ),
            _ => return Err(AppError::BadRequest("not from a lead".into())),
        };
        if !is_device_id(&ended.id) {
            return Err(AppError::BadRequest("device_id: 32 hex digits".into()));
        }
        if matches!(caller.who(), Who::Cli) {
            self.tell_members(caller, &ended);
        }
        self.end_sessions(&owner, refuse_for, base).await;
        Ok(())
    }

    /// Tells every online member that serves tools that this machine's device `ended` ended
    /// ([`RelayKind::DeviceEnded`]), each in its own task.
    fn tell_members(&self, caller: &Caller, ended: &EndedDevice) {
        let kind = RelayKind::DeviceEnded {
            device_id: ended.id.clone(),
        };
        for member in self.online_members() {
            if member.allows(&kind).is_err() {
                continue;
            }
            let (kind, ended, rid) = (kind.clone(), ended.clone(), caller.request_id().to_owned());
            self.spawn(async move {
                let on = On {
                    device: &ended.label,
                    request_id: &rid,
                    device_id: Some(&ended.id),
                };
                if let Err(e) = member.call(on, kind).await {
                    tracing::warn!(member = member.name(), error = %e,
                        "a member was not told that a device's authorization ended");
                }
            });
        }
    }
}

/// The devices that hold `full` now, by identity: their label and expiry. `None` while the store
/// cannot be read.
fn holding_full(app: &App) -> Option<HashMap<String, (String, Option<OffsetDateTime>)>> {
    let snapshot = app.door.policy.load();
    if !snapshot.is_available() {
        return None;
    }
    Some(
        snapshot
            .holding(SESSIONS_TIER, OffsetDateTime::now_utc())
            .into_iter()
            .map(|(hash, d)| {
                (
                    hash.device_id(),
                    (d.label.as_str().to_owned(), d.expires_at),
                )
            })
            .collect(),
    )
}

/// Watches the policy for the bridge's life and ends the sessions of each device that stops
/// holding `full` (see the module docs).
pub async fn watch(app: App) {
    let mut changed = app.door.policy.watch();
    let mut full = holding_full(&app).unwrap_or_default();
    loop {
        let next_expiry = full.values().filter_map(|(_, at)| *at).min();
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            () = until(next_expiry) => {}
        }
        let Some(now_full) = holding_full(&app) else {
            continue;
        };
        for (id, (label, _)) in &full {
            if !now_full.contains_key(id) {
                let ended = EndedDevice {
                    id: id.clone(),
                    label: label.clone(),
                };
                if let Err(e) = app.device_ended(&Caller::cli(), ended).await {
                    tracing::error!(error = %e, "a device's sessions were not ended");
                }
            }
        }
        full = now_full;
    }
}

/// Sleeps until `at`, or forever without one.
async fn until(at: Option<OffsetDateTime>) {
    match at {
        Some(at) => {
            let left = Duration::try_from(at - OffsetDateTime::now_utc()).unwrap_or_default();
            tokio::time::sleep(left).await;
        }
        None => std::future::pending().await,
    }
}
