//! `config.toml`'s schema (SPEC §12, `schema_version = 1`): one typed reading of the file, an
//! unknown key an error that names it, and keys of an older shape answered with what replaced them
//! ([`super::migrate`]).

use std::path::PathBuf;

use serde::Deserialize;

use super::migrate;
use super::sandbox::SandboxConfig;
use super::speech::SpeechConfig;

/// The schema this version reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The largest `config.toml` read (a configuration is a few KiB; anything this size is a mistake).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Why `config.toml` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// Not TOML, or a value of the wrong type, or a key this schema does not have.
    #[error("{0}")]
    Invalid(String),
    /// A key of an older shape: what replaced it.
    #[error("`{key}` is no longer read: {instead}")]
    Migrated {
        /// The key, dotted (`tmux.socket`).
        key: String,
        /// What to write instead.
        instead: &'static str,
    },
    /// No `schema_version`, or one this version does not read.
    #[error("{0}")]
    Version(String),
}

/// Reads `text` as `config.toml`: older keys first (so a renamed key gets its migration message
/// rather than serde's "unknown field"), then the schema version, then the typed schema.
pub fn parse(text: &str) -> Result<ConfigFile, ConfigFileError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigFileError::Invalid(e.to_string()))?;
    migrate::check(&table).map_err(|m| ConfigFileError::Migrated {
        key: m.key,
        instead: m.instead,
    })?;
    match table.get("schema_version") {
        None => {
            return Err(ConfigFileError::Version(format!(
                "config.toml has no `schema_version`: add `schema_version = {SCHEMA_VERSION}` as its first line \
                 (the keys are otherwise those of earlier versions), then run `collie apply`"
            )))
        }
        Some(toml::Value::Integer(v)) if *v == i64::from(SCHEMA_VERSION) => {}
        Some(toml::Value::Integer(v)) => {
            return Err(ConfigFileError::Version(format!(
                "config.toml has `schema_version = {v}`; this collie reads schema_version = {SCHEMA_VERSION}"
            )))
        }
        Some(_) => {
            return Err(ConfigFileError::Version(format!(
                "`schema_version` must be the number {SCHEMA_VERSION}"
            )))
        }
    }
    toml::from_str(text).map_err(|e: toml::de::Error| ConfigFileError::Invalid(e.to_string()))
}

/// `config.toml` (SPEC §12): the desired state `collie apply` resolves and pins.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Always 1 in this version; [`parse`] refuses a file without it.
    pub schema_version: Option<u32>,
    /// This bridge's machine name.
    pub name: Option<String>,
    /// The public URL phones open (used in the pairing QR code and the Host check).
    pub public_url: Option<String>,
    /// `[tmux]` table.
    #[serde(default)]
    pub tmux: TmuxConfig,
    /// `[crew]` table.
    #[serde(default)]
    pub crew: CrewConfig,
    /// `[hooks]` table.
    #[serde(default)]
    pub hooks: HooksConfig,
    /// `[push]` table.
    #[serde(default)]
    pub push: PushConfig,
    /// `[phone]` table.
    #[serde(default)]
    pub phone: PhoneConfig,
    /// The folders the file tools and the Files view may use (none given: the home folder).
    pub workspaces: Option<Vec<WorkspaceEntry>>,
    /// `[[starters]]`: the programs the phone's New page opens panes with.
    #[serde(default)]
    pub starters: Vec<StarterEntry>,
    /// `[sandbox]`: what confines the processes a phone starts (SPEC §15).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// `[speech]`: the transcriber of the phone's dictation (SPEC §16); none without the table.
    pub speech: Option<SpeechConfig>,
}

/// One entry of `workspaces`: a folder, or `{ path, access }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum WorkspaceEntry {
    /// Just the folder (`access = "write"`).
    Path(String),
    /// The folder and what the file tools may do in it.
    Table(WorkspaceTable),
}

