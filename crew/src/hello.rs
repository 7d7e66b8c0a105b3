//! The first exchange on a crew connection (SPEC §8), as pure state machines: no I/O, no clock.
//!
//! **Hello.** A member that already belongs to the crew dials the lead and sends a [`Hello`]: its
//! protocol version, bridge version, name, the [`Capability`]s it serves, and a proof that it knows
//! the crew secret. The lead ([`LeadHandshake`]) checks the proof (constant-time), the protocol and
//! the name it pinned for this certificate, records the member's capabilities and answers with its
//! own hello, which the member ([`MemberHandshake`]) checks the same way. Any failure is a
//! [`HandshakeError`] whose `Display` is the reason the caller closes the connection with.
//!
//! **Channel binding.** The proof is HMAC-SHA256 keyed with the crew secret over a role label and
//! the connection's TLS exporter value ([`EXPORTER_LABEL`], [`EXPORTER_CONTEXT`], [`EXPORTER_LEN`]
//! bytes — with quinn, `Connection::export_keying_material`). The exporter is unique to the TLS
//! session, so a proof seen on one connection is worthless on another; the role label makes the
//! lead's proof differ from the member's, so a peer cannot simply reflect the proof it received.
//!
//! **Join.** A machine that is not yet pinned opens with a [`JoinRequest`] (the invite's one-time
//! secret, the name it wants, its own pin) instead. [`validate_join`] checks it against the
//! [`Invite`] record the lead looked up and answers [`JoinAccepted`] (the crew secret) or a
//! [`JoinError`] with a message the member prints. The caller marks the invite used and pins the
//! member only on acceptance, so a refusal leaves no state behind.
//!
//! **Capabilities.** [`crate::relay::requires`] names the capability each relay request needs; the lead refuses
//! a request the member did not declare with `capability missing` ([`Peer::allows`], in `crate::relay`).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::RangeInclusive;
use std::time::SystemTime;

use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::pin::Pin;

/// The crew protocol version this build speaks best; sent in every hello.
pub const PROTOCOL: u16 = 2;

/// The oldest crew protocol version this build still speaks.
pub const MIN_PROTOCOL: u16 = 2;

/// The TLS exporter label of the hello proof (RFC 8446 §7.5; RFC 5705 asks for the `EXPORTER`
/// prefix).
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-collie-crew-hello";

/// The TLS exporter context of the hello proof.
pub const EXPORTER_CONTEXT: &[u8] = b"collie-crew/1 hello";

/// Bytes of exporter output the proof is computed over.
pub const EXPORTER_LEN: usize = 32;

/// The exporter value of one TLS connection, as the caller got it from the TLS library.
pub type Exporter = [u8; EXPORTER_LEN];

/// The longest machine name (names appear in URLs and audit lines).
pub const MAX_NAME_LEN: usize = crate::name::MAX_LEN;

/// The machine name the phone API uses for the bridge itself; no member may take it.
pub const RESERVED_NAME: &str = crate::name::RESERVED;

type HmacSha256 = Hmac<Sha256>;

/// What a bridge can serve to the lead's relay. Declared in the hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Capability {
    /// List panes.
    PaneList,
    /// Read a pane's screen and scrollback.
    PaneRead,
    /// Stream a pane's screen changes.
    PaneStream,
    /// Type into a pane.
    PaneInput,
    /// Open a hosted pane.
    PaneCreate,
    /// Rename a pane.
    PaneRename,
    /// Close a pane.
    PaneClose,
    /// Walky-talky cards (SPEC §9).
    Walky,
    /// Cards: listing them and answering them (SPEC §10.1).
    Cards,
    /// Durable agents: listing them and writing to them (SPEC §10.3).
    Durable,
    /// Tools under tiers: files, search and processes (SPEC §11).
    Tools,
    /// Uploads into a pane's folder (SPEC §11); left out with the tools (`[crew] tools = false`).
    Uploads,
    /// The sent log: listing, discarding and clearing it (SPEC §11).
    Sent,
    /// One-shot commands (SPEC §11), under the member's own `[phone] run`.
    Commands,
    /// Browsing folder names under home (SPEC §11); left out with the tools (`[crew] tools =
    /// false`).
    Browse,
    /// Opening a hosted pane in a chosen folder ([`crate::relay::RelayKind::CreateIn`]).
    PaneFolder,
    /// Listing the mirrored tmux sessions and opening a new window in one
    /// ([`crate::relay::RelayKind::Sessions`], [`crate::relay::RelayKind::CreateWindow`]).
    TmuxWindow,
    /// Colours of a pane's screen ([`crate::relay::RelayKind::SnapshotColour`],
    /// [`crate::relay::RelayKind::SubscribeColour`]; SPEC §5).
    PaneColour,
    /// Starting a starter row added from a phone ([`crate::relay::RelayKind::CreateRow`]).
    StarterRows,
    /// A pane's chat, read from its agent's transcript ([`crate::relay::RelayKind::Chat`]).
    Chat,
    /// Standing in for the lead as its deputy ([`crate::relay::RelayKind::Deputy`], SPEC §13).
    Deputy,
    /// A capability this build does not know (declared by a newer peer); never satisfies a request.
    #[serde(other)]
    Unknown,
}

