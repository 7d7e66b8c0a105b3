//! `collie show [--json]` (SPEC §12): the desired configuration, what it resolves to, what is
//! applied, and the permissions in effect — side by side — changing nothing.
//!
//! It writes no file: with the bridge stopped, the paired devices' tiers are read from a private
//! copy of the store (opening the store itself could write to it).

use std::path::Path;
use std::process::ExitCode;

use collie_actors::pairing::Device;
use collie_actors::store::{Store, Table};
use serde::Serialize;

use super::{print_json, settings};
use crate::app::rows::RowShown;
use crate::applied::gate::{config_path, snapshot_path};
use crate::applied::sandbox::{network_text, rule_text};
use crate::applied::{differences, ResolveEnv, Resolved, SandboxResolved, Snapshot};
use crate::config::{ConfigFile, Settings};
use crate::control::client::{self, ClientError};
use crate::control::protocol::Request;
use crate::control::replies::{Devices, StarterRows};

/// `collie show`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Everything `show` prints.
#[derive(Debug, Serialize)]
struct Shown {
    /// `config.toml`'s path, and whether it exists.
    config: ConfigShown,
    /// `applied` (the bridge starts), `differs`, `not applied`, `unresolved`, `defaults`.
    state: &'static str,
    /// What the file asks for (`null` without a file).
    desired: Option<DesiredShown>,
    /// What it resolves to (`null` when it does not: see `problems`).
    resolved: Option<Resolved>,
    /// Why it does not resolve.
    problems: Vec<String>,
    /// The snapshot the bridge checks against (`null` before the first apply).
    applied: Option<Snapshot>,
    /// From applied to resolved, in words.
    differences: Vec<String>,
    /// What the bridge runs with.
    effective: Effective,
}

#[derive(Debug, Serialize)]
struct ConfigShown {
    path: String,
    exists: bool,
}

