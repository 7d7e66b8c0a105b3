//! Who asks for an operation, and the one builder of the audit lines a write leaves (SPEC §7).
//!
//! Every adapter names the caller before it calls the application: the HTTP adapter a paired
//! device (or the local secret, or nobody on an open route), the control socket the CLI on this
//! machine, the relay the lead on behalf of its phone's device. A caller carries the request id
//! that every line of the request — on both machines, for a relayed write — shares.

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::{AuthError, Tier, TokenHash};
use collie_crew::relay::client::On;
use rand::RngCore;
use time::OffsetDateTime;

use super::{App, AppError};
use crate::identity::Identity;

/// The device name a member is given for a request of the lead's own CLI (local secret or socket).
const LEAD_LOCAL_CALLER: &str = "local";

/// Who is asking.
#[derive(Debug, Clone)]
pub enum Who {
    /// Nobody: an open route (`/api/health`, `/api/pair`).
    Open,
    /// A paired device, as the policy snapshot named it when the request started.
    Device {
        /// Its label.
        label: String,
        /// Its tier then.
        tier: Tier,
        /// The SHA-256 of the token it presented (never the token), so a long request can check
        /// it again.
        token: TokenHash,
        /// Its identity ([`TokenHash::device_id`]): what the sessions and confirm tokens it
        /// owns are bound to, here and on members (SPEC §10.1).
        id: String,
    },
    /// The CLI on this machine reading over HTTP with the local secret.
    LocalSecret,
    /// The CLI on this machine, over the control socket.
    Cli,
    /// On a deputy standing in (SPEC §13): a device of the lead's, by the lead's registry copy.
    Deputy {
        /// The lead's crew name.
        lead: String,
        /// The device's label on the lead.
        label: String,
        /// Its tier there.
        tier: Tier,
        /// The SHA-256 of the token it presented, to check it again.
        token: TokenHash,
        /// Its identity: what it owns here is owned as when the lead relays for it.
        id: String,
    },
    /// On a member: the lead, relaying a request of its phone's `device`.
    Relay {
        /// The lead's crew name.
        lead: String,
        /// The device on the lead's side (its label, for audit lines).
        device: String,
        /// The device's identity on the lead's side, when the lead sent one (not for its CLI,
        /// not from an older lead).
        device_id: Option<String>,
        /// The deputy that relayed it while standing in for the lead (SPEC §13), if it did.
        deputy: Option<String>,
    },
}

/// A caller, the id of its request, where it asks from (for refusals, counted per source), and
/// the person an identity gate vouched for (SPEC §14), if one did.
#[derive(Debug, Clone)]
pub struct Caller {
    who: Who,
    request_id: String,
    source: Option<String>,
    identity: Option<Identity>,
}

