//! How a refusal crosses the relay (SPEC §3.2, §8): a member answers an [`AppError`] as a
//! [`RelayError`], and the lead reads it back as this build's own words — a member's text is
//! never passed on as is, only matched against the fixed refusals this build knows (the rows',
//! the one-shot commands', the tools', the durable agents').
//!
//! Its own module so that the error type depends on no operation: the operations name their
//! refusals, and this table names the operations.

use collie_crew::relay::RelayError;

use super::AppError;

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
            RelayError::CardChanged => AppError::CardChanged,
            RelayError::CardClosed => AppError::CardClosed,
            RelayError::ScreenChanged => AppError::ScreenChanged,
            RelayError::DurableRefused(m) => AppError::DurableRefused(refusal(&m)),
            RelayError::DurableUnreachable => AppError::DurableUnreachable,
            RelayError::NoSuchLine => AppError::NoSuchLine,
            RelayError::Tool { error, .. } if error == AppError::StarterChanged.to_string() => {
                AppError::StarterChanged
            }
            // A member's tool rule (a folder outside its workspaces, …) in this build's words.
            RelayError::Tool { status, error } => super::tools::relayed_refusal(status, error),
            // Only a refusal this build knows passes, in this build's words.
            RelayError::Forbidden(m) if m == super::commands::RUN_OFF => {
                AppError::Forbidden(super::commands::RUN_OFF)
            }
            RelayError::Forbidden(m) if super::rows::known_refusal(&m).is_some() => {
                super::rows::known_refusal(&m)
                    .map_or(AppError::MemberUnreadable, AppError::Forbidden)
            }
            _ => AppError::MemberUnreadable,
        }
    }
}

/// How a member answers the lead when an operation it serves fails: the relay's error for the same
/// refusal (the lead maps it back with the `From` above).
impl From<AppError> for RelayError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::NoSuchPane => RelayError::NoSuchPane,
            AppError::ResourceLimit => RelayError::ResourceLimit,
            AppError::AuditUnavailable => RelayError::AuditUnavailable,
            AppError::BadRequest(m) => RelayError::BadInput(m),
            AppError::CapabilityMissing => RelayError::CapabilityMissing,
            AppError::CardChanged => RelayError::CardChanged,
            AppError::CardClosed => RelayError::CardClosed,
            AppError::ScreenChanged => RelayError::ScreenChanged,
            AppError::DurableRefused(m) => RelayError::DurableRefused(m.to_owned()),
            AppError::DurableUnreachable => RelayError::DurableUnreachable,
            AppError::NoSuchLine => RelayError::NoSuchLine,
            AppError::Forbidden(m) => RelayError::Forbidden(m.to_owned()),
            AppError::BodyTooLarge(_) => RelayError::BadInput(e.to_string()),
            AppError::Internal | AppError::Backend(_) => RelayError::Internal,
            AppError::NoSuchTool | AppError::Tool(_) | AppError::StarterChanged => {
                RelayError::Tool {
                    status: e.status(),
                    error: e.to_string(),
                }
            }
            other => {
                tracing::warn!(error = %other, "relayed request failed");
                RelayError::Restarting
            }
        }
    }
}

/// A member's durable refusal as one of this build's fixed reasons (a member's text is never
/// passed on as is).
fn refusal(m: &str) -> &'static str {
    const REASONS: [&str; 3] = [
        "the durable agent refused it (caller-refused)",
        "the durable agent has no such conversation, question or starter",
        "the durable agent refused it as answered already or closed",
    ];
    REASONS
        .into_iter()
        .find(|r| *r == m)
        .unwrap_or("the durable agent refused it")
}
