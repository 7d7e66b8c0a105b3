//! TEMPORARY stub written by the lead engineer so the workspace compiles while the redaction core is
//! being written. The redaction engineer replaces this whole file (keep `pub mod actor;`).

pub mod actor;

use std::borrow::Cow;

/// Placeholder masker (masks nothing yet).
#[derive(Debug)]
pub struct Masker {
    enabled: bool,
}

impl Masker {
    /// A masker; `enabled = false` masks nothing.
    pub fn new(enabled: bool) -> Masker {
        Masker { enabled }
    }
    /// Whether masking is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
    /// Masks `text`.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }
}
