//! Printing a command's answer to stdout without panicking when the reader goes away.
//!
//! `println!` panics when stdout is a pipe whose reader has exited (`collie audit list | head`):
//! Rust ignores `SIGPIPE`, so the write fails with `EPIPE` and the macro turns that into a panic.
//! The commands print through [`outln!`] instead, which returns the error; [`super::main`] treats a
//! broken pipe as the reader having seen enough and exits quietly, as `ls | head` does.

/// Writes one line to stdout like `println!`, returning `std::io::Result<()>` instead of
/// panicking when the write fails.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// Writes to stdout like `print!` (no newline), flushed, returning `std::io::Result<()>`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        write!(stdout, $($arg)*).and_then(|()| stdout.flush())
    }};
}

/// True when `error` comes from writing to a pipe nobody reads any more.
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// JSON text with every control, invisible or direction character written as a `\u` escape:
/// serde_json escapes only the C0 controls, and a DEL, a C1 control (which some terminals act on
/// in UTF-8) or a U+202E printed raw would reach the reader's terminal. The JSON means the same.
pub(crate) fn terminal_safe_json(text: &str) -> std::borrow::Cow<'_, str> {
    use std::fmt::Write as _;
    // Pretty JSON's own line breaks and indents are the only raw `\n` (strings escape theirs).
    let escaped = |c: char| c != '\n' && collie_actors::cards::visible::hidden(c, false);
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::terminal_safe_json;

    #[test]
    fn json_carries_no_character_a_terminal_acts_on() {
        let card =
            serde_json::json!({"title": "a\u{1b}]52;c;x\u{7}\u{9b}2J\u{7f}\u{202e}\u{e0041}é"});
        let text = serde_json::to_string_pretty(&card).expect("json");
        let safe = terminal_safe_json(&text);
        assert!(
            safe.bytes().all(|b| b >= 0x20 || b == b'\n')
                && !safe.contains(['\u{9b}', '\u{7f}', '\u{202e}', '\u{e0041}']),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, card, "the same JSON");
        assert!(safe.contains("\\u202e") && safe.contains("\\udb40\\udc41") && safe.contains('é'));
    }
}
