//! `[sandbox]` made concrete (SPEC §15, decision 0072): the effective policy every process Collie
//! starts for a phone runs under — each path it may read or write with where the entry came from,
//! the network rule, the limits with where each came from — built when `collie apply` resolves
//! the configuration, pinned in the snapshot with the rest, and compared by the bridge's gate like
//! the rest (a dotfile that appears or a folder that goes away is a difference to apply).
//!
//! A Landlock rule grants everything beneath its folder and rules only ever add: a granted folder
//! cannot keep a subfolder out. So resolution refuses, rather than confines badly, any root that
//! would reach Collie's own state or config folder or `~/.ssh`, and any writable root holding the
//! agent settings Collie's hooks live in (they must stay read-only). The default workspace — the
//! whole home folder — is therefore refused under `profile = "workspace"`.

use std::path::{Path, PathBuf};

use collie_sandbox::{Limits, Network, PathAccess, PathRule, Policy, Preset};
use serde::{Deserialize, Serialize};

use super::env::{expand, ResolveEnv};
use crate::config::{Access, ConfigFile, SandboxConfig, SandboxNetwork, SandboxProfile};

/// Most `read_only` entries.
pub const MAX_READ_ONLY: usize = 64;
/// Most `local_ports`.
pub const MAX_LOCAL_PORTS: usize = 64;
/// The largest `memory_mb` (1 TiB: anything more is a typo).
pub const MAX_MEMORY_MB: u64 = 1024 * 1024;
/// The largest `processes`.
pub const MAX_PROCESSES: u32 = 65_536;
/// The longest `timeout_s` (30 days).
pub const MAX_TIMEOUT_S: u64 = 30 * 24 * 60 * 60;

/// The system's folders every confined process may read (programs, libraries, `/etc`, and the
/// kernel's views `/proc` and `/sys`), those that exist here. Symlinked ones (`/bin` → `/usr/bin`)
/// are kept once, as their target.
pub const SYSTEM_ROOTS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys",
];

/// The device files a program expects to open for reading and writing — never `/dev` whole,
/// which holds the raw disks.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Shared memory, writable where it exists (POSIX semaphores and shared memory live there).
pub const SHM: &str = "/dev/shm";

/// The home folder's shell and git files a shell or `git` reads at start, readable where they
/// exist.
pub const HOME_DOTFILES: &[&str] = &[
    ".profile",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".inputrc",
    ".gitconfig",
];

/// The limit keys of `[sandbox]`, in the order `show` prints them.
pub const LIMIT_KEYS: [&str; 3] = ["memory_mb", "processes", "timeout_s"];

/// `[sandbox]` resolved, as the snapshot pins it (`None` in [`super::Resolved`] when the profile
/// is `off`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxResolved {
    /// The effective policy the launcher enforces.
    pub policy: Policy,
    /// The preset the limits start from.
    pub preset: Preset,
    /// The limit keys (`memory_mb`, `processes`, `timeout_s`) whose value overrode the preset's.
    pub overrides: Vec<String>,
}

impl SandboxResolved {
    /// Where limit `key` came from: the key itself when it overrode the preset, else the preset.
    pub fn limit_from(&self, key: &str) -> String {
        if self.overrides.iter().any(|k| k == key) {
            format!("[sandbox] {key}")
        } else {
            format!("preset {}", self.preset.as_str())
        }
    }
}

/// One path as `show` and `apply` print it: `/usr (read; system)`.
pub fn rule_text(rule: &PathRule) -> String {
    format!(
        "{} ({}; {})",
        rule.path.display(),
        rule.access.as_str(),
        rule.from
    )
}

