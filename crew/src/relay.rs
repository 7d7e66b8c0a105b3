//! The relay messages between a lead and a member (SPEC §8).
//!
//! The lead turns a phone request on a member's pane into a [`RelayRequest`] and sends it on a QUIC
//! stream of its own ([`client`]; decision 0011); the member runs it against its own panes (masking
//! as it would for a phone, [`server`]), and answers with one [`RelayResponse`] carrying the same
//! `id`, the first frame on that stream. A stream subscription is answered once
//! ([`RelayOk::Subscribed`]) and then followed, on the same stream, by [`StreamEvent`]s tagged with
//! the subscription's `id` until one side ends it. All frames a member sends are [`MemberMessage`]s.
//! An answer must fit its request ([`RelayKind::fits`]); the lead treats any other as unreadable.
//!
//! Errors travel as [`RelayError`], whose `Display` strings are the exact ones of SPEC §3.2, so the
//! lead can hand them to the phone unchanged.
//!
//! Kinds and errors end in a `#[serde(other)] Unknown` variant, and `kind`/`result` are the last
//! fields of their messages, so a newer peer's additions decode as `Unknown` (see `crate::wire`).

mod attrs;
mod bytes;
mod capability;
pub mod cards;
pub mod chat;
pub mod client;
pub mod deputy;
pub mod durable;
pub mod json;
pub mod ledger;
mod request;
pub mod server;
mod walky_card;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use attrs::{
    runs_fit, Colour, ColourEvent, ColourSnapshot, EventAttrs, Run, ScreenAttrs, Style, MAX_STYLES,
};
pub use capability::requires;
pub use cards::{Card, CardList};
pub use chat::Chat;
pub use durable::{DurableList, DurableWrite};
pub use json::Json;
pub use walky_card::{WalkyCard, WalkyKind};

/// A request the lead relays to a member.
///
/// `device_id` came after the others (SPEC §10.1: what a device owns on a member is bound to its
/// identity, never its label), so it follows `kind`: an older member ignores it with the rest of
/// the frame, and a newer member reading an older lead's request finds it absent (see
/// `request.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelayRequest {
    /// Assigned by the lead's [`client::RelayClient`]; unique on the link, never reused.
    pub id: u64,
    /// The label of the phone the request comes from, for the member's audit line.
    pub device: String,
    /// The lead's request id for this phone request, so both audit logs can be matched.
    pub request_id: String,
    /// What to do. So that a kind from a newer lead decodes as [`RelayKind::Unknown`], nothing
    /// the older fields need follows it.
    pub kind: RelayKind,
    /// The identity of the phone's device on the lead (a digest of its token's hash: never the
    /// token, never the hash), which the member binds the device's sessions and confirm tokens
    /// to. `None` for the lead's own CLI, and from a lead that does not send it.
    pub device_id: Option<String>,
}

