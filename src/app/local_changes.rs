//! The changes the machine's own user makes with the CLI while the bridge runs, written to the
//! bridge's audit log (SPEC §7): `collie apply` (`config.applied`) and `collie hooks
//! install|uninstall` (`hooks.installed`). The CLI made the change itself; the bridge writes the
//! line so the chain stays one (while no bridge runs, the CLI appends it).

use collie_actors::audit::AuditEventKind;

use super::{App, AppError, Caller};
use crate::agent_hooks::record::{action, hooks_installed_detail};
use crate::agent_hooks::Change;
use crate::applied::record::config_applied_detail;
use crate::applied::snapshot::Snapshot;

impl App {
    /// Audits `collie apply`'s replacing the applied configuration with `snapshot` (`changes`
    /// differences).
    pub async fn config_applied(
        &self,
        caller: &Caller,
        snapshot: &Snapshot,
        changes: u64,
    ) -> Result<(), AppError> {
        let changes = usize::try_from(changes).unwrap_or(usize::MAX);
        let rec = caller.record(self, AuditEventKind::ConfigApplied);
        self.audit(config_applied_detail(rec, snapshot, changes))
            .await
    }

    /// Audits an agent's settings file changed by `collie hooks install|uninstall` (no line when
    /// the file was left as it was: a line is written for what happened).
    pub async fn hooks_changed(&self, caller: &Caller, change: &Change) -> Result<(), AppError> {
        let Some(action) = action(change.kind) else {
            return Ok(());
        };
        let rec = caller.record(self, AuditEventKind::HooksInstalled);
        self.audit(hooks_installed_detail(rec, change, action))
            .await
    }
}
