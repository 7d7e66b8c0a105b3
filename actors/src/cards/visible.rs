//! A card's text made faithful (SPEC §10.1): every control, invisible and direction character is
//! shown as an escape (`⟨ESC⟩`, `⟨U+202E⟩`), never removed, and a text too long for the card is
//! cut at a whole character or escape, with the bytes not shown counted. Pure: no I/O.
//!
//! **Why show rather than remove.** A held permission's command is what runs when the person
//! taps *Allow*. Removing a character changes what they read (`rm -rf /tmp/x\u{200B}` and
//! `rm -rf /tmp/x` are different paths), and keeping it raw lets it act on the reader — a right-
//! to-left override reorders `curl … | sh` into something harmless-looking, an ESC sequence in
//! `collie cards` writes the terminal's clipboard (OSC 52), retitles or clears it. An escape is
//! seen and acts on nothing. (A durable agent's text keeps §10.3's sanitizer, which removes:
//! what it shows is not run.)
//!
//! **Which characters.** C0 (newline and tab are kept in a multi-line text, where they are the
//! text's lines and indents), DEL, C1; the zero-width and direction characters U+200B–U+200F,
//! U+202A–U+202E, U+2060–U+206F, U+061C; the line and paragraph separators U+2028–U+2029; U+FEFF;
//! tags and the supplementary variation selectors U+E0000–U+E0FFF; and the other characters
//! Unicode ignores by default that render as nothing (soft hyphen, fillers, U+180B–U+180F,
//! U+FFF0–U+FFFB, …): anything that can make a text read other than it is.
//!
//! **Injective on them.** Each such character has its own escape (ESC by name, every other by
//! its code point), so two texts that differ in them show differently. A `⟨` is not escaped: a
//! text that holds no such character shows as itself, the card's `hidden_characters` flag tells
//! the two apart, and escaping again changes nothing (a lead may escape a member's card again).

use std::borrow::Cow;
use std::fmt::Write as _;

/// What a cut text ends with.
pub const ELLIPSIS: &str = "…";

/// Whether `c` is shown as an escape: a control (but `\n` and `\t` in a `multi_line` text), an
/// invisible or a direction character.
pub fn hidden(c: char, multi_line: bool) -> bool {
    match c {
        '\n' | '\t' => !multi_line,
        _ => c.is_control() || invisible(c),
    }
}

/// Whether `c` is a zero-width, direction, separator, filler or tag character: one that changes
/// what a reader sees without being seen.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Appends the escape of `c` to `out`: `⟨ESC⟩` for ESC, `⟨U+XXXX⟩` (at least four hex digits,
/// upper case) for any other.
fn escape(c: char, out: &mut String) {
    if c == '\u{1b}' {
        out.push_str("⟨ESC⟩");
    } else {
        // Writing to a String cannot fail.
        let _ = write!(out, "⟨U+{:04X}⟩", u32::from(c));
    }
}

/// `text` with every [`hidden`] character shown as its escape; borrowed when there is none.
pub fn visible(text: &str, multi_line: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, multi_line)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c, multi_line) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text as a card shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The text, escaped, at most the limit's bytes (with [`ELLIPSIS`] when cut).
    pub text: String,
    /// It held characters shown as escapes (among the part shown).
    pub hidden: bool,
    /// Bytes of the original text not shown (0: shown whole).
    pub not_shown: usize,
}

/// `text` escaped as [`visible`] does and cut to at most `max` bytes at a whole character or
/// escape, ending with [`ELLIPSIS`] when cut. Looks at no more of `text` than it needs.
pub fn show(text: &str, multi_line: bool, max: usize) -> Shown {
    let room = max.saturating_sub(ELLIPSIS.len());
    let mut out = String::with_capacity(text.len().min(max));
    let mut hidden_seen = false;
    // The last cut that leaves room for the ellipsis: (bytes written, bytes of `text` read,
    // whether a hidden character was among them).
    let mut cut = (0, 0, false);
    for (at, c) in text.char_indices() {
        if out.len() <= room {
            cut = (out.len(), at, hidden_seen);
        }
        if hidden(c, multi_line) {
            escape(c, &mut out);
            hidden_seen = true;
        } else {
            out.push(c);
        }
        if out.len() > max {
            let (len, read, hidden) = cut;
            out.truncate(len);
            out.push_str(ELLIPSIS);
            return Shown {
                text: out,
                hidden,
                not_shown: text.len() - read,
            };
        }
    }
    Shown {
        text: out,
        hidden: hidden_seen,
        not_shown: 0,
    }
}

#[cfg(test)]
#[path = "visible_tests.rs"]
mod tests;
