//! The anchor: the end of the log the store vouches for, and the pure decision made from it when a
//! bridge starts (or an append finds the file changed under it): continue, or record a break
//! (SPEC §7, "a break is never laundered").
//!
//! **Why the store is written first.** Before each line is appended the store records it as
//! `pending`, beside `last`, the line before it. A crash between the store's write and the append
//! leaves the file ending at `last`; a crash after the append, at `pending`. Both are honest ends
//! and the chain continues from whichever the file holds. Any other end is a break: a file that is
//! shorter or missing, a last line whose hash differs from the one recorded, lines beyond
//! `pending` (forged onto the end: their hashes can be recomputed, but the store never vouched for
//! them), or a last line cut short. A line in flight can therefore never look like tampering, and
//! tampering can never look like a line in flight: its hash would have to equal the recorded one.
//!
//! Nothing here touches the disk or the clock; [`super::actor`] examines the file
//! ([`super::examine`]), asks [`decide`] and carries out the answer.

use serde::{Deserialize, Serialize};

use super::ChainTail;

/// What the store vouches for at the end of the log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The last line known to be on disk (`None`: no line yet, or a chain that restarts from the
    /// beginning after a break).
    pub last: Option<ChainTail>,
    /// The line being appended when the store was last written (the last of a group-committed
    /// batch); on disk or not.
    pub pending: Option<Pending>,
}

/// The line in flight: the last of a batch written with one append and one sync, and the
/// batch's earlier lines. A crash can leave the file ending at any of them (a torn append
/// keeps a prefix of whole lines), so each is an honest end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// Its `seq` and `hash`.
    pub line: ChainTail,
    /// The store key of the kept line it writes out, if it is one (removed once the line is known
    /// to be on disk, so a kept line is written once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// The batch's lines before `line`, oldest first (empty for a line appended alone; at most
    /// `actor::MAX_BATCH - 1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<ChainTail>,
}

impl Anchor {
    /// Whether a file ending with the record `t` ends where this anchor says it may: at the last
    /// line on disk, or at a line of the batch in flight.
    pub fn vouches_for(&self, t: &ChainTail) -> bool {
        self.last.as_ref() == Some(t)
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.line == *t || p.earlier.contains(t))
    }

    /// The highest `seq` the store has seen used.
    pub fn max_seq(&self) -> u64 {
        let last = self.last.as_ref().map_or(0, |t| t.seq);
        let pending = self.pending.as_ref().map_or(0, |p| p.line.seq);
        last.max(pending)
    }

    /// `seq N (hash abcdef012345…)` or `seq N (…) or seq M (…)`, for messages.
    pub fn describe(&self) -> String {
        let one = |t: &ChainTail| format!("seq {} (hash {})", t.seq, short(&t.hash));
        match (&self.last, &self.pending) {
            (None, None) => "no line at all".to_owned(),
            (Some(last), None) => one(last),
            (None, Some(p)) => format!("no line, or {}", one(&p.line)),
            (Some(last), Some(p)) => format!("{} or {}", one(last), one(&p.line)),
        }
    }
}

/// The first 12 hex digits of a hash, for messages.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// What the log file ends with (read by [`super::examine`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEnd {
    /// There is no file.
    Missing,
    /// The file holds no line.
    Empty,
    /// The last line is a whole record that matches its hash.
    Record(ChainTail),
    /// The last line is not a whole record: cut short, unreadable, or altered; `reason` says which.
    Damaged {
        /// What is wrong with it.
        reason: String,
    },
}

/// The file's end, and the last whole record in it, where a continued chain starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examined {
    /// How the file ends.
    pub end: FileEnd,
    /// The last whole record found (looking back past damaged lines, within a bound).
    pub last_record: Option<ChainTail>,
    /// The file's length in bytes (0 when missing).
    pub len: u64,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The file ends where the store says: continue the chain after `from` (`None`: a fresh log).
    Continue {
        /// The last line.
        from: Option<ChainTail>,
        /// The kept line the pending line wrote out, now known to be on disk: forget it.
        written_kept: Option<String>,
    },
    /// The file does not end where the store says.
    Break(Break),
}

/// A break, as decided; the actor records it and writes its `audit.break` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The `seq` the `audit.break` line takes: past every `seq` the store or the file has used,
    /// so a break's `seq` names it alone.
    pub seq: u64,
    /// What the store vouched for.
    pub expected: Anchor,
    /// What the file holds instead, in words.
    pub found: String,
    /// The last whole record of the file: the `audit.break` line chains from it (`prev`), so the
    /// file stays one verifiable chain; `None` starts from the genesis `prev`.
    pub from: Option<ChainTail>,
}

