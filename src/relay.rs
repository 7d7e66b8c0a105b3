//! The bridge's half of the crew relay (SPEC §8), on top of `collie_crew::relay`'s framing and the
//! crew actor's link.
//!
//! - [`lead`]: on the lead, phone requests for a member's panes become relay requests on that
//!   member's connection; the lead audits writes (which device) before relaying and masks every
//!   answer again (SPEC §6).
//! - [`member`]: on a member, the relay streams the lead opens are served with the same operations
//!   a phone gets ([`crate::ops`]): masked by the member, writes audited as relayed by the lead for
//!   the lead's device, with the lead's request id.

pub mod lead;
pub mod member;

use collie_crew::relay::RelayError;

use crate::app::AppError;

impl From<RelayError> for AppError {
    fn from(e: RelayError) -> Self {
        match e {
            RelayError::NoSuchPane => AppError::NoSuchPane,
            RelayError::ResourceLimit => AppError::ResourceLimit,
            RelayError::AuditUnavailable => AppError::AuditUnavailable,
            RelayError::CapabilityMissing | RelayError::UnknownKind => AppError::CapabilityMissing,
            RelayError::BadInput(m) => AppError::BadRequest(m),
            RelayError::Restarting => AppError::Restarting,
            RelayError::Internal => AppError::Internal,
            RelayError::Unreachable => AppError::MemberUnreachable,
            _ => AppError::MemberUnreadable,
        }
    }
}

impl From<AppError> for RelayError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::NoSuchPane => RelayError::NoSuchPane,
            AppError::ResourceLimit => RelayError::ResourceLimit,
            AppError::AuditUnavailable => RelayError::AuditUnavailable,
            AppError::BadRequest(m) => RelayError::BadInput(m),
            AppError::CapabilityMissing => RelayError::CapabilityMissing,
            AppError::Internal | AppError::Backend(_) => RelayError::Internal,
            other => {
                tracing::warn!(error = %other, "relayed request failed");
                RelayError::Restarting
            }
        }
    }
}
