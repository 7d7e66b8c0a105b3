//! What to prune from the walky log (SPEC §9: kept 7 days and at most 2,000 lines), decided
//! without touching the disk: the caller lists the day files with their line counts and passes
//! today's date; the plan says which files to delete and how many of the oldest lines to drop.
//!
//! Pruning happens only once the log is over its line cap, and then goes down to
//! [`PRUNE_TO`] lines rather than to the cap itself, so a busy log rewrites its oldest file once
//! every few hundred messages instead of at every one.

use time::Date;

/// Days of messages kept (today and the six days before).
pub const KEEP_DAYS: i64 = 7;
/// The most lines the log holds after an append.
pub const MAX_LINES: usize = 2_000;
/// Where a prune brings the line count down to.
pub const PRUNE_TO: usize = 1_500;

/// One day file of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayFile {
    /// The day (UTC) the file holds.
    pub day: Date,
    /// Its number of lines.
    pub lines: usize,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Files to delete entirely.
    pub delete: Vec<Date>,
    /// A file to cut, and how many of its first lines to drop (at most one file is cut).
    pub cut: Option<(Date, usize)>,
}

impl Plan {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.delete.is_empty() && self.cut.is_none()
    }
}

/// The plan for `files` (in any order) on `today`.
pub fn plan(files: &[DayFile], today: Date) -> Plan {
    let mut files: Vec<&DayFile> = files.iter().collect();
    files.sort_by_key(|f| f.day);
    let mut plan = Plan::default();
    let oldest_kept = today - time::Duration::days(KEEP_DAYS - 1);
    let mut kept = Vec::new();
    for f in files {
        if f.day < oldest_kept {
            plan.delete.push(f.day);
        } else {
            kept.push(f);
        }
    }
    let total: usize = kept.iter().map(|f| f.lines).sum();
    if total <= MAX_LINES {
        return plan;
    }
    let mut excess = total - PRUNE_TO;
    for f in kept {
        if excess == 0 {
            break;
        }
        if f.lines <= excess {
            plan.delete.push(f.day);
            excess -= f.lines;
        } else {
            plan.cut = Some((f.day, excess));
            excess = 0;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn f(day: Date, lines: usize) -> DayFile {
        DayFile { day, lines }
    }

    #[test]
    fn files_older_than_seven_days_go() {
        let today = date!(2026 - 11 - 30);
        let files = [
            f(date!(2026 - 11 - 23), 5),
            f(date!(2026 - 11 - 24), 5),
            f(today, 5),
        ];
        let p = plan(&files, today);
        assert_eq!(p.delete, vec![date!(2026 - 11 - 23)]);
        assert_eq!(p.cut, None);
    }

    #[test]
    fn nothing_happens_at_the_cap() {
        let today = date!(2026 - 11 - 30);
        assert!(plan(&[f(today, MAX_LINES)], today).is_empty());
    }

    #[test]
    fn over_the_cap_the_oldest_lines_go_down_to_the_prune_mark() {
        let today = date!(2026 - 11 - 30);
        let files = [f(today, 1_000), f(date!(2026 - 11 - 29), 1_001)];
        let p = plan(&files, today);
        // 2,001 lines: 501 must go, all from the older file, which is cut rather than deleted.
        assert_eq!(p.delete, Vec::<Date>::new());
        assert_eq!(p.cut, Some((date!(2026 - 11 - 29), 501)));
    }

    #[test]
    fn whole_files_go_before_a_cut() {
        let today = date!(2026 - 11 - 30);
        let files = [
            f(date!(2026 - 11 - 28), 300),
            f(date!(2026 - 11 - 29), 900),
            f(today, 1_000),
        ];
        let p = plan(&files, today);
        // 2,200 lines → 1,500: the 300 of the 28th, then 400 of the 29th.
        assert_eq!(p.delete, vec![date!(2026 - 11 - 28)]);
        assert_eq!(p.cut, Some((date!(2026 - 11 - 29), 400)));
    }

    #[test]
    fn a_single_huge_day_is_cut() {
        let today = date!(2026 - 11 - 30);
        let p = plan(&[f(today, 5_000)], today);
        assert_eq!(p.cut, Some((today, 3_500)));
    }
}
