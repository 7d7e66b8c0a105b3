//! A pane's masked screen at one moment: the one shape both backends produce.
//!
//! A hosted pane and a tmux mirror each keep a [`Screen`] and a change counter, so both read a
//! snapshot the same way, with [`ScreenSnapshot::capture`] under their own lock. What only the
//! Panes actor knows — the machine, the pane id, the token it hands out and the masked name — is
//! added in [`ScreenSnapshot::into_pane_snapshot`], the one place a screen becomes the relay's
//! [`PaneSnapshot`] with its colours ([`ColourSnapshot`]): the shape a phone gets and a member
//! sends its lead, which stays a wire type of its own (`collie_crew::relay`).

use collie_crew::relay::{ColourSnapshot, Cursor, PaneSnapshot, ScreenAttrs};

use super::screen::Screen;

/// A pane's screen at one `seq`, masked per logical line (SPEC §3.2 snapshot shape, without the
/// pane's identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenSnapshot {
    /// Terminal columns.
    pub cols: u16,
    /// Terminal rows.
    pub rows: u16,
    /// Cursor as `(x, y)`, 0-based column and row.
    pub cursor: (u16, u16),
    /// The visible rows, masked, trailing spaces trimmed.
    pub lines: Vec<String>,
    /// Up to the requested number of scrollback lines above the rows, oldest first, masked.
    pub scrollback: Vec<String>,
    /// The change counter this snapshot reflects.
    pub seq: u64,
    /// The visible rows' colours, runs parallel to `lines`.
    pub attrs: ScreenAttrs,
}

impl ScreenSnapshot {
    /// Reads `screen` as it is at `seq`: its size and cursor, the visible rows and up to
    /// `scrollback` lines of scrollback, each logical line masked by `mask`. The caller holds the
    /// lock that keeps `screen` and `seq` together.
    pub fn capture(
        screen: &mut Screen,
        seq: u64,
        scrollback: usize,
        mask: &dyn Fn(&str) -> String,
    ) -> ScreenSnapshot {
        let (rows, cols) = screen.size();
        ScreenSnapshot {
            cols,
            rows,
            cursor: screen.cursor(),
            lines: screen.rows_masked(mask),
            scrollback: screen.scrollback_masked(scrollback, mask),
            seq,
            attrs: screen.attrs(),
        }
    }

    /// The relay's snapshot of pane `pane` of `machine` with its colours: this screen with the
    /// pane's `token` and its `name`, which the caller has masked already.
    pub fn into_pane_snapshot(
        self,
        machine: String,
        pane: String,
        token: String,
        name: String,
    ) -> ColourSnapshot {
        let snapshot = PaneSnapshot {
            machine,
            pane,
            token,
            name,
            cols: self.cols,
            rows: self.rows,
            cursor: Cursor {
                x: self.cursor.0,
                y: self.cursor.1,
            },
            lines: self.lines,
            scrollback: self.scrollback,
            seq: self.seq,
        };
        ColourSnapshot {
            snapshot,
            attrs: self.attrs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_reads_size_cursor_rows_and_scrollback_masked() {
        let mut screen = Screen::new(2, 10, 10);
        screen.feed(b"one\r\ntwo\r\nsecret");
        let snap =
            ScreenSnapshot::capture(&mut screen, 7, 5, &|s: &str| s.replace("secret", "••••••"));
        assert_eq!((snap.rows, snap.cols), (2, 10));
        assert_eq!(snap.cursor, (6, 1));
        assert_eq!(snap.lines, vec!["two", "••••••"]);
        assert_eq!(snap.scrollback, vec!["one"]);
        assert_eq!(snap.seq, 7);
    }

    #[test]
    fn the_relay_shape_keeps_every_field() {
        let snap = ScreenSnapshot {
            cols: 80,
            rows: 24,
            cursor: (3, 4),
            lines: vec!["a".to_owned()],
            scrollback: vec!["b".to_owned()],
            seq: 9,
            attrs: ScreenAttrs::default(),
        };
        let relay = snap.into_pane_snapshot("m".into(), "p1".into(), "tok1".into(), "n".into());
        assert_eq!(relay.attrs, ScreenAttrs::default());
        assert_eq!(
            relay.snapshot,
            PaneSnapshot {
                machine: "m".into(),
                pane: "p1".into(),
                token: "tok1".into(),
                name: "n".into(),
                cols: 80,
                rows: 24,
                cursor: Cursor { x: 3, y: 4 },
                lines: vec!["a".to_owned()],
                scrollback: vec!["b".to_owned()],
                seq: 9,
            }
        );
    }
}
