//! The `hooks.installed` audit line (SPEC §7): which agent's hook, in which settings (user or
//! project) and file, and whether it was installed or removed. A call that left the file as it
//! was writes no line: a line is written for what happened.

use collie_actors::audit::{AuditEventKind, AuditRecord};

use super::{Change, ChangeKind};

/// What the line says happened, or `None` when nothing did (no line).
pub fn action(kind: ChangeKind) -> Option<&'static str> {
    match kind {
        ChangeKind::Installed => Some("installed"),
        ChangeKind::Removed => Some("removed"),
        ChangeKind::Unchanged => None,
    }
}

/// The line for `change` (whose [`action`] is `action`) on `machine`, written by the CLI itself
/// while no bridge runs.
pub fn hooks_installed(machine: &str, change: &Change, action: &str) -> AuditRecord {
    hooks_installed_detail(
        AuditRecord::new(AuditEventKind::HooksInstalled, machine),
        change,
        action,
    )
}

/// `rec` (a `hooks.installed` line) with what the line says of `change`.
pub fn hooks_installed_detail(rec: AuditRecord, change: &Change, action: &str) -> AuditRecord {
    rec.with_detail("agent", change.agent.as_str())
        .with_detail("scope", change.scope.as_str())
        .with_detail("action", action.to_owned())
        .with_detail("path", change.path.display().to_string())
}