impl Capability {
    /// Every capability this build knows (what a member running this build declares, unless its
    /// configuration turns some off).
    pub const ALL: [Capability; 21] = [
        Capability::PaneList,
        Capability::PaneRead,
        Capability::PaneStream,
        Capability::PaneInput,
        Capability::PaneCreate,
        Capability::PaneRename,
        Capability::PaneClose,
        Capability::Walky,
        Capability::Cards,
        Capability::Durable,
        Capability::Tools,
        Capability::Uploads,
        Capability::Sent,
        Capability::Commands,
        Capability::Browse,
        Capability::PaneFolder,
        Capability::TmuxWindow,
        Capability::PaneColour,
        Capability::StarterRows,
        Capability::Chat,
        Capability::Deputy,
    ];
}

/// A 32-byte secret whose `Debug` never prints it.
macro_rules! secret_type {
    ($(#[$doc:meta])* $name:ident, $shown:literal) => {
        $(#[$doc])*
        #[derive(Clone, Serialize, Deserialize)]
        pub struct $name([u8; 32]);

        impl $name {
            /// A fresh secret from the operating system's random source.
            pub fn random() -> Self {
                let mut bytes = [0u8; 32];
                rand::rngs::OsRng.fill_bytes(&mut bytes);
                Self(bytes)
            }

            /// The secret's bytes (to store it or put it in an invite).
            pub fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }
        }

        impl From<[u8; 32]> for $name {
            fn from(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }
        }

        impl PartialEq for $name {
            /// Constant-time.
            fn eq(&self, other: &Self) -> bool {
                self.0.ct_eq(&other.0).into()
            }
        }

        impl Eq for $name {}

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($shown)
            }
        }
    };
}

secret_type!(
    /// The crew secret: shared by the lead and every member, proves membership in the hello.
    CrewSecret,
    "(crew secret set)"
);

secret_type!(
    /// An invite's one-time join secret. The lead keeps only its hash ([`Invite::secret_hash`]).
    JoinSecret,
    "(join secret set)"
);

impl JoinSecret {
    /// SHA-256 of the secret: what the lead stores and looks invites up by.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0).into()
    }
}

/// Which side of the connection computes a proof; part of the MAC input so that the lead's and the
/// member's proofs differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The lead (the QUIC server).
    Lead,
    /// A member (the QUIC client).
    Member,
}

impl Role {
    fn label(self) -> &'static [u8] {
        match self {
            Role::Lead => b"collie-crew hello lead\0",
            Role::Member => b"collie-crew hello member\0",
        }
    }
}

/// The hello proof: HMAC-SHA256(crew secret, role label ‖ TLS exporter value).
pub fn proof(secret: &CrewSecret, role: Role, exporter: &Exporter) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes())
        .expect("HMAC accepts a key of any length, so a 32-byte key cannot fail");
    mac.update(role.label());
    mac.update(exporter);
    mac.finalize().into_bytes().into()
}

/// The first message of a bridge on an established crew connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Crew protocol version: the member sends the highest it speaks, the lead answers the one both
    /// will use. First, and never moved, so every version can read it.
    pub protocol: u16,
    /// The bridge's version (shown in `GET /api/machines`).
    pub bridge_version: String,
    /// The machine's name.
    pub name: String,
    /// What the sender serves.
    pub capabilities: BTreeSet<Capability>,
    /// [`proof`] for the sender's role over this connection's exporter value. Newer protocol
    /// versions append fields after this one.
    pub proof: [u8; 32],
}

