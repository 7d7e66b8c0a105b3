//! The Pairing actor: custody of the device registry, the pending code and the policy snapshot.
//!
//! Who sends what: the HTTP layer sends `Claim` (phones) and `Touch`; the control socket sends
//! `NewCode` and the device management messages (the CLI). Every change follows one path: the pure
//! cores decide → the store write is flushed → the audit line is appended → the registry is
//! updated → a new [`PolicySnapshot`] with the next version is published. A failed store write
//! leaves the old snapshot in place and writes no audit line, so neither the request path nor the
//! log ever sees a change that is not durable; an audit line that cannot be appended undoes the
//! store write and refuses the change (decision 0037).
//!
//! If the actor fails it is restarted: the registry is rebuilt from the store; the pending code and
//! the rate-limit counters (memory only, SPEC §4) start afresh.

use std::net::IpAddr;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rand::rngs::OsRng;
use time::OffsetDateTime;

use super::core::{PairError, PairingCore};
use super::devices::{Device, DeviceError, DeviceRegistry, Write};
use super::duration::Dur;
use super::policy::PolicySnapshot;
use super::published::Policy;
use super::tier::Tier;
use super::token::DeviceToken;
use crate::audit::{AuditEventKind, AuditMsg, AuditRecord};
use crate::machine::MachineName;
use crate::slot::Slot;
use crate::store::{Change, Store, StoreError, Table};

/// The actor.
pub struct PairingActor;

/// Start-up arguments.
#[derive(Clone)]
pub struct PairingArgs {
    /// The durable store.
    pub store: Store,
    /// Where the current policy snapshot is published for the request path.
    pub policy: Policy,
    /// The audit actor.
    pub audit: Slot<AuditMsg>,
    /// This machine's name, for audit lines.
    pub machine: MachineName,
}

/// A new pairing code for `collie pair`.
#[derive(Debug, Clone)]
pub struct NewCode {
    /// `XXXX-XXXX`.
    pub code: String,
    /// When it stops being accepted.
    pub expires_at: OffsetDateTime,
}

/// A successful claim: the token (shown once) and the new device.
#[derive(Debug)]
pub struct ClaimedDevice {
    /// The device's bearer token.
    pub token: DeviceToken,
    /// The stored record.
    pub device: Device,
}

/// Why a pairing or device request failed. Display strings are the SPEC §3.2 ones.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairingError {
    /// Wrong, used, expired or invalidated code.
    #[error("invalid or expired code")]
    InvalidCode,
    /// Rate limited.
    #[error("too many attempts")]
    TooManyAttempts {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// A live device holds the label.
    #[error("label in use")]
    LabelInUse,
    /// Bad label shape.
    #[error("invalid label")]
    InvalidLabel,
    /// Unknown label.
    #[error("no such device")]
    NoSuchDevice,
    /// The audit line could not be written; nothing changed.
    #[error("audit unavailable")]
    AuditUnavailable,
    /// The store could not be written; nothing changed.
    #[error("pairing unavailable")]
    Store(#[from] StoreError),
    /// The device store could not be read at start; nothing can be paired or changed until it can.
    #[error("pairing unavailable")]
    Unavailable,
}

impl From<PairError> for PairingError {
    fn from(e: PairError) -> Self {
        match e {
            PairError::TooManyAttempts { retry_after_secs } => PairingError::TooManyAttempts {
                retry_after: retry_after_secs,
            },
            PairError::LabelInUse => PairingError::LabelInUse,
            PairError::InvalidLabel => PairingError::InvalidLabel,
            _ => PairingError::InvalidCode,
        }
    }
}

impl From<DeviceError> for PairingError {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::LabelInUse => PairingError::LabelInUse,
            _ => PairingError::NoSuchDevice,
        }
    }
}

/// Replies carrying a device or an error.
pub type DeviceReply = RpcReplyPort<Result<Device, PairingError>>;

