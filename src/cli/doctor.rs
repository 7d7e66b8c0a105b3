//! `collie doctor`: one line per check, a fix for each failure, exit 1 if any check fails.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;

use crate::app::status::BridgeStatus;
use crate::config::KNOWN_VARS;
use crate::control::client;
use crate::control::protocol::Request;

/// The checks' outcome so far. A check prints its line as it finishes; a failed write (the reader
/// of a pipe gone) is kept and returned once the checks are done, so each check reads as one call.
#[derive(Default)]
struct Report {
    failed: bool,
    unwritten: Option<std::io::Error>,
}

impl Report {
    fn ok(&mut self, what: &str) {
        self.say(outln!("ok    {what}"));
    }
    fn warn(&mut self, what: &str, fix: &str) {
        self.say(outln!("warn  {what} — {fix}"));
    }
    fn fail(&mut self, what: &str, fix: &str) {
        self.failed = true;
        self.say(outln!("FAIL  {what} — fix: {fix}"));
    }
    fn say(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written {
            self.unwritten.get_or_insert(e);
        }
    }
}

pub(super) fn run() -> anyhow::Result<ExitCode> {
    let settings = super::settings()?;
    let mut r = Report::default();
    let state = &settings.state_dir;

    // 1. The bridge.
    let status: Option<BridgeStatus> =
        client::ask(&settings.control_socket(), &Request::Status).ok();
    match &status {
        Some(s) => r.ok(&format!(
            "bridge running: machine {}, version {}",
            s.machine, s.version
        )),
        None => r.fail(
            "no bridge running for this state dir",
            "start one with `collie bridge`",
        ),
    }

    // 2. Modes of the state dir and its files.
    check_modes(&mut r, state);

    // The configuration: what `collie bridge` would say about it (SPEC §12).
    let env = crate::applied::ResolveEnv::for_settings(&settings, std::env::var("PATH").ok());
    match crate::applied::check(&settings, &env) {
        Ok(None) => r.ok("no config.toml: the built-in defaults"),
        Ok(Some(applied)) => r.ok(&format!(
            "configuration applied {} ({} workspace(s), {} starter(s))",
            applied.applied_at,
            applied.resolved.workspaces.len(),
            applied.resolved.starters.len()
        )),
        Err(e) => r.fail(
            &format!(
                "the configuration is not the applied one: {}",
                e.to_string().lines().next().unwrap_or_default()
            ),
            "`collie show` says what differs; `collie apply` applies it",
        ),
    }

    // The sandbox (SPEC §15): what this kernel can enforce, and whether the applied policy is it.
    check_sandbox(&mut r, &settings);
    // Dictation (SPEC §16): the pinned engine, hashed again as before every dictation.
    check_speech(&mut r, &settings);
    // The update check (SPEC §17): on or off, and what it last said.
    r.ok(&super::version::update_line(&settings));

    // 3. Paired devices.
    if let Some(s) = &status {
        match s.devices {
            None => r.fail(
                "the device store cannot be read: phones get `pairing unavailable`",
                "see the bridge's log for the bad record; stop the bridge and move `db/` aside to start over",
            ),
            Some(0) => r.warn("no paired devices", "pair a phone with `collie pair`"),
            Some(n) => r.ok(&format!("{n} paired device(s)")),
        }
    }

    // 4. tmux.
    match std::process::Command::new("tmux").arg("-V").output() {
        Ok(out) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let mut sockets = vec!["default".to_string()];
            sockets.extend(settings.tmux_sockets.iter().map(|p| {
                let state = if p.exists() { "" } else { " (no server)" };
                format!("{}{state}", p.display())
            }));
            r.ok(&format!("{version} found; sockets: {}", sockets.join(", ")));
        }
        _ => r.warn(
            "tmux not found: only hosted panes are available",
            "install tmux to reach your tmux panes",
        ),
    }

    // 4b. zellij (issue 34): its sessions' panes are served when zellij ≥ 0.44 is on PATH.
    check_zellij(&mut r);

    // 5. Masking.
    if settings.redact {
        r.ok("masking on");
    } else {
        r.warn(
            "masking off (COLLIE_REDACT=off)",
            "unset COLLIE_REDACT to mask secrets",
        );
    }

    // The identity gates at the door (SPEC §14).
    check_gates(&mut r, &settings);

    // 6. The audit chain, its end against the store, and recorded breaks.
    match super::audit::check(&settings) {
        Ok(checked) => {
            match &checked.report.failure {
                None => r.ok(&format!(
                    "audit chain ok ({} lines)",
                    checked.report.records
                )),
                Some(f) => r.fail(
                    &format!("audit chain broken at {f}"),
                    "keep the file for inspection (`collie audit verify`); restart the bridge to record the break",
                ),
            }
            for b in checked.open_breaks() {
                r.fail(
                    &format!("audit log {b}"),
                    &format!(
                        "look at the log and the machine, then `collie audit acknowledge {}`",
                        b.seq
                    ),
                );
            }
            let acknowledged = checked.breaks.len() - checked.open_breaks().count();
            if acknowledged > 0 {
                r.ok(&format!(
                    "{acknowledged} acknowledged audit break(s) on record"
                ));
            }
        }
        Err(e) => r.fail(
            &format!("audit log unreadable: {e:#}"),
            "check the state dir",
        ),
    }

    // 7. Durable agents.
    check_durable(&mut r, &state.join(collie_actors::durable::sources::FILE));

    // 8. Unknown variables.
    for name in settings.seen_vars.keys() {
        if !KNOWN_VARS.contains(&name.as_str()) {
            r.warn(
                &format!("unknown variable {name}"),
                "check its spelling; Collie ignores it",
            );
        }
    }

    if let Some(e) = r.unwritten {
        return Err(e.into());
    }
    Ok(if r.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line per identity gate (SPEC §14): off, or what it requires. A gate whose headers can
/// never be trusted — the bridge listening on an address no loopback proxy reaches — is a warning:
/// every request but health would be refused.
fn check_gates(r: &mut Report, settings: &crate::config::Settings) {
    let cfg = &settings.gates;
    match &cfg.trusted_users {
        None => r.ok("identity gate tailscale: off (COLLIE_TRUSTED_USER unset)"),
        Some(t) => r.ok(&format!(
            "identity gate tailscale: Tailscale-User-Login must name {}",
            t.logins().join(", ")
        )),
    }
    match &cfg.device_header {
        None => r.ok("identity gate device-header: off (COLLIE_DEVICE_HEADER unset)"),
        Some(d) => r.ok(&format!(
            "identity gate device-header: {} must carry one of {} allowed value(s)",
            d.header(),
            d.values()
        )),
    }
    match &cfg.access {
        None => r.ok("identity gate access: off (COLLIE_ACCESS_TEAM unset)"),
        Some(access) => check_access(r, access),
    }
    let host = settings.host;
    if cfg.any() && !host.is_loopback() && !host.is_unspecified() {
        r.warn(
            &format!(
                "identity gates trust headers from a loopback proxy only, and the bridge listens on {host}: every request but health is refused"
            ),
            "let the bridge listen on 127.0.0.1 (COLLIE_HOST) behind `tailscale serve` or another proxy on this machine",
        );
    }
}

/// The Access gate: its team and audience, and whether its keys can be fetched now (the bridge
/// refuses every request while it holds none).
fn check_access(r: &mut Report, access: &crate::identity::AccessConfig) {
    let said = format!(
        "identity gate access: Cf-Access-Jwt-Assertion for team {} and AUD {}",
        access.team, access.aud
    );
    let fetched = access.gate().map_err(|e| e.to_string()).and_then(|gate| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(gate.refresh()).map_err(|e| e.to_string())
    });
    match fetched {
        Ok(keys) => r.ok(&format!("{said}: {keys} signing keys fetched now")),
        Err(why) => r.fail(
            &format!("{said}: its signing keys cannot be fetched ({why})"),
            "the bridge refuses every request until it holds keys: check this machine reaches              <team>.cloudflareaccess.com over HTTPS",
        ),
    }
}

