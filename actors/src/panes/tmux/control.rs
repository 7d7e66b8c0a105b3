//! tmux control-mode protocol, as a pure line parser (tmux(1), CONTROL MODE).
//!
//! A control client writes one line per event: notifications (`%output`, `%window-add`, …) and
//! command replies framed by `%begin <time> <number> <flags>` … `%end`/`%error` with the same
//! three numbers. [`ControlParser`] turns lines (without their `\n`) into [`Message`]s; it holds
//! the one bit of state the protocol has, whether a reply block is open. tmux never interleaves a
//! notification with a reply block. Lines are bytes: `%output` carries raw bytes ≥ 0x80 and octal
//! escapes (`\ooo`) for bytes below space and for `\` itself.
//!
//! Untrusted input: a reply is capped at [`MAX_REPLY_BYTES`]; lines past the cap are dropped and
//! the reply is marked truncated. Nothing here panics on any input (proptest below).

/// Most bytes of body one reply may hold; the rest is dropped (a 2,000-line capture of a wide
/// pane with colours stays well below this).
pub const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// One event from a control client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A command reply block ended.
    Reply(Reply),
    /// A notification outside any reply block.
    Notification(Notification),
}

/// The reply to one command: its number, whether it succeeded, and its output lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The command number tmux assigned.
    pub number: u64,
    /// The `%begin` flags: bit 0 is set when the command came from this client's stdin.
    pub flags: u32,
    /// `%end` (true) or `%error` (false).
    pub ok: bool,
    /// The body lines, raw.
    pub lines: Vec<Vec<u8>>,
    /// Whether lines were dropped because the body passed [`MAX_REPLY_BYTES`].
    pub truncated: bool,
}

impl Reply {
    /// Whether this client sent the command (rather than the command line that attached it).
    pub fn from_client(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The body as text (lossy), lines joined with `\n`: used for error messages.
    pub fn text(&self) -> String {
        let joined: Vec<String> = self
            .lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        joined.join("\n")
    }
}

/// A notification. Ids are tmux's numbers without their sigil (`%3` → 3, `@2` → 2, `$1` → 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// `%output %<pane> <data>`: bytes the pane's program wrote, unescaped.
    Output {
        /// The pane.
        pane: u32,
        /// Raw bytes.
        bytes: Vec<u8>,
    },
    /// `%extended-output %<pane> <age> … : <data>` (clients with flow control).
    ExtendedOutput {
        /// The pane.
        pane: u32,
        /// Milliseconds the data waited in tmux.
        age: u64,
        /// Raw bytes.
        bytes: Vec<u8>,
    },
    /// `%sessions-changed`: a session was created or destroyed; `%session-renamed` too (the
    /// backend keeps session names, which a new window's session is looked up by).
    SessionsChanged,
    /// `%session-changed $<id> <name>`: this client now shows session `id`.
    SessionChanged {
        /// The session.
        session: u32,
        /// Its name.
        name: String,
    },
    /// `%window-add @<id>`: a window was linked to this client's session.
    WindowAdd {
        /// The window.
        window: u32,
    },
    /// `%window-close @<id>`: a window of this client's session closed.
    WindowClose {
        /// The window.
        window: u32,
    },
    /// `%unlinked-window-close @<id>`: a window of another session closed.
    UnlinkedWindowClose {
        /// The window.
        window: u32,
    },
    /// `%layout-change @<id> <layout> …`: panes were split, closed or resized.
    LayoutChange {
        /// The window.
        window: u32,
    },
    /// `%window-renamed @<id> <name>`.
    WindowRenamed {
        /// The window.
        window: u32,
        /// The new name.
        name: String,
    },
    /// `%pane-mode-changed %<id>`: copy mode entered or left.
    PaneModeChanged {
        /// The pane.
        pane: u32,
    },
    /// `%exit [reason]`: the client is detaching; nothing follows.
    Exit {
        /// tmux's reason, if given.
        reason: Option<String>,
    },
    /// Any other notification, by name (`%pause` → `pause`); ignored by the backend.
    Other(String),
}

/// The state of a control stream: outside or inside a reply block.
#[derive(Debug, Default)]
pub struct ControlParser {
    block: Option<Block>,
}

#[derive(Debug)]
struct Block {
    time: Vec<u8>,
    number: u64,
    flags: u32,
    lines: Vec<Vec<u8>>,
    bytes: usize,
    truncated: bool,
}

impl ControlParser {
    /// A parser outside any block.
    pub fn new() -> ControlParser {
        ControlParser::default()
    }

