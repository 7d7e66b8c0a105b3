//! `collie redact [FILE]`: the masker as a filter, so a person can clean a log before sharing it.
//! Works without a bridge; always masks (COLLIE_REDACT only concerns what a bridge sends).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use collie_actors::redact::Masker;

/// Largest input accepted, read before masking (masking needs whole lines and PEM blocks).
const MAX_INPUT: u64 = 256 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The file to mask; stdin when absent or `-`.
    file: Option<PathBuf>,
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut input = Vec::new();
    match args.file.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::File::open(p)
                .with_context(|| format!("cannot read {}", p.display()))?
                .take(MAX_INPUT + 1)
                .read_to_end(&mut input)
                .with_context(|| format!("cannot read {}", p.display()))?;
        }
        _ => {
            std::io::stdin()
                .take(MAX_INPUT + 1)
                .read_to_end(&mut input)
                .context("cannot read stdin")?;
        }
    }
    if input.len() as u64 > MAX_INPUT {
        anyhow::bail!("input is larger than {} MiB", MAX_INPUT / 1024 / 1024);
    }
    let text = String::from_utf8_lossy(&input);
    let masker = Masker::new(true);
    let out = masker.mask(&text);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
