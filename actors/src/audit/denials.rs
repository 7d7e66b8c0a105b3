//! Audited denials without letting a scanner fill the disk (SPEC §7): `security.denied` is written
//! at most once per minute per source and reason, with a `count` of the refusals it stands for.
//!
//! Pure: the caller passes `now` (unix seconds). The first refusal of a (source, reason) is
//! written at once with `count` 1 and opens a one-minute window; refusals inside the window are
//! counted; when the window is over, the next refusal — or [`DenialLimiter::flush`], which the
//! audit actor calls on its timer — writes one line standing for all of them and opens the next
//! window. Memory is bounded: past [`MAX_KEYS`] (source, reason) pairs, refusals from new sources
//! are counted together under the source `many`.

use std::collections::HashMap;

use serde_json::Value;

use super::AuditRecord;

/// How long one line stands for a (source, reason).
pub const WINDOW_SECS: i64 = 60;
/// Most (source, reason) pairs tracked at once.
pub const MAX_KEYS: usize = 1024;
/// The source that stands for every source past [`MAX_KEYS`].
pub const MANY_SOURCES: &str = "many";

/// One refusal to audit.
#[derive(Debug, Clone, PartialEq)]
pub struct Denial {
    /// Who was refused: the peer address (or, behind a loopback proxy, the forwarded one).
    pub source: String,
    /// Why (`device not paired`, `insufficient tier`, `host not allowed`, …).
    pub reason: String,
    /// The `security.denied` line, without `count` and `source`.
    pub record: AuditRecord,
}

#[derive(Debug)]
struct Window {
    opened: i64,
    /// Refusals since the last line.
    counted: u64,
    /// The latest refusal's record, which the next line is written from.
    latest: AuditRecord,
}

/// The limiter.
#[derive(Debug, Default)]
pub struct DenialLimiter {
    windows: HashMap<(String, String), Window>,
}

fn line(mut record: AuditRecord, source: &str, count: u64) -> AuditRecord {
    record
        .detail
        .insert("source".to_owned(), Value::from(source));
    record.detail.insert("count".to_owned(), Value::from(count));
    record
}

impl DenialLimiter {
    /// A limiter with no window open.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one refusal; returns the line to write now, if any.
    pub fn admit(&mut self, denial: Denial, now: i64) -> Option<AuditRecord> {
        let Denial {
            mut source,
            reason,
            record,
        } = denial;
        if self.windows.len() >= MAX_KEYS
            && !self.windows.contains_key(&(source.clone(), reason.clone()))
        {
            source = MANY_SOURCES.to_owned();
        }
        let key = (source, reason);
        match self.windows.get_mut(&key) {
            Some(w) if now.saturating_sub(w.opened) < WINDOW_SECS => {
                w.counted += 1;
                w.latest = record;
                None
            }
            Some(w) => {
                let count = w.counted + 1;
                *w = Window {
                    opened: now,
                    counted: 0,
                    latest: record.clone(),
                };
                Some(line(record, &key.0, count))
            }
            None => {
                self.windows.insert(
                    key.clone(),
                    Window {
                        opened: now,
                        counted: 0,
                        latest: record.clone(),
                    },
                );
                Some(line(record, &key.0, 1))
            }
        }
    }

    /// Lines for the windows that are over and counted refusals since their last line; windows
    /// over without any are forgotten.
    pub fn flush(&mut self, now: i64) -> Vec<AuditRecord> {
        let mut out = Vec::new();
        self.windows.retain(|(source, _), w| {
            if now.saturating_sub(w.opened) < WINDOW_SECS {
                return true;
            }
            if w.counted == 0 {
                return false;
            }
            out.push(line(w.latest.clone(), source, w.counted));
            w.opened = now;
            w.counted = 0;
            true
        });
        out
    }

    /// Lines for every window with counted refusals, over or not (a bridge stopping: the counts
    /// are written rather than lost).
    pub fn flush_all(&mut self) -> Vec<AuditRecord> {
        let out = self
            .windows
            .iter()
            .filter(|(_, w)| w.counted > 0)
            .map(|((source, _), w)| line(w.latest.clone(), source, w.counted))
            .collect();
        self.windows.clear();
        out
    }

