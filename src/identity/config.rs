//! The gates' settings as `crate::config` reads them from the environment, and the [`Gates`] they
//! make.

use std::sync::Arc;

use super::access::AccessGate;
use super::{DeviceHeader, Gates, TrustedUsers};

/// A gate setting that cannot be used: the bridge does not start with it (a gate that was meant
/// to be on is never silently off).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `COLLIE_TRUSTED_USER` is set but names no login.
    #[error("COLLIE_TRUSTED_USER names no login (a comma-separated list such as alice@example.com,bob@example.com)")]
    NoLogins,
    /// `COLLIE_DEVICE_HEADER` is not a header name a gate may read.
    #[error("COLLIE_DEVICE_HEADER must be an HTTP header name the bridge does not read itself (not Authorization, Host, Cookie, Origin, Content-*, X-Forwarded-For, Forwarded or X-Real-IP), got {0:?}")]
    HeaderName(String),
    /// `COLLIE_DEVICE_ALLOW` names no value.
    #[error("COLLIE_DEVICE_ALLOW names no value (a comma-separated list of the values the header may carry)")]
    NoDeviceValues,
    /// Only one of `COLLIE_DEVICE_HEADER` and `COLLIE_DEVICE_ALLOW` is set.
    #[error("COLLIE_DEVICE_HEADER and COLLIE_DEVICE_ALLOW go together: set both, or neither")]
    DeviceHalf,
    /// Only one of `COLLIE_ACCESS_TEAM` and `COLLIE_ACCESS_AUD` is set.
    #[error("COLLIE_ACCESS_TEAM and COLLIE_ACCESS_AUD go together: set both, or neither")]
    AccessHalf,
    /// The Access team or AUD tag cannot be used.
    #[error("{0}")]
    Access(String),
}

/// `COLLIE_ACCESS_TEAM` with `COLLIE_ACCESS_AUD` (checked by [`AccessGate::new`]); the gate itself
/// is built by the bridge, which runs its key fetcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessConfig {
    /// The team: `<team>.cloudflareaccess.com`.
    pub team: String,
    /// The Access application's AUD tag.
    pub aud: String,
}

impl AccessConfig {
    /// The gate (no keys yet: [`AccessGate::run_refresher`] fetches them).
    pub fn gate(&self) -> Result<AccessGate, ConfigError> {
        AccessGate::new(&self.team, &self.aud).map_err(|e| ConfigError::Access(e.to_string()))
    }
}

/// Which gates are configured (SPEC §14).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateConfig {
    /// `COLLIE_TRUSTED_USER`.
    pub trusted_users: Option<TrustedUsers>,
    /// `COLLIE_DEVICE_HEADER` with `COLLIE_DEVICE_ALLOW`.
    pub device_header: Option<DeviceHeader>,
    /// `COLLIE_ACCESS_TEAM` with `COLLIE_ACCESS_AUD`.
    pub access: Option<AccessConfig>,
}

impl GateConfig {
    /// The gates of the variables' values (`None`: unset or empty).
    pub fn from_vars(
        trusted_user: Option<&str>,
        device_header: Option<&str>,
        device_allow: Option<&str>,
        access: (Option<&str>, Option<&str>),
    ) -> Result<GateConfig, ConfigError> {
        let trusted_users = match trusted_user {
            Some(list) => Some(TrustedUsers::parse(list).ok_or(ConfigError::NoLogins)?),
            None => None,
        };
        let device_header = match (device_header, device_allow) {
            (Some(name), Some(allow)) => Some(DeviceHeader::parse(name, allow)?),
            (None, None) => None,
            _ => return Err(ConfigError::DeviceHalf),
        };
        let access = match access {
            (Some(team), Some(aud)) => {
                let access = AccessConfig {
                    team: team.to_owned(),
                    aud: aud.to_owned(),
                };
                access.gate()?;
                Some(access)
            }
            (None, None) => None,
            _ => return Err(ConfigError::AccessHalf),
        };
        Ok(GateConfig {
            trusted_users,
            device_header,
            access,
        })
    }

    /// The configured gates, in their order: the Tailscale login, then the device header. A gate
    /// configured elsewhere (Cloudflare Access) is added with [`Gates::with`] between them by
    /// whoever builds it — see [`GateConfig::gates_around`].
    pub fn gates(&self) -> Gates {
        self.gates_around(None)
    }

    /// Whether any gate is configured.
    pub fn any(&self) -> bool {
        self.trusted_users.is_some() || self.device_header.is_some() || self.access.is_some()
    }

    /// The configured gates with `middle` (a gate that needs the bridge's runtime to build, such
    /// as Cloudflare Access with its key fetcher) after the Tailscale gate and before the device
    /// header: people before hardware.
    pub fn gates_around(&self, middle: Option<Arc<dyn super::Gate>>) -> Gates {
        let mut gates = Gates::none();
        if let Some(t) = &self.trusted_users {
            gates = gates.with(Arc::new(t.clone()));
        }
        if let Some(m) = middle {
            gates = gates.with(m);
        }
        if let Some(d) = &self.device_header {
            gates = gates.with(Arc::new(d.clone()));
        }
        gates
    }
}
