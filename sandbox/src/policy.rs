//! The effective policy: what a confined process may read, write and reach, and its limits — the
//! form `collie apply` resolves `[sandbox]` into (SPEC §15), `collie show` prints, and the
//! sandbox's launcher enforces. Every path is absolute and resolved when the policy is made;
//! enforcement reads nothing else.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a confined process may do beneath one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathAccess {
    /// Read files, list folders, run programs.
    Read,
    /// Everything: also create, write, rename and remove.
    Write,
    /// Read and write existing files only (device nodes such as `/dev/null`, `/dev/tty`).
    Device,
}

impl PathAccess {
    /// `read`, `write` or `device`.
    pub fn as_str(self) -> &'static str {
        match self {
            PathAccess::Read => "read",
            PathAccess::Write => "write",
            PathAccess::Device => "device",
        }
    }
}

/// One path of the policy, with where it came from (what `collie show` prints beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    /// Absolute, symlinks resolved.
    pub path: PathBuf,
    /// What may be done beneath it.
    pub access: PathAccess,
    /// Where the entry came from: `workspace`, `read_only`, `system`, `agent settings`,
    /// `starter <name>`, …
    pub from: String,
}

/// The network rule (TCP through Landlock, from ABI 4; other sockets through seccomp).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "rule", deny_unknown_fields)]
pub enum Network {
    /// No TCP connect or bind, no UDP or raw socket.
    None,
    /// TCP connect and bind only on these ports; no UDP or raw socket. (Landlock rules name a
    /// port, not an address: the port is reachable on any host.)
    Local {
        /// The allowed ports.
        ports: Vec<u16>,
    },
    /// Unrestricted.
    Any,
}

impl Network {
    /// `none`, `local` or `any`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Local { .. } => "local",
            Network::Any => "any",
        }
    }
}

/// The resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The data a process may allocate, in MiB (`RLIMIT_DATA`, per process).
    pub memory_mb: u64,
    /// Processes alive at once in the sandbox (a pids cgroup, or `RLIMIT_NPROC` above this
    /// user's current count where no cgroup can be made).
    pub processes: u32,
    /// Seconds until the whole process tree is killed.
    pub timeout_s: u64,
}

/// A named set of limits (seed 001's presets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// 1024 MiB, 4 processes, 300 s.
    Constrained,
    /// 4096 MiB, 16 processes, 1800 s.
    Normal,
    /// 8192 MiB, 32 processes, 3600 s.
    Extended,
}

impl Preset {
    /// The preset's limits.
    pub fn limits(self) -> Limits {
        match self {
            Preset::Constrained => Limits {
                memory_mb: 1024,
                processes: 4,
                timeout_s: 300,
            },
            Preset::Normal => Limits {
                memory_mb: 4096,
                processes: 16,
                timeout_s: 1800,
            },
            Preset::Extended => Limits {
                memory_mb: 8192,
                processes: 32,
                timeout_s: 3600,
            },
        }
    }

    /// `constrained`, `normal` or `extended`.
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Constrained => "constrained",
            Preset::Normal => "normal",
            Preset::Extended => "extended",
        }
    }
}

/// The whole effective policy of profile `workspace` (profile `off` has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// What may be read or written; everything else is out of reach.
    pub paths: Vec<PathRule>,
    /// The network rule.
    pub network: Network,
    /// The resource limits.
    pub limits: Limits,
}

/// The Landlock ABI that brought TCP rules.
pub const TCP_ABI: u8 = 4;

/// The Landlock ABI that brought the file system rules.
pub const FS_ABI: u8 = 1;

impl Policy {
    /// The oldest Landlock ABI that enforces all of this policy: TCP rules need ABI 4.
    pub fn abi_needed(&self) -> u8 {
        match self.network {
            Network::Any => FS_ABI,
            Network::None | Network::Local { .. } => TCP_ABI,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_rules_need_abi_four() {
        let policy = |network| Policy {
            paths: Vec::new(),
            network,
            limits: Preset::Normal.limits(),
        };
        assert_eq!(policy(Network::Any).abi_needed(), 1);
        assert_eq!(policy(Network::None).abi_needed(), 4);
        assert_eq!(policy(Network::Local { ports: vec![5432] }).abi_needed(), 4);
    }

    #[test]
    fn presets_are_seed_one() {
        assert_eq!(
            (
                Preset::Constrained.limits().memory_mb,
                Preset::Constrained.limits().processes
            ),
            (1024, 4)
        );
        assert_eq!(Preset::Normal.limits().timeout_s, 1800);
        assert_eq!(Preset::Extended.limits().processes, 32);
    }

    #[test]
    fn the_policy_reads_back_as_written() {
        let p = Policy {
            paths: vec![PathRule {
                path: "/srv/code".into(),
                access: PathAccess::Write,
                from: "workspace".into(),
            }],
            network: Network::Local { ports: vec![5432] },
            limits: Preset::Constrained.limits(),
        };
        let text = serde_json::to_string(&p).expect("encodes");
        assert_eq!(serde_json::from_str::<Policy>(&text).expect("decodes"), p);
        assert!(serde_json::from_str::<Policy>(r#"{"paths":[],"network":{"rule":"none"},"limits":{"memory_mb":1,"processes":1,"timeout_s":1},"x":1}"#).is_err());
    }
}
