//! One line of `sent.jsonl` and the edits of the log: append (with the size bound), discard one
//! line, clear. Pure: the file is read and written by [`mod@super::file`].

use serde::{Deserialize, Serialize};

/// The most lines the log holds; past it the oldest go (a convenience list, not a history).
pub const MAX_ENTRIES: usize = 500;

/// One kept line: `{"id","ts","machine","pane","line"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its number on this machine (rising; what `collie sent discard N` and the phone name).
    pub id: u64,
    /// When it was sent (RFC 3339, UTC).
    pub ts: String,
    /// The machine whose shell it was sent to.
    pub machine: String,
    /// The pane id, or [`super::COMMAND_PANE`] for a one-shot command.
    pub pane: String,
    /// The line as it was sent (kept only if [`super::rules::check`] let it).
    pub line: String,
}

/// The entries of a log's text, oldest first; a line that is not an entry (a torn last line
/// after a crash, a hand edit) is skipped and counted.
pub fn parse(text: &str) -> (Vec<Entry>, usize) {
    let mut skipped = 0;
    let entries = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| match serde_json::from_str::<Entry>(l) {
            Ok(e) => Some(e),
            Err(_) => {
                skipped += 1;
                None
            }
        })
        .collect();
    (entries, skipped)
}

/// The log's text for `entries`: one JSON object per line, each ending with a line break.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    for e in entries {
        // An `Entry` is strings and a number: encoding it cannot fail.
        if let Ok(line) = serde_json::to_string(e) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The number the next entry gets after `entries` (one past the highest; 1 for none).
pub fn next_id(entries: &[Entry]) -> u64 {
    entries.iter().map(|e| e.id).max().map_or(1, |m| m + 1)
}

/// Removes the entry `id`; how many went (0 or 1).
pub fn discard(entries: &mut Vec<Entry>, id: u64) -> usize {
    let before = entries.len();
    entries.retain(|e| e.id != id);
    before - entries.len()
}

/// Keeps the newest [`MAX_ENTRIES`]; how many went.
pub fn trim(entries: &mut Vec<Entry>) -> usize {
    let over = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..over);
    over
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, line: &str) -> Entry {
        Entry {
            id,
            ts: "2026-01-01T00:00:00Z".into(),
            machine: "m".into(),
            pane: "t0-1".into(),
            line: line.into(),
        }
    }

    #[test]
    fn round_trip_skips_torn_lines() {
        let all = vec![entry(1, "ls"), entry(2, "echo \"quoted\"\nnot a break")];
        let mut text = render(&all);
        text.push_str("{\"id\":3,\"ts\":\"x\"");
        let (back, skipped) = parse(&text);
        assert_eq!((back, skipped), (all, 1));
    }

    #[test]
    fn discard_trim_and_ids() {
        let mut all: Vec<Entry> = (1..=3).map(|i| entry(i, "ls")).collect();
        assert_eq!(next_id(&all), 4);
        assert_eq!(discard(&mut all, 2), 1);
        assert_eq!(discard(&mut all, 2), 0);
        assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(next_id(&[]), 1);
        let mut many: Vec<Entry> = (1..=MAX_ENTRIES as u64 + 3)
            .map(|i| entry(i, "x"))
            .collect();
        assert_eq!(trim(&mut many), 3);
        assert_eq!(many.first().map(|e| e.id), Some(4));
    }
}
