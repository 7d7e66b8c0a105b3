//! The fixed list of named input keys a phone may send (SPEC §3.2), and the text size limit.
//!
//! Both backends write the same keys: the tmux backend hands [`NamedKey::tmux_name`] to
//! `send-keys`, the pty backend writes the xterm bytes of [`NamedKey::pty_bytes`]. Anything not in
//! the list is refused with the exact §3.2 error string (`unknown key: <name>`), and typed text
//! longer than [`MAX_TEXT_BYTES`] with `text too long`. The module is pure: no I/O, no state.

use std::fmt;
use std::str::FromStr;

/// The most bytes of literal `text` one input request may type (64 KiB, SPEC §3.2).
pub const MAX_TEXT_BYTES: usize = 65536;

/// Why a key name or a text was refused; the messages are the exact §3.2 error strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The name is not in the fixed list of keys.
    #[error("unknown key: {0}")]
    UnknownKey(String),
    /// The text is longer than [`MAX_TEXT_BYTES`].
    #[error("text too long")]
    TextTooLong,
}

/// Checks that `text` may be typed into a pane: at most [`MAX_TEXT_BYTES`] bytes of UTF-8.
pub fn validate_text(text: &str) -> Result<(), KeyError> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(KeyError::TextTooLong);
    }
    Ok(())
}

/// Declares the key enum and its table in one place, so a name, its tmux spelling and its bytes
/// can never drift apart.
macro_rules! named_keys {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, $tmux:literal, $bytes:expr; )*) => {
        /// One key from the fixed list of SPEC §3.2 (`Enter Escape Tab BTab Backspace Up Down Left
        /// Right Home End PageUp PageDown F1..F12 C-a..C-z`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum NamedKey {
            $( $(#[$doc])* $variant, )*
        }

        impl NamedKey {
            /// Every key, in the order of the §3.2 list.
            pub const ALL: &'static [NamedKey] = &[ $( NamedKey::$variant, )* ];

            /// The key's name as the phone sends it (`"PageUp"`, `"C-c"`).
            pub fn as_str(&self) -> &'static str {
                match self { $( NamedKey::$variant => $name, )* }
            }

            /// The key's name as tmux `send-keys` understands it (`"BSpace"`, `"PPage"`, `"C-c"`).
            pub fn tmux_name(&self) -> &'static str {
                match self { $( NamedKey::$variant => $tmux, )* }
            }

            /// The bytes an xterm-compatible terminal sends for the key, for writing to a pty.
            pub fn pty_bytes(&self) -> &'static [u8] {
                match self { $( NamedKey::$variant => $bytes, )* }
            }

            /// Parses a key name; the match is exact (case-sensitive, no surrounding spaces).
            pub fn parse(name: &str) -> Result<NamedKey, KeyError> {
                match name {
                    $( $name => Ok(NamedKey::$variant), )*
                    _ => Err(KeyError::UnknownKey(name.to_owned())),
                }
            }
        }
    };
}

