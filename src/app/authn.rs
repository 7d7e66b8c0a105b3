//! Who a phone-API request is, and whether its tier is enough (SPEC §3.2, §4.6, §11): the rules the
//! HTTP adapter applies before any handler runs. The adapter reads the headers and the route's
//! required tier; the decisions — the local secret's limits, the device lookup in the current policy
//! snapshot, the tier gate and the refusal's audit line — are made here.

use std::net::IpAddr;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::{AuthError, PairingMsg, Tier, TokenHash};
use subtle::ConstantTimeEq;

use super::{request_id, App, AppError, Caller, Who};

/// What a request presents in its `Authorization` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential<'a> {
    /// `Local <secret>`: the CLI on this machine.
    Local(&'a str),
    /// `Bearer <token>`, or anything else (which names no device).
    Bearer(&'a str),
}

impl<'a> Credential<'a> {
    /// The credential of an `Authorization` header value (empty when there is none).
    pub fn of(header: &'a str) -> Self {
        match header.strip_prefix("Local ") {
            Some(secret) => Credential::Local(secret.trim()),
            None => Credential::Bearer(header.strip_prefix("Bearer ").unwrap_or("").trim()),
        }
    }
}

/// Where a request comes from and what it does, as the adapter saw it.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The connection's peer address.
    pub peer: IpAddr,
    /// Whether the request came through a proxy (it carries a forwarding header).
    pub proxied: bool,
    /// The source refusals are counted by (the peer, or the proxy's last forwarded entry).
    pub source: String,
    /// The HTTP method, for the audit line.
    pub method: String,
    /// Whether the request only reads (`GET`): the local secret is a read credential only.
    pub reads: bool,
    /// The person an identity gate vouched for (SPEC §14), named in a refusal's audit line.
    pub identity: Option<crate::identity::Identity>,
}

/// What a route lets in: a device of at least `tier`, and the local secret only when
/// `local_secret` (SPEC §4.6: the GET routes the CLI reads — an allow-list, so a route added later
/// is closed to it until it is listed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// The lowest tier a device must hold.
    pub tier: Tier,
    /// Whether `Authorization: Local <secret>` may read the route.
    pub local_secret: bool,
}

impl Gate {
    /// A route for paired devices of at least `tier` only.
    pub const fn device(tier: Tier) -> Gate {
        Gate {
            tier,
            local_secret: false,
        }
    }

    /// A read the CLI makes: any paired device, and the local secret.
    pub const CLI_READ: Gate = Gate {
        tier: Tier::Read,
        local_secret: true,
    };
}

impl App {
    /// The caller `credential` names, or the refusal (counted and audited, rate-limited, never a
    /// log line per request). The caller is found in the current policy snapshot, never in the
    /// store and never by a name the request carries.
    pub fn authenticate(
        &self,
        credential: Credential<'_>,
        from: &Origin,
    ) -> Result<Caller, AppError> {
        match self.identify(credential, from) {
            Ok(caller) => Ok(caller.from_source(from.source.clone())),
            Err((e, device)) => {
                self.refuse(from, &e, device.as_deref(), None);
                Err(e)
            }
        }
    }

    /// The gate of a route: `insufficient tier` (audited) unless `caller` holds its tier; the
    /// local secret only where the gate lets the CLI read (`device not paired` elsewhere, as for
    /// any credential that names no device).
    pub fn admit(&self, caller: &Caller, gate: Gate, from: &Origin) -> Result<(), AppError> {
        match caller.who() {
            Who::Device { label, tier, .. } | Who::Deputy { label, tier, .. }
                if !tier.allows(gate.tier) =>
            {
                let e = AppError::InsufficientTier;
                self.refuse(from, &e, Some(label), Some((gate.tier, *tier)));
                return Err(e);
            }
            Who::LocalSecret if !gate.local_secret => {
                let e = AppError::NotPaired;
                self.refuse(from, &e, None, None);
                return Err(e);
            }
            _ => {}
        }
        if from.reads {
            self.core.counters.read();
        } else {
            self.core.counters.write();
        }
        Ok(())
    }

    /// Records a request refused before it reached the application (a bad Host or Origin).
    pub fn refuse_request(&self, from: &Origin, e: &AppError) {
        self.refuse(from, e, None, None);
    }