/// Compares the file's end with the anchor. `changed_while_running` describes a file whose length
/// differed from what this bridge last wrote (a break even if the end looks right).
pub fn decide(anchor: &Anchor, file: &Examined, changed_while_running: Option<&str>) -> Verdict {
    if changed_while_running.is_none() {
        let pending = anchor.pending.as_ref();
        match &file.end {
            FileEnd::Record(t) if anchor.last.as_ref() == Some(t) => {
                return Verdict::Continue {
                    from: Some(t.clone()),
                    written_kept: None,
                };
            }
            FileEnd::Record(t) if pending.is_some_and(|p| p.line == *t) => {
                return Verdict::Continue {
                    from: Some(t.clone()),
                    written_kept: pending.and_then(|p| p.kept.clone()),
                };
            }
            // A torn batch: its first lines reached the disk, the rest did not (and nobody was
            // told they had).
            FileEnd::Record(t) if pending.is_some_and(|p| p.earlier.contains(t)) => {
                return Verdict::Continue {
                    from: Some(t.clone()),
                    written_kept: None,
                };
            }
            FileEnd::Missing | FileEnd::Empty if anchor.last.is_none() => {
                return Verdict::Continue {
                    from: None,
                    written_kept: None,
                };
            }
            _ => {}
        }
    }
    let mut found = describe_end(anchor, file);
    if let Some(change) = changed_while_running {
        found = format!("{change}; {found}");
    }
    let file_seq = match &file.end {
        FileEnd::Record(t) => t.seq,
        _ => 0,
    };
    let record_seq = file.last_record.as_ref().map_or(0, |t| t.seq);
    let seq = anchor
        .max_seq()
        .max(file_seq)
        .max(record_seq)
        .saturating_add(1);
    Verdict::Break(Break {
        seq,
        expected: anchor.clone(),
        found,
        from: file.last_record.clone(),
    })
}

