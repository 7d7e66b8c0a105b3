//! One tmux control client (`tmux -C attach-session -t $<id> -f ignore-size`) for one session.
//!
//! The process is spawned with piped stdin/stdout and `kill_on_drop`; its reader task (owned by
//! the socket's manager) parses stdout with [`ControlParser`], applies `%output` straight to the
//! pane mirrors (stream order matters: a seed capture must land between the output it already
//! contains and the output after it), completes command replies in FIFO order, and forwards
//! structural notifications to the manager. When stdout ends the reader reports the client gone
//! and every pending command fails with [`TmuxError::ClientGone`].

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};

use super::control::{ControlParser, Message, Notification, Reply};
use super::TmuxError;
use crate::panes::line_reader::read_line_limited;

/// What a control client reports to, and asks of, the server state of its socket: the command to
/// start tmux with, and the pane output and first looks it reads. A trait of the client's own, so
/// the client does not name the server's state and the server owns the clients alone.
pub(super) trait Server: Send + Sync + 'static {
    /// A `tmux` command on the socket.
    fn command(&self) -> tokio::process::Command;
    /// Output of `pane` read by the client of `session`.
    fn apply_output(&self, session: u32, pane: u32, bytes: &[u8]);
    /// The cursor of `pane` as `reply` reports it.
    fn seed_cursor(&self, session: u32, pane: u32, reply: &Reply);
    /// The screen and `scrollback` lines of `pane` as `reply` captured them.
    fn seed_capture(&self, session: u32, pane: u32, scrollback: usize, reply: &Reply);
}

/// What control clients tell the manager.
#[derive(Debug)]
pub(super) enum Event {
    /// A structural notification: re-read the pane list.
    Changed(Notification),
    /// The control client of this session ended.
    ClientGone(u32),
}

/// Longest control line kept; longer lines are dropped (tmux's are far shorter).
const MAX_LINE_BYTES: usize = 1024 * 1024;

/// How long a command may wait for its reply.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// What the reader does with a reply besides handing it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hook {
    /// Nothing.
    None,
    /// The reply to the seed's `display` (cursor and size) of this pane.
    SeedCursor(u32),
    /// The reply to the seed's `capture-pane` of this pane: rebuild its screen, keeping this many
    /// lines of scrollback (the number the capture asked for).
    SeedCapture {
        /// The pane.
        pane: u32,
        /// Lines of scrollback of the rebuilt screen.
        scrollback: usize,
    },
}

struct Pending {
    hook: Hook,
    reply: oneshot::Sender<Reply>,
}

/// The writing half of a control client: commands go to its writer task, which appends the
/// reply slots and writes the line in one step, so a caller that gives up waiting (a dropped
/// future) can never leave half a line or a misaligned reply queue behind.
pub(super) struct Client {
    /// The session this client is attached to.
    pub(super) session: u32,
    lines: mpsc::UnboundedSender<(String, Vec<Pending>)>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// A spawned control client: the handle to write commands and the parts its tasks need.
pub(super) struct Spawned {
    pub(super) client: Arc<Client>,
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    lines: mpsc::UnboundedReceiver<(String, Vec<Pending>)>,
}

/// Starts a control client for `session` on the socket of `shared`.
pub(super) fn spawn(shared: &impl Server, session: u32) -> Result<Spawned, TmuxError> {
    let mut cmd = shared.command();
    cmd.arg("-C")
        .arg("attach-session")
        .arg("-t")
        .arg(format!("${session}"))
        .arg("-f")
        .arg("ignore-size")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| TmuxError::NotFound(e.to_string()))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(TmuxError::NotFound("no pipes to tmux".into()));
    };
    let (tx, rx) = mpsc::unbounded_channel();
    Ok(Spawned {
        client: Arc::new(Client { session, lines: tx }),
        child,
        stdin,
        stdout,
        lines: rx,
    })
}

