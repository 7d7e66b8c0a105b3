//! The control socket's request and reply types.

use serde::{Deserialize, Serialize};

use crate::app::walky::sender::PaneEnv;

/// One CLI request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// Health-like status for `collie doctor`.
    Status,
    /// The audit log as the bridge knows it: anchor, length, recorded breaks (for `collie audit
    /// verify` and `collie doctor`).
    AuditStatus,
    /// The heads of this member's audit log its lead keeps, then the log as the bridge knows it
    /// (`collie audit verify --witnessed`).
    AuditWitnessed,
    /// Mark a recorded audit break acknowledged.
    AuditAcknowledge {
        /// The break's `seq`.
        seq: u64,
    },
    /// A new pairing code.
    Pair {
        /// `read|files|full`.
        tier: String,
        /// Optional DUR for the device's expiry.
        expires: Option<String>,
    },
    /// All devices.
    DevicesList,
    /// The starter rows phones added (`collie show`).
    StarterRows,
    /// Revoke one device.
    DevicesRevoke {
        /// Its label.
        label: String,
    },
    /// Expire a device DUR from now.
    DevicesSetExpiry {
        /// Its label.
        label: String,
        /// DUR.
        dur: String,
    },
    /// Remove a device's expiry.
    DevicesClearExpiry {
        /// Its label.
        label: String,
    },
    /// Change a device's tier.
    DevicesSetTier {
        /// Its label.
        label: String,
        /// `read|files|full`.
        tier: String,
    },
    /// All panes.
    PanesList,
    /// A new hosted pane.
    PanesNew {
        /// Its name.
        name: Option<String>,
        /// The command (empty = the user's shell).
        command: Vec<String>,
        /// The folder it starts in (absolute or `~/…`, inside a workspace); `None`: home.
        #[serde(default)]
        folder: Option<String>,
        /// A mirrored tmux session (`t<i>:<name>`) to open it in as a new window, instead of a
        /// hosted pane.
        #[serde(default)]
        session: Option<String>,
    },
    /// The tmux sessions this bridge mirrors (where `PanesNew { session }` can open a window).
    PanesSessions,
    /// A pane's screen.
    PanesRead {
        /// Pane id (`local/` prefix allowed).
        pane: String,
        /// Scrollback lines to include.
        scrollback: usize,
    },
    /// Type text (and Enter).
    PanesSend {
        /// Pane id.
        pane: String,
        /// Text typed literally.
        text: String,
        /// Press Enter after it.
        enter: bool,
    },
    /// Press named keys.
    PanesKeys {
        /// Pane id.
        pane: String,
        /// Key names.
        keys: Vec<String>,
    },
    /// Rename a pane.
    PanesRename {
        /// Pane id.
        pane: String,
        /// The new name.
        name: String,
    },
    /// Close a pane.
    PanesClose {
        /// Pane id.
        pane: String,
    },
    /// Make this bridge a crew lead.
    CrewInit,
    /// A one-time crew invite.
    CrewInvite {
        /// How long it is valid (a DUR: `10m`, `2h`, `1d`; at most `7d`; default 10 minutes).
        expires: Option<String>,
        /// The address members dial (`HOST:PORT`), if not the lead's own.
        address: Option<String>,
    },
    /// Join a crew.
    CrewJoin {
        /// The invite string.
        invite: String,
        /// The name to ask for.
        name: Option<String>,
    },
    /// The crew as this bridge sees it.
    CrewStatus,
    /// Remove a member.
    CrewRemove {
        /// Its name.
        name: String,
    },
    /// Name a member the deputy (`Some`), or no one.
    CrewDeputy {
        /// The member.
        name: Option<String>,
    },
    /// Send a walky message from the pane the CLI runs in.
    WalkySend {
        /// The sender's pane environment.
        from: PaneEnv,
        /// `pane#token` or `machine/pane#token`.
        to: String,
        /// The body (at most 16 KiB).
        body: String,
        /// Wait for the result (up to 10 s) rather than return once the message left.
        wait: bool,
    },
    /// The messages received by this machine's panes (by the sender's pane only, if it is in one).
    WalkyInbox {
        /// The asking pane's environment.
        from: PaneEnv,
        /// One message's id, for its body.
        id: Option<String>,
    },
    /// Addressable panes, here and (in a crew) on the other machines.
    WalkyWho,
    /// This machine's walky log.
    WalkyLog,
    /// The waiting cards and the last receipts (reading only: the CLI never answers a card).
    Cards,
    /// This machine's durable agents as the bridge sees them (reading only).
    Durable,
    /// Read `sources.json` again (after `collie durable attach|detach` changed it).
    DurableReload,
    /// This machine's sent log (SPEC §11).
    SentList,
    /// Discard line `id` of this machine's sent log.
    SentDiscard {
        /// The line's number.
        id: u64,
    },
    /// Discard this machine's whole sent log.
    SentClear,
    /// `collie apply` replaced the applied configuration: audit it (`config.applied`). The
    /// running bridge keeps the configuration it started with until it is restarted.
    ConfigApplied {
        /// What was applied.
        snapshot: Box<crate::applied::Snapshot>,
        /// How many differences it made.
        changes: u64,
    },
    /// `collie hooks install|uninstall` changed an agent's settings file: audit it
    /// (`hooks.installed`).
    HooksChanged {
        /// What changed (never [`ChangeKind::Unchanged`](crate::agent_hooks::ChangeKind)).
        change: crate::agent_hooks::Change,
    },
    /// Stop as on SIGTERM and execute this binary again with the same arguments on the same port
    /// (`collie restart`; decision 0077).
    Restart,
    /// Test-only (feature `fault-injection`): replay the last walky message this lead forwarded
    /// to member `to`.
    #[cfg(feature = "fault-injection")]
    TestReplayWalky {
        /// The member.
        to: String,
    },
    /// Test-only (feature `fault-injection`): make every durable write to the device table fail
    /// (`fail: true`) or work again (decision 0037).
    #[cfg(feature = "fault-injection")]
    TestFailDeviceWrites {
        /// Fail from now on, or stop failing.
        fail: bool,
    },
}

/// One reply: `{"ok":true,"data":…}` or `{"ok":false,"error":"…"}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    /// Whether the request succeeded.
    pub ok: bool,
    /// The answer's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reply {
    /// A success.
    pub fn ok(data: serde_json::Value) -> Reply {
        Reply {
            ok: true,
            data: Some(data),
            error: None,
        }
    }
    /// A failure.
    pub fn err(msg: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            data: None,
            error: Some(msg.into()),
        }
    }
}