/// What a relayed request asks of the member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RelayKind {
    /// The member's panes (`GET /api/panes`, this machine's part).
    PaneList,
    /// A masked screen snapshot (`GET /api/panes/{m}/{p}[?scrollback=N]`).
    Snapshot {
        /// Pane id.
        pane: String,
        /// Scrollback lines wanted, if any.
        scrollback: Option<u32>,
    },
    /// Start a stream of screen changes; answered [`RelayOk::Subscribed`], then [`StreamEvent`]s
    /// whose `stream` is this request's id.
    Subscribe {
        /// Pane id.
        pane: String,
        /// The last `seq` the phone saw (`Last-Event-ID`), if it is resuming.
        last_seq: Option<u64>,
    },
    /// End a stream started by the request `stream`.
    Unsubscribe {
        /// The id of the `Subscribe` request.
        stream: u64,
    },
    /// Type into a pane: `text` first, then `keys` in order (SPEC §3.2).
    Input {
        /// Pane id.
        pane: String,
        /// Text typed literally.
        text: Option<String>,
        /// Keys from the fixed list (`Enter`, `C-c`, …).
        keys: Vec<String>,
    },
    /// Open a hosted pane.
    Create {
        /// Name for the pane.
        name: Option<String>,
        /// Starter to run in it.
        starter: Option<String>,
    },
    /// Rename a pane.
    Rename {
        /// Pane id.
        pane: String,
        /// The new name.
        name: String,
    },
    /// Close a pane.
    Close {
        /// Pane id.
        pane: String,
    },
    /// Deliver a walky message to one of the member's panes (SPEC §9); answered
    /// [`RelayOk::Walky`] with the outcome.
    Walky {
        /// The message as the lead forwards it: signed, and attested unless the lead wrote it.
        forwarded: Box<crate::walky::Forwarded>,
    },
    /// The walky card of message `id` if the member's log holds it (for the phone).
    WalkyCard {
        /// The message id.
        id: String,
    },
    /// The member's waiting cards and receipts (SPEC §10.1); answered [`RelayOk::Cards`].
    Cards,
    /// A device's tap on one of the member's cards, relayed by the lead (audited on both).
    CardAnswer {
        /// The card's id.
        id: String,
        /// The option chosen.
        option: String,
        /// The `shown` hash the phone drew.
        shown: String,
        /// The token of a first tap on "Always allow", for the second.
        confirm: Option<String>,
    },
    /// Start a stream of the member's card changes; answered [`RelayOk::Subscribed`], then
    /// [`MemberMessage::CardChange`]s.
    CardsWatch,
    /// The member's durable agents and the receipts of their writes (SPEC §10.3); answered
    /// [`RelayOk::Durable`].
    Durable,
    /// A device's write to one of the member's durable agents, relayed by the lead (audited on
    /// both); answered [`RelayOk::DurableWrite`].
    DurableWrite {
        /// The agent's name.
        agent: String,
        /// The conversation.
        conversation: String,
        /// The write.
        write: DurableWrite,
    },
    /// A device's call of one of the member's tools (SPEC §11), relayed by the lead after its own
    /// tier gate; answered [`RelayOk::Tool`]. The member validates, audits and runs it as for a
    /// local caller.
    Tool {
        /// The tool's registry name (`read_file`, …).
        tool: String,
        /// The arguments (a JSON object), without `machine`.
        args: Json,
    },
    /// An upload into a member pane's folder (SPEC §11), relayed by the lead after its own tier
    /// gate and size cap; answered [`RelayOk::Stored`]. The member checks the size again
    /// ([`MAX_BLOB`]) and writes, audits and keeps it as for a local upload.
    Blob {
        /// Pane id.
        pane: String,
        /// The file's name (one plain component; the member checks it).
        name: String,
        /// The file's bytes, at most [`MAX_BLOB`] (a frame's 16 MiB limit bounds what is
        /// allocated before that check).
        #[serde(with = "bytes")]
        bytes: Vec<u8>,
    },
    /// The member's sent log (SPEC §11); answered [`RelayOk::SentLines`], each line masked by the
    /// member (the lead masks again).
    SentList,
    /// Discard line `id` of the member's sent log; answered [`RelayOk::Discarded`].
    SentDiscard {
        /// The line's number on the member.
        id: u64,
    },
    /// Clear the member's sent log; answered [`RelayOk::Discarded`].
    SentClear,
    /// A one-shot command in a fresh shell on the member (SPEC §11), under the member's own
    /// `[phone] run`; answered [`RelayOk::Created`] with the pane it runs in.
    Command {
        /// The line, as typed.
        command: String,
    },
    /// The member's applied starters (SPEC §12), for the phone's New page; answered
    /// [`RelayOk::Starters`]. Starting one is a [`RelayKind::Create`] naming it.
    Starters,
    /// The folder names under the member's home folder (SPEC §11, browsing for the New page),
    /// by the member's own rules; answered [`RelayOk::Folders`]. Capability `browse`.
    Browse {
        /// The folder (`~/…` or absolute); `None` is the home folder.
        path: Option<String>,
    },
    /// Open a hosted pane in a folder of the member's (SPEC §12). A kind of its own rather than a
    /// field on [`RelayKind::Create`]: bincode cannot skip a field an older member does not know,
    /// so the lead sends this only to a member that declared `pane_folder` (decision 0040).
    CreateIn {
        /// Name for the pane.
        name: Option<String>,
        /// Starter to run in it.
        starter: Option<String>,
        /// The folder (`~/…` or absolute), checked against the member's own workspaces.
        folder: String,
    },
    /// The tmux sessions the member mirrors (a new window opens in one of them); answered
    /// [`RelayOk::Sessions`]. Capability `tmux_window` (decision 0042).
    Sessions,
    /// Open a new window in one of the member's mirrored tmux sessions, running a starter of the
    /// member's or its user's shell (SPEC §12); answered [`RelayOk::Created`]. Capability
    /// `tmux_window`: an older member never declares it, so the lead never sends this to one.
    CreateWindow {
        /// The window's name.
        name: Option<String>,
        /// Starter to run in it; `None` is the user's shell.
        starter: Option<String>,
        /// The folder (`~/…` or absolute), checked against the member's own workspaces.
        folder: Option<String>,
        /// The session, as [`TmuxSession::session`] names it (`t<socket index>:<name>`).
        session: String,
    },
    /// A masked screen with its colours (SPEC §5), answered [`RelayOk::SnapshotColour`]. A kind of
    /// its own, sent only to a member that declared `pane_colour` (decision 0043); an older
    /// member's panes are read with [`RelayKind::Snapshot`] and come without colours.
    SnapshotColour {
        /// Pane id.
        pane: String,
        /// Scrollback lines wanted, if any.
        scrollback: Option<u32>,
    },
    /// Start a stream of screen changes with their colours: answered [`RelayOk::Subscribed`], then
    /// [`MemberMessage::ColourEvent`]s. Capability `pane_colour`, like
    /// [`RelayKind::SnapshotColour`].
    SubscribeColour {
        /// Pane id.
        pane: String,
        /// The last `seq` the phone saw (`Last-Event-ID`), if it is resuming.
        last_seq: Option<u64>,
    },
    /// Open a hosted pane running a starter row a phone added on the lead (SPEC §12), answered
    /// [`RelayOk::Created`]. Capability `starter_rows`. The row's spec travels, never a command:
    /// the member resolves a template against its own applied starters and its own option table,
    /// checks the executable's hash, and applies its own `[phone] adds` / `free_text`.
    CreateRow {
        /// The row's name (what the member's `pane.create` line names).
        row: String,
        /// Name for the pane.
        name: Option<String>,
        /// What the row runs.
        spec: RowSpec,
        /// The folder (`~/…` or absolute), checked against the member's own workspaces.
        folder: Option<String>,
    },
    /// A pane's chat: the turns of the agent's session transcript after the cursor `after`
    /// (SPEC §3.3, §5); answered [`RelayOk::Chat`]. Capability `chat`.
    Chat {
        /// Pane id.
        pane: String,
        /// The cursor of the last answer (empty: the newest turns).
        after: String,
    },
    /// The lead's notice that the authorization of the device whose identity is `device_id`
    /// ended — revoked, expired or below `full` (SPEC §3.2): the member kills the sessions that
    /// device owns there and refuses its relayed tool calls from then on; answered
    /// [`RelayOk::Done`]. Capability `tools`: a member without tools has nothing of a device's to
    /// end.
    DeviceEnded {
        /// The device's identity, as [`RelayRequest::device_id`] carries it.
        device_id: String,
    },
    /// The lead names this member its deputy and hands it the lead's device registry as it is now
    /// (`Some`, on every change and in full when the member comes online), or tells it that it is
    /// no longer the deputy (`None`); answered [`RelayOk::Done`] once the member keeps it
    /// (SPEC §13). Capability `deputy`.
    Deputy {
        /// The registry, or `None`.
        copy: Option<Box<deputy::RegistryCopy>>,
    },
    /// The lead tells a member who the deputy is and where its door listens (`Some`, signed by
    /// the lead), or that there is none; answered [`RelayOk::Done`] once the member keeps it
    /// (SPEC §13). Capability `deputy`.
    DeputyNotice {
        /// The notice, or `None`.
        notice: Option<Box<deputy::DeputyNotice>>,
    },
    /// The lead asks its deputy for the audit lines it wrote standing in (`"via": "deputy"`),
    /// after line `after` of its log; answered [`RelayOk::DeputyLines`] (SPEC §13). Capability
    /// `deputy`.
    DeputyLines {
        /// The last `seq` the lead has.
        after: u64,
    },
    /// A kind this side does not know (sent by a newer peer); answered [`RelayError::UnknownKind`].
    #[serde(other)]
    Unknown,
}