/// The network rule in words: `none`, `local ports 5432, 8080`, `any`.
pub fn network_text(network: &Network) -> String {
    match network {
        Network::Local { ports } => format!(
            "local, ports {}",
            ports
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.as_str().to_owned(),
    }
}

impl SandboxResolved {
    /// Each limit in words with where it came from: `("memory_mb", "4096 MiB", "preset normal")`.
    pub fn limit_texts(&self) -> Vec<(&'static str, String, String)> {
        let l = &self.policy.limits;
        let value = [
            format!("{} MiB", l.memory_mb),
            format!("{} processes", l.processes),
            format!("{} s", l.timeout_s),
        ];
        LIMIT_KEYS
            .iter()
            .zip(value)
            .map(|(key, v)| (*key, v, self.limit_from(key)))
            .collect()
    }
}

/// Resolves `file`'s `[sandbox]` against the already resolved `workspaces` and `starters`. Every
/// value is checked whatever the profile; the paths are made concrete only for `workspace`.
pub fn resolve(
    file: &ConfigFile,
    workspaces: &[(PathBuf, Access)],
    starters: &[(&str, &Path)],
    env: &ResolveEnv,
    problems: &mut Vec<String>,
) -> Option<SandboxResolved> {
    let s = &file.sandbox;
    let before = problems.len();
    let network = network(s, problems);
    let (preset, limits, overrides) = limits(s, problems);
    let read_only = read_only_given(s, problems);
    if s.profile.unwrap_or_default() == SandboxProfile::Off {
        return None;
    }
    let mut paths = PathSet::default();
    system(&mut paths);
    for text in read_only {
        match expand(text, env)
            .and_then(|p| std::fs::canonicalize(&p).map_err(|e| format!("{}: {e}", p.display())))
        {
            Ok(p) => paths.add(p, PathAccess::Read, "read_only"),
            Err(why) => problems.push(format!("[sandbox] read_only {text:?}: {why}")),
        }
    }
    if file.workspaces.is_none() {
        problems.push(
            "[sandbox] profile = \"workspace\" needs `workspaces` naming the folders a phone's \
             processes may use: the default workspace is the whole home folder, which holds \
             ~/.ssh and the agents' settings; name narrower workspaces (`workspaces = \
             [\"~/code\"]`)"
                .to_owned(),
        );
    } else {
        for (path, access) in workspaces {
            let access = match access {
                Access::Read => PathAccess::Read,
                Access::Write => PathAccess::Write,
            };
            paths.add(path.clone(), access, "workspace");
        }
    }
    for (name, exec) in starters {
        if let Some(dir) = exec.parent() {
            paths.add(
                dir.to_path_buf(),
                PathAccess::Read,
                &format!("starter {name}"),
            );
        }
    }
    // Collie's hooks run `collie hook …` from inside the agent's sandbox: this program (the file
    // alone, not its folder) may be run.
    if let Some(collie) = &env.collie {
        paths.add(collie.clone(), PathAccess::Read, "collie (hooks)");
    }
    for settings in &env.agent_settings {
        if let Ok(real) = std::fs::canonicalize(settings) {
            paths.add(real, PathAccess::Read, "agent settings");
        }
    }
    if let Some(home) = env
        .home
        .as_ref()
        .and_then(|h| std::fs::canonicalize(h).ok())
    {
        for name in HOME_DOTFILES {
            if let Ok(real) = std::fs::canonicalize(home.join(name)) {
                paths.add(real, PathAccess::Read, "home dotfiles");
            }
        }
    }
    refusals(&paths.0, env, problems);
    if problems.len() > before {
        return None;
    }
    Some(SandboxResolved {
        policy: Policy {
            paths: paths.0,
            network,
            limits,
        },
        preset,
        overrides,
    })
}

/// The paths so far, each once: the same path named twice keeps the stronger access and lists
/// every origin (`workspace, starter claude`).
#[derive(Default)]
struct PathSet(Vec<PathRule>);

impl PathSet {
    fn add(&mut self, path: PathBuf, access: PathAccess, from: &str) {
        if let Some(rule) = self.0.iter_mut().find(|r| r.path == path) {
            if strength(access) > strength(rule.access) {
                rule.access = access;
            }
            if !rule.from.split(", ").any(|f| f == from) {
                rule.from.push_str(", ");
                rule.from.push_str(from);
            }
            return;
        }
        self.0.push(PathRule {
            path,
            access,
            from: from.to_owned(),
        });
    }
}

/// Read < device (read and write existing files) < write (everything).
fn strength(a: PathAccess) -> u8 {
    match a {
        PathAccess::Read => 0,
        PathAccess::Device => 1,
        PathAccess::Write => 2,
    }
}

/// The system roots, device files and `/dev/shm` that exist here, canonical.
fn system(paths: &mut PathSet) {
    let mut roots: Vec<PathBuf> = Vec::new();
    for root in SYSTEM_ROOTS {
        let Ok(real) = std::fs::canonicalize(root) else {
            continue;
        };
        // `/bin` → `/usr/bin` is already readable through `/usr`.
        if roots.iter().any(|r| real.starts_with(r)) {
            continue;
        }
        roots.push(real.clone());
        paths.add(real, PathAccess::Read, "system");
    }
    for dev in DEVICES {
        if let Ok(real) = std::fs::canonicalize(dev) {
            paths.add(real, PathAccess::Device, "system");
        }
    }
    if let Ok(real) = std::fs::canonicalize(SHM) {
        if real.is_dir() {
            paths.add(real, PathAccess::Write, "system");
        }
    }
}

/// `read_only` as written, each absolute or `~/…`, at most [`MAX_READ_ONLY`].
fn read_only_given<'a>(s: &'a SandboxConfig, problems: &mut Vec<String>) -> &'a [String] {
    let list = s.read_only.as_deref().unwrap_or_default();
    if list.len() > MAX_READ_ONLY {
        problems.push(format!(
            "[sandbox] read_only: {} given, at most {MAX_READ_ONLY}",
            list.len()
        ));
        return &[];
    }
    let mut bad = false;
    for text in list {
        if !(text.starts_with('/') || text == "~" || text.starts_with("~/")) {
            problems.push(format!(
                "[sandbox] read_only {text:?}: an absolute path or one starting with ~/"
            ));
            bad = true;
        }
    }
    if bad {
        &[]
    } else {
        list
    }
}

