//! Receipts of the phone's durable writes (SPEC §10.3): what was done, by which device, when —
//! never the typed text. The last [`KEEP`] within [`KEEP_MS`], newest first; in memory, like the
//! cards' receipts (a restarted bridge starts without them; the audit log keeps everything).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Most receipts kept.
pub const KEEP: usize = 500;
/// Longest a receipt is kept, in ms (7 days).
pub const KEEP_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// One receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// When, Unix ms.
    pub at: u64,
    /// The machine the agent is attached to (set by whoever shows it).
    #[serde(default)]
    pub machine: String,
    /// The agent.
    pub agent: String,
    /// The conversation (the new one, for a starter).
    pub conversation: String,
    /// `answer`, `send`, `abort`, `action`, `rename`, `close`, `reopen` or `starter`.
    pub verb: String,
    /// The option, action or starter chosen, when the verb has one (an id, never typed text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    /// The device's label.
    pub device: String,
    /// The request's id (also in the audit line).
    pub request_id: String,
}

/// The receipts.
#[derive(Debug, Default)]
pub struct Receipts {
    kept: VecDeque<Receipt>,
}

impl Receipts {
    /// Keeps `receipt`, dropping the oldest past [`KEEP`].
    pub fn add(&mut self, receipt: Receipt) {
        self.kept.push_front(receipt);
        self.kept.truncate(KEEP);
    }

    /// The receipts of the last [`KEEP_MS`] before `now`, newest first.
    pub fn list(&mut self, now: u64) -> Vec<Receipt> {
        while self
            .kept
            .back()
            .is_some_and(|r| now.saturating_sub(r.at) > KEEP_MS)
        {
            self.kept.pop_back();
        }
        self.kept.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(at: u64) -> Receipt {
        Receipt {
            at,
            machine: String::new(),
            agent: "ops".into(),
            conversation: "c1".into(),
            verb: "send".into(),
            choice: None,
            device: "phone".into(),
            request_id: format!("r{at}"),
        }
    }

    #[test]
    fn the_last_500_of_seven_days_newest_first() {
        let mut r = Receipts::default();
        for at in 0..600 {
            r.add(receipt(at));
        }
        let list = r.list(600);
        assert_eq!(list.len(), KEEP);
        assert_eq!((list[0].at, list[KEEP - 1].at), (599, 100));
        assert_eq!(r.list(KEEP_MS + 300).len(), 300);
    }
}