impl RelayKind {
    /// Whether the request changes something on the member (audited on both sides).
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            RelayKind::Input { .. }
                | RelayKind::Create { .. }
                | RelayKind::Rename { .. }
                | RelayKind::Close { .. }
                | RelayKind::Walky { .. }
                | RelayKind::CardAnswer { .. }
                | RelayKind::DurableWrite { .. }
                | RelayKind::Tool { .. }
                | RelayKind::Blob { .. }
                | RelayKind::SentDiscard { .. }
                | RelayKind::SentClear
                | RelayKind::Command { .. }
                | RelayKind::CreateIn { .. }
                | RelayKind::CreateWindow { .. }
                | RelayKind::CreateRow { .. }
                | RelayKind::DeviceEnded { .. }
        )
    }

    /// Whether the request opens a stream (and so holds one of the link's subscription slots,
    /// [`client::Limits::max_streams`], while it runs).
    pub fn is_subscribe(&self) -> bool {
        matches!(
            self,
            RelayKind::Subscribe { .. } | RelayKind::SubscribeColour { .. } | RelayKind::CardsWatch
        )
    }

    /// Whether `ok` is an answer this kind of request can have (a `Snapshot` to a snapshot
    /// request, `Done` to an input, …); the lead treats any other answer as unreadable.
    pub fn fits(&self, ok: &RelayOk) -> bool {
        match self {
            RelayKind::PaneList => matches!(ok, RelayOk::PaneList(_)),
            RelayKind::Snapshot { .. } => matches!(ok, RelayOk::Snapshot(_)),
            RelayKind::SnapshotColour { .. } => matches!(ok, RelayOk::SnapshotColour(_)),
            RelayKind::Subscribe { .. }
            | RelayKind::SubscribeColour { .. }
            | RelayKind::CardsWatch => {
                matches!(ok, RelayOk::Subscribed)
            }
            RelayKind::Create { .. } => matches!(ok, RelayOk::Created(_)),
            RelayKind::Walky { .. } => matches!(ok, RelayOk::Walky(_)),
            RelayKind::WalkyCard { .. } => matches!(ok, RelayOk::WalkyCard(_)),
            RelayKind::Cards => matches!(ok, RelayOk::Cards(_)),
            RelayKind::CardAnswer { .. } => matches!(ok, RelayOk::CardAnswer(_)),
            RelayKind::Durable => matches!(ok, RelayOk::Durable(_)),
            RelayKind::DurableWrite { .. } => matches!(ok, RelayOk::DurableWrite(_)),
            RelayKind::Tool { .. } => matches!(ok, RelayOk::Tool(_)),
            RelayKind::Blob { .. } => matches!(ok, RelayOk::Stored(_)),
            RelayKind::SentList => matches!(ok, RelayOk::SentLines(_)),
            RelayKind::SentDiscard { .. } | RelayKind::SentClear => {
                matches!(ok, RelayOk::Discarded(_))
            }
            RelayKind::Starters => matches!(ok, RelayOk::Starters(_)),
            RelayKind::Command { .. }
            | RelayKind::CreateIn { .. }
            | RelayKind::CreateWindow { .. }
            | RelayKind::CreateRow { .. } => matches!(ok, RelayOk::Created(_)),
            RelayKind::Sessions => matches!(ok, RelayOk::Sessions(_)),
            RelayKind::Browse { .. } => matches!(ok, RelayOk::Folders(_)),
            RelayKind::Chat { .. } => matches!(ok, RelayOk::Chat(_)),
            RelayKind::Unsubscribe { .. }
            | RelayKind::Input { .. }
            | RelayKind::Rename { .. }
            | RelayKind::Close { .. }
            | RelayKind::DeviceEnded { .. }
            | RelayKind::DeputyNotice { .. }
            | RelayKind::Unknown => matches!(ok, RelayOk::Done),
            RelayKind::Deputy { .. } => matches!(ok, RelayOk::Done | RelayOk::DeputyDoor { .. }),
            RelayKind::DeputyLines { .. } => matches!(ok, RelayOk::DeputyLines { .. }),
        }
    }
}

