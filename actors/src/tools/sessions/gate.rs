//! What a session tool checks before it touches anything: the session it names is a session id,
//! in the table and the caller's (another device's is answered exactly like a missing one); for
//! `interact_with_process`, also that the input fits and the process still runs; for
//! `start_process` and `exec_command`, that the command line is one a tool runs and no cap
//! refuses a new process now (taking nothing: the start itself takes its slot). The tools run
//! these first; the application runs them ([`crate::tools::toolbox::Toolbox::check_write`])
//! before it writes the tool's audit line, so a call refused here leaves no `tool.<name>` line
//! (SPEC §7: a line is written for what happened, never for what was refused before it happened).
//! What can still go wrong later (a stdin that closed, a process that exited meanwhile, a cap
//! another call reached in between) is still checked by the tool itself.

use serde_json::Value;

use std::time::Instant;

use super::core::Entry;
use super::StartProcessArgs;
use super::{check_command, parse_id, InteractWithProcessArgs, KillProcessArgs, Sessions};
use crate::tools::{files, ToolError, ToolName};

impl Sessions {
    /// The id of the session `raw` names, if it is `owner`'s.
    pub(super) fn named(&self, owner: &str, raw: &str) -> Result<String, ToolError> {
        let id = parse_id(raw)?;
        self.inner.state.lock().core.owned(owner, &id)?;
        Ok(id)
    }

    /// The id of the session `interact_with_process` would write `a.input` to, if it may.
    pub(super) fn writable(
        &self,
        owner: &str,
        a: &InteractWithProcessArgs,
    ) -> Result<String, ToolError> {
        let id = parse_id(&a.session)?;
        let st = self.inner.state.lock();
        let max = st.core.limits().max_input_bytes;
        if a.input.len() > max {
            return Err(ToolError::BadArgument(format!(
                "input: at most {max} bytes"
            )));
        }
        still_running(st.core.owned(owner, &id)?)?;
        Ok(id)
    }

    /// Whether `start_process` with `a` would start for `owner` now.
    pub fn admits_start(&self, owner: &str, a: &StartProcessArgs) -> Result<(), ToolError> {
        check_command(&a.command)?;
        self.inner
            .state
            .lock()
            .core
            .admits_session(owner, Instant::now())
    }

    /// Whether an `exec_command` of `owner` would be admitted now (see `Sessions::admits_exec`,
    /// which checks its arguments first).
    pub(crate) fn exec_admitted(&self, owner: &str) -> Result<(), ToolError> {
        self.inner
            .state
            .lock()
            .core
            .admits_exec(owner, Instant::now())
    }

    /// The checks above for `tool` with `args` of `owner`, before it runs; other tools pass. The
    /// arguments are decoded as strictly as the tool decodes them (an unknown field is refused
    /// here already).
    pub fn check(&self, owner: &str, tool: ToolName, args: &Value) -> Result<(), ToolError> {
        match tool {
            ToolName::InteractWithProcess => {
                let a: InteractWithProcessArgs = files::args(args.clone())?;
                self.writable(owner, &a).map(|_| ())
            }
            ToolName::KillProcess | ToolName::ForceTerminate => {
                let a: KillProcessArgs = files::args(args.clone())?;
                self.named(owner, &a.session).map(|_| ())
            }
            _ => Ok(()),
        }
    }
}

/// Refuses a session whose process has exited (its stdin is gone with it).
pub(super) fn still_running(e: &Entry) -> Result<(), ToolError> {
    if e.running {
        Ok(())
    } else {
        Err(ToolError::BadArgument(
            "session: the process has exited".into(),
        ))
    }
}