    fn refuse(
        &self,
        from: &Origin,
        e: &AppError,
        device: Option<&str>,
        tiers: Option<(Tier, Tier)>,
    ) {
        let mut rec = AuditRecord::new(AuditEventKind::SecurityDenied, self.core.machine.get())
            .with_request_id(request_id())
            .with_detail("method", from.method.clone());
        if let Some(d) = device {
            rec = rec.with_device(d);
        }
        if let Some(id) = &from.identity {
            rec = rec
                .with_detail("identity", id.person.clone())
                .with_detail("identity_gate", id.gate);
        }
        if let Some((required, held)) = tiers {
            rec = rec
                .with_detail("required", required.as_str())
                .with_detail("tier", held.as_str());
        }
        self.deny(from.source.clone(), &e.to_string(), rec);
    }

    /// The caller, or why there is none (with the device label when the token is known, for the
    /// audit line).
    fn identify(
        &self,
        credential: Credential<'_>,
        from: &Origin,
    ) -> Result<Caller, (AppError, Option<String>)> {
        let token = match credential {
            Credential::Local(secret) => {
                // Only ever a read credential, only from this machine, never through a proxy
                // (SPEC §4.6). Anything else gets `device not paired`.
                let from_here = from.peer.is_loopback() || from.peer == self.door.bind_host;
                return if from.reads
                    && !from.proxied
                    && from_here
                    && secret_eq(secret, &self.door.local_secret)
                {
                    Ok(Caller::new(Who::LocalSecret))
                } else {
                    Err((AppError::NotPaired, None))
                };
            }
            Credential::Bearer(token) => TokenHash::from_presented(token),
        };
        let now = time::OffsetDateTime::now_utc();
        let policy = self.door.policy.load();
        // The lowest tier: who the device is; the route's tier is [`App::admit`]'s.
        match policy.authorize_hash(&token, Tier::Read, now) {
            Ok(dev) => {
                let label = dev.label.as_str().to_owned();
                // Seen now (best effort, never blocks the request).
                let _ = self.door.pairing.cast(PairingMsg::Touch(label.clone()));
                Ok(Caller::new(Who::Device {
                    label,
                    tier: dev.tier,
                    id: token.device_id(),
                    token,
                }))
            }
            Err(AuthError::Unavailable) => {
                // The phone keeps its token and retries; the pairing actor reads the store again.
                let _ = self.door.pairing.cast(PairingMsg::Retry);
                Err((AppError::PairingUnavailable, None))
            }
            Err(AuthError::Expired) => {
                // The token is known: name the device in the audit line. Asking at the start of
                // time cannot fail for a known token, so this only looks the device up.
                let label = policy
                    .authorize_hash(&token, Tier::Read, time::OffsetDateTime::UNIX_EPOCH)
                    .map(|d| d.label.as_str().to_owned())
                    .ok();
                Err((AppError::Expired, label))
            }
            Err(_) => match self.deputy_caller(&token) {
                // A lead's device at this deputy's standby door (SPEC §13).
                Some(Ok(caller)) => Ok(caller),
                Some(Err(refused)) => Err((refused, None)),
                None => Err((AppError::NotPaired, None)),
            },
        }
    }
}

/// Constant-time equality (lengths may leak; the secret's length is public). An empty secret
/// matches nothing.
fn secret_eq(presented: &str, secret: &str) -> bool {
    !secret.is_empty()
        && presented.len() == secret.len()
        && bool::from(presented.as_bytes().ct_eq(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_one_credential() {
        assert_eq!(
            Credential::of("Local  s3cret "),
            Credential::Local("s3cret")
        );
        assert_eq!(Credential::of("Bearer abc"), Credential::Bearer("abc"));
        assert_eq!(Credential::of("Basic abc"), Credential::Bearer(""));
        assert_eq!(Credential::of(""), Credential::Bearer(""));
    }

    #[test]
    fn an_empty_secret_matches_nothing() {
        assert!(!secret_eq("", ""));
        assert!(!secret_eq("abc", "abd"));
        assert!(!secret_eq("ab", "abc"));
        assert!(secret_eq("abc", "abc"));
    }
}
