//! Tools under tiers (SPEC §11): one operation, [`App::call_tool`], behind three doors — the phone
//! API (`POST /api/tools/{tool}`), the crew relay (a lead's [`RelayKind::Tool`]) and MCP
//! (`POST /mcp`). Each door decodes and names the caller; everything else happens here, once:
//!
//! 1. **The tool** is looked up in the registry ([`ToolName`]); an unknown name is `no such tool`.
//! 2. **The tier gate**, against the *current* policy snapshot (never the request: no field such as
//!    `{"risk":"high"}` grants anything, and a tier lowered a moment ago counts). A refusal is
//!    `insufficient tier`, audited `security.denied` (rate-limited like every denial).
//! 3. **The machine**: the optional `machine` argument, `local` when absent. A member's tool is
//!    relayed when the member declared the `tools` capability (`capability missing` otherwise);
//!    the member gates, validates, audits and runs it as for a local caller, and the lead masks
//!    the answer again; a tool that changes something is audited on the lead once the member
//!    answered that it ran (decision 0052), never for the member's refusal.
//! 4. **Validation and audit**: the arguments are decoded strictly by the tool (an unknown field
//!    is a 400 naming it). A tool that changes something is audited `tool.<name>` *before* it
//!    runs, once the checks it makes before touching anything passed (its paths, its session,
//!    a new process's caps:
//!    [`Toolbox::check_write`](collie_actors::tools::toolbox::Toolbox::check_write); a call
//!    they refuse leaves no line) — a line that cannot be written refuses the call (503 `audit
//!    unavailable`) — with the arguments' metadata only ([`arguments_meta`]: paths, sizes, ids,
//!    a command's first word and length); what it then reports (an exit code, a new size)
//!    follows in a second line. A tool that only reads is audited once, after it ran, with what
//!    it touched. File contents, stdin, command lines and output are never written.
//! 5. **The answer**: every string in it passes this machine's masker before it leaves.
//!
//! Steps 3 to 5 run while the device still holds the tool's tier ([`App::while_allowed`]): a
//! revocation or a lower tier mid-call ends the call at once — its command killed, a relayed call
//! dropped on the member too — and the caller gets the refusal instead of the output.
//!
//! Refusals a tool reports are answered in Collie's words: a path outside the workspace or one of
//! Collie's own files is 403 (audited `security.denied`), a reached cap 503 `resource limit`
//! (audited `resource.denied`), anything unexpected 500 `internal error` with the detail in the
//! bridge's log only.

use std::time::Duration;

use collie_actors::audit::{AuditEventKind, AuditRecord};
use collie_actors::command_word::first_word;
use collie_actors::pairing::Tier;
use collie_actors::tools::sessions::SessionLimits;
use collie_actors::tools::{Done, Meta, ToolError, ToolName, ToolSpec};
use collie_crew::relay::{RelayKind, RelayOk};
use serde_json::{Map, Value};

use super::machine::Member;
use super::operation::Operation;
use super::ops::Op;
use super::{wire, App, AppError, Caller, Who};

/// The tools `caller` may call: what MCP's `tools/list` shows, by the current policy.
pub fn visible(app: &App, caller: &Caller) -> Vec<ToolSpec> {
    ToolName::ALL
        .into_iter()
        .map(ToolName::spec)
        .filter(|spec| app.allows(caller, Op::Tool(spec.name)))
        .collect()
}

/// The members of a tool's arguments an audit line may carry, and how.
enum Kept {
    /// Copied as is (paths, ids, numbers, modes).
    AsIs,
    /// Only its length in bytes, as `<name>_bytes` (contents, input, replacement text).
    Length,
    /// Only its first word and length (a command line can hold a secret: SPEC §11).
    FirstWord,
    /// How many there are, as `<name>_count`.
    Count,
}

