//! Settings: where they come from and what they resolve to (SPEC §2, §3.1).
//!
//! Precedence, highest first: command-line flags, the process environment, `<config>/.env`,
//! `<config>/config.toml`, built-in defaults. The result is a plain [`Settings`] struct; nothing below
//! the CLI sees clap types or reads the environment itself.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use collie_actors::push::endpoint::Service;

mod file;
#[cfg(test)]
mod fuzz;
mod migrate;
mod sandbox;
mod speech;

pub use file::{
    parse as parse_config, Access, ConfigFile, ConfigFileError, CrewConfig, HooksConfig,
    PhoneConfig, PushConfig, PushServiceEntry, PushServiceTable, StarterEntry, TmuxConfig,
    WorkspaceEntry, WorkspaceTable, MAX_CONFIG_BYTES, SCHEMA_VERSION,
};
pub use sandbox::{SandboxConfig, SandboxNetwork, SandboxProfile};
pub use speech::SpeechConfig;

/// Default HTTP port of the phone API.
pub const DEFAULT_PORT: u16 = 7420;

/// Default UDP port a crew lead listens on for members (SPEC §8).
pub const DEFAULT_CREW_PORT: u16 = 7421;

/// The `COLLIE_*` variables Collie understands; doctor reports any other.
pub const KNOWN_VARS: &[&str] = &[
    "COLLIE_HOST",
    "COLLIE_PORT",
    "COLLIE_CREW_PORT",
    "COLLIE_REDACT",
    "COLLIE_AUDIT_CONTENT",
    "COLLIE_WALKY",
    "COLLIE_SENT",
    "COLLIE_STATE_DIR",
    "COLLIE_CONFIG_DIR",
    "COLLIE_INSTANCE",
    "COLLIE_LOG",
    "COLLIE_TMUX_SOCKETS",
    "COLLIE_PANE",
    "COLLIE_TRUSTED_USER",
    "COLLIE_DEVICE_HEADER",
    "COLLIE_DEVICE_ALLOW",
    "COLLIE_ACCESS_TEAM",
    "COLLIE_ACCESS_AUD",
];

/// The hook socket's file name in the state dir.
pub const HOOK_SOCKET: &str = collie_actors::state_files::HOOK_SOCKET;

/// `[push]` resolved: hosts lowercased and checked, each with its CA file.
fn push_services(c: &PushConfig) -> Result<Vec<Service>> {
    let mut out = Vec::new();
    for entry in &c.services {
        let (host, ca_file) = match entry {
            PushServiceEntry::Host(h) => (h, None),
            PushServiceEntry::Table(t) => (&t.host, t.ca_file.clone()),
        };
        let host = host
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let is_ip = host.parse::<IpAddr>().is_ok();
        let is_name = !host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !is_ip && !is_name {
            bail!("[push] services: {host:?} must be a host name or an IP address, without scheme, port or path");
        }
        let ca_file = ca_file.or_else(|| c.ca_file.clone());
        if let Some(ca) = &ca_file {
            // Read now, so a wrong path stops the bridge with a clear line rather than every
            // push failing later.
            collie_actors::https::tls_config(Some(ca))
                .map_err(|e| anyhow::anyhow!("[push] services {host}: {e}"))?;
        }
        out.push(Service { host, ca_file });
    }
    Ok(out)
}

/// The hold deadline when `[hooks] hold` is not set (SPEC §10.2: 10 minutes).
pub const DEFAULT_HOLD: Duration = Duration::from_secs(600);
/// The longest `[hooks] hold` (SPEC §10.2: 24 hours).
pub const MAX_HOLD: Duration = Duration::from_secs(24 * 60 * 60);