/// A machine asking to join, sent instead of a [`Hello`] by a machine the lead has not pinned yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinRequest {
    /// The invite's one-time secret.
    pub join_secret: JoinSecret,
    /// The name the machine asks for.
    pub name: String,
    /// The pin of the certificate the machine presents (must be the connection's).
    pub member_pin: Pin,
}

/// The lead's acceptance: the member is pinned and now holds the crew secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinAccepted {
    /// The crew secret, for the member's hellos.
    pub crew_secret: CrewSecret,
    /// The lead's name.
    pub lead_name: String,
}

/// What a machine sends first on a crew connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Opening {
    /// A pinned member's hello.
    Hello(Hello),
    /// A new machine's join request.
    Join(JoinRequest),
    /// An opening this build does not know; the lead closes the connection.
    #[serde(other)]
    Unknown,
}

/// The lead's answer to a [`JoinRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum JoinReply {
    /// Joined.
    Accepted(JoinAccepted),
    /// Refused, with the reason to print.
    Refused(JoinError),
    /// A reply this build does not know.
    #[serde(other)]
    Unknown,
}

/// The lead's record of an invite it issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    /// SHA-256 of the join secret ([`JoinSecret::hash`]).
    pub secret_hash: [u8; 32],
    /// When the invite stops being valid.
    pub expires_at: SystemTime,
    /// Whether a machine already joined with it.
    pub used: bool,
}

impl Invite {
    /// The record of a fresh invite for `secret`.
    pub fn new(secret: &JoinSecret, expires_at: SystemTime) -> Self {
        Self {
            secret_hash: secret.hash(),
            expires_at,
            used: false,
        }
    }
}

/// Why the hello exchange failed; `Display` is the reason to close the connection with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The proof does not match this connection and the crew secret.
    #[error("hello proof invalid")]
    WrongProof,
    /// The peer's protocol version is outside what this bridge speaks.
    #[error("unsupported protocol version {theirs} (this bridge speaks {min} to {max})")]
    UnsupportedProtocol {
        /// The peer's version.
        theirs: u16,
        /// The oldest this side speaks.
        min: u16,
        /// The newest this side speaks.
        max: u16,
    },
    /// The member's hello names another machine than the one pinned for its certificate.
    #[error("hello from {got} on the certificate pinned for {expected}")]
    NameMismatch {
        /// The name pinned for the certificate.
        expected: String,
        /// The name in the hello.
        got: String,
    },
    /// A hello arrived when none was expected (a second one, or after a failure).
    #[error("unexpected hello")]
    Unexpected,
}

/// Why a join was refused; `Display` is the message the joining machine prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// No invite matches the secret.
    #[error(
        "wrong join secret: check the invite, or ask the lead for a new one (`collie crew invite`)"
    )]
    WrongSecret,
    /// The invite was already used by another machine.
    #[error("invite already used: ask the lead for a new one (`collie crew invite`)")]
    InviteUsed,
    /// The invite expired.
    #[error("invite expired: ask the lead for a new one (`collie crew invite`)")]
    InviteExpired,
    /// Another machine of the crew has the name.
    #[error("name {0} already taken in this crew: join with --name to choose another")]
    NameTaken(String),
    /// The name is not a valid machine name.
    #[error("invalid name {0:?}: use 1 to 32 of A-Z a-z 0-9 . _ - (not `local`, not only dots)")]
    InvalidName(String),
    /// The pin in the request is not the pin of the certificate on the connection.
    #[error("member pin does not match the certificate presented")]
    PinMismatch,
    /// A refusal this build does not know (from a newer lead).
    #[serde(other)]
    #[error("join refused")]
    Unknown,
}

/// Checks a machine name with the one grammar of [`crate::name`] (`[a-z0-9-]{1,32}`, not
/// `local`); a join request naming anything else is refused.
pub fn validate_name(name: &str) -> Result<(), JoinError> {
    crate::name::check(name).map_err(|_| JoinError::InvalidName(name.chars().take(40).collect()))
}

