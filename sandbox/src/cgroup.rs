//! How the process limit is held: a pids cgroup of the sandbox's own where this machine lets us
//! make one (cgroup v1's `pids` hierarchy, or a cgroup v2 folder whose `subtree_control` hands
//! `pids` down), else `RLIMIT_NPROC`. The rlimit counts every process of the user, so it is set
//! to what the user runs now plus the policy's number; root is exempt from it (the kernel does
//! not apply `RLIMIT_NPROC` to uid 0), so root without a cgroup cannot be held and is refused.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the process limit lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessLimit {
    /// A folder below which a pids cgroup per sandbox is made.
    Cgroup(PathBuf),
    /// `RLIMIT_NPROC` above the user's current count.
    Rlimit,
}

impl ProcessLimit {
    /// How `collie doctor` names it.
    pub fn describe(&self) -> String {
        match self {
            ProcessLimit::Cgroup(dir) => format!("a pids cgroup below {}", dir.display()),
            ProcessLimit::Rlimit => "RLIMIT_NPROC above this user's current processes".into(),
        }
    }
}

/// How this machine can hold the process limit, or why it cannot.
pub fn process_limit() -> Result<ProcessLimit, String> {
    if let Some(dir) = pids_base() {
        return Ok(ProcessLimit::Cgroup(dir));
    }
    if nix::unistd::getuid().is_root() {
        return Err(
            "running as root (which RLIMIT_NPROC does not bind), and no pids cgroup \
                    can be made here (cgroup v1 `pids`, or cgroup v2 with `pids` in \
                    `subtree_control`)"
                .into(),
        );
    }
    Ok(ProcessLimit::Rlimit)
}

/// The folder of this process's pids cgroup, when a child can be made in it.
fn pids_base() -> Option<PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut candidates = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            candidates.push(Path::new("/sys/fs/cgroup/pids").join(path));
        } else if controllers.is_empty() {
            for mount in cgroup2_mounts() {
                let dir = mount.join(path);
                let delegated = fs::read_to_string(dir.join("cgroup.subtree_control"))
                    .is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"));
                if delegated {
                    candidates.push(dir);
                }
            }
        }
    }
    candidates.into_iter().find(|dir| can_make_child(dir))
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid).
fn cgroup2_mounts() -> Vec<PathBuf> {
    let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            after
                .starts_with("cgroup2 ")
                .then(|| before.split(' ').nth(4).map(PathBuf::from))?
        })
        .collect()
}

fn can_make_child(dir: &Path) -> bool {
    let probe = dir.join(format!("collie-probe-{}", std::process::id()));
    let made = fs::create_dir(&probe).is_ok() && probe.join("pids.max").exists();
    let _ = fs::remove_dir(&probe);
    made
}

/// One sandbox's pids cgroup: made by the launcher, joined by its child before it confines
/// itself, removed by the launcher once the tree is gone.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// Makes `<base>/collie-sandbox-<pid>` holding at most `max` tasks.
    pub fn make(base: &Path, max: u32) -> std::io::Result<Self> {
        let dir = base.join(format!("collie-sandbox-{}", std::process::id()));
        fs::create_dir(&dir)?;
        let cgroup = PidsCgroup { dir };
        fs::write(cgroup.dir.join("pids.max"), max.to_string())?;
        Ok(cgroup)
    }

    /// Its folder (handed to the child).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the calling process into the cgroup at `dir`.
    pub fn join(dir: &Path) -> std::io::Result<()> {
        fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Empty by now (the launcher waits for every task); a cgroup folder is removed with rmdir.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// How many tasks (threads included: what `RLIMIT_NPROC` counts) user `uid` has now.
pub fn tasks_of(uid: u32) -> u64 {
    let Ok(procs) = fs::read_dir("/proc") else {
        return 0;
    };
    let mut count = 0;
    for entry in procs.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(status) = fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            count += field("Threads:").unwrap_or(1);
        }
    }
    count
}