/// The kernel's Landlock ABI, how the process limit is held, and whether the applied `[sandbox]`
/// policy (if any) can be enforced here — the bridge's own check at start.
fn check_sandbox(r: &mut Report, settings: &crate::config::Settings) {
    use collie_sandbox::{cgroup, kernel};
    let abi = kernel::landlock_abi();
    let landlock = match abi {
        0 => "no Landlock in this kernel".to_owned(),
        n => format!(
            "Landlock ABI {n}{}",
            if n >= collie_sandbox::policy::TCP_ABI {
                " (files and TCP)"
            } else {
                " (files; TCP rules need ABI 4)"
            }
        ),
    };
    let limit = match cgroup::process_limit() {
        Ok(l) => format!("process limit held by {}", l.describe()),
        Err(why) => format!("no process limit can be held: {why}"),
    };
    let path = crate::applied::gate::snapshot_path(settings);
    let policy = match crate::applied::Snapshot::read(&path) {
        Ok(s) => s.and_then(|s| s.resolved.sandbox),
        // The configuration's own check above says what is wrong with the snapshot.
        Err(_) => None,
    };
    let Some(sandbox) = policy else {
        r.ok(&format!("sandbox off; {landlock}; {limit}"));
        return;
    };
    match kernel::check(&sandbox.policy, abi) {
        Ok(_) => r.ok(&format!(
            "the applied sandbox can be enforced here: {landlock}; {limit}"
        )),
        Err(e) => r.fail(
            &format!("the applied sandbox cannot be enforced here ({landlock}): {e}"),
            "the bridge refuses to start: change [sandbox] and run `collie apply`, or run on a kernel that has what is missing",
        ),
    }
}

