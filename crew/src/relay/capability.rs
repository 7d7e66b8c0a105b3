//! Which capability each relay request needs (SPEC §8): the gate a lead applies before it sends a
//! request to a member whose hello did not declare it. The capabilities themselves are the hello's
//! ([`Capability`]); the requests are the relay's, so the rule lives here.

use crate::hello::{Capability, Peer};
#[cfg(test)]
use crate::relay::RowSpec;
use crate::relay::{RelayError, RelayKind};

/// The capability a relay request needs. [`RelayKind::Unknown`] needs [`Capability::Unknown`],
/// which nothing satisfies.
pub fn requires(kind: &RelayKind) -> Capability {
    match kind {
        RelayKind::PaneList => Capability::PaneList,
        RelayKind::Snapshot { .. } => Capability::PaneRead,
        RelayKind::Subscribe { .. } | RelayKind::Unsubscribe { .. } => Capability::PaneStream,
        RelayKind::Input { .. } => Capability::PaneInput,
        // Listing the starters is asking what a create could start.
        RelayKind::Create { .. } | RelayKind::Starters => Capability::PaneCreate,
        RelayKind::Rename { .. } => Capability::PaneRename,
        RelayKind::Close { .. } => Capability::PaneClose,
        RelayKind::Walky { .. } | RelayKind::WalkyCard { .. } => Capability::Walky,
        RelayKind::Cards | RelayKind::CardAnswer { .. } | RelayKind::CardsWatch => {
            Capability::Cards
        }
        RelayKind::Durable | RelayKind::DurableWrite { .. } => Capability::Durable,
        RelayKind::Tool { .. } | RelayKind::DeviceEnded { .. } => Capability::Tools,
        RelayKind::Blob { .. } => Capability::Uploads,
        RelayKind::SentList | RelayKind::SentDiscard { .. } | RelayKind::SentClear => {
            Capability::Sent
        }
        RelayKind::Command { .. } => Capability::Commands,
        RelayKind::Browse { .. } => Capability::Browse,
        RelayKind::CreateIn { .. } => Capability::PaneFolder,
        RelayKind::Sessions | RelayKind::CreateWindow { .. } => Capability::TmuxWindow,
        RelayKind::SnapshotColour { .. } | RelayKind::SubscribeColour { .. } => {
            Capability::PaneColour
        }
        RelayKind::CreateRow { .. } => Capability::StarterRows,
        RelayKind::Chat { .. } => Capability::Chat,
        RelayKind::Deputy { .. }
        | RelayKind::DeputyNotice { .. }
        | RelayKind::DeputyLines { .. } => Capability::Deputy,
        RelayKind::Unknown => Capability::Unknown,
    }
}

impl Peer {
    /// Whether the peer declared what `kind` needs; `capability missing` otherwise.
    pub fn allows(&self, kind: &RelayKind) -> Result<(), RelayError> {
        match requires(kind) {
            Capability::Unknown => Err(RelayError::CapabilityMissing),
            needed if self.capabilities.contains(&needed) => Ok(()),
            _ => Err(RelayError::CapabilityMissing),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hello::PROTOCOL;

    #[test]
    fn undeclared_capabilities_answer_capability_missing() {
        let peer = Peer {
            name: "web-1".to_owned(),
            bridge_version: "0.1.0".to_owned(),
            protocol: PROTOCOL,
            capabilities: [Capability::PaneRead, Capability::Unknown].into(),
        };
        let snapshot = RelayKind::Snapshot {
            pane: "p1".to_owned(),
            scrollback: None,
        };
        let input = RelayKind::Input {
            pane: "p1".to_owned(),
            text: None,
            keys: vec![],
        };
        assert_eq!(peer.allows(&snapshot), Ok(()));
        assert_eq!(peer.allows(&input), Err(RelayError::CapabilityMissing));
        assert_eq!(
            peer.allows(&RelayKind::Unknown),
            Err(RelayError::CapabilityMissing),
            "an unknown capability satisfies nothing"
        );
    }

    #[test]
    fn every_kind_requires_its_capability() {
        let pane = || "p1".to_owned();
        let cases = [
            (RelayKind::PaneList, Capability::PaneList),
            (
                RelayKind::Snapshot {
                    pane: pane(),
                    scrollback: Some(5),
                },
                Capability::PaneRead,
            ),
            (
                RelayKind::Subscribe {
                    pane: pane(),
                    last_seq: None,
                },
                Capability::PaneStream,
            ),
            (RelayKind::Unsubscribe { stream: 3 }, Capability::PaneStream),
            (
                RelayKind::Input {
                    pane: pane(),
                    text: Some("x".to_owned()),
                    keys: vec![],
                },
                Capability::PaneInput,
            ),
            (
                RelayKind::Create {
                    name: None,
                    starter: None,
                },
                Capability::PaneCreate,
            ),
            (
                RelayKind::Rename {
                    pane: pane(),
                    name: "n".to_owned(),
                },
                Capability::PaneRename,
            ),
            (RelayKind::Close { pane: pane() }, Capability::PaneClose),
            (
                RelayKind::Blob {
                    pane: pane(),
                    name: "shot.png".to_owned(),
                    bytes: vec![1],
                },
                Capability::Uploads,
            ),
            (RelayKind::SentList, Capability::Sent),
            (RelayKind::SentDiscard { id: 4 }, Capability::Sent),
            (RelayKind::SentClear, Capability::Sent),
            (
                RelayKind::Command {
                    command: "ls".to_owned(),
                },
                Capability::Commands,
            ),
            (RelayKind::Starters, Capability::PaneCreate),
            (RelayKind::Browse { path: None }, Capability::Browse),
            (
                RelayKind::Chat {
                    pane: pane(),
                    after: String::new(),
                },
                Capability::Chat,
            ),
            (
                RelayKind::CreateIn {
                    name: None,
                    starter: None,
                    folder: "~/src".to_owned(),
                },
                Capability::PaneFolder,
            ),
            (RelayKind::Sessions, Capability::TmuxWindow),
            (
                RelayKind::CreateWindow {
                    name: None,
                    starter: None,
                    folder: None,
                    session: "t0:main".to_owned(),
                },
                Capability::TmuxWindow,
            ),
            (
                RelayKind::SnapshotColour {
                    pane: pane(),
                    scrollback: None,
                },
                Capability::PaneColour,
            ),
            (
                RelayKind::SubscribeColour {
                    pane: pane(),
                    last_seq: None,
                },
                Capability::PaneColour,
            ),
            (
                RelayKind::CreateRow {
                    row: "mine".to_owned(),
                    name: None,
                    spec: RowSpec::Line {
                        line: "make".to_owned(),
                    },
                    folder: None,
                },
                Capability::StarterRows,
            ),
            (RelayKind::Unknown, Capability::Unknown),
        ];
        for (kind, capability) in cases {
            assert_eq!(requires(&kind), capability, "{kind:?}");
        }
    }
}
