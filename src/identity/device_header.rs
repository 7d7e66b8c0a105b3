//! The device-header gate (seed 002's second gate; `COLLIE_DEVICE_HEADER`, `COLLIE_DEVICE_ALLOW`):
//! a proxy that identifies hardware (a client certificate, an MDM tunnel) names the device in a
//! header; the gate passes when that value is one of the allowed ones, compared exactly and in
//! constant time. The value is what the gate vouches for.

use subtle::ConstantTimeEq;

use super::{Cause, ConfigError, Gate, Seen};

/// Headers the gate may not read: the bridge's own credential and the proxy's plumbing.
const RESERVED: &[&str] = &[
    "authorization",
    "host",
    "cookie",
    "origin",
    "content-length",
    "content-type",
    "x-forwarded-for",
    "forwarded",
    "x-real-ip",
];

/// The header and its allowed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceHeader {
    header: String,
    allow: Vec<String>,
}

impl DeviceHeader {
    /// Header `name` (a valid HTTP header name, not one the bridge reads itself) with the values
    /// of the comma-separated `allow` (at least one).
    pub fn parse(name: &str, allow: &str) -> Result<DeviceHeader, ConfigError> {
        let header = http::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| ConfigError::HeaderName(name.to_owned()))?
            .as_str()
            .to_owned();
        if RESERVED.contains(&header.as_str()) {
            return Err(ConfigError::HeaderName(name.to_owned()));
        }
        let allow: Vec<String> = allow
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        if allow.is_empty() {
            return Err(ConfigError::NoDeviceValues);
        }
        Ok(DeviceHeader { header, allow })
    }

    /// The header's name, lowercase.
    pub fn header(&self) -> &str {
        &self.header
    }

    /// How many values are allowed.
    pub fn values(&self) -> usize {
        self.allow.len()
    }
}

impl Gate for DeviceHeader {
    fn name(&self) -> &'static str {
        "device-header"
    }

    fn check(&self, seen: &Seen<'_>) -> Result<Option<String>, Cause> {
        let raw = seen.header(&self.header)?.ok_or(Cause::Missing)?;
        let value = std::str::from_utf8(raw)
            .map_err(|_| Cause::Unreadable)?
            .trim();
        // Every value is compared, so the time taken does not say which one came close.
        let mut found = false;
        for allowed in &self.allow {
            found |= bool::from(allowed.as_bytes().ct_eq(value.as_bytes()));
        }
        if found {
            Ok(Some(value.to_owned()))
        } else {
            Err(Cause::NotAccepted)
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} must be one of {} allowed value(s)",
            self.header,
            self.allow.len()
        )
    }
}