impl Client {
    /// Sends the commands (joined with ` ; ` on one line, so tmux runs them without handling
    /// pane output in between) and waits for every reply. Fails with the first `%error` text.
    pub(super) async fn run(&self, commands: &[(String, Hook)]) -> Result<Vec<Reply>, TmuxError> {
        if commands.is_empty()
            || commands
                .iter()
                .any(|(c, _)| c.contains(['\n', '\r']) || c.trim().is_empty())
        {
            return Err(TmuxError::InvalidArgument("control characters"));
        }
        let mut receivers = Vec::with_capacity(commands.len());
        let mut pending = Vec::with_capacity(commands.len());
        let mut line = String::new();
        for (i, (command, hook)) in commands.iter().enumerate() {
            if i > 0 {
                line.push_str(" ; ");
            }
            line.push_str(command);
            let (tx, rx) = oneshot::channel();
            receivers.push(rx);
            pending.push(Pending {
                hook: *hook,
                reply: tx,
            });
        }
        line.push('\n');
        self.lines
            .send((line, pending))
            .map_err(|_| TmuxError::ClientGone)?;
        let mut replies = Vec::with_capacity(receivers.len());
        for rx in receivers {
            let reply = tokio::time::timeout(COMMAND_TIMEOUT, rx)
                .await
                .map_err(|_| TmuxError::CommandFailed("tmux did not answer".into()))?
                .map_err(|_| TmuxError::ClientGone)?;
            if !reply.ok {
                return Err(TmuxError::CommandFailed(reply.text()));
            }
            replies.push(reply);
        }
        Ok(replies)
    }

    /// Runs one command and returns its reply.
    pub(super) async fn run_one(&self, command: String) -> Result<Reply, TmuxError> {
        let mut replies = self.run(&[(command, Hook::None)]).await?;
        replies.pop().ok_or(TmuxError::ClientGone)
    }
}

/// Runs a control client until its stdout ends (tmux detached it, the server exited, or every
/// [`Client`] handle was dropped, which closes its stdin), then reports [`Event::ClientGone`].
pub(super) async fn run_client<S: Server>(
    spawned: Spawned,
    shared: Arc<S>,
    events: mpsc::UnboundedSender<Event>,
) {
    let Spawned {
        client,
        mut child,
        stdin,
        stdout,
        lines,
    } = spawned;
    let session = client.session;
    drop(client);
    let pending = Arc::new(Mutex::new(VecDeque::new()));
    let writer = write_commands(stdin, lines, pending.clone());
    let reader = read_stream(stdout, shared.as_ref(), session, &pending, &events);
    // The reader ends the client; the writer ends early only when the handles are gone or the
    // pipe broke, and then the reader sees the end of stdout soon after.
    tokio::pin!(reader);
    tokio::select! {
        () = &mut reader => {}
        () = writer => reader.await,
    }
    pending.lock().clear();
    let _ = child.start_kill();
    let _ = child.wait().await;
    let _ = events.send(Event::ClientGone(session));
}

/// Writes command lines, queueing their reply slots first so the reader can match replies.
async fn write_commands(
    mut stdin: ChildStdin,
    mut lines: mpsc::UnboundedReceiver<(String, Vec<Pending>)>,
    pending: Arc<Mutex<VecDeque<Pending>>>,
) {
    while let Some((line, slots)) = lines.recv().await {
        pending.lock().extend(slots);
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Parses the control stream until it ends.
async fn read_stream(
    stdout: ChildStdout,
    shared: &impl Server,
    session: u32,
    pending: &Mutex<VecDeque<Pending>>,
    events: &mpsc::UnboundedSender<Event>,
) {
    let mut reader = BufReader::new(stdout);
    let mut parser = ControlParser::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_limited(&mut reader, &mut line, MAX_LINE_BYTES).await {
            Ok(false) => break,
            Ok(true) => {}
            Err(_) => break,
        }
        if line.len() > MAX_LINE_BYTES {
            continue;
        }
        match parser.push_line(&line) {
            None => {}
            Some(Message::Reply(reply)) => {
                if !reply.from_client() {
                    continue;
                }
                let next = pending.lock().pop_front();
                if let Some(p) = next {
                    if reply.ok {
                        match p.hook {
                            Hook::None => {}
                            Hook::SeedCursor(pane) => shared.seed_cursor(session, pane, &reply),
                            Hook::SeedCapture { pane, scrollback } => {
                                shared.seed_capture(session, pane, scrollback, &reply)
                            }
                        }
                    }
                    let _ = p.reply.send(reply);
                }
            }
            Some(Message::Notification(n)) => match n {
                Notification::Output { pane, bytes }
                | Notification::ExtendedOutput { pane, bytes, .. } => {
                    shared.apply_output(session, pane, &bytes);
                }
                Notification::Exit { .. } => break,
                Notification::Other(_) | Notification::PaneModeChanged { .. } => {}
                other => {
                    let _ = events.send(Event::Changed(other));
                }
            },
        }
    }
}
