//! The JSON of a screen's colours (SPEC §5 "Colours"): runs as `[start_column, length, style]`
//! and styles as `{fg, bg, bold, italic, underline, inverse}` with defaults left out — fg/bg a
//! number 0–255 or `"#rrggbb"`. The relay's binary types stay as they are; this is only how a
//! phone reads them.

use std::collections::BTreeMap;

use collie_crew::relay::{Colour, ColourSnapshot, Cursor, Run, Style};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// A run as the phone reads it.
pub(super) fn run_json(r: &Run) -> [u16; 3] {
    [r.start, r.len, r.style]
}

/// A style table as the phone reads it: style number (as text) → style.
pub(super) fn styles_json<'a>(
    styles: impl Iterator<Item = (u16, &'a Style)>,
) -> BTreeMap<String, StyleJson<'a>> {
    styles.map(|(n, s)| (n.to_string(), StyleJson(s))).collect()
}

/// One style, defaults left out.
pub(super) struct StyleJson<'a>(pub(super) &'a Style);

impl Serialize for StyleJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let mut map = ser.serialize_map(None)?;
        if let Some(fg) = s.fg {
            map.serialize_entry("fg", &ColourJson(fg))?;
        }
        if let Some(bg) = s.bg {
            map.serialize_entry("bg", &ColourJson(bg))?;
        }
        for (name, on) in [
            ("bold", s.bold),
            ("italic", s.italic),
            ("underline", s.underline),
            ("inverse", s.inverse),
        ] {
            if on {
                map.serialize_entry(name, &true)?;
            }
        }
        map.end()
    }
}

struct ColourJson(Colour);

impl Serialize for ColourJson {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Colour::Indexed(i) => ser.serialize_u8(i),
            Colour::Rgb(r, g, b) => ser.serialize_str(&format!("#{r:02x}{g:02x}{b:02x}")),
        }
    }
}

/// A cursor position as the phone reads it (the relay's `Cursor` is the crew wire's, not this).
#[derive(Serialize)]
pub(super) struct CursorJson {
    x: u16,
    y: u16,
}

impl From<Cursor> for CursorJson {
    fn from(c: Cursor) -> Self {
        CursorJson { x: c.x, y: c.y }
    }
}

/// A snapshot as the phone reads it: the plain snapshot's fields (spelled out here, so the relay's
/// `PaneSnapshot` can change without the phone's JSON changing), plus `attrs` (one list of runs per
/// row of `lines`) and `styles` when the screen has colours.
#[derive(Serialize)]
pub(super) struct SnapshotJson<'a> {
    machine: &'a str,
    pane: &'a str,
    token: &'a str,
    name: &'a str,
    cols: u16,
    rows: u16,
    cursor: CursorJson,
    lines: &'a [String],
    scrollback: &'a [String],
    seq: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attrs: Vec<Vec<[u16; 3]>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    styles: BTreeMap<String, StyleJson<'a>>,
}

impl<'a> SnapshotJson<'a> {
    pub(super) fn new(c: &'a ColourSnapshot) -> Self {
        let any = c.attrs.rows.iter().any(|r| !r.is_empty());
        let s = &c.snapshot;
        SnapshotJson {
            machine: &s.machine,
            pane: &s.pane,
            token: &s.token,
            name: &s.name,
            cols: s.cols,
            rows: s.rows,
            cursor: s.cursor.into(),
            lines: &s.lines,
            scrollback: &s.scrollback,
            seq: s.seq,
            attrs: if any {
                c.attrs
                    .rows
                    .iter()
                    .map(|runs| runs.iter().map(run_json).collect())
                    .collect()
            } else {
                Vec::new()
            },
            styles: styles_json((0u16..).zip(c.attrs.styles.iter())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_leave_out_defaults_and_write_colours_as_numbers_or_hex() {
        let s = Style {
            fg: Some(Colour::Indexed(9)),
            bg: Some(Colour::Rgb(1, 0xab, 255)),
            bold: true,
            ..Style::default()
        };
        assert_eq!(
            serde_json::to_value(StyleJson(&s)).unwrap(),
            serde_json::json!({"fg": 9, "bg": "#01abff", "bold": true})
        );
        assert_eq!(
            serde_json::to_value(StyleJson(&Style::default())).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn a_snapshot_is_the_json_it_was() {
        use collie_crew::relay::{PaneSnapshot, ScreenAttrs};

        // What the phone got before: the relay's snapshot, flattened.
        #[derive(Serialize)]
        struct Before<'a> {
            #[serde(flatten)]
            snapshot: &'a PaneSnapshot,
        }
        let snapshot = PaneSnapshot {
            machine: "web-1".into(),
            pane: "t0-1".into(),
            token: "ab12".into(),
            name: "build \"x\"".into(),
            cols: 80,
            rows: 2,
            cursor: Cursor { x: 3, y: 1 },
            lines: vec!["a".into(), "b".into()],
            scrollback: vec!["old".into()],
            seq: 7,
        };
        let plain = ColourSnapshot {
            snapshot: snapshot.clone(),
            attrs: ScreenAttrs::default(),
        };
        assert_eq!(
            serde_json::to_string(&SnapshotJson::new(&plain)).unwrap(),
            serde_json::to_string(&Before {
                snapshot: &snapshot
            })
            .unwrap()
        );
    }
}
