//! A reference durable agent for Collie: a tiny "ops bot" that speaks the durable wire, version 1
//! (`docs/DURABLE.md`), on either transport. It is written to be read and copied: one file, the
//! wire's JSON as plain serde structs, the HTTP as a handful of `match` arms.
//!
//! - `--socket PATH` serves on a private unix socket: the folder must be the user's and 0700
//!   (created so when missing, refused otherwise), the socket is made 0600. There is no token:
//!   the file modes are the only gate, and they let in every process of this user, including the
//!   tools this agent runs. `--refuse-descendants` is the agent's own defence against those: a
//!   write whose caller is this process or any process it started is refused with
//!   403 `caller-refused` (reads stay open).
//! - `--listen ADDR --cert PEM --key PEM --token-env VAR` serves HTTPS: every request must carry
//!   `Authorization: Bearer <token>` with the token of `$VAR` (or of `$VAR_NEXT` while a rotation
//!   is under way), compared in constant time, else 401.
//!
//! What the bot does: the starter `deploy` opens a conversation that asks "Deploy to
//! production?"; answering records the choice (and, with `--deploy-command`, runs that command
//! as the bot's tool); `send` echoes the length of the text and opens a question for
//! `ask <title>`; `abort`, `action` (`retry`), `rename`, `close` and `reopen` do what they say.
//! Everything is kept in memory.
//!
//! It prints `listening on <path-or-address>` on stdout once ready, logs to stderr, and exits
//! cleanly on SIGTERM or SIGINT (removing its socket).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, SignalKind};

/// Most bytes of a request body read (a `send` of 64 KiB, JSON-escaped, fits); more is 413.
const MAX_BODY: usize = 512 * 1024;
/// Longest text Collie sends, and longest title (the wire's `MAX_SEND` and `MAX_RENAME`).
const MAX_SEND: usize = 64 * 1024;
const MAX_RENAME: usize = 256;
/// Shortest bearer token accepted (`openssl rand -hex 32` makes 64 characters).
const MIN_TOKEN: usize = 32;
/// How many recent `Collie-Request` ids are remembered to answer a repeated write again.
const RECENT_REQUESTS: usize = 256;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A reference durable agent for Collie (see docs/DURABLE.md)"
)]
#[command(group = clap::ArgGroup::new("transport").required(true).args(["socket", "listen"]))]
struct Args {
    /// Serve on a private unix socket at this path (its folder: yours, mode 0700).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Serve HTTPS on this address (with --cert, --key and --token-env).
    #[arg(long, requires_all = ["cert", "key", "token_env"])]
    listen: Option<SocketAddr>,
    /// The certificate chain, PEM.
    #[arg(long)]
    cert: Option<PathBuf>,
    /// The private key, PEM.
    #[arg(long)]
    key: Option<PathBuf>,
    /// The environment variable holding the bearer token (`<VAR>_NEXT` is accepted too).
    #[arg(long)]
    token_env: Option<String>,
    /// Start with this many idle conversations of a few items each.
    #[arg(long, default_value_t = 0)]
    conversations: usize,
    /// Start with one conversation that asks "Deploy to production?".
    #[arg(long)]
    ask: bool,
    /// Refuse writes from this process and its descendants (Linux; socket transport).
    #[arg(long)]
    refuse_descendants: bool,
    /// A shell command the bot runs, as its tool, when a deploy is approved.
    #[arg(long)]
    deploy_command: Option<String>,
}

// ---- The wire's JSON (docs/DURABLE.md, "The state") --------------------------------------------

#[derive(Serialize, Clone, PartialEq, Debug)]
struct State<'a> {
    conversations: &'a [Conversation],
    starters: Vec<Button>,
}

#[derive(Serialize, Clone, PartialEq, Debug)]
struct Conversation {
    id: String,
    title: String,
    /// `working`, `idle` or `closed`.
    state: &'static str,
    /// Unix milliseconds.
    updated: u64,
    items: Vec<Item>,
    questions: Vec<Question>,
    actions: Vec<Button>,
}

