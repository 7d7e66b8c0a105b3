//! What "a line sent to a shell" is when a device sends text and keys (SPEC §3.2: the text is
//! typed first, then the keys in order).
//!
//! A shell runs what stands before each line break it reads. So the lines of one input are: every
//! piece of the text that a line break (`\r` or `\n`, as a paste brings them) ends, and the text's
//! last piece when the first key is `Enter`. Keys after the first are not followed (an `Up`
//! recalls history, a `Tab` completes — the result is not text Collie knows). A piece that is
//! empty is no line.

use crate::panes::keys::NamedKey;

/// The lines a shell at its prompt runs when `text` is typed and then `keys` pressed.
pub fn sent_lines<'a>(text: &'a str, keys: &[NamedKey]) -> Vec<&'a str> {
    let mut pieces: Vec<&str> = text.split(['\r', '\n']).collect();
    // The last piece has no line break after it: it is a line only if Enter comes next.
    let last = pieces.pop().unwrap_or_default();
    if keys.first() == Some(&NamedKey::Enter) {
        pieces.push(last);
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_enter_is_one_line() {
        assert_eq!(sent_lines("ls -la", &[NamedKey::Enter]), ["ls -la"]);
        assert!(sent_lines("ls -la", &[]).is_empty(), "no Enter, no line");
        assert!(sent_lines("ls", &[NamedKey::Tab, NamedKey::Enter]).is_empty());
        assert!(sent_lines("", &[NamedKey::Enter]).is_empty());
    }

    #[test]
    fn a_paste_is_a_line_per_break() {
        assert_eq!(sent_lines("a\nb\r\nc", &[]), ["a", "b"]);
        assert_eq!(sent_lines("a\nb\n", &[]), ["a", "b"]);
        assert_eq!(sent_lines("a\nb", &[NamedKey::Enter]), ["a", "b"]);
        // Leading blanks stay: the rules need them to keep such a line out.
        assert_eq!(sent_lines(" secret\n", &[]), [" secret"]);
    }
}
