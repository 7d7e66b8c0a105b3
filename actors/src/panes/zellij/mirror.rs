//! One zellij pane's mirror: the viewports `zellij subscribe` sends, drawn into a [`Screen`] so a
//! zellij pane is read, masked and coloured exactly as a tmux pane is (decision 0083).
//!
//! zellij sends the whole viewport, one string per row with its colours as SGR sequences, on every
//! change; it says nothing of lines that scrolled off, of rows the terminal soft-wrapped, or of the
//! cursor. So:
//! - **Scrolled lines**: when the new viewport's first rows are the old one's last rows (in plain
//!   text, and not all blank), the rows above them scrolled off and go into the scrollback, as a
//!   terminal would have put them; any other change is drawn in place.
//! - **Wrapped rows**: a row whose text fills the pane's width is taken as wrapped into the next,
//!   so masking (SPEC §6) reads the two as one logical line and a secret split across them is
//!   masked whole. A row that was full by chance is masked together with the next: more is masked,
//!   never less.
//! - **Only text and colours** reach the screen: every escape sequence but SGR (`ESC [ … m`) and
//!   every control character is dropped, so nothing in a row can move the cursor or change the
//!   mirror's modes.
//! - **The cursor** is where zellij last said (`list-panes`), else after the last row with text.

use unicode_width::UnicodeWidthChar;

use crate::panes::screen::Screen;

/// A zellij pane's screen and the plain text of the rows last drawn (to see what scrolled).
#[derive(Debug)]
pub struct Mirror {
    screen: Screen,
    scrollback: usize,
    shown: Vec<String>,
    cursor: Option<(u16, u16)>,
}

impl Mirror {
    /// A blank mirror of `rows` × `cols` keeping `scrollback` lines.
    pub fn new(rows: u16, cols: u16, scrollback: usize) -> Mirror {
        Mirror {
            screen: Screen::new(rows, cols, scrollback),
            scrollback,
            shown: Vec::new(),
            cursor: None,
        }
    }

    /// The screen, to read.
    pub fn screen(&self) -> &Screen {
        &self.screen
    }

    /// The screen, to read its scrollback (which pages through it).
    pub fn screen_mut(&mut self) -> &mut Screen {
        &mut self.screen
    }

    /// Keeps `lines` of scrollback from the next [`Mirror::seed`] on (the caller seeds it again).
    pub fn set_scrollback(&mut self, lines: usize) {
        self.scrollback = lines;
    }

