//! Screen prompts (SPEC §10.2): recognizing, on a pane's screen, the permission dialog an agent
//! draws — a question line, then numbered options, one of them under a selection mark — for agents
//! whose hooks do not reach Collie. Pure: lines in, a prompt (or nothing) out.
//!
//! **What is recognized.** Reading up from the bottom of the screen: a run of option lines
//! `1. …`, `2. …` numbered from 1 without gaps, at least two, exactly one of them marked (`❯`, `›`
//! or `>` before its number); above them (blank lines skipped) a line ending in `?`, the question;
//! above that, up to the dialog's top rule (a line of box-drawing dashes) or a blank line after
//! text, the lines that say what is being decided (Claude Code: the tool, its description, the
//! command between dashed rules). Anything else is not a prompt: a numbered list in a shell, a
//! question without a marked option, options without a question.
//!
//! **The hash** covers exactly the lines the prompt was read from, from its first context line to
//! its last option, as they are on the screen. A tap types an option's number only while the
//! pane's current lines at the same place hash the same (the caller checks that in the same turn
//! as it types), so a tap never answers a dialog that is no longer there.
//!
//! Real screens the tests read: `fixtures/` (captured from the agents themselves; see the file
//! names for the version).

use sha2::{Digest, Sha256};

/// One option of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptOption {
    /// What to type to choose it (its number).
    pub key: String,
    /// Its text.
    pub label: String,
}

/// A permission dialog found on a screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenPrompt {
    /// The lines above the question that say what is being decided, trimmed, without rules.
    pub context: Vec<String>,
    /// The question.
    pub question: String,
    /// The options, in order.
    pub options: Vec<PromptOption>,
    /// Which option is marked now (an index into `options`).
    pub selected: usize,
    /// The first and one-past-the-last screen row the prompt was read from.
    pub rows: (usize, usize),
    /// SHA-256 (hex) of those rows' text.
    pub hash: String,
}

