//! The audit log as the application uses it (SPEC §7): appending a write's line (failing closed),
//! the line of a write that already happened (kept until the log takes it), the log's state for
//! `collie audit verify`, and acknowledging a recorded break.

use collie_actors::audit::{AuditError, AuditMsg, AuditRecord, AuditStatus, BreakRecord};

use super::{App, AppError};

impl App {
    /// Appends an audit line, failing closed: the caller must not perform the write on error.
    pub async fn audit(&self, rec: AuditRecord) -> Result<(), AppError> {
        match self.core.audit.call(|r| AuditMsg::Append(rec, r)).await? {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, "audit append failed; refusing the write");
                Err(AppError::AuditUnavailable)
            }
        }
    }

    /// Appends the line of a write that has already happened — a member answered that it did a
    /// relayed write (decision 0052) — so it cannot be refused any more: a line the log refuses is
    /// kept in the store and appended as soon as the log can be written (as a revocation's).
    /// Only when the store cannot keep it either is the answer `audit unavailable`; the write
    /// stays done, and the bridge's log says so, with the request id the member's line carries.
    pub async fn audit_done(&self, rec: AuditRecord) -> Result<(), AppError> {
        // The batched append first: the usual case costs what any write's line does.
        if let Ok(Ok(_)) = self
            .core
            .audit
            .call(|r| AuditMsg::Append(rec.clone(), r))
            .await
        {
            return Ok(());
        }
        let request = rec.request_id.clone().unwrap_or_default();
        let event = rec.event;
        match self
            .core
            .audit
            .call(|r| AuditMsg::AppendOrKeep(rec, r))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            answer => {
                tracing::error!(
                    %event,
                    request_id = %request,
                    answer = ?answer.map(|a| a.map(|_| ())),
                    "the member did this write, but its line could not be written or kept here; \
                     answering audit unavailable (the member's own line has this request id)"
                );
                Err(AppError::AuditUnavailable)
            }
        }
    }

    /// The log as the audit actor knows it: anchor, length, breaks, kept lines.
    pub async fn audit_status(&self) -> Result<AuditStatus, AppError> {
        Ok(self.core.audit.call(AuditMsg::Status).await?)
    }

    /// Marks the recorded break at `seq` acknowledged (audited `audit.acknowledged`).
    pub async fn acknowledge_break(&self, seq: u64) -> Result<BreakRecord, AppError> {
        let acknowledged = self
            .core
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