/// Messages the pairing actor accepts.
#[derive(Debug)]
#[non_exhaustive]
pub enum PairingMsg {
    /// Issue a new code (replacing the pending one).
    NewCode {
        /// The tier the claiming device gets.
        tier: Tier,
        /// Its expiry, counted from the claim.
        expires: Option<Dur>,
        /// The answer.
        reply: RpcReplyPort<NewCode>,
    },
    /// A phone claims the code.
    Claim {
        /// As typed.
        code: String,
        /// The device label.
        label: String,
        /// The rate-limit source (see `pairing_source`).
        source: IpAddr,
        /// The person an identity gate vouched for (SPEC §14): kept on the device and named in
        /// its `device.paired` line.
        paired_by: Option<String>,
        /// The answer.
        reply: RpcReplyPort<Result<ClaimedDevice, PairingError>>,
    },
    /// All devices.
    List(RpcReplyPort<Result<Vec<Device>, PairingError>>),
    /// Revoke a device.
    Revoke {
        /// Its label.
        label: String,
        /// The device asking (None = the CLI).
        by: Option<String>,
        /// The answer.
        reply: DeviceReply,
    },
    /// Expire a device `dur` from now.
    SetExpiry {
        /// Its label.
        label: String,
        /// How long from now.
        dur: Dur,
        /// The answer.
        reply: DeviceReply,
    },
    /// Remove a device's expiry.
    ClearExpiry {
        /// Its label.
        label: String,
        /// The answer.
        reply: DeviceReply,
    },
    /// Change a device's tier.
    SetTier {
        /// Its label.
        label: String,
        /// The new tier.
        tier: Tier,
        /// The device asking (None = the CLI).
        by: Option<String>,
        /// The answer.
        reply: DeviceReply,
    },
    /// A device was seen (updates `last_seen`, at most once a minute, not flushed).
    Touch(String),
    /// A request found the device store unreadable: try reading it again.
    Retry,
}

/// The actor's state.
pub struct PairingState {
    args: PairingArgs,
    core: PairingCore,
    registry: DeviceRegistry,
    version: u64,
    /// False while the device store cannot be read (corrupt record, I/O error): the published
    /// snapshot then answers `pairing unavailable` and every change is refused.
    available: bool,
}

/// Reads every device record from the store.
fn load_registry(store: &Store) -> Result<DeviceRegistry, StoreError> {
    let mut devices = Vec::new();
    for (key, value) in store.scan(Table::Devices)? {
        let device: Device = serde_json::from_slice(&value).map_err(|e| StoreError::Corrupt {
            key: key.clone(),
            reason: e.to_string(),
        })?;
        devices.push(device);
    }
    Ok(DeviceRegistry::from_devices(devices))
}

