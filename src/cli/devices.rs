//! `collie devices …`: list and manage paired devices through the running bridge.

use std::process::ExitCode;

use super::{ask, print_json};
use crate::control::protocol::Request;

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
    let (req, json) = match cmd {
        Cmd::List { json } => (Request::DevicesList, json),
        Cmd::Revoke { label } => (Request::DevicesRevoke { label }, false),
        Cmd::SetExpiry { label, dur } => (Request::DevicesSetExpiry { label, dur }, false),
        Cmd::ClearExpiry { label } => (Request::DevicesClearExpiry { label }, false),
        Cmd::SetTier { label, tier } => (Request::DevicesSetTier { label, tier }, false),
    };
    let is_list = matches!(req, Request::DevicesList);
    let data = match ask(&req) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    if json {
        print_json(&data);
    } else if is_list {
        let devices = data["devices"].as_array().cloned().unwrap_or_default();
        if devices.is_empty() {
            println!("no paired devices (pair one with `collie pair`)");
        }
        for d in devices {
            println!(
                "{:<24} {:<5} last seen {:<25} expires {}",
                d["label"].as_str().unwrap_or(""),
                d["tier"].as_str().unwrap_or(""),
                d["last_seen"].as_str().unwrap_or("never"),
                d["expires_at"].as_str().unwrap_or("never"),
            );
        }
    } else if let Some(msg) = data["message"].as_str() {
        println!("{msg}");
    }
    Ok(ExitCode::SUCCESS)
}