/// A fresh request id for audit lines (128 random bits, hex).
pub fn request_id() -> String {
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

fn auth_error(e: AuthError) -> AppError {
    match e {
        AuthError::Expired => AppError::Expired,
        AuthError::InsufficientTier => AppError::InsufficientTier,
        AuthError::Unavailable => AppError::PairingUnavailable,
        _ => AppError::NotPaired,
    }
}

impl Caller {
    /// `who`, with a fresh request id.
    pub fn new(who: Who) -> Caller {
        Caller {
            who,
            request_id: request_id(),
            source: None,
            identity: None,
        }
    }

    /// This caller, vouched for by an identity gate as `identity` (SPEC §14): its audit lines
    /// name the person beside the device.
    pub fn with_identity(mut self, identity: Option<Identity>) -> Caller {
        self.identity = identity;
        self
    }

    /// The person an identity gate vouched for, if one did.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// This caller, asking from `source` (the peer address, or behind a loopback proxy the
    /// forwarded one).
    pub fn from_source(mut self, source: String) -> Caller {
        self.source = Some(source);
        self
    }

    /// Where it asks from (`local` when it is this machine's CLI).
    pub fn source(&self) -> String {
        self.source.clone().unwrap_or_else(|| "local".to_owned())
    }

    /// The CLI on this machine.
    pub fn cli() -> Caller {
        Caller::new(Who::Cli)
    }

    /// The lead relaying its phone's request `request_id` for `device` (identity `device_id`).
    pub fn relay(
        lead: String,
        device: String,
        device_id: Option<String>,
        request_id: String,
        deputy: Option<String>,
    ) -> Caller {
        Caller {
            who: Who::Relay {
                lead,
                device,
                device_id,
                deputy,
            },
            request_id,
            source: None,
            identity: None,
        }
    }

    /// What the sessions, searches and confirm tokens this caller starts are owned by (SPEC
    /// §10.1): a device's identity, never its label — so a device paired again under the same
    /// label owns none of it — on this machine and, relayed by the lead, on a member.
    pub fn owner(&self) -> String {
        match &self.who {
            Who::Device { id, .. } => device_owner(id),
            Who::Deputy { lead, id, .. } => relay_owner(lead, id),
            Who::Relay {
                lead,
                device_id: Some(id),
                ..
            } => relay_owner(lead, id),
            // The lead's own CLI, or an older lead that names the device by its label only.
            Who::Relay {
                lead,
                device,
                device_id: None,
                ..
            } => format!("relay:{lead}:label:{device}"),
            Who::LocalSecret => "local-cli".to_owned(),
            Who::Cli => "cli".to_owned(),
            Who::Open => "open".to_owned(),
        }
    }

    /// Who confirms a starter's "No prompts" (SPEC §12): a paired device by label and token hash;
    /// `None` for the machine's own CLI and a lead relaying (the lead checked its device before it
    /// relayed).
    pub(super) fn confirmer(&self) -> Option<String> {
        match &self.who {
            // Kept in a file under this name since before [`Caller::owner`]: label and token hash.
            Who::Device { label, token, .. } => {
                Some(format!("device:{label}:{}", token.short_hex()))
            }
            _ => None,
        }
    }

    /// Who it is.
    pub fn who(&self) -> &Who {
        &self.who
    }

    /// The request's id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// The device label audit lines name (`local-cli` for the local secret), if any.
    pub fn audit_name(&self) -> Option<String> {
        match &self.who {
            Who::Open | Who::Cli => None,
            Who::Device { label, .. } | Who::Deputy { label, .. } => Some(label.clone()),
            Who::LocalSecret => Some("local-cli".into()),
            Who::Relay { device, .. } => Some(device.clone()),
        }
    }

    /// The device's label, if a device asks.
    pub fn device_label(&self) -> Option<&str> {
        match &self.who {
            Who::Device { label, .. } => Some(label),
            _ => None,
        }
    }

    /// Whether this caller may act with tier `full` on this machine's devices (the CLI may).
    pub fn is_full(&self) -> bool {
        matches!(
            self.who,
            Who::Cli
                | Who::Device {
                    tier: Tier::Full,
                    ..
                }
                | Who::Deputy {
                    tier: Tier::Full,
                    ..
                }
        )
    }

    /// The audit line of a write by this caller on this machine (SPEC §7): the device, the request
    /// id, how the request came (`phone`, `cli`, or `relay` with the lead's name), and the person
    /// an identity gate vouched for (`identity`, with `identity_gate`; SPEC §14).
    pub fn record(&self, app: &App, event: AuditEventKind) -> AuditRecord {
        let rec = AuditRecord::new(event, app.core.machine.get())
            .with_request_id(self.request_id.clone());
        let rec = match &self.identity {
            Some(id) => rec
                .with_detail("identity", id.person.clone())
                .with_detail("identity_gate", id.gate),
            None => rec,
        };
        match &self.who {
            Who::Relay {
                lead,
                device,
                deputy,
                ..
            } => {
                let rec = rec
                    .with_device(device.clone())
                    .with_detail("via", "relay")
                    .with_detail("lead", lead.clone());
                match deputy {
                    Some(d) => rec.with_detail("deputy", d.clone()),
                    None => rec,
                }
            }
            Who::Device { label, .. } => rec.with_device(label.clone()).with_detail("via", "phone"),
            Who::Deputy { lead, label, .. } => rec
                .with_device(label.clone())
                .with_detail("via", "deputy")
                .with_detail("lead", lead.clone()),
            Who::LocalSecret => rec.with_device("local-cli").with_detail("via", "phone"),
            Who::Cli | Who::Open => rec.with_detail("via", "cli"),
        }
    }

    /// How a request of this caller is named to a member the lead relays it to.
    pub fn on(&self) -> On<'_> {
        let (device, device_id) = match &self.who {
            Who::Device { label, id, .. } | Who::Deputy { label, id, .. } => {
                (label.as_str(), Some(id.as_str()))
            }
            Who::Relay {
                device, device_id, ..
            } => (device.as_str(), device_id.as_deref()),
            Who::Open | Who::Cli | Who::LocalSecret => (LEAD_LOCAL_CALLER, None),
        };
        On {
            device,
            request_id: &self.request_id,
            device_id,
        }
    }

    /// Whether this caller still may do what needs `required`, per the current policy snapshot:
    /// what a stream asks each time the policy changes. Only a device's answer can change while
    /// the bridge runs.
    pub fn still_allowed(&self, app: &App, required: Tier) -> Result<(), AppError> {
        match &self.who {
            Who::Device { token, .. } => app
                .door
                .policy
                .load()
                .authorize_hash(token, required, OffsetDateTime::now_utc())
                .map(|_| ())
                .map_err(auth_error),
            Who::Deputy { token, .. } => app.deputy_allows(token, required),
            _ => Ok(()),
        }
    }

    /// When this caller's authorization runs out on its own (its device's expiry), if ever.
    pub fn expires_at(&self, app: &App) -> Option<OffsetDateTime> {
        match &self.who {
            Who::Device { token, .. } => app
                .door
                .policy
                .load()
                .authorize_hash(token, Tier::Read, OffsetDateTime::UNIX_EPOCH)
                .ok()
                .and_then(|d| d.expires_at),
            Who::Deputy { token, .. } => app.deputy_expiry(token),
            _ => None,
        }
    }
}

impl App {
    /// On a member: the lead relaying a request of its phone's `device` (identity `device_id`),
    /// with the lead's request id (so both machines' audit lines share it) — or the `deputy`
    /// relaying it while standing in for the lead. An identity that is not one
    /// ([`TokenHash::device_id`]'s 32 hex digits) counts as none.
    pub fn lead_caller(
        &self,
        device: String,
        device_id: Option<String>,
        request_id: String,
        deputy: Option<String>,
    ) -> Caller {
        let lead = self
            .crew
            .view
            .load()
            .lead
            .as_ref()
            .map_or_else(|| "lead".to_owned(), |l| l.name.clone());
        let device_id = device_id.filter(|id| is_device_id(id));
        Caller::relay(lead, device, device_id, request_id, deputy)
    }
}

/// What a device of this machine with identity `id` owns things as (see [`Caller::owner`]).
pub(super) fn device_owner(id: &str) -> String {
    format!("device:{id}")
}

/// What a device of `lead` with identity `id` owns things as on this member.
pub(super) fn relay_owner(lead: &str, id: &str) -> String {
    format!("relay:{lead}:{id}")
}

/// Whether `s` has the shape of a device identity: 32 lowercase hex digits.
pub(super) fn is_device_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