impl Actor for PairingActor {
    type Msg = PairingMsg;
    type State = PairingState;
    type Arguments = PairingArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: PairingArgs,
    ) -> Result<PairingState, ActorProcessingErr> {
        // Versions only need to grow within one process: the snapshot is rebuilt at each start.
        let version = args.policy.load().version() + 1;
        let mut state = PairingState {
            args,
            core: PairingCore::new(),
            registry: DeviceRegistry::new(),
            version,
            available: false,
        };
        state.reload();
        Ok(state)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: PairingMsg,
        state: &mut PairingState,
    ) -> Result<(), ActorProcessingErr> {
        let now = OffsetDateTime::now_utc();
        if !state.available {
            state.reload();
        }
        if !state.available {
            state.refuse(msg);
            return Ok(());
        }
        match msg {
            PairingMsg::Retry => {}
            PairingMsg::NewCode {
                tier,
                expires,
                reply,
            } => {
                let issued = state.core.issue(&mut OsRng, tier, expires, now);
                let _ = reply.send(NewCode {
                    code: issued.code.display(),
                    expires_at: issued.expires_at,
                });
            }
            PairingMsg::Claim {
                code,
                label,
                source,
                paired_by,
                reply,
            } => {
                let _ = reply.send(state.claim(&code, &label, source, paired_by, now).await);
            }
            PairingMsg::List(reply) => {
                let _ = reply.send(Ok(state.registry.iter().cloned().collect()));
            }
            PairingMsg::Revoke { label, by, reply } => {
                let result = match state.registry.revoke(&label) {
                    Ok(r) => {
                        let rec = state
                            .record(AuditEventKind::DeviceRevoked, by.as_deref())
                            .with_detail("label", r.device.label.as_str());
                        let rows = r.device.token_hash.short_hex();
                        // A revocation always takes effect: it never waits on the audit log.
                        state
                            .commit_always(rec, r.write(), Some(&rows))
                            .await
                            .map(|()| r.device)
                    }
                    Err(e) => Err(e.into()),
                };
                let _ = reply.send(result);
            }
            PairingMsg::SetExpiry { label, dur, reply } => {
                let result = state
                    .change_expiry(state.registry.set_expiry(&label, dur, now))
                    .await;
                let _ = reply.send(result);
            }
            PairingMsg::ClearExpiry { label, reply } => {
                let result = state
                    .change_expiry(state.registry.clear_expiry(&label))
                    .await;
                let _ = reply.send(result);
            }
            PairingMsg::SetTier {
                label,
                tier,
                by,
                reply,
            } => {
                let result = match state.registry.set_tier(&label, tier) {
                    Ok(c) => {
                        let rec = state
                            .record(AuditEventKind::DeviceTier, by.as_deref())
                            .with_detail("label", c.device.label.as_str())
                            .with_detail("old_tier", c.old.as_str())
                            .with_detail("new_tier", c.new.as_str())
                            .with_detail("version", state.version + 1);
                        state.commit(rec, c.write()).await.map(|()| c.device)
                    }
                    Err(e) => Err(e.into()),
                };
                let _ = reply.send(result);
            }
            PairingMsg::Touch(label) => {
                if let Ok(Some(Write::Put(device))) = state.registry.touch(&label, now) {
                    // Last-seen is bookkeeping: written without a flush and without a new snapshot
                    // (it does not change what any device may do).
                    if let Ok(bytes) = serde_json::to_vec(&device) {
                        let _ = state.args.store.put_lazy(
                            Table::Devices,
                            device.label.as_str(),
                            &bytes,
                        );
                    }
                    state.registry.apply(Write::Put(device));
                }
            }
        }
        Ok(())
    }
}

impl PairingState {
    /// (Re)reads the registry from the store and publishes the matching snapshot: the devices, or
    /// an "unavailable" snapshot when the store cannot be read.
    fn reload(&mut self) {
        self.version += 1;
        match load_registry(&self.args.store) {
            Ok(registry) => {
                if !self.available {
                    tracing::info!(devices = registry.len(), "device store read");
                }
                self.registry = registry;
                self.available = true;
                self.args
                    .policy
                    .publish(PolicySnapshot::build(self.version, self.registry.iter()));
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read the device store; answering `pairing unavailable`");
                self.available = false;
                self.args
                    .policy
                    .publish(PolicySnapshot::unavailable(self.version));
            }
        }
    }

    /// Answers a message while the store is unreadable.
    fn refuse(&mut self, msg: PairingMsg) {
        match msg {
            PairingMsg::NewCode {
                tier,
                expires,
                reply,
            } => {
                // A code can still be shown; claiming it answers `pairing unavailable`.
                let issued = self
                    .core
                    .issue(&mut OsRng, tier, expires, OffsetDateTime::now_utc());
                let _ = reply.send(NewCode {
                    code: issued.code.display(),
                    expires_at: issued.expires_at,
                });
            }
            PairingMsg::Claim { reply, .. } => {
                let _ = reply.send(Err(PairingError::Unavailable));
            }
            PairingMsg::List(reply) => {
                let _ = reply.send(Err(PairingError::Unavailable));
            }
            PairingMsg::Revoke { reply, .. }
            | PairingMsg::SetExpiry { reply, .. }
            | PairingMsg::ClearExpiry { reply, .. }
            | PairingMsg::SetTier { reply, .. } => {
                let _ = reply.send(Err(PairingError::Unavailable));
            }
            PairingMsg::Touch(_) | PairingMsg::Retry => {}
        }
    }