/// The member's one answer to a [`RelayRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayResponse {
    /// The request's id.
    pub id: u64,
    /// The outcome. Last, so a newer member's additions decode as `Unknown`.
    pub result: Result<RelayOk, RelayError>,
}

/// A successful relay outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RelayOk {
    /// The member's panes.
    PaneList(Vec<PaneInfo>),
    /// A masked screen.
    Snapshot(PaneSnapshot),
    /// The stream is running; events follow with `stream` = the request's id.
    Subscribed,
    /// Done (unsubscribe, input, rename, close).
    Done,
    /// A pane was created.
    Created(PaneInfo),
    /// A walky message's outcome on the member.
    Walky(crate::walky::Outcome),
    /// A walky card, or `None` when the member's log does not hold the id.
    WalkyCard(Option<WalkyCard>),
    /// The waiting cards and receipts.
    Cards(CardList),
    /// What a relayed tap did.
    CardAnswer(CardAnswered),
    /// The member's durable agents and receipts.
    Durable(DurableList),
    /// A durable write was taken; a starter names the conversation it made.
    DurableWrite(Option<String>),
    /// A tool's answer (a JSON object), already masked by the member (the lead masks again).
    Tool(Json),
    /// Where an upload landed on the member.
    Stored(Stored),
    /// The member's sent log.
    SentLines(SentLines),
    /// How many sent lines a discard or a clear removed.
    Discarded(u64),
    /// The member's applied starters.
    Starters(Vec<StarterInfo>),
    /// The folder names of a [`RelayKind::Browse`].
    Folders(Folders),
    /// The member's mirrored tmux sessions ([`RelayKind::Sessions`]).
    Sessions(Vec<TmuxSession>),
    /// A masked screen with its colours, the answer to [`RelayKind::SnapshotColour`].
    SnapshotColour(ColourSnapshot),
    /// A pane's chat, already masked by the member (the lead masks again).
    Chat(Chat),
    /// The deputy keeps the copy and its door listens on `port` (of the address the lead sees it
    /// at), the answer to [`RelayKind::Deputy`] with a copy.
    DeputyDoor {
        /// The door's UDP port.
        port: u16,
        /// The URL phones open on the deputy (its public URL), which the lead tells its phones.
        url: String,
    },
    /// The deputy's stand-in lines after the asked `seq`, in order (each a whole JSON line of its
    /// log), and the last `seq` it looked at: the lead asks again from there until none come.
    DeputyLines {
        /// The lines.
        lines: Vec<String>,
        /// The last `seq` looked at.
        scanned: u64,
    },
    /// An outcome this side does not know (from a newer member); the lead treats it as unreadable.
    #[serde(other)]
    Unknown,
}

