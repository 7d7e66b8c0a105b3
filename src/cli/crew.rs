//! `collie crew …`: make this bridge a lead, invite and join machines, show and remove members —
//! all on the running bridges, through the control socket (SPEC §8).

use std::process::ExitCode;

use serde::Serialize;

use super::{ask, print_json};
use crate::control::protocol::Request;
use crate::control::replies::{Crew, Invite, Machine, Message, Role};

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
    /// Name the member that stands in for this lead while it cannot be reached, or no one.
    #[command(subcommand)]
    Deputy(DeputyCmd),
}

/// `collie crew deputy …`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum DeputyCmd {
    /// Make member NAME the deputy: it gets a copy of the device registry (hashes, never
    /// tokens) and serves the phones while this lead is unreachable.
    Set {
        /// The member's name.
        name: String,
    },
    /// Name no deputy: the member forgets its copy.
    Clear,
}

pub(super) fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    let (req, json) = match cmd {
        Cmd::Invite {
            expires,
            address,
            json,
        } => return invite(Request::CrewInvite { expires, address }, json),
        Cmd::Deputy(deputy) => {
            let name = match deputy {
                DeputyCmd::Set { name } => Some(name),
                DeputyCmd::Clear => None,
            };
            match ask::<Message>(&Request::CrewDeputy { name }) {
                Ok(done) => outln!("{}", done.message)?,
                Err(code) => return Ok(code),
            }
            return Ok(ExitCode::SUCCESS);
        }
        Cmd::Remove { name } => {
            match ask::<Message>(&Request::CrewRemove { name }) {
                Ok(done) => outln!("{}", done.message)?,
                Err(code) => return Ok(code),
            }
            return Ok(ExitCode::SUCCESS);
        }
        Cmd::Members { json } => return members(json),
        Cmd::Init { json } => (Request::CrewInit, json),
        Cmd::Join { invite, name } => (Request::CrewJoin { invite, name }, false),
        Cmd::Status { json } => (Request::CrewStatus, json),
    };
    let view: Crew = match ask(&req) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    if json {
        print_json(&view)?;
    } else {
        print_status(&view)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn invite(req: Request, json: bool) -> anyhow::Result<ExitCode> {
    let Invite {
        invite,
        expires_in_secs,
    } = match ask(&req) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    if json {
        #[derive(Serialize)]
        struct Out {
            invite: String,
        }
        print_json(&Out { invite })?;
    } else {
        outln!("{invite}")?;
        eprintln!(
            "one-time invite, valid {expires_in_secs} s: run `collie crew join <invite>` on the new machine"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One row of `collie crew members`: a machine and its part.
#[derive(Serialize)]
struct Row {
    #[serde(flatten)]
    machine: Machine,
    role: Role,
}

/// `{"members":[…]}`: the lead's members, or a member's lead.
#[derive(Serialize)]
struct Members {
    members: Vec<Row>,
}

fn members(json: bool) -> anyhow::Result<ExitCode> {
    let view: Crew = match ask(&Request::CrewStatus) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let rows = view
        .members
        .into_iter()
        .map(|machine| Row {
            machine,
            role: Role::Member,
        })
        .chain(view.lead.map(|machine| Row {
            machine,
            role: Role::Lead,
        }));
    let list = Members {
        members: rows.collect(),
    };
    if json {
        print_json(&list)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.members.is_empty() {
        outln!("no members yet (invite one with `collie crew invite`)")?;
    }
    for m in list.members {
        outln!(
            "{:<20} {:<7} {:<8} {}",
            m.machine.name,
            m.role.as_str(),
            online(m.machine.online),
            m.machine.pin,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn online(up: bool) -> &'static str {
    if up {
        "online"
    } else {
        "offline"
    }
}

fn print_status(v: &Crew) -> std::io::Result<()> {
    outln!("role:    {}", v.role.as_str())?;
    outln!("name:    {}", v.name)?;
    if let Some(pin) = &v.pin {
        outln!("pin:     {pin}")?;
    }
    if let Some(addr) = &v.address {
        outln!("address: {addr}")?;
    }
    if let Some(l) = &v.lead {
        outln!(
            "lead:    {} at {} ({}), pin {}",
            l.name,
            l.address.as_deref().unwrap_or(""),
            online(l.online),
            l.pin,
        )?;
    }
    if v.role == Role::Lead {
        outln!("members: {}", v.members.len())?;
        for m in &v.members {
            outln!("  {:<20} {:<8} {}", m.name, online(m.online), m.pin)?;
        }
    }
    if let Some(d) = &v.deputy {
        print_deputy(d, v.role)?;
    }
    Ok(())
}

fn print_deputy(d: &crate::app::deputy::DeputyStatus, role: Role) -> std::io::Result<()> {
    let version = |v: Option<u64>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
    if role == Role::Lead {
        outln!(
            "deputy:  {} (registry v{}, deputy holds v{})",
            d.name,
            version(d.version),
            version(d.acknowledged),
        )
    } else if d.state.is_none() {
        outln!("deputy:  {}", d.name)
    } else {
        outln!(
            "deputy:  this machine, {} (registry v{} from {})",
            d.state.as_deref().unwrap_or(""),
            version(d.version),
            d.lead_url.as_deref().unwrap_or(""),
        )
    }
}
