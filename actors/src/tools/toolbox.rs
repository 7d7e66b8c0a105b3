//! The toolbox: what the tools of one bridge share — its workspaces, its running searches and its
//! process sessions — and the one dispatch from a registry name and JSON arguments to a tool.
//!
//! The application layer owns authorization, audit and masking; the toolbox decodes the arguments
//! strictly (an unknown field is a `BadArgument` naming it, so `{"risk":"high"}` is refused, never
//! ignored), resolves every path through the [`Workspaces`], runs the tool (blocking file work on
//! tokio's blocking pool) and answers a JSON object with the tool's audit [`Meta`](super::Meta).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::files;
use super::git_diff;
use super::search::{self, SearchLimits, Searches};
use super::sessions::{self, Launcher, SessionLimits, Sessions};
use super::workspace::Workspaces;
use super::{exec, processes, Done, ToolError, ToolName};

/// What a bridge's toolbox is made of.
#[derive(Debug, Clone)]
pub struct ToolboxConfig {
    /// The folders file tools may touch, and the paths none may; `None` when there is no
    /// workspace (no home folder): every path is then outside.
    pub workspaces: Option<Workspaces>,
    /// Search bounds.
    pub search: SearchLimits,
    /// Session and exec bounds.
    pub sessions: SessionLimits,
    /// How a process is started under the guard that ties it to the bridge's life.
    pub launcher: Launcher,
}

/// The tools' shared state; cheap to clone.
#[derive(Clone)]
pub struct Toolbox {
    workspaces: Option<Arc<Workspaces>>,
    searches: Searches,
    sessions: Sessions,
}

/// Decodes a tool's arguments strictly.
fn decode<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    files::args(args)
}

/// A typed answer as the JSON object the doors send.
fn encode<T: Serialize>(done: Done<T>) -> Result<Done<Value>, ToolError> {
    let answer = serde_json::to_value(&done.answer)
        .map_err(|e| ToolError::Internal(format!("encoding an answer: {e}")))?;
    Ok(Done {
        answer,
        meta: done.meta,
    })
}

impl Toolbox {
    /// A toolbox over `config`.
    pub fn new(config: ToolboxConfig) -> Toolbox {
        Toolbox {
            workspaces: config.workspaces.map(Arc::new),
            searches: Searches::new(config.search),
            sessions: Sessions::new(config.sessions, config.launcher),
        }
    }

    /// The workspaces file tools stay in (`None`: there is none), for the application's own
    /// file operations that follow the same rules (uploads, SPEC §11).
    pub fn workspaces(&self) -> Option<Arc<Workspaces>> {
        self.workspaces.clone()
    }

    /// The workspaces, or `outside the workspace` for every path when there are none.
    fn ws(&self) -> Result<Arc<Workspaces>, ToolError> {
        self.workspaces.clone().ok_or(ToolError::OutsideWorkspace)
    }

