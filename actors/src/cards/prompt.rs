//! Screen prompts (SPEC §10.2): recognizing, on a pane's screen, the permission dialog an agent
//! draws — a question line, then numbered options, one of them under a selection mark — for agents
//! whose hooks do not reach Collie. Pure: lines in, a prompt (or nothing) out.
//!
//! **What is recognized.** Reading up from the bottom of the screen: a run of option lines
//! `1. …`, `2. …` numbered from 1 without gaps, at least two, exactly one of them marked (`❯`, `›`
//! or `>` before its number), a label that wrapped continuing on lines indented at least as far as
//! the label starts (Claude Code's "Yes, and switch to accept edits … for this / session"); above
//! them, within 12 lines and below the dialog's top rule, a line ending in `?`, the question. What
//! is being decided is either the lines between the question and the options (Codex: environment,
//! reason, `$ command`) or, when the question sits right above the options, the lines above it up
//! to the top rule (a line of box-drawing dashes) or a blank line after text (Claude Code: the
//! tool, its description, the command between dashed rules). Anything else is not a prompt: a
//! numbered list in a shell, a question without a marked option, options without a question.
//!
//! **The hash** covers exactly the lines the prompt was read from, from its first line (context or
//! question) to its last option, as they are on the screen. A tap types an option's number only while the
//! pane's current lines at the same place hash the same (the caller checks that in the same turn
//! as it types), so a tap never answers a dialog that is no longer there.
//!
//! Real screens the tests read: `fixtures/` (captured from the agents themselves; see the file
//! names for the version).

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

// The hash of screen rows is the panes' (the Panes actor checks it before it types): one
// definition, and no import from panes back to cards.
pub use crate::panes::screen::lines_hash;

/// Marks a selected option may carry.
const MARKS: [char; 3] = ['❯', '›', '>'];

/// An option line: whether it is marked, its number, its label, and the column its label starts
/// at (a wrapped label continues on lines indented at least that far).
struct OptionLine {
    marked: bool,
    number: u32,
    label: String,
    label_column: usize,
}

