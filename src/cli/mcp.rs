//! `collie mcp`: the stdio MCP server for agents (walky tools; see `crate::mcp`).
//!
//! An agent's client starts this as a child process and speaks JSON-RPC on its stdin and stdout,
//! so nothing but the protocol may reach stdout: logs go to stderr, without colour (clients keep
//! them in log files), at `warn` unless COLLIE_LOG says otherwise.

use std::process::ExitCode;

use anyhow::Context;

use crate::app::walky::sender::PaneEnv;
use crate::mcp::{self, McpOptions};

pub(super) fn run() -> anyhow::Result<ExitCode> {
    let settings = super::settings()?;
    let filter = settings
        .seen_vars
        .get("COLLIE_LOG")
        .cloned()
        .unwrap_or_else(|| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let opts = McpOptions {
        control_socket: settings.control_socket(),
        pane: PaneEnv::from_process(),
    };
    // One session, one client: a single thread is plenty; bridge calls run on the blocking pool.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = rt.block_on(mcp::serve_stdio(opts));
    // A read of stdin that is still pending cannot be cancelled; don't wait for it on the way out.
    rt.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}