named_keys! {
    /// Return (`\r`).
    Enter => "Enter", "Enter", b"\r";
    /// Escape.
    Escape => "Escape", "Escape", b"\x1b";
    /// Tab.
    Tab => "Tab", "Tab", b"\t";
    /// Shift-Tab (back tab).
    BTab => "BTab", "BTab", b"\x1b[Z";
    /// Backspace (DEL).
    Backspace => "Backspace", "BSpace", b"\x7f";
    /// Cursor up.
    Up => "Up", "Up", b"\x1b[A";
    /// Cursor down.
    Down => "Down", "Down", b"\x1b[B";
    /// Cursor left.
    Left => "Left", "Left", b"\x1b[D";
    /// Cursor right.
    Right => "Right", "Right", b"\x1b[C";
    /// Home.
    Home => "Home", "Home", b"\x1b[H";
    /// End.
    End => "End", "End", b"\x1b[F";
    /// Page up.
    PageUp => "PageUp", "PPage", b"\x1b[5~";
    /// Page down.
    PageDown => "PageDown", "NPage", b"\x1b[6~";
    /// F1.
    F1 => "F1", "F1", b"\x1bOP";
    /// F2.
    F2 => "F2", "F2", b"\x1bOQ";
    /// F3.
    F3 => "F3", "F3", b"\x1bOR";
    /// F4.
    F4 => "F4", "F4", b"\x1bOS";
    /// F5.
    F5 => "F5", "F5", b"\x1b[15~";
    /// F6.
    F6 => "F6", "F6", b"\x1b[17~";
    /// F7.
    F7 => "F7", "F7", b"\x1b[18~";
    /// F8.
    F8 => "F8", "F8", b"\x1b[19~";
    /// F9.
    F9 => "F9", "F9", b"\x1b[20~";
    /// F10.
    F10 => "F10", "F10", b"\x1b[21~";
    /// F11.
    F11 => "F11", "F11", b"\x1b[23~";
    /// F12.
    F12 => "F12", "F12", b"\x1b[24~";
    /// Control-A.
    CtrlA => "C-a", "C-a", b"\x01";
    /// Control-B.
    CtrlB => "C-b", "C-b", b"\x02";
    /// Control-C (interrupt).
    CtrlC => "C-c", "C-c", b"\x03";
    /// Control-D (end of file).
    CtrlD => "C-d", "C-d", b"\x04";
    /// Control-E.
    CtrlE => "C-e", "C-e", b"\x05";
    /// Control-F.
    CtrlF => "C-f", "C-f", b"\x06";
    /// Control-G.
    CtrlG => "C-g", "C-g", b"\x07";
    /// Control-H.
    CtrlH => "C-h", "C-h", b"\x08";
    /// Control-I.
    CtrlI => "C-i", "C-i", b"\x09";
    /// Control-J.
    CtrlJ => "C-j", "C-j", b"\x0a";
    /// Control-K.
    CtrlK => "C-k", "C-k", b"\x0b";
    /// Control-L.
    CtrlL => "C-l", "C-l", b"\x0c";
    /// Control-M.
    CtrlM => "C-m", "C-m", b"\x0d";
    /// Control-N.
    CtrlN => "C-n", "C-n", b"\x0e";
    /// Control-O.
    CtrlO => "C-o", "C-o", b"\x0f";
    /// Control-P.
    CtrlP => "C-p", "C-p", b"\x10";
    /// Control-Q.
    CtrlQ => "C-q", "C-q", b"\x11";
    /// Control-R.
    CtrlR => "C-r", "C-r", b"\x12";
    /// Control-S.
    CtrlS => "C-s", "C-s", b"\x13";
    /// Control-T.
    CtrlT => "C-t", "C-t", b"\x14";
    /// Control-U.
    CtrlU => "C-u", "C-u", b"\x15";
    /// Control-V.
    CtrlV => "C-v", "C-v", b"\x16";
    /// Control-W.
    CtrlW => "C-w", "C-w", b"\x17";
    /// Control-X.
    CtrlX => "C-x", "C-x", b"\x18";
    /// Control-Y.
    CtrlY => "C-y", "C-y", b"\x19";
    /// Control-Z (suspend).
    CtrlZ => "C-z", "C-z", b"\x1a";
}

impl FromStr for NamedKey {
    type Err = KeyError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        NamedKey::parse(name)
    }
}

