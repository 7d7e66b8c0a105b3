//! `collie service install|uninstall|status` (SPEC §17): run the bridge as a service of the
//! user's own service manager — a systemd user unit on Linux, a launchd agent on macOS — so it
//! starts at login (or at boot, with lingering) and again after a failure. Decision 0077.

#[cfg_attr(target_os = "macos", path = "service/launchd.rs")]
#[cfg_attr(not(target_os = "macos"), path = "service/systemd.rs")]
mod platform;
pub(super) mod spec;
pub(super) mod unit;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use crate::config::{Overrides, Settings};
use crate::control::client;

/// `collie service` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Write the service definition for this bridge and start it (systemd user unit, launchd agent).
    Install {
        /// Write the definition but leave enabling and starting it to you.
        #[arg(long)]
        no_enable: bool,
        /// Print the definition that would be written, and write nothing.
        #[arg(long, conflicts_with = "no_enable")]
        print: bool,
    },
    /// Stop and disable the service and remove its definition.
    Uninstall,
    /// Whether the service is installed and running, and where its definition is.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The service of this shell's bridge: its name and where its definition lives.
pub(super) struct Located {
    /// `collie` or `collie-<instance>`.
    pub name: String,
    /// The unit file or property list.
    pub path: PathBuf,
}

/// Finds the service for the bridge these settings describe.
pub(super) fn locate(
    settings: &Settings,
    env: &BTreeMap<String, String>,
) -> anyhow::Result<Located> {
    let name = spec::service_name(
        settings
            .seen_vars
            .get("COLLIE_INSTANCE")
            .map(String::as_str),
    );
    let path = platform::unit_path(env, &name)?;
    Ok(Located { name, path })
}

/// The service's state, `Err` when its manager cannot be asked.
pub(super) fn state(name: &str) -> Result<(String, Option<u32>), String> {
    platform::state(name)
}

/// Restarts the service through its manager.
pub(super) fn restart(name: &str) -> Result<(), String> {
    platform::restart(name)
}

/// The manager's name for messages.
pub(super) const MANAGER: &str = platform::MANAGER;

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(&Overrides::default())?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let here = locate(&settings, &env)?;
    match cmd {
        Cmd::Install { no_enable, print } => install(&settings, &env, &here, !no_enable, print),
        Cmd::Uninstall => uninstall(&here),
        Cmd::Status { json } => status(&here, json),
    }
}

fn install(
    settings: &Settings,
    env: &BTreeMap<String, String>,
    here: &Located,
    enable: bool,
    print: bool,
) -> anyhow::Result<ExitCode> {
    // This very binary, by its real path: the service keeps running what was installed even when
    // `collie` on PATH is a link that moves.
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("finding the path of this collie binary")?;
    let cwd = std::env::current_dir().context("reading the current folder")?;
    let spec = spec::spec(
        here.name.clone(),
        program,
        env,
        &cwd,
        &settings.config_dir,
        platform::log_file(env, &here.name),
    );
    let text = platform::text(&spec)?;
    if print {
        out!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    write_private(&here.path, &text)?;
    outln!("wrote {}", here.path.display())?;
    let left = spec::left_behind(env);
    if !left.is_empty() {
        outln!(
            "note: {} set in this shell only; the service does not see {}: put what it needs in {}",
            left.join(", "),
            if left.len() == 1 { "it" } else { "them" },
            spec.env_file.display()
        )?;
    }
    if client::ask::<serde_json::Value>(
        &settings.control_socket(),
        &crate::control::protocol::Request::Status,
    )
    .is_ok()
    {
        outln!(
            "note: a bridge already runs for {} (in a terminal?); stop it, or the service's bridge \
             cannot take its port",
            settings.state_dir.display()
        )?;
    }
    let manual = platform::manual_activate(&here.name);
    if !enable {
        outln!("not enabled (--no-enable); to enable and start it:\n  {manual}")?;
        return Ok(ExitCode::SUCCESS);
    }
    match platform::activate(&here.name) {
        Ok(()) => {
            outln!(
                "enabled and (re)started the `{}` service ({MANAGER})",
                here.name
            )?;
            if let Some(h) = platform::hint() {
                outln!("{h}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!(
                "collie: the service is written but {MANAGER} could not enable it: {e}\n\
                 once your user's {MANAGER} runs, enable and start it with:\n  {manual}"
            );
            if let Some(h) = platform::hint() {
                eprintln!("{h}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// Writes `text` to `path` as a private file (0600), whole or not at all.
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("a service definition has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension("collie-new");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

fn uninstall(here: &Located) -> anyhow::Result<ExitCode> {
    if !here.path.exists() {
        outln!(
            "no service installed ({} does not exist)",
            here.path.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(e) = platform::deactivate(&here.name) {
        outln!("note: {MANAGER} could not stop the service ({e}); removing its definition anyway")?;
    }
    std::fs::remove_file(&here.path)
        .with_context(|| format!("removing {}", here.path.display()))?;
    let _ = platform::after_removal();
    outln!("removed {}", here.path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// `collie service status --json`.
#[derive(Serialize)]
struct Status {
    name: String,
    unit: PathBuf,
    installed: bool,
    /// The manager's word for it (`active`, `inactive`, `failed`, …); null when not installed or
    /// the manager cannot be asked.
    state: Option<String>,
    pid: Option<u32>,
    /// Why the manager could not be asked.
    manager_error: Option<String>,
}

fn status(here: &Located, json: bool) -> anyhow::Result<ExitCode> {
    let installed = here.path.exists();
    let asked = installed.then(|| platform::state(&here.name));
    let s = Status {
        name: here.name.clone(),
        unit: here.path.clone(),
        installed,
        state: asked
            .as_ref()
            .and_then(|a| a.as_ref().ok())
            .map(|(s, _)| s.clone()),
        pid: asked
            .as_ref()
            .and_then(|a| a.as_ref().ok())
            .and_then(|(_, p)| *p),
        manager_error: asked.and_then(Result::err),
    };
    if json {
        super::print_json(&s)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !s.installed {
        outln!(
            "service `{}`: not installed ({} does not exist)",
            s.name,
            s.unit.display()
        )?;
        outln!("install it with `collie service install`")?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("service `{}`: installed, {}", s.name, s.unit.display())?;
    match (&s.state, s.pid, &s.manager_error) {
        (Some(state), Some(pid), _) => outln!("{MANAGER}: {state}, pid {pid}")?,
        (Some(state), None, _) => outln!("{MANAGER}: {state}")?,
        (None, _, Some(e)) => outln!("{MANAGER}: cannot be asked ({e})")?,
        (None, _, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}
/// Runs the service manager `program` with `args` (stdin closed) and answers its stdout; the
/// failure is its first line of complaint, or that it failed with its status.
fn manager(program: &str, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{program} {} failed ({})", args.join(" "), out.status)))
}
