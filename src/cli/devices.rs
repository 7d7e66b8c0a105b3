//! `collie devices …`: list and manage paired devices through the running bridge.

use std::process::ExitCode;

use super::{ask, print_json};
use crate::control::protocol::Request;
use crate::control::replies::{Devices, Message};

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// List paired devices.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a device; its token stops working at the next request.
    Revoke {
        /// The device's label.
        label: String,
    },
    /// Make a device expire DUR from now (`30m`, `12h`, `30d`, `2w`; at most `3650d`).
    SetExpiry {
        /// The device's label.
        label: String,
        /// How long from now.
        dur: String,
    },
    /// Remove a device's expiry.
    ClearExpiry {
        /// The device's label.
        label: String,
    },
    /// Change a device's tier (`read`, `files`, `full`).
    SetTier {
        /// The device's label.
        label: String,
        /// The new tier.
        #[arg(value_parser = ["read", "files", "full"])]
        tier: String,
    },
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let req = match cmd {
        Cmd::List { json } => return list(json),
        Cmd::Revoke { label } => Request::DevicesRevoke { label },
        Cmd::SetExpiry { label, dur } => Request::DevicesSetExpiry { label, dur },
        Cmd::ClearExpiry { label } => Request::DevicesClearExpiry { label },
        Cmd::SetTier { label, tier } => Request::DevicesSetTier { label, tier },
    };
    match ask::<Message>(&req) {
        Ok(done) => outln!("{}", done.message)?,
        Err(code) => return Ok(code),
    }
    Ok(ExitCode::SUCCESS)
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let Devices { devices } = match ask(&Request::DevicesList) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    if json {
        print_json(&Devices { devices })?;
        return Ok(ExitCode::SUCCESS);
    }
    if devices.is_empty() {
        outln!("no paired devices (pair one with `collie pair`)")?;
    }
    for d in devices {
        // Who paired it, when an identity gate named them (SPEC §14).
        let by = d
            .paired_by
            .as_deref()
            .map(|p| format!(" paired by {p}"))
            .unwrap_or_default();
        outln!(
            "{:<24} {:<5} last seen {:<25} expires {}{by}",
            d.label,
            d.tier.as_str(),
            d.last_seen.as_deref().unwrap_or("never"),
            d.expires_at.as_deref().unwrap_or("never"),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
