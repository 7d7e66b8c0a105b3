//! The sandbox's child confining itself, in this order, before it becomes the command: it joins
//! its pids cgroup (while it may still write there), lowers its rlimits, gives up every
//! capability if it runs as root (so it cannot raise them again or leave the cgroup), sets
//! `no_new_privs`, installs the seccomp filter (the `seccomp` module) and restricts itself with
//! Landlock. It is single-threaded, so the Landlock domain and the filter cover the whole process,
//! and everything it starts inherits them.

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use nix::sys::resource::{setrlimit, Resource};
use serde::{Deserialize, Serialize};

use crate::cgroup::PidsCgroup;
use crate::policy::{Network, PathAccess, Policy};

/// What the launcher hands its child: the policy (with the private temp folder added) and how
/// the process limit is held.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Confinement {
    /// The policy.
    pub policy: Policy,
    /// The sandbox's pids cgroup, to join.
    pub cgroup: Option<PathBuf>,
    /// `RLIMIT_NPROC` to set (where no cgroup could be made).
    pub nproc: Option<u64>,
}

/// Why the child could not confine itself (it then exits without running the command).
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// Joining the cgroup failed.
    #[error("join the sandbox's cgroup: {0}")]
    Cgroup(std::io::Error),
    /// An rlimit could not be set.
    #[error("set {what}: {source}")]
    Rlimit {
        /// Which one.
        what: &'static str,
        /// Why.
        source: nix::Error,
    },
    /// Capabilities could not be dropped.
    #[error("drop capabilities: {0}")]
    Caps(String),
    /// `no_new_privs` could not be set.
    #[error("set no_new_privs: {0}")]
    NoNewPrivs(nix::Error),
    /// The seccomp filter could not be installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// Landlock refused or could not enforce the ruleset.
    #[error("landlock: {0}")]
    Landlock(String),
}

/// Confines the calling (single-threaded) process as `c` says.
pub fn confine(c: &Confinement) -> Result<(), ConfineError> {
    if let Some(dir) = &c.cgroup {
        PidsCgroup::join(dir).map_err(ConfineError::Cgroup)?;
    }
    let bytes = c.policy.limits.memory_mb.saturating_mul(1024 * 1024);
    setrlimit(Resource::RLIMIT_DATA, bytes, bytes).map_err(|source| ConfineError::Rlimit {
        what: "RLIMIT_DATA",
        source,
    })?;
    if let Some(n) = c.nproc {
        setrlimit(Resource::RLIMIT_NPROC, n, n).map_err(|source| ConfineError::Rlimit {
            what: "RLIMIT_NPROC",
            source,
        })?;
    }
    // No core dumps: a dump of a confined process would be written where the kernel says, not
    // where the policy allows.
    setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(|source| ConfineError::Rlimit {
        what: "RLIMIT_CORE",
        source,
    })?;
    if nix::unistd::geteuid().is_root() {
        drop_capabilities()?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(ConfineError::NoNewPrivs)?;
    crate::seccomp::install(&c.policy.network).map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    landlock(&c.policy)
}

/// Root keeps uid 0 but loses every capability, now and across `execve` (the bounding set):
/// otherwise it could raise its rlimits (`CAP_SYS_RESOURCE`), leave its cgroup or mount over the
/// rules (`CAP_SYS_ADMIN`).
fn drop_capabilities() -> Result<(), ConfineError> {
    use caps::CapSet;
    let fail = |e: caps::errors::CapsError| ConfineError::Caps(e.to_string());
    for cap in caps::all() {
        caps::drop(None, CapSet::Bounding, cap).map_err(fail)?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(fail)?;
    }
    Ok(())
}

/// The newest ABI this build knows; the ruleset asks for all of it and the kernel gives what it
/// has (best effort above the floor the policy needs, which [`crate::kernel::check`] verified
/// before the bridge started and which is required again here).
const NEWEST: ABI = ABI::V10;

fn landlock(policy: &Policy) -> Result<(), ConfineError> {
    let err = |e: landlock::RulesetError| ConfineError::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(NEWEST))
        .map_err(err)?
        .scope(Scope::from_all(NEWEST))
        .map_err(err)?;
    if policy.network != Network::Any {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    for rule in &policy.paths {
        let access = match rule.access {
            PathAccess::Read => AccessFs::from_read(NEWEST),
            PathAccess::Write => AccessFs::from_all(NEWEST),
            PathAccess::Device => {
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev | AccessFs::Truncate
            }
        };
        let Some(fd) = open(&rule.path) else {
            // Gone since apply (a folder removed): nothing beneath it can be reached then.
            continue;
        };
        created = created
            .set_compatibility(CompatLevel::BestEffort)
            .add_rule(PathBeneath::new(fd, access))
            .map_err(err)?;
    }
    if let Network::Local { ports } = &policy.network {
        for port in ports {
            created = created
                .add_rule(NetPort::new(
                    *port,
                    AccessNet::BindTcp | AccessNet::ConnectTcp,
                ))
                .map_err(err)?;
        }
    }
    let status = created.restrict_self().map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(ConfineError::Landlock(
            "the kernel enforced none of the ruleset".into(),
        ));
    }
    Ok(())
}

fn open(path: &Path) -> Option<PathFd> {
    PathFd::new(path).ok()
}