impl fmt::Display for NamedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    /// The §3.2 list, spelled out independently of the table above.
    fn spec_names() -> Vec<String> {
        let mut names: Vec<String> = [
            "Enter",
            "Escape",
            "Tab",
            "BTab",
            "Backspace",
            "Up",
            "Down",
            "Left",
            "Right",
            "Home",
            "End",
            "PageUp",
            "PageDown",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        names.extend((1..=12).map(|n| format!("F{n}")));
        names.extend(('a'..='z').map(|c| format!("C-{c}")));
        names
    }

    #[test]
    fn the_table_is_exactly_the_spec_list() {
        let table: Vec<&str> = NamedKey::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(table, spec_names());
    }

    #[test]
    fn every_spec_name_parses_and_round_trips() {
        for name in spec_names() {
            let key = NamedKey::parse(&name).unwrap();
            assert_eq!(key.as_str(), name);
            assert_eq!(key.to_string(), name);
            assert_eq!(name.parse::<NamedKey>().unwrap(), key);
        }
    }

    #[test]
    fn unknown_names_use_the_spec_error_string() {
        for bad in [
            "", "enter", "ENTER", " Enter", "F0", "F13", "C-A", "C-", "M-a", "C-1",
        ] {
            let err = NamedKey::parse(bad).unwrap_err();
            assert_eq!(err.to_string(), format!("unknown key: {bad}"));
        }
    }

    #[test]
    fn pty_bytes_match_xterm() {
        let expect: &[(&str, &[u8])] = &[
            ("Enter", b"\r"),
            ("Escape", b"\x1b"),
            ("Tab", b"\t"),
            ("BTab", b"\x1b[Z"),
            ("Backspace", b"\x7f"),
            ("Up", b"\x1b[A"),
            ("Down", b"\x1b[B"),
            ("Right", b"\x1b[C"),
            ("Left", b"\x1b[D"),
            ("Home", b"\x1b[H"),
            ("End", b"\x1b[F"),
            ("PageUp", b"\x1b[5~"),
            ("PageDown", b"\x1b[6~"),
            ("F1", b"\x1bOP"),
            ("F4", b"\x1bOS"),
            ("F5", b"\x1b[15~"),
            ("F6", b"\x1b[17~"),
            ("F10", b"\x1b[21~"),
            ("F11", b"\x1b[23~"),
            ("F12", b"\x1b[24~"),
        ];
        for (name, bytes) in expect {
            assert_eq!(NamedKey::parse(name).unwrap().pty_bytes(), *bytes, "{name}");
        }
        for (i, c) in ('a'..='z').enumerate() {
            let key = NamedKey::parse(&format!("C-{c}")).unwrap();
            assert_eq!(key.pty_bytes(), &[i as u8 + 1]);
        }
    }

    #[test]
    fn pty_bytes_are_distinct_except_ctrl_aliases() {
        // C-i is Tab, C-m is Enter; C-h is not Backspace (xterm sends DEL for Backspace).
        let mut seen = HashSet::new();
        for key in NamedKey::ALL {
            if matches!(key, NamedKey::CtrlI | NamedKey::CtrlM) {
                continue;
            }
            assert!(seen.insert(key.pty_bytes()), "{key} repeats bytes");
        }
    }

    #[test]
    fn tmux_names() {
        let expect = [
            ("Enter", "Enter"),
            ("Escape", "Escape"),
            ("BTab", "BTab"),
            ("Backspace", "BSpace"),
            ("PageUp", "PPage"),
            ("PageDown", "NPage"),
            ("F7", "F7"),
            ("C-c", "C-c"),
        ];
        for (name, tmux) in expect {
            assert_eq!(NamedKey::parse(name).unwrap().tmux_name(), tmux);
        }
        let distinct: HashSet<_> = NamedKey::ALL.iter().map(|k| k.tmux_name()).collect();
        assert_eq!(distinct.len(), NamedKey::ALL.len());
    }

    #[test]
    fn text_limit_is_64_kib_inclusive() {
        assert!(validate_text("").is_ok());
        assert!(validate_text(&"a".repeat(MAX_TEXT_BYTES)).is_ok());
        let err = validate_text(&"a".repeat(MAX_TEXT_BYTES + 1)).unwrap_err();
        assert_eq!(err.to_string(), "text too long");
        // The limit counts bytes, not characters.
        let wide = "é".repeat(MAX_TEXT_BYTES / 2 + 1);
        assert_eq!(validate_text(&wide), Err(KeyError::TextTooLong));
    }

    proptest! {
        #[test]
        fn listed_names_round_trip(index in 0..51usize) {
            let names = spec_names();
            let key = NamedKey::parse(&names[index]).unwrap();
            prop_assert_eq!(key.as_str(), names[index].as_str());
            prop_assert_eq!(NamedKey::ALL[index], key);
        }

        #[test]
        fn anything_else_is_unknown(name in "\\PC{0,12}") {
            let listed = spec_names().contains(&name);
            match NamedKey::parse(&name) {
                Ok(key) => {
                    prop_assert!(listed);
                    prop_assert_eq!(key.as_str(), name.as_str());
                }
                Err(err) => {
                    prop_assert!(!listed);
                    prop_assert_eq!(err.to_string(), format!("unknown key: {name}"));
                }
            }
        }

        #[test]
        fn near_misses_are_unknown(index in 0..51usize, edit in 0..3u8) {
            let name = spec_names()[index].clone();
            let changed = match edit {
                0 => name.to_lowercase() + "x",
                1 => format!(" {name}"),
                _ => name.to_uppercase() + "!",
            };
            prop_assert_eq!(
                NamedKey::parse(&changed),
                Err(KeyError::UnknownKey(changed.clone()))
            );
        }
    }
}
