//! Identity at the door (SPEC §14): the configured gates' answer for a request, and the audit line
//! of a refusal — `security.denied` with reason `identity required`, the gate and the cause,
//! written at most once a minute per source and reason like every other denial (SPEC §7).

use collie_actors::audit::{AuditEventKind, AuditRecord};

use super::authn::Origin;
use super::{request_id, App, AppError};
use crate::identity::{Identity, Seen};

impl App {
    /// Who the identity gates vouch for in what the request showed (`None` with no gate, or when
    /// the gates passed naming no one), or `identity required` naming the refusing gate (counted
    /// and audited, rate-limited).
    pub fn vouch(&self, seen: &Seen<'_>, from: &Origin) -> Result<Option<Identity>, AppError> {
        match self.door.gates.check(seen) {
            Ok(identity) => Ok(identity),
            Err(refusal) => {
                let e = AppError::IdentityRequired { gate: refusal.gate };
                let rec = AuditRecord::new(AuditEventKind::SecurityDenied, self.core.machine.get())
                    .with_request_id(request_id())
                    .with_detail("method", from.method.clone())
                    .with_detail("gate", refusal.gate)
                    .with_detail("cause", refusal.cause.to_string());
                self.deny(from.source.clone(), &e.to_string(), rec);
                Err(e)
            }
        }
    }

    /// Whether any identity gate is configured.
    pub fn has_gates(&self) -> bool {
        !self.door.gates.is_empty()
    }
}
