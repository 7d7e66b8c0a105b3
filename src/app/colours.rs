//! The colours of a followed screen (SPEC §5 "Colours"; decision 0043): which rows a stream
//! event carries and the style numbers their runs use.
//!
//! A stream keeps one style table for its whole life, so rows the phone already has keep meaning
//! what they meant: an event carries the runs of the rows it carries and only the styles new to
//! the table. A row is sent again when its text or its colours changed. A full event (the first,
//! a resize, or a table that would pass [`MAX_STYLES`]) starts the table afresh and carries all
//! of it.
//!
//! - [`LocalColours`] turns this machine's snapshots (each numbered by a fresh table) into such
//!   events.
//! - [`RelayedColours`] keeps what a member sent (its table and each row's runs, checked against
//!   the screen's width and the cap) so the lead, which masks the text again and sends only rows
//!   whose masked text changed, passes each row's runs on unchanged.

use std::collections::{BTreeMap, HashSet};

use collie_actors::panes::attrs::{number_runs, StyleTable};
use collie_crew::relay::{
    runs_fit, ColourEvent, ColourSnapshot, EventAttrs, Run, ScreenAttrs, StreamEvent, Style,
    MAX_STYLES,
};

/// A row's runs with their styles resolved.
type Styled = Vec<(u16, u16, Style)>;

/// What a local stream sent last.
struct Shown {
    cols: u16,
    rows: u16,
    lines: Vec<String>,
    runs: Vec<Styled>,
}

/// A local stream's last screen and style table.
#[derive(Default)]
pub struct LocalColours {
    shown: Option<Shown>,
    table: StyleTable,
}

impl LocalColours {
    /// The change from what was sent to `snap`: only rows whose text or colours changed, unless
    /// the size changed, nothing was sent before, or the table is full (then every row).
    pub fn change(&mut self, snap: &ColourSnapshot) -> ColourEvent {
        let s = &snap.snapshot;
        let styled: Vec<Styled> = (0..s.lines.len()).map(|i| styled(&snap.attrs, i)).collect();
        let shown = self
            .shown
            .as_ref()
            .filter(|p| p.cols == s.cols && p.rows == s.rows);
        let mut changed: Vec<usize> = (0..s.lines.len())
            .filter(|&i| {
                shown.is_none_or(|p| {
                    p.lines.get(i) != Some(&s.lines[i]) || p.runs.get(i) != Some(&styled[i])
                })
            })
            .collect();
        let mut full = shown.is_none();
        if !full {
            let new: HashSet<Style> = changed
                .iter()
                .flat_map(|&i| styled[i].iter().map(|r| r.2))
                .filter(|st| self.table.get(st).is_none())
                .collect();
            if self.table.len() + new.len() > MAX_STYLES {
                full = true;
                changed = (0..s.lines.len()).collect();
            }
        }
        if full {
            self.table = StyleTable::new();
        }
        let before = self.table.len();
        let mut rows = BTreeMap::new();
        let mut runs = BTreeMap::new();
        for i in changed {
            let row = u16::try_from(i).unwrap_or(u16::MAX);
            rows.insert(row, s.lines[i].clone());
            runs.insert(row, number_runs(&styled[i], &mut self.table));
        }
        let styles = (before..self.table.len())
            .filter_map(|n| {
                let n = u16::try_from(n).ok()?;
                self.table.style(n).map(|st| (n, *st))
            })
            .collect();
        self.shown = Some(Shown {
            cols: s.cols,
            rows: s.rows,
            lines: s.lines.clone(),
            runs: styled,
        });
        ColourEvent {
            event: StreamEvent {
                stream: 0,
                seq: s.seq,
                cursor: s.cursor,
                cols: s.cols,
                height: s.rows,
                full,
                rows,
            },
            attrs: EventAttrs { styles, rows: runs },
        }
    }
}

/// Row `i`'s runs of `attrs` with their styles resolved (runs naming no style are left out).
fn styled(attrs: &ScreenAttrs, i: usize) -> Styled {
    attrs.rows.get(i).map_or_else(Vec::new, |runs| {
        runs.iter()
            .filter_map(|r| {
                let st = attrs.styles.get(usize::from(r.style))?;
                Some((r.start, r.len, *st))
            })
            .collect()
    })
}

