//! Pairing and devices (SPEC §4): a new code, claiming it, the device list, revocation, expiry and
//! tier — each one function, whoever asks. The pairing actor decides and audits; the rules of who
//! may ask live here.

use std::net::IpAddr;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::actor::{ClaimedDevice, NewCode, PairingError};
use collie_actors::pairing::{Device, Dur, PairingMsg, Tier};
use collie_actors::rfc3339;
use serde::{Deserialize, Serialize};

use super::ops::Op;
use super::{App, AppError, Caller};

/// A device as the phone and `collie devices list --json` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceView {
    /// Its label.
    pub label: String,
    /// `read`, `files` or `full`.
    pub tier: Tier,
    /// RFC 3339.
    pub created_at: Option<String>,
    /// RFC 3339, or null before its first request.
    pub last_seen: Option<String>,
    /// RFC 3339, or null when it does not expire.
    pub expires_at: Option<String>,
    /// Whether it is the device asking.
    pub current: bool,
    /// Who paired it: the person an identity gate vouched for at the claim (SPEC §14), or null.
    #[serde(default)]
    pub paired_by: Option<String>,
}

impl DeviceView {
    fn of(d: &Device, current: Option<&str>) -> DeviceView {
        DeviceView {
            label: d.label.as_str().to_owned(),
            tier: d.tier,
            created_at: rfc3339::format(d.created_at),
            last_seen: d.last_seen.and_then(rfc3339::format),
            expires_at: d.expires_at.and_then(rfc3339::format),
            current: current == Some(d.label.as_str()),
            paired_by: d.paired_by.clone(),
        }
    }
}

impl From<PairingError> for AppError {
    fn from(e: PairingError) -> Self {
        match e {
            PairingError::InvalidCode => AppError::InvalidCode,
            PairingError::TooManyAttempts { retry_after } => {
                AppError::TooManyAttempts { retry_after }
            }
            PairingError::LabelInUse => AppError::LabelInUse,
            PairingError::InvalidLabel => AppError::BadRequest("invalid label".into()),
            PairingError::NoSuchDevice => AppError::NoSuchDevice,
            PairingError::AuditUnavailable => AppError::AuditUnavailable,
            PairingError::Store(e) => {
                // The caller learns only that pairing is unavailable (SPEC §3.2); why goes to
                // the bridge's log.
                tracing::error!(error = %e, "the device store refused a change; nothing changed");
                AppError::PairingUnavailable
            }
            PairingError::Unavailable => AppError::PairingUnavailable,
            _ => AppError::Internal,
        }
    }
}

/// The refusal of a pairing code asked from inside an agent's process tree.
pub const AGENT_PAIRING: &str =
    "refused: an agent is running this command; pair a device from your own terminal";

fn agent_name(agent: collie_actors::chat::Agent) -> &'static str {
    match agent {
        collie_actors::chat::Agent::Claude => "claude",
        collie_actors::chat::Agent::Codex => "codex",
    }
}

impl App {
    /// A new pairing code for a device of `tier` that expires `expires` after it claims the code,
    /// asked by process `asker` (the control socket's peer). Refused, and audited, when an agent
    /// is on the asker's parent chain (SPEC §4.6, `pair_guard`). A peer whose pid the
    /// platform does not report is not checked (macOS may not; Linux always does).
    pub async fn new_code(
        &self,
        tier: &str,
        expires: Option<&str>,
        asker: Option<u32>,
    ) -> Result<NewCode, AppError> {
        // A deputy never pairs (SPEC §13): phones pair on the lead, whose copy it serves.
        if self.is_deputy() {
            return Err(AppError::StandbyDevices);
        }
        let tier = Tier::parse(tier).map_err(|e| AppError::BadRequest(e.to_string()))?;
        let expires = expires
            .map(Dur::parse)
            .transpose()
            .map_err(|e| AppError::BadRequest(e.to_string()))?;
        if let Some(agent) = asker.and_then(super::pair_guard::agent_on_chain) {
            let rec = AuditRecord::new(AuditEventKind::SecurityDenied, self.core.machine.get())
                .with_request_id(super::request_id())
                .with_detail("method", "pair")
                .with_detail("agent", agent_name(agent))
                .with_detail("tier", tier.as_str());
            self.deny("local".to_owned(), AGENT_PAIRING, rec);
            return Err(AppError::Forbidden(AGENT_PAIRING));
        }
        Ok(self
            .door
            .pairing
            .call(|r| PairingMsg::NewCode {
                tier,
                expires,
                reply: r,
            })
            .await?)
    }