/// Everything the bridge and the CLI need to know about their environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The state dir (0700).
    pub state_dir: PathBuf,
    /// The config dir.
    pub config_dir: PathBuf,
    /// HTTP bind address.
    pub host: IpAddr,
    /// HTTP port (0 = chosen by the OS, for tests).
    pub port: u16,
    /// Crew port a lead listens on (UDP; 0 = chosen by the OS).
    pub crew_port: u16,
    /// The address invites name (`crew.address` in `config.toml`); default the lead's own.
    pub crew_address: Option<String>,
    /// This machine's name.
    pub name: String,
    /// Public URL phones use, if configured.
    pub public_url: Option<String>,
    /// Masking on?
    pub redact: bool,
    /// `COLLIE_WALKY`: whether this machine's panes accept walky messages (its CLI can always send).
    pub walky: bool,
    /// Audit content mode string (`preview` or `none`).
    pub audit_content: String,
    /// Extra tmux sockets (config file first, then `COLLIE_TMUX_SOCKETS`).
    pub tmux_sockets: Vec<PathBuf>,
    /// Every `COLLIE_*` variable seen (process env and `.env`), for doctor.
    pub seen_vars: BTreeMap<String, String>,
    /// `[hooks] hold`: how long a held permission waits for a tap.
    pub hold: Duration,
    /// `[push] services`: the self-hosted push services phones may subscribe with.
    pub push_services: Vec<Service>,
    /// Where the file tools may go and where none may (SPEC §11).
    pub tool_paths: ToolPaths,
    /// `[crew] tools`: whether this machine serves its tools, and takes uploads, for its lead
    /// (default true).
    pub crew_tools: bool,
    /// `COLLIE_SENT`: whether the sent log records lines (SPEC §11).
    pub sent: bool,
    /// `[phone] run`: whether a `full` device may run one-shot commands (SPEC §11).
    pub phone_run: bool,
    /// `[phone] adds` and `free_text`: which starter rows a phone may add (SPEC §12).
    pub phone_rows: RowPolicy,
    /// The identity gates (SPEC §14): `COLLIE_TRUSTED_USER`, `COLLIE_DEVICE_HEADER` with
    /// `COLLIE_DEVICE_ALLOW`, `COLLIE_ACCESS_TEAM` with `COLLIE_ACCESS_AUD`.
    pub gates: crate::identity::GateConfig,
}

/// `[phone] adds` and `free_text` of this machine: which starter rows a phone may add and start
/// (SPEC §12). What a policy allows is [`crate::app::rows`]'s to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RowPolicy {
    /// A phone may add, list and start rows.
    pub adds: bool,
    /// A phone may add and start hand-typed rows.
    pub free_text: bool,
}

impl Default for RowPolicy {
    /// SPEC §12's defaults: templates yes, hand-typed lines no.
    fn default() -> Self {
        RowPolicy {
            adds: true,
            free_text: false,
        }
    }
}

/// The folders that bound the tools (SPEC §11): the workspace (the home folder until an applied
/// configuration names others) and the places no tool may read or write.
#[derive(Debug, Clone, Default)]
pub struct ToolPaths {
    /// `$HOME`, if set (without it the file tools have no workspace and refuse every path).
    pub home: Option<PathBuf>,
    /// Collie's state folders: this instance's, and the base one it lives under.
    pub state_dirs: Vec<PathBuf>,
    /// The folders the agents read their hook settings from: `$CLAUDE_CONFIG_DIR` and
    /// `$CODEX_HOME` when set, and `~/.claude` and `~/.codex` always.
    pub agent_settings_dirs: Vec<PathBuf>,
}

/// Flags that override the environment (only `collie bridge` has them).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--host`.
    pub host: Option<String>,
    /// `--port`.
    pub port: Option<u16>,
    /// `--name`.
    pub name: Option<String>,
}