/// What a relayed tap on a card did (SPEC §10.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CardAnswered {
    /// A first tap on "Always allow": answer again with this token.
    Confirm(String),
    /// Answered; whether the asker was still waiting for it.
    Done {
        /// Whether the decision reached the waiting asker.
        delivered: bool,
    },
}

/// A relay failure. `Display` is the exact phone-facing string of SPEC §3.2.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// Unknown pane id on the member (404).
    #[error("no such pane")]
    NoSuchPane,
    /// A pane or session cap is reached, or the link's request or stream limit (503).
    #[error("resource limit")]
    ResourceLimit,
    /// The member could not append its audit line, so it refused the write (503).
    #[error("audit unavailable")]
    AuditUnavailable,
    /// The member did not declare the capability the request needs (501).
    #[error("capability missing")]
    CapabilityMissing,
    /// Bad input; the message says what to change (`text too long`, `unknown key: X`) (400).
    #[error("{0}")]
    BadInput(String),
    /// The member's actor serving the request failed mid-request (503).
    #[error("restarting, try again")]
    Restarting,
    /// The member does not know the request kind (it is older than the lead).
    #[error("unknown request kind")]
    UnknownKind,
    /// Something inside the member failed that is not the caller's fault; the detail stays in the
    /// member's log (500).
    #[error("internal error")]
    Internal,
    /// No answer in time, or the link is down (502; set by the lead, not sent by members).
    #[error("member unreachable")]
    Unreachable,
    /// The member's answer could not be decoded (502; set by the lead).
    #[error("member response unreadable")]
    Unreadable,
    // New variants go here, after the old ones: the binary codec numbers variants in order.
    /// A card answer's `shown` hash is not the card's (409).
    #[error("card changed")]
    CardChanged,
    /// The card is not waiting on the member (410).
    #[error("card closed")]
    CardClosed,
    /// A screen prompt's lines left the member's screen before the tap could be typed (409).
    #[error("The screen changed before that could be sent")]
    ScreenChanged,
    /// The member's durable agent refused the write (its reason; 409).
    #[error("{0}")]
    DurableRefused(String),
    /// The member's durable agent could not be reached (502).
    #[error("durable agent unreachable")]
    DurableUnreachable,
    /// A tool refused the call: the HTTP status and the error string the member's tool answered
    /// (the lead maps it back to its own fixed strings where it has one).
    #[error("{error}")]
    Tool {
        /// The status (400, 403, 404, 409, 503).
        status: u16,
        /// The error string.
        error: String,
    },
    /// The member's sent log holds no line of that number (404).
    #[error("no such line")]
    NoSuchLine,
    /// The member's configuration refuses the request (403; the lead passes on only the
    /// refusals it knows, such as `[phone] run = false`).
    #[error("{0}")]
    Forbidden(String),
    /// An error this side does not know (from a newer member); shown as unreadable.
    #[serde(other)]
    #[error("member response unreadable")]
    Unknown,
}

