//! `collie pair`: ask the running bridge for a pairing code and show it with a QR code.

use std::process::ExitCode;

use qrcode::render::unicode;
use qrcode::QrCode;

use super::{ask, print_json};
use crate::control::protocol::Request;
use crate::control::replies::PairCode;

/// `collie pair` flags.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The paired device expires this long after it claims the code (`30m`, `12h`, `30d`, `2w`; at most `3650d`).
    #[arg(long, value_name = "DUR")]
    expires: Option<String>,
    /// The device's tier.
    #[arg(long, value_name = "T", default_value = "full", value_parser = ["read", "files", "full"])]
    tier: String,
    /// Print `{"code","code_expires_at"}` instead of the code and QR code.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let data: PairCode = match ask(&Request::Pair {
        tier: args.tier,
        expires: args.expires,
    }) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    if args.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            code: &'a str,
            code_expires_at: Option<&'a str>,
        }
        print_json(&Out {
            code: &data.code,
            code_expires_at: data.code_expires_at.as_deref(),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let url = &data.pair_url;
    outln!("Pairing code: {}", data.code)?;
    outln!(
        "Valid until {} (one use). Open this on the phone:",
        data.code_expires_at.as_deref().unwrap_or("?")
    )?;
    outln!("{url}")?;
    if let Ok(qr) = QrCode::new(url.as_bytes()) {
        let image = qr
            .render::<unicode::Dense1x2>()
            .dark_color(unicode::Dense1x2::Light)
            .light_color(unicode::Dense1x2::Dark)
            .build();
        outln!("{image}")?;
    }
    Ok(ExitCode::SUCCESS)
}