/// The argument names an audit line keeps; anything else is left out.
const KEPT: &[(&str, Kept)] = &[
    ("path", Kept::AsIs),
    ("file_path", Kept::AsIs),
    ("source", Kept::AsIs),
    ("destination", Kept::AsIs),
    ("cwd", Kept::AsIs),
    ("session", Kept::AsIs),
    ("sessionId", Kept::AsIs),
    ("mode", Kept::AsIs),
    ("offset", Kept::AsIs),
    ("length", Kept::AsIs),
    ("depth", Kept::AsIs),
    ("timeout_ms", Kept::AsIs),
    ("expected_replacements", Kept::AsIs),
    ("searchType", Kept::AsIs),
    ("paths", Kept::Count),
    ("content", Kept::Length),
    ("input", Kept::Length),
    ("old_string", Kept::Length),
    ("new_string", Kept::Length),
    ("pattern", Kept::Length),
    ("command", Kept::FirstWord),
];

/// What an audit line says about a call's arguments: the members of `KEPT`, each as its rule
/// says. A path is a path (it names what was touched); a string that is contents becomes a length.
pub fn arguments_meta(args: &Map<String, Value>) -> Meta {
    let mut meta = Meta::new();
    for (name, kept) in KEPT {
        let Some(value) = args.get(*name) else {
            continue;
        };
        match (kept, value) {
            (Kept::AsIs, Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
                meta.insert((*name).to_owned(), value.clone());
            }
            (Kept::Length, Value::String(s)) => {
                meta.insert(format!("{name}_bytes"), s.len().into());
            }
            (Kept::FirstWord, Value::String(s)) => {
                // The one meaning every line about a command shares (the outcome's too).
                meta.insert(format!("{name}_first_word"), first_word(s).into());
                meta.insert(format!("{name}_bytes"), s.len().into());
            }
            (Kept::Count, Value::Array(items)) => {
                meta.insert(format!("{name}_count"), items.len().into());
            }
            _ => {}
        }
    }
    meta
}

/// The arguments as an object, with `machine` taken out.
fn split_machine(args: Value) -> Result<(Option<String>, Map<String, Value>), AppError> {
    let mut args = match args {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            return Err(AppError::BadRequest(
                "the arguments must be a JSON object".into(),
            ))
        }
    };
    let machine = match args.remove("machine") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m),
        Some(_) => return Err(AppError::BadRequest("machine: expected a string".into())),
    };
    Ok((machine, args))
}

/// A call of one tool with its arguments, without `machine` ([`App::run`]; see the module docs).
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool.
    pub name: ToolName,
    /// Its arguments, decoded strictly by the tool on the machine that runs it.
    pub args: Map<String, Value>,
}

impl Operation for ToolCall {
    type Output = Value;

    fn op(&self) -> Op {
        Op::Tool(self.name)
    }

    /// The tool decodes its arguments itself, strictly, on the machine that runs it.
    fn validate(&self, _: &App) -> Result<(), AppError> {
        Ok(())
    }

    fn relay(&self) -> Result<RelayKind, AppError> {
        Ok(RelayKind::Tool {
            tool: self.name.as_str().to_owned(),
            args: wire::json(&Value::Object(self.args.clone()))?,
        })
    }

    /// A session's call may wait for its process as long as the tool's own limit allows.
    fn works(&self) -> Option<Duration> {
        let timeout_ms = self.args.get("timeout_ms").and_then(Value::as_u64);
        Some(SessionLimits::default().call_time(self.name, timeout_ms))
    }

    /// The member's answer, masked again here.
    fn answer(&self, app: &App, _: &Member, ok: RelayOk) -> Result<Value, AppError> {
        let RelayOk::Tool(answer) = ok else {
            return Err(AppError::MemberUnreadable);
        };
        let mut answer = wire::object(&answer).ok_or(AppError::MemberUnreadable)?;
        app.mask_value(&mut answer);
        Ok(answer)
    }

    fn reply(out: Value) -> Result<RelayOk, AppError> {
        Ok(RelayOk::Tool(wire::json(&out)?))
    }

