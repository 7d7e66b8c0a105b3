//! One running search: its shared state (results, stop flag, deadline) and the walk itself, on
//! `ignore`'s parallel walker with `grep-searcher` reading each file.
//!
//! The walk runs on a thread of its own (the walker blocks, and spawns and joins its worker
//! threads inside `run`); every worker checks the stop flag and the deadline at each entry and
//! each match, so a stop or a timeout ends all of them within one file's read.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::{
    BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind,
    SinkMatch,
};
use ignore::{DirEntry, WalkBuilder, WalkState};
use parking_lot::{Mutex, MutexGuard};
use rustix::fs::{Mode, OFlags};

use super::args::{CutShort, SearchHit};
use super::buffer::Results;
use super::io::IoGate;
use super::limits::SearchLimits;
use super::plan::{Plan, Target};
use super::table::Entry;
use crate::cut::cut;
use crate::tools::workspace::open_at;

/// Decides whether the walker may visit a path (the caller's workspace rules).
pub(crate) type Allowed = Arc<dyn Fn(&Path) -> bool + Send + Sync>;

/// What a search's answers read, shared between the walk and the callers.
pub(crate) struct Run {
    pub(crate) started: Instant,
    deadline: Instant,
    stop: AtomicBool,
    cut: Mutex<Option<CutShort>>,
    results: Mutex<Results>,
    skipped: AtomicU64,
    finished: OnceLock<Instant>,
    /// Woken at each batch of results and at the end (for `start`'s first page).
    pub(crate) changed: tokio::sync::Notify,
}

impl Entry for Arc<Run> {
    fn finished_at(&self) -> Option<Instant> {
        self.finished.get().copied()
    }
}

impl Run {
    pub(crate) fn new(started: Instant, plan: &Plan, limits: &SearchLimits) -> Run {
        Run {
            started,
            deadline: started + plan.time,
            stop: AtomicBool::new(false),
            cut: Mutex::new(None),
            results: Mutex::new(Results::new(plan.max_results, limits.max_result_bytes)),
            skipped: AtomicU64::new(0),
            finished: OnceLock::new(),
            changed: tokio::sync::Notify::new(),
        }
    }

