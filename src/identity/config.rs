//! The gates' settings as `crate::config` reads them from the environment, and the [`Gates`] they
//! make.

use std::sync::Arc;

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
}

/// Which gates are configured (SPEC §14).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateConfig {
    /// `COLLIE_TRUSTED_USER`.
    pub trusted_users: Option<TrustedUsers>,
    /// `COLLIE_DEVICE_HEADER` with `COLLIE_DEVICE_ALLOW`.
    pub device_header: Option<DeviceHeader>,
}

impl GateConfig {
    /// The gates of the variables' values (`None`: unset or empty).
    pub fn from_vars(
        trusted_user: Option<&str>,
        device_header: Option<&str>,
        device_allow: Option<&str>,
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
        Ok(GateConfig {
            trusted_users,
            device_header,
        })
    }

    /// The configured gates, in their order: the Tailscale login, then the device header. A gate
    /// configured elsewhere (Cloudflare Access) is added with [`Gates::with`] between them by
    /// whoever builds it — see [`GateConfig::gates_around`].
    pub fn gates(&self) -> Gates {
        self.gates_around(None)
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