    /// A tool that changes something: `tool.<name>` with the arguments' metadata. A read's line
    /// carries what it touched, so this machine writes it after the tool ran.
    fn record(&self, app: &App, caller: &Caller, _: &Value) -> Option<AuditRecord> {
        (!self.name.spec().read_only)
            .then(|| app.tool_record(caller, self.name, arguments_meta(&self.args)))
    }

    async fn local(self, app: &App, caller: &Caller) -> Result<Value, AppError> {
        app.local_tool(caller, self.name, self.args).await
    }

    /// The tool's tier holds for the whole call (SPEC §3.2): lost, the call ends — its command
    /// killed, a relayed call dropped on the member too — and answers why.
    fn holds(&self) -> Option<Tier> {
        Some(self.name.spec().tier)
    }
}

impl App {
    /// Calls `tool` with `args` for `caller` (see the module docs for the steps).
    pub async fn call_tool(
        &self,
        caller: &Caller,
        tool: &str,
        args: Value,
    ) -> Result<Value, AppError> {
        let Some(name) = ToolName::parse(tool) else {
            return Err(AppError::NoSuchTool);
        };
        // The tier first, before the machine or the arguments are read (the runner asks again).
        self.authorize(caller, Op::Tool(name))?;
        let (machine, args) = split_machine(args)?;
        if machine.is_some() && matches!(caller.who(), Who::Relay { .. }) {
            // A member serves its own tools only; it never relays further.
            return Err(AppError::BadRequest("machine: not on a member".into()));
        }
        let machine = machine.as_deref().unwrap_or("local");
        self.run(caller, machine, ToolCall { name, args }).await
    }

    /// Steps 4 and 5 on this machine.
    async fn local_tool(
        &self,
        caller: &Caller,
        name: ToolName,
        args: Map<String, Value>,
    ) -> Result<Value, AppError> {
        let spec = name.spec();
        let meta = arguments_meta(&args);
        if !spec.read_only {
            // Refused before it happened (outside the workspaces, not writable; no such session
            // of this device): a denial where §7 says so, and no tool line (SPEC §7).
            if let Err(e) = self
                .tools
                .toolbox
                .check_write(&caller.owner(), name, &args)
                .await
            {
                return Err(self.tool_refused(caller, name, e));
            }
            self.audit(self.tool_record(caller, name, meta.clone()))
                .await?;
        }
        let done = self
            .tools
            .toolbox
            .run(&caller.owner(), name, Value::Object(args))
            .await;
        let Done {
            mut answer,
            meta: outcome,
        } = match done {
            Ok(done) => done,
            Err(e) => return Err(self.tool_refused(caller, name, e)),
        };
        if spec.read_only {
            let mut all = meta;
            all.extend(outcome);
            self.audit(self.tool_record(caller, name, all)).await?;
        } else if !outcome.is_empty() {
            // What the tool reports after it ran; the call is done, so a line that cannot be
            // written is logged, not answered.
            let rec = self
                .tool_record(caller, name, outcome)
                .with_detail("phase", "done");
            if let Err(e) = self.audit(rec).await {
                tracing::error!(error = %e, tool = name.as_str(), "cannot audit a tool's outcome");
            }
        }
        self.mask_value(&mut answer);
        Ok(answer)
    }

    /// The `tool.<name>` line of `caller` with `meta` as its detail.
    fn tool_record(&self, caller: &Caller, name: ToolName, meta: Meta) -> AuditRecord {
        let mut rec = caller.record(self, AuditEventKind::Tool(name));
        for (k, v) in meta {
            rec = rec.with_detail(k, v);
        }
        rec
    }