    /// Consumes one line (without `\n`; a trailing `\r` is kept as data) and returns a message
    /// when one is complete. Garbage outside a block is ignored.
    pub fn push_line(&mut self, line: &[u8]) -> Option<Message> {
        if let Some(block) = &mut self.block {
            if let Some((ok, time, number)) = parse_guard_end(line) {
                if time == block.time && number == block.number {
                    let block = self.block.take()?;
                    return Some(Message::Reply(Reply {
                        number: block.number,
                        flags: block.flags,
                        ok,
                        lines: block.lines,
                        truncated: block.truncated,
                    }));
                }
            }
            if block.bytes.saturating_add(line.len()) > MAX_REPLY_BYTES {
                block.truncated = true;
            } else {
                block.bytes += line.len();
                block.lines.push(line.to_vec());
            }
            return None;
        }
        if let Some(rest) = line.strip_prefix(b"%begin ") {
            let mut parts = rest.split(|b| *b == b' ');
            let time = parts.next()?.to_vec();
            let number = parse_u64(parts.next()?)?;
            let flags = parts.next().and_then(parse_u64).unwrap_or(0);
            self.block = Some(Block {
                time,
                number,
                flags: u32::try_from(flags).unwrap_or(0),
                lines: Vec::new(),
                bytes: 0,
                truncated: false,
            });
            return None;
        }
        parse_notification(line).map(Message::Notification)
    }
}

/// `%end t n f` / `%error t n f` → (ok, t, n).
fn parse_guard_end(line: &[u8]) -> Option<(bool, &[u8], u64)> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix(b"%end ") {
        (true, rest)
    } else {
        (false, line.strip_prefix(b"%error ")?)
    };
    let mut parts = rest.split(|b| *b == b' ');
    let time = parts.next()?;
    let number = parse_u64(parts.next()?)?;
    Some((ok, time, number))
}

/// Parses one notification line; `None` for lines that are not notifications.
pub fn parse_notification(line: &[u8]) -> Option<Notification> {
    let body = line.strip_prefix(b"%")?;
    let (name, rest) = split_word(body);
    let text = || String::from_utf8_lossy(rest).into_owned();
    Some(match name {
        b"output" => {
            let (pane, data) = split_word(rest);
            Notification::Output {
                pane: parse_id(pane, b'%')?,
                bytes: unescape(data),
            }
        }
        b"extended-output" => {
            let (pane, rest) = split_word(rest);
            let (age, rest) = split_word(rest);
            // Further reserved words may follow; the data starts after the ` : ` separator.
            let pos = rest.windows(2).position(|w| w == b": ")?;
            Notification::ExtendedOutput {
                pane: parse_id(pane, b'%')?,
                age: parse_u64(age)?,
                bytes: unescape(&rest[pos + 2..]),
            }
        }
        b"sessions-changed" | b"session-renamed" => Notification::SessionsChanged,
        b"session-changed" => {
            let (session, name) = split_word(rest);
            Notification::SessionChanged {
                session: parse_id(session, b'$')?,
                name: String::from_utf8_lossy(name).into_owned(),
            }
        }
        b"window-add" => Notification::WindowAdd {
            window: parse_id(split_word(rest).0, b'@')?,
        },
        b"window-close" => Notification::WindowClose {
            window: parse_id(split_word(rest).0, b'@')?,
        },
        b"unlinked-window-close" => Notification::UnlinkedWindowClose {
            window: parse_id(split_word(rest).0, b'@')?,
        },
        b"layout-change" => Notification::LayoutChange {
            window: parse_id(split_word(rest).0, b'@')?,
        },
        b"window-renamed" => {
            let (window, name) = split_word(rest);
            Notification::WindowRenamed {
                window: parse_id(window, b'@')?,
                name: String::from_utf8_lossy(name).into_owned(),
            }
        }
        b"pane-mode-changed" => Notification::PaneModeChanged {
            pane: parse_id(split_word(rest).0, b'%')?,
        },
        b"exit" => Notification::Exit {
            reason: (!rest.is_empty()).then(text),
        },
        other => Notification::Other(String::from_utf8_lossy(other).into_owned()),
    })
}

/// Undoes tmux's `%output` escaping: `\ooo` (three octal digits) is one byte, `\\` is `\`;
/// anything else, including a malformed escape, is kept as is.
pub fn unescape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == b'\\' {
            if data.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if let Some(digits) = data.get(i + 1..i + 4) {
                if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                    let value = digits
                        .iter()
                        .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                    // Three octal digits reach 511; tmux only writes values below 256.
                    out.push(u8::try_from(value & 0xff).unwrap_or(0));
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// Splits off the first space-separated word.
fn split_word(s: &[u8]) -> (&[u8], &[u8]) {
    match s.iter().position(|b| *b == b' ') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &[]),
    }
}

