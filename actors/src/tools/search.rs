//! `start_search`, `get_more_search_results` and `stop_search` (SPEC §11, seed 003 §8.12): search
//! file names or contents under a workspace folder with ripgrep's own libraries — `ignore`'s
//! parallel walker (`.gitignore` honoured, hidden files only when asked) and `grep-searcher` with
//! `grep-regex` — in the background, bounded and cancellable.
//!
//! The application layer resolves the request's `path` inside a workspace and calls
//! [`Searches::start`] with the result and a predicate for the workspace's forbidden paths; the
//! walker asks that predicate before it lists, reads or descends into anything. Each search runs
//! on its own thread (plus the walker's workers) and writes into a bounded buffer the callers
//! page through by id. Its bounds ([`SearchLimits`]): depth, results (count and bytes), time,
//! searches at once (globally and per device), files read at once across all searches (the IO
//! bound), file size; binary files are skipped. Finished searches are forgotten after a while.
//!
//! The walker finds entries by path; what reaches an answer is checked beneath a handle on the
//! root instead: a file is read, and a name reported, only when it opens beneath the root with no
//! symlink on the way — a folder swapped for a link to elsewhere during the walk shows nothing of
//! elsewhere (decision 0049).
//!
//! Nothing here panics on a caller's input; a search that fails to read a file skips it and
//! counts it in `skippedFiles`. Dropping the last [`Searches`] handle, or [`Searches::stop_all`],
//! stops every search; their threads end within one file's read.
//!
//! The audit [`Meta`](super::Meta) of each call holds the root, the pattern's length (never the
//! pattern: someone may search for a secret to find where it leaked — decision 0031), the search
//! type, the counts and whether the search was cut short; never a path it found or a line.

mod args;
mod buffer;
mod io;
mod limits;
mod plan;
mod run;
mod table;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rand::rngs::OsRng;
use rand::RngCore;

pub use self::args::{
    CutShort, GetMoreSearchResultsArgs, SearchHit, SearchPage, SearchStopped, SearchType,
    StartSearchArgs, StopSearchArgs,
};
use self::io::IoGate;
pub use self::io::IoStats;
pub use self::limits::SearchLimits;
use self::plan::Plan;
use self::run::{Live, Run, Walk};
use self::table::Table;
use super::workspace::{open_root, refusal};
use super::{Done, ToolError};

/// `get_more_search_results`' page length when the request names none (Desktop Commander's).
const DEFAULT_PAGE_LEN: usize = 100;

/// Running and finished searches, by 128-bit random id (hex), each owned by the device that
/// started it.
#[derive(Clone)]
pub struct Searches {
    inner: Arc<Inner>,
}

struct Inner {
    limits: SearchLimits,
    table: Mutex<Table<Arc<Run>>>,
    io: Arc<IoGate>,
    /// Search threads alive: each search's own thread and its walker's workers.
    live: Arc<AtomicUsize>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        stop_every(&self.table, &self.io);
    }
}

fn stop_every(table: &Mutex<Table<Arc<Run>>>, io: &IoGate) {
    for run in table.lock().values() {
        run.cut_short(CutShort::Stopped);
    }
    io.wake_all();
}

impl Searches {
    /// No searches yet, under `limits`.
    pub fn new(limits: SearchLimits) -> Searches {
        Searches {
            inner: Arc::new(Inner {
                io: Arc::new(IoGate::new(limits.io_permits)),
                limits,
                table: Mutex::new(Table::new()),
                live: Arc::new(AtomicUsize::new(0)),
            }),
        }
    }