/// A member's stream colours as the lead keeps them: the member's table and each row's runs.
#[derive(Default)]
pub struct RelayedColours {
    styles: BTreeMap<u16, Style>,
    /// Runs per row as the member sent them (checked).
    runs: Vec<Vec<Run>>,
    /// Runs per row as the lead last passed them on.
    sent: Vec<Vec<Run>>,
}

impl RelayedColours {
    /// Takes a member's change: `full` starts the table and the rows afresh (`height` rows); the
    /// rows in `carried` get the runs `attrs` has for them, or none. Styles numbered past the cap
    /// and runs that do not fit a row `cols` wide or name an unknown style are dropped, so a
    /// member cannot make the lead pass on more than a local screen could.
    pub fn take(
        &mut self,
        attrs: EventAttrs,
        carried: impl Iterator<Item = u16>,
        full: bool,
        height: u16,
        cols: u16,
    ) -> BTreeMap<u16, Style> {
        if full {
            self.styles.clear();
            self.runs = vec![Vec::new(); usize::from(height)];
            self.sent = vec![Vec::new(); usize::from(height)];
        }
        let mut added = BTreeMap::new();
        for (n, st) in attrs.styles {
            if usize::from(n) < MAX_STYLES {
                self.styles.insert(n, st);
                added.insert(n, st);
            }
        }
        let mut given = attrs.rows;
        for row in carried {
            let runs = given.remove(&row).unwrap_or_default();
            let ok = runs_fit(&runs, cols, |s| self.styles.contains_key(&s));
            if let Some(slot) = self.runs.get_mut(usize::from(row)) {
                *slot = if ok { runs } else { Vec::new() };
            }
        }
        if full {
            self.styles.clone()
        } else {
            added
        }
    }

    /// Whether row `row`'s runs differ from what was passed on.
    pub fn changed(&self, row: usize) -> bool {
        self.runs.get(row) != self.sent.get(row)
    }

    /// Row `row`'s runs, noted as passed on.
    pub fn pass(&mut self, row: usize) -> Vec<Run> {
        let runs = self.runs.get(row).cloned().unwrap_or_default();
        if let Some(slot) = self.sent.get_mut(row) {
            slot.clone_from(&runs);
        }
        runs
    }
}

