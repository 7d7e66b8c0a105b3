//! How a tool fails. `Display` is the string an adapter answers with (SPEC §3.2): the HTTP adapter
//! maps each variant to its status, MCP puts it in an `is_error` result, the relay carries it.

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A bad argument; the message names the field (400).
    #[error("{0}")]
    BadArgument(String),
    /// The path leaves every workspace once `..` and symlinks are resolved (403; audited
    /// `security.denied`).
    #[error("path outside the workspace")]
    OutsideWorkspace,
    /// The path is Collie's own state or config, a file named like a Collie state file, or an
    /// agent's hook settings (403; audited `security.denied`).
    #[error("path not allowed")]
    PathNotAllowed,
    /// No file or folder at the path (404).
    #[error("no such file")]
    NoSuchFile,
    /// The path exists but is the wrong kind (a folder where a file is needed, or the reverse) (400).
    #[error("{0}")]
    WrongKind(String),
    /// The file exists where the tool would create it (409).
    #[error("already exists")]
    AlreadyExists,
    /// No session with that id owned by the caller (404). Another device's session is answered
    /// exactly like a missing one, so ids cannot be probed.
    #[error("no such session")]
    NoSuchSession,
    /// No search with that id owned by the caller (404), likewise.
    #[error("no such search")]
    NoSuchSearch,
    /// `edit_block` found the file changed since it was read, or the old text not exactly where
    /// expected (409).
    #[error("conflict")]
    Conflict,
    /// A cap was reached (503 `resource limit`; audited `resource.denied` with the cap's name).
    #[error("resource limit")]
    ResourceLimit(&'static str),
    /// Anything that is not the caller's fault; the detail goes to the bridge's log only (500).
    #[error("internal error")]
    Internal(String),
}

impl ToolError {
    /// An I/O failure on `what`: a missing file is the caller's to know about, anything else is
    /// logged and answered `internal error` (no OS text reaches a response).
    pub fn io(what: &str, e: &std::io::Error) -> ToolError {
        match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NoSuchFile,
            std::io::ErrorKind::AlreadyExists => ToolError::AlreadyExists,
            _ => ToolError::Internal(format!("{what}: {e}")),
        }
    }
}
