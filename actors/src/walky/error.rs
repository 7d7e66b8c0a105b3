//! How a request to the walky actor fails. Cloneable, because one log sync answers every writer
//! that waited for it.

use collie_crew::walky::WalkyError;

/// Why the walky actor refused or could not do a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WalkyFailure {
    /// The log could not be written, synced or read; the text names the file and the cause.
    #[error("{0}")]
    Log(String),
    /// Signing needs the crew key, and a solo bridge has none (SPEC §9: it signs nothing).
    #[error("this bridge is not in a crew")]
    Solo,
    /// The crew key could not be loaded.
    #[error("no crew key: {0}")]
    Key(String),
    /// A rule of `collie_crew::walky` refused the message (signature, pin, replay, clock).
    #[error(transparent)]
    Refused(#[from] WalkyError),
}

impl From<super::log::LogError> for WalkyFailure {
    fn from(e: super::log::LogError) -> Self {
        WalkyFailure::Log(e.to_string())
    }
}
