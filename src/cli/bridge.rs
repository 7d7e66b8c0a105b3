//! `collie bridge`: run this machine's bridge in the foreground.

mod reexec;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::bridge::Ended;
use crate::config::{Overrides, Settings};

/// `collie bridge` flags.
#[derive(Debug, Clone, clap::Args)]
pub(super) struct Args {
    /// Address to listen on (default COLLIE_HOST or 127.0.0.1).
    #[arg(long, value_name = "H")]
    host: Option<String>,
    /// HTTP port (default COLLIE_PORT or 7420; 0 lets the OS choose).
    #[arg(long, value_name = "P")]
    port: Option<u16>,
    /// This machine's name (`[a-z0-9-]{1,32}`).
    #[arg(long, value_name = "N")]
    name: Option<String>,
    /// UDP port a crew lead listens on (default COLLIE_CREW_PORT or 7421; 0 lets the OS choose).
    #[arg(long, value_name = "P")]
    crew_port: Option<u16>,
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Read before anything else, for `collie restart`: after an upgrade replaced the file at
    // this path, a restart runs the new binary, as a service manager's restart would.
    let program = std::env::current_exe().context("finding this program")?;
    let argv0 = std::env::args_os()
        .next()
        .unwrap_or_else(|| "collie".into());
    let again = args.clone();
    let mut settings = Settings::load(&Overrides {
        host: args.host,
        port: args.port,
        name: args.name,
    })?;
    let os_chose_port = settings.port == 0;
    if let Some(p) = args.crew_port {
        settings.crew_port = p;
    }
    init_logging(&settings);
    // The umask is 077 (set in `cli::main` for every command), so everything the bridge creates
    // is private from the start; panes it hosts inherit it (docs/decisions/0005-umask.md).
    // One worker thread: a request hops between the bridge's tasks (HTTP, an actor, the relay,
    // QUIC's drivers) without waking a second thread, which on a small machine costs more than the
    // work itself; calls that wait for the disk hand the worker's queue on meanwhile
    // (`collie_actors::disk`). Measured in docs/decisions/0061-one-worker-thread.md.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let ended = rt.block_on(async move {
        let running = crate::bridge::start(settings.clone()).await?;
        let bound = running.http_addr.port();
        // Tests and scripts read this line to find the port. A bridge whose stdout nobody reads
        // (closed by a service manager, or a pipe whose reader left) serves all the same.
        let _unread = outln!(
            "collie bridge `{}` listening on http://{}",
            running.ctx.machine_name(),
            running.http_addr
        )
        .and_then(|()| outln!("state dir: {}", settings.state_dir.display()));
        anyhow::Ok((running.run().await?, bound))
    })?;
    match ended {
        (Ended::Signal, _) => Ok(ExitCode::SUCCESS),
        (Ended::GaveUp(why), _) => {
            eprintln!("collie: {why}");
            Ok(ExitCode::from(1))
        }
        (Ended::Restart, bound) => {
            // Every task ends before the new start: nothing of this runtime outlives the stop.
            rt.shutdown_timeout(Duration::from_secs(5));
            let port = if os_chose_port {
                Some(bound)
            } else {
                again.port
            };
            let argv = reexec::argv(
                argv0,
                again.host.as_deref(),
                port,
                again.name.as_deref(),
                again.crew_port,
            );
            Err(reexec::exec(&program, &argv))
        }
    }
}

fn init_logging(settings: &Settings) {
    use std::io::IsTerminal;
    let filter = settings
        .seen_vars
        .get("COLLIE_LOG")
        .cloned()
        .unwrap_or_else(|| "info".into());
    // Colour is for a person at a terminal: never in a file or a pipe (`collie bridge >
    // bridge.log`), and never when NO_COLOR is set to anything (https://no-color.org).
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && !no_color)
        .try_init();
}