    fn record(&self, event: AuditEventKind, by: Option<&str>) -> AuditRecord {
        let mut rec = AuditRecord::new(event, self.args.machine.get());
        if let Some(by) = by {
            rec = rec.with_device(by);
        } else {
            rec = rec.with_detail("via", "cli");
        }
        rec
    }

    async fn claim(
        &mut self,
        code: &str,
        label: &str,
        source: IpAddr,
        paired_by: Option<String>,
        now: OffsetDateTime,
    ) -> Result<ClaimedDevice, PairingError> {
        let claimed = self
            .core
            .claim(&self.registry, &mut OsRng, code, label, source, now)?;
        let mut paired = claimed.paired;
        paired.device.paired_by = paired_by;
        let mut lines = Vec::with_capacity(2);
        if let Some(old) = &paired.replaced {
            // Label takeover of an expired device: its token is revoked, and that is audited.
            lines.push(
                AuditRecord::new(AuditEventKind::DeviceRevoked, self.args.machine.get())
                    .with_device(old.label.as_str())
                    .with_detail("label", old.label.as_str())
                    .with_detail("reason", "label taken over after expiry"),
            );
        }
        let line = AuditRecord::new(AuditEventKind::DevicePaired, self.args.machine.get())
            .with_device(paired.device.label.as_str())
            .with_detail("label", paired.device.label.as_str())
            .with_detail("tier", paired.device.tier.as_str());
        lines.push(match &paired.device.paired_by {
            Some(person) => line.with_detail("identity", person.clone()),
            None => line,
        });
        let write = paired.write();
        self.commit_lines(lines, write).await?;
        Ok(ClaimedDevice {
            token: claimed.token,
            device: paired.device,
        })
    }

    async fn change_expiry(
        &mut self,
        change: Result<super::devices::ExpiryChanged, DeviceError>,
    ) -> Result<Device, PairingError> {
        let c = change?;
        let fmt = |t: Option<OffsetDateTime>| {
            t.and_then(crate::rfc3339::format)
                .unwrap_or_else(|| "never".into())
        };
        let rec = self
            .record(AuditEventKind::DeviceExpiry, None)
            .with_detail("label", c.device.label.as_str())
            .with_detail("old_expires_at", fmt(c.old))
            .with_detail("new_expires_at", fmt(c.device.expires_at));
        let write = c.write();
        self.commit(rec, write).await?;
        Ok(c.device)
    }

    async fn audit(&self, rec: AuditRecord) -> Result<(), PairingError> {
        match self.args.audit.call(|r| AuditMsg::Append(rec, r)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(PairingError::AuditUnavailable),
        }
    }

    /// Persist (flushed), then audit, then apply and publish (see [`commit_lines`](Self::commit_lines)).
    async fn commit(&mut self, rec: AuditRecord, write: Write) -> Result<(), PairingError> {
        self.commit_lines(vec![rec], write).await
    }

    /// Makes `write` durable, then appends `lines`, then applies and publishes it. A store write
    /// that fails changes nothing and leaves no line: the log never claims a change the store
    /// does not hold (SPEC §7, "a line is written for what happened"). A line that cannot be
    /// appended undoes the store write and refuses the change with `audit unavailable` (SPEC §7,
    /// "a write whose audit line cannot be appended is refused"). Either way the registry and the
    /// published snapshot are as they were.
    async fn commit_lines(
        &mut self,
        lines: Vec<AuditRecord>,
        write: Write,
    ) -> Result<(), PairingError> {
        let undo = self.registry.undo_of(&write);
        self.store_write(&write)?;
        for rec in lines {
            if let Err(e) = self.audit(rec).await {
                self.undo(undo);
                return Err(e);
            }
        }
        self.publish(write);
        Ok(())
    }

