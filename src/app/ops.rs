//! The one registry of operations and what each requires of its caller (SPEC §11: "each tool and
//! route has a required tier fixed in code in one registry").
//!
//! Every operation a caller can ask for is an [`Op`]; [`Op::access`] is the only place its tier is
//! written. The HTTP adapter's route table names an `Op` per route (its gate reads the access from
//! here), and the application checks the same value again when the operation runs
//! ([`App::authorize`]) — so an adapter that forgot its gate still cannot let a `read` device type
//! into a pane, and the control socket, the relay and the HTTP routes cannot disagree about a
//! tier. Nothing at run time changes an access and no request field grants one.

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::pairing::Tier;
use collie_actors::tools::ToolName;
use collie_crew::hello::Capability;

use super::authn::Gate;
use super::{App, AppError, Caller, Who};

/// What an operation requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No token needed (`/api/health`, `/api/pair`).
    Open,
    /// A paired device of at least this tier. The local secret is refused.
    Device(Tier),
    /// A paired device of at least this tier, or the lead relaying one's request — never this
    /// machine's CLI: a one-shot command (the CLI has a shell of its own), a tap on a card (SPEC
    /// §10.1: only a paired device's), a write to a durable agent (its receipt names a device).
    Phone(Tier),
    /// A read the CLI makes: any paired device, and the local secret too (SPEC §4.6). Only the
    /// reads the CLI makes are marked so — an operation added later is closed to the local secret
    /// until someone decides otherwise here.
    CliRead,
}

impl Access {
    /// The gate of a request for an operation of this access (an open one: any device).
    pub const fn gate(self) -> Gate {
        match self {
            Access::Device(tier) | Access::Phone(tier) => Gate::device(tier),
            Access::CliRead => Gate::CLI_READ,
            Access::Open => Gate::device(Tier::Read),
        }
    }
}

/// Every operation a caller may ask of a bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// `GET /api/health`.
    Health,
    /// Pairing with a one-time code.
    Pair,
    /// The crew's machines.
    Machines,
    /// The settings a phone shows.
    Settings,
    /// The paired devices.
    Devices,
    /// Revoking a device: oneself needs only `read`; another device needs `full`, checked by the
    /// operation, which knows whose label it is.
    DeviceRevoke,
    /// The pairings of the last 24 hours, announced on every other device (SPEC §4.6).
    Notices,
    /// Every pane of the crew.
    PaneList,
    /// A pane's screen.
    PaneSnapshot,
    /// A pane's live screen.
    PaneStream,
    /// The chat view of an agent's pane: what the screen shows, from the agent's transcript.
    PaneChat,
    /// Typing into a pane.
    PaneInput,
    /// Starting a pane (or a tmux window).
    PaneCreate,
    /// Renaming a pane or a tmux window.
    PaneRename,
    /// Closing a pane.
    PaneClose,
    /// The walky cards.
    WalkyList,
    /// One walky card.
    WalkyCard,
    /// The waiting cards.
    Cards,
    /// The cards' live changes.
    CardStream,
    /// A tap on a card: only a paired device's (SPEC §10.1).
    CardAnswer,
    /// The durable agents' conversations.
    DurableRead,
    /// An answer, send, stop, action, rename, close, reopen or starter for a durable agent.
    DurableWrite,
    /// The push service's public key.
    PushKey,
    /// Whether this device is subscribed to pushes.
    PushSubscription,
    /// Subscribing to pushes (any paired device may be told that a question waits).
    PushSubscribe,
    /// Dropping a push subscription.
    PushUnsubscribe,
    /// The door to the tools (`POST /api/tools/{tool}`, MCP): any paired device; the tool itself
    /// is [`Op::Tool`].
    ToolCall,
    /// One tool: the tier is the tool registry's entry ([`ToolName::spec`]), which joins this
    /// one.
    Tool(ToolName),
    /// The Files view's listing (SPEC §11: "Both need tier files").
    FileList,
    /// The Files view's reading.
    FileRead,
    /// The Changes view.
    FileChanges,
    /// Ending the tool sessions of a device that no longer holds `full`: the bridge's own policy
    /// watcher, or a lead relaying its device's end (no route exposes it).
    DeviceEnded,
    /// Browsing for a new pane's folder.
    Browse,
    /// An upload into a pane's folder.
    Upload,
    /// An upload served back.
    BlobRead,
    /// The sent log: any paired device reads it (it reads the panes too).
    SentList,
    /// Discarding a machine's sent log: `files` (decision 0033: it edits a file on the machine,
    /// which `read` never does).
    SentDiscardAll,
    /// Discarding one sent line.
    SentDiscard,
    /// A one-shot command.
    CommandRun,
    /// The recent one-shot commands.
    CommandsRecent,
    /// The starters a New page lists: only to a device that may start one.
    StarterList,
    /// The tmux sessions a new window can open in (decision 0042): as the starters.
    SessionList,
    /// Adding a starter row from a phone (decision 0041): as starting a starter.
    RowAdd,
    /// Removing a starter row.
    RowRemove,
    /// Transcribing a dictation (SPEC §16): as typing, whose text it becomes.
    Speech,
}