/// `{ path = "…", access = "read" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceTable {
    /// The folder (`~/` for home; relative to the config folder otherwise).
    pub path: String,
    /// `read` (read tools only) or `write` (the default).
    pub access: Option<Access>,
}

/// What the file tools may do inside a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read, list, search and diff only.
    Read,
    /// Everything the device's tier allows.
    Write,
}

impl Access {
    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

impl WorkspaceEntry {
    /// The folder as written.
    pub fn path(&self) -> &str {
        match self {
            WorkspaceEntry::Path(p) => p,
            WorkspaceEntry::Table(t) => &t.path,
        }
    }

    /// The access it grants (`write` unless it says `read`).
    pub fn access(&self) -> Access {
        match self {
            WorkspaceEntry::Path(_) => Access::Write,
            WorkspaceEntry::Table(t) => t.access.unwrap_or(Access::Write),
        }
    }
}

/// One `[[starters]]` row.
///
/// ```toml
/// [[starters]]
/// name = "claude"
/// exec = "claude"            # looked up in PATH, or a path
/// args = ["--verbose"]       # passed as they are
/// model = "sonnet"           # an option field: the bridge picks the flag (`--model sonnet`)
/// no_prompts = false         # true: the agent's own flag for skipping permission prompts
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarterEntry {
    /// What the New page shows.
    pub name: String,
    /// The executable: a name looked up in `PATH`, or a path.
    pub exec: String,
    /// Fixed arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// `claude` or `codex`; taken from `exec`'s file name when not given. Option fields need it.
    pub agent: Option<String>,
    /// Option field: the model the agent starts with.
    pub model: Option<String>,
    /// Skip the agent's permission prompts (the "No prompts" badge).
    #[serde(default)]
    pub no_prompts: bool,
}

/// `[phone]` in `config.toml` (SPEC §11, §12): what a paired phone may do besides panes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhoneConfig {
    /// Whether a `full` device may run one-shot commands (default true).
    pub run: Option<bool>,
    /// Whether a phone may add starter rows made from a template (default true).
    pub adds: Option<bool>,
    /// Whether a phone may add a hand-typed starter row (default false).
    pub free_text: Option<bool>,
}

/// `[push]` in `config.toml` (SPEC §10.4, §12): self-hosted push services a phone may subscribe
/// with, besides the known ones.
///
/// ```toml
/// [push]
/// services = ["ntfy.example.org", { host = "push.home.arpa", ca_file = "/etc/ssl/home-ca.pem" }]
/// ca_file = "/etc/ssl/home-ca.pem"   # for the listed services that name none
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// Host names (or IP addresses) of listed services, each with an optional CA file.
    #[serde(default)]
    pub services: Vec<PushServiceEntry>,
    /// The CA file of the listed services that do not name their own.
    pub ca_file: Option<PathBuf>,
}

/// One entry of `[push] services`: a host, or `{ host, ca_file }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PushServiceEntry {
    /// Just the host.
    Host(String),
    /// The host and its CA file.
    Table(PushServiceTable),
}

/// `{ host = "…", ca_file = "…" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushServiceTable {
    /// Host name or IP address, without scheme or port.
    pub host: String,
    /// PEM file of the CA(s) the service's certificate chains to.
    pub ca_file: Option<PathBuf>,
}

/// `[hooks]` in `config.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// How long a held permission waits for a tap, in seconds (default 600, at most 86,400).
    pub hold: Option<u64>,
}

/// `[crew]` in `config.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrewConfig {
    /// The address (`HOST:PORT`) members dial, put in invites by default.
    pub address: Option<String>,
    /// `tools = false`: as a member, this machine does not serve the tools of SPEC §11 to its lead
    /// (it leaves the `tools` capability out of its hello and refuses a relayed tool call).
    pub tools: Option<bool>,
}

/// `[tmux]` in `config.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmuxConfig {
    /// Extra tmux sockets to serve besides the default one.
    #[serde(default)]
    pub sockets: Vec<PathBuf>,
}