    /// Starts a search under `root` (already resolved inside a workspace by the caller);
    /// `allowed` is called for every entry the walker visits (an absolute path) and an entry it
    /// refuses is neither listed nor read nor descended into. Waits until the first page is
    /// full, the search ends, or `first_page_wait` passes, and answers the first results and the
    /// id.
    pub async fn start(
        &self,
        owner: &str,
        root: PathBuf,
        allowed: Arc<dyn Fn(&Path) -> bool + Send + Sync>,
        a: StartSearchArgs,
    ) -> Result<Done<SearchPage>, ToolError> {
        let limits = &self.inner.limits;
        let plan = Arc::new(Plan::new(&a, limits)?);
        if !allowed(&root) {
            return Err(ToolError::PathNotAllowed);
        }
        // The root, resolved by the caller, is opened once with no symlink on its path; every
        // file the walk reads or names is then opened beneath this handle (decision 0049).
        let root_dir = Arc::new(open_root(&root).map_err(|e| refusal("search root", e))?);
        let id = new_id();
        let now = Instant::now();
        let run = Arc::new(Run::new(now, &plan, limits));
        {
            let mut table = self.inner.table.lock();
            table.prune(now, limits.keep_finished, limits.max_finished_per_owner);
            table.admit(
                owner,
                limits.max_concurrent,
                limits.max_concurrent_per_owner,
            )?;
            table.insert(id.clone(), owner, run.clone());
        }
        let walk = Walk {
            run: run.clone(),
            plan: plan.clone(),
            root: root.clone(),
            root_dir,
            allowed,
            io: self.inner.io.clone(),
            live: self.inner.live.clone(),
            limits: limits.clone(),
        };
        let live = Live::new(&self.inner.live);
        let spawned = std::thread::Builder::new()
            .name("collie-search".into())
            .spawn(move || {
                let _live = live;
                walk.run();
            });
        if let Err(e) = spawned {
            self.inner.table.lock().remove(&id);
            return Err(ToolError::Internal(format!("search thread: {e}")));
        }

        // The first page: wait for enough results, the end, or the wait cap.
        let until = tokio::time::Instant::now() + limits.first_page_wait;
        loop {
            let changed = run.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if run.is_finished() || run.results().len() >= limits.first_page_len {
                break;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                break;
            }
        }
        let page = page(&id, &run, 0, limits.first_page_len);
        Ok(Done::new(page.clone())
            .with("root", root.to_string_lossy().into_owned())
            .with("searchType", search_type_word(&a.search_type))
            .with("patternLength", plan.pattern_len)
            .with("literal", plan.literal)
            .with("sessionId", id)
            .with("resultCount", page.total_results)
            .with("isComplete", page.is_complete)
            .with("cutShort", page.cut_short.map(CutShort::as_str)))
    }

    /// A page of `owner`'s search: `length` results from `offset` (negative: from the end).
    pub fn more(
        &self,
        owner: &str,
        a: GetMoreSearchResultsArgs,
    ) -> Result<Done<SearchPage>, ToolError> {
        let limits = &self.inner.limits;
        let length = match a.length {
            Some(0) => return Err(ToolError::BadArgument("length must be at least 1".into())),
            Some(n) => usize::try_from(n)
                .unwrap_or(usize::MAX)
                .min(limits.max_page_len),
            None => DEFAULT_PAGE_LEN.min(limits.max_page_len),
        };
        let run = self.find(owner, &a.session_id)?;
        let page = page(&a.session_id, &run, a.offset, length);
        Ok(Done::new(page.clone())
            .with("sessionId", a.session_id)
            .with("offset", page.offset)
            .with("resultCount", page.results.len())
            .with("totalResults", page.total_results)
            .with("isComplete", page.is_complete)
            .with("cutShort", page.cut_short.map(CutShort::as_str)))
    }

    /// Stops `owner`'s search; its results stay readable until it is forgotten.
    pub fn stop(&self, owner: &str, a: StopSearchArgs) -> Result<Done<SearchStopped>, ToolError> {
        let run = self.find(owner, &a.session_id)?;
        let was_complete = run.is_finished();
        if !was_complete {
            run.cut_short(CutShort::Stopped);
            self.inner.io.wake_all();
        }
        let total_results = run.results().len();
        Ok(Done::new(SearchStopped {
            session_id: a.session_id.clone(),
            total_results,
            was_complete,
        })
        .with("sessionId", a.session_id)
        .with("totalResults", total_results)
        .with("wasComplete", was_complete))
    }

    /// Stops every search (the bridge is stopping); their threads end within one file's read.
    pub fn stop_all(&self) {
        stop_every(&self.inner.table, &self.inner.io);
    }

    /// Search threads alive now (each search's own thread and its walker's workers).
    pub fn live_threads(&self) -> usize {
        self.inner.live.load(Ordering::Acquire)
    }

    /// What the global IO bound has seen.
    pub fn io_stats(&self) -> IoStats {
        self.inner.io.stats()
    }

    /// The bounds in force.
    pub fn limits(&self) -> &SearchLimits {
        &self.inner.limits
    }

    fn find(&self, owner: &str, id: &str) -> Result<Arc<Run>, ToolError> {
        let limits = &self.inner.limits;
        let mut table = self.inner.table.lock();
        table.prune(
            Instant::now(),
            limits.keep_finished,
            limits.max_finished_per_owner,
        );
        table.get(owner, id).cloned()
    }
}

fn new_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn search_type_word(t: &SearchType) -> &'static str {
    match t {
        SearchType::Files => "files",
        SearchType::Content => "content",
    }
}

fn page(id: &str, run: &Run, offset: i64, length: usize) -> SearchPage {
    // Read the end first: a search that has ended has all its results in the buffer.
    let is_complete = run.is_finished();
    let (offset, results, total_results) = {
        let r = run.results();
        let (start, hits) = r.page(offset, length);
        (start, hits, r.len())
    };
    SearchPage {
        session_id: id.to_owned(),
        offset,
        results,
        total_results,
        is_complete,
        cut_short: run.cut(),
        skipped_files: run.skipped(),
        runtime_ms: run.runtime_ms(Instant::now()),
    }
}