#[derive(Debug, Serialize)]
struct DesiredShown {
    workspaces: Option<Vec<(String, &'static str)>>,
    starters: Vec<StarterShown>,
}

#[derive(Debug, Serialize)]
struct StarterShown {
    name: String,
    exec: String,
    args: Vec<String>,
    agent: Option<String>,
    model: Option<String>,
    no_prompts: bool,
}

#[derive(Debug, Serialize)]
struct Effective {
    /// The paired devices and their tiers, and where they were read.
    devices: DevicesShown,
    /// `[phone]`: what a phone may do besides panes.
    phone: PhoneShown,
    /// The starter rows phones added (decision 0041), and where they were read.
    rows: RowsShown,
    /// The applied configuration's workspaces and starters (the defaults before any apply);
    /// `null` while the bridge would refuse to start.
    applied: Option<Resolved>,
}

#[derive(Debug, Serialize)]
struct DevicesShown {
    /// `bridge`, `store` (a copy, the bridge stopped) or `unavailable`.
    source: &'static str,
    devices: Vec<(String, String)>,
}

#[derive(Debug, Serialize)]
struct RowsShown {
    /// `bridge`, `store` (a copy, the bridge stopped) or `unavailable`.
    source: &'static str,
    rows: Vec<RowShown>,
}

#[derive(Debug, Serialize)]
struct PhoneShown {
    run: bool,
    adds: bool,
    free_text: bool,
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = settings()?;
    let env = ResolveEnv::for_settings(&settings, std::env::var("PATH").ok());
    let desired = crate::applied::desired(&settings, &env)?;
    let applied = Snapshot::read(&snapshot_path(&settings))?;
    let resolved = desired.resolved.map_err(|e| e.problems);
    let diffs: Vec<String> = match &resolved {
        Ok(r) => differences(applied.as_ref().map(|s| &s.resolved), r)
            .iter()
            .map(ToString::to_string)
            .collect(),
        Err(_) => Vec::new(),
    };
    let state = match (&resolved, &applied, desired.text.is_some()) {
        (Err(_), _, _) => "unresolved",
        (Ok(_), None, false) => "defaults",
        (Ok(_), None, true) => "not applied",
        (Ok(_), Some(_), _) if diffs.is_empty() => "applied",
        (Ok(_), Some(_), _) => "differs",
    };
    let effective_applied = match state {
        "applied" => applied.as_ref().map(|s| s.resolved.clone()),
        "defaults" => resolved.as_ref().ok().cloned(),
        _ => None,
    };
    let shown = Shown {
        config: ConfigShown {
            path: config_path(&settings).display().to_string(),
            exists: desired.text.is_some(),
        },
        state,
        desired: desired.text.as_ref().map(|_| desired_shown(&desired.file)),
        problems: resolved.as_ref().err().cloned().unwrap_or_default(),
        resolved: resolved.ok(),
        applied,
        differences: diffs,
        effective: Effective {
            devices: devices(&settings),
            rows: rows(&settings),
            phone: PhoneShown {
                run: settings.phone_run,
                adds: desired.file.phone.adds.unwrap_or(true),
                free_text: desired.file.phone.free_text.unwrap_or(false),
            },
            applied: effective_applied,
        },
    };
    if args.json {
        print_json(&shown)?;
    } else {
        print_text(&shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn desired_shown(file: &ConfigFile) -> DesiredShown {
    DesiredShown {
        workspaces: file.workspaces.as_ref().map(|ws| {
            ws.iter()
                .map(|w| (w.path().to_owned(), w.access().as_str()))
                .collect()
        }),
        starters: file
            .starters
            .iter()
            .map(|s| StarterShown {
                name: s.name.clone(),
                exec: s.exec.clone(),
                args: s.args.clone(),
                agent: s.agent.clone(),
                model: s.model.clone(),
                no_prompts: s.no_prompts,
            })
            .collect(),
    }
}

/// The paired devices: from the running bridge, or from a private copy of the store.
fn devices(settings: &Settings) -> DevicesShown {
    match client::ask::<Devices>(&settings.control_socket(), &Request::DevicesList) {
        Ok(d) => DevicesShown {
            source: "bridge",
            devices: d
                .devices
                .into_iter()
                .map(|d| (d.label, d.tier.as_str().to_owned()))
                .collect(),
        },
        Err(ClientError::NotRunning) => match devices_from_copy(&settings.state_dir.join("db")) {
            Some(devices) => DevicesShown {
                source: "store",
                devices,
            },
            None => DevicesShown {
                source: "unavailable",
                devices: Vec::new(),
            },
        },
        Err(_) => DevicesShown {
            source: "unavailable",
            devices: Vec::new(),
        },
    }
}

/// Opens a copy of the store at `db` in a private temp dir and lists its devices; `None` when
/// there is no store or it cannot be read.
/// The starter rows phones added: from the running bridge, or from a private copy of the store.
fn rows(settings: &Settings) -> RowsShown {
    let unavailable = RowsShown {
        source: "unavailable",
        rows: Vec::new(),
    };
    match client::ask::<StarterRows>(&settings.control_socket(), &Request::StarterRows) {
        Ok(r) => RowsShown {
            source: "bridge",
            rows: r.rows,
        },
        Err(ClientError::NotRunning) => {
            match store_copy(&settings.state_dir.join("db"))
                .and_then(|(_copy, store)| crate::app::rows::shown_from_store(&store))
            {
                Some(rows) => RowsShown {
                    source: "store",
                    rows,
                },
                None => unavailable,
            }
        }
        Err(_) => unavailable,
    }
}

/// A private copy of the store in `db` (opening sled writes to it, so `show` never opens the
/// real one), with the folder that holds it (removed when dropped).
fn store_copy(db: &Path) -> Option<(tempfile::TempDir, Store)> {
    if !db.is_dir() {
        return None;
    }
    let copy = tempfile::Builder::new()
        .prefix("collie-show-")
        .tempdir()
        .ok()?;
    let target = copy.path().join("db");
    copy_dir(db, &target).ok()?;
    let store = Store::open(&target).ok()?;
    Some((copy, store))
}

fn devices_from_copy(db: &Path) -> Option<Vec<(String, String)>> {
    let (_copy, store) = store_copy(db)?;
    let mut out = Vec::new();
    for (_, value) in store.scan(Table::Devices).ok()? {
        let device: Device = serde_json::from_slice(&value).ok()?;
        out.push((
            device.label.as_str().to_owned(),
            device.tier.as_str().to_owned(),
        ));
    }
    Some(out)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn print_text(s: &Shown) -> std::io::Result<()> {
    let file = if s.config.exists {
        s.config.path.clone()
    } else {
        format!("{} (none: the built-in defaults)", s.config.path)
    };
    outln!("config.toml  {file}")?;
    match &s.applied {
        Some(a) => outln!(
            "applied      {} (confirmed: {})",
            a.applied_at,
            a.confirmed.as_str()
        )?,
        None => outln!("applied      never")?,
    }
    let verdict = match s.state {
        "applied" => "applied: the bridge starts with it",
        "defaults" => "no configuration: the bridge starts on the built-in defaults",
        "not applied" => "not applied: the bridge refuses to start; run `collie apply`",
        "differs" => {
            "differs from the applied one: the bridge refuses to start; run `collie apply`"
        }
        _ => "does not resolve: the bridge refuses to start",
    };
    outln!("state        {verdict}")?;
    if let Some(d) = &s.desired {
        outln!()?;
        outln!("desired")?;
        match &d.workspaces {
            Some(ws) => {
                for (path, access) in ws {
                    outln!("  workspace  {path} ({access})")?;
                }
            }
            None => outln!("  workspace  ~ (write; none named)")?,
        }
        for st in &d.starters {
            let mut options = Vec::new();
            if let Some(m) = &st.model {
                options.push(format!("model {m}"));
            }
            if st.no_prompts {
                options.push("no prompts".to_owned());
            }
            outln!(
                "  starter    {}: {} {:?}{}",
                st.name,
                st.exec,
                st.args,
                if options.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", options.join(", "))
                }
            )?;
        }
    }
    outln!()?;
    match &s.resolved {
        Some(r) => {
            outln!("resolved")?;
            print_resolved(r)?;
        }
        None => {
            outln!("resolved     (does not resolve)")?;
            for p in &s.problems {
                outln!("  {p}")?;
            }
        }
    }
    if !s.differences.is_empty() {
        outln!()?;
        outln!("differences from the applied configuration")?;
        for d in &s.differences {
            outln!("  {}", d.replace('\n', "\n  "))?;
        }
    }
    outln!()?;
    outln!("effective permissions")?;
    let devices: Vec<String> = s
        .effective
        .devices
        .devices
        .iter()
        .map(|(label, tier)| format!("{label} ({tier})"))
        .collect();
    match s.effective.devices.source {
        "unavailable" => outln!("  devices    (unavailable)")?,
        _ if devices.is_empty() => outln!("  devices    none paired")?,
        _ => outln!("  devices    {}", devices.join(", "))?,
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    let phone = &s.effective.phone;
    outln!(
        "  phone      run: {}, adds: {}, free_text: {}",
        yes(phone.run),
        yes(phone.adds),
        yes(phone.free_text)
    )?;
    match s.effective.rows.source {
        "unavailable" => outln!("  rows       (unavailable)")?,
        _ if s.effective.rows.rows.is_empty() => outln!("  rows       none added from a phone")?,
        _ => {}
    }
    for r in &s.effective.rows.rows {
        outln!(
            "  row        {}/{}: {}{}, added by {}",
            r.machine,
            r.name,
            r.runs,
            if r.no_prompts { " [No prompts]" } else { "" },
            r.added_by
        )?;
    }
    match &s.effective.applied {
        Some(r) => print_resolved(r)?,
        None => outln!("  (the bridge would refuse to start)")?,
    }
    Ok(())
}

fn print_resolved(r: &Resolved) -> std::io::Result<()> {
    if r.workspaces.is_empty() {
        outln!("  workspace  none: the file tools refuse every path")?;
    }
    for w in &r.workspaces {
        outln!(
            "  workspace  {} → {} ({})",
            w.given,
            w.path.display(),
            w.access.as_str()
        )?;
    }
    for st in &r.starters {
        outln!(
            "  starter    {}: {} sha256 {}{}",
            st.name,
            st.exec.display(),
            st.sha256,
            if st.no_prompts { " [No prompts]" } else { "" }
        )?;
        if !st.args.is_empty() {
            outln!("             args {:?}", st.args)?;
        }
    }
    print_sandbox(r.sandbox.as_ref())?;
    print_speech(r.speech.as_ref())
}

/// The transcriber (SPEC §16): its program and model with their full hashes, and its arguments.
fn print_speech(speech: Option<&crate::applied::speech::SpeechResolved>) -> std::io::Result<()> {
    let Some(s) = speech else {
        return outln!("  speech     none: the phone shows no microphone");
    };
    outln!("  speech     {} sha256 {}", s.exec.display(), s.sha256)?;
    if let Some(m) = &s.model {
        outln!(
            "    model    {} ({}) sha256 {}",
            m.path.display(),
            if m.folder { "folder" } else { "file" },
            m.sha256
        )?;
    }
    outln!("    args     {:?}", s.args)
}

/// The effective sandbox policy (SPEC §15): each path with its access and where it came from,
/// the network rule, each limit with where it came from.
fn print_sandbox(sandbox: Option<&SandboxResolved>) -> std::io::Result<()> {
    let Some(s) = sandbox else {
        return outln!("  sandbox    off: what a phone starts runs unconfined");
    };
    outln!("  sandbox    workspace: what a phone starts runs confined to")?;
    for rule in &s.policy.paths {
        outln!("    path     {}", rule_text(rule))?;
    }
    outln!("    network  {}", network_text(&s.policy.network))?;
    for (key, value, from) in s.limit_texts() {
        outln!("    limit    {key} {value} ({from})")?;
    }
    Ok(())
}
