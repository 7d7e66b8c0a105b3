//! The `config.applied` audit line (SPEC §7, §12): how the change was confirmed, the applied
//! file's hash, how many things changed and the sandbox's profile — never the file's contents.

use collie_actors::audit::{AuditEventKind, AuditRecord};

use super::snapshot::Snapshot;

/// The line for `snapshot`, applied on `machine` with `changes` differences, written by the CLI
/// itself while no bridge runs.
pub fn config_applied(machine: &str, snapshot: &Snapshot, changes: usize) -> AuditRecord {
    config_applied_detail(
        AuditRecord::new(AuditEventKind::ConfigApplied, machine),
        snapshot,
        changes,
    )
}

/// `rec` (a `config.applied` line) with what the line says of `snapshot`.
pub fn config_applied_detail(rec: AuditRecord, snapshot: &Snapshot, changes: usize) -> AuditRecord {
    let resolved = &snapshot.resolved;
    rec.with_detail("confirmed", snapshot.confirmed.as_str())
        .with_detail(
            "sha256",
            resolved
                .config
                .as_ref()
                .map_or("none".to_owned(), |c| c.sha256.clone()),
        )
        .with_detail("changes", changes as u64)
        .with_detail("workspaces", resolved.workspaces.len() as u64)
        .with_detail("starters", resolved.starters.len() as u64)
        // Whether what a phone starts runs confined (SPEC §15): the profile, never the paths.
        .with_detail(
            "sandbox",
            if resolved.sandbox.is_some() {
                "workspace"
            } else {
                "off"
            },
        )
}
