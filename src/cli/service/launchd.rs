//! The service on macOS: a launchd agent in `~/Library/LaunchAgents/`, driven with `launchctl`
//! in the user's GUI domain. It builds here; it is not tested on this project's machines
//! (SPEC §18).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::unit::{self, ServiceSpec, UnitError};

/// The service manager, as the messages name it.
pub(super) const MANAGER: &str = "launchd";

fn home(env: &BTreeMap<String, String>) -> anyhow::Result<PathBuf> {
    match env.get("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h)),
        None => anyhow::bail!("HOME is not set"),
    }
}

/// Where the agent of service `name` lives.
pub(super) fn unit_path(env: &BTreeMap<String, String>, name: &str) -> anyhow::Result<PathBuf> {
    Ok(home(env)?
        .join("Library/LaunchAgents")
        .join(format!("{name}.plist")))
}

/// launchd keeps no journal: the bridge's output goes to `~/Library/Logs/<name>.log`.
pub(super) fn log_file(env: &BTreeMap<String, String>, name: &str) -> PathBuf {
    home(env)
        .map(|h| h.join("Library/Logs").join(format!("{name}.log")))
        .unwrap_or_default()
}

/// The agent's text.
pub(super) fn text(spec: &ServiceSpec) -> Result<String, UnitError> {
    unit::launchd_plist(spec)
}

fn domain() -> String {
    format!("gui/{}", nix::unistd::Uid::current())
}

fn launchctl(args: &[&str]) -> Result<String, String> {
    super::manager("launchctl", args)
}

fn path_of(name: &str) -> anyhow::Result<String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    Ok(unit_path(&env, name)?.to_string_lossy().into_owned())
}

/// Loads the agent (unloading an older one of the same name first); it starts at once.
pub(super) fn activate(name: &str) -> Result<(), String> {
    let path = path_of(name).map_err(|e| e.to_string())?;
    let _ = launchctl(&["bootout", &format!("{}/{name}", domain())]);
    launchctl(&["bootstrap", &domain(), &path]).map(drop)
}

/// What a person runs to do [`activate`]'s work by hand.
pub(super) fn manual_activate(name: &str) -> String {
    format!("launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/{name}.plist")
}

/// Stops and unloads the agent.
pub(super) fn deactivate(name: &str) -> Result<(), String> {
    launchctl(&["bootout", &format!("{}/{name}", domain())]).map(drop)
}

/// Nothing to tell launchd once the file is gone.
pub(super) fn after_removal() -> Result<(), String> {
    Ok(())
}

/// The agent's state (`running`, `not loaded`, …) and its process while it runs.
pub(super) fn state(name: &str) -> Result<(String, Option<u32>), String> {
    let Ok(out) = launchctl(&["print", &format!("{}/{name}", domain())]) else {
        return Ok(("not loaded".into(), None));
    };
    let mut state = String::from("loaded");
    let mut pid = None;
    for line in out.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("state = ") {
            v.clone_into(&mut state);
        } else if let Some(v) = line.strip_prefix("pid = ") {
            pid = v.trim().parse().ok();
        }
    }
    if state == "running" {
        state = "active".into();
    }
    Ok((state, pid))
}

/// Restarts the agent (`kickstart -k` kills the running one first).
pub(super) fn restart(name: &str) -> Result<(), String> {
    launchctl(&["kickstart", "-k", &format!("{}/{name}", domain())]).map(drop)
}

/// A launch agent runs while its user is logged in; that is what the hint says.
pub(super) fn hint() -> Option<String> {
    Some(
        "a launch agent runs while you are logged in; a Mac that serves with nobody logged in \
         needs automatic login"
            .into(),
    )
}