/// The applied transcriber, if any, and whether its program and model still hash to their pins.
fn check_speech(r: &mut Report, settings: &crate::config::Settings) {
    use crate::applied::speech::Pins;
    let path = crate::applied::gate::snapshot_path(settings);
    let Some(speech) = crate::applied::Snapshot::read(&path)
        .ok()
        .flatten()
        .and_then(|s| s.resolved.speech)
    else {
        r.ok("dictation off: no [speech] applied (the phone shows no microphone)");
        return;
    };
    let model = match &speech.model {
        Some(m) => format!(" with model {}", m.path.display()),
        None => String::new(),
    };
    match speech.check() {
        Ok(()) => r.ok(&format!(
            "dictation by {}{model}: program and model match their hashes",
            speech.exec.display()
        )),
        Err(e) => r.fail(
            &format!("dictation refuses (`speech engine changed`): {e}"),
            "restore the file, or review the change with `collie apply`",
        ),
    }
}

fn check_zellij(r: &mut Report) {
    use collie_actors::panes::zellij::cli::{self, CliError};
    let Ok(out) = std::process::Command::new("zellij")
        .arg("--version")
        .output()
    else {
        r.ok("zellij not found: no zellij panes (only tmux and hosted ones)");
        return;
    };
    match cli::version(&String::from_utf8_lossy(&out.stdout)) {
        Ok(v) => r.ok(&format!("zellij {v} found: its sessions' panes are served")),
        Err(CliError::TooOld(v)) => r.warn(
            &format!(
                "zellij {v} is older than {}: its panes are not served",
                cli::MIN_VERSION
            ),
            "update zellij to reach its panes from the phone",
        ),
        Err(e) => r.warn(
            &format!("zellij found but not understood ({e}): its panes are not served"),
            "check `zellij --version`",
        ),
    }
}

