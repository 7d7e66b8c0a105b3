//! The terminal screen model shared by hosted (pty) panes and tmux mirrors.
//!
//! A [`Screen`] wraps a `vt100::Parser`: bytes a program writes go in with [`Screen::feed`], and
//! the visible rows and scrollback come out as plain text, already masked. Masking works on
//! LOGICAL lines (SPEC §6): rows the terminal soft-wrapped are joined into one string, masked as
//! one, and split back with the same number of characters per row, so a secret wrapped across two
//! rows leaks neither half. This relies on the mask replacing characters one for one (`•` per
//! masked character), which SPEC §6 requires; a mask that changes the length still never gets the
//! rows masked one by one — its output is cut at the original row lengths.
//!
//! The model holds no lock and does no I/O; the owner (pty pane or tmux mirror) serialises access.

/// The SHA-256 (hex) of `lines`, each followed by a newline: what a screen prompt's card is made
/// from, checked again before a tap types into the pane (SPEC §10.2).
pub fn lines_hash(lines: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// Rows of the scrollback read back before the first requested line (or before the visible
/// screen) to find the start of a logical line that wraps into it. Bounds the work per read; a
/// logical line longer than this many rows is masked from this point on.
const MAX_LOGICAL_ROWS: usize = 64;

/// One row of the terminal as plain text: one `char` per column (a wide character fills two
/// columns and counts once), untrimmed, plus whether the terminal soft-wrapped it into the next.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RowText {
    text: String,
    wrapped: bool,
}

/// A terminal screen: visible rows, scrollback and cursor, fed with the program's output.
pub struct Screen {
    parser: vt100::Parser,
    /// Rows of the logical line that ends the scrollback and continues into visible row 0,
    /// oldest first (empty when row 0 starts a line). Refreshed after every change so that
    /// [`Screen::rows_masked`] can stay `&self`.
    boundary_prefix: Vec<RowText>,
    /// Lines of scrollback in use, refreshed with `boundary_prefix`.
    scrollback_in_use: usize,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (rows, cols) = self.size();
        f.debug_struct("Screen")
            .field("rows", &rows)
            .field("cols", &cols)
            .field("scrollback_in_use", &self.scrollback_in_use)
            .finish_non_exhaustive()
    }
}

impl Screen {
    /// A blank screen of `rows` × `cols` (each at least 1) keeping up to `scrollback` lines above
    /// the visible rows.
    pub fn new(rows: u16, cols: u16, scrollback: usize) -> Screen {
        Screen {
            parser: vt100::Parser::new(rows.max(1), cols.max(1), scrollback),
            boundary_prefix: Vec::new(),
            scrollback_in_use: 0,
        }
    }

