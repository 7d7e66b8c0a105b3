//! `[sandbox]` in `config.toml` (SPEC §15, decision 0072): what confines every process Collie
//! starts for a phone, as written. Only the shape is read here; the values are checked, and the
//! paths made concrete, when `collie apply` resolves it (`crate::applied::sandbox`), so a person
//! sees every problem of the section at once.
//!
//! ```toml
//! [sandbox]
//! profile = "workspace"               # "off" (the default) or "workspace"
//! read_only = ["/opt/rust"]           # extra roots readable (and executable), never writable
//! network = "none"                    # "none" (the default) | "local" | "any"
//! local_ports = [5432]                # only with network = "local"
//! preset = "normal"                   # constrained | normal (the default) | extended
//! memory_mb = 2048                    # each overrides its preset value
//! processes = 64
//! timeout_s = 600
//! ```

use collie_sandbox::Preset;
use serde::{Deserialize, Serialize};

/// `[sandbox]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `off` (the default: nothing is confined) or `workspace`.
    pub profile: Option<SandboxProfile>,
    /// Extra roots a confined process may read (and run programs from): absolute, or `~/…`.
    pub read_only: Option<Vec<String>>,
    /// What a confined process may reach over the network (default `none`).
    pub network: Option<SandboxNetwork>,
    /// With `network = "local"`: the TCP ports it may connect to and bind.
    pub local_ports: Option<Vec<u16>>,
    /// The named limits (default `normal`).
    pub preset: Option<Preset>,
    /// Overrides the preset's memory, in MiB.
    pub memory_mb: Option<u64>,
    /// Overrides the preset's number of processes.
    pub processes: Option<u32>,
    /// Overrides the preset's time limit, in seconds.
    pub timeout_s: Option<u64>,
}

/// `profile`: whether the sandbox is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxProfile {
    /// Nothing is confined (the default; the only way to run without the sandbox).
    #[default]
    Off,
    /// Every process a phone starts is confined to the workspaces and the policy.
    Workspace,
}

/// `network`: the rule as written (`local_ports` completes `local`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// No TCP at all (the default: what a phone starts reaches nothing unless asked).
    #[default]
    None,
    /// Only the ports of `local_ports`.
    Local,
    /// Unrestricted.
    Any,
}
