//! What callers hand in: the event name and the record to audit (SPEC §7).

use std::{fmt, str::FromStr};

use serde_json::{Map, Value};

use super::AuditError;

/// The audited events of SPEC §7. Their names (see [`AuditEventKind::as_str`]) are part of the log
/// format and never change. `durable.*`, `tool.*`, `config.applied`, `sent.discard` and `command.run` come with the
/// features that emit them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuditEventKind {
    /// `device.paired`: a device claimed a pairing code.
    DevicePaired,
    /// `device.revoked`: a device's token was revoked (also when an expired label is taken over).
    DeviceRevoked,
    /// `device.expiry`: a device's expiry was set or cleared.
    DeviceExpiry,
    /// `device.tier`: a device's tier changed.
    DeviceTier,
    /// `pane.input`: text or keys sent to a pane.
    PaneInput,
    /// `pane.create`: a pane was created.
    PaneCreate,
    /// `pane.close`: a pane was closed.
    PaneClose,
    /// `pane.rename`: a pane was renamed.
    PaneRename,
    /// `tab.rename`: a tab was renamed.
    TabRename,
    /// `security.denied`: a request was refused for a security reason (tier, origin, token…).
    SecurityDenied,
    /// `resource.denied`: a request was refused because a cap was reached.
    ResourceDenied,
    /// `crew.joined`: a member joined the crew.
    CrewJoined,
    /// `crew.removed`: a member was removed from the crew.
    CrewRemoved,
    /// `walky.sent`: a walky message was sent.
    WalkySent,
    /// `walky.delivered`: a walky message was delivered to a pane.
    WalkyDelivered,
    /// `walky.rejected`: a walky message was rejected.
    WalkyRejected,
    /// `audit.break`: the log did not end where the store said; first line of the continued chain.
    AuditBreak,
    /// `audit.acknowledged`: a person acknowledged a recorded break (`collie audit acknowledge`).
    AuditAcknowledged,
    /// `audit.witnessed`: on a lead, a member's audit chain head it keeps (issue 28; not in SPEC
    /// §7's list; how often it is a line: [`crate::audit::witness::KeptHeads`]).
    AuditWitnessed,
    /// `crew.deputy`: on a lead, `collie crew deputy set|clear` named a member its deputy or no
    /// one (SPEC §13: the member, or `cleared`); on the member, that it became or stopped being
    /// the deputy.
    CrewDeputy,
    /// `deputy.line`: on a lead, a line its deputy wrote standing in, fetched when the deputy was
    /// back (SPEC §13: the deputy, its `seq`, the line itself).
    DeputyLine,
    /// `card.answered`: a device answered a card (SPEC §10.1: the card, its source, the option).
    CardAnswered,
    /// `hooks.installed`: `collie hooks install|uninstall` changed an agent's settings file
    /// (SPEC §7, §10.2: the agent, the scope, installed or removed, and the file).
    HooksInstalled,
    /// `push.subscribed`: a device subscribed to Web Push, or unsubscribed (SPEC §10.4).
    PushSubscribed,
    /// `durable.answer`: a device's answer to a durable agent (SPEC §10.3; never typed text).
    DurableAnswer,
    /// `durable.send`: a device's send to a durable agent (SPEC §10.3; never typed text).
    DurableSend,
    /// `durable.abort`: a device's abort to a durable agent (SPEC §10.3; never typed text).
    DurableAbort,
    /// `durable.action`: a device's action to a durable agent (SPEC §10.3; never typed text).
    DurableAction,
    /// `durable.rename`: a device's rename to a durable agent (SPEC §10.3; never typed text).
    DurableRename,
    /// `durable.close`: a device's close to a durable agent (SPEC §10.3; never typed text).
    DurableClose,
    /// `durable.reopen`: a device's reopen to a durable agent (SPEC §10.3; never typed text).
    DurableReopen,
    /// `durable.starter`: a device's starter to a durable agent (SPEC §10.3; never typed text).
    DurableStarter,
    /// `config.applied`: `collie apply` replaced the applied configuration (SPEC §12: how it was
    /// confirmed, the file's hash, counts of what changed).
    ConfigApplied,
    /// `sent.discard`: lines discarded from the sent log (SPEC §11: a count, never the line).
    SentDiscard,
    /// `command.run`: a one-shot command (SPEC §11: its first word and length only).
    CommandRun,
    /// `starter.added`: a phone added a starter row (SPEC §12; not in SPEC §7's list, decision
    /// 0041: the machine, the name, the agent or, for a typed line, its first word and length).
    StarterAdded,
    /// `starter.removed`: a phone removed a starter row (decision 0041).
    StarterRemoved,
    /// `speech.transcribe`: a phone's dictation transcribed (SPEC §16: the machine whose pane the
    /// text is for and the recording's length — never the text).
    SpeechTranscribe,
    /// `tool.<name>`: a tool call (SPEC §11: paths, sizes, exit codes — never contents).
    Tool(crate::tools::ToolName),
    /// `tool.upload`: a file uploaded from the phone into a pane's folder (SPEC §11: its path,
    /// name and size — never its bytes). Of the open `tool.*` family, though not a registry tool.
    Upload,
}

