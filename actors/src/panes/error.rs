//! The errors of pane requests, whatever the backend.
//!
//! Their `Display` strings are the ones SPEC §3.2 gives a phone, so callers pass them on
//! unchanged; the tmux backend's own errors are folded into them here, in one place.

use super::tmux::TmuxError;
use super::zellij::ZellijError;

/// Pane failures; the Display strings that reach a phone are the §3.2 ones.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PaneError {
    /// Unknown pane id.
    #[error("no such pane")]
    NoSuchPane,
    /// No mirrored tmux session of that name (a new window's session).
    #[error("no such session")]
    NoSuchSession,
    /// A cap is reached; names which (for the `resource.denied` line the caller writes).
    #[error("resource limit")]
    ResourceLimit(&'static str),
    /// The input is not acceptable (the message says why).
    #[error("{0}")]
    BadInput(String),
    /// The backend failed.
    #[error("{0}")]
    Backend(String),
    /// The pane's foreground process is a shell, which would run a typed line (SPEC §9).
    #[error("is at a shell prompt")]
    AtShell,
    /// The pane shows a dialog an agent asks a person with (SPEC §9): a typed line and Enter
    /// would answer it, and only a person's tap answers a prompt.
    #[error("is showing a prompt")]
    ShowingPrompt,
    /// What runs in the pane's foreground cannot be read, so it may be a shell.
    #[error("runs a program Collie cannot identify")]
    ForegroundUnknown,
    /// A screen prompt's lines are no longer on the screen where the card was made (SPEC §10.2).
    #[error("The screen changed before that could be sent")]
    ScreenChanged,
}

impl From<ZellijError> for PaneError {
    fn from(e: ZellijError) -> Self {
        match e {
            ZellijError::NoSuchPane => PaneError::NoSuchPane,
            ZellijError::Key(k) => PaneError::BadInput(k.to_string()),
            other => PaneError::Backend(other.to_string()),
        }
    }
}

impl From<TmuxError> for PaneError {
    fn from(e: TmuxError) -> Self {
        match e {
            TmuxError::NoSuchPane => PaneError::NoSuchPane,
            TmuxError::NoSuchSession => PaneError::NoSuchSession,
            TmuxError::Key(k) => PaneError::BadInput(k.to_string()),
            TmuxError::InvalidArgument(a) => PaneError::BadInput(format!("invalid {a}")),
            other => PaneError::Backend(other.to_string()),
        }
    }
}
