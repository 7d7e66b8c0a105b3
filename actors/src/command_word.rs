//! What an audit line may say about a command line (SPEC §7: one-shot commands and `exec_command`
//! are audited by their first word and length only): one function, so that every line about one
//! command — the lead's and the member's, the request's and its outcome's — names it alike.
//!
//! A leaf module of its own: the tools that run commands and the application's audit lines both
//! use it, and the audit module already names the tools (their events), so it cannot live there
//! without a cycle.

/// The longest first word a line keeps, in bytes.
pub const MAX_FIRST_WORD: usize = 64;

/// The first word of `line` as an audit line may keep it: the first whitespace-separated word,
/// and of a word holding `=` only what precedes the first `=` and the `=` itself
/// (`TOKEN=abc deploy` → `TOKEN=`, `--password=x` → `--password=`), cut at
/// [`MAX_FIRST_WORD`] bytes on a character boundary.
///
/// Why this meaning: a value after `=` is where a line carries a secret (an assignment, an
/// option), and the audit log is kept and shown; a name before it is what a person needs to
/// recognize the command. Skipping leading assignments instead (`TOKEN=abc deploy` → `deploy`)
/// would read better but guesses at shell syntax, and a word that is not a valid variable name
/// (`--password=x`, `1X=y`) would then pass whole.
pub fn first_word(line: &str) -> &str {
    let word = line.split_whitespace().next().unwrap_or_default();
    let word = match word.find('=') {
        Some(at) => &word[..=at],
        None => word,
    };
    if word.len() <= MAX_FIRST_WORD {
        return word;
    }
    let mut end = MAX_FIRST_WORD;
    while !word.is_char_boundary(end) {
        end -= 1;
    }
    &word[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_after_equals_never_reaches_the_line() {
        assert_eq!(first_word("  ls -la"), "ls");
        assert_eq!(first_word("TOKEN=abc deploy"), "TOKEN=");
        assert_eq!(first_word("TOKEN=abc123 API_KEY=x deploy --prod"), "TOKEN=");
        assert_eq!(first_word("--password=hunter2 x"), "--password=");
        assert_eq!(first_word("1X=secret"), "1X=");
        assert_eq!(first_word("=secret"), "=");
        assert_eq!(first_word("git commit -m 'x=y'"), "git");
        assert_eq!(first_word(""), "");
        assert_eq!(first_word("   "), "");
    }

    #[test]
    fn a_long_word_is_cut_on_a_character_boundary() {
        assert_eq!(first_word(&"é".repeat(100)).len(), 64);
        assert_eq!(first_word(&format!("a{}", "é".repeat(100))).len(), 63);
        assert_eq!(first_word(&"x".repeat(64)).len(), 64);
    }
}