fn check_modes(r: &mut Report, state: &Path) {
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .map(|m| m.permissions().mode() & 0o777)
    };
    match mode(state) {
        None => {
            r.warn(
                &format!("state dir {} does not exist yet", state.display()),
                "it is created by `collie bridge`",
            );
            return;
        }
        Some(m) if m & 0o077 != 0 => r.fail(
            &format!("state dir {} has mode {m:o}", state.display()),
            &format!("chmod 700 {}", state.display()),
        ),
        Some(_) => r.ok(&format!("state dir {} is 0700", state.display())),
    }
    let mut wide = Vec::new();
    walk(state, &mut |p, is_dir| {
        if let Some(m) = mode(p) {
            let want = if is_dir { 0o700 } else { 0o600 };
            if m & !want != 0 {
                wide.push(format!("{} ({m:o})", p.display()));
            }
        }
    });
    if wide.is_empty() {
        r.ok("files in the state dir are private (0600/0700)");
    } else {
        r.fail(
            &format!("files readable by others: {}", wide.join(", ")),
            "restart the bridge (it tightens them) or chmod 600 them",
        );
    }
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path, bool)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            f(&p, true);
            walk(&p, f);
        } else if !meta.file_type().is_symlink() {
            f(&p, false);
        }
    }
}

/// The `sources` row (the file holding tokens must be 0600), a `durable-socket` row per socket
/// agent (the same path check the bridge makes before every connection, with the fix), and a row
/// per HTTPS agent saying its token is `set, <n> bytes` — never the token.
fn check_durable(r: &mut Report, path: &Path) {
    use collie_actors::durable::sources::{Sources, Transport};
    use collie_actors::private_socket::{self, PathError};

    let mode = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o777);
    match mode {
        None => return,
        Some(m) if m & 0o077 != 0 => r.fail(
            &format!(
                "sources: {} has mode {m:o} and holds tokens",
                path.display()
            ),
            &format!(
                "chmod 600 {} (the bridge also tightens it when it reads it)",
                path.display()
            ),
        ),
        Some(_) => {}
    }
    let sources = match Sources::read(path, false) {
        Ok(s) => s,
        Err(e) => {
            r.fail(
                &format!("sources: {e}"),
                "fix the file, or detach and attach the agents again",
            );
            return;
        }
    };
    if mode.is_some_and(|m| m & 0o077 == 0) {
        r.ok(&format!(
            "sources: {} agent(s), file 0600",
            sources.agents.len()
        ));
    }
    for source in &sources.agents {
        let name = &source.name;
        match &source.transport {
            Transport::Socket { socket } => match private_socket::check(socket) {
                Ok(()) => r.ok(&format!(
                    "durable-socket {name}: {} is private",
                    socket.display()
                )),
                Err(e @ PathError::Missing(_)) => r.warn(
                    &format!("durable-socket {name}: {e}"),
                    "start the agent (a missing socket is not a privacy problem)",
                ),
                Err(e) => r.fail(
                    &format!("durable-socket {name}: {e} — unreachable until fixed"),
                    &socket_fix(&e),
                ),
            },
            Transport::Https { url, token, .. } => r.ok(&format!(
                "durable {name}: {url}, token set, {} bytes",
                token.len()
            )),
        }
    }
}

/// What to do about a socket path that is not private.
fn socket_fix(e: &collie_actors::private_socket::PathError) -> String {
    use collie_actors::private_socket::PathError;
    match e {
        PathError::Relative(p) => format!("attach it again with an absolute path instead of {}", p.display()),
        PathError::Symlink(p) => format!(
            "{} is a symlink: detach the agent and attach it with the real path",
            p.display()
        ),
        PathError::Replaceable(p, ..) => format!(
            "chmod go-w {} (and make it yours or root's), or keep the socket under a folder of your own",
            p.display()
        ),
        PathError::NotPrivateDir(p, ..) => format!("chmod 700 {} (it must be yours)", p.display()),
        PathError::NotPrivateSocket(p, ..) => format!(
            "chmod 600 {} (it must be a socket of yours; start the agent as your user)",
            p.display()
        ),
        PathError::Unreadable(p, _) => format!("check the permissions of {}", p.display()),
        PathError::Missing(_) => "start the agent".to_owned(),
    }
}
