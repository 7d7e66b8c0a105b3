//! Identity at the door (SPEC §14): beside pairing, a bridge can require a person that a proxy in
//! front of it vouches for — `tailscale serve`'s `Tailscale-User-Login`, a device header a proxy
//! injects, and (plugged in beside them) a Cloudflare Access token.
//!
//! A pure core: [`Gates::check`] takes what a request showed ([`Seen`]: its headers, whether its
//! peer is the proxy, the time) and answers who the gates vouched for (`Ok(Some(Identity))`),
//! that no gate is configured (`Ok(None)`), or which gate refused and why ([`Refusal`]). The HTTP
//! adapter builds the [`Seen`] and the application audits a refusal; nothing here does I/O.
//!
//! **The proxy is a loopback peer** (decision 0073). A header from any other peer is never read:
//! to the gates such a request carries no identity at all, so it is refused with the cause
//! [`Cause::NotFromProxy`]. Anything on this machine that reaches the loopback port can therefore
//! claim an identity: the gates keep the network out, not the machine's own users (pairing still
//! has to pass as well).
//!
//! **Several gates all apply.** Each configured gate must pass; the identity recorded is the
//! person named by the first gate in [`Gates`]' order that named one (Tailscale, then Access, then
//! the device header: people before hardware).
//!
//! **Adding a gate** is a type implementing [`Gate`] and one [`Gates::with`] where the bridge
//! builds the gates (`crate::bridge`), after the configured ones it is to follow.

pub mod access;
mod config;
mod device_header;
pub mod rfc2047;
mod tailscale;

use std::sync::Arc;
use std::time::SystemTime;

use http::HeaderMap;

pub use self::config::{AccessConfig, ConfigError, GateConfig};
pub use self::device_header::DeviceHeader;
pub use self::tailscale::TrustedUsers;

/// The longest identity value a gate reads, in bytes (a login, a device id): checked before it
/// is decoded or copied.
pub const MAX_VALUE: usize = 512;

/// What the gates said of a request (`None`: no gate names anyone): carried in the request's
/// extensions from the gates' middleware to the one that names the caller.
#[derive(Debug, Clone)]
pub struct Vouched(pub Option<Identity>);

/// Who a gate vouched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The person (a login, an email, a device value), as the gate named it.
    pub person: String,
    /// The gate that named them ([`Gate::name`]).
    pub gate: &'static str,
}

/// What a request showed the gates.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    headers: &'a HeaderMap,
    from_proxy: bool,
    now: SystemTime,
}

impl<'a> Seen<'a> {
    /// A request with `headers`, whose peer is the proxy (`from_proxy`: a loopback peer, decision
    /// 0073) or not, seen at `now`.
    pub fn new(headers: &'a HeaderMap, from_proxy: bool, now: SystemTime) -> Seen<'a> {
        Seen {
            headers,
            from_proxy,
            now,
        }
    }

    /// The one value of header `name`, when the request came from the proxy: `Ok(None)` when it is
    /// absent (or the peer is not the proxy, whose headers are never read), an error when it is
    /// repeated (a proxy sets it once) or longer than [`MAX_VALUE`].
    pub fn header(&self, name: &str) -> Result<Option<&'a [u8]>, Cause> {
        self.header_within(name, MAX_VALUE)
    }

    /// [`Seen::header`] for a value that may be up to `max` bytes (a signed token is longer than
    /// a login).
    pub fn header_within(&self, name: &str, max: usize) -> Result<Option<&'a [u8]>, Cause> {
        if !self.from_proxy {
            return Ok(None);
        }
        let mut values = self.headers.get_all(name).iter();
        let Some(first) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(Cause::Repeated);
        }
        if first.len() > max {
            return Err(Cause::Unreadable);
        }
        Ok(Some(first.as_bytes()))
    }

    /// Whether the peer is the proxy.
    pub fn from_proxy(&self) -> bool {
        self.from_proxy
    }

    /// When the request is checked (for a gate that reads a token's times).
    pub fn now(&self) -> SystemTime {
        self.now
    }
}

/// Why a gate refused a request: fixed words, written in the audit line's `cause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// The request carries no value for the gate.
    #[error("missing")]
    Missing,
    /// The request's peer is not the proxy: its identity headers were not read.
    #[error("not from the proxy")]
    NotFromProxy,
    /// The value names no one the gate accepts.
    #[error("not accepted")]
    NotAccepted,
    /// The header is there more than once.
    #[error("repeated")]
    Repeated,
    /// The value cannot be read (too long, not decodable).
    #[error("unreadable")]
    Unreadable,
    /// A gate's own reason (a token's signature, its audience, its times…).
    #[error("{0}")]
    Invalid(&'static str),
}

/// A refused request: the gate, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("identity required by {gate}: {cause}")]
pub struct Refusal {
    /// The refusing gate's [`Gate::name`].
    pub gate: &'static str,
    /// Why.
    pub cause: Cause,
}

/// One gate at the door.
pub trait Gate: Send + Sync + std::fmt::Debug {
    /// Its short name, in refusals, audit lines and the phone's error (`tailscale`,
    /// `device-header`, `access`).
    fn name(&self) -> &'static str;

    /// Whether the request passes: `Ok(Some(person))` when the gate names who it vouched for,
    /// `Ok(None)` when it passes naming no one, `Err` when it refuses. Read headers with
    /// [`Seen::header`] only (never from a peer that is not the proxy).
    fn check(&self, seen: &Seen<'_>) -> Result<Option<String>, Cause>;

    /// What `collie doctor` says of it, e.g. `Tailscale-User-Login must name alice@example.com`.
    fn describe(&self) -> String;
}

/// The configured gates, in order. Empty: the door is pairing alone, as before SPEC §14.
#[derive(Debug, Clone, Default)]
pub struct Gates {
    list: Vec<Arc<dyn Gate>>,
}

impl Gates {
    /// No gate.
    pub fn none() -> Gates {
        Gates::default()
    }

    /// These gates, and `gate` after them.
    #[must_use]
    pub fn with(mut self, gate: Arc<dyn Gate>) -> Gates {
        self.list.push(gate);
        self
    }

    /// Whether no gate is configured.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The gates, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Gate>> + '_ {
        self.list.iter()
    }

    /// Every gate must pass. The first refusal is the answer (a request from a peer that is not
    /// the proxy is refused as [`Cause::NotFromProxy`], whatever it carried); the identity is the
    /// first person a gate named.
    pub fn check(&self, seen: &Seen<'_>) -> Result<Option<Identity>, Refusal> {
        let mut who = None;
        for gate in &self.list {
            match gate.check(seen) {
                Ok(person) => {
                    if who.is_none() {
                        who = person.map(|person| Identity {
                            person,
                            gate: gate.name(),
                        });
                    }
                }
                Err(cause) => {
                    let cause = if seen.from_proxy {
                        cause
                    } else {
                        Cause::NotFromProxy
                    };
                    return Err(Refusal {
                        gate: gate.name(),
                        cause,
                    });
                }
            }
        }
        Ok(who)
    }
}

/// Whether a request from `peer` came from the proxy: a loopback peer (`127.0.0.0/8`, `::1`, or
/// an IPv4-mapped loopback address on a dual-stack socket). Decision 0073.
pub fn is_proxy(peer: std::net::IpAddr) -> bool {
    peer.to_canonical().is_loopback()
}

#[cfg(test)]
mod tests;