    /// Runs `tool` for `owner` (the device whose sessions and searches these are).
    pub async fn run(
        &self,
        owner: &str,
        tool: ToolName,
        args: Value,
    ) -> Result<Done<Value>, ToolError> {
        use ToolName::*;
        match tool {
            ReadFile => self.blocking(args, files::read_file).await,
            ReadMultipleFiles => self.blocking(args, files::read_multiple_files).await,
            ListDirectory => self.blocking(args, files::list_directory).await,
            GetFileInfo => self.blocking(args, files::get_file_info).await,
            EditBlock => self.blocking(args, files::edit_block).await,
            WriteFile => self.blocking(args, files::write_file).await,
            CreateDirectory => self.blocking(args, files::create_directory).await,
            MoveFile => self.blocking(args, files::move_file).await,
            StartSearch => {
                let a: search::StartSearchArgs = decode(args)?;
                let ws = self.ws()?;
                let root = ws.resolve(&a.path)?;
                encode(self.searches.start(owner, root, allowed(ws), a).await?)
            }
            GetMoreSearchResults => encode(self.searches.more(owner, decode(args)?)?),
            StopSearch => encode(self.searches.stop(owner, decode(args)?)?),
            GitDiff => {
                let a: git_diff::GitDiffArgs = decode(args)?;
                let dir = self.cwd(a.path.as_deref())?;
                encode(git_diff::git_diff(dir, allowed(self.ws()?), a).await?)
            }
            ListProcesses => {
                let a = decode(args)?;
                encode(
                    tokio::task::spawn_blocking(move || processes::list_processes(a))
                        .await
                        .map_err(|e| ToolError::Internal(format!("list_processes: {e}")))??,
                )
            }
            ListSessions => {
                let _: Empty = decode(args)?;
                encode(self.sessions.list(owner))
            }
            ReadProcessOutput => encode(self.sessions.read_output(owner, decode(args)?)?),
            ExecCommand => {
                let a: exec::ExecCommandArgs = decode(args)?;
                let cwd = self.cwd(a.cwd.as_deref())?;
                encode(self.sessions.exec(owner, cwd, a).await?)
            }
            StartProcess => {
                let a: sessions::StartProcessArgs = decode(args)?;
                let cwd = self.cwd(None)?;
                encode(self.sessions.start_process(owner, cwd, a).await?)
            }
            InteractWithProcess => encode(self.sessions.interact(owner, decode(args)?).await?),
            KillProcess => encode(self.sessions.kill(owner, decode(args)?, false).await?),
            ForceTerminate => encode(self.sessions.kill(owner, decode(args)?, true).await?),
        }
    }

    /// Kills every process session of `owner` (see [`Sessions::end_owner`]); the sessions ended,
    /// each with its command's first word.
    pub async fn end_owner(
        &self,
        owner: &str,
        refuse_for: std::time::Duration,
    ) -> Vec<(String, String)> {
        self.sessions.end_owner(owner, refuse_for).await
    }

    /// Ends every search and kills every session (the bridge stops).
    pub async fn shutdown(&self) {
        self.searches.stop_all();
        self.sessions.shutdown().await;
    }

    /// The checks a write tool makes before it touches anything, run on their own for `owner`
    /// (the device whose sessions these are), in the order the tool runs them: a file write's
    /// arguments decoded as strictly as the tool decodes them, then its paths
    /// ([`files::check_write`]), a session tool's session ([`Sessions::check`]), a new
    /// process's arguments, folder and caps ([`Sessions::admits_start`],
    /// [`Sessions::admits_exec`]). The application runs them before it writes the tool's audit
    /// line, so a write refused by them leaves no line. Other tools pass.
    pub async fn check_write(
        &self,
        owner: &str,
        tool: ToolName,
        args: &Map<String, Value>,
    ) -> Result<(), ToolError> {
        match tool {
            ToolName::InteractWithProcess | ToolName::KillProcess | ToolName::ForceTerminate => {
                return self
                    .sessions
                    .check(owner, tool, &Value::Object(args.clone()));
            }
            ToolName::StartProcess => {
                let a: sessions::StartProcessArgs = decode(Value::Object(args.clone()))?;
                self.cwd(None)?;
                return self.sessions.admits_start(owner, &a);
            }
            ToolName::ExecCommand => {
                let a: exec::ExecCommandArgs = decode(Value::Object(args.clone()))?;
                self.cwd(a.cwd.as_deref())?;
                return self.sessions.admits_exec(owner, &a);
            }
            _ => {}
        }
        // The arguments as the tool will read them: one that does not read is refused before
        // the line, as the tool would refuse it before touching anything.
        let strict = || Value::Object(args.clone());
        match tool {
            ToolName::WriteFile => drop(decode::<files::WriteFileArgs>(strict())?),
            ToolName::EditBlock => drop(decode::<files::EditBlockArgs>(strict())?),
            ToolName::CreateDirectory => drop(decode::<files::CreateDirectoryArgs>(strict())?),
            ToolName::MoveFile => drop(decode::<files::MoveFileArgs>(strict())?),
            _ => return Ok(()),
        }
        let ws = self.ws()?;
        // Only the paths cross to the blocking thread (a write's content can be 24 MiB).
        let paths: Map<String, Value> = ["path", "file_path", "source", "destination"]
            .into_iter()
            .filter_map(|k| args.get(k).map(|v| (k.to_owned(), v.clone())))
            .collect();
        tokio::task::spawn_blocking(move || files::check_write(&ws, tool, &Value::Object(paths)))
            .await
            .map_err(|e| ToolError::Internal(format!("a file check stopped: {e}")))?
    }

