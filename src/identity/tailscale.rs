//! The Tailscale gate (`COLLIE_TRUSTED_USER`): `tailscale serve` removes any client-sent
//! `Tailscale-User-*` header and sets `Tailscale-User-Login` from the tailnet identity of the
//! connecting node (none for a tagged node or a local connection), RFC 2047-encoded when it is not
//! ASCII. The gate passes when that login is one of the trusted ones.
//!
//! Comparison: the part before the last `@` exactly, the part after it (a DNS domain, or
//! Tailscale's `github`-style provider names) ignoring ASCII case — a domain is case-insensitive
//! (RFC 4343), so `alice@Example.com` in the setting is the same person, while a mailbox's local
//! part may be case-sensitive at its provider (RFC 5321 §2.4) and is never folded.

use super::{rfc2047, Cause, Gate, Seen};

/// The header `tailscale serve` sets.
pub(super) const LOGIN_HEADER: &str = "tailscale-user-login";

/// The trusted logins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedUsers {
    logins: Vec<String>,
}

impl TrustedUsers {
    /// The logins of a comma-separated list (spaces around each are ignored); `None` when it
    /// names none.
    pub fn parse(list: &str) -> Option<TrustedUsers> {
        let logins: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        (!logins.is_empty()).then_some(TrustedUsers { logins })
    }

    /// The trusted logins, as configured.
    pub fn logins(&self) -> &[String] {
        &self.logins
    }

    /// The trusted login `login` is, if any (as configured).
    pub fn find(&self, login: &str) -> Option<&str> {
        self.logins
            .iter()
            .find(|t| same_login(t, login))
            .map(String::as_str)
    }
}

/// Whether two logins name the same person: the local part exactly, the domain ignoring ASCII
/// case.
fn same_login(a: &str, b: &str) -> bool {
    match (a.rsplit_once('@'), b.rsplit_once('@')) {
        (Some((la, da)), Some((lb, db))) => la == lb && da.eq_ignore_ascii_case(db),
        (None, None) => a == b,
        _ => false,
    }
}

impl Gate for TrustedUsers {
    fn name(&self) -> &'static str {
        "tailscale"
    }

    fn check(&self, seen: &Seen<'_>) -> Result<Option<String>, Cause> {
        let raw = seen.header(LOGIN_HEADER)?.ok_or(Cause::Missing)?;
        let login = rfc2047::decode(raw).map_err(|_| Cause::Unreadable)?;
        match self.find(&login) {
            // The login as the proxy named it (what the audit line and the device list show).
            Some(_) => Ok(Some(login)),
            None => Err(Cause::NotAccepted),
        }
    }

    fn describe(&self) -> String {
        format!("Tailscale-User-Login must name {}", self.logins.join(", "))
    }
}