    /// How many (source, reason) pairs are tracked.
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditEventKind;

    fn denial(source: &str, reason: &str) -> Denial {
        Denial {
            source: source.to_owned(),
            reason: reason.to_owned(),
            record: AuditRecord::new(AuditEventKind::SecurityDenied, "m")
                .with_detail("reason", reason),
        }
    }

    fn count(r: &AuditRecord) -> u64 {
        r.detail["count"].as_u64().unwrap()
    }

    #[test]
    fn one_line_a_minute_per_source_and_reason_with_the_count() {
        let mut l = DenialLimiter::new();
        let first = l
            .admit(denial("1.2.3.4", "device not paired"), 1000)
            .unwrap();
        assert_eq!(count(&first), 1);
        assert_eq!(first.detail["source"], "1.2.3.4");
        for t in 1001..1060 {
            assert!(l.admit(denial("1.2.3.4", "device not paired"), t).is_none());
        }
        // Another reason or source has its own window.
        assert!(l
            .admit(denial("1.2.3.4", "insufficient tier"), 1001)
            .is_some());
        assert!(l
            .admit(denial("5.6.7.8", "device not paired"), 1001)
            .is_some());
        // A minute on: one line for the 59 counted and this one.
        let next = l
            .admit(denial("1.2.3.4", "device not paired"), 1060)
            .unwrap();
        assert_eq!(count(&next), 60);
        assert!(l
            .admit(denial("1.2.3.4", "device not paired"), 1061)
            .is_none());
    }

    #[test]
    fn flush_writes_what_was_counted_and_forgets_quiet_windows() {
        let mut l = DenialLimiter::new();
        l.admit(denial("a", "r"), 0);
        l.admit(denial("a", "r"), 1);
        l.admit(denial("a", "r"), 2);
        l.admit(denial("b", "r"), 0);
        assert!(l.flush(59).is_empty());
        let lines = l.flush(60);
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (count(&lines[0]), &lines[0].detail["source"]),
            (2, &"a".into())
        );
        // `b` had nothing more: forgotten; `a` reopened at 60 with nothing counted.
        assert_eq!(l.len(), 1);
        assert!(l.flush(120).is_empty());
        assert!(l.is_empty());
    }

    #[test]
    fn never_more_than_one_line_a_minute_whatever_the_interleaving() {
        let mut l = DenialLimiter::new();
        let mut written = Vec::new();
        let mut refused = 0u64;
        for t in 0..600 {
            for _ in 0..3 {
                refused += 1;
                if let Some(r) = l.admit(denial("x", "r"), t) {
                    written.push((t, count(&r)));
                }
            }
            if t % 7 == 0 {
                written.extend(l.flush(t).iter().map(|r| (t, count(r))));
            }
        }
        written.extend(l.flush(10_000).iter().map(|r| (10_000, count(r))));
        for pair in written.windows(2) {
            assert!(pair[1].0 - pair[0].0 >= WINDOW_SECS, "{written:?}");
        }
        // Every refusal is counted exactly once.
        assert_eq!(written.iter().map(|(_, c)| c).sum::<u64>(), refused);
    }

    #[test]
    fn a_stop_writes_what_was_counted() {
        let mut l = DenialLimiter::new();
        l.admit(denial("a", "r"), 0);
        l.admit(denial("a", "r"), 1);
        l.admit(denial("b", "r"), 1);
        let lines = l.flush_all();
        assert_eq!(lines.len(), 1);
        assert_eq!(count(&lines[0]), 1);
        assert!(l.is_empty());
    }

    #[test]
    fn memory_is_bounded_under_a_spray_of_sources() {
        let mut l = DenialLimiter::new();
        for i in 0..(MAX_KEYS * 3) {
            l.admit(denial(&format!("10.0.{}.{}", i / 256, i % 256), "r"), 5);
        }
        assert_eq!(l.len(), MAX_KEYS + 1);
        let lines = l.flush(100);
        let many = lines
            .iter()
            .find(|r| r.detail["source"] == MANY_SOURCES)
            .unwrap();
        assert_eq!(count(many), (MAX_KEYS * 2 - 1) as u64);
    }
}
