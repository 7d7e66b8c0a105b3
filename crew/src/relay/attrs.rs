//! Colours and attributes of a relayed screen (SPEC §5 "Colours"; decision 0043).
//!
//! A screen's text stays in [`PaneSnapshot`] and [`StreamEvent`], which are wire types older
//! members know and so can never grow a field. What a colour-aware member adds travels beside
//! them, in a message of its own ([`ColourSnapshot`], [`ColourEvent`]), asked for with the kinds
//! [`super::RelayKind::SnapshotColour`] and [`super::RelayKind::SubscribeColour`] that only a member
//! declaring [`crate::hello::Capability::PaneColour`] is sent. An older member's panes simply come
//! without colours.
//!
//! Runs are in display columns (a wide character counts two), so masking — which replaces a
//! secret's characters one for one with `•` and never changes a width — leaves them where they
//! were: the lead masks the text again and passes the runs on unchanged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{PaneSnapshot, StreamEvent};

/// Most distinct styles a screen's table holds; cells of further styles are shown in the default
/// style. Bounds what a program painting every cell differently can make a snapshot carry.
pub const MAX_STYLES: usize = 256;

/// A colour: one of the 256 indexed colours (0–15 the theme's palette), or true colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Colour {
    /// An indexed colour, 0–255.
    Indexed(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

/// How a run of cells is drawn. The default style (no colours, no attributes) never has a run.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Style {
    /// Foreground; `None` is the theme's default.
    pub fg: Option<Colour>,
    /// Background; `None` is the theme's default.
    pub bg: Option<Colour>,
    /// Bold.
    pub bold: bool,
    /// Italic.
    pub italic: bool,
    /// Underlined.
    pub underline: bool,
    /// Foreground and background swapped.
    pub inverse: bool,
}

impl Style {
    /// Whether this is the default style (cells drawn without a run).
    pub fn is_default(&self) -> bool {
        *self == Style::default()
    }
}

/// Cells `start..start + len` of a row (display columns) drawn in style `style` of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// First column, 0-based.
    pub start: u16,
    /// Columns covered, at least 1.
    pub len: u16,
    /// The style's number in the table.
    pub style: u16,
}

/// The colours of a snapshot's visible rows: a style table and, per row of `lines`, its runs in
/// column order (default-style cells have none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenAttrs {
    /// Style `i` of the table is `styles[i]`; at most [`MAX_STYLES`].
    pub styles: Vec<Style>,
    /// One list of runs per visible row, at most one run per column.
    pub rows: Vec<Vec<Run>>,
}

impl ScreenAttrs {
    /// Whether these attrs are well formed for a screen `cols` wide: at most [`MAX_STYLES`]
    /// styles, runs inside the row, in order, not overlapping, naming styles of the table. What
    /// the lead checks of a member's attrs before it passes them on.
    pub fn fits(&self, cols: u16) -> bool {
        self.styles.len() <= MAX_STYLES
            && self
                .rows
                .iter()
                .all(|runs| runs_fit(runs, cols, |s| usize::from(s) < self.styles.len()))
    }
}

/// Whether `runs` lie inside a row `cols` wide, in order, without overlapping, each of at least one
/// column and of a style `known`.
pub fn runs_fit(runs: &[Run], cols: u16, known: impl Fn(u16) -> bool) -> bool {
    let mut next = 0u32;
    runs.len() <= usize::from(cols)
        && runs.iter().all(|r| {
            let start = u32::from(r.start);
            let end = start + u32::from(r.len);
            let ok = r.len > 0 && start >= next && end <= u32::from(cols) && known(r.style);
            next = end;
            ok
        })
}

/// A snapshot with its colours: the answer to [`super::RelayKind::SnapshotColour`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColourSnapshot {
    /// The screen's text, as a plain snapshot has it.
    pub snapshot: PaneSnapshot,
    /// Its visible rows' colours (`rows` parallel to `snapshot.lines`).
    pub attrs: ScreenAttrs,
}

/// The colours of one stream event: the runs of the rows it carries and the styles added to the
/// stream's table since the last event (every style when the event is `full`, which starts the
/// table afresh).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventAttrs {
    /// Styles new to the stream's table, by number.
    pub styles: BTreeMap<u16, Style>,
    /// Runs of the rows the event carries, by row.
    pub rows: BTreeMap<u16, Vec<Run>>,
}

/// A stream event with its colours, sent on a [`super::RelayKind::SubscribeColour`] stream as
/// [`super::MemberMessage::ColourEvent`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColourEvent {
    /// The change of the text, as a plain stream has it.
    pub event: StreamEvent,
    /// Its colours.
    pub attrs: EventAttrs,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: u16, len: u16, style: u16) -> Run {
        Run { start, len, style }
    }

    #[test]
    fn runs_must_lie_in_order_inside_the_row_and_name_known_styles() {
        let known = |s: u16| s < 2;
        assert!(runs_fit(&[run(0, 2, 0), run(2, 3, 1)], 5, known));
        assert!(
            !runs_fit(&[run(0, 2, 0), run(1, 3, 1)], 5, known),
            "overlap"
        );
        assert!(!runs_fit(&[run(3, 3, 0)], 5, known), "past the edge");
        assert!(!runs_fit(&[run(0, 0, 0)], 5, known), "empty");
        assert!(!runs_fit(&[run(0, 1, 2)], 5, known), "unknown style");
        assert!(!runs_fit(&[run(2, 1, 0), run(0, 1, 0)], 5, known), "order");
        assert!(runs_fit(&[run(u16::MAX - 1, 1, 0)], u16::MAX, known));
        assert!(!runs_fit(&[run(u16::MAX, u16::MAX, 0)], u16::MAX, known));
    }

    #[test]
    fn a_table_past_the_cap_does_not_fit() {
        let attrs = ScreenAttrs {
            styles: vec![Style::default(); MAX_STYLES + 1],
            rows: vec![],
        };
        assert!(!attrs.fits(80));
    }
}