    /// Applies bytes the program wrote to its terminal.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.refresh_boundary();
    }

    /// Resizes the terminal (each dimension at least 1). Rows are not reflowed.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.screen_mut().set_size(rows.max(1), cols.max(1));
        self.refresh_boundary();
    }

    /// The size as `(rows, cols)`.
    pub fn size(&self) -> (u16, u16) {
        self.parser.screen().size()
    }

    /// The cursor as `(x, y)`: column and row, 0-based.
    pub fn cursor(&self) -> (u16, u16) {
        let (row, col) = self.parser.screen().cursor_position();
        (col, row)
    }

    /// Lines of scrollback currently held above the visible rows.
    pub fn scrollback_len(&self) -> usize {
        self.scrollback_in_use
    }

    /// The visible rows as plain text with trailing spaces trimmed, each logical line masked as
    /// one string by `mask` (see the module doc).
    pub fn rows_masked(&self, mask: &dyn Fn(&str) -> String) -> Vec<String> {
        let mut rows = self.boundary_prefix.clone();
        let skip = rows.len();
        rows.extend(visible_rows(self.parser.screen()));
        let mut out = mask_rows(&rows, mask);
        out.drain(..skip);
        out
    }

    /// The colours and attributes of the visible rows as runs (see [`super::attrs`]). Masking
    /// keeps every width, so these runs fit the masked rows of [`Screen::rows_masked`].
    pub fn attrs(&self) -> collie_crew::relay::ScreenAttrs {
        super::attrs::screen_attrs(self.parser.screen())
    }

    /// Up to `n` lines of scrollback just above the visible rows, oldest first, trimmed and
    /// masked per logical line like [`Screen::rows_masked`].
    pub fn scrollback_masked(&mut self, n: usize, mask: &dyn Fn(&str) -> String) -> Vec<String> {
        let total = self.scrollback_in_use;
        let n = n.min(total);
        if n == 0 {
            return Vec::new();
        }
        // Lines before the first requested one that belong to its logical line, then the
        // requested lines, then visible rows that finish the last requested line.
        let first = total - n;
        let lead_start = first.saturating_sub(MAX_LOGICAL_ROWS);
        let mut rows = self.scrollback_rows(lead_start, total);
        let mut skip = 0;
        for (i, row) in rows[..first - lead_start].iter().enumerate().rev() {
            if !row.wrapped {
                skip = i + 1;
                break;
            }
        }
        rows.drain(..skip);
        let lead = first - lead_start - skip;
        if rows.last().is_some_and(|r| r.wrapped) {
            for row in visible_rows(self.parser.screen()).take(MAX_LOGICAL_ROWS) {
                let wrapped = row.wrapped;
                rows.push(row);
                if !wrapped {
                    break;
                }
            }
        }
        let mut out = mask_rows(&rows, mask);
        out.truncate(lead + n);
        out.drain(..lead);
        out
    }

    /// Best effort: whether the line under the cursor looks like a password prompt
    /// (`password:` or `passphrase`, any case, or `Password for`).
    pub fn asking_password(&self) -> bool {
        let screen = self.parser.screen();
        let (row, _) = screen.cursor_position();
        let Some(line) = visible_rows(screen).nth(usize::from(row)) else {
            return false;
        };
        let lower = line.text.to_lowercase();
        lower.contains("password:")
            || lower.contains("passphrase")
            || line.text.contains("Password for")
    }

    /// Estimated bytes this screen holds, for the global buffer cap (SPEC §5): the visible rows
    /// and the scrollback in use, times the size of a cell.
    pub fn allocated_bytes(&self) -> usize {
        let (rows, _) = self.size();
        (usize::from(rows) + self.scrollback_in_use).saturating_mul(self.line_bytes())
    }

    /// Estimated bytes one line of this screen holds (its width times the size of a cell): what
    /// each more line of scrollback costs.
    pub fn line_bytes(&self) -> usize {
        let (_, cols) = self.size();
        usize::from(cols).saturating_mul(std::mem::size_of::<vt100::Cell>())
    }

    /// Rows `from..to` of the scrollback (0 is the oldest line held).
    fn scrollback_rows(&mut self, from: usize, to: usize) -> Vec<RowText> {
        let total = self.scrollback_in_use;
        let screen = self.parser.screen_mut();
        let height = usize::from(screen.size().0);
        let mut out = Vec::with_capacity(to.saturating_sub(from));
        let mut at = from;
        while at < to {
            // With offset `total - at` the visible row 0 is scrollback line `at`.
            screen.set_scrollback(total - at);
            let take = (to - at).min(height).min(total - at);
            out.extend(visible_rows(screen).take(take));
            at += take;
        }
        screen.set_scrollback(0);
        out
    }

    /// Recomputes the scrollback length in use and the rows of the scrollback that belong to the
    /// logical line continuing into visible row 0.
    fn refresh_boundary(&mut self) {
        let screen = self.parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let total = screen.scrollback();
        screen.set_scrollback(0);
        self.scrollback_in_use = total;
        self.boundary_prefix.clear();
        if total == 0 {
            return;
        }
        let screen = self.parser.screen_mut();
        screen.set_scrollback(1);
        let last_wrapped = screen.row_wrapped(0);
        screen.set_scrollback(0);
        if !last_wrapped {
            return;
        }
        let from = total.saturating_sub(MAX_LOGICAL_ROWS);
        let mut rows = self.scrollback_rows(from, total);
        let mut start = 0;
        // The last row is wrapped; the logical line starts after the last unwrapped row.
        for (i, row) in rows[..rows.len() - 1].iter().enumerate().rev() {
            if !row.wrapped {
                start = i + 1;
                break;
            }
        }
        rows.drain(..start);
        self.boundary_prefix = rows;
    }
}

/// The visible rows of `screen` as untrimmed text, one `char` per displayed character.
fn visible_rows(screen: &vt100::Screen) -> impl Iterator<Item = RowText> + '_ {
    let (rows, cols) = screen.size();
    (0..rows).map(move |row| {
        let mut text = String::with_capacity(usize::from(cols));
        for col in 0..cols {
            match screen.cell(row, col) {
                Some(cell) if cell.is_wide_continuation() => {}
                Some(cell) if cell.has_contents() => text.push_str(cell.contents()),
                _ => text.push(' '),
            }
        }
        RowText {
            text,
            wrapped: screen.row_wrapped(row),
        }
    })
}

