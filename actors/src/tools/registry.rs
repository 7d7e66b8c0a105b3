//! The one registry of tools (SPEC §11): each tool's name, the least tier a device needs for it,
//! whether it only reads, and the sentence an MCP client shows for it.
//!
//! The registry is code, not data: a tool's tier is a `match` arm, so nothing at run time — no
//! configuration, no request field such as `{"risk":"high"}` — changes what a tool requires. The
//! three doors (the phone API, the crew relay, MCP) look a tool up here by name; a name that is not
//! here is refused before anything else happens.

use std::fmt;

use crate::tier::Tier;

/// Every tool, by its wire name (Desktop Commander's where a tool shares one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ToolName {
    /// `read_file`: a file's text, or a slice of it (`offset`, `length`; a negative offset reads
    /// the tail).
    ReadFile,
    /// `read_multiple_files`: several files at once, each answered or refused on its own.
    ReadMultipleFiles,
    /// `list_directory`: a folder's entries, to a depth.
    ListDirectory,
    /// `get_file_info`: size, kind, times, mode, line count.
    GetFileInfo,
    /// `start_search`: a search over names or contents, answered with its first results.
    StartSearch,
    /// `get_more_search_results`: the next results of a search.
    GetMoreSearchResults,
    /// `stop_search`: cancels a search.
    StopSearch,
    /// `list_processes`: the machine's processes, command lines masked, bounded.
    ListProcesses,
    /// `list_sessions`: the caller's own process sessions.
    ListSessions,
    /// `read_process_output`: a session's output from a cursor.
    ReadProcessOutput,
    /// `git_diff`: the workspace's uncommitted changes.
    GitDiff,
    /// `edit_block`: replaces text that occurs exactly once (or `expected_replacements` times).
    EditBlock,
    /// `write_file`: writes or appends a file, atomically.
    WriteFile,
    /// `create_directory`: makes a folder (and its parents).
    CreateDirectory,
    /// `move_file`: moves or renames inside the workspaces.
    MoveFile,
    /// `exec_command`: runs a command line to its end (time limit, output cap).
    ExecCommand,
    /// `start_process`: starts a session.
    StartProcess,
    /// `interact_with_process`: writes to a session's stdin.
    InteractWithProcess,
    /// `kill_process`: asks a session's process group to stop (SIGTERM).
    KillProcess,
    /// `force_terminate`: kills a session's process group (SIGKILL).
    ForceTerminate,
}

/// What the registry knows of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The tool.
    pub name: ToolName,
    /// The least tier a device needs.
    pub tier: Tier,
    /// Whether it changes nothing (MCP's `readOnlyHint`).
    pub read_only: bool,
    /// What it does, for an MCP client's model.
    pub description: &'static str,
}

impl ToolName {
    /// Every tool, in the order `tools/list` shows them.
    pub const ALL: [ToolName; 20] = [
        ToolName::ReadFile,
        ToolName::ReadMultipleFiles,
        ToolName::ListDirectory,
        ToolName::GetFileInfo,
        ToolName::StartSearch,
        ToolName::GetMoreSearchResults,
        ToolName::StopSearch,
        ToolName::ListProcesses,
        ToolName::ListSessions,
        ToolName::ReadProcessOutput,
        ToolName::GitDiff,
        ToolName::EditBlock,
        ToolName::WriteFile,
        ToolName::CreateDirectory,
        ToolName::MoveFile,
        ToolName::ExecCommand,
        ToolName::StartProcess,
        ToolName::InteractWithProcess,
        ToolName::KillProcess,
        ToolName::ForceTerminate,
    ];

