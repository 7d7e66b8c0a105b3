//! The control socket's crew: `collie crew init|join|status|members`. The adapter's own types,
//! converted from the crew link actor's view here, so a change to the actor's type is a compile
//! error at this conversion rather than a silent change of what the CLI prints.

use collie_actors::crew_link::{CrewRole, CrewView, MachineView};
use serde::{Deserialize, Serialize};

use crate::app::deputy::DeputyStatus;

/// What part this bridge plays in its crew; `solo`, `lead` or `member`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Not in a crew.
    Solo,
    /// The crew's lead.
    Lead,
    /// A member.
    Member,
}

impl Role {
    /// `solo`, `lead` or `member`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Solo => "solo",
            Role::Lead => "lead",
            Role::Member => "member",
        }
    }
}

impl From<CrewRole> for Role {
    fn from(r: CrewRole) -> Self {
        match r {
            CrewRole::Solo => Role::Solo,
            CrewRole::Lead => Role::Lead,
            CrewRole::Member => Role::Member,
        }
    }
}

/// The crew as this bridge sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crew {
    /// Solo, lead or member.
    pub role: Role,
    /// This machine's crew name.
    pub name: String,
    /// This machine's pin (not on a solo bridge).
    pub pin: Option<String>,
    /// Where a lead listens for members.
    pub address: Option<String>,
    /// On a member: its lead.
    pub lead: Option<Machine>,
    /// On a lead: its members, by name.
    pub members: Vec<Machine>,
    /// The crew's deputy (SPEC §13): on the lead the member it named, on the deputy itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deputy: Option<DeputyStatus>,
    /// This bridge's version.
    pub version: String,
}

/// One other machine of the crew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Its name.
    pub name: String,
    /// Its pin.
    pub pin: String,
    /// Its address (the lead's, on a member).
    pub address: Option<String>,
    /// Whether a link to it is up now.
    pub online: bool,
    /// Its bridge version, from its last hello.
    pub version: Option<String>,
}

impl From<MachineView> for Machine {
    fn from(m: MachineView) -> Self {
        let MachineView {
            name,
            pin,
            address,
            online,
            version,
        } = m;
        Machine {
            name,
            pin,
            address,
            online,
            version,
        }
    }
}

impl From<CrewView> for Crew {
    fn from(v: CrewView) -> Self {
        let CrewView {
            role,
            name,
            pin,
            address,
            lead,
            members,
            deputy,
            version,
        } = v;
        Crew {
            role: role.into(),
            name,
            pin,
            address,
            lead: lead.map(Machine::from),
            members: members.into_iter().map(Machine::from).collect(),
            deputy: deputy.map(|name| DeputyStatus {
                name,
                version: None,
                acknowledged: None,
                state: None,
                lead_url: None,
            }),
            version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the CLI prints with `--json` is the actor's shape to the byte.
    #[test]
    fn the_reply_serializes_as_the_actor_type_did() {
        let machine = |name: &str, online| MachineView {
            name: name.into(),
            pin: "sha256:00ff".into(),
            address: Some("10.0.0.2:7443".into()),
            online,
            version: Some("0.1.0".into()),
        };
        for (role, lead, members) in [
            (CrewRole::Solo, None, vec![]),
            (
                CrewRole::Lead,
                None,
                vec![machine("web-1", true), machine("web-2", false)],
            ),
            (CrewRole::Member, Some(machine("lead", true)), vec![]),
        ] {
            let view = CrewView {
                role,
                name: "box".into(),
                pin: Some("sha256:abcd".into()),
                address: None,
                lead,
                members,
                deputy: None,
                version: "0.1.0".into(),
            };
            let ours = serde_json::to_string(&Crew::from(view.clone())).expect("json");
            assert_eq!(ours, serde_json::to_string(&view).expect("json"));
            assert_eq!(Role::from(role).as_str(), role.as_str());
        }
    }
}