    /// A tool's refusal as the caller gets it, audited where SPEC §7 says so.
    fn tool_refused(&self, caller: &Caller, name: ToolName, e: ToolError) -> AppError {
        let (event, reason) = match &e {
            ToolError::OutsideWorkspace | ToolError::PathNotAllowed => {
                (AuditEventKind::SecurityDenied, e.to_string())
            }
            ToolError::ResourceLimit(cap) => (AuditEventKind::ResourceDenied, (*cap).to_owned()),
            ToolError::Internal(detail) => {
                tracing::error!(tool = name.as_str(), %detail, "tool failed inside the bridge");
                return AppError::Tool(e);
            }
            _ => return AppError::Tool(e),
        };
        let mut rec = AuditRecord::new(event, self.machine_name())
            .with_request_id(caller.request_id().to_owned())
            .with_detail("tool", name.as_str());
        if let Some(device) = caller.audit_name() {
            rec = rec.with_device(device);
        }
        self.deny(caller.source(), &reason, rec);
        AppError::Tool(e)
    }

    /// Masks every string of `value` in place with this machine's masker.
    fn mask_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => self.mask_in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.mask_value(v)),
            _ => {}
        }
    }

    /// Ends every search and session (the bridge stops).
    pub async fn stop_tools(&self) {
        self.tools.toolbox.shutdown().await;
    }
}

/// A member's tool refusal as this lead answers it: its own fixed strings where it has one, the
/// member's message (a 400's field name) otherwise.
pub(super) fn relayed_refusal(status: u16, error: String) -> AppError {
    const FIXED: [ToolError; 9] = [
        ToolError::OutsideWorkspace,
        ToolError::PathNotAllowed,
        ToolError::NoSuchFile,
        ToolError::AlreadyExists,
        ToolError::NoSuchSession,
        ToolError::NoSuchSearch,
        ToolError::Conflict,
        ToolError::ResourceLimit("member"),
        ToolError::Internal(String::new()),
    ];
    if error == AppError::NoSuchTool.to_string() {
        return AppError::NoSuchTool;
    }
    if let Some(fixed) = FIXED.into_iter().find(|f| f.to_string() == error) {
        return AppError::Tool(fixed);
    }
    match status {
        400 => AppError::Tool(ToolError::BadArgument(error.chars().take(300).collect())),
        _ => AppError::MemberUnreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_metadata_never_carries_contents() {
        let args: Map<String, Value> = serde_json::from_str(
            r#"{"path":"/h/a.txt","content":"password=hunter2","old_string":"x","new_string":"yy",
                "command":"TOKEN=abc deploy --now","input":"secret\n","paths":["a","b"],
                "offset":3,"risk":"high","pattern":"hunter2"}"#,
        )
        .unwrap();
        let meta = arguments_meta(&args);
        let text = Value::Object(meta.clone()).to_string();
        for leaked in ["hunter2", "abc", "secret", "deploy", "high", "yy"] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
        assert_eq!(meta["path"], "/h/a.txt");
        assert_eq!(meta["content_bytes"], 16);
        assert_eq!(meta["command_first_word"], "TOKEN=");
        assert_eq!(meta["command_bytes"], 22);
        assert_eq!(meta["paths_count"], 2);
        assert_eq!(meta["offset"], 3);
        assert!(!meta.contains_key("risk"));
    }

    #[test]
    fn machine_is_taken_out_and_checked() {
        let (m, rest) = split_machine(serde_json::json!({"machine":"box","path":"a"})).unwrap();
        assert_eq!(m.as_deref(), Some("box"));
        assert!(!rest.contains_key("machine"));
        assert!(split_machine(serde_json::json!({"machine": 3})).is_err());
        assert!(split_machine(serde_json::json!([1])).is_err());
        assert_eq!(split_machine(Value::Null).unwrap().1.len(), 0);
    }

    #[test]
    fn a_members_refusal_keeps_only_known_strings() {
        assert!(matches!(
            relayed_refusal(409, "conflict".into()),
            AppError::Tool(ToolError::Conflict)
        ));
        assert!(matches!(
            relayed_refusal(500, "rm -rf said: EPERM /etc".into()),
            AppError::MemberUnreadable
        ));
        assert_eq!(
            relayed_refusal(400, "offset: expected a number".into()).to_string(),
            "offset: expected a number"
        );
    }
}