/// The largest upload a [`RelayKind::Blob`] carries (10 MiB, the phone API's own cap), so the
/// request fits a frame ([`crate::wire::MAX_FRAME`], 16 MiB) with room for the names.
pub const MAX_BLOB: usize = 10 << 20;

/// Where a relayed upload landed on the member (the shape of `POST /api/blobs`'s answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The blob's id on the member.
    pub id: String,
    /// The file's absolute path on the member, masked.
    pub path: String,
    /// The name it got.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// One applied starter as the phone's New page lists it (SPEC §12): what it is called, the agent
/// it runs, and whether it skips the agent's permission prompts. Never its path, hash or
/// arguments — those stay on the machine that pinned them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterInfo {
    /// Its name.
    pub name: String,
    /// `claude`, `codex`, or none.
    pub agent: Option<String>,
    /// It skips the agent's permission prompts (the "No prompts" badge).
    pub no_prompts: bool,
}

/// What a starter row added from a phone runs (SPEC §12): a template (an agent and its option
/// fields, whose flags the running machine takes from its own table) or a hand-typed line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowSpec {
    /// The machine's applied starter of `agent`, with the option fields' flags.
    Template {
        /// `claude` or `codex`.
        agent: String,
        /// `--model`'s value, if any.
        model: Option<String>,
        /// Skip the agent's permission prompts.
        no_prompts: bool,
    },
    /// A hand-typed line, run in a fresh shell (`[phone] free_text`).
    Line {
        /// The line.
        line: String,
    },
}

/// Folder names under a home folder (the shape of `GET /api/browse/{m}`'s answer, without the
/// machine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folders {
    /// The folder listed, resolved and masked.
    pub path: String,
    /// Its folders' names, sorted, masked; at most [`MAX_FOLDERS`].
    pub folders: Vec<String>,
    /// Whether it holds more folders than are listed.
    pub truncated: bool,
}

/// One tmux session a bridge mirrors, as the phone's New page lists it (`GET /api/sessions/{m}`):
/// where a new window can open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmuxSession {
    /// What a create names: `t<socket index>:<session name>` — the socket index of the pane ids
    /// (`t<i>-<n>`: 0 is the default server, then the configured sockets in order).
    pub session: String,
    /// The session's name, masked.
    pub name: String,
    /// The tmux server's index (the `<i>` of `session`).
    pub socket: u32,
}

