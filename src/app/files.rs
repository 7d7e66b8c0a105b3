//! The phone's Files and Changes views (SPEC §11, "File view and browse"): browse a workspace's
//! folders, open a file, see a folder's uncommitted changes — on any machine of the crew.
//!
//! These are adapters over [`App::call_tool`] (`list_directory` at depth 1, `read_file`,
//! `git_diff`), so the tools' registry, workspace rules, relaying, audit and masking apply as they
//! are; the routes under `/api/files` add the tier `files` (SPEC §11: "Both need tier files").
//! On top, the Files view's own rule: a `.git` folder is never listed, browsed or opened — a
//! repository's internals are not something to read on a phone, and its config names programs.
//! The rule is checked on the path asked for *and* on the path the tool resolved (a symlink to a
//! `.git` folder is refused the same way), and `.git` entries are dropped from every listing.

use std::path::{Path, PathBuf};

use collie_actors::panes::PanesMsg;
use collie_actors::tools::ToolError;
use serde_json::{Map, Value};

use super::machine::Machine;
use super::ops::Op;
use super::{App, AppError, Caller};

/// The most a page of an opened file holds, in lines (the view asks for pages of this size).
pub const PAGE_LINES: u64 = 500;

/// Whether a path (as asked, or as resolved) names something in or at a `.git` folder.
pub fn in_git_folder(path: &str) -> bool {
    Path::new(path)
        .components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
}

/// The `.git` rule on a path: refused as the tools refuse a guarded path.
fn check(path: &str) -> Result<(), AppError> {
    if in_git_folder(path) {
        return Err(AppError::Tool(ToolError::PathNotAllowed));
    }
    Ok(())
}

/// The tool's arguments with the machine named.
fn with_machine(machine: &str, mut args: Map<String, Value>) -> Value {
    args.insert("machine".into(), machine.into());
    Value::Object(args)
}

/// The `path` member of a tool's answer (the resolved path), checked against the `.git` rule.
fn check_answer(answer: &Value) -> Result<(), AppError> {
    match answer.get("path").and_then(Value::as_str) {
        Some(p) => check(p),
        None => Ok(()),
    }
}

impl App {
    /// The working folder of this machine's `pane` (its foreground process's, read now).
    pub(super) async fn pane_folder(&self, pane: &str) -> Result<PathBuf, AppError> {
        let pane = pane.to_owned();
        self.panes
            .actor
            .call(|reply| PanesMsg::Cwd { pane, reply })
            .await??
            .ok_or_else(|| AppError::BadRequest("the pane's folder cannot be read".into()))
    }

    /// One folder's entries (depth 1), `.git` left out; `path` empty means the first workspace of
    /// the machine (`.`: relative paths start there — the home folder unless the applied
    /// configuration names others, where home may not be a workspace at all).
    pub async fn browse(
        &self,
        caller: &Caller,
        machine: &str,
        path: &str,
    ) -> Result<Value, AppError> {
        self.authorize(caller, Op::FileList)?;
        let path = if path.is_empty() { "." } else { path };
        check(path)?;
        let mut args = Map::new();
        args.insert("path".into(), path.into());
        args.insert("depth".into(), 1.into());
        let mut answer = self
            .call_tool(caller, "list_directory", with_machine(machine, args))
            .await?;
        check_answer(&answer)?;
        if let Some(Value::Array(entries)) = answer.get_mut("entries") {
            entries.retain(|e| {
                !e.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.eq_ignore_ascii_case(".git"))
            });
        }
        Ok(answer)
    }

    /// A page of one file: `offset` (a line) and `length` (lines, at most [`PAGE_LINES`]).
    /// Binary files and pages past the tool's size bound are said so by the tool's answer
    /// (`binary`, `truncated`).
    pub async fn open_file(
        &self,
        caller: &Caller,
        machine: &str,
        path: &str,
        offset: u64,
        length: Option<u64>,
    ) -> Result<Value, AppError> {
        self.authorize(caller, Op::FileRead)?;
        check(path)?;
        let length = length.unwrap_or(PAGE_LINES);
        if length == 0 || length > PAGE_LINES {
            return Err(AppError::BadRequest(format!(
                "length: 1 to {PAGE_LINES} lines"
            )));
        }
        let offset =
            i64::try_from(offset).map_err(|_| AppError::BadRequest("offset: too large".into()))?;
        let mut args = Map::new();
        args.insert("path".into(), path.into());
        args.insert("offset".into(), offset.into());
        args.insert("length".into(), length.into());
        let answer = self
            .call_tool(caller, "read_file", with_machine(machine, args))
            .await?;
        check_answer(&answer)?;
        Ok(answer)
    }

    /// The uncommitted changes of the repository `path` is in — or, with `pane` and no `path`,
    /// the one that pane's folder is in (this machine's panes only); the workspace root when
    /// neither is given. Masked by `git_diff` as every tool answer is.
    pub async fn changes(
        &self,
        caller: &Caller,
        machine: &str,
        path: &str,
        pane: Option<&str>,
    ) -> Result<Value, AppError> {
        self.authorize(caller, Op::FileChanges)?;
        let mut args = Map::new();
        if let (true, Some(pane)) = (path.is_empty(), pane) {
            if let Machine::Member(_) = self.machine(machine)? {
                return Err(AppError::CapabilityMissing);
            }
            let folder = self.pane_folder(pane).await?;
            let folder = folder
                .to_str()
                .ok_or(AppError::Tool(ToolError::PathNotAllowed))?;
            check(folder)?;
            args.insert("path".into(), folder.into());
        } else if !path.is_empty() {
            check(path)?;
            args.insert("path".into(), path.into());
        }
        self.call_tool(caller, "git_diff", with_machine(machine, args))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_folders_are_named_in_any_spelling() {
        for p in [
            ".git",
            "a/.git",
            "/h/r/.git/config",
            "/h/r/.GIT/HEAD",
            "./.git/",
        ] {
            assert!(in_git_folder(p), "{p}");
        }
        for p in [
            "",
            "~",
            "/h/r/.gitignore",
            "/h/r/git",
            "/h/r/.github/x",
            "a.git",
        ] {
            assert!(!in_git_folder(p), "{p}");
        }
    }
}