/// Masks rows that arrived as plain text — a member's screen, relayed through the lead (SPEC §6:
/// the lead masks the whole screen again, exactly as it masks its own) — per logical line.
///
/// Plain rows carry no wrap flags, so a row that fills the screen's width is taken to continue
/// into the next: that is what a terminal's soft wrap looks like, and a member that masks nothing
/// sends its wrapped rows that way. (A row that ends before the edge was not wrapped by the
/// terminal, and a secret has no blank for a row to end on.) PEM and PGP blocks are seen across
/// rows because all logical lines are masked in one call, as for a local screen. Returns one
/// trimmed string per row.
pub fn mask_plain_rows(rows: &[String], cols: u16, mask: &dyn Fn(&str) -> String) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let rows: Vec<RowText> = rows
        .iter()
        .map(|text| RowText {
            text: text.clone(),
            wrapped: cols > 0 && text.width() >= usize::from(cols),
        })
        .collect();
    mask_rows(&rows, mask)
}

/// Masks `rows` per logical line and returns one trimmed string per row.
fn mask_rows(rows: &[RowText], mask: &dyn Fn(&str) -> String) -> Vec<String> {
    // Group soft-wrapped rows into logical lines, remembering each row's character count.
    let mut logical: Vec<(String, Vec<usize>)> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let mut end = start;
        while end + 1 < rows.len() && rows[end].wrapped {
            end += 1;
        }
        let mut line = String::new();
        let mut counts = Vec::with_capacity(end + 1 - start);
        for row in &rows[start..=end] {
            counts.push(row.text.chars().count());
            line.push_str(&row.text);
        }
        let trimmed = line.trim_end_matches(' ').len();
        line.truncate(trimmed);
        logical.push((line, counts));
        start = end + 1;
    }
    // Mask all logical lines in one call, so shapes that span lines (a PEM private key block) are
    // seen whole. The masker never adds or removes newlines; should the line count still differ,
    // fall back to masking line by line.
    let joined: Vec<&str> = logical.iter().map(|(l, _)| l.as_str()).collect();
    let masked_all = mask(&joined.join("\n"));
    let mut masked: Vec<String> = masked_all.split('\n').map(str::to_owned).collect();
    if masked.len() != logical.len() {
        masked = logical.iter().map(|(l, _)| mask(l)).collect();
    }
    let mut out = Vec::with_capacity(rows.len());
    for ((_, counts), line) in logical.iter().zip(masked) {
        let mut chars = line.chars();
        for (i, count) in counts.iter().enumerate() {
            let piece: String = if i + 1 == counts.len() {
                chars.by_ref().collect()
            } else {
                chars.by_ref().take(*count).collect()
            };
            out.push(piece.trim_end_matches(' ').to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rows_that_fill_the_width_are_masked_as_one_line() {
        // A member that masks nothing sends a token the terminal wrapped at 20 columns.
        let rows = vec![
            "tok=ghp_aB3dE5gH7jK9".to_owned(),
            "mN1pQ3sT5vW7yZ9bC1dF".to_owned(),
            "3hJ5".to_owned(),
            "plain".to_owned(),
        ];
        let out = mask_plain_rows(&rows, 20, &mask_ghp);
        assert_no_leak(&out);
        assert_eq!(out[0], "tok=ghp_a•••••••••••");
        assert_eq!(out[3], "plain");
        // Rows that end before the edge are lines of their own.
        let short = vec!["ghp_aB3dE5gH7jK9".to_owned(), "mN1pQ".to_owned()];
        assert_eq!(mask_plain_rows(&short, 20, &mask_ghp), short);
    }

    /// Masks GitHub classic tokens (`ghp_` + 36 alphanumerics), keeping `ghp_` and one more char.
    fn mask_ghp(s: &str) -> String {
        let re = regex::Regex::new("ghp_[A-Za-z0-9]{36}").expect("static regex");
        re.replace_all(s, |c: &regex::Captures<'_>| {
            let m = &c[0];
            let keep: String = m.chars().take(5).collect();
            let rest = "•".repeat(m.chars().count() - 5);
            format!("{keep}{rest}")
        })
        .into_owned()
    }

    const TOKEN: &str = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5";

    fn assert_no_leak(lines: &[String]) {
        let all = lines.concat();
        assert!(!all.contains(&TOKEN[5..15]), "token head leaked: {lines:?}");
        assert!(
            !all.contains(&TOKEN[TOKEN.len() - 10..]),
            "token tail leaked: {lines:?}"
        );
        for line in lines {
            assert!(!line.contains("aB3dE"), "secret part leaked in {line:?}");
        }
    }

    #[test]
    fn plain_rows_are_trimmed_text() {
        let mut s = Screen::new(3, 10, 100);
        s.feed(b"hello   \r\nworld");
        let rows = s.rows_masked(&|t| t.to_owned());
        assert_eq!(rows, vec!["hello", "world", ""]);
        assert_eq!(s.cursor(), (5, 1));
        assert_eq!(s.size(), (3, 10));
    }

    #[test]
    fn token_wrapped_across_rows_is_masked_whole() {
        assert_eq!(TOKEN.len(), 40);
        let mut s = Screen::new(6, 20, 100);
        s.feed(format!("key {TOKEN} end").as_bytes());
        let rows = s.rows_masked(&mask_ghp);
        assert_no_leak(&rows);
        assert_eq!(rows[0], "key ghp_a•••••••••••");
        assert_eq!(rows[1].chars().count(), 20);
        assert!(rows[2].ends_with(" end"), "{rows:?}");
        // Masking row by row would have leaked: the check above is meaningful.
        let naive: Vec<String> = visible_rows(s.parser.screen())
            .map(|r| mask_ghp(&r.text))
            .collect();
        assert!(naive.concat().contains(&TOKEN[5..15]));
    }

    #[test]
    fn wrapped_token_in_scrollback_and_across_boundary_is_masked() {
        let mut s = Screen::new(3, 20, 100);
        // Token spans rows that scroll off; later output pushes parts into scrollback.
        s.feed(format!("xx {TOKEN}\r\nline a\r\nline b").as_bytes());
        let sb = s.scrollback_masked(10, &mask_ghp);
        let rows = s.rows_masked(&mask_ghp);
        assert_no_leak(&sb);
        assert_no_leak(&rows);
        assert_eq!(rows, vec!["•••", "line a", "line b"]);
        assert_eq!(sb.len(), 2);
        assert_eq!(sb[0], "xx ghp_a••••••••••••");
        // Only the line crossing the boundary: the first scrollback line is a continuation.
        let last = s.scrollback_masked(1, &mask_ghp);
        assert_eq!(last, vec!["••••••••••••••••••••".to_owned()]);
    }

    #[test]
    fn scrollback_is_oldest_first_and_bounded() {
        let mut s = Screen::new(2, 10, 5);
        for i in 0..10 {
            s.feed(format!("l{i}\r\n").as_bytes());
        }
        assert_eq!(s.scrollback_len(), 5);
        let sb = s.scrollback_masked(3, &|t| t.to_owned());
        assert_eq!(sb, vec!["l6", "l7", "l8"]);
        let all = s.scrollback_masked(100, &|t| t.to_owned());
        assert_eq!(all, vec!["l4", "l5", "l6", "l7", "l8"]);
        assert_eq!(s.rows_masked(&|t| t.to_owned()), vec!["l9", ""]);
    }

    #[test]
    fn asking_password_looks_at_cursor_line() {
        let mut s = Screen::new(4, 40, 0);
        s.feed(b"ls\r\n");
        assert!(!s.asking_password());
        s.feed(b"[sudo] Password for al: ");
        assert!(s.asking_password());
        s.feed(b"\r\nok\r\nEnter PASSPHRASE for key: ");
        assert!(s.asking_password());
        s.feed(b"\r\n$ ");
        assert!(!s.asking_password());
    }

    #[test]
    fn allocated_bytes_grows_with_scrollback() {
        let mut s = Screen::new(2, 10, 100);
        let base = s.allocated_bytes();
        assert_eq!(base, 2 * 10 * std::mem::size_of::<vt100::Cell>());
        for _ in 0..10 {
            s.feed(b"x\r\n");
        }
        assert!(s.allocated_bytes() > base);
    }

    #[test]
    fn wide_chars_count_once() {
        let mut s = Screen::new(2, 6, 0);
        s.feed("日本x".as_bytes());
        assert_eq!(s.rows_masked(&|t| t.to_owned())[0], "日本x");
    }

    #[test]
    fn resize_keeps_working() {
        let mut s = Screen::new(2, 4, 10);
        s.feed(b"abcdefgh");
        s.resize(3, 8);
        assert_eq!(s.size(), (3, 8));
        let rows = s.rows_masked(&|t| t.to_owned());
        assert_eq!(rows.len(), 3);
    }
}
