//! Hosted panes: a command Collie runs under a pseudo-terminal (SPEC §5, pty backend).
//!
//! A [`HostedPane`] owns the child process, the pty master, the pane's [`Screen`] and its
//! [`RawRing`] of raw output. Two dedicated std threads do the blocking pty I/O: a reader that
//! feeds every chunk into the ring and the screen (under one `std::sync::Mutex`, never held across
//! an await), bumps `seq` and notifies a `tokio::sync::watch` channel so async code can follow
//! changes; and a writer that drains a byte-bounded input queue, so [`HostedPane::write_text`]
//! never blocks its caller even when the program stops reading its input.
//!
//! Killing a pane ([`HostedPane::kill`], and `Drop`) SIGKILLs the child's process group and, on
//! Linux, every process left in the child's session, then reaps the child: no process started in
//! the pane outlives it. The threads end on their own once the pty closes; they hold no handle
//! back to the pane. When the child exits by itself the pane stays, reporting
//! [`HostedPane::is_alive`] `false` until the owner drops it.

mod kill;
mod writer;

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;

use parking_lot::Mutex;
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize};
use time::OffsetDateTime;
use tokio::sync::watch;

use crate::panes::keys::NamedKey;
use crate::panes::ring::{RawRing, DEFAULT_RING_BYTES};
use crate::panes::screen::Screen;
use crate::panes::snapshot::ScreenSnapshot;

use self::writer::InputQueue;

/// Scrollback lines a hosted pane keeps by default (SPEC §5).
pub const DEFAULT_SCROLLBACK_LINES: usize = 2000;

/// Most input bytes queued for a pane whose program is not reading; past it writes are refused.
pub const MAX_QUEUED_INPUT_BYTES: usize = 256 * 1024;

/// Bytes the reader asks for per read.
const READ_CHUNK: usize = 16 * 1024;

/// Why a hosted pane could not be started or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PtyError {
    /// The operating system would not open a pseudo-terminal.
    #[error("cannot open a pty: {0}")]
    Open(String),
    /// The command could not be started.
    #[error("cannot start {command}: {reason}")]
    Spawn {
        /// The program that failed to start.
        command: String,
        /// What the operating system said.
        reason: String,
    },
    /// The command list was given but empty.
    #[error("empty command")]
    EmptyCommand,
    /// The pty could not be resized.
    #[error("cannot resize the pty: {0}")]
    Resize(String),
    /// The pane's program has exited or the pane was killed.
    #[error("pane is not alive")]
    NotAlive,
    /// The program has not read earlier input and the queue is full.
    #[error("pane input backlog full")]
    InputBacklog,
}

/// How to start a hosted pane.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// Program and arguments; `None` runs the user's `$SHELL`, or `/bin/sh` without one.
    pub command: Option<Vec<String>>,
    /// Terminal rows (at least 1).
    pub rows: u16,
    /// Terminal columns (at least 1).
    pub cols: u16,
    /// Extra environment on top of the bridge's own; the caller passes `COLLIE_PANE` here.
    /// `TERM` defaults to `xterm-256color` unless set here.
    pub env: Vec<(String, String)>,
    /// Working directory; `None` is `$HOME`, or the bridge's own directory without one.
    pub cwd: Option<PathBuf>,
    /// Scrollback lines the screen keeps ([`DEFAULT_SCROLLBACK_LINES`]).
    pub scrollback: usize,
    /// Size of the raw output ring ([`DEFAULT_RING_BYTES`]).
    pub ring_bytes: usize,
}

impl Default for SpawnOptions {
    /// The user's shell, 24 × 80, default scrollback and ring, no extra environment.
    fn default() -> Self {
        SpawnOptions {
            command: None,
            rows: 24,
            cols: 80,
            env: Vec::new(),
            cwd: None,
            scrollback: DEFAULT_SCROLLBACK_LINES,
            ring_bytes: DEFAULT_RING_BYTES,
        }
    }
}

/// What the reader thread updates, under one lock.
struct Output {
    screen: Screen,
    ring: RawRing,
    seq: u64,
}

/// State shared between the pane and its threads.
struct Shared {
    output: Mutex<Output>,
    /// Unix milliseconds of the last output (the spawn time before any).
    last_activity_ms: AtomicI64,
    /// Set once the reader saw the pty close.
    reader_done: AtomicBool,
    changes: watch::Sender<u64>,
}