impl Settings {
    /// Resolves settings from the real process environment.
    pub fn load(overrides: &Overrides) -> Result<Settings> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self::resolve(overrides, &env)
    }

    /// Resolves settings from an explicit environment (pure apart from reading the config files).
    pub fn resolve(
        overrides: &Overrides,
        process_env: &BTreeMap<String, String>,
    ) -> Result<Settings> {
        let home = process_env.get("HOME").map(PathBuf::from);
        let config_dir = match process_env.get("COLLIE_CONFIG_DIR") {
            Some(d) => PathBuf::from(d),
            None => xdg_dir(process_env, "XDG_CONFIG_HOME", home.as_deref(), ".config")?,
        };
        let dotenv = read_dotenv(&config_dir.join(".env"))?;
        // Process environment wins over .env.
        let get = |k: &str| -> Option<String> {
            process_env
                .get(k)
                .cloned()
                .or_else(|| dotenv.get(k).cloned())
                .filter(|v| !v.is_empty())
        };
        let file = read_config_file(&config_dir.join("config.toml"))?;

        let mut state_dir = match get("COLLIE_STATE_DIR") {
            Some(d) => PathBuf::from(d),
            None => xdg_dir(
                process_env,
                "XDG_STATE_HOME",
                home.as_deref(),
                ".local/state",
            )?,
        };
        let base_state_dir = state_dir.clone();
        if let Some(instance) = get("COLLIE_INSTANCE") {
            if !valid_name(&instance) {
                bail!("COLLIE_INSTANCE must be 1-32 of a-z, 0-9 and -, got {instance:?}");
            }
            state_dir = state_dir.join("instances").join(instance);
        }

        let host_str = overrides
            .host
            .clone()
            .or_else(|| get("COLLIE_HOST"))
            .unwrap_or_else(|| "127.0.0.1".into());
        let host: IpAddr = host_str
            .parse()
            .with_context(|| format!("COLLIE_HOST must be an IP address, got {host_str:?}"))?;
        let port = match overrides.port {
            Some(p) => p,
            None => match get("COLLIE_PORT") {
                Some(p) => p
                    .parse()
                    .with_context(|| format!("COLLIE_PORT must be a port number, got {p:?}"))?,
                None => DEFAULT_PORT,
            },
        };
        // `collie bridge --crew-port` overrides this after loading.
        let crew_port = match get("COLLIE_CREW_PORT") {
            Some(p) => p
                .parse()
                .with_context(|| format!("COLLIE_CREW_PORT must be a port number, got {p:?}"))?,
            None => DEFAULT_CREW_PORT,
        };
        let name = match overrides.name.clone().or(file.name.clone()) {
            Some(n) => {
                collie_crew::name::check(&n)?;
                n
            }
            None => collie_crew::name::from_host(&hostname()),
        };
        let redact = match get("COLLIE_REDACT").as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => bail!("COLLIE_REDACT must be on or off, got {other:?}"),
        };
        let walky = match get("COLLIE_WALKY").as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => bail!("COLLIE_WALKY must be on or off, got {other:?}"),
        };
        let sent = match get("COLLIE_SENT").as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => bail!("COLLIE_SENT must be on or off, got {other:?}"),
        };
        let audit_content = get("COLLIE_AUDIT_CONTENT").unwrap_or_else(|| "preview".into());
        if audit_content != "preview" && audit_content != "none" {
            bail!("COLLIE_AUDIT_CONTENT must be preview or none, got {audit_content:?}");
        }
        let mut tmux_sockets = file.tmux.sockets.clone();
        if let Some(list) = get("COLLIE_TMUX_SOCKETS") {
            tmux_sockets.extend(list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
        }
        let hold = match file.hooks.hold {
            None => DEFAULT_HOLD,
            Some(secs) if (1..=MAX_HOLD.as_secs()).contains(&secs) => Duration::from_secs(secs),
            Some(secs) => bail!(
                "[hooks] hold must be 1 to {} seconds, got {secs}",
                MAX_HOLD.as_secs()
            ),
        };
        let push_services = push_services(&file.push)?;
        let gates = crate::identity::GateConfig::from_vars(
            get("COLLIE_TRUSTED_USER").as_deref(),
            get("COLLIE_DEVICE_HEADER").as_deref(),
            get("COLLIE_DEVICE_ALLOW").as_deref(),
            (
                get("COLLIE_ACCESS_TEAM").as_deref(),
                get("COLLIE_ACCESS_AUD").as_deref(),
            ),
        )?;
        let mut seen_vars = BTreeMap::new();
        for (k, v) in dotenv.iter().chain(process_env.iter()) {
            if k.starts_with("COLLIE_") {
                seen_vars.insert(k.clone(), v.clone());
            }
        }
        let mut agent_settings_dirs: Vec<PathBuf> = ["CLAUDE_CONFIG_DIR", "CODEX_HOME"]
            .iter()
            .filter_map(|k| process_env.get(*k).filter(|v| !v.is_empty()))
            .map(PathBuf::from)
            .collect();
        if let Some(h) = &home {
            agent_settings_dirs.extend([h.join(".claude"), h.join(".codex")]);
        }
        let tool_paths = ToolPaths {
            home: home.clone(),
            state_dirs: if base_state_dir == state_dir {
                vec![state_dir.clone()]
            } else {
                vec![state_dir.clone(), base_state_dir]
            },
            agent_settings_dirs,
        };
        Ok(Settings {
            tool_paths,
            crew_tools: file.crew.tools.unwrap_or(true),
            state_dir,
            config_dir,
            host,
            port,
            crew_port,
            name,
            public_url: file.public_url,
            crew_address: file.crew.address,
            redact,
            walky,
            audit_content,
            tmux_sockets,
            seen_vars,
            hold,
            push_services,
            sent,
            phone_run: file.phone.run.unwrap_or(true),
            phone_rows: RowPolicy {
                adds: file.phone.adds.unwrap_or(true),
                free_text: file.phone.free_text.unwrap_or(false),
            },
            gates,
        })
    }

    /// `<state>/bridge.sock`.
    pub fn control_socket(&self) -> PathBuf {
        self.state_dir
            .join(collie_actors::state_files::CONTROL_SOCKET)
    }

    /// `<state>/hooks.sock`, where the held-permission hooks connect (SPEC §2, §10.2).
    pub fn hook_socket(&self) -> PathBuf {
        self.state_dir.join(HOOK_SOCKET)
    }
}

