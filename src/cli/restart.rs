//! `collie restart` (SPEC §17): restart the running bridge so it reads `.env`, `config.toml` and
//! its binary again. A bridge its service manager runs is restarted by the manager; any other is
//! asked over the control socket to re-execute itself with the same arguments on the same port
//! (decision 0077). Either way the command returns once the new bridge answers.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::config::{Overrides, Settings};
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;
use crate::control::replies::Message;

/// How long the new bridge may take to answer: the old one's shutdown is capped at 5 s a step.
const COME_BACK_WITHIN: Duration = Duration::from_secs(30);

pub(super) fn run() -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&Overrides::default())?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let socket = settings.control_socket();
    let before = identity(&socket);
    let running = bridge_pid(&socket);
    let service = super::service::locate(&settings, &env)?;
    let manager = super::service::MANAGER;

    if service.path.exists() {
        match super::service::state(&service.name) {
            // The service's own bridge, or none at all: the manager restarts (or starts) it.
            Ok((_, pid)) if running.is_none() || (pid.is_some() && pid == running.flatten()) => {
                if let Err(e) = super::service::restart(&service.name) {
                    eprintln!(
                        "collie: {manager} could not restart the `{}` service: {e}",
                        service.name
                    );
                    return Ok(ExitCode::from(1));
                }
                return come_back(
                    &socket,
                    before,
                    None,
                    &format!("the `{}` service ({manager})", service.name),
                );
            }
            // Another bridge (one started by hand for this state dir): it is the one to restart.
            Ok(_) => {}
            Err(e) if running.is_none() => {
                eprintln!(
                    "collie: no bridge is running, and {manager} cannot be asked to start the `{}` \
                     service: {e}",
                    service.name
                );
                return Ok(ExitCode::from(1));
            }
            Err(_) => {}
        }
    }
    if running.is_none() {
        eprintln!("collie: {}", ClientError::NotRunning);
        return Ok(ExitCode::from(1));
    }
    match client::ask::<Message>(&socket, &Request::Restart) {
        Ok(_) => come_back(&socket, before, running.flatten(), "the bridge"),
        Err(e) => {
            eprintln!("collie: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The control socket file as it is now: a new bridge binds a new one, so a different identity
/// means the old bridge is gone and the new one is up to its servers.
fn identity(socket: &Path) -> Option<(u64, u64, i64, i64)> {
    let m = std::fs::symlink_metadata(socket).ok()?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
}

/// The process that answers on the control socket: `None` when nothing answers, `Some(None)`
/// when something does but the kernel does not say who.
fn bridge_pid(socket: &Path) -> Option<Option<u32>> {
    let stream = UnixStream::connect(socket).ok()?;
    #[cfg(target_os = "macos")]
    let pid = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::LocalPeerPid).ok();
    #[cfg(not(target_os = "macos"))]
    let pid = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|c| c.pid());
    Some(pid.and_then(|p| u32::try_from(p).ok()))
}

/// Whether process `pid` still runs: it exists and (on Linux) is not a zombie its parent has yet
/// to reap.
fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name's closing parenthesis.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// Waits until a new bridge answers on the control socket. A bridge that executes itself keeps
/// its `pid`: when that process is gone, the new start failed (a configuration it refuses, a
/// port taken meanwhile) and waiting longer is pointless.
fn come_back(
    socket: &Path,
    before: Option<(u64, u64, i64, i64)>,
    pid: Option<u32>,
    what: &str,
) -> anyhow::Result<ExitCode> {
    let deadline = Instant::now() + COME_BACK_WITHIN;
    loop {
        if pid.is_some_and(|p| !alive(p)) {
            eprintln!("collie: {what} stopped and did not start again; see its log (stderr)");
            return Ok(ExitCode::from(1));
        }
        let now = identity(socket);
        if now.is_some() && now != before {
            let answered: Result<serde_json::Value, _> = client::ask(socket, &Request::Status);
            if answered.is_ok() {
                outln!("restarted {what}")?;
                return Ok(ExitCode::SUCCESS);
            }
        }
        if Instant::now() >= deadline {
            eprintln!(
                "collie: {what} did not answer again within {} s; see its log",
                COME_BACK_WITHIN.as_secs()
            );
            return Ok(ExitCode::from(1));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