/// A command running under a pseudo-terminal, with its screen and raw output ring.
pub struct HostedPane {
    shared: Arc<Shared>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    child: Mutex<Box<dyn Child + Send + Sync>>,
    /// Set once the child has been reaped (by `is_alive` or `kill`).
    exited: AtomicBool,
    pid: Option<u32>,
    input: InputQueue,
    /// The reader thread; it ends by itself when the pty closes and is not joined (see module doc).
    _reader: thread::JoinHandle<()>,
}

impl std::fmt::Debug for HostedPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedPane")
            .field("pid", &self.pid)
            .field("exited", &self.exited.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl HostedPane {
    /// Starts `opts.command` under a new pty and the threads that serve it.
    pub fn spawn(opts: SpawnOptions) -> Result<HostedPane, PtyError> {
        let rows = opts.rows.max(1);
        let cols = opts.cols.max(1);
        let cmd = command_builder(&opts)?;
        let program = cmd
            .get_argv()
            .first()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();

        let pair = portable_pty::native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| PtyError::Open(e.to_string()))?;
        let child = pair.slave.spawn_command(cmd).map_err(|e| PtyError::Spawn {
            command: program,
            reason: e.to_string(),
        })?;
        // The parent must not keep the slave open, or the reader would never see the pty close.
        drop(pair.slave);
        let pid = child.process_id();
        let mut child = child;

        let started = pair.master.try_clone_reader().and_then(|reader| {
            let writer = pair.master.take_writer()?;
            Ok((reader, writer))
        });
        let (reader, writer) = match started.map_err(|e| e.to_string()) {
            Ok(rw) => rw,
            Err(e) => {
                kill::kill_tree(pid, &mut *child);
                return Err(PtyError::Open(e));
            }
        };

        let (changes, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            output: Mutex::new(Output {
                screen: Screen::new(rows, cols, opts.scrollback),
                ring: RawRing::new(opts.ring_bytes),
                seq: 0,
            }),
            last_activity_ms: AtomicI64::new(now_millis()),
            reader_done: AtomicBool::new(false),
            changes,
        });

        let thread_shared = Arc::clone(&shared);
        let reader_thread = thread::Builder::new()
            .name(format!("collie-pty-read-{}", pid.unwrap_or(0)))
            .spawn(move || read_loop(reader, &thread_shared));
        let reader_thread = match reader_thread {
            Ok(handle) => handle,
            Err(e) => {
                kill::kill_tree(pid, &mut *child);
                return Err(PtyError::Open(format!(
                    "cannot start the reader thread: {e}"
                )));
            }
        };
        let input = match InputQueue::start(writer, pid, MAX_QUEUED_INPUT_BYTES) {
            Ok(input) => input,
            Err(e) => {
                kill::kill_tree(pid, &mut *child);
                return Err(PtyError::Open(format!(
                    "cannot start the writer thread: {e}"
                )));
            }
        };

        Ok(HostedPane {
            shared,
            master: Mutex::new(pair.master),
            child: Mutex::new(child),
            exited: AtomicBool::new(false),
            pid,
            input,
            _reader: reader_thread,
        })
    }

    /// Queues `text` to be typed literally. Never blocks; fails if the pane is not alive or the
    /// program has left too much earlier input unread. The caller checks the §3.2 text limit
    /// (`keys::validate_text`) first.
    pub fn write_text(&self, text: &str) -> Result<(), PtyError> {
        self.write_bytes(text.as_bytes())
    }

    /// Queues one named key (its xterm bytes, [`NamedKey::pty_bytes`]).
    pub fn write_key(&self, key: NamedKey) -> Result<(), PtyError> {
        self.write_bytes(key.pty_bytes())
    }

    /// Queues `text` and then `keys`, in order, as one write (SPEC §3.2: text first, then keys).
    pub fn write_input(&self, text: &str, keys: &[NamedKey]) -> Result<(), PtyError> {
        let mut bytes = text.as_bytes().to_vec();
        for key in keys {
            bytes.extend_from_slice(key.pty_bytes());
        }
        self.write_bytes(&bytes)
    }

    fn write_bytes(&self, bytes: &[u8]) -> Result<(), PtyError> {
        if !self.is_alive() {
            return Err(PtyError::NotAlive);
        }
        self.input.push(bytes)
    }

    /// Resizes the terminal (each dimension at least 1): the kernel's window size, which signals
    /// the program, and the screen model.
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), PtyError> {
        let (rows, cols) = (rows.max(1), cols.max(1));
        self.master
            .lock()
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| PtyError::Resize(e.to_string()))?;
        self.shared.output.lock().screen.resize(rows, cols);
        Ok(())
    }

    /// The screen now, each logical line masked by `mask`, with up to `scrollback` lines of
    /// scrollback.
    pub fn snapshot(&self, scrollback: usize, mask: &dyn Fn(&str) -> String) -> ScreenSnapshot {
        let mut guard = self.shared.output.lock();
        let out = &mut *guard;
        ScreenSnapshot::capture(&mut out.screen, out.seq, scrollback, mask)
    }

    /// The terminal size as `(rows, cols)`, without copying the screen.
    pub fn size(&self) -> (u16, u16) {
        self.shared.output.lock().screen.size()
    }

    /// The current output sequence number; it grows by one per chunk read from the pty.
    pub fn seq(&self) -> u64 {
        self.shared.output.lock().seq
    }

    /// A receiver that sees every new `seq`. It is also notified (with the same `seq`) when the
    /// pty closes, so a follower can check [`HostedPane::is_alive`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// The raw output kept in the ring, oldest first.
    pub fn raw_output(&self) -> Vec<u8> {
        self.shared.output.lock().ring.contents()
    }

    /// Whether the pty has closed: every process that held its terminal has exited, and the
    /// reader thread has ended.
    pub fn output_closed(&self) -> bool {
        self.shared.reader_done.load(Ordering::Acquire)
    }

    /// Whether the child is still running. Once it has exited (or was killed) this stays `false`.
    pub fn is_alive(&self) -> bool {
        if self.exited.load(Ordering::Acquire) {
            return false;
        }
        let mut child = self.child.lock();
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(_)) | Err(_) => {
                self.exited.store(true, Ordering::Release);
                false
            }
        }
    }

    /// When the program last wrote output (the spawn time before it wrote any).
    pub fn last_activity(&self) -> OffsetDateTime {
        let ms = self.shared.last_activity_ms.load(Ordering::Relaxed);
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    /// Best effort (SPEC §5): the terminal is in canonical mode with echo off (how `sudo`, `ssh`,
    /// `passwd` and `stty -echo` read a secret; full-screen programs turn canonical mode off too
    /// and are not flagged), or the cursor line looks like a password prompt.
    pub fn asking_password(&self) -> bool {
        let echo_off = self.master.lock().get_termios().is_some_and(|t| {
            use nix::sys::termios::LocalFlags;
            let flags = t.local_flags.bits();
            flags & LocalFlags::ECHO.bits() == 0 && flags & LocalFlags::ICANON.bits() != 0
        });
        echo_off || (self.is_alive() && self.shared.output.lock().screen.asking_password())
    }

    /// The child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Bytes of pane buffers counted against the global cap: ring plus screen and scrollback.
    pub fn allocated_bytes(&self) -> usize {
        let out = self.shared.output.lock();
        out.ring
            .allocated_bytes()
            .saturating_add(out.screen.allocated_bytes())
    }

    /// Kills the child, its process group and (on Linux) every process left in its session, then
    /// reaps the child. Idempotent. Blocks only while the killed child is reaped.
    pub fn kill(&self) {
        let mut child = self.child.lock();
        kill::kill_tree(self.pid, &mut **child);
        self.exited.store(true, Ordering::Release);
        drop(child);
        self.input.close();
    }
}

