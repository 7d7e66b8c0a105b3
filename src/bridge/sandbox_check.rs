//! The bridge's start refuses a sandbox it could not enforce (SPEC §15, fail-closed): when the
//! applied snapshot holds a `[sandbox]` policy, this kernel must have the Landlock ABI it needs and
//! a way to hold its process limit, or nothing starts — nothing falls back to running unconfined.

use collie_sandbox::kernel::{self, Unenforceable};

use crate::applied::Snapshot;

/// Why the bridge does not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(super) enum SandboxRefused {
    /// The applied policy needs what this machine does not have.
    #[error("the sandbox applied in [sandbox] cannot be enforced on this machine, so the bridge does not start: {0}")]
    Unenforceable(#[from] Unenforceable),
}

/// `Ok` when `applied` has no sandbox policy, or one this kernel can enforce.
pub(super) fn enforceable(applied: Option<&Snapshot>) -> Result<(), SandboxRefused> {
    let Some(sandbox) = applied.and_then(|s| s.resolved.sandbox.as_ref()) else {
        return Ok(());
    };
    kernel::check(&sandbox.policy, kernel::landlock_abi())?;
    Ok(())
}