/// What the lead knows about the crew when it validates a join.
pub struct JoinContext<'a> {
    /// The invite whose hash matched the request's secret, if any.
    pub invite: Option<&'a Invite>,
    /// The pin of the certificate the joining machine presented on this connection.
    pub peer_pin: &'a Pin,
    /// The lead's own name.
    pub lead_name: &'a str,
    /// Whether a member already has a name.
    pub name_taken: &'a dyn Fn(&str) -> bool,
    /// The name the lead has pinned for `peer_pin`, if this machine is already a member.
    pub pinned_as: Option<&'a str>,
    /// The crew secret to hand over.
    pub crew_secret: &'a CrewSecret,
    /// The current time.
    pub now: SystemTime,
}

/// Validates a join request. Checks, in order: the secret (so a caller without it learns nothing
/// else), the invite's use and expiry, the pin, the name. On `Ok` the caller marks the invite used
/// and pins the member; on `Err` it changes nothing.
pub fn validate_join(
    request: &JoinRequest,
    ctx: &JoinContext<'_>,
) -> Result<JoinAccepted, JoinError> {
    let invite = ctx.invite.ok_or(JoinError::WrongSecret)?;
    let hash = request.join_secret.hash();
    if !bool::from(hash.ct_eq(&invite.secret_hash)) {
        return Err(JoinError::WrongSecret);
    }
    if invite.used {
        // The machine that used this invite may come back with it when the acceptance was lost in
        // flight (a restart or a dropped link before the reply arrived): it is pinned under the name
        // it asked for, so it gets the same answer again. Anyone else is refused.
        if request.member_pin == *ctx.peer_pin && ctx.pinned_as == Some(request.name.as_str()) {
            return Ok(JoinAccepted {
                crew_secret: ctx.crew_secret.clone(),
                lead_name: ctx.lead_name.to_owned(),
            });
        }
        return Err(JoinError::InviteUsed);
    }
    if ctx.now >= invite.expires_at {
        return Err(JoinError::InviteExpired);
    }
    if request.member_pin != *ctx.peer_pin {
        return Err(JoinError::PinMismatch);
    }
    validate_name(&request.name)?;
    if request.name == ctx.lead_name || (ctx.name_taken)(&request.name) {
        return Err(JoinError::NameTaken(request.name.clone()));
    }
    Ok(JoinAccepted {
        crew_secret: ctx.crew_secret.clone(),
        lead_name: ctx.lead_name.to_owned(),
    })
}

/// One side's settings for the hello exchange.
#[derive(Debug, Clone)]
pub struct HelloConfig {
    /// This machine's name.
    pub name: String,
    /// This bridge's version.
    pub bridge_version: String,
    /// What this bridge serves.
    pub capabilities: BTreeSet<Capability>,
    /// The crew secret.
    pub secret: CrewSecret,
    /// The protocol versions this side speaks ([`MIN_PROTOCOL`]`..=`[`PROTOCOL`] outside tests).
    pub protocols: RangeInclusive<u16>,
}

impl HelloConfig {
    /// Settings with every known capability and this build's protocol range.
    pub fn new(name: String, bridge_version: String, secret: CrewSecret) -> Self {
        Self {
            name,
            bridge_version,
            capabilities: Capability::ALL.into_iter().collect(),
            secret,
            protocols: MIN_PROTOCOL..=PROTOCOL,
        }
    }

    fn hello(&self, protocol: u16, role: Role, exporter: &Exporter) -> Hello {
        Hello {
            protocol,
            bridge_version: self.bridge_version.clone(),
            name: self.name.clone(),
            capabilities: self.capabilities.clone(),
            proof: proof(&self.secret, role, exporter),
        }
    }

    fn check(&self, hello: &Hello, role: Role, exporter: &Exporter) -> Result<(), HandshakeError> {
        let expected = proof(&self.secret, role, exporter);
        if !bool::from(expected.ct_eq(&hello.proof)) {
            return Err(HandshakeError::WrongProof);
        }
        Ok(())
    }

    fn unsupported(&self, theirs: u16) -> HandshakeError {
        HandshakeError::UnsupportedProtocol {
            theirs,
            min: *self.protocols.start(),
            max: *self.protocols.end(),
        }
    }
}

