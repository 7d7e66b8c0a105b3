//! What the bridge says about itself to the phone (`GET /api/health`, `GET /api/machines`). The
//! crew role is the crew link's type; here it is the text the phone reads.

use collie_actors::crew_link::CrewRole;
use serde::Serialize;

use crate::app::counters::Totals;
use crate::app::status::{DeputyEntry, Health as AppHealth, MachineEntry, Machines as AppMachines};

/// `GET /api/health`.
#[derive(Debug, Serialize)]
pub struct Health {
    build: &'static str,
    version: &'static str,
    /// `solo`, `lead` or `member`.
    crew_mode: &'static str,
    counts_7d: Counts,
    audit_breaks: u64,
}

/// Reads, writes and denials of the last seven days.
#[derive(Debug, Serialize)]
pub struct Counts {
    reads: u64,
    writes: u64,
    denied: u64,
}

/// `GET /api/machines`.
#[derive(Debug, Serialize)]
pub struct Machines {
    machines: Vec<Machine>,
    /// The crew's deputy (SPEC §13), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    deputy: Option<DeputyEntry>,
}

/// One machine.
#[derive(Debug, Serialize)]
pub struct Machine {
    name: String,
    /// `lead`, `member` or `solo`.
    role: &'static str,
    online: bool,
    version: Option<String>,
}

impl From<AppHealth> for Health {
    fn from(h: AppHealth) -> Self {
        let Totals {
            reads,
            writes,
            denied,
        } = h.counts_7d;
        Health {
            build: h.build,
            version: h.version,
            crew_mode: role(h.crew_mode),
            counts_7d: Counts {
                reads,
                writes,
                denied,
            },
            audit_breaks: h.audit_breaks,
        }
    }
}

impl From<AppMachines> for Machines {
    fn from(m: AppMachines) -> Self {
        Machines {
            machines: m
                .machines
                .into_iter()
                .map(|e: MachineEntry| Machine {
                    name: e.name,
                    role: role(e.role),
                    online: e.online,
                    version: e.version,
                })
                .collect(),
            deputy: m.deputy,
        }
    }
}

fn role(r: CrewRole) -> &'static str {
    match r {
        CrewRole::Solo => "solo",
        CrewRole::Lead => "lead",
        CrewRole::Member => "member",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_and_machines_are_the_json_they_were() {
        for (i, r) in [CrewRole::Solo, CrewRole::Lead, CrewRole::Member]
            .into_iter()
            .enumerate()
        {
            let health = AppHealth {
                build: "abc",
                version: "0.1.0",
                crew_mode: r,
                counts_7d: Totals {
                    reads: 1,
                    writes: 2,
                    denied: 3,
                },
                audit_breaks: 4,
            };
            let before = serde_json::to_string(&health).unwrap();
            assert_eq!(
                serde_json::to_string(&Health::from(health)).unwrap(),
                before
            );
            let machines = AppMachines {
                machines: vec![MachineEntry {
                    name: "web-1".into(),
                    role: r,
                    online: i % 2 == 0,
                    version: (i > 0).then(|| "0.1.0".to_owned()),
                }],
                deputy: (i == 1).then(|| DeputyEntry {
                    name: "web-2".into(),
                    url: Some("http://web-2".into()),
                    standing_in: None,
                }),
            };
            let before = serde_json::to_string(&machines).unwrap();
            assert_eq!(
                serde_json::to_string(&Machines::from(machines)).unwrap(),
                before
            );
        }
    }
}