impl Op {
    /// What the operation requires: the registry (SPEC §11).
    pub const fn access(self) -> Access {
        use Access::{CliRead, Device, Open, Phone};
        use Tier::{Files, Full, Read};
        match self {
            Op::Health | Op::Pair => Open,
            Op::Machines | Op::Settings | Op::Devices | Op::PaneList | Op::PaneSnapshot => CliRead,
            Op::Cards => CliRead,
            Op::DeviceRevoke | Op::Notices | Op::PaneStream | Op::PaneChat => Device(Read),
            Op::WalkyList | Op::WalkyCard | Op::CardStream | Op::DurableRead => Device(Read),
            Op::PushKey | Op::PushSubscription | Op::PushSubscribe | Op::PushUnsubscribe => {
                Device(Read)
            }
            Op::ToolCall | Op::SentList => Device(Read),
            Op::Tool(name) => Device(name.spec().tier),
            Op::FileList | Op::FileRead | Op::FileChanges | Op::Browse => Device(Files),
            Op::Upload | Op::BlobRead | Op::SentDiscardAll | Op::SentDiscard => Device(Files),
            Op::PaneInput | Op::PaneCreate | Op::PaneRename | Op::PaneClose => Device(Full),
            Op::CardAnswer | Op::DurableWrite => Phone(Full),
            Op::CommandRun | Op::CommandsRecent => Phone(Full),
            Op::StarterList | Op::SessionList | Op::RowAdd | Op::RowRemove => Device(Full),
            Op::DeviceEnded | Op::Speech => Device(Full),
        }
    }
}

impl Op {
    /// Whether the operation reads or changes this machine's devices or their pushes: what a
    /// deputy never does for its lead's devices (they are the lead's to change).
    pub const fn changes_devices(self) -> bool {
        matches!(
            self,
            Op::Devices
                | Op::DeviceRevoke
                | Op::Notices
                | Op::PushSubscription
                | Op::PushSubscribe
                | Op::PushUnsubscribe
        )
    }

    /// The capability a member may decline for this operation (`[crew] tools = false` leaves
    /// out the crew's file access, uploads and browsing): a lead relaying it to a member that
    /// declined is refused `capability missing`, on the lead before it relays and again on the
    /// member.
    pub const fn declinable(self) -> Option<Capability> {
        match self {
            Op::ToolCall | Op::Tool(_) | Op::DeviceEnded => Some(Capability::Tools),
            Op::Upload => Some(Capability::Uploads),
            Op::Browse => Some(Capability::Browse),
            _ => None,
        }
    }
}

impl Op {
    /// A `security.denied` line of a refused `op`: the operation, and the tier it needs (a tool
    /// by its name, as `tools/list` shows it).
    fn denial(self, rec: AuditRecord) -> AuditRecord {
        let rec = match self {
            Op::Tool(name) => rec.with_detail("tool", name.as_str()),
            _ => rec.with_detail("operation", format!("{self:?}")),
        };
        match self.access() {
            Access::Device(tier) | Access::Phone(tier) => {
                rec.with_detail("required", tier.as_str())
            }
            Access::Open | Access::CliRead => rec,
        }
    }
}

impl Caller {
    /// Whether this caller may run `op` (see [`App::authorize`], which also records a refusal).
    fn may(&self, op: Op) -> Result<(), AppError> {
        let required = match op.access() {
            Access::Open => return Ok(()),
            Access::Device(tier) => tier,
            Access::Phone(_) if matches!(self.who(), Who::Cli) => return Err(AppError::NotPaired),
            Access::Phone(tier) => tier,
            Access::CliRead => Tier::Read,
        };
        match self.who() {
            // The machine's own user, and on a member the lead, which checked its own device's
            // tier against this same registry before it relayed (a member's own rules — `[crew]
            // tools`, its caps — still apply in the operation).
            Who::Cli | Who::Relay { .. } => Ok(()),
            // A lead's device at a deputy's standby door changes no devices there (SPEC §13).
            Who::Deputy { .. } if op.changes_devices() => Err(AppError::StandbyDevices),
            Who::Device { tier, .. } | Who::Deputy { tier, .. } if tier.allows(required) => Ok(()),
            Who::Device { .. } | Who::Deputy { .. } => Err(AppError::InsufficientTier),
            Who::LocalSecret if op.access() == Access::CliRead => Ok(()),
            Who::LocalSecret | Who::Open => Err(AppError::NotPaired),
        }
    }
}

impl App {
    /// Whether `caller` may run `op` now, without a line for a refusal (what a list of the
    /// operations a device may use shows, such as MCP's `tools/list`).
    pub fn allows(&self, caller: &Caller, op: Op) -> bool {
        self.admits(caller, op).is_ok()
    }