/// The other side of an established connection, as its hello declared it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The peer's name.
    pub name: String,
    /// The peer's bridge version.
    pub bridge_version: String,
    /// The protocol version both sides use.
    pub protocol: u16,
    /// The capabilities the peer declared (including `Unknown` if it declared ones this build does
    /// not know).
    pub capabilities: BTreeSet<Capability>,
}

#[derive(Debug)]
enum State {
    AwaitingHello,
    Established(Peer),
    Failed,
}

/// The lead's side: waits for the member's hello, answers with its own.
#[derive(Debug)]
pub struct LeadHandshake {
    config: HelloConfig,
    expected_name: String,
    exporter: Exporter,
    state: State,
}

impl LeadHandshake {
    /// A handshake on a connection whose certificate is pinned for the member `expected_name`.
    pub fn new(config: HelloConfig, expected_name: String, exporter: Exporter) -> Self {
        Self {
            config,
            expected_name,
            exporter,
            state: State::AwaitingHello,
        }
    }

    /// Checks the member's hello and returns the lead's answer to send. On `Err`, close the
    /// connection with the error's `Display` as the reason; the handshake stays failed.
    pub fn on_hello(&mut self, hello: &Hello) -> Result<Hello, HandshakeError> {
        if !matches!(self.state, State::AwaitingHello) {
            self.state = State::Failed;
            return Err(HandshakeError::Unexpected);
        }
        match self.verify(hello) {
            Ok((peer, reply)) => {
                self.state = State::Established(peer);
                Ok(reply)
            }
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    fn verify(&self, hello: &Hello) -> Result<(Peer, Hello), HandshakeError> {
        // The proof first: a peer without the crew secret learns nothing else.
        self.config.check(hello, Role::Member, &self.exporter)?;
        if hello.protocol < *self.config.protocols.start() {
            return Err(self.config.unsupported(hello.protocol));
        }
        let protocol = hello.protocol.min(*self.config.protocols.end());
        if hello.name != self.expected_name {
            return Err(HandshakeError::NameMismatch {
                expected: self.expected_name.clone(),
                got: hello.name.clone(),
            });
        }
        let peer = Peer {
            name: hello.name.clone(),
            bridge_version: hello.bridge_version.clone(),
            protocol,
            capabilities: hello.capabilities.clone(),
        };
        Ok((
            peer,
            self.config.hello(protocol, Role::Lead, &self.exporter),
        ))
    }

    /// The member, once its hello was accepted.
    pub fn member(&self) -> Option<&Peer> {
        match &self.state {
            State::Established(peer) => Some(peer),
            _ => None,
        }
    }
}

/// The member's side: sends its hello first, then checks the lead's.
#[derive(Debug)]
pub struct MemberHandshake {
    config: HelloConfig,
    exporter: Exporter,
    state: State,
}

impl MemberHandshake {
    /// A handshake on a connection with the given exporter value.
    pub fn new(config: HelloConfig, exporter: Exporter) -> Self {
        Self {
            config,
            exporter,
            state: State::AwaitingHello,
        }
    }

    /// The hello to send first, offering the newest protocol this side speaks.
    pub fn hello(&self) -> Hello {
        self.config
            .hello(*self.config.protocols.end(), Role::Member, &self.exporter)
    }

    /// Checks the lead's answer. On `Err`, close the connection with the error's `Display`.
    pub fn on_hello(&mut self, hello: &Hello) -> Result<&Peer, HandshakeError> {
        if !matches!(self.state, State::AwaitingHello) {
            self.state = State::Failed;
            return Err(HandshakeError::Unexpected);
        }
        if let Err(e) = self.verify(hello) {
            self.state = State::Failed;
            return Err(e);
        }
        self.state = State::Established(Peer {
            name: hello.name.clone(),
            bridge_version: hello.bridge_version.clone(),
            protocol: hello.protocol,
            capabilities: hello.capabilities.clone(),
        });
        self.lead().ok_or(HandshakeError::Unexpected)
    }

    fn verify(&self, hello: &Hello) -> Result<(), HandshakeError> {
        self.config.check(hello, Role::Lead, &self.exporter)?;
        if !self.config.protocols.contains(&hello.protocol) {
            return Err(self.config.unsupported(hello.protocol));
        }
        Ok(())
    }

    /// The lead, once its hello was accepted.
    pub fn lead(&self) -> Option<&Peer> {
        match &self.state {
            State::Established(peer) => Some(peer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