fn xdg_dir(
    env: &BTreeMap<String, String>,
    var: &str,
    home: Option<&Path>,
    fallback: &str,
) -> Result<PathBuf> {
    if let Some(d) = env.get(var).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("collie"));
    }
    let home = home.context("HOME is not set; set COLLIE_STATE_DIR and COLLIE_CONFIG_DIR")?;
    Ok(home.join(fallback).join("collie"))
}

/// `[a-z0-9-]{1,32}` (an instance name; the machine-name grammar of SPEC §3.1).
pub fn valid_name(s: &str) -> bool {
    collie_crew::name::is_valid(s)
}

fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}

fn read_dotenv(path: &Path) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            bail!("{}:{}: expected NAME=value", path.display(), n + 1);
        };
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        out.insert(k.trim().to_string(), v.to_string());
    }
    Ok(out)
}

/// `config.toml`'s text, or `None` when there is none (the built-in defaults). Bounded before it
/// is read: a configuration is small.
pub fn read_config_text(path: &Path) -> Result<Option<String>> {
    use std::io::Read as _;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        bail!(
            "{} is larger than {} KiB; a configuration is a few lines",
            path.display(),
            MAX_CONFIG_BYTES / 1024
        );
    }
    Ok(Some(text))
}

fn read_config_file(path: &Path) -> Result<ConfigFile> {
    match read_config_text(path)? {
        Some(text) => parse_config(&text).with_context(|| format!("reading {}", path.display())),
        None => Ok(ConfigFile::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `config.toml` of schema 1 with `body` after the version line.
    fn write_config(dir: &Path, body: impl AsRef<str>) -> std::io::Result<()> {
        std::fs::write(
            dir.join("config.toml"),
            format!("schema_version = 1\n{}", body.as_ref()),
        )
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn push_services_as_hosts_or_tables() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().to_string_lossy().to_string();
        let e = env(&[("COLLIE_CONFIG_DIR", &cfg), ("COLLIE_STATE_DIR", "/s")]);
        // A CA certificate (any self-signed one will do for reading).
        let ca = dir.path().join("ca.pem");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["ca".to_owned()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        std::fs::write(&ca, cert.pem()).expect("write");
        write_config(dir.path(), format!(
                "[push]\nservices = [\"NTFY.example.org\", {{ host = \"127.0.0.1\", ca_file = {ca:?} }}]\nca_file = {ca:?}\n"
            ),
        )
        .expect("write");
        let s = Settings::resolve(&Overrides::default(), &e).expect("resolve");
        assert_eq!(
            s.push_services,
            [
                Service {
                    host: "ntfy.example.org".into(),
                    ca_file: Some(ca.clone())
                },
                Service {
                    host: "127.0.0.1".into(),
                    ca_file: Some(ca.clone())
                }
            ]
        );
        for bad in [
            "[push]\nservices = [\"https://ntfy.example.org\"]\n",
            "[push]\nservices = [\"ntfy.example.org:443\"]\n",
            "[push]\nservices = [{ host = \"a\", extra = 1 }]\n",
            "[push]\nurl = \"x\"\n",
            "[push]\nservices = [{ host = \"a\", ca_file = \"/no/such/ca.pem\" }]\n",
        ] {
            write_config(dir.path(), bad).expect("write");
            assert!(
                Settings::resolve(&Overrides::default(), &e).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn phone_run_and_sent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().to_string_lossy().to_string();
        let base = env(&[("COLLIE_CONFIG_DIR", &cfg), ("COLLIE_STATE_DIR", "/s")]);
        let s = Settings::resolve(&Overrides::default(), &base).expect("resolve");
        assert!(s.phone_run && s.sent, "both on by default");
        write_config(dir.path(), "[phone]\nrun = false\n").expect("write");
        let mut e = base.clone();
        e.insert("COLLIE_SENT".into(), "off".into());
        let s = Settings::resolve(&Overrides::default(), &e).expect("resolve");
        assert!(!s.phone_run && !s.sent);
        e.insert("COLLIE_SENT".into(), "no".into());
        assert!(Settings::resolve(&Overrides::default(), &e).is_err());
        write_config(dir.path(), "[phone]\nrun = 1\n").expect("write");
        assert!(Settings::resolve(&Overrides::default(), &base).is_err());
        write_config(dir.path(), "[phone]\nwalk = true\n").expect("write");
        assert!(Settings::resolve(&Overrides::default(), &base).is_err());
    }

    #[test]
    fn machine_names_follow_the_rule() {
        assert!(valid_name("web-1"));
        assert!(!valid_name("Web"));
        assert!(!valid_name(""));
    }

    #[test]
    fn crew_port_and_address() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = dir.path().to_string_lossy().to_string();
        let base = [
            ("COLLIE_CONFIG_DIR", cfg.as_str()),
            ("COLLIE_STATE_DIR", "/s"),
        ];
        let s = Settings::resolve(&Overrides::default(), &env(&base)).expect("resolve");
        assert_eq!((s.crew_port, s.crew_address), (DEFAULT_CREW_PORT, None));
        write_config(dir.path(), "[crew]\naddress = \"laptop.lan:7421\"\n").expect("write");
        let e = env(&[base[0], base[1], ("COLLIE_CREW_PORT", "0")]);
        let s = Settings::resolve(&Overrides::default(), &e).expect("resolve");
        assert_eq!(s.crew_port, 0);
        assert_eq!(s.crew_address.as_deref(), Some("laptop.lan:7421"));
        let e = env(&[base[0], base[1], ("COLLIE_CREW_PORT", "x")]);
        assert!(Settings::resolve(&Overrides::default(), &e).is_err());
    }

    #[test]
    fn precedence_flags_env_dotenv_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(".env"),
            "COLLIE_PORT=9000\nCOLLIE_REDACT=off\n",
        )
        .expect("write");
        write_config(
            dir.path(),
            "name = \"from-file\"\n[tmux]\nsockets = [\"/a\"]\n",
        )
        .expect("write");
        let cfg = dir.path().to_string_lossy().to_string();
        let e = env(&[
            ("COLLIE_CONFIG_DIR", &cfg),
            ("COLLIE_STATE_DIR", "/s"),
            ("COLLIE_PORT", "9100"),
            ("COLLIE_TMUX_SOCKETS", "/b:/c"),
            ("COLLIE_INSTANCE", "two"),
        ]);
        let s = Settings::resolve(&Overrides::default(), &e).expect("resolve");
        assert_eq!(s.port, 9100, "process env beats .env");
        assert!(!s.redact, ".env is read");
        assert_eq!(s.name, "from-file");
        assert_eq!(s.state_dir, PathBuf::from("/s/instances/two"));
        let socks: Vec<_> = s
            .tmux_sockets
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(socks, ["/a", "/b", "/c"]);
        let o = Overrides {
            port: Some(1),
            name: Some("flag".into()),
            host: None,
        };
        let s = Settings::resolve(&o, &e).expect("resolve");
        assert_eq!((s.port, s.name.as_str()), (1, "flag"));
        assert!(Settings::resolve(
            &Overrides {
                name: Some("local".into()),
                ..Default::default()
            },
            &e
        )
        .is_err());
    }
}