impl AuditEventKind {
    /// Every event but the `tool.*` family, in the order of SPEC §7 (the tools are
    /// [`ToolName::ALL`](crate::tools::ToolName::ALL)).
    pub const ALL: [Self; 38] = [
        Self::DevicePaired,
        Self::DeviceRevoked,
        Self::DeviceExpiry,
        Self::DeviceTier,
        Self::PaneInput,
        Self::PaneCreate,
        Self::PaneClose,
        Self::PaneRename,
        Self::TabRename,
        Self::SecurityDenied,
        Self::ResourceDenied,
        Self::CrewJoined,
        Self::CrewRemoved,
        Self::WalkySent,
        Self::WalkyDelivered,
        Self::WalkyRejected,
        Self::AuditBreak,
        Self::AuditAcknowledged,
        Self::CardAnswered,
        Self::HooksInstalled,
        Self::PushSubscribed,
        Self::DurableAnswer,
        Self::DurableSend,
        Self::DurableAbort,
        Self::DurableAction,
        Self::DurableRename,
        Self::DurableClose,
        Self::DurableReopen,
        Self::DurableStarter,
        Self::ConfigApplied,
        Self::SentDiscard,
        Self::CommandRun,
        Self::StarterAdded,
        Self::StarterRemoved,
        Self::AuditWitnessed,
        Self::CrewDeputy,
        Self::DeputyLine,
        Self::SpeechTranscribe,
    ];

    /// The event's name as written in the `event` member of a line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DevicePaired => "device.paired",
            Self::DeviceRevoked => "device.revoked",
            Self::DeviceExpiry => "device.expiry",
            Self::DeviceTier => "device.tier",
            Self::PaneInput => "pane.input",
            Self::PaneCreate => "pane.create",
            Self::PaneClose => "pane.close",
            Self::PaneRename => "pane.rename",
            Self::TabRename => "tab.rename",
            Self::SecurityDenied => "security.denied",
            Self::ResourceDenied => "resource.denied",
            Self::CrewJoined => "crew.joined",
            Self::CrewRemoved => "crew.removed",
            Self::WalkySent => "walky.sent",
            Self::WalkyDelivered => "walky.delivered",
            Self::WalkyRejected => "walky.rejected",
            Self::AuditBreak => "audit.break",
            Self::AuditAcknowledged => "audit.acknowledged",
            Self::AuditWitnessed => "audit.witnessed",
            Self::CrewDeputy => "crew.deputy",
            Self::DeputyLine => "deputy.line",
            Self::CardAnswered => "card.answered",
            Self::HooksInstalled => "hooks.installed",
            Self::PushSubscribed => "push.subscribed",
            Self::DurableAnswer => "durable.answer",
            Self::DurableSend => "durable.send",
            Self::DurableAbort => "durable.abort",
            Self::DurableAction => "durable.action",
            Self::DurableRename => "durable.rename",
            Self::DurableClose => "durable.close",
            Self::DurableReopen => "durable.reopen",
            Self::DurableStarter => "durable.starter",
            Self::ConfigApplied => "config.applied",
            Self::SentDiscard => "sent.discard",
            Self::CommandRun => "command.run",
            Self::StarterAdded => "starter.added",
            Self::StarterRemoved => "starter.removed",
            Self::SpeechTranscribe => "speech.transcribe",
            Self::Tool(tool) => tool.event_name(),
            Self::Upload => "tool.upload",
        }
    }
}

impl fmt::Display for AuditEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for AuditEventKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for AuditEventKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for AuditEventKind {
    type Err = AuditError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .chain(crate::tools::ToolName::ALL.map(Self::Tool))
            .chain([Self::Upload])
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| AuditError::UnknownEvent(s.to_owned()))
    }
}

