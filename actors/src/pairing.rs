//! Pairing and devices (SPEC §4) and the tiers that bound them (§11).
//!
//! **What it owns.** The pending pairing code and the attempt limits (in memory only), the device
//! registry (mirrored in the store, which keeps each device's label, tier, token SHA-256, creation,
//! last-seen and expiry times), and the policy snapshot the HTTP layer authorizes every request
//! against.
//!
//! **Who sends it what.** `collie pair` (through the control socket) asks for a code; the phone's
//! `POST /api/pair` claims it; `collie devices …` and `DELETE /api/devices/{label}` revoke devices
//! and change expiry and tier; authorized requests report `last_seen`. The HTTP layer never asks the
//! actor to authorize: it reads the current [`PolicySnapshot`] from an `ArcSwap` the actor
//! publishes, so the hot path sends no message and never reads the store.
//!
//! **Pure cores.** Everything here but the actor shell is pure — no I/O, no clock: `now`
//! (`time::OffsetDateTime`, UTC) and the random generator are parameters.
//! [`PairingCore`] issues and checks codes, [`DeviceRegistry`] decides changes and returns the
//! store [`Write`] that makes each durable, and [`PolicySnapshot::build`] turns the registry into the
//! next snapshot. The actor runs: decide → write and flush the store → apply to the registry →
//! publish the snapshot, so a failed store write changes nothing (§11).
//!
//! **When it fails.** The pending code and the attempt counters are lost on a restart (a pending
//! code must be asked for again; the limits loosen for at most a minute); devices are reloaded from
//! the store and the snapshot is rebuilt from them. The published snapshot stays readable while the
//! actor restarts. If the store cannot be read the phone gets `pairing unavailable`.

pub mod actor;
pub mod code;
pub mod core;
pub mod devices;
pub mod duration;
pub mod label;
pub mod limiter;
pub mod pending;
pub mod policy;
pub mod published;
pub use crate::tier;
pub mod token;

pub use self::actor::PairingMsg;
pub use self::code::{MalformedCode, PairingCode};
pub use self::core::{Claimed, IssuedCode, PairError, PairingCore};
pub use self::devices::{
    Device, DeviceError, DeviceRegistry, ExpiryChanged, Paired, Revoked, TierChanged, Write,
};
pub use self::duration::{Dur, DurError};
pub use self::label::{InvalidLabel, Label};
pub use self::limiter::{pairing_source, RateLimited, SourceLimiter};
pub use self::pending::{PendingCode, CODE_TTL};
pub use self::policy::{AuthError, AuthorizedDevice, PolicySnapshot};
pub use self::published::Policy;
pub use self::tier::{Tier, TierError};
pub use self::token::{DeviceToken, TokenHash};