    /// The pane's size as zellij lists it; rows are not reflowed.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        if self.screen.size() != (rows.max(1), cols.max(1)) {
            self.screen.resize(rows, cols);
        }
    }

    /// Where zellij says the cursor is (`(x, y)` in the pane), when it shows one.
    pub fn set_cursor(&mut self, at: Option<(u16, u16)>) {
        self.cursor = at;
        self.place_cursor();
    }

    /// The first update of a subscription: `scrollback` (oldest first) then `viewport`, drawn on a
    /// fresh screen so the history lands in its scrollback.
    pub fn seed(&mut self, scrollback: &[String], viewport: &[String]) {
        let (rows, cols) = self.screen.size();
        self.screen = Screen::new(rows, cols, self.scrollback);
        let mut bytes = Vec::new();
        for line in scrollback {
            push_row(&mut bytes, line, cols);
            if !fills(line, cols) {
                bytes.extend_from_slice(b"\r\n");
            }
        }
        if scrollback.last().is_some_and(|l| fills(l, cols)) {
            bytes.extend_from_slice(b"\r\n");
        }
        self.screen.feed(&bytes);
        // The history's last rows are still on the screen, above the cursor: scroll them up
        // into the scrollback before the viewport is drawn over them.
        let (_, y) = self.screen.cursor();
        if y > 0 {
            let mut up = format!("\x1b[{rows};1H").into_bytes();
            up.extend(std::iter::repeat_n(b'\n', usize::from(y)));
            self.screen.feed(&up);
        }
        self.shown.clear();
        self.draw(viewport);
    }

    /// A later update: the rows that scrolled off go to the scrollback, then the viewport is
    /// drawn. Returns true when history may have been lost: the viewport is full, its top row
    /// changed and no scroll explains it, as when more than a screen of output came at once — the
    /// caller then reads the pane's whole history again ([`Mirror::seed`] from `dump-screen`). A
    /// change below an unchanged top row (typing at the prompt) is drawn in place.
    pub fn update(&mut self, viewport: &[String]) -> bool {
        let plain: Vec<String> = viewport.iter().map(|l| plain(l)).collect();
        if plain == self.shown {
            // Only colours changed (or nothing): draw, no scrolling.
            self.draw(viewport);
            return false;
        }
        let (rows, _) = self.screen.size();
        let k = scrolled(&self.shown, &plain);
        let full = plain.len() >= usize::from(rows) && plain.iter().any(|l| !l.trim().is_empty());
        let top_moved = match (self.shown.first(), plain.first()) {
            (Some(old), Some(new)) => old.trim_end() != new.trim_end(),
            _ => false,
        };
        let lost = k == 0 && full && top_moved;
        if k > 0 {
            let (rows, _) = self.screen.size();
            // To the last row, then one line feed per scrolled row: the top rows move into the
            // scrollback as on a terminal.
            let mut bytes = format!("\x1b[{rows};1H").into_bytes();
            bytes.extend(std::iter::repeat_n(b'\n', k));
            self.screen.feed(&bytes);
        }
        self.draw(viewport);
        lost
    }

    fn draw(&mut self, viewport: &[String]) {
        let (rows, cols) = self.screen.size();
        let mut bytes = b"\x1b[0m\x1b[H\x1b[J".to_vec();
        let shown: Vec<&String> = viewport.iter().take(usize::from(rows)).collect();
        for (i, line) in shown.iter().enumerate() {
            push_row(&mut bytes, line, cols);
            let last = i + 1 == shown.len();
            if !last && !fills(line, cols) {
                bytes.extend_from_slice(b"\r\n");
            }
        }
        bytes.extend_from_slice(b"\x1b[0m");
        self.screen.feed(&bytes);
        self.shown = shown.iter().map(|l| plain(l)).collect();
        self.place_cursor();
    }

    fn place_cursor(&mut self) {
        let (x, y) = self.cursor.unwrap_or_else(|| {
            let row = self
                .shown
                .iter()
                .rposition(|l| !l.trim_end().is_empty())
                .unwrap_or(0);
            let width: usize = self.shown.get(row).map_or(0, |l| {
                l.trim_end().chars().map(|c| c.width().unwrap_or(0)).sum()
            });
            (
                u16::try_from(width).unwrap_or(u16::MAX),
                u16::try_from(row).unwrap_or(0),
            )
        });
        let (rows, cols) = self.screen.size();
        let (x, y) = (x.min(cols.saturating_sub(1)), y.min(rows.saturating_sub(1)));
        self.screen
            .feed(format!("\x1b[{};{}H", y + 1, x + 1).as_bytes());
    }
}

/// How many rows scrolled off between `old` and `new` (plain text): the smallest `k` such that
/// `new` starts with `old`'s rows from `k` on, when those are not all blank; 0 when none does.
fn scrolled(old: &[String], new: &[String]) -> usize {
    if old.is_empty() {
        return 0;
    }
    (1..old.len())
        .find(|&k| {
            let kept = &old[k..];
            new.len() >= kept.len()
                && kept
                    .iter()
                    .zip(new)
                    .all(|(a, b)| a.trim_end() == b.trim_end())
                && kept.iter().any(|l| !l.trim().is_empty())
        })
        .unwrap_or(0)
}

