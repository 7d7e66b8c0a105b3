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

use crate::http::error::ApiError;

impl From<RelayError> for ApiError {
    fn from(e: RelayError) -> Self {
        match e {
            RelayError::NoSuchPane => ApiError::NoSuchPane,
            RelayError::ResourceLimit => ApiError::ResourceLimit,
            RelayError::AuditUnavailable => ApiError::AuditUnavailable,
            RelayError::CapabilityMissing | RelayError::UnknownKind => ApiError::CapabilityMissing,
            RelayError::BadInput(m) => ApiError::BadRequest(m),
            RelayError::Restarting => ApiError::Restarting,
            RelayError::Internal => ApiError::Internal,
            RelayError::Unreachable => ApiError::MemberUnreachable,
            _ => ApiError::MemberUnreadable,
        }
    }
}

impl From<ApiError> for RelayError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::NoSuchPane => RelayError::NoSuchPane,
            ApiError::ResourceLimit => RelayError::ResourceLimit,
            ApiError::AuditUnavailable => RelayError::AuditUnavailable,
            ApiError::BadRequest(m) => RelayError::BadInput(m),
            ApiError::CapabilityMissing => RelayError::CapabilityMissing,
            ApiError::Internal | ApiError::Backend(_) => RelayError::Internal,
            other => {
                tracing::warn!(error = %other, "relayed request failed");
                RelayError::Restarting
            }
        }
    }
}