/// The most folder names a browse answers (SPEC §11: "at most 200 lines").
pub const MAX_FOLDERS: usize = 200;

/// A member's sent log (the shape of its part of `GET /api/sent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentLines {
    /// Whether the member records lines (its own `COLLIE_SENT`).
    pub recording: bool,
    /// Its lines, newest first, masked by the member.
    pub lines: Vec<SentEntry>,
}

/// One line of a member's sent log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentEntry {
    /// Its number on the member (what a discard names).
    pub id: u64,
    /// When (RFC 3339).
    pub ts: String,
    /// The pane id, or `command` for a one-shot command.
    pub pane: String,
    /// The line, masked.
    pub line: String,
}

/// A change to a streamed screen (SPEC §3.2 stream events), already masked by the member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEvent {
    /// The id of the `Subscribe` request this stream belongs to.
    pub stream: u64,
    /// The screen's change counter.
    pub seq: u64,
    /// Cursor position.
    pub cursor: Cursor,
    /// Screen width.
    pub cols: u16,
    /// Screen height.
    pub height: u16,
    /// Whether `rows` holds every row (the first event, a resize, a resync) rather than changes.
    pub full: bool,
    /// Changed rows (all rows when `full`), row index → whole line.
    pub rows: BTreeMap<u16, String>,
}

/// The end of a stream, sent by the member (the pane closed, or it cannot serve it any longer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEnd {
    /// The id of the `Subscribe` request.
    pub stream: u64,
    /// Why, if it is an error.
    pub error: Option<RelayError>,
}

/// Every frame a member sends on its relay stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum MemberMessage {
    /// The answer to a request.
    Response(RelayResponse),
    /// A screen change on a stream.
    Event(StreamEvent),
    /// A stream ended.
    End(StreamEnd),
    /// One card changed (opened, answered or closed), on a [`RelayKind::CardsWatch`] stream.
    CardChange(Card),
    /// A screen change with its colours, on a [`RelayKind::SubscribeColour`] stream.
    ColourEvent(ColourEvent),
    /// A message this side does not know (from a newer member); ignored.
    #[serde(other)]
    Unknown,
}

/// One pane in a list, as the member reports it (the shape of `GET /api/panes` entries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneInfo {
    /// The member's machine name.
    pub machine: String,
    /// Pane id (`t0-3`, `p1`).
    pub pane: String,
    /// 4-character instance token.
    pub token: String,
    /// User-given name, masked.
    pub name: String,
    /// `tmux` or `pty`.
    pub backend: String,
    /// Whether the program still runs.
    pub alive: bool,
    /// Width.
    pub cols: u16,
    /// Height.
    pub rows: u16,
    /// RFC 3339 time of the last output.
    pub last_activity: Option<String>,
    /// Best-effort password prompt detection.
    pub asking_password: bool,
    /// The pane's foreground process is a shell: walky messages to it are refused (SPEC §9).
    #[serde(default)]
    pub at_shell: bool,
    /// What it is doing, at a glance (SPEC §3.2): decided by the machine the pane is on (a member
    /// that predates it reports `idle`).
    #[serde(default)]
    pub activity: Activity,
}

/// What a pane's program is doing, as the pane list shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activity {
    /// A card (a held permission or a recognized prompt on its screen) waits for a person.
    Waiting,
    /// Its screen changed in the last few seconds.
    Working,
    /// Neither.
    #[default]
    Idle,
}

/// Cursor position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Column, 0-based.
    pub x: u16,
    /// Row, 0-based.
    pub y: u16,
}

/// A masked screen (the shape of `GET /api/panes/{m}/{p}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneSnapshot {
    /// The member's machine name.
    pub machine: String,
    /// Pane id.
    pub pane: String,
    /// Instance token.
    pub token: String,
    /// Name, masked.
    pub name: String,
    /// Width.
    pub cols: u16,
    /// Height.
    pub rows: u16,
    /// Cursor.
    pub cursor: Cursor,
    /// Visible rows, masked.
    pub lines: Vec<String>,
    /// Scrollback lines, oldest first, masked.
    pub scrollback: Vec<String>,
    /// Change counter.
    pub seq: u64,
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;