fn describe_end(anchor: &Anchor, file: &Examined) -> String {
    let expected = anchor.max_seq();
    match &file.end {
        FileEnd::Missing => "no audit.log at all (deleted)".to_owned(),
        FileEnd::Empty => "an empty audit.log (truncated)".to_owned(),
        FileEnd::Record(t) if t.seq < expected => format!(
            "the log ends at seq {} (hash {}): lines are missing at the end (truncated)",
            t.seq,
            short(&t.hash)
        ),
        FileEnd::Record(t) if t.seq == expected => format!(
            "seq {} has hash {}, not the one recorded (changed last line)",
            t.seq,
            short(&t.hash)
        ),
        FileEnd::Record(t) => format!(
            "the log runs on to seq {} (hash {}), past what the store vouches for (lines added)",
            t.seq,
            short(&t.hash)
        ),
        FileEnd::Damaged { reason } => match &file.last_record {
            Some(t) => format!(
                "the last line is {reason}, after seq {} (hash {})",
                t.seq,
                short(&t.hash)
            ),
            None => format!("the last line is {reason}, and no whole line precedes it"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(seq: u64, c: char) -> ChainTail {
        ChainTail {
            seq,
            hash: c.to_string().repeat(64),
        }
    }

    fn anchor(last: Option<ChainTail>, pending: Option<ChainTail>) -> Anchor {
        Anchor {
            last,
            pending: pending.map(|line| Pending {
                line,
                kept: None,
                earlier: Vec::new(),
            }),
        }
    }

    fn file(end: FileEnd, last_record: Option<ChainTail>) -> Examined {
        Examined {
            end,
            last_record,
            len: 100,
        }
    }

    fn record(t: &ChainTail) -> Examined {
        file(FileEnd::Record(t.clone()), Some(t.clone()))
    }

    fn broken(v: Verdict) -> Break {
        match v {
            Verdict::Break(b) => b,
            other => panic!("expected a break, got {other:?}"),
        }
    }

    #[test]
    fn either_honest_end_continues() {
        let a = anchor(Some(tail(4, 'a')), Some(tail(5, 'b')));
        // The crash came before the append: the file ends at `last`.
        assert_eq!(
            decide(&a, &record(&tail(4, 'a')), None),
            Verdict::Continue {
                from: Some(tail(4, 'a')),
                written_kept: None
            }
        );
        // After it: the file ends at `pending`.
        assert_eq!(
            decide(&a, &record(&tail(5, 'b')), None),
            Verdict::Continue {
                from: Some(tail(5, 'b')),
                written_kept: None
            }
        );
    }

    #[test]
    fn a_written_kept_line_is_reported_once_on_disk() {
        let a = Anchor {
            last: Some(tail(4, 'a')),
            pending: Some(Pending {
                line: tail(5, 'b'),
                kept: Some("kept/1".into()),
                earlier: Vec::new(),
            }),
        };
        assert_eq!(
            decide(&a, &record(&tail(5, 'b')), None),
            Verdict::Continue {
                from: Some(tail(5, 'b')),
                written_kept: Some("kept/1".into())
            }
        );
        assert!(matches!(
            decide(&a, &record(&tail(4, 'a')), None),
            Verdict::Continue {
                written_kept: None,
                ..
            }
        ));
    }

    #[test]
    fn a_torn_batch_ends_honestly_at_any_of_its_lines_and_nowhere_else() {
        let a = Anchor {
            last: Some(tail(4, 'a')),
            pending: Some(Pending {
                line: tail(7, 'e'),
                kept: None,
                earlier: vec![tail(5, 'c'), tail(6, 'd')],
            }),
        };
        for end in [tail(4, 'a'), tail(5, 'c'), tail(6, 'd'), tail(7, 'e')] {
            assert_eq!(
                decide(&a, &record(&end), None),
                Verdict::Continue {
                    from: Some(end.clone()),
                    written_kept: None
                },
                "{end:?}"
            );
        }
        // A line of the batch's seq with another hash, or one past the batch, is a break.
        let forged = broken(decide(&a, &record(&tail(6, 'x')), None));
        assert_eq!(forged.seq, 8);
        assert!(forged.found.contains("missing"), "{}", forged.found);
        let added = broken(decide(&a, &record(&tail(8, 'f')), None));
        assert!(added.found.contains("lines added"), "{}", added.found);
        // Without the batch in the store, its first line is one too many.
        let single = Anchor {
            last: Some(tail(4, 'a')),
            pending: Some(Pending {
                line: tail(7, 'e'),
                kept: None,
                earlier: Vec::new(),
            }),
        };
        broken(decide(&single, &record(&tail(5, 'c')), None));
    }

    #[test]
    fn a_fresh_log_continues_and_a_first_line_in_flight_is_fine() {
        let fresh = Anchor::default();
        for end in [FileEnd::Missing, FileEnd::Empty] {
            assert!(matches!(
                decide(&fresh, &file(end.clone(), None), None),
                Verdict::Continue { from: None, .. }
            ));
            assert!(matches!(
                decide(&anchor(None, Some(tail(1, 'a'))), &file(end, None), None),
                Verdict::Continue { from: None, .. }
            ));
        }
    }

    #[test]
    fn a_truncated_log_is_a_break_past_every_seq() {
        let a = anchor(Some(tail(9, 'a')), Some(tail(10, 'b')));
        let b = broken(decide(&a, &record(&tail(1, 'c')), None));
        assert_eq!(b.seq, 11);
        assert_eq!(b.from, Some(tail(1, 'c')));
        assert!(b.found.contains("ends at seq 1"), "{}", b.found);
        assert!(b.found.contains("truncated"), "{}", b.found);
        assert_eq!(b.expected, a);
    }

    #[test]
    fn a_deleted_or_emptied_log_is_a_break() {
        let a = anchor(Some(tail(3, 'a')), None);
        let b = broken(decide(&a, &file(FileEnd::Missing, None), None));
        assert_eq!((b.seq, b.from), (4, None));
        assert!(b.found.contains("deleted"));
        let b = broken(decide(&a, &file(FileEnd::Empty, None), None));
        assert!(b.found.contains("empty"));
    }

    #[test]
    fn a_changed_last_line_is_a_break() {
        let a = anchor(Some(tail(3, 'a')), None);
        let b = broken(decide(&a, &record(&tail(3, 'f')), None));
        assert_eq!(b.seq, 4);
        assert!(b.found.contains("changed last line"), "{}", b.found);
        assert_eq!(b.from, Some(tail(3, 'f')));
    }

    #[test]
    fn a_line_forged_onto_the_end_is_a_break() {
        // The next seq with a recomputed hash: the store never vouched for it.
        let a = anchor(Some(tail(3, 'a')), Some(tail(4, 'b')));
        let b = broken(decide(&a, &record(&tail(5, 'e')), None));
        assert_eq!(b.seq, 6);
        assert!(b.found.contains("past what the store vouches for"));
        // A line with the pending seq but another hash is no more honest.
        let b = broken(decide(&a, &record(&tail(4, 'e')), None));
        assert_eq!(b.seq, 5);
        // Lines in a log the store knows nothing of (its store was deleted).
        let b = broken(decide(&Anchor::default(), &record(&tail(2, 'e')), None));
        assert_eq!(b.seq, 3);
    }

    #[test]
    fn a_cut_last_line_is_a_break_not_dropped() {
        let a = anchor(Some(tail(3, 'a')), Some(tail(4, 'b')));
        let b = broken(decide(
            &a,
            &file(
                FileEnd::Damaged {
                    reason: "cut short".into(),
                },
                Some(tail(3, 'a')),
            ),
            None,
        ));
        assert_eq!(b.seq, 5);
        assert_eq!(b.from, Some(tail(3, 'a')));
        assert!(b.found.contains("cut short, after seq 3"), "{}", b.found);
    }

    #[test]
    fn a_file_changed_under_a_running_bridge_is_a_break_even_at_the_right_end() {
        let a = anchor(Some(tail(3, 'a')), None);
        let b = broken(decide(
            &a,
            &record(&tail(3, 'a')),
            Some("audit.log was 900 bytes and is now 1200"),
        ));
        assert!(
            b.found.starts_with("audit.log was 900 bytes"),
            "{}",
            b.found
        );
        assert_eq!(b.seq, 4);
    }

    #[test]
    fn descriptions_name_both_ends() {
        let a = anchor(Some(tail(4, 'a')), Some(tail(5, 'b')));
        assert_eq!(
            a.describe(),
            "seq 4 (hash aaaaaaaaaaaa) or seq 5 (hash bbbbbbbbbbbb)"
        );
        assert_eq!(Anchor::default().describe(), "no line at all");
    }
}
