//! The applied configuration (SPEC §12, seed 001): `config.toml` is the desired state; `collie
//! apply` resolves all of it — every starter's executable to a real file and its SHA-256, every
//! workspace to a real folder — shows the difference once, and replaces one snapshot,
//! `<state>/applied.json`, atomically. `collie bridge` starts only while the file, the resolved
//! paths and the executables' hashes are exactly what was applied.
//!
//! - [`resolve`](mod@resolve): the desired state made concrete (reads the file system, changes nothing).
//! - [`env`](mod@env): where resolution looks things up, and how a written path becomes one.
//! - [`pin`]: a program found and hashed, and the limits of its arguments.
//! - [`agents`]: the option fields' flags, from the bridge's own table.
//! - [`snapshot`]: the file `apply` writes and the bridge reads.
//! - [`diff`]: what differs between two resolutions, in words.
//! - [`gate`]: the check the bridge makes before it starts.
//! - [`record`]: the `config.applied` audit line.
//! - [`sandbox`](mod@sandbox): `[sandbox]` resolved into the effective policy (SPEC §15).
//! - [`speech`](mod@speech): `[speech]`'s transcriber and model, pinned (SPEC §16).

pub mod agents;
pub mod diff;
pub mod env;
#[cfg(test)]
mod fuzz;
pub mod gate;
pub mod pin;
pub mod record;
pub mod resolve;
pub mod sandbox;
pub mod snapshot;
pub mod speech;

pub use diff::{differences, Difference};
pub use gate::{check, desired, Desired, GateError};
pub use resolve::{
    resolve, ConfigPin, ResolveEnv, ResolveError, Resolved, ResolvedStarter, ResolvedWorkspace,
};
pub use sandbox::SandboxResolved;
pub use snapshot::{Confirmed, Snapshot, SnapshotError, APPLIED_FILE};