    pub(crate) fn results(&self) -> MutexGuard<'_, Results> {
        self.results.lock()
    }

    /// Stops the walk, recording why (the first reason wins).
    pub(crate) fn cut_short(&self, why: CutShort) {
        let mut cut = self.cut.lock();
        if cut.is_none() && self.finished.get().is_none() {
            *cut = Some(why);
        }
        drop(cut);
        self.stop.store(true, Ordering::Release);
    }

    pub(crate) fn cut(&self) -> Option<CutShort> {
        *self.cut.lock()
    }

    /// Whether the walk should end now: stopped, or past its deadline (which it records).
    fn should_stop(&self) -> bool {
        if self.stop.load(Ordering::Acquire) {
            return true;
        }
        if Instant::now() >= self.deadline {
            self.cut_short(CutShort::Timeout);
            return true;
        }
        false
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.get().is_some()
    }

    /// Milliseconds from the start to the end (or to now, while it runs).
    pub(crate) fn runtime_ms(&self, now: Instant) -> u64 {
        let end = self.finished.get().copied().unwrap_or(now);
        u64::try_from(end.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Adds a file's results; stops the walk once the buffer is full.
    fn add(&self, hits: Vec<SearchHit>) {
        if hits.is_empty() {
            return;
        }
        let more = self.results().extend(hits);
        if !more {
            self.cut_short(CutShort::MaxResults);
        }
        self.changed.notify_waiters();
    }

    fn room(&self) -> usize {
        self.results().room()
    }
}

/// Counts a live thread of the search machinery while it is held.
pub(crate) struct Live(Arc<AtomicUsize>);

impl Live {
    pub(crate) fn new(counter: &Arc<AtomicUsize>) -> Live {
        counter.fetch_add(1, Ordering::AcqRel);
        Live(counter.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Everything the walk needs, moved onto its thread.
pub(crate) struct Walk {
    pub(crate) run: Arc<Run>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) root: PathBuf,
    /// `root`, opened with no symlink on its path: files are opened beneath it.
    pub(crate) root_dir: Arc<OwnedFd>,
    pub(crate) allowed: Allowed,
    pub(crate) io: Arc<IoGate>,
    pub(crate) live: Arc<AtomicUsize>,
    pub(crate) limits: SearchLimits,
}

impl Walk {
    /// Walks to the end (or the stop), then marks the search finished.
    pub(crate) fn run(self) {
        let mut builder = WalkBuilder::new(&self.root);
        let allowed = self.allowed.clone();
        builder
            .hidden(!self.plan.include_hidden)
            // A workspace's .gitignore says what its owner does not want seen, git repository
            // or not.
            .require_git(false)
            .follow_links(false)
            .max_depth(Some(self.limits.max_depth))
            .threads(self.limits.threads_per_search.max(1))
            // Refused entries are neither listed, nor read, nor descended into: the walker
            // asks before it queues a folder (so before reading its .gitignore) or a file.
            .filter_entry(move |e| e.file_name() != ".git" && allowed(e.path()));
        // The file size cap is checked on the opened file (`search_file`), not by the walker:
        // its check is one more `stat` by path for every entry.
        let walker = builder.build_parallel();
        walker.run(|| {
            let mut worker = Worker::new(&self);
            Box::new(move |entry| worker.visit(entry))
        });
        // Every walker thread has been joined by now.
        let _ = self.run.finished.set(Instant::now());
        self.run.changed.notify_waiters();
    }
}

/// One walker thread's state.
struct Worker {
    run: Arc<Run>,
    plan: Arc<Plan>,
    root: PathBuf,
    root_dir: Arc<OwnedFd>,
    io: Arc<IoGate>,
    searcher: Searcher,
    max_line_len: usize,
    max_file_size: u64,
    _live: Live,
}

impl Worker {
    fn new(walk: &Walk) -> Worker {
        let context = match walk.plan.target {
            Target::Content { context, .. } => context,
            Target::Names { .. } => 0,
        };
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .heap_limit(Some(walk.limits.max_line_buffer))
            .memory_map(MmapChoice::never())
            .build();
        Worker {
            run: walk.run.clone(),
            plan: walk.plan.clone(),
            root: walk.root.clone(),
            root_dir: walk.root_dir.clone(),
            io: walk.io.clone(),
            searcher,
            max_line_len: walk.limits.max_line_len,
            max_file_size: walk.limits.max_file_size,
            _live: Live::new(&walk.live),
        }
    }

    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.run.should_stop() {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        // Only regular files: a symlink is never followed to its target's contents.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let name = entry.file_name().to_string_lossy();
        if let Some(files) = &self.plan.files {
            let relative = entry
                .path()
                .strip_prefix(&self.root)
                .unwrap_or(entry.path());
            if !files.is_match(&name, relative) {
                return WalkState::Continue;
            }
        }
        let plan = self.plan.clone();
        match &plan.target {
            Target::Names { matcher, exact } => {
                // Reported only if the name is a regular file beneath the root now.
                if matcher.is_match(&name) && self.is_file_beneath(entry.path()) {
                    self.run.add(vec![SearchHit {
                        file: entry.path().to_string_lossy().into_owned(),
                        line: None,
                        text: None,
                        before: vec![],
                        after: vec![],
                    }]);
                    if exact.as_deref() == Some(&*name) {
                        self.run.cut_short(CutShort::EarlyTermination);
                        return WalkState::Quit;
                    }
                }
            }
            Target::Content { matcher, .. } => self.search_file(matcher, entry.path()),
        }
        if self.run.should_stop() {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }

    /// The file at `path` (a path the walker found under the root), opened beneath the root's
    /// handle with no symlink on the way; `None` when it does not open so.
    fn open_beneath(&self, path: &Path, flags: OFlags) -> Option<std::fs::File> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let fd = open_at(self.root_dir.as_fd(), rel, flags, Mode::empty()).ok()?;
        Some(std::fs::File::from(fd))
    }

    /// Whether `path` is a regular file beneath the root now (not through a link).
    fn is_file_beneath(&self, path: &Path) -> bool {
        #[cfg(target_os = "linux")]
        let flags = OFlags::PATH;
        #[cfg(not(target_os = "linux"))]
        let flags = OFlags::RDONLY | OFlags::NONBLOCK;
        self.open_beneath(path, flags)
            .and_then(|f| f.metadata().ok())
            .is_some_and(|m| m.is_file())
    }

    fn search_file(&mut self, matcher: &RegexMatcher, path: &Path) {
        let run = self.run.clone();
        let Some(_permit) = self.io.acquire(|| run.should_stop()) else {
            return;
        };
        // Opened once: the size is the open file's (no second lookup by path), and what is read
        // is what was measured.
        let Some(file) = self.open_beneath(path, OFlags::RDONLY | OFlags::NONBLOCK) else {
            self.run.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if file
            .metadata()
            .map_or(true, |m| m.len() > self.max_file_size)
        {
            self.run.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut sink = Collect {
            run: &self.run,
            path,
            file: None,
            hits: Vec::new(),
            before: Vec::new(),
            room: None,
            max_line_len: self.max_line_len,
            binary: false,
        };
        let read = self.searcher.search_file(matcher, &file, &mut sink);
        if read.is_err() || sink.binary {
            self.run.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let hits = sink.hits;
        self.run.add(hits);
    }
}

/// Collects one file's matches; they reach the search's results only once the whole file was
/// read and found not binary.
struct Collect<'a> {
    run: &'a Run,
    path: &'a Path,
    /// The path as text, made at the first match (most files have none).
    file: Option<String>,
    hits: Vec<SearchHit>,
    before: Vec<String>,
    /// How many results the search still takes, read at the first match.
    room: Option<usize>,
    max_line_len: usize,
    binary: bool,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let path = self.path;
        let file = self
            .file
            .get_or_insert_with(|| path.to_string_lossy().into_owned())
            .clone();
        let run = self.run;
        let room = *self.room.get_or_insert_with(|| run.room());
        self.hits.push(SearchHit {
            file,
            line: m.line_number(),
            text: Some(line_text(m.bytes(), self.max_line_len)),
            before: std::mem::take(&mut self.before),
            after: vec![],
        });
        Ok(self.hits.len() < room && !self.run.should_stop())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let text = line_text(c.bytes(), self.max_line_len);
        match c.kind() {
            SinkContextKind::Before => self.before.push(text),
            SinkContextKind::After => {
                if let Some(last) = self.hits.last_mut() {
                    last.after.push(text);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as text: its terminator dropped, invalid UTF-8 replaced, cut to `max` bytes at a
/// character boundary.
fn line_text(bytes: &[u8], max: usize) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    cut(&text, max).to_owned()
}

#[cfg(test)]
mod tests {
    use super::line_text;

    #[test]
    fn lines_are_cut_at_a_character_boundary() {
        assert_eq!(line_text(b"abc\r\n", 10), "abc");
        assert_eq!(line_text("ééé".as_bytes(), 3), "é");
        assert_eq!(line_text(b"\xffx\n", 10), "\u{fffd}x");
    }
}