/// One event to audit, as the caller knows it. The chain adds `v`, `seq`, `ts`, `prev` and `hash`,
/// applies the content mode to `detail` and masks every string (see [`AuditChain::render`]).
///
/// Typed text goes under a `text` member of `detail` (see [`TYPED_TEXT_KEY`]); identifiers go under
/// the keys of [`IDENTIFIER_KEYS`] so that they stay readable in `none` mode.
///
/// [`AuditChain::render`]: super::AuditChain::render
/// [`TYPED_TEXT_KEY`]: super::TYPED_TEXT_KEY
/// [`IDENTIFIER_KEYS`]: super::IDENTIFIER_KEYS
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuditRecord {
    /// What happened.
    pub event: AuditEventKind,
    /// The real name of the machine whose log this is (never `local`).
    pub machine: String,
    /// The session the event belongs to, if any.
    pub session: Option<String>,
    /// The label of the device that asked for it, if a device did.
    pub device: Option<String>,
    /// The request's id; a write relayed by the lead carries the same id on both machines.
    pub request_id: Option<String>,
    /// Event-specific members.
    pub detail: Map<String, Value>,
}

impl AuditRecord {
    /// A record of `event` on `machine` with no session, device, request id or detail.
    pub fn new(event: AuditEventKind, machine: impl Into<String>) -> Self {
        Self {
            event,
            machine: machine.into(),
            session: None,
            device: None,
            request_id: None,
            detail: Map::new(),
        }
    }

    /// Sets the session.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Sets the device label.
    pub fn with_device(mut self, device: impl Into<String>) -> Self {
        self.device = Some(device.into());
        self
    }

    /// Sets the request id.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Adds (or replaces) one member of `detail`.
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.detail.insert(key.into(), value.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for kind in AuditEventKind::ALL {
            assert!(seen.insert(kind.as_str()), "duplicate name {kind}");
            assert_eq!(kind.as_str().parse::<AuditEventKind>().ok(), Some(kind));
        }
        assert_eq!(seen.len(), 38);
        for tool in crate::tools::ToolName::ALL {
            let kind = AuditEventKind::Tool(tool);
            assert!(seen.insert(kind.as_str()), "duplicate name {kind}");
            assert_eq!(kind.as_str().parse::<AuditEventKind>().ok(), Some(kind));
        }
    }

    #[test]
    fn names_match_the_spec() {
        let names: Vec<&str> = AuditEventKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "device.paired",
                "device.revoked",
                "device.expiry",
                "device.tier",
                "pane.input",
                "pane.create",
                "pane.close",
                "pane.rename",
                "tab.rename",
                "security.denied",
                "resource.denied",
                "crew.joined",
                "crew.removed",
                "walky.sent",
                "walky.delivered",
                "walky.rejected",
                "audit.break",
                "audit.acknowledged",
                "card.answered",
                "hooks.installed",
                "push.subscribed",
                "durable.answer",
                "durable.send",
                "durable.abort",
                "durable.action",
                "durable.rename",
                "durable.close",
                "durable.reopen",
                "durable.starter",
                "config.applied",
                "sent.discard",
                "command.run",
                "starter.added",
                "starter.removed",
                "audit.witnessed",
                "crew.deputy",
                "deputy.line",
                "speech.transcribe",
            ]
        );
    }

    #[test]
    fn an_upload_reads_back() {
        let kind: AuditEventKind = "tool.upload".parse().expect("known");
        assert_eq!(kind, AuditEventKind::Upload);
        assert_eq!(kind.as_str(), "tool.upload");
    }

    #[test]
    fn unknown_name_is_an_error() {
        let err = "pane.delete".parse::<AuditEventKind>().unwrap_err();
        assert_eq!(err.to_string(), r#"unknown audit event "pane.delete""#);
    }

    #[test]
    fn builder_fills_the_record() {
        let rec = AuditRecord::new(AuditEventKind::PaneInput, "web-1")
            .with_device("phone")
            .with_request_id("r1")
            .with_session("s1")
            .with_detail("pane", "t0-3");
        assert_eq!(rec.device.as_deref(), Some("phone"));
        assert_eq!(rec.request_id.as_deref(), Some("r1"));
        assert_eq!(rec.session.as_deref(), Some("s1"));
        assert_eq!(rec.detail.get("pane"), Some(&Value::from("t0-3")));
    }
}
