//! Which lines may be kept (SPEC §11): the exclusion rules of the sent log, which also decide
//! whether a one-shot command joins the recent list.
//!
//! The check is a guess and is meant to guess "secret" too often rather than too rarely: a line
//! it refuses costs the user a re-typed command, a line it lets through sits in a file a paired
//! phone can read. So "sets a variable" is any word of the shape `NAME=…` anywhere in the line
//! (also `dd if=…`), and the secret words are matched inside longer words (`GITHUB_TOKEN`,
//! `--password-file`). What it cannot see — a password passed as a bare argument (`mysql
//! -pPASS`), a secret of a shape the masker does not know — the user keeps out by starting the
//! line with a space.

use crate::redact::Masker;

/// The longest line kept, in characters.
pub const MAX_LINE_CHARS: usize = 4096;

/// Words whose presence anywhere in a line (any case) keeps it out.
pub const SECRET_WORDS: &[&str] = &["password", "secret", "token", "bearer", "authorization"];

/// Why a line is not kept. Carries nothing of the line itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exclusion {
    /// Empty, or only blanks.
    Blank,
    /// Begins with a space or a tab: the user's own "do not keep this".
    LeadingBlank,
    /// Longer than [`MAX_LINE_CHARS`].
    TooLong,
    /// Sets a variable (`TOKEN=abc deploy`, `export KEY=…`).
    Assignment,
    /// Holds a URL with a password (`https://user:pass@host`).
    UrlPassword,
    /// Contains one of [`SECRET_WORDS`].
    SecretWord,
    /// Something the masker would mask.
    MaskShape,
}

/// Whether `line` may be kept; `shapes` must be a masker that is on (`Masker::new(true)`), so the
/// rule holds even where `COLLIE_REDACT=off` turns masking off for screens.
pub fn check(line: &str, shapes: &Masker) -> Result<(), Exclusion> {
    if line.trim().is_empty() {
        return Err(Exclusion::Blank);
    }
    if line.starts_with([' ', '\t']) {
        return Err(Exclusion::LeadingBlank);
    }
    // Counting stops one past the limit: a huge line costs no more than a long one.
    if line.chars().take(MAX_LINE_CHARS + 1).count() > MAX_LINE_CHARS {
        return Err(Exclusion::TooLong);
    }
    if sets_variable(line) {
        return Err(Exclusion::Assignment);
    }
    if has_url_password(line) {
        return Err(Exclusion::UrlPassword);
    }
    if has_secret_word(line) {
        return Err(Exclusion::SecretWord);
    }
    if shapes.mask(line) != line {
        return Err(Exclusion::MaskShape);
    }
    Ok(())
}

/// Whether any word of `line` — split at blanks and the shell's separators `;&|()<>` and quotes —
/// has the shape `NAME=…`, `NAME` a shell identifier (`[A-Za-z_][A-Za-z0-9_]*`; also `NAME+=`
/// and `NAME[i]=`).
pub fn sets_variable(line: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || ";&|()<>\"'`".contains(c))
        .any(is_assignment)
}

fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].trim_end_matches('+');
    let name = match name.find('[') {
        Some(open) if name.ends_with(']') => &name[..open],
        _ => name,
    };
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `line` holds `scheme://user:password@host` (a `:` and an `@` in the part between
/// `://` and the next `/`, blank or quote).
pub fn has_url_password(line: &str) -> bool {
    line.match_indices("://").any(|(at, _)| {
        let rest = &line[at + 3..];
        let end = rest
            .find(|c: char| c == '/' || c.is_whitespace() || "\"'`".contains(c))
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        match authority.rfind('@') {
            Some(user_end) => authority[..user_end].contains(':'),
            None => false,
        }
    })
}

/// Whether `line` contains one of [`SECRET_WORDS`] in any case.
pub fn has_secret_word(line: &str) -> bool {
    let lower = line.to_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker() -> Masker {
        Masker::new(true)
    }

    #[test]
    fn ordinary_lines_are_kept() {
        let m = masker();
        for line in [
            "ls -la",
            "cargo test -p collie --test sent",
            "git commit -m 'fix the thing'",
            "grep -r 'x == y' src",
            "ssh git@github.com",
            "curl https://example.org/a?b",
        ] {
            assert_eq!(check(line, &m), Ok(()), "{line}");
        }
    }

    #[test]
    fn each_rule_keeps_its_lines_out() {
        let m = masker();
        let cases: &[(&str, Exclusion)] = &[
            ("", Exclusion::Blank),
            ("   ", Exclusion::Blank),
            (" ls", Exclusion::LeadingBlank),
            ("\tls", Exclusion::LeadingBlank),
            ("TOKEN=abc deploy", Exclusion::Assignment),
            ("export AWS_SECRET_ACCESS_KEY=x", Exclusion::Assignment),
            ("env KEY=v ./run", Exclusion::Assignment),
            ("make && API_KEY=v ./run", Exclusion::Assignment),
            ("x+=1", Exclusion::Assignment),
            ("arr[2]=v", Exclusion::Assignment),
            (
                "git clone https://me:hunter2@example.org/r",
                Exclusion::UrlPassword,
            ),
            ("psql postgres://u:p@db:5432/x", Exclusion::UrlPassword),
            ("mysql --Password x", Exclusion::SecretWord),
            ("cat ~/.secrets", Exclusion::SecretWord),
            ("gh auth TOKEN", Exclusion::SecretWord),
            ("curl -H 'Authorization: x'", Exclusion::SecretWord),
            ("curl -H Bearer", Exclusion::SecretWord),
            (
                "echo ghp_0123456789abcdefghijABCDEFGHIJ012345",
                Exclusion::MaskShape,
            ),
        ];
        for (line, why) in cases {
            assert_eq!(check(line, &m), Err(*why), "{line:?}");
        }
        assert_eq!(
            check(&"x".repeat(MAX_LINE_CHARS + 1), &m),
            Err(Exclusion::TooLong)
        );
        assert_eq!(check(&"x".repeat(MAX_LINE_CHARS), &m), Ok(()));
    }

    #[test]
    fn the_shape_rule_holds_with_masking_off_elsewhere() {
        // The bridge hands the rules a masker that is always on; a masker that is off would let
        // a shape through, which is why `check` asks for one that is on.
        let line = "echo ghp_0123456789abcdefghijABCDEFGHIJ012345";
        assert_eq!(check(line, &masker()), Err(Exclusion::MaskShape));
        assert_eq!(check(line, &Masker::new(false)), Ok(()));
    }
}