    /// Claims a code for a device named `label`; `source` is the rate-limit source. No identity
    /// gate named who claims it (see [`App::claim_as`]).
    pub async fn claim(
        &self,
        code: String,
        label: String,
        source: IpAddr,
    ) -> Result<ClaimedDevice, AppError> {
        self.claim_as(&Caller::new(super::Who::Open), code, label, source)
            .await
    }

    /// [`App::claim`] by `caller`, the open caller whose identity (SPEC §14), if a gate named
    /// one, is who paired the device.
    pub async fn claim_as(
        &self,
        caller: &Caller,
        code: String,
        label: String,
        source: IpAddr,
    ) -> Result<ClaimedDevice, AppError> {
        if code.len() > 64 {
            return Err(AppError::InvalidCode);
        }
        if self.is_deputy() {
            return Err(AppError::StandbyDevices);
        }
        let claimed: ClaimedDevice = self
            .door
            .pairing
            .call(|r| PairingMsg::Claim {
                code,
                label,
                source,
                paired_by: caller.identity().map(|i| i.person.clone()),
                reply: r,
            })
            .await??;
        self.announce_pairing(claimed.device.label.as_str());
        Ok(claimed)
    }

    /// Every device, the asking one marked `current`.
    pub async fn devices(&self, caller: &Caller) -> Result<Vec<DeviceView>, AppError> {
        self.authorize(caller, Op::Devices)?;
        let list = self.door.pairing.call(PairingMsg::List).await??;
        Ok(list
            .iter()
            .map(|d| DeviceView::of(d, caller.device_label()))
            .collect())
    }

    /// How many devices are paired (`None` while the store cannot be read).
    pub async fn device_count(&self) -> Option<usize> {
        self.door
            .pairing
            .call(PairingMsg::List)
            .await
            .ok()?
            .ok()
            .map(|l| l.len())
    }

    /// Revokes device `label`. A device may revoke itself; revoking another needs tier `full` (the
    /// CLI may) — a lower device reaching for another's token is a tier refusal like any other,
    /// audited `security.denied` (SPEC §7).
    pub async fn revoke(&self, caller: &Caller, label: String) -> Result<Device, AppError> {
        self.authorize(caller, Op::DeviceRevoke)?;
        if caller.device_label() != Some(label.as_str()) && !caller.is_full() {
            let rec = AuditRecord::new(AuditEventKind::SecurityDenied, self.core.machine.get())
                .with_request_id(caller.request_id().to_owned())
                .with_detail("method", "DELETE")
                .with_detail("required", "full")
                .with_detail("label", label);
            let rec = match caller.audit_name() {
                Some(d) => rec.with_device(d),
                None => rec,
            };
            self.deny(caller.source(), "insufficient tier", rec);
            return Err(AppError::InsufficientTier);
        }
        let by = caller.device_label().map(str::to_owned);
        Ok(self
            .door
            .pairing
            .call(|r| PairingMsg::Revoke {
                label,
                by,
                reply: r,
            })
            .await??)
    }

    /// Makes device `label` expire `dur` from now.
    pub async fn set_expiry(&self, label: String, dur: &str) -> Result<Device, AppError> {
        let dur = Dur::parse(dur).map_err(|e| AppError::BadRequest(e.to_string()))?;
        Ok(self
            .door
            .pairing
            .call(|r| PairingMsg::SetExpiry {
                label,
                dur,
                reply: r,
            })
            .await??)
    }

    /// Removes device `label`'s expiry.
    pub async fn clear_expiry(&self, label: String) -> Result<Device, AppError> {
        Ok(self
            .door
            .pairing
            .call(|r| PairingMsg::ClearExpiry { label, reply: r })
            .await??)
    }

    /// Changes device `label`'s tier (the CLI).
    pub async fn set_tier(&self, label: String, tier: &str) -> Result<Device, AppError> {
        let tier = Tier::parse(tier).map_err(|e| AppError::BadRequest(e.to_string()))?;
        Ok(self
            .door
            .pairing
            .call(|r| PairingMsg::SetTier {
                label,
                tier,
                by: None,
                reply: r,
            })
            .await??)
    }
}
