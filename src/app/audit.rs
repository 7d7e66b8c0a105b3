//! The audit log as the application uses it (SPEC §7): appending a write's line (failing closed),
//! the log's state for `collie audit verify`, and acknowledging a recorded break.

use collie_actors::audit::{AuditError, AuditMsg, AuditRecord, AuditStatus, BreakRecord};

use super::{App, AppError};

impl App {
    /// Appends an audit line, failing closed: the caller must not perform the write on error.
    pub async fn audit(&self, rec: AuditRecord) -> Result<(), AppError> {
        match self.audit.call(|r| AuditMsg::Append(rec, r)).await? {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, "audit append failed; refusing the write");
                Err(AppError::AuditUnavailable)
            }
        }
    }

    /// The log as the audit actor knows it: anchor, length, breaks, kept lines.
    pub async fn audit_status(&self) -> Result<AuditStatus, AppError> {
        Ok(self.audit.call(AuditMsg::Status).await?)
    }

    /// Marks the recorded break at `seq` acknowledged (audited `audit.acknowledged`).
    pub async fn acknowledge_break(&self, seq: u64) -> Result<BreakRecord, AppError> {
        let acknowledged = self
            .audit
            .call(|reply| AuditMsg::Acknowledge {
                seq,
                by: "cli".to_owned(),
                reply,
            })
            .await?;
        match acknowledged {
            Ok(record) => Ok(record),
            Err(AuditError::NoSuchBreak(seq)) => Err(AppError::BadRequest(format!(
                "no recorded break at seq {seq}: `collie audit verify` lists them"
            ))),
            Err(e) => {
                tracing::error!(error = %e, "cannot acknowledge an audit break");
                Err(AppError::AuditUnavailable)
            }
        }
    }
}
