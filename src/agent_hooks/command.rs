//! The command line Collie installs as an agent's hook, and how Collie knows it again.
//!
//! The line is `<absolute path of collie> hook <subcommand>`. Both agents run it through a shell,
//! so a path holding anything but plain characters is single-quoted. Collie's own entry is then
//! recognised by its shape alone — ` hook <subcommand>` after one shell word whose file name is
//! `collie` — and not by the exact path: after the binary moved, `install` still finds the old
//! entry and replaces it, and `uninstall` still removes it.

use std::path::Path;

/// The file name an executable must have for its hook to count as Collie's.
pub const EXECUTABLE_NAME: &str = "collie";

/// Why the running executable cannot be written into a hook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// A hook Collie could not recognise later would be one `uninstall` cannot remove.
    #[error(
        "the running executable {0} is not named `collie`; install from a binary named collie, \
         so that uninstall can find the hook again"
    )]
    NotCollie(String),
    /// JSON strings are Unicode; a path that is not cannot be written exactly.
    #[error("the running executable's path is not valid UTF-8: {0}")]
    NotUtf8(String),
    /// The agent runs the hook from its own working directory.
    #[error("the running executable's path {0} is not absolute")]
    NotAbsolute(String),
}

/// The hook command for `exe` (absolute, named `collie`) running `collie hook <subcommand>`.
pub fn render(exe: &Path, subcommand: &str) -> Result<String, CommandError> {
    let shown = exe.display().to_string();
    let text = exe
        .to_str()
        .ok_or_else(|| CommandError::NotUtf8(shown.clone()))?;
    if !exe.is_absolute() {
        return Err(CommandError::NotAbsolute(shown));
    }
    if exe.file_name().and_then(|n| n.to_str()) != Some(EXECUTABLE_NAME) {
        return Err(CommandError::NotCollie(shown));
    }
    Ok(format!("{} hook {subcommand}", quote(text)))
}

/// The executable of `command` when it is a Collie hook running `collie hook <subcommand>`.
pub fn recognise(command: &str, subcommand: &str) -> Option<String> {
    let word = command.strip_suffix(subcommand)?.strip_suffix(" hook ")?;
    let exe = unquote(word)?;
    (Path::new(&exe).file_name().and_then(|n| n.to_str()) == Some(EXECUTABLE_NAME)).then_some(exe)
}

/// Characters a POSIX shell takes literally in a word.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// `s` as one shell word: as it is when plain, else single-quoted (`'` written as `'\''`).
fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(is_plain) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The inverse of [`quote`]: a plain word, or single-quoted parts joined by `\'`. Anything else
/// (double quotes, variables, several words) is not a word Collie wrote.
fn unquote(word: &str) -> Option<String> {
    if !word.is_empty() && word.chars().all(is_plain) {
        return Some(word.to_owned());
    }
    let mut out = String::new();
    let mut rest = word;
    loop {
        let inner = rest.strip_prefix('\'')?;
        let end = inner.find('\'')?;
        out.push_str(&inner[..end]);
        rest = &inner[end + 1..];
        if rest.is_empty() {
            return Some(out);
        }
        rest = rest.strip_prefix(r"\'")?;
        out.push('\'');
        if rest.is_empty() {
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_plain_path_is_written_as_it_is() {
        let line = render(Path::new("/usr/local/bin/collie"), "claude-permission").unwrap();
        assert_eq!(line, "/usr/local/bin/collie hook claude-permission");
        assert_eq!(
            recognise(&line, "claude-permission").as_deref(),
            Some("/usr/local/bin/collie")
        );
    }

    #[test]
    fn a_path_with_blanks_or_quotes_is_one_shell_word() {
        let exe = "/home/a b/it's/collie";
        let line = render(Path::new(exe), "codex-permission").unwrap();
        assert_eq!(line, r"'/home/a b/it'\''s/collie' hook codex-permission");
        assert_eq!(recognise(&line, "codex-permission").as_deref(), Some(exe));
    }

    #[test]
    fn only_an_absolute_utf8_collie_is_written() {
        assert!(matches!(
            render(Path::new("collie"), "claude-permission"),
            Err(CommandError::NotAbsolute(_))
        ));
        assert!(matches!(
            render(Path::new("/usr/bin/collie-dev"), "claude-permission"),
            Err(CommandError::NotCollie(_))
        ));
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/\xff/collie"));
        assert!(matches!(
            render(odd, "claude-permission"),
            Err(CommandError::NotUtf8(_))
        ));
    }

    #[test]
    fn other_commands_are_not_collies() {
        for command in [
            "/usr/bin/collie hook codex-permission",
            "/usr/bin/collie hook claude-permission --verbose",
            "/usr/bin/collie-dev hook claude-permission",
            "/usr/bin/not-collie hook claude-permission",
            "echo /usr/bin/collie hook claude-permission",
            "\"/usr/bin/collie\" hook claude-permission",
            "$HOME/bin/collie hook claude-permission",
            "'/a b/collie'x hook claude-permission",
            "hook claude-permission",
            " hook claude-permission",
            "",
        ] {
            assert_eq!(recognise(command, "claude-permission"), None, "{command}");
        }
    }

    #[test]
    fn a_hand_written_collie_on_the_path_counts() {
        assert_eq!(
            recognise("collie hook claude-permission", "claude-permission").as_deref(),
            Some("collie")
        );
    }

    proptest! {
        /// Whatever the folder's name, the written line is recognised as that very executable.
        #[test]
        fn rendered_lines_are_recognised(dirs in proptest::collection::vec("[^/\0]{1,12}", 0..4)) {
            let mut exe = PathBuf::from("/");
            for d in &dirs {
                exe.push(d);
            }
            exe.push("collie");
            let line = render(&exe, "claude-permission").unwrap();
            prop_assert_eq!(recognise(&line, "claude-permission"), exe.to_str().map(str::to_owned));
            prop_assert_eq!(recognise(&line, "codex-permission"), None);
        }
    }
}