/// Appends one row: SGR reset, then `line` with every escape but SGR and every control character
/// dropped, cut at `cols` columns.
fn push_row(out: &mut Vec<u8>, line: &str, cols: u16) {
    out.extend_from_slice(b"\x1b[0m");
    let mut width = 0usize;
    for piece in pieces(line) {
        match piece {
            Piece::Sgr(s) => out.extend_from_slice(s.as_bytes()),
            Piece::Char(c) => {
                let w = c.width().unwrap_or(0);
                if width + w > usize::from(cols) {
                    break;
                }
                width += w;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// Whether `line`'s text fills `cols` columns (and so is taken as wrapped into the next row).
fn fills(line: &str, cols: u16) -> bool {
    let width: usize = plain(line).chars().map(|c| c.width().unwrap_or(0)).sum();
    width >= usize::from(cols)
}

/// `line` without its escape sequences and control characters.
fn plain(line: &str) -> String {
    pieces(line)
        .filter_map(|p| match p {
            Piece::Char(c) => Some(c),
            Piece::Sgr(_) => None,
        })
        .collect()
}

/// A piece of a row: an SGR sequence, or a printable character.
enum Piece<'a> {
    Sgr(&'a str),
    Char(char),
}

/// The SGR sequences and printable characters of `line`, in order; every other escape sequence
/// (CSI, OSC, …) and control character is skipped.
fn pieces(line: &str) -> impl Iterator<Item = Piece<'_>> + '_ {
    let mut rest = line;
    std::iter::from_fn(move || loop {
        let c = rest.chars().next()?;
        if c == '\x1b' {
            let (skip, sgr) = escape(rest);
            let (seq, after) = rest.split_at(skip);
            rest = after;
            if sgr {
                return Some(Piece::Sgr(seq));
            }
            continue;
        }
        rest = &rest[c.len_utf8()..];
        if !c.is_control() {
            return Some(Piece::Char(c));
        }
    })
}

/// The length in bytes of the escape sequence at the start of `s` (which starts with ESC), and
/// whether it is an SGR (`ESC [` parameters `m`).
fn escape(s: &str) -> (usize, bool) {
    let b = s.as_bytes();
    match b.get(1) {
        Some(b'[') => {
            // CSI: parameters and intermediates (0x20–0x3F), then a final byte (0x40–0x7E).
            let mut i = 2;
            while i < b.len() && (0x20..=0x3f).contains(&b[i]) {
                i += 1;
            }
            match b.get(i) {
                Some(f) if (0x40..=0x7e).contains(f) => {
                    let params_ok = b[2..i]
                        .iter()
                        .all(|x| x.is_ascii_digit() || *x == b';' || *x == b':');
                    (i + 1, *f == b'm' && params_ok)
                }
                _ => (i, false),
            }
        }
        Some(b']') => {
            // OSC: up to BEL or ESC \.
            let end = s[2..].find(['\x07', '\x1b']).map_or(s.len(), |at| {
                let at = at + 2;
                if b[at] == 0x07 {
                    at + 1
                } else {
                    (at + 2).min(s.len())
                }
            });
            (end, false)
        }
        Some(c) => (1 + char_len(*c), false),
        None => (1, false),
    }
}

/// The length of the UTF-8 character starting with byte `b` (1 for anything odd).
fn char_len(b: u8) -> usize {
    match b {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(m: &Mirror) -> Vec<String> {
        m.screen().rows_masked(&|s: &str| s.to_owned())
    }

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_viewport_is_drawn_with_its_colours_and_its_history() {
        let mut m = Mirror::new(3, 20, 100);
        m.seed(
            &lines(&["old 1", "old 2"]),
            &lines(&["$ ls", "\u{1b}[31mred\u{1b}[0m file", "$"]),
        );
        assert_eq!(rows(&m), ["$ ls", "red file", "$"]);
        assert_eq!(
            m.screen_mut()
                .scrollback_masked(10, &|s: &str| s.to_owned()),
            ["old 1", "old 2"]
        );
        let attrs = m.screen().attrs();
        assert!(
            attrs.rows[0].is_empty(),
            "an uncoloured row has no runs: {attrs:?}"
        );
        assert!(
            !attrs.rows[1].is_empty(),
            "the red word keeps its colour: {attrs:?}"
        );
    }

    #[test]
    fn rows_that_scrolled_off_go_to_the_scrollback() {
        let mut m = Mirror::new(3, 20, 100);
        m.seed(&[], &lines(&["a", "b", "c"]));
        assert!(!m.update(&lines(&["b", "c", "d"])));
        assert_eq!(rows(&m), ["b", "c", "d"]);
        assert!(!m.update(&lines(&["d", "e", "f"])));
        assert_eq!(rows(&m), ["d", "e", "f"]);
        assert_eq!(
            m.screen_mut()
                .scrollback_masked(10, &|s: &str| s.to_owned()),
            ["a", "b", "c"]
        );
        // A change in place (typing at the prompt) scrolls nothing.
        assert!(!m.update(&lines(&["d", "e", "f!"])));
        assert_eq!(
            m.screen_mut()
                .scrollback_masked(10, &|s: &str| s.to_owned()),
            ["a", "b", "c"]
        );
        // More than a screen at once: history may be lost — said. Also when the new screen ends
        // with a prompt like the old one's (its top row is what moved).
        assert!(m.update(&lines(&["x", "y", "z"])));
        let mut prompt = Mirror::new(3, 20, 100);
        prompt.seed(&[], &lines(&["# "]));
        assert!(prompt.update(&lines(&["98", "99", "# "])));
        // Blank rows moving up are not taken as scrolled text.
        let mut blank = Mirror::new(3, 20, 100);
        blank.seed(&[], &lines(&["x", "", ""]));
        // (Whether it asks for the history again does not matter here: a reread is harmless.)
        let _ = blank.update(&lines(&["", "", "y"]));
        assert_eq!(
            blank
                .screen_mut()
                .scrollback_masked(10, &|s: &str| s.to_owned()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_full_row_is_masked_with_the_next_as_one_line() {
        // A secret split by the pane's width: masked whole, as on a tmux pane.
        let mut m = Mirror::new(2, 10, 10);
        m.seed(&[], &lines(&["key=SECRE", "T123 done"]));
        let mask = |s: &str| s.replace("SECRET123", "•••••••••");
        assert_eq!(
            m.screen().rows_masked(&mask),
            ["key=SECRE", "T123 done"],
            "not full: two lines"
        );
        let mut m = Mirror::new(2, 10, 10);
        m.seed(&[], &lines(&["key=SECRET", "123 done"]));
        let mask = |s: &str| s.replace("SECRET123", "•••••••••");
        assert_eq!(m.screen().rows_masked(&mask), ["key=••••••", "••• done"]);
    }

    #[test]
    fn only_text_and_colours_reach_the_screen() {
        let mut m = Mirror::new(3, 30, 10);
        // Cursor moves, a clear, a title change, a bell and a backspace: all dropped.
        m.seed(
            &[],
            &lines(&[
                "a\u{1b}[2Jb\u{1b}[1;1Hc\u{1b}]0;title\u{7}d\u{8}e",
                "x\u{1b}[?1049hy",
                "\u{1b}[1;32mgreen",
            ]),
        );
        assert_eq!(rows(&m), ["abcde", "xy", "green"]);
        assert_eq!(plain("\u{1b}[38;2;1;2;3mrgb\u{1b}[0m"), "rgb");
        // An unfinished sequence at the end of a row is dropped too.
        assert_eq!(plain("ab\u{1b}["), "ab");
        assert_eq!(plain("ab\u{1b}]0;t"), "ab");
    }

    #[test]
    fn rows_wider_than_the_pane_are_cut_and_the_cursor_is_placed() {
        let mut m = Mirror::new(2, 5, 10);
        m.seed(&[], &lines(&["abcdefgh", "$ "]));
        assert_eq!(rows(&m)[0], "abcde");
        assert_eq!(m.screen().cursor(), (1, 1), "after the last text");
        m.set_cursor(Some((2, 1)));
        assert_eq!(m.screen().cursor(), (2, 1));
        m.set_cursor(Some((99, 99)));
        assert_eq!(m.screen().cursor(), (4, 1), "kept on the screen");
    }
}
