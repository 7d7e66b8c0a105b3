//! `collie hook claude-permission|codex-permission`: the hook an agent runs when it is about to
//! show a permission dialog (SPEC §10.2). It reads the hook input on stdin, hands it to the bridge
//! over `<state>/hooks.sock`, waits, and prints the decision a device tapped.
//!
//! **It never decides and never fails loudly.** On any failure — stdin too large or not JSON, no
//! settings, a socket path another user could replace, no bridge, a refusal, the deadline — it
//! prints nothing and exits 0, and the agent shows its own dialog in the terminal. It prints only
//! what the bridge sent, and only if that is a JSON object.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use crate::config::{Overrides, Settings};
use crate::hooks::wire::{Agent, HookReply, HookRequest, MAX_REPLY, MAX_REQUEST};

/// Which hook.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum Which {
    /// Claude Code's `PermissionRequest` hook.
    ClaudePermission,
    /// Codex's `PermissionRequest` hook.
    CodexPermission,
}

/// Arguments of `collie hook`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The hook to run.
    #[arg(value_enum)]
    which: Which,
}

/// Runs the hook; always exits 0.
pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = match args.which {
        Which::ClaudePermission => Agent::Claude,
        Which::CodexPermission => Agent::Codex,
    };
    if let Some(out) = ask(agent) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{out}");
        let _ = stdout.flush();
    }
    Ok(ExitCode::SUCCESS)
}

/// The line to print, or `None` for silence.
fn ask(agent: Agent) -> Option<String> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_REQUEST as u64 + 1)
        .read_to_end(&mut input)
        .ok()?;
    if input.len() > MAX_REQUEST {
        return None;
    }
    let input: serde_json::Value = serde_json::from_slice(&input).ok()?;
    if !input.is_object() {
        return None;
    }
    let settings = Settings::load(&Overrides::default()).ok()?;
    let socket = settings.hook_socket();
    crate::private_socket::check(&socket).ok()?;
    let mut stream = UnixStream::connect(&socket).ok()?;
    let mut line = serde_json::to_vec(&HookRequest { agent, input }).ok()?;
    if line.len() > MAX_REQUEST {
        return None;
    }
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    // Keep our end open: the bridge reads its end as our process going away.
    let mut reply = Vec::new();
    BufReader::new(stream)
        .take(MAX_REPLY as u64 + 1)
        .read_until(b'\n', &mut reply)
        .ok()?;
    if reply.len() > MAX_REPLY || !reply.ends_with(b"\n") {
        return None;
    }
    let reply: HookReply = serde_json::from_slice(&reply).ok()?;
    reply.print.is_object().then(|| reply.print.to_string())
}
