//! `collie completions SHELL` and `collie man` (SPEC §17): the shell completion script and the
//! man page, both generated from the same clap definitions `collie --help` prints, so neither can
//! fall behind a new command or flag.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;

/// The shells a completion script is written for. Bash, zsh and fish are the shells of the
/// systems Collie runs on (SPEC §18: no Windows, so no PowerShell).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum Shell {
    /// Bash: `collie completions bash > ~/.local/share/bash-completion/completions/collie`.
    Bash,
    /// Zsh: `collie completions zsh > "${fpath[1]}/_collie"`.
    Zsh,
    /// Fish: `collie completions fish > ~/.config/fish/completions/collie.fish`.
    Fish,
}

/// `collie completions` arguments.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The shell to write the completion script for.
    shell: Shell,
}

/// Writes the completion script for `args.shell` to stdout.
pub(super) fn completions(args: Args) -> anyhow::Result<ExitCode> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "collie", &mut script);
    write_out(&script)
}

/// Writes the man page `collie(1)` (roff) to stdout: `collie man | man -l -`.
pub(super) fn man() -> anyhow::Result<ExitCode> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    write_out(&page)
}

fn write_out(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
