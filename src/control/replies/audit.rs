//! The control socket's `collie audit acknowledge SEQ` and `collie audit verify --witnessed`
//! answers: the adapter's own types, converted from the audit actor's records here.

use collie_actors::audit::{AuditStatus, BreakRecord};
use collie_crew::uplink::WitnessedHead;
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

/// `collie audit verify --witnessed`: what the lead keeps of this log, and the log here (taken
/// after the lead answered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witnessed {
    /// The heads the lead keeps, oldest first.
    pub heads: Vec<WitnessedHead>,
    /// The log as the audit actor knows it.
    pub status: AuditStatus,
}