#[derive(Serialize, Clone, PartialEq, Debug, Default)]
struct Item {
    id: String,
    /// `text`, `markdown`, `code`, `diff`, `link` or `tool`.
    kind: &'static str,
    /// `user`, `agent` or `tool`.
    role: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    text: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    output: String,
    at: u64,
}

#[derive(Serialize, Clone, PartialEq, Debug)]
struct Question {
    id: String,
    title: String,
    reason: String,
    items: Vec<Item>,
    options: Vec<Button>,
    /// Not on the wire: what answering it does.
    #[serde(skip)]
    deploy: bool,
}

#[derive(Serialize, Clone, PartialEq, Debug)]
struct Button {
    id: String,
    label: String,
}

fn button(id: &str, label: &str) -> Button {
    Button {
        id: id.to_owned(),
        label: label.to_owned(),
    }
}

/// A write, as Collie sends it: the verb comes from the path, the fields from the body.
#[derive(Deserialize, Debug)]
#[serde(tag = "verb", rename_all = "lowercase")]
enum Write {
    Answer { question: String, option: String },
    Send { text: String },
    Abort,
    Action { action: String },
    Rename { title: String },
    Close,
    Reopen,
    Starter { starter: String },
}

// ---- The bot: plain state, no I/O --------------------------------------------------------------

/// A refusal: the status and a short message for the body's `error`.
type Refusal = (StatusCode, String);

fn refuse(status: StatusCode, message: &str) -> Refusal {
    (status, message.to_owned())
}

/// Something a write asks the server to do besides answering.
enum Effect {
    None,
    /// Run `--deploy-command` for this conversation.
    Deploy(String),
}

#[derive(Default)]
struct Bot {
    /// Bumped on every change; the ETag is this number, so it changes exactly when the state does.
    version: u64,
    next_id: u64,
    conversations: Vec<Conversation>,
    /// `(Collie-Request, status, body)` of recent writes, newest last.
    recent: VecDeque<(String, StatusCode, Bytes)>,
}

impl Bot {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    fn item(&mut self, role: &'static str, text: &str, now: u64) -> Item {
        Item {
            id: self.id("i"),
            kind: "text",
            role,
            text: text.to_owned(),
            at: now,
            ..Item::default()
        }
    }

    fn conversation(&mut self, title: &str, now: u64) -> Conversation {
        Conversation {
            id: self.id("c"),
            title: title.to_owned(),
            state: "idle",
            updated: now,
            items: Vec::new(),
            questions: Vec::new(),
            actions: vec![button("retry", "Retry")],
        }
    }

    /// The `deploy` starter: a conversation that asks before deploying.
    fn start_deploy(&mut self, now: u64) -> String {
        let mut c = self.conversation("Deploy", now);
        let said = self.item("agent", "Starting a deploy of main to production.", now);
        c.items.push(said);
        let mut command = self.item("agent", "deploy --env production", now);
        command.kind = "code";
        c.questions.push(Question {
            id: self.id("q"),
            title: "Deploy to production?".to_owned(),
            reason: "Commit 4f2a9c1 passed CI.\nThe web servers restart one by one.".to_owned(),
            items: vec![command],
            options: vec![button("yes", "Deploy"), button("no", "Cancel")],
            deploy: true,
        });
        let id = c.id.clone();
        self.conversations.push(c);
        id
    }

    /// An idle conversation showing each kind of item (for `--conversations`).
    fn sample(&mut self, n: usize, now: u64) {
        let mut c = self.conversation(&format!("Nightly job {n}"), now);
        let asked = self.item("user", "How did the nightly job go?", now);
        let mut answer = self.item("agent", "**Green**: 412 tests passed.", now);
        answer.kind = "markdown";
        let mut tool = self.item("tool", "", now);
        (tool.kind, tool.summary) = ("tool", "cargo test --workspace".to_owned());
        tool.output = "test result: ok. 412 passed; 0 failed".to_owned();
        let mut link = self.item("agent", "", now);
        (link.kind, link.url) = ("link", "https://example.com/ci/nightly".to_owned());
        c.items = vec![asked, answer, tool, link];
        self.conversations.push(c);
    }