impl Drop for HostedPane {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Builds the command: program, arguments, environment and working directory.
fn command_builder(opts: &SpawnOptions) -> Result<CommandBuilder, PtyError> {
    let argv = match &opts.command {
        Some(argv) if argv.is_empty() => return Err(PtyError::EmptyCommand),
        Some(argv) => argv.clone(),
        None => vec![std::env::var("SHELL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".to_owned())],
    };
    let mut cmd = CommandBuilder::from_argv(argv.into_iter().map(Into::into).collect());
    cmd.env("TERM", "xterm-256color");
    for (key, value) in &opts.env {
        cmd.env(key, value);
    }
    match &opts.cwd {
        Some(dir) => cmd.cwd(dir),
        None => {
            if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                cmd.cwd(home);
            }
        }
    }
    Ok(cmd)
}

/// The reader thread: pty output into the ring and the screen until the pty closes.
fn read_loop(mut reader: Box<dyn Read + Send>, shared: &Shared) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let chunk = &buf[..n];
                let seq = {
                    let mut out = shared.output.lock();
                    out.ring.push(chunk);
                    out.screen.feed(chunk);
                    out.seq += 1;
                    out.seq
                };
                shared
                    .last_activity_ms
                    .store(now_millis(), Ordering::Relaxed);
                shared.changes.send_replace(seq);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // Linux reports EIO once every slave descriptor is closed: the pane is done.
            Err(_) => break,
        }
    }
    shared.reader_done.store(true, Ordering::Release);
    shared.changes.send_modify(|_| {});
}

fn now_millis() -> i64 {
    let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
    i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
