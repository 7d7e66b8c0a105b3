//! `collie crew …`: make this bridge a lead, invite and join machines, show and remove members —
//! all on the running bridges, through the control socket (SPEC §8).

use std::process::ExitCode;

use serde_json::Value;

use super::{ask, print_json};
use crate::control::protocol::Request;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Cmd {
    /// Make this bridge the lead of a new crew.
    Init {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a one-time invite for a machine to join (valid 10 minutes unless --expires).
    Invite {
        /// How long the invite is valid: Nm, Nh or Nd (e.g. 30m), at most 7d.
        #[arg(long, value_name = "DUR")]
        expires: Option<String>,
        /// The address members dial (default: COLLIE_HOST:COLLIE_CREW_PORT).
        #[arg(long, value_name = "HOST:PORT")]
        address: Option<String>,
        /// Print `{"invite": "..."}`.
        #[arg(long)]
        json: bool,
    },
    /// Join the crew of an invite; this bridge becomes a member.
    Join {
        /// The invite string from `collie crew invite` on the lead.
        invite: String,
        /// The name to join with (default: this machine's name).
        #[arg(long, value_name = "N")]
        name: Option<String>,
    },
    /// Show this bridge's role, pin, lead or members.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the crew's members (on the lead) or the lead (on a member).
    Members {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a member: unpin it and close its connection now.
    Remove {
        /// The member's name.
        name: String,
    },
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let (req, json) = match &cmd {
        Cmd::Init { json } => (Request::CrewInit, *json),
        Cmd::Invite {
            expires,
            address,
            json,
        } => (
            Request::CrewInvite {
                expires: expires.clone(),
                address: address.clone(),
            },
            *json,
        ),
        Cmd::Join { invite, name } => (
            Request::CrewJoin {
                invite: invite.clone(),
                name: name.clone(),
            },
            false,
        ),
        Cmd::Status { json } | Cmd::Members { json } => (Request::CrewStatus, *json),
        Cmd::Remove { name } => (Request::CrewRemove { name: name.clone() }, false),
    };
    let data = match ask(&req) {
        Ok(d) => d,
        Err(code) => return Ok(code),
    };
    match cmd {
        Cmd::Invite { json: true, .. } => {
            print_json(&serde_json::json!({ "invite": data["invite"] }))
        }
        Cmd::Invite { .. } => {
            println!("{}", text(&data["invite"]));
            eprintln!(
                "one-time invite, valid {} s: run `collie crew join <invite>` on the new machine",
                data["expires_in_secs"]
            );
        }
        Cmd::Members { json: true } => print_json(&members_json(&data)),
        Cmd::Members { .. } => {
            let list = members_json(&data);
            let list = list["members"].as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                println!("no members yet (invite one with `collie crew invite`)");
            }
            for m in list {
                println!(
                    "{:<20} {:<7} {:<8} {}",
                    text(&m["name"]),
                    text(&m["role"]),
                    if m["online"] == true {
                        "online"
                    } else {
                        "offline"
                    },
                    text(&m["pin"]),
                );
            }
        }
        Cmd::Remove { .. } => println!("{}", text(&data["message"])),
        _ if json => print_json(&data),
        Cmd::Init { .. } | Cmd::Join { .. } | Cmd::Status { .. } => print_status(&data),
    }
    Ok(ExitCode::SUCCESS)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// `{"members":[…]}`: the lead's members, or a member's lead.
fn members_json(status: &Value) -> Value {
    let mut out = Vec::new();
    if let Some(members) = status["members"].as_array() {
        for m in members {
            let mut m = m.clone();
            m["role"] = "member".into();
            out.push(m);
        }
    }
    if status["lead"].is_object() {
        let mut l = status["lead"].clone();
        l["role"] = "lead".into();
        out.push(l);
    }
    serde_json::json!({ "members": out })
}

fn print_status(v: &Value) {
    println!("role:    {}", text(&v["role"]));
    println!("name:    {}", text(&v["name"]));
    if let Some(pin) = v["pin"].as_str() {
        println!("pin:     {pin}");
    }
    if let Some(addr) = v["address"].as_str() {
        println!("address: {addr}");
    }
    if v["lead"].is_object() {
        let l = &v["lead"];
        println!(
            "lead:    {} at {} ({}), pin {}",
            text(&l["name"]),
            text(&l["address"]),
            if l["online"] == true {
                "online"
            } else {
                "offline"
            },
            text(&l["pin"]),
        );
    }
    if text(&v["role"]) == "lead" {
        let members = v["members"].as_array().cloned().unwrap_or_default();
        println!("members: {}", members.len());
        for m in members {
            println!(
                "  {:<20} {:<8} {}",
                text(&m["name"]),
                if m["online"] == true {
                    "online"
                } else {
                    "offline"
                },
                text(&m["pin"]),
            );
        }
    }
}
