//! The bounds every search runs under (SPEC §11, seed 003 §8.12): how deep, how many results, how
//! long, how many at once, how much of the disk, how big a file.

use std::time::Duration;

/// The bounds of [`Searches`](super::Searches). Fixed when the bridge starts; a request can ask
/// for less (`maxResults`, `timeout_ms`, `contextLines`) but never for more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchLimits {
    /// Deepest folder level the walker descends to below the search's root.
    pub max_depth: usize,
    /// Most results one search keeps; it stops collecting (and walking) at this cap.
    pub max_results: usize,
    /// Most bytes of result text (paths, matched and context lines) one search keeps; the buffer
    /// never grows past it, whatever the count.
    pub max_result_bytes: usize,
    /// Longest a search runs; it ends itself then (`timeout_ms` may ask for less).
    pub max_time: Duration,
    /// Searches running at once across every device; one more is refused
    /// (`resource limit`, cap `searches`).
    pub max_concurrent: usize,
    /// Searches running at once for one device; likewise refused.
    pub max_concurrent_per_owner: usize,
    /// The global IO bound: files whose contents are being read at once, across every search.
    /// A walker thread waits for a permit before it opens a file (decision 0031).
    pub io_permits: usize,
    /// Walker threads of one search.
    pub threads_per_search: usize,
    /// Files bigger than this are not searched (their names are still listed by a name search).
    pub max_file_size: u64,
    /// Most bytes a searcher buffers for one line; a file with a longer line is skipped.
    pub max_line_buffer: usize,
    /// Longest `pattern` and `filePattern`, in bytes.
    pub max_pattern_len: usize,
    /// Most `contextLines` before and after a match.
    pub max_context_lines: usize,
    /// A matched or context line longer than this is cut (at a character boundary) in the answer.
    pub max_line_len: usize,
    /// Most results one page answers (`length` of `get_more_search_results`).
    pub max_page_len: usize,
    /// Results `start_search` waits for before it answers...
    pub first_page_len: usize,
    /// ...or this long, whichever comes first.
    pub first_page_wait: Duration,
    /// How long a finished search's results are kept for `get_more_search_results`.
    pub keep_finished: Duration,
    /// Finished searches kept per device (the oldest is forgotten first).
    pub max_finished_per_owner: usize,
}

impl Default for SearchLimits {
    /// Sized for a laptop-class machine and the bridge's memory budget (seed 003 §8.9): at most
    /// 4 searches × 1 MiB of results, walker threads as many as the cores (at most 8), and as
    /// many concurrent file reads as one search has threads, so a lone search runs at full
    /// speed while four cannot queue more reads on the disk than one would.
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 8);
        SearchLimits {
            max_depth: 64,
            max_results: 5_000,
            max_result_bytes: 1 << 20,
            max_time: Duration::from_secs(30),
            max_concurrent: 4,
            max_concurrent_per_owner: 2,
            io_permits: cores,
            threads_per_search: cores,
            max_file_size: 10 << 20,
            max_line_buffer: 4 << 20,
            max_pattern_len: 1_000,
            max_context_lines: 10,
            max_line_len: 500,
            max_page_len: 500,
            first_page_len: 50,
            first_page_wait: Duration::from_millis(100),
            keep_finished: Duration::from_secs(600),
            max_finished_per_owner: 8,
        }
    }
}
