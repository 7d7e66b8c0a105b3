//! The service on Linux: a systemd user unit in `$XDG_CONFIG_HOME/systemd/user/` (else
//! `~/.config/systemd/user/`), driven with `systemctl --user`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::unit::{self, ServiceSpec, UnitError};

/// The service manager, as the messages name it.
pub(super) const MANAGER: &str = "systemd";

/// Where the unit of service `name` lives.
pub(super) fn unit_path(env: &BTreeMap<String, String>, name: &str) -> anyhow::Result<PathBuf> {
    let config = match env.get("XDG_CONFIG_HOME").filter(|v| v.starts_with('/')) {
        Some(dir) => PathBuf::from(dir),
        None => match env.get("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".config"),
            None => anyhow::bail!("neither XDG_CONFIG_HOME nor HOME is set"),
        },
    };
    Ok(config
        .join("systemd")
        .join("user")
        .join(format!("{name}.service")))
}

/// systemd writes the bridge's output to the journal; no log file is named.
pub(super) fn log_file(_env: &BTreeMap<String, String>, _name: &str) -> PathBuf {
    PathBuf::new()
}

/// The unit's text.
pub(super) fn text(spec: &ServiceSpec) -> Result<String, UnitError> {
    unit::systemd_unit(spec)
}

/// Runs `systemctl --user ARGS`; the failure is systemctl's first line of complaint.
fn systemctl(args: &[&str]) -> Result<String, String> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    super::manager("systemctl", &all)
}

/// Makes systemd read the new unit, enables it, and (re)starts it: `enable --now` would leave a
/// service that already runs on the old unit until its next restart.
pub(super) fn activate(name: &str) -> Result<(), String> {
    systemctl(&["daemon-reload"])?;
    systemctl(&["enable", name])?;
    systemctl(&["restart", name]).map(drop)
}

/// What a person runs to do [`activate`]'s work by hand.
pub(super) fn manual_activate(name: &str) -> String {
    format!("systemctl --user daemon-reload && systemctl --user enable --now {name}")
}

/// Stops and disables the service.
pub(super) fn deactivate(name: &str) -> Result<(), String> {
    systemctl(&["disable", "--now", name]).map(drop)
}

/// Tells systemd the unit file is gone.
pub(super) fn after_removal() -> Result<(), String> {
    systemctl(&["daemon-reload"]).map(drop)
}

/// The service's state as systemd reports it (`active`, `inactive`, `failed`, …) and its main
/// process while it runs; `Err` when systemd cannot be asked.
pub(super) fn state(name: &str) -> Result<(String, Option<u32>), String> {
    let out = systemctl(&["show", "--property=ActiveState,MainPID", name])?;
    let mut active = String::from("unknown");
    let mut pid = None;
    for line in out.lines() {
        if let Some(v) = line.strip_prefix("ActiveState=") {
            v.clone_into(&mut active);
        } else if let Some(v) = line.strip_prefix("MainPID=") {
            pid = v.trim().parse::<u32>().ok().filter(|p| *p != 0);
        }
    }
    Ok((active, pid))
}

/// Restarts the service (and starts it if it was stopped).
pub(super) fn restart(name: &str) -> Result<(), String> {
    systemctl(&["restart", name]).map(drop)
}

/// After an install: without lingering, systemd stops a user's services when their last session
/// ends, and starts them only at their first login — not what a server wants.
pub(super) fn hint() -> Option<String> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::current())
        .ok()
        .flatten()
        .map(|u| u.name);
    if let Some(u) = &user {
        if std::path::Path::new("/var/lib/systemd/linger")
            .join(u)
            .exists()
        {
            return None;
        }
    }
    Some(
        "on a server, run `loginctl enable-linger $USER` once: the bridge then starts at boot \
         and keeps running when nobody is logged in"
            .into(),
    )
}