    /// [`Caller::may`], then the tier the device holds now, and what a member declined.
    fn admits(&self, caller: &Caller, op: Op) -> Result<(), AppError> {
        if matches!(caller.who(), Who::Relay { .. })
            && op.declinable().is_some()
            && !self.crew.tools
        {
            // This member declined it in its hello; a lead that asks anyway is refused the same
            // way it would have been refused before relaying.
            return Err(AppError::CapabilityMissing);
        }
        caller.may(op).and_then(|()| match op.access() {
            // The tier the device holds now: one lowered or revoked since the request began
            // counts (the request's own snapshot was taken when it started).
            Access::Device(tier) | Access::Phone(tier) => caller.still_allowed(self, tier),
            Access::Open | Access::CliRead => Ok(()),
        })
    }

    /// Refuses `op` unless `caller` holds what the registry requires of it, with a
    /// `security.denied` line (rate-limited like every denial). An adapter gates a request before
    /// it reaches here; this is the same rule again where the operation runs, so no adapter can
    /// leave it out.
    pub fn authorize(&self, caller: &Caller, op: Op) -> Result<(), AppError> {
        self.admits(caller, op).inspect_err(|e| {
            if matches!(e, AppError::CapabilityMissing) {
                return;
            }
            let rec = op.denial(caller.record(self, AuditEventKind::SecurityDenied));
            self.deny(caller.source(), &e.to_string(), rec);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use collie_actors::pairing::TokenHash;

    fn device(tier: Tier) -> Caller {
        let token = TokenHash::from_bytes([7; 32]);
        Caller::new(Who::Device {
            label: "phone".into(),
            tier,
            id: token.device_id(),
            token,
        })
    }

    #[test]
    fn a_device_needs_the_tier_the_registry_names() {
        assert!(device(Tier::Read).may(Op::PaneList).is_ok());
        assert!(matches!(
            device(Tier::Read).may(Op::PaneInput),
            Err(AppError::InsufficientTier)
        ));
        assert!(matches!(
            device(Tier::Files).may(Op::PaneCreate),
            Err(AppError::InsufficientTier)
        ));
        assert!(device(Tier::Files).may(Op::Upload).is_ok());
        assert!(device(Tier::Full).may(Op::PaneClose).is_ok());
    }

    #[test]
    fn the_local_secret_reads_only_what_the_cli_reads() {
        let local = Caller::new(Who::LocalSecret);
        assert!(local.may(Op::PaneSnapshot).is_ok());
        assert!(matches!(local.may(Op::PaneInput), Err(AppError::NotPaired)));
        assert!(matches!(local.may(Op::Notices), Err(AppError::NotPaired)));
        assert!(matches!(
            Caller::new(Who::Open).may(Op::PaneList),
            Err(AppError::NotPaired)
        ));
        assert!(Caller::new(Who::Open).may(Op::Health).is_ok());
        assert!(Caller::cli().may(Op::PaneInput).is_ok());
    }

    #[test]
    fn every_write_to_a_pane_needs_full() {
        for op in [Op::PaneInput, Op::PaneCreate, Op::PaneRename, Op::PaneClose] {
            assert_eq!(op.access(), Access::Device(Tier::Full), "{op:?}");
        }
    }

    #[test]
    fn the_tool_registry_is_part_of_the_one_registry() {
        for name in ToolName::ALL {
            assert_eq!(
                Op::Tool(name).access(),
                Access::Device(name.spec().tier),
                "{name}"
            );
            assert_eq!(Op::Tool(name).declinable(), Some(Capability::Tools));
        }
        let reader = device(Tier::Read);
        assert!(reader.may(Op::Tool(ToolName::ReadFile)).is_ok());
        assert!(matches!(
            reader.may(Op::Tool(ToolName::WriteFile)),
            Err(AppError::InsufficientTier)
        ));
    }

    #[test]
    fn what_only_a_phone_asks_for_refuses_the_cli() {
        for op in [Op::CommandRun, Op::CardAnswer, Op::DurableWrite] {
            assert!(
                matches!(Caller::cli().may(op), Err(AppError::NotPaired)),
                "{op:?}"
            );
            assert!(device(Tier::Full).may(op).is_ok(), "{op:?}");
            assert!(matches!(
                device(Tier::Files).may(op),
                Err(AppError::InsufficientTier)
            ));
            let relayed = Caller::new(Who::Relay {
                lead: "lead".into(),
                device: "phone".into(),
                device_id: None,
                deputy: None,
            });
            assert!(relayed.may(op).is_ok(), "{op:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_operation_and_the_tier_it_needs() {
        let rec = || AuditRecord::new(AuditEventKind::SecurityDenied, "box");
        let line = serde_json::to_value(Op::Tool(ToolName::EditBlock).denial(rec())).unwrap();
        assert_eq!(line["detail"]["tool"], "edit_block");
        assert_eq!(line["detail"]["required"], "files");
        let line = serde_json::to_value(Op::PaneInput.denial(rec())).unwrap();
        assert_eq!(line["detail"]["operation"], "PaneInput");
        assert_eq!(line["detail"]["required"], "full");
    }
}
