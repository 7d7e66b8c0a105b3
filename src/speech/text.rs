//! What a transcriber printed, made into the text the phone's field receives: one line of words.
//! Engines print their result on standard output, some across several lines (one per segment),
//! some with colour codes; the person edits the text before sending it, so it is plain words with
//! single spaces and nothing a terminal would act on.

/// The words of `stdout`: escape sequences and control characters removed, lines joined with one
/// space, runs of spaces made one.
pub fn words(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // A CSI sequence (`ESC [ … final`) is dropped whole; any other escape loses the ESC.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        });
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_one_line_of_words() {
        assert_eq!(words(b"go forward ten meters\n"), "go forward ten meters");
        assert_eq!(words(b"  Hello,\n world. \r\n\n"), "Hello, world.");
        assert_eq!(words(b"\x1b[38;5;196mred\x1b[0m text\x07"), "red text");
        assert_eq!(words(b"a\tb\x00c"), "a b c");
        assert_eq!(words(b"\xff ok"), "\u{fffd} ok");
        assert_eq!(words(b""), "");
    }
}