    /// [`commit`](Self::commit) for a change that only takes power away (a revocation, SPEC §7):
    /// it must take effect even while the audit log cannot be written, so its line is appended
    /// if possible and otherwise kept in the store, to be appended as soon as the log is writable.
    /// Only a store that cannot be written refuses it (and then the change itself could not be
    /// made durable either, and no line claims it).
    ///
    /// `rows` names the revoked device's starter rows (SPEC §12: "revoking a device removes the
    /// rows it added"): they are removed once the revocation is durable and before its line, which
    /// counts them (`rows_removed`). A removal that fails is logged, not fatal: a row whose device
    /// is gone is never listed or started, and the bridge removes it at its next start.
    async fn commit_always(
        &mut self,
        mut rec: AuditRecord,
        write: Write,
        rows: Option<&str>,
    ) -> Result<(), PairingError> {
        let undo = self.registry.undo_of(&write);
        self.store_write(&write)?;
        if let Some(owner) = rows {
            rec = rec.with_detail("rows_removed", self.remove_rows(owner));
        }
        let kept = match self
            .args
            .audit
            .call(|r| AuditMsg::AppendOrKeep(rec.clone(), r))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the revocation's audit line could not be kept");
                Err(PairingError::AuditUnavailable)
            }
            // The audit actor is restarting: keep the line in the store ourselves; it appends
            // kept lines when it is back.
            Err(_) => crate::audit::stored::keep(&self.args.store, &rec, OffsetDateTime::now_utc())
                .map(|_| ())
                .map_err(PairingError::from),
        };
        if let Err(e) = kept {
            self.undo(undo);
            return Err(e);
        }
        self.publish(write);
        Ok(())
    }

    /// Removes every starter row kept under `owner` (one atomic batch); how many it removed.
    fn remove_rows(&self, owner: &str) -> u64 {
        let prefix = format!("{owner}/");
        let removed = self
            .args
            .store
            .scan_prefix(Table::StarterRows, &prefix)
            .and_then(|rows| {
                let changes: Vec<Change> =
                    rows.into_iter().map(|(k, _)| Change::Remove(k)).collect();
                if !changes.is_empty() {
                    self.args.store.apply(Table::StarterRows, &changes)?;
                }
                Ok(changes.len() as u64)
            });
        removed.unwrap_or_else(|e| {
            tracing::error!(error = %e, "the revoked device's starter rows could not be removed now");
            0
        })
    }

    /// Writes one change to the store and returns once it is durable.
    fn store_write(&self, write: &Write) -> Result<(), PairingError> {
        match write {
            Write::Put(device) => {
                let bytes = serde_json::to_vec(device).map_err(|e| StoreError::Corrupt {
                    key: device.label.as_str().to_string(),
                    reason: e.to_string(),
                })?;
                self.args
                    .store
                    .put(Table::Devices, device.label.as_str(), &bytes)?;
            }
            Write::Delete(label) => self.args.store.remove(Table::Devices, label.as_str())?,
        }
        Ok(())
    }

    /// Puts back in the store what the registry holds, after a change was written but could not
    /// be audited. If even that fails, the store may hold an unaudited change the registry does
    /// not: the actor then answers `pairing unavailable` and reads the store again at the next
    /// message, rather than go on from a registry the store no longer matches.
    fn undo(&mut self, undo: Write) {
        if let Err(e) = self.store_write(&undo) {
            tracing::error!(
                error = %e,
                "a device change could not be audited and the store could not be put back; \
                 answering `pairing unavailable` until the store is read again"
            );
            self.available = false;
            self.version += 1;
            self.args
                .policy
                .publish(PolicySnapshot::unavailable(self.version));
        }
    }

    /// Applies a durable change to the registry and publishes the next snapshot.
    fn publish(&mut self, write: Write) {
        self.registry.apply(write);
        self.version += 1;
        self.args
            .policy
            .publish(PolicySnapshot::build(self.version, self.registry.iter()));
    }
}
