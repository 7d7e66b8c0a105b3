//! `collie completions SHELL` and `collie man` (SPEC §17): generated from the command
//! definitions, non-empty, naming real commands; the bash script parses (`bash -n`) and the man
//! page formats without a complaint (`groff`, `man -l`) where those programs exist — a check
//! whose program is missing is skipped, and the test says so.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::collie_bin;

fn collie(args: &[&str]) -> String {
    let out = Command::new(collie_bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run collie");
    assert!(
        out.status.success(),
        "collie {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program args` with `input` on stdin: its exit status and everything it said.
fn feed(program: &str, args: &[&str], input: &str) -> (bool, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_shell_s_script_names_the_commands_and_bash_s_parses() {
    for shell in ["bash", "zsh", "fish"] {
        let script = collie(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {script}");
        for command in ["bridge", "pair", "apply", "service", "restart"] {
            assert!(script.contains(command), "{shell} completes no `{command}`");
        }
        if !have(shell) {
            eprintln!("{shell} is not installed: its script's syntax check is skipped");
            continue;
        }
        let (ok, said) = feed(shell, &["-n"], &script);
        assert!(ok && said.is_empty(), "{shell} -n: {said}");
    }
}

#[test]
fn the_man_page_is_roff_that_names_the_subcommands_and_formats_cleanly() {
    let page = collie(&["man"]);
    // clap_mangen opens with the two lines that define the quote string, then the title.
    let first_macro = page
        .lines()
        .find(|l| l.starts_with(".TH") || l.starts_with(".SH"))
        .expect("a title or a section");
    assert!(first_macro.starts_with(".TH collie 1"), "{first_macro}");
    for command in [
        "bridge",
        "pair",
        "apply",
        "service",
        "restart",
        "completions",
    ] {
        assert!(page.contains(command), "the man page names no `{command}`");
    }
    if have("groff") {
        let (ok, said) = feed("groff", &["-man", "-Tutf8", "-ww", "-z"], &page);
        assert!(ok && said.is_empty(), "groff: {said}");
    } else {
        eprintln!("groff is not installed: formatting the man page is skipped");
    }
    if have("man") {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("collie.1");
        std::fs::write(&file, &page).expect("write");
        let out = Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .stdin(Stdio::null())
            .output()
            .expect("run man");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("SUBCOMMANDS"),
            "man -l: {}{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("man is not installed: reading the page with man -l is skipped");
    }
}