    /// The tool's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::ReadFile => "read_file",
            ToolName::ReadMultipleFiles => "read_multiple_files",
            ToolName::ListDirectory => "list_directory",
            ToolName::GetFileInfo => "get_file_info",
            ToolName::StartSearch => "start_search",
            ToolName::GetMoreSearchResults => "get_more_search_results",
            ToolName::StopSearch => "stop_search",
            ToolName::ListProcesses => "list_processes",
            ToolName::ListSessions => "list_sessions",
            ToolName::ReadProcessOutput => "read_process_output",
            ToolName::GitDiff => "git_diff",
            ToolName::EditBlock => "edit_block",
            ToolName::WriteFile => "write_file",
            ToolName::CreateDirectory => "create_directory",
            ToolName::MoveFile => "move_file",
            ToolName::ExecCommand => "exec_command",
            ToolName::StartProcess => "start_process",
            ToolName::InteractWithProcess => "interact_with_process",
            ToolName::KillProcess => "kill_process",
            ToolName::ForceTerminate => "force_terminate",
        }
    }

    /// The tool named `name`, if the registry has it (names are exact: no case folding).
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The audit event's name: `tool.<name>`.
    pub fn event_name(self) -> &'static str {
        match self {
            ToolName::ReadFile => "tool.read_file",
            ToolName::ReadMultipleFiles => "tool.read_multiple_files",
            ToolName::ListDirectory => "tool.list_directory",
            ToolName::GetFileInfo => "tool.get_file_info",
            ToolName::StartSearch => "tool.start_search",
            ToolName::GetMoreSearchResults => "tool.get_more_search_results",
            ToolName::StopSearch => "tool.stop_search",
            ToolName::ListProcesses => "tool.list_processes",
            ToolName::ListSessions => "tool.list_sessions",
            ToolName::ReadProcessOutput => "tool.read_process_output",
            ToolName::GitDiff => "tool.git_diff",
            ToolName::EditBlock => "tool.edit_block",
            ToolName::WriteFile => "tool.write_file",
            ToolName::CreateDirectory => "tool.create_directory",
            ToolName::MoveFile => "tool.move_file",
            ToolName::ExecCommand => "tool.exec_command",
            ToolName::StartProcess => "tool.start_process",
            ToolName::InteractWithProcess => "tool.interact_with_process",
            ToolName::KillProcess => "tool.kill_process",
            ToolName::ForceTerminate => "tool.force_terminate",
        }
    }

    /// The registry's entry for this tool.
    pub const fn spec(self) -> ToolSpec {
        use ToolName::*;
        let (tier, read_only, description) = match self {
            ReadFile => (
                Tier::Read,
                true,
                "Read a text file inside a workspace. `offset` skips lines (negative: read the last lines), `length` caps the lines read.",
            ),
            ReadMultipleFiles => (
                Tier::Read,
                true,
                "Read several text files at once (`paths`); each is answered or refused on its own.",
            ),
            ListDirectory => (
                Tier::Read,
                true,
                "List a folder's entries, to `depth` levels (default 2).",
            ),
            GetFileInfo => (
                Tier::Read,
                true,
                "A file's or folder's size, kind, times, permissions and line count.",
            ),
            StartSearch => (
                Tier::Read,
                true,
                "Search file names or contents under `path` for `pattern` (honours .gitignore). Answers the first results and a search id.",
            ),
            GetMoreSearchResults => (
                Tier::Read,
                true,
                "The next results of a search, from `offset`.",
            ),
            StopSearch => (Tier::Read, true, "Stop a running search."),
            ListProcesses => (
                Tier::Read,
                true,
                "The machine's processes with masked command lines (bounded).",
            ),
            ListSessions => (
                Tier::Read,
                true,
                "The process sessions this device started and still runs.",
            ),
            ReadProcessOutput => (
                Tier::Read,
                true,
                "A session's output from `offset` (a cursor the previous answer gave).",
            ),
            GitDiff => (
                Tier::Read,
                true,
                "The uncommitted changes of the git repository at `path`, as a unified diff.",
            ),
            EditBlock => (
                Tier::Files,
                false,
                "Replace `old_string` with `new_string` in `file_path`. The old text must occur exactly once, or `expected_replacements` times; a file changed meanwhile is a conflict.",
            ),
            WriteFile => (
                Tier::Files,
                false,
                "Write `content` to `path` atomically (`mode`: rewrite or append).",
            ),
            CreateDirectory => (
                Tier::Files,
                false,
                "Create a folder and any missing parents.",
            ),
            MoveFile => (
                Tier::Files,
                false,
                "Move or rename a file or folder from `source` to `destination`, both inside a workspace.",
            ),
            ExecCommand => (
                Tier::Full,
                false,
                "Run `command` in a fresh shell to its end (time limit `timeout_ms`, output capped) and answer its exit code and output.",
            ),
            StartProcess => (
                Tier::Full,
                false,
                "Start `command` as a session; answers the session id and the first output.",
            ),
            InteractWithProcess => (
                Tier::Full,
                false,
                "Write `input` (a line) to a session's stdin and answer the output that follows.",
            ),
            KillProcess => (
                Tier::Full,
                false,
                "Ask a session's process group to stop (SIGTERM).",
            ),
            ForceTerminate => (Tier::Full, false, "Kill a session's process group (SIGKILL)."),
        };
        ToolSpec {
            name: self,
            tier,
            read_only,
            description,
        }
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_events_match() {
        for t in ToolName::ALL {
            assert_eq!(ToolName::parse(t.as_str()), Some(t));
            assert_eq!(t.event_name(), format!("tool.{}", t.as_str()));
            assert_eq!(t.spec().name, t);
        }
        assert_eq!(ToolName::parse("READ_FILE"), None);
        assert_eq!(ToolName::parse("read_file "), None);
    }

    /// The tiers of SPEC §11, spelled out so a change to the registry shows up here.
    #[test]
    fn tiers_are_the_specs() {
        let of = |tier| -> Vec<&str> {
            ToolName::ALL
                .into_iter()
                .filter(|t| t.spec().tier == tier)
                .map(ToolName::as_str)
                .collect()
        };
        assert_eq!(
            of(Tier::Files),
            ["edit_block", "write_file", "create_directory", "move_file"]
        );
        assert_eq!(
            of(Tier::Full),
            [
                "exec_command",
                "start_process",
                "interact_with_process",
                "kill_process",
                "force_terminate"
            ]
        );
        for t in ToolName::ALL {
            assert_eq!(t.spec().read_only, t.spec().tier == Tier::Read, "{t}");
        }
    }
}