/// The SHA-256 (hex) of `lines`, each followed by a newline.
pub fn lines_hash(lines: &[String]) -> String {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// Marks a selected option may carry.
const MARKS: [char; 3] = ['❯', '›', '>'];

/// `(marked, number, label)` of an option line.
fn option_line(line: &str) -> Option<(bool, u32, String)> {
    let t = line.trim_start();
    let (marked, rest) = match t.chars().next() {
        Some(c) if MARKS.contains(&c) => (true, t[c.len_utf8()..].trim_start()),
        _ => (false, t),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 2 {
        return None;
    }
    let label = rest[digits.len()..].strip_prefix(". ")?.trim();
    if label.is_empty() {
        return None;
    }
    Some((marked, digits.parse().ok()?, label.to_owned()))
}

/// A rule inside a dialog: a line of dashes other than its top's.
fn is_rule(line: &str) -> bool {
    line.chars().count() >= 3 && line.chars().all(|c| matches!(c, '╌' | '━' | '┄' | '-'))
}

/// The prompt on `lines` (a screen, top to bottom), if there is one.
pub fn recognize(lines: &[String]) -> Option<ScreenPrompt> {
    // The last option line on the screen, then the run of options ending there.
    let last = lines.iter().rposition(|l| option_line(l).is_some())?;
    let mut first = last;
    while first > 0 && option_line(&lines[first - 1]).is_some() {
        first -= 1;
    }
    let parsed: Vec<(bool, u32, String)> = lines[first..=last]
        .iter()
        .filter_map(|l| option_line(l))
        .collect();
    let numbered = parsed
        .iter()
        .enumerate()
        .all(|(i, (_, n, _))| usize::try_from(*n).ok() == Some(i + 1));
    let marked: Vec<usize> = parsed
        .iter()
        .enumerate()
        .filter(|(_, (m, _, _))| *m)
        .map(|(i, _)| i)
        .collect();
    if parsed.len() < 2 || !numbered || marked.len() != 1 {
        return None;
    }
    // The question: the nearest non-blank line above the options, ending in `?`.
    let q = (0..first).rev().find(|&i| !lines[i].trim().is_empty())?;
    let question = lines[q].trim();
    if !question.ends_with('?') {
        return None;
    }
    // The context: up to the dialog's top rule, or a blank line once some text was read; the
    // rules inside the dialog (around a command) are skipped.
    let mut top = q;
    let mut context = Vec::new();
    for i in (0..q).rev() {
        let t = lines[i].trim();
        if is_top_rule(t) {
            break;
        }
        if is_rule(t) {
            top = i;
            continue;
        }
        if t.is_empty() {
            if context.is_empty() {
                continue;
            }
            break;
        }
        context.push(t.to_owned());
        top = i;
    }
    context.reverse();
    let rows = (top, last + 1);
    Some(ScreenPrompt {
        context,
        question: question.to_owned(),
        options: parsed
            .into_iter()
            .map(|(_, n, label)| PromptOption {
                key: n.to_string(),
                label,
            })
            .collect(),
        selected: marked[0],
        rows,
        hash: lines_hash(&lines[rows.0..rows.1]),
    })
}

/// A dialog's top: a line of `─` (Claude Code draws its box's top so, and the rules around a
/// command with `╌`).
fn is_top_rule(line: &str) -> bool {
    line.chars().count() >= 3 && line.chars().all(|c| c == '─')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn claude_code_s_bash_dialog_is_a_prompt() {
        let lines = screen(include_str!("fixtures/claude-code-2.1.332-bash.txt"));
        let p = recognize(&lines).expect("the dialog");
        assert_eq!(p.question, "Do you want to proceed?");
        let keys: Vec<&str> = p.options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["1", "2", "3", "4"]);
        assert_eq!(p.options[0].label, "Yes");
        assert_eq!(p.options[3].label, "No");
        assert_eq!(p.selected, 0);
        assert!(
            p.context.contains(&"Bash command".to_owned()),
            "{:?}",
            p.context
        );
        assert!(
            p.context.contains(&"cargo test --workspace".to_owned()),
            "{:?}",
            p.context
        );
        assert!(
            !p.context.iter().any(|l| l.contains("run the tests")),
            "not the chat above"
        );
        assert_eq!(p.hash, lines_hash(&lines[p.rows.0..p.rows.1]));
    }

    #[test]
    fn codex_s_exec_dialog_is_not_read_yet_its_question_sits_above_the_command() {
        // The real Codex 0.171.0 approval dialog, captured from a tmux pane: the question comes
        // first, then `Environment:`, `Reason:` and the command, then the options (`›` marks the
        // first). Reading up from the options, the nearest line is the command, not a question,
        // so this is not (yet) recognized. When it is, this test is the place to say what is read.
        let lines = screen(include_str!("fixtures/codex-0.171.0-exec.txt"));
        let question = lines
            .iter()
            .position(|l| l.trim() == "Would you like to run the following command?")
            .expect("the question is on the screen");
        let first_option = lines
            .iter()
            .position(|l| l.trim_start().starts_with("› 1. Yes, proceed"))
            .expect("the marked first option");
        let nearest_above = lines[..first_option]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .expect("a line above the options");
        assert!(question < first_option);
        assert_eq!(nearest_above.trim(), "$ touch marker");
        assert_eq!(recognize(&lines), None);
    }

    #[test]
    fn claude_code_s_file_dialogs_wrap_an_option_and_are_not_read_yet() {
        // The real Claude Code 2.1.332 dialogs for a Write and an Edit in a 100-column pane: the
        // second option's label wraps onto a line of its own, so reading up from the last option
        // (`3. No`) the run of option lines is one long, and this is not (yet) recognized.
        for fixture in [
            include_str!("fixtures/claude-code-2.1.332-write.txt"),
            include_str!("fixtures/claude-code-2.1.332-edit.txt"),
        ] {
            let lines = screen(fixture);
            let no = lines
                .iter()
                .position(|l| l.trim() == "3. No")
                .expect("the last option");
            assert_eq!(lines[no - 1].trim(), "session (shift+tab)", "{fixture}");
            assert!(lines[no - 2]
                .trim_start()
                .starts_with("2. Yes, and switch to accept edits"));
            assert!(lines.iter().any(|l| l.trim().starts_with("Do you want to")));
            assert_eq!(recognize(&lines), None, "{fixture}");
        }
    }

    #[test]
    fn any_change_in_the_prompt_s_lines_changes_the_hash() {
        let lines = screen(include_str!("fixtures/claude-code-2.1.332-bash.txt"));
        let p = recognize(&lines).expect("the dialog");
        let mut moved = lines.clone();
        let command_row = (p.rows.0..p.rows.1)
            .find(|&i| moved[i].contains("cargo test --workspace"))
            .expect("the command row");
        moved[command_row] = moved[command_row].replace("--workspace", "--release");
        let q = recognize(&moved).expect("still a dialog");
        assert_ne!(q.hash, p.hash);
        // The selection moving is a change too.
        let mut down = lines;
        let (a, b) = (p.rows.1 - 4, p.rows.1 - 3);
        down[a] = down[a].replacen('❯', " ", 1);
        down[b] = down[b].replacen("  2.", "❯ 2.", 1);
        let r = recognize(&down).expect("still a dialog");
        assert_eq!(r.selected, 1);
        assert_ne!(r.hash, p.hash);
    }

    #[test]
    fn lists_and_questions_that_are_not_dialogs_are_not_prompts() {
        // A numbered list in a shell, no question, no mark.
        assert_eq!(
            recognize(&screen("$ cat todo\n1. write\n2. test\n$ ")),
            None
        );
        // A question and options, but nothing marked.
        assert_eq!(recognize(&screen("Continue?\n 1. Yes\n 2. No\n")), None);
        // Marked options without a question.
        assert_eq!(recognize(&screen("Pick one\n❯ 1. Yes\n  2. No\n")), None);
        // Numbering with a gap.
        assert_eq!(recognize(&screen("Go on?\n❯ 1. Yes\n  3. No\n")), None);
        // Two marks.
        assert_eq!(recognize(&screen("Go on?\n❯ 1. Yes\n❯ 2. No\n")), None);
        // A single option.
        assert_eq!(recognize(&screen("Go on?\n❯ 1. Yes\n")), None);
    }

    #[test]
    fn a_plain_dialog_without_a_box_is_read_up_to_the_blank_line() {
        let lines =
            screen("old output\n\nRun rm -rf build\nAllow this command?\n› 1. Yes\n  2. No\n");
        let p = recognize(&lines).expect("a dialog");
        assert_eq!(p.context, ["Run rm -rf build"]);
        assert_eq!(p.rows, (2, 6));
    }
}