    /// Runs a file tool on the blocking pool.
    async fn blocking<A, T>(
        &self,
        args: Value,
        tool: fn(&Workspaces, A) -> Result<Done<T>, ToolError>,
    ) -> Result<Done<Value>, ToolError>
    where
        A: DeserializeOwned + Send + 'static,
        T: Serialize + Send + 'static,
    {
        let a: A = decode(args)?;
        let ws = self.ws()?;
        let done = tokio::task::spawn_blocking(move || tool(&ws, a))
            .await
            .map_err(|e| ToolError::Internal(format!("a file tool stopped: {e}")))??;
        encode(done)
    }

    /// The folder a process or diff runs in: `path` resolved inside a workspace, or the first
    /// workspace.
    fn cwd(&self, path: Option<&str>) -> Result<PathBuf, ToolError> {
        let ws = self.ws()?;
        match path {
            Some(p) => ws.resolve(p),
            None => ws
                .roots()
                .first()
                .cloned()
                .ok_or_else(|| ToolError::Internal("no workspace".into())),
        }
    }
}

/// The walker's filter: an entry a tool may show.
fn allowed(ws: Arc<Workspaces>) -> Arc<dyn Fn(&Path) -> bool + Send + Sync> {
    Arc::new(move |p: &Path| ws.allows(p))
}

/// The arguments of a tool that takes none (besides `machine`, which the caller took out).
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// The JSON schema of `tool`'s arguments as MCP's `tools/list` shows it, with the optional
/// `machine` every tool takes.
pub fn input_schema(tool: ToolName) -> Map<String, Value> {
    use ToolName::*;
    let schema = match tool {
        ReadFile => schemars::schema_for!(files::ReadFileArgs),
        ReadMultipleFiles => schemars::schema_for!(files::ReadMultipleFilesArgs),
        ListDirectory => schemars::schema_for!(files::ListDirectoryArgs),
        GetFileInfo => schemars::schema_for!(files::GetFileInfoArgs),
        EditBlock => schemars::schema_for!(files::EditBlockArgs),
        WriteFile => schemars::schema_for!(files::WriteFileArgs),
        CreateDirectory => schemars::schema_for!(files::CreateDirectoryArgs),
        MoveFile => schemars::schema_for!(files::MoveFileArgs),
        StartSearch => schemars::schema_for!(search::StartSearchArgs),
        GetMoreSearchResults => schemars::schema_for!(search::GetMoreSearchResultsArgs),
        StopSearch => schemars::schema_for!(search::StopSearchArgs),
        GitDiff => schemars::schema_for!(git_diff::GitDiffArgs),
        ListProcesses => schemars::schema_for!(processes::ListProcessesArgs),
        ListSessions => schemars::schema_for!(Empty),
        ReadProcessOutput => schemars::schema_for!(sessions::ReadProcessOutputArgs),
        ExecCommand => schemars::schema_for!(exec::ExecCommandArgs),
        StartProcess => schemars::schema_for!(sessions::StartProcessArgs),
        InteractWithProcess => schemars::schema_for!(sessions::InteractWithProcessArgs),
        KillProcess | ForceTerminate => schemars::schema_for!(sessions::KillProcessArgs),
    };
    let mut map = match schema.to_value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map.insert("type".into(), "object".into());
    let properties = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(props) = properties {
        let mut machine = Map::new();
        machine.insert("type".into(), "string".into());
        machine.insert(
            "description".into(),
            "The crew machine to run on (a member's name); this machine when absent.".into(),
        );
        props.insert("machine".into(), Value::Object(machine));
    }
    map
}
