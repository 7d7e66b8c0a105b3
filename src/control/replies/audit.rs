//! The control socket's `collie audit acknowledge SEQ` answer: the adapter's own type, converted
//! from the audit actor's record of the break here.

use collie_actors::audit::BreakRecord;
use serde::{Deserialize, Serialize};

/// `collie audit acknowledge SEQ`: the break now acknowledged (it stays on record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acknowledged {
    /// The `seq` of the break's `audit.break` line.
    pub seq: u64,
    /// When it was acknowledged (RFC 3339).
    pub at: Option<String>,
    /// Who acknowledged it (`cli`).
    pub by: Option<String>,
}

impl From<BreakRecord> for Acknowledged {
    fn from(b: BreakRecord) -> Self {
        let (at, by) = match b.acknowledged {
            Some(a) => (Some(a.at), Some(a.by)),
            None => (None, None),
        };
        Acknowledged { seq: b.seq, at, by }
    }
}
