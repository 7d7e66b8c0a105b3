//! `collie pair`: ask the running bridge for a pairing code and show it with a QR code.

use std::process::ExitCode;

use qrcode::render::unicode;
use qrcode::QrCode;

use super::{ask, print_json};
use crate::control::protocol::Request;

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
    let data = match ask(&Request::Pair {
        tier: args.tier,
        expires: args.expires,
    }) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    if args.json {
        let out = serde_json::json!({
            "code": data["code"],
            "code_expires_at": data["code_expires_at"],
        });
        print_json(&out);
        return Ok(ExitCode::SUCCESS);
    }
    let code = data["code"].as_str().unwrap_or_default();
    let url = data["pair_url"].as_str().unwrap_or_default();
    println!("Pairing code: {code}");
    println!(
        "Valid until {} (one use). Open this on the phone:",
        data["code_expires_at"].as_str().unwrap_or("?")
    );
    println!("{url}");
    if let Ok(qr) = QrCode::new(url.as_bytes()) {
        let image = qr
            .render::<unicode::Dense1x2>()
            .dark_color(unicode::Dense1x2::Light)
            .light_color(unicode::Dense1x2::Dark)
            .build();
        println!("{image}");
    }
    Ok(ExitCode::SUCCESS)
}
