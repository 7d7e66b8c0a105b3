//! The caps on process sessions and `exec_command` (SPEC §11, seed 003 §7.5.4, §7.6, §8.9, §8.12),
//! all derived from one number: the memory the bridge sets aside for buffered output.

use std::time::Duration;

/// One mebibyte.
const MIB: usize = 1024 * 1024;

/// Every cap on sessions and one-shot commands. Reaching one is refused with
/// `ToolError::ResourceLimit(<cap name>)`; nothing grows past them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// The output ring of one session: the newest bytes are kept, the oldest dropped.
    pub ring_bytes: usize,
    /// Sessions alive at once, all owners together (`"sessions"`).
    pub max_sessions: usize,
    /// Sessions alive at once for one owner (`"sessions per device"`).
    pub max_sessions_per_owner: usize,
    /// Output memory reserved at once: each live session reserves its whole ring and each running
    /// `exec_command` its two output caps, when it starts (`"session buffers"`).
    pub buffer_cap: usize,
    /// A session nobody has called for this long is killed and forgotten.
    pub idle_timeout: Duration,
    /// A session older than this is killed and forgotten, however busy.
    pub max_lifetime: Duration,
    /// The longest `input` one `interact_with_process` call may write (seed 003 §7.5.4).
    pub max_input_bytes: usize,
    /// How long `start_process` and `interact_with_process` wait for output when the call names
    /// no `timeout_ms`, and the most they wait when it does.
    pub default_wait: Duration,
    /// See `default_wait`.
    pub max_wait: Duration,
    /// `exec_command`s running at once for one owner (`"exec concurrency"`).
    pub exec_concurrency_per_owner: usize,
    /// Processes (sessions and execs) one owner may start in a burst (`"process creation rate"`).
    pub creation_burst: u32,
    /// How fast that burst refills: one more start per this interval.
    pub creation_refill: Duration,
    /// The bytes kept of an `exec_command`'s stdout, and again of its stderr; the rest is read and
    /// dropped, and the answer says `truncated`.
    pub exec_output_cap: usize,
    /// An `exec_command`'s time limit when the call names no `timeout_ms`.
    pub exec_default_timeout: Duration,
    /// The longest time limit a call may ask for.
    pub exec_max_timeout: Duration,
}

impl SessionLimits {
    /// The per-session ring SPEC §11 fixes.
    pub const RING_BYTES: usize = 2 * MIB;
    /// The output memory [`Default`] sets aside (see there for the arithmetic).
    pub const DEFAULT_BUFFER_BUDGET: usize = 32 * MIB;

    /// The caps for `session_buffer_budget` bytes of buffered output (seed 003 §8.9).
    ///
    /// Three quarters of the budget go to session rings (`max_sessions = ¾·budget / 2 MiB`, at
    /// least one), the last quarter is left for running `exec_command`s (each reserves
    /// `2 × exec_output_cap`); one owner may hold half the sessions. The global `buffer_cap` is the
    /// whole budget, so sessions and execs together can never reserve more than it.
    pub fn from_memory_budget(session_buffer_budget: usize) -> SessionLimits {
        let ring_bytes = Self::RING_BYTES;
        let max_sessions = (session_buffer_budget / 4 * 3 / ring_bytes).max(1);
        SessionLimits {
            ring_bytes,
            max_sessions,
            max_sessions_per_owner: (max_sessions / 2).max(1),
            buffer_cap: session_buffer_budget,
            idle_timeout: Duration::from_secs(30 * 60),
            max_lifetime: Duration::from_secs(8 * 60 * 60),
            max_input_bytes: 64 * 1024,
            default_wait: Duration::from_secs(2),
            max_wait: Duration::from_secs(30),
            exec_concurrency_per_owner: 4,
            creation_burst: 20,
            creation_refill: Duration::from_secs(3),
            exec_output_cap: 256 * 1024,
            exec_default_timeout: Duration::from_secs(30),
            exec_max_timeout: Duration::from_secs(10 * 60),
        }
    }
}

impl SessionLimits {
    /// The longest a call of `tool` asking for `timeout_ms` may run before it answers:
    /// `exec_command` its time limit, `start_process` and `interact_with_process` their wait for
    /// output, every other tool no time of its own. A lead that relays the call waits this long
    /// beyond its usual answer deadline, so a long command is not reported `member unreachable`
    /// while it still runs (issue 26). A `timeout_ms` past the cap is refused by the tool itself,
    /// so the cap bounds the wait too.
    pub fn call_time(&self, tool: crate::tools::ToolName, timeout_ms: Option<u64>) -> Duration {
        use crate::tools::ToolName;
        let asked = timeout_ms.map(Duration::from_millis);
        match tool {
            ToolName::ExecCommand => asked
                .unwrap_or(self.exec_default_timeout)
                .min(self.exec_max_timeout),
            ToolName::StartProcess | ToolName::InteractWithProcess => {
                asked.unwrap_or(self.default_wait).min(self.max_wait)
            }
            _ => Duration::ZERO,
        }
    }
}

impl Default for SessionLimits {
    /// The caps for a 32 MiB output budget, within seed 003 §8.9's ceiling:
    ///
    /// ```text
    /// base resident budget (seed 003 §8.9)                 20 MiB
    /// + session buffer budget                              32 MiB
    ///     rings: ¾ · 32 MiB / 2 MiB   = 12 sessions (6 per device)   24 MiB
    ///     execs: 2 × 256 KiB each; ¼ · 32 MiB = 8 MiB = 16 running  8 MiB
    /// + safety margin (pipes, tasks, answers being built)  12 MiB
    /// = ceiling                                            64 MiB
    /// ```
    ///
    /// An answer is bounded separately: `read_process_output` returns at most 1 MiB.
    fn default() -> Self {
        Self::from_memory_budget(Self::DEFAULT_BUFFER_BUDGET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_arithmetic_holds() {
        let l = SessionLimits::default();
        assert_eq!(l.ring_bytes, 2 * MIB);
        assert_eq!(l.max_sessions, 12);
        assert_eq!(l.max_sessions_per_owner, 6);
        assert_eq!(l.buffer_cap, 32 * MIB);
        let exec_room = l.buffer_cap - l.max_sessions * l.ring_bytes;
        assert_eq!(exec_room / (2 * l.exec_output_cap), 16);
    }

    #[test]
    fn a_call_s_time_is_its_own_limit_within_the_caps() {
        use crate::tools::ToolName;
        let l = SessionLimits::default();
        let secs = Duration::from_secs;
        assert_eq!(l.call_time(ToolName::ExecCommand, None), secs(30));
        assert_eq!(l.call_time(ToolName::ExecCommand, Some(5_000)), secs(5));
        assert_eq!(
            l.call_time(ToolName::ExecCommand, Some(u64::MAX)),
            secs(600)
        );
        assert_eq!(l.call_time(ToolName::InteractWithProcess, None), secs(2));
        assert_eq!(l.call_time(ToolName::StartProcess, Some(60_000)), secs(30));
        assert_eq!(
            l.call_time(ToolName::ReadFile, Some(60_000)),
            Duration::ZERO
        );
    }

    #[test]
    fn a_tiny_budget_leaves_no_cap_at_zero() {
        let l = SessionLimits::from_memory_budget(1);
        assert_eq!(l.max_sessions, 1);
        assert_eq!(l.max_sessions_per_owner, 1);
    }
}