/// `%12` with sigil `%` → 12.
fn parse_id(word: &[u8], sigil: u8) -> Option<u32> {
    let digits = word.strip_prefix(&[sigil])?;
    u32::try_from(parse_u64(digits)?).ok()
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn unescapes_octal_and_backslash() {
        assert_eq!(unescape(br"a\033[1mb\015\012"), b"a\x1b[1mb\r\n");
        assert_eq!(unescape(br"x\\y"), b"x\\y");
        assert_eq!(unescape(br"\\033"), b"\\033");
        // Malformed escapes are kept.
        assert_eq!(unescape(br"\09"), br"\09");
        assert_eq!(unescape(br"end\"), br"end\");
        assert_eq!(unescape("é\\011".as_bytes()), "é\t".as_bytes());
    }

    #[test]
    fn parses_reply_blocks() {
        let mut p = ControlParser::new();
        assert_eq!(p.push_line(b"%begin 1796015739 270 1"), None);
        assert_eq!(p.push_line(b"%0 12488"), None);
        // A line that looks like a notification inside a block is body.
        assert_eq!(p.push_line(b"%output %1 not-a-notification"), None);
        assert_eq!(p.push_line(b"%end 1796015739 999 1"), None);
        let m = p.push_line(b"%end 1796015739 270 1");
        assert_eq!(
            m,
            Some(Message::Reply(Reply {
                number: 270,
                flags: 1,
                ok: true,
                lines: vec![
                    b"%0 12488".to_vec(),
                    b"%output %1 not-a-notification".to_vec(),
                    b"%end 1796015739 999 1".to_vec()
                ],
                truncated: false,
            }))
        );
        p.push_line(b"%begin 5 271 0");
        p.push_line(b"can't find pane: %9");
        let Some(Message::Reply(r)) = p.push_line(b"%error 5 271 0") else {
            panic!("no reply");
        };
        assert!(!r.ok);
        assert!(!r.from_client());
        assert_eq!(r.text(), "can't find pane: %9");
    }

    #[test]
    fn parses_notifications() {
        let n = |l: &[u8]| match ControlParser::new().push_line(l) {
            Some(Message::Notification(n)) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            n(br"%output %3 hi\015\012"),
            Notification::Output {
                pane: 3,
                bytes: b"hi\r\n".to_vec()
            }
        );
        assert_eq!(
            n(br"%extended-output %2 15 : a\\b"),
            Notification::ExtendedOutput {
                pane: 2,
                age: 15,
                bytes: b"a\\b".to_vec()
            }
        );
        assert_eq!(n(b"%sessions-changed"), Notification::SessionsChanged);
        assert_eq!(
            n(b"%session-renamed $1 new name"),
            Notification::SessionsChanged
        );
        assert_eq!(
            n(b"%session-changed $1 my session"),
            Notification::SessionChanged {
                session: 1,
                name: "my session".into()
            }
        );
        assert_eq!(n(b"%window-add @4"), Notification::WindowAdd { window: 4 });
        assert_eq!(
            n(b"%window-close @4"),
            Notification::WindowClose { window: 4 }
        );
        assert_eq!(
            n(b"%unlinked-window-close @5"),
            Notification::UnlinkedWindowClose { window: 5 }
        );
        assert_eq!(
            n(b"%layout-change @0 b25f,80x24,0,0,0 b25f,80x24,0,0,0 *"),
            Notification::LayoutChange { window: 0 }
        );
        assert_eq!(
            n(b"%window-renamed @0 it's a name"),
            Notification::WindowRenamed {
                window: 0,
                name: "it's a name".into()
            }
        );
        assert_eq!(
            n(b"%pane-mode-changed %7"),
            Notification::PaneModeChanged { pane: 7 }
        );
        assert_eq!(n(b"%exit"), Notification::Exit { reason: None });
        assert_eq!(
            n(b"%exit server exited"),
            Notification::Exit {
                reason: Some("server exited".into())
            }
        );
        assert_eq!(n(b"%pause %1"), Notification::Other("pause".into()));
        assert_eq!(ControlParser::new().push_line(b"%output %x data"), None);
        assert_eq!(ControlParser::new().push_line(b"garbage"), None);
    }

    #[test]
    fn oversized_reply_is_truncated_not_grown() {
        let mut p = ControlParser::new();
        p.push_line(b"%begin 1 2 1");
        let big = vec![b'x'; 1024 * 1024];
        for _ in 0..20 {
            p.push_line(&big);
        }
        let Some(Message::Reply(r)) = p.push_line(b"%end 1 2 1") else {
            panic!("no reply");
        };
        assert!(r.truncated);
        assert_eq!(r.lines.len(), 16);
    }

    proptest! {
        #[test]
        fn unescape_never_panics_and_never_grows(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let out = unescape(&data);
            prop_assert!(out.len() <= data.len());
        }

        #[test]
        fn escaping_round_trips(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut escaped = Vec::new();
            for b in &data {
                if *b < b' ' || *b == b'\\' {
                    escaped.extend_from_slice(format!("\\{b:03o}").as_bytes());
                } else {
                    escaped.push(*b);
                }
            }
            prop_assert_eq!(unescape(&escaped), data);
        }

        #[test]
        fn parser_never_panics(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32)) {
            let mut p = ControlParser::new();
            for l in &lines {
                let _ = p.push_line(l);
            }
        }
    }
}
