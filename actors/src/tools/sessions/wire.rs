//! The session tools' arguments and answers, with Desktop Commander's names except that a
//! process is always named by its `session` id, never a pid.

use serde::{Deserialize, Serialize};

/// `start_process`: starts `command` as a session.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartProcessArgs {
    /// The command line, run by `sh -c` in the workspace folder.
    pub command: String,
    /// How long to wait for the first output, in milliseconds (default 2 s, at most 30 s). The
    /// session keeps running after the answer either way.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `interact_with_process`: writes a line to a session's stdin.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InteractWithProcessArgs {
    /// The session id `start_process` answered.
    pub session: String,
    /// The text to write; a newline is added when it does not end with one.
    pub input: String,
    /// How long to wait for output after writing, in milliseconds (default 2 s, at most 30 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `read_process_output`: a session's output from a byte cursor.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadProcessOutputArgs {
    /// The session id.
    pub session: String,
    /// The byte cursor to read from (`next_offset` of an earlier answer; 0 is the first byte).
    /// Default: where this session's last read ended.
    #[serde(default)]
    pub offset: Option<u64>,
    /// The most bytes to answer (default 64 KiB, at most 1 MiB).
    #[serde(default)]
    pub length: Option<u64>,
}

/// `kill_process` and `force_terminate`: a session to stop.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillProcessArgs {
    /// The session id.
    pub session: String,
}

/// A slice of a session's output and where the session stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Output {
    /// The output (stdout and stderr as they came), from `offset`.
    pub output: String,
    /// The cursor of the answer's first byte.
    pub offset: u64,
    /// The cursor to read from next.
    pub next_offset: u64,
    /// Bytes dropped from the ring (its 2 MiB cap) between the asked offset and `offset`.
    pub dropped: u64,
    /// Whether the process still runs.
    pub running: bool,
    /// Its exit code, once it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
}

/// `start_process`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Started {
    /// The session's id: 128 random bits in hex. Name the session by it; it is not a pid.
    pub session: String,
    /// The first output.
    #[serde(flatten)]
    pub output: Output,
}

/// One of the caller's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionInfo {
    /// The session id.
    pub session: String,
    /// The command line, cut at 1 KiB.
    pub command: String,
    /// Whether the process still runs.
    pub running: bool,
    /// Its exit code, once it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Milliseconds since it started.
    pub age_ms: u64,
    /// Milliseconds since its owner last called on it.
    pub idle_ms: u64,
    /// The cursor after its last output byte.
    pub output_end: u64,
}

/// `list_sessions`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionList {
    /// The caller's sessions, oldest first.
    pub sessions: Vec<SessionInfo>,
}

/// `kill_process`'s and `force_terminate`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Killed {
    /// The session id.
    pub session: String,
    /// The signal sent to its process group (`SIGTERM`, `SIGKILL`), or none when it had already
    /// exited (a finished session's group is never signalled).
    pub signal: Option<String>,
    /// Whether the process has ended (then the session is forgotten).
    pub exited: bool,
}