    /// Applies one write. `Ok` carries the answer's body; the version is bumped only when the
    /// state changed.
    fn apply(&mut self, id: &str, write: Write, now: u64) -> Result<(Answer, Effect), Refusal> {
        if let Write::Starter { starter } = &write {
            if starter != "deploy" {
                return Err(refuse(StatusCode::NOT_FOUND, "no such starter"));
            }
            let id = self.start_deploy(now);
            self.version += 1;
            let made = Answer {
                conversation: Some(id),
                ..Answer::default()
            };
            return Ok((made, Effect::None));
        }
        let Some(at) = self.conversations.iter().position(|c| c.id == id) else {
            return Err(refuse(StatusCode::NOT_FOUND, "no such conversation"));
        };
        let before = self.conversations[at].clone();
        let mut c = before.clone();
        let effect = self.write(&mut c, write, now)?;
        if c != before {
            c.updated = now;
            self.conversations[at] = c;
            self.version += 1;
        }
        Ok((Answer::default(), effect))
    }

    fn write(&mut self, c: &mut Conversation, write: Write, now: u64) -> Result<Effect, Refusal> {
        let closed = c.state == "closed";
        let conflict = |m: &str| Err(refuse(StatusCode::CONFLICT, m));
        match write {
            Write::Answer { .. } | Write::Send { .. } | Write::Abort | Write::Action { .. }
                if closed =>
            {
                return conflict("the conversation is closed");
            }
            Write::Answer { question, option } => {
                let Some(q) = c.questions.iter().position(|q| q.id == question) else {
                    return conflict("the question is already answered");
                };
                let Some(chosen) = c.questions[q].options.iter().find(|o| o.id == option) else {
                    return Err(refuse(StatusCode::BAD_REQUEST, "no such option"));
                };
                let (label, deploy) = (chosen.label.clone(), c.questions[q].deploy);
                c.questions.remove(q);
                let user = self.item("user", &label, now);
                c.items.push(user);
                let (reply, effect) = match (deploy, option.as_str()) {
                    (true, "yes") => {
                        c.state = "working";
                        ("Deploying…".to_owned(), Effect::Deploy(c.id.clone()))
                    }
                    (true, _) => ("Cancelled".to_owned(), Effect::None),
                    (false, _) => (format!("You said: {label}"), Effect::None),
                };
                let agent = self.item("agent", &reply, now);
                c.items.push(agent);
                return Ok(effect);
            }
            Write::Send { text } => {
                if text.is_empty() || text.len() > MAX_SEND {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        "text must be 1 to 65536 bytes",
                    ));
                }
                let user = self.item("user", &text, now);
                // The reply never echoes the text itself: only its length, as plain text.
                let reply = self.item("agent", &format!("Got {} bytes.", text.len()), now);
                c.items.extend([user, reply]);
                if let Some(title) = text.strip_prefix("ask ") {
                    let id = self.id("q");
                    c.questions.push(Question {
                        id,
                        title: title.to_owned(),
                        reason: "You asked me to ask.".to_owned(),
                        items: Vec::new(),
                        options: vec![button("yes", "Yes"), button("no", "No")],
                        deploy: false,
                    });
                }
            }
            Write::Abort => {
                c.state = "idle";
                let stopped = self.item("agent", "Stopped", now);
                c.items.push(stopped);
            }
            Write::Action { action } => {
                if !c.actions.iter().any(|a| a.id == action) {
                    return Err(refuse(StatusCode::NOT_FOUND, "no such action"));
                }
                let retried = self.item("agent", "Retrying the last step.", now);
                c.items.push(retried);
            }
            Write::Rename { title } => {
                if title.trim().is_empty() || title.len() > MAX_RENAME {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        "title must be 1 to 256 bytes",
                    ));
                }
                c.title = title;
            }
            Write::Close => c.state = "closed",
            Write::Reopen if closed => c.state = "idle",
            Write::Reopen => {}
            Write::Starter { .. } => {}
        }
        Ok(Effect::None)
    }

    /// A deploy run by `--deploy-command` ended.
    fn deployed(&mut self, id: &str, outcome: &str, now: u64) {
        let said = self.item("agent", outcome, now);
        if let Some(c) = self.conversations.iter_mut().find(|c| c.id == id) {
            c.items.push(said);
            c.state = "idle";
            c.updated = now;
            self.version += 1;
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

// ---- Who is asking ------------------------------------------------------------------------------

/// The caller of one connection.
#[derive(Clone, Copy, Debug)]
enum Caller {
    /// A process of this user on the socket; its pid when the kernel said.
    Socket { pid: Option<i32> },
    /// A client over HTTPS (authenticated per request by the bearer token).
    Https,
}

/// True when `pid` is this process or one of its descendants — or when that cannot be told
/// (the caller already exited, `/proc` unreadable): the seed's "indistinguishable" callers are
/// refused too. A pid can be reused once its process exits; a tool that exits and whose pid is
/// taken by an unrelated process between its `connect` and this walk is the check's blind spot.
fn descends_from_me(pid: Option<i32>) -> bool {
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    let Some(mut pid) = pid else { return true };
    // Bounded: a parent chain is never longer than the number of processes.
    for _ in 0..65_536 {
        if pid == me {
            return true;
        }
        if pid <= 1 {
            return false;
        }
        match parent_of(pid) {
            Some(parent) => pid = parent,
            None => return true,
        }
    }
    true
}

/// The parent pid from `/proc/<pid>/stat`: the fourth field, after the name in parentheses (a
/// name may itself hold spaces and parentheses, so the last `)` ends it).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

// ---- HTTP --------------------------------------------------------------------------------------

struct App {
    bot: Mutex<Bot>,
    /// Accepted bearer tokens (HTTPS only): `$VAR` and, while set, `$VAR_NEXT`.
    tokens: Vec<Vec<u8>>,
    refuse_descendants: bool,
    deploy_command: Option<String>,
    /// The running deploy commands (each kills its child when aborted).
    tools: Mutex<tokio::task::JoinSet<()>>,
}

impl App {
    fn tools(&self) -> MutexGuard<'_, tokio::task::JoinSet<()>> {
        self.tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bot(&self) -> MutexGuard<'_, Bot> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.bot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Constant-time comparison against every accepted token (no early exit on a match).
    fn token_ok(&self, header: Option<&HeaderValue>) -> bool {
        let Some(given) = header.and_then(|h| h.as_bytes().strip_prefix(b"Bearer ")) else {
            return false;
        };
        let mut ok = subtle::Choice::from(0);
        for token in &self.tokens {
            ok |= given.ct_eq(token);
        }
        ok.into()
    }
}

type Reply = Response<Full<Bytes>>;

/// Every answer carries `Collie-Wire: 1`; bodies are JSON (a 304 has none).
fn reply(status: StatusCode, body: Bytes) -> Reply {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert("collie-wire", HeaderValue::from_static("1"));
    if status != StatusCode::NOT_MODIFIED {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    r
}

/// The body of every answer to a write: `{}`, the conversation a starter made, or a refusal's
/// reason.
#[derive(Serialize, Default)]
struct Answer {
    #[serde(skip_serializing_if = "Option::is_none")]
    conversation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Answer {
    fn refusal(message: &str) -> Answer {
        Answer {
            error: Some(message.to_owned()),
            ..Answer::default()
        }
    }

    fn bytes(&self) -> Bytes {
        // A struct of two optional strings always serializes.
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

fn error(status: StatusCode, message: &str) -> Reply {
    reply(status, Answer::refusal(message).bytes())
}

async fn handle(app: Arc<App>, caller: Caller, req: Request<Incoming>) -> Reply {
    if let Caller::Https = caller {
        if !app.token_ok(req.headers().get(AUTHORIZATION)) {
            let mut r = error(StatusCode::UNAUTHORIZED, "token refused");
            r.headers_mut()
                .insert("www-authenticate", HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    if req.headers().get("collie-wire").map(HeaderValue::as_bytes) != Some(b"1") {
        return error(StatusCode::BAD_REQUEST, "send Collie-Wire: 1");
    }
    let path = req.uri().path().to_owned();
    let parts: Vec<&str> = path.split('/').collect();
    match (req.method(), parts.as_slice()) {
        (&Method::GET, ["", "v1", "state"]) => state(&app, &req),
        (&Method::POST, ["", "v1", "conversations", id, verb]) => {
            let (Some(id), Some(verb)) = (decode(id), decode(verb)) else {
                return error(StatusCode::BAD_REQUEST, "bad percent-encoding in the path");
            };
            const VERBS: [&str; 7] = [
                "answer", "send", "abort", "action", "rename", "close", "reopen",
            ];
            if !VERBS.contains(&verb.as_str()) {
                return error(StatusCode::NOT_FOUND, "no such verb");
            }
            write(&app, caller, req, &id, &verb).await
        }
        (&Method::POST, ["", "v1", "starters", id]) => match decode(id) {
            Some(id) => write(&app, caller, req, &id, "starter").await,
            None => error(StatusCode::BAD_REQUEST, "bad percent-encoding in the path"),
        },
        (
            _,
            ["", "v1", "state"] | ["", "v1", "conversations", _, _] | ["", "v1", "starters", _],
        ) => error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
        _ => error(StatusCode::NOT_FOUND, "no such path"),
    }
}

/// `GET /v1/state`: the whole state, or 304 when the caller's ETag is still current.
fn state(app: &App, req: &Request<Incoming>) -> Reply {
    let bot = app.bot();
    let etag = format!("\"{}\"", bot.version);
    let seen = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    let current = seen.is_some_and(|v| {
        v.split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == etag || t == "*")
    });
    let mut r = if current {
        reply(StatusCode::NOT_MODIFIED, Bytes::new())
    } else {
        let state = State {
            conversations: &bot.conversations,
            starters: vec![button("deploy", "Start a deploy")],
        };
        match serde_json::to_vec(&state) {
            Ok(body) => reply(StatusCode::OK, Bytes::from(body)),
            Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
        }
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        r.headers_mut().insert(ETAG, value);
    }
    r
}

/// One write: the caller check, the body, a repeated `Collie-Request`, then the bot.
async fn write(
    app: &Arc<App>,
    caller: Caller,
    req: Request<Incoming>,
    id: &str,
    verb: &str,
) -> Reply {
    if let Caller::Socket { pid } = caller {
        eprintln!(
            "write {verb} from pid {}",
            pid.map_or("unknown".into(), |p| p.to_string())
        );
        if app.refuse_descendants && descends_from_me(pid) {
            return error(StatusCode::FORBIDDEN, "caller-refused");
        }
    }
    let request = req
        .headers()
        .get("collie-request")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map(str::to_owned);
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "body over 512 KiB"),
    };
    // The verb comes from the path; the fields from the body (`{}` or nothing when there are none).
    let mut fields = match body.is_empty() {
        true => serde_json::Map::new(),
        false => match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(map)) => map,
            _ => return error(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
        },
    };
    fields.insert("verb".into(), Value::from(verb));
    if verb == "starter" {
        fields.insert("starter".into(), Value::from(id));
    }
    let write: Write = match serde_json::from_value(Value::Object(fields)) {
        Ok(w) => w,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("bad {verb} body: {e}")),
    };

    let (status, body, effect) = {
        let mut bot = app.bot();
        if let Some(request) = &request {
            if let Some((_, status, body)) = bot.recent.iter().find(|(r, _, _)| r == request) {
                return reply(*status, body.clone());
            }
        }
        let (status, body, effect) = match bot.apply(id, write, now_ms()) {
            Ok((answer, effect)) => (StatusCode::OK, answer, effect),
            Err((status, message)) => (status, Answer::refusal(&message), Effect::None),
        };
        let body = body.bytes();
        if let Some(request) = request {
            if bot.recent.len() == RECENT_REQUESTS {
                bot.recent.pop_front();
            }
            bot.recent.push_back((request, status, body.clone()));
        }
        (status, body, effect)
    };
    if let (Effect::Deploy(conversation), Some(command)) = (effect, &app.deploy_command) {
        let mut tools = app.tools();
        while tools.try_join_next().is_some() {}
        tools.spawn(run_deploy(Arc::clone(app), conversation, command.clone()));
    }
    reply(status, body)
}

/// Runs the deploy command as the bot's tool (a child of this process, so a descendant).
async fn run_deploy(app: Arc<App>, conversation: String, command: String) {
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await;
    let outcome = match status {
        Ok(s) => format!("Deploy finished (exit {}).", s.code().unwrap_or(-1)),
        Err(e) => format!("Deploy could not start: {e}."),
    };
    app.bot().deployed(&conversation, &outcome, now_ms());
}

/// Decodes one percent-encoded path segment (Collie encodes every byte but `A-Za-z0-9-._~`).
fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

// ---- The transports ----------------------------------------------------------------------------

/// Prepares the socket's folder and binds the socket (see the module docs for the rules).
fn bind_socket(path: &Path) -> Result<UnixListener, String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let shown = dir.display();
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create the socket folder {shown}: {e}"))?;
    }
    // lstat: a symlink in the folder's place is refused, not followed.
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{shown}: {e}"))?;
    let mode = meta.mode() & 0o777;
    if !meta.is_dir() {
        return Err(format!("the socket folder {shown} is not a directory"));
    }
    if meta.uid() != nix::unistd::getuid().as_raw() {
        return Err(format!("the socket folder {shown} is not yours"));
    }
    if mode != 0o700 {
        return Err(format!(
            "the socket folder {shown} has mode {mode:04o}; it must be 0700 (chmod 700 {shown})"
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(format!("another agent is listening on {}", path.display()));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove the stale socket: {e}"))?;
        }
        Ok(_) => return Err(format!("{} exists and is not a socket", path.display())),
        Err(_) => {}
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    // Before this chmod the socket has the umask's mode, but the 0700 folder already keeps
    // everyone else out.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot make the socket 0600: {e}"))?;
    Ok(listener)
}

/// The TLS configuration: rustls with the ring provider, HTTP/1.1 only.
fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("certificate {}: {e}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The bearer tokens: `$VAR` (required, at least 32 bytes) and `$VAR_NEXT` when set.
fn tokens(var: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut tokens = Vec::new();
    for name in [var.to_owned(), format!("{var}_NEXT")] {
        match std::env::var(&name) {
            Ok(t) if t.len() >= MIN_TOKEN => tokens.push(t.into_bytes()),
            // Never print the token itself, not even a wrong one.
            Ok(_) => return Err(format!("${name} is shorter than {MIN_TOKEN} bytes")),
            Err(_) if name == var => return Err(format!("${name} is not set")),
            Err(_) => {}
        }
    }
    Ok(tokens)
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tls(TcpListener, tokio_rustls::TlsAcceptor),
}

/// SIGTERM and SIGINT, caught from here on (before `listening on` is printed: a signal sent
/// right after that line must stop the agent cleanly, not kill it).
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

/// Serves until SIGTERM or SIGINT, then lets open requests finish (2 s at most).
async fn serve(listener: Listener, app: Arc<App>, signals: Signals) -> Result<(), String> {
    let Signals { mut term, mut int } = signals;
    let graceful = GracefulShutdown::new();
    let http = {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10));
        b
    };
    // Every connection is a task owned here: dropped (aborted) when `serve` returns.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stop = async {
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        };
        while connections.try_join_next().is_some() {}
        let app = Arc::clone(&app);
        let watcher = graceful.watcher();
        let http = http.clone();
        match &listener {
            Listener::Unix(unix, _) => {
                let stream = tokio::select! {
                    () = stop => break,
                    accepted = unix.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) => { eprintln!("accept: {e}"); continue; }
                    },
                };
                // The kernel's word on who connected (SO_PEERCRED on Linux).
                let pid = stream.peer_cred().ok().and_then(|c| c.pid());
                let caller = Caller::Socket { pid };
                let service = hyper::service::service_fn(move |req| {
                    let app = Arc::clone(&app);
                    async move { Ok::<_, Infallible>(handle(app, caller, req).await) }
                });
                let conn = http.serve_connection(TokioIo::new(stream), service);
                connections.spawn(async move {
                    let _ = watcher.watch(conn).await;
                });
            }
            Listener::Tls(tcp, acceptor) => {
                let stream = tokio::select! {
                    () = stop => break,
                    accepted = tcp.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) => { eprintln!("accept: {e}"); continue; }
                    },
                };
                let acceptor = acceptor.clone();
                connections.spawn(async move {
                    let handshake =
                        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream));
                    let Ok(Ok(tls)) = handshake.await else { return };
                    let service = hyper::service::service_fn(move |req| {
                        let app = Arc::clone(&app);
                        async move { Ok::<_, Infallible>(handle(app, Caller::Https, req).await) }
                    });
                    let _ = watcher
                        .watch(http.serve_connection(TokioIo::new(tls), service))
                        .await;
                });
            }
        }
    }
    eprintln!("stopping");
    let _ = tokio::time::timeout(Duration::from_secs(2), graceful.shutdown()).await;
    connections.abort_all();
    app.tools().abort_all();
    if let Listener::Unix(_, path) = &listener {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

async fn run(args: Args) -> Result<(), String> {
    if args.refuse_descendants && !cfg!(target_os = "linux") {
        return Err("--refuse-descendants needs Linux (/proc and SO_PEERCRED)".into());
    }
    let mut bot = Bot::default();
    let now = now_ms();
    for n in 1..=args.conversations {
        bot.sample(n, now);
    }
    if args.ask {
        bot.start_deploy(now);
    }
    bot.version = 1;
    let (listener, shown, tokens) = match (&args.socket, &args.listen) {
        (Some(path), _) => {
            let unix = bind_socket(path)?;
            (
                Listener::Unix(unix, path.clone()),
                path.display().to_string(),
                Vec::new(),
            )
        }
        (None, Some(addr)) => {
            // clap's `requires_all` makes these present.
            let (Some(cert), Some(key), Some(var)) = (&args.cert, &args.key, &args.token_env)
            else {
                return Err("--listen needs --cert, --key and --token-env".into());
            };
            let tokens = tokens(var)?;
            let acceptor = tls_acceptor(cert, key)?;
            let tcp = TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            let bound = tcp.local_addr().map_err(|e| e.to_string())?;
            (Listener::Tls(tcp, acceptor), bound.to_string(), tokens)
        }
        (None, None) => return Err("give --socket PATH or --listen ADDR".into()),
    };
    let app = Arc::new(App {
        bot: Mutex::new(bot),
        tokens,
        refuse_descendants: args.refuse_descendants,
        deploy_command: args.deploy_command,
        tools: Mutex::new(tokio::task::JoinSet::new()),
    });
    let signals = Signals {
        term: signal(SignalKind::terminate()).map_err(|e| e.to_string())?,
        int: signal(SignalKind::interrupt()).map_err(|e| e.to_string())?,
    };
    println!("listening on {shown}");
    serve(listener, app, signals).await
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("collie-durable-example: {e}");
            ExitCode::FAILURE
        }
    }
}
