//! How a card operation fails, in the words of SPEC §3.2.

/// Why an answer (or an opening) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CardError {
    /// The `shown` hash is not the card's current one (409).
    #[error("card changed")]
    Changed,
    /// The card is no longer waiting, or was never here (410).
    #[error("card closed")]
    Closed,
    /// The option is not one the card offers (400).
    #[error("unknown option: {0}")]
    UnknownOption(String),
    /// As many cards as the cap allows are waiting (503).
    #[error("resource limit")]
    TooMany,
    /// A field of a new card is out of bounds (400); the text names it.
    #[error("{0}")]
    BadCard(String),
}
