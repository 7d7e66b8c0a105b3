//! The input side of a hosted pane: a byte-bounded queue drained by a dedicated writer thread.
//!
//! Writing to a pty blocks once the program stops reading its input, so callers (async code)
//! only append to the queue and the thread does the blocking writes, in order. The queue holds at
//! most a fixed number of bytes; past it a write is refused rather than buffered without bound.
//! The thread ends when the queue is closed (the pane was killed) or a write fails (the pty
//! closed); a thread blocked in a write ends when the kill closes the terminal.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;
use std::thread;

use parking_lot::{Condvar, Mutex};

use super::PtyError;

#[derive(Default)]
struct Queue {
    chunks: VecDeque<Vec<u8>>,
    queued_bytes: usize,
    /// No more input is accepted: the pane was killed or the pty failed.
    closed: bool,
}

/// The queue plus the condition the writer thread waits on.
struct Inner {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// Handle to a pane's input queue; closing it (or dropping it) stops the writer thread.
pub(super) struct InputQueue {
    inner: Arc<Inner>,
    max_bytes: usize,
    /// The writer thread; not joined, it ends by itself (see the module doc).
    _thread: thread::JoinHandle<()>,
}

impl InputQueue {
    /// Starts the writer thread for `writer`, accepting at most `max_bytes` of unwritten input.
    pub(super) fn start(
        writer: Box<dyn Write + Send>,
        pid: Option<u32>,
        max_bytes: usize,
    ) -> std::io::Result<InputQueue> {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
        });
        let thread_inner = Arc::clone(&inner);
        let thread = thread::Builder::new()
            .name(format!("collie-pty-write-{}", pid.unwrap_or(0)))
            .spawn(move || write_loop(writer, &thread_inner))?;
        Ok(InputQueue {
            inner,
            max_bytes,
            _thread: thread,
        })
    }

    /// Appends `bytes` for the writer thread; never blocks on the pty.
    pub(super) fn push(&self, bytes: &[u8]) -> Result<(), PtyError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut queue = self.inner.queue.lock();
        if queue.closed {
            return Err(PtyError::NotAlive);
        }
        if queue.queued_bytes.saturating_add(bytes.len()) > self.max_bytes {
            return Err(PtyError::InputBacklog);
        }
        queue.queued_bytes += bytes.len();
        queue.chunks.push_back(bytes.to_vec());
        drop(queue);
        self.inner.ready.notify_one();
        Ok(())
    }

    /// Drops any unwritten input and stops the writer thread once it is not blocked in a write.
    pub(super) fn close(&self) {
        let mut queue = self.inner.queue.lock();
        queue.closed = true;
        queue.chunks.clear();
        queue.queued_bytes = 0;
        drop(queue);
        self.inner.ready.notify_one();
    }
}

impl Drop for InputQueue {
    fn drop(&mut self) {
        self.close();
    }
}

fn write_loop(mut writer: Box<dyn Write + Send>, inner: &Inner) {
    loop {
        let chunk = {
            let mut queue = inner.queue.lock();
            loop {
                if queue.closed {
                    return;
                }
                if let Some(chunk) = queue.chunks.pop_front() {
                    queue.queued_bytes -= chunk.len();
                    break chunk;
                }
                inner.ready.wait(&mut queue);
            }
        };
        if writer
            .write_all(&chunk)
            .and_then(|()| writer.flush())
            .is_err()
        {
            inner.queue.lock().closed = true;
            return;
        }
    }
}
