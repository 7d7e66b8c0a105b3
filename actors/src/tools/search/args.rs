//! The three tools' arguments and answers, with Desktop Commander's parameter names
//! (`start_search`, `get_more_search_results`, `stop_search`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a search matches file names or file contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchType {
    /// File names (Desktop Commander's default).
    #[default]
    Files,
    /// File contents, line by line.
    Content,
}

/// `start_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSearchArgs {
    /// The folder to search under. The caller resolves it inside a workspace and passes the
    /// result as `root`; the search itself does not read this field.
    pub path: String,
    /// What to look for: a regular expression (or text with `literalSearch`) for a content
    /// search; a part of the name, or a glob such as `*.rs`, for a name search.
    pub pattern: String,
    /// `files` (names, the default) or `content`.
    #[serde(default, rename = "searchType")]
    pub search_type: SearchType,
    /// Only files whose name matches one of these globs, separated by `|` (`*.rs|*.toml`). A glob
    /// with a `/` is matched against the path below the root.
    #[serde(default, rename = "filePattern")]
    pub file_pattern: Option<String>,
    /// Match without regard to case (default true).
    #[serde(default, rename = "ignoreCase")]
    pub ignore_case: Option<bool>,
    /// Stop collecting after this many results (at most the bridge's cap).
    #[serde(default, rename = "maxResults")]
    pub max_results: Option<u64>,
    /// Also search hidden files and folders (names starting with a dot; `.git` never).
    #[serde(default, rename = "includeHidden")]
    pub include_hidden: Option<bool>,
    /// Lines of context before and after each content match (default 5, at most the cap).
    #[serde(default, rename = "contextLines")]
    pub context_lines: Option<u64>,
    /// End the search after this many milliseconds (at most the bridge's cap).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Stop at the first file whose name equals the pattern (name searches; default true for
    /// them, ignored for content searches).
    #[serde(default, rename = "earlyTermination")]
    pub early_termination: Option<bool>,
    /// Match `pattern` as typed, not as a regular expression (default false).
    #[serde(default, rename = "literalSearch")]
    pub literal_search: Option<bool>,
}

/// `get_more_search_results`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMoreSearchResultsArgs {
    /// The search's id, from `start_search`.
    #[serde(rename = "sessionId")]
    pub session_id: String,
    /// First result to answer (0 is the first); a negative offset answers the last `-offset`
    /// results.
    #[serde(default)]
    pub offset: i64,
    /// How many results to answer (default 100, at most the page cap).
    #[serde(default)]
    pub length: Option<u64>,
}

/// `stop_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopSearchArgs {
    /// The search's id, from `start_search`.
    #[serde(rename = "sessionId")]
    pub session_id: String,
}

/// Why a search ended before it had walked everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CutShort {
    /// It reached its result cap (`maxResults`, or the bridge's count or byte cap).
    MaxResults,
    /// It ran out of time.
    Timeout,
    /// `stop_search`, or the bridge stopping.
    Stopped,
    /// A name search found a file named exactly `pattern` (`earlyTermination`).
    EarlyTermination,
}

impl CutShort {
    /// The word the audit line records.
    pub fn as_str(self) -> &'static str {
        match self {
            CutShort::MaxResults => "maxResults",
            CutShort::Timeout => "timeout",
            CutShort::Stopped => "stopped",
            CutShort::EarlyTermination => "earlyTermination",
        }
    }
}

/// One result: a file (name search) or a matching line (content search).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// The file's absolute path.
    pub file: String,
    /// The matching line's number, from 1 (content searches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The matching line, cut to the line cap (content searches).
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Context lines before the match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    /// Context lines after the match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

impl SearchHit {
    /// Bytes this result holds, as the result buffer counts them.
    pub(crate) fn weight(&self) -> usize {
        self.file.len()
            + self.text.as_ref().map_or(0, String::len)
            + self.before.iter().map(String::len).sum::<usize>()
            + self.after.iter().map(String::len).sum::<usize>()
    }
}

/// A page of a search's results (`start_search` answers the first one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    /// The search's id: 128 random bits, hex.
    pub session_id: String,
    /// Index of the page's first result.
    pub offset: usize,
    /// The page.
    pub results: Vec<SearchHit>,
    /// Results collected so far.
    pub total_results: usize,
    /// The search has ended (walked everything, or cut short).
    pub is_complete: bool,
    /// Why it ended early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<CutShort>,
    /// Files passed over: binary, bigger than the cap, a line too long, or unreadable.
    pub skipped_files: u64,
    /// Milliseconds since the search started (to its end once it has ended).
    pub runtime_ms: u64,
}

/// `stop_search`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchStopped {
    /// The search's id.
    pub session_id: String,
    /// Results it had collected (still readable with `get_more_search_results` until it is
    /// forgotten).
    pub total_results: usize,
    /// It had already ended before the stop.
    pub was_complete: bool,
}
