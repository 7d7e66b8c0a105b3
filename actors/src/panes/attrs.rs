//! A screen's colours and attributes as runs (SPEC §5 "Colours"; decision 0043).
//!
//! Each visible row becomes a list of runs `[start_column, length, style]` in display columns —
//! a wide character's two columns belong to its run — with neighbouring cells of one style merged
//! and default-style cells left out. Styles are numbered by a [`StyleTable`] in order of first
//! appearance. The table holds at most [`MAX_STYLES`] styles: a program that paints thousands of
//! colours gets its first 256 and the rest of its cells in the default style, so a snapshot holds
//! at most 256 styles and, per row, at most one run per column.
//!
//! Only the visible rows get runs; scrollback lines stay plain text (reading the scrollback's
//! cells again for colour would double the cost of a deep scrollback read for lines the phone
//! shows rarely).

use std::collections::HashMap;

use collie_crew::relay::{Colour, Run, ScreenAttrs, Style, MAX_STYLES};

/// Styles numbered in order of first appearance, at most [`MAX_STYLES`].
#[derive(Debug, Clone, Default)]
pub struct StyleTable {
    styles: Vec<Style>,
    numbers: HashMap<Style, u16>,
}

impl StyleTable {
    /// An empty table.
    pub fn new() -> StyleTable {
        StyleTable::default()
    }

    /// The number of `style`, adding it if there is room; `None` when the table is full and does
    /// not hold it.
    pub fn number(&mut self, style: Style) -> Option<u16> {
        if let Some(n) = self.numbers.get(&style) {
            return Some(*n);
        }
        if self.styles.len() >= MAX_STYLES {
            return None;
        }
        let n = u16::try_from(self.styles.len()).ok()?;
        self.styles.push(style);
        self.numbers.insert(style, n);
        Some(n)
    }

    /// The number `style` already has, without adding it.
    pub fn get(&self, style: &Style) -> Option<u16> {
        self.numbers.get(style).copied()
    }

    /// Style `n`.
    pub fn style(&self, n: u16) -> Option<&Style> {
        self.styles.get(usize::from(n))
    }

    /// The styles, style `i` at index `i`.
    pub fn styles(&self) -> &[Style] {
        &self.styles
    }

    /// Styles held.
    pub fn len(&self) -> usize {
        self.styles.len()
    }

    /// Whether no style is held.
    pub fn is_empty(&self) -> bool {
        self.styles.is_empty()
    }
}

/// The runs of every visible row of `screen`, numbered by a fresh table.
pub fn screen_attrs(screen: &vt100::Screen) -> ScreenAttrs {
    let (rows, _) = screen.size();
    let mut table = StyleTable::new();
    let rows = (0..rows)
        .map(|row| number_runs(&row_styles(screen, row), &mut table))
        .collect();
    ScreenAttrs {
        styles: table.styles,
        rows,
    }
}

/// Numbers styled runs with `table`; runs whose style does not fit the table are dropped (drawn
/// in the default style).
pub fn number_runs(runs: &[(u16, u16, Style)], table: &mut StyleTable) -> Vec<Run> {
    runs.iter()
        .filter_map(|(start, len, style)| {
            table.number(*style).map(|n| Run {
                start: *start,
                len: *len,
                style: n,
            })
        })
        .collect()
}

/// Row `row` of `screen` as `(start, len, style)` runs of non-default style, merged.
fn row_styles(screen: &vt100::Screen, row: u16) -> Vec<(u16, u16, Style)> {
    let (_, cols) = screen.size();
    let mut out: Vec<(u16, u16, Style)> = Vec::new();
    let mut prev = Style::default();
    for col in 0..cols {
        let style = match screen.cell(row, col) {
            // The second column of a wide character is drawn with the first.
            Some(cell) if cell.is_wide_continuation() => prev,
            Some(cell) => style_of(cell),
            None => Style::default(),
        };
        prev = style;
        if style.is_default() {
            continue;
        }
        match out.last_mut() {
            Some((start, len, s)) if *s == style && *start + *len == col => *len += 1,
            _ => out.push((col, 1, style)),
        }
    }
    out
}

fn style_of(cell: &vt100::Cell) -> Style {
    Style {
        fg: colour(cell.fgcolor()),
        bg: colour(cell.bgcolor()),
        bold: cell.bold(),
        italic: cell.italic(),
        underline: cell.underline(),
        inverse: cell.inverse(),
    }
}

fn colour(c: vt100::Color) -> Option<Colour> {
    match c {
        vt100::Color::Default => None,
        vt100::Color::Idx(i) => Some(Colour::Indexed(i)),
        vt100::Color::Rgb(r, g, b) => Some(Colour::Rgb(r, g, b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(rows: u16, cols: u16, bytes: &[u8]) -> vt100::Parser {
        let mut p = vt100::Parser::new(rows, cols, 0);
        p.process(bytes);
        p
    }

    fn run(start: u16, len: u16, style: u16) -> Run {
        Run { start, len, style }
    }

    #[test]
    fn sgr_colours_and_attributes_become_numbered_runs() {
        let p = parse(
            2,
            40,
            b"\x1b[31mred\x1b[0m \x1b[38;5;208mor\x1b[0m \x1b[38;2;1;2;3mtc\x1b[0m\r\n\
              \x1b[1mB\x1b[0m\x1b[3mI\x1b[0m\x1b[4mU\x1b[0m\x1b[7mV\x1b[0m\x1b[42mg\x1b[0m",
        );
        let a = screen_attrs(p.screen());
        assert_eq!(a.rows[0], vec![run(0, 3, 0), run(4, 2, 1), run(7, 2, 2)]);
        assert_eq!(a.styles[0].fg, Some(Colour::Indexed(1)));
        assert_eq!(a.styles[1].fg, Some(Colour::Indexed(208)));
        assert_eq!(a.styles[2].fg, Some(Colour::Rgb(1, 2, 3)));
        let row1: Vec<Style> = a.rows[1]
            .iter()
            .map(|r| a.styles[usize::from(r.style)])
            .collect();
        assert!(row1[0].bold && row1[1].italic && row1[2].underline && row1[3].inverse);
        assert_eq!(row1[4].bg, Some(Colour::Indexed(2)));
        assert_eq!(a.rows[1].len(), 5);
    }

    #[test]
    fn wide_characters_cover_two_columns() {
        let p = parse(1, 10, "a\x1b[32m日本\x1b[0mb".as_bytes());
        let a = screen_attrs(p.screen());
        assert_eq!(a.rows[0], vec![run(1, 4, 0)]);
    }

    #[test]
    fn the_table_is_capped_and_runs_never_exceed_the_columns() {
        let mut bytes = Vec::new();
        for i in 0..2000u32 {
            bytes.extend(format!("\x1b[38;2;{};{};0mx", i % 256, i / 256).as_bytes());
        }
        let p = parse(25, 80, &bytes);
        let a = screen_attrs(p.screen());
        assert_eq!(a.styles.len(), MAX_STYLES);
        assert!(a.fits(80));
        assert!(a.rows.iter().all(|r| r.len() <= 80));
    }
}