fn option_line(line: &str) -> Option<OptionLine> {
    let t = line.trim_start();
    let (marked, rest) = match t.chars().next() {
        Some(c) if MARKS.contains(&c) => (true, t[c.len_utf8()..].trim_start()),
        _ => (false, t),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 2 {
        return None;
    }
    let after = rest[digits.len()..].strip_prefix(". ")?;
    let label = after.trim();
    if label.is_empty() {
        return None;
    }
    let label_column = line.chars().count() - after.trim_start().chars().count();
    Some(OptionLine {
        marked,
        number: digits.parse().ok()?,
        label: label.to_owned(),
        label_column,
    })
}

/// Leading blanks of `line`, in characters.
fn indent(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count()
}

/// A rule inside a dialog: a line of dashes other than its top's.
fn is_rule(line: &str) -> bool {
    line.chars().count() >= 3 && line.chars().all(|c| matches!(c, '╌' | '━' | '┄' | '-'))
}

/// How many lines above its options a dialog's question may stand (Codex puts the command, the
/// reason and the environment between them).
const QUESTION_WITHIN: usize = 12;

/// The run of options ending at row `last` (an option line), read upwards: each option with the
/// lines its label wrapped onto (indented at least to where its label starts). Returns the
/// options top to bottom and the row of the first.
fn options_ending_at(lines: &[String], last: usize) -> (Vec<OptionLine>, usize) {
    let mut options: Vec<OptionLine> = Vec::new();
    let mut wrapped: Vec<&str> = Vec::new();
    let mut first = last;
    let mut row = last + 1;
    while row > 0 {
        row -= 1;
        let line = &lines[row];
        if let Some(mut option) = option_line(line) {
            for more in wrapped.drain(..).rev() {
                option.label.push(' ');
                option.label.push_str(more);
            }
            options.push(option);
            first = row;
            continue;
        }
        let continues = options
            .last()
            .is_some_and(|below| !line.trim().is_empty() && indent(line) >= below.label_column);
        if !continues {
            break;
        }
        wrapped.push(line.trim());
    }
    options.reverse();
    (options, first)
}

/// The prompt on `lines` (a screen, top to bottom), if there is one.
pub fn recognize(lines: &[String]) -> Option<ScreenPrompt> {
    // The last option line on the screen, then the run of options ending there.
    let last = lines.iter().rposition(|l| option_line(l).is_some())?;
    let (options, first) = options_ending_at(lines, last);
    let numbered = options
        .iter()
        .enumerate()
        .all(|(i, o)| usize::try_from(o.number).ok() == Some(i + 1));
    let marked: Vec<usize> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| o.marked)
        .map(|(i, _)| i)
        .collect();
    if options.len() < 2 || !numbered || marked.len() != 1 {
        return None;
    }
    // The question: the nearest line above the options that ends in `?` — right above them
    // (Claude Code), or above what is being decided (Codex) — within the dialog.
    let mut between = Vec::new();
    let mut q = None;
    for i in (0..first).rev().take(QUESTION_WITHIN) {
        let t = lines[i].trim();
        if is_top_rule(t) {
            break;
        }
        if t.ends_with('?') {
            q = Some(i);
            break;
        }
        if !t.is_empty() && !is_rule(t) {
            between.push(t.to_owned());
        }
    }
    let q = q?;
    let question = lines[q].trim();
    between.reverse();
    // The context: what stands between the question and the options (Codex), or else the lines
    // above the question, up to the dialog's top rule or a blank line once some text was read
    // (Claude Code; the rules inside the dialog, around a command, are skipped).
    let mut top = q;
    let context = if between.is_empty() {
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
        context
    } else {
        between
    };
    let rows = (top, last + 1);
    Some(ScreenPrompt {
        context,
        question: question.to_owned(),
        options: options
            .into_iter()
            .map(|o| PromptOption {
                key: o.number.to_string(),
                label: o.label,
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
    fn codex_s_exec_dialog_is_a_prompt_with_its_question_above_the_command() {
        // Codex 0.171.0, captured from a tmux pane: the question first, then the environment, the
        // reason and the command, then the options under `›`.
        let lines = screen(include_str!("fixtures/codex-0.171.0-exec.txt"));
        let p = recognize(&lines).expect("the dialog");
        assert_eq!(p.question, "Would you like to run the following command?");
        assert_eq!(
            p.context,
            [
                "Environment: local",
                "Reason: Make the marker file",
                "$ touch marker"
            ]
        );
        let labels: Vec<&str> = p.options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Yes, proceed (y)",
                "Yes, and don't ask again for commands that start with `touch marker` (p)",
                "No, and tell Codex what to do differently (esc)"
            ]
        );
        assert_eq!(p.selected, 0);
        assert_eq!(
            lines[p.rows.0].trim(),
            p.question,
            "the dialog starts at its question"
        );
        assert!(
            !p.context.iter().any(|l| l.contains("Running")),
            "not the chat above"
        );
    }

    #[test]
    fn claude_code_s_file_dialogs_keep_a_wrapped_label_whole() {
        for (fixture, question, what) in [
            (
                include_str!("fixtures/claude-code-2.1.332-write.txt"),
                "Do you want to create notes.md?",
                "Create file",
            ),
            (
                include_str!("fixtures/claude-code-2.1.332-edit.txt"),
                "Do you want to make this edit to main.rs?",
                "Edit file",
            ),
        ] {
            let lines = screen(fixture);
            let p = recognize(&lines).expect("the dialog");
            assert_eq!(p.question, question);
            assert_eq!(p.context.first().map(String::as_str), Some(what));
            let labels: Vec<&str> = p.options.iter().map(|o| o.label.as_str()).collect();
            assert_eq!(
                labels,
                [
                    "Yes",
                    "Yes, and switch to accept edits (auto-approve file edits and common file \
                     commands) for this session (shift+tab)",
                    "No"
                ],
                "{question}"
            );
        }
    }

    #[test]
    fn a_numbered_list_with_a_marked_line_but_no_question_is_not_a_prompt() {
        let lines = screen("$ cat todo\nThings:\n> 1. milk\n  2. eggs\n$ ");
        assert_eq!(recognize(&lines), None);
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