/// A member's snapshot colours, checked: the table under the cap and every row's runs inside the
/// screen, or none at all.
pub fn checked(attrs: ScreenAttrs, rows: usize, cols: u16) -> ScreenAttrs {
    if attrs.fits(cols) && attrs.rows.len() == rows {
        attrs
    } else {
        ScreenAttrs::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use collie_crew::relay::{Colour, Cursor, PaneSnapshot};

    fn red() -> Style {
        Style {
            fg: Some(Colour::Indexed(1)),
            ..Style::default()
        }
    }

    fn snap(lines: &[&str], runs: Vec<Vec<Run>>, styles: Vec<Style>, seq: u64) -> ColourSnapshot {
        ColourSnapshot {
            snapshot: PaneSnapshot {
                machine: "m".into(),
                pane: "p1".into(),
                token: "abcd".into(),
                name: "n".into(),
                cols: 10,
                rows: u16::try_from(lines.len()).unwrap(),
                cursor: Cursor { x: 0, y: 0 },
                lines: lines.iter().map(|l| (*l).to_owned()).collect(),
                scrollback: Vec::new(),
                seq,
            },
            attrs: ScreenAttrs { styles, rows: runs },
        }
    }

    fn run(start: u16, len: u16, style: u16) -> Run {
        Run { start, len, style }
    }

    #[test]
    fn rows_whose_colour_changed_are_sent_with_styles_new_to_the_table() {
        let mut c = LocalColours::default();
        let first = c.change(&snap(&["ab", "cd"], vec![vec![], vec![]], vec![], 1));
        assert!(first.event.full);
        assert!(first.attrs.styles.is_empty());
        // Same text, row 1 turns red: it is sent, with the new style.
        let second = c.change(&snap(
            &["ab", "cd"],
            vec![vec![], vec![run(0, 2, 0)]],
            vec![red()],
            2,
        ));
        assert!(!second.event.full);
        assert_eq!(
            second.event.rows.keys().copied().collect::<Vec<_>>(),
            vec![1]
        );
        assert_eq!(second.attrs.rows[&1], vec![run(0, 2, 0)]);
        assert_eq!(second.attrs.styles, BTreeMap::from([(0, red())]));
        // The snapshot numbers red differently: the stream keeps red's number, so row 1 is not
        // sent again, and bold gets the next number.
        let bold = Style {
            bold: true,
            ..Style::default()
        };
        let third = c.change(&snap(
            &["xb", "cd"],
            vec![vec![run(0, 1, 0)], vec![run(0, 2, 1)]],
            vec![bold, red()],
            3,
        ));
        assert_eq!(
            third.event.rows.keys().copied().collect::<Vec<_>>(),
            vec![0]
        );
        assert_eq!(third.attrs.rows[&0], vec![run(0, 1, 1)]);
        assert_eq!(third.attrs.styles, BTreeMap::from([(1, bold)]));
        // A resize sends every row again, with the whole table started afresh.
        let mut wider = snap(
            &["xb", "cd"],
            vec![vec![], vec![run(0, 2, 0)]],
            vec![red()],
            4,
        );
        wider.snapshot.cols = 20;
        let resized = c.change(&wider);
        assert!(resized.event.full);
        assert_eq!(resized.event.rows.len(), 2);
        assert_eq!(resized.attrs.styles, BTreeMap::from([(0, red())]));
    }

    #[test]
    fn a_full_table_starts_afresh_with_a_full_event() {
        let mut c = LocalColours::default();
        let styles: Vec<Style> = (0..=255u8)
            .map(|i| Style {
                fg: Some(Colour::Rgb(i, 0, 0)),
                ..Style::default()
            })
            .collect();
        let runs: Vec<Vec<Run>> = (0..256u16).map(|i| vec![run(0, 1, i)]).collect();
        let lines: Vec<String> = (0..256).map(|i| format!("{i}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let first = c.change(&snap(&refs, runs, styles, 1));
        assert_eq!(first.attrs.styles.len(), MAX_STYLES);
        // One more style: the table cannot hold it, so the stream starts over.
        let mut more = snap(
            &refs,
            (0..256u16).map(|i| vec![run(0, 1, i)]).collect(),
            vec![],
            2,
        );
        more.attrs.styles = (0..=255u8)
            .map(|i| Style {
                fg: Some(Colour::Rgb(i, 1, 0)),
                ..Style::default()
            })
            .collect();
        let second = c.change(&more);
        assert!(second.event.full);
        assert_eq!(second.event.rows.len(), 256);
        assert_eq!(second.attrs.styles.len(), MAX_STYLES);
    }

    #[test]
    fn a_members_runs_that_do_not_fit_are_dropped() {
        let mut r = RelayedColours::default();
        let attrs = EventAttrs {
            styles: BTreeMap::from([(0, red()), (300, red())]),
            rows: BTreeMap::from([
                (0, vec![run(0, 2, 0)]),
                (1, vec![run(5, 10, 0)]),
                (2, vec![run(0, 1, 300)]),
            ]),
        };
        let styles = r.take(attrs, [0, 1, 2].into_iter(), true, 3, 10);
        assert_eq!(styles, BTreeMap::from([(0, red())]));
        assert_eq!(r.pass(0), vec![run(0, 2, 0)]);
        assert!(r.pass(1).is_empty(), "past the edge");
        assert!(r.pass(2).is_empty(), "a style past the cap");
        assert!(!r.changed(0));
    }

    #[test]
    fn a_members_snapshot_attrs_must_match_its_rows() {
        let ok = ScreenAttrs {
            styles: vec![red()],
            rows: vec![vec![run(0, 1, 0)]],
        };
        assert_eq!(checked(ok.clone(), 1, 10), ok);
        assert_eq!(checked(ok.clone(), 2, 10), ScreenAttrs::default());
        assert_eq!(checked(ok, 1, 0), ScreenAttrs::default());
    }
}