/// `network` and `local_ports`.
fn network(s: &SandboxConfig, problems: &mut Vec<String>) -> Network {
    let rule = s.network.unwrap_or_default();
    match (rule, &s.local_ports) {
        (SandboxNetwork::Local, None) => {
            problems.push(
                "[sandbox] network = \"local\" needs `local_ports`, the TCP ports a confined \
                 process may connect to and bind (1 to 65535)"
                    .to_owned(),
            );
            Network::None
        }
        (SandboxNetwork::Local, Some(ports)) => {
            if ports.is_empty() || ports.len() > MAX_LOCAL_PORTS {
                problems.push(format!(
                    "[sandbox] local_ports: 1 to {MAX_LOCAL_PORTS} ports, got {}",
                    ports.len()
                ));
            }
            if ports.contains(&0) {
                problems.push("[sandbox] local_ports: a port is 1 to 65535, got 0".to_owned());
            }
            let mut ports = ports.clone();
            ports.sort_unstable();
            ports.dedup();
            Network::Local { ports }
        }
        (other, Some(_)) => {
            problems.push(format!(
                "[sandbox] local_ports only applies with network = \"local\" (network is \"{}\"): \
                 remove it, or set network = \"local\"",
                match other {
                    SandboxNetwork::Any => "any",
                    _ => "none",
                }
            ));
            Network::None
        }
        (SandboxNetwork::None, None) => Network::None,
        (SandboxNetwork::Any, None) => Network::Any,
    }
}

/// The preset and the limits after the overrides, with the keys that overrode.
fn limits(s: &SandboxConfig, problems: &mut Vec<String>) -> (Preset, Limits, Vec<String>) {
    let preset = s.preset.unwrap_or(Preset::Normal);
    let mut limits = preset.limits();
    let mut overrides = Vec::new();
    let mut check = |key: &str, value: Option<u64>, max: u64, unit: &str| -> Option<u64> {
        let v = value?;
        if (1..=max).contains(&v) {
            overrides.push(key.to_owned());
            Some(v)
        } else {
            problems.push(format!("[sandbox] {key} must be 1 to {max}{unit}, got {v}"));
            None
        }
    };
    if let Some(v) = check("memory_mb", s.memory_mb, MAX_MEMORY_MB, " (MiB)") {
        limits.memory_mb = v;
    }
    if let Some(v) = check(
        "processes",
        s.processes.map(u64::from),
        u64::from(MAX_PROCESSES),
        "",
    ) {
        limits.processes = u32::try_from(v).unwrap_or(MAX_PROCESSES);
    }
    if let Some(v) = check("timeout_s", s.timeout_s, MAX_TIMEOUT_S, " (seconds)") {
        limits.timeout_s = v;
    }
    (preset, limits, overrides)
}

/// A path as written and, where it exists, its real target: a guard is checked against both.
fn both(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(path) {
        if real != path {
            out.push(real);
        }
    }
    out
}

/// The folders no root may reach, each with what it is.
fn guarded(env: &ResolveEnv) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for g in &env.guarded {
        for p in both(g) {
            out.push((p, "Collie's own state or config folder".to_owned()));
        }
    }
    if let Some(home) = &env.home {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.clone());
        for p in both(&home.join(".ssh")) {
            out.push((p, "the SSH keys (~/.ssh)".to_owned()));
        }
    }
    out
}

/// The containment refusals: a readable or writable root that reaches a guarded folder (either
/// way round: a root inside one reaches into it too), and a writable root that holds an agent
/// settings file.
fn refusals(rules: &[PathRule], env: &ResolveEnv, problems: &mut Vec<String>) {
    let guarded = guarded(env);
    let settings: Vec<PathBuf> = env.agent_settings.iter().flat_map(|s| both(s)).collect();
    let home = env
        .home
        .as_ref()
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.clone()));
    for rule in rules {
        if rule.access == PathAccess::Device {
            continue;
        }
        let hint = if home.as_ref().is_some_and(|h| h.starts_with(&rule.path)) {
            "name narrower workspaces (and roots) than the home folder"
        } else {
            "name a narrower folder"
        };
        if let Some((g, what)) = guarded
            .iter()
            .find(|(g, _)| g.starts_with(&rule.path) || rule.path.starts_with(g))
        {
            problems.push(format!(
                "[sandbox] {} ({}, {}) would reach {} ({what}): a sandbox rule grants \
                 everything beneath its folder and cannot leave a subfolder out; {hint}",
                rule.path.display(),
                rule.from,
                rule.access.as_str(),
                g.display()
            ));
            continue;
        }
        if rule.access == PathAccess::Write {
            if let Some(file) = settings.iter().find(|s| s.starts_with(&rule.path)) {
                problems.push(format!(
                    "[sandbox] {} ({}, write) holds {}, the agent settings Collie's hooks live \
                     in, which a confined process must not change: make that workspace \
                     read-only or {hint}",
                    rule.path.display(),
                    rule.from,
                    file.display()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
