//! The session table as a pure state machine: who owns which session, what each has printed, and
//! which caps a new session or `exec_command` would break. No I/O, no clock: every call that
//! depends on time takes `now`, and the shell (`Sessions`) owns the processes, timers and locks.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::limits::SessionLimits;
use super::ring::{Ring, Slice};
use crate::cut::cut;
use crate::tools::ToolError;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    /// The exit code, when it exited (a command killed by signal N while its guard lived reports
    /// 128 + N, the way a shell does).
    pub(crate) code: Option<i32>,
    /// The signal that ended the guard itself (a SIGKILL to the group, a timeout).
    pub(crate) signal: Option<i32>,
}

/// One session's bookkeeping.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) owner: String,
    /// The command line, cut at 1 KiB (for `list_sessions`; never audited).
    pub(crate) command: String,
    pub(crate) created: Instant,
    pub(crate) last_access: Instant,
    pub(crate) ring: Ring,
    /// Where the owner's last read ended: the default `offset` of the next read.
    pub(crate) cursor: u64,
    /// True until the shell has seen the process group's leader exit. Only while it is true may
    /// the group be signalled: the leader is not reaped yet, so its pid (the group id) cannot have
    /// been reused.
    pub(crate) running: bool,
    pub(crate) exit: Option<ExitInfo>,
}

/// What the table says about a session's time limits at `now`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// The session is gone from the table.
    Gone,
    /// Past its idle timeout or maximum lifetime.
    Expired,
    /// Alive until then (unless called again, which moves the idle deadline).
    Until(Instant),
}

/// A refilling allowance of process starts for one owner.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u32,
    since: Instant,
}

/// The table of sessions and running execs.
#[derive(Debug)]
pub(crate) struct Core {
    limits: SessionLimits,
    sessions: HashMap<String, Entry>,
    execs: HashMap<String, usize>,
    buckets: HashMap<String, Bucket>,
    /// Owners whose sessions were ended, and until when they may start none (see
    /// [`Core::end_owner`]).
    ended: HashMap<String, Instant>,
}

impl Core {
    pub(crate) fn new(limits: SessionLimits) -> Core {
        Core {
            limits,
            sessions: HashMap::new(),
            execs: HashMap::new(),
            buckets: HashMap::new(),
            ended: HashMap::new(),
        }
    }

    /// `owner`'s sessions are being ended: until `until` it may start none — a start already on
    /// its way when the end was decided (a relayed call the lead has not yet dropped) is refused
    /// instead of outliving it. Past ends are forgotten here.
    pub(crate) fn end_owner(&mut self, owner: &str, until: Instant, now: Instant) {
        self.ended.retain(|_, t| *t > now);
        if until > now {
            self.ended.insert(owner.to_owned(), until);
        }
    }

    /// Refuses a start of an owner being ended.
    fn check_not_ended(&self, owner: &str, now: Instant) -> Result<(), ToolError> {
        match self.ended.get(owner) {
            Some(until) if *until > now => Err(ToolError::ResourceLimit("ended device")),
            _ => Ok(()),
        }
    }

    pub(crate) fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// Output memory reserved now: a whole ring per session, two output caps per running exec.
    fn reserved(&self) -> usize {
        let execs: usize = self.execs.values().sum();
        self.sessions.len() * self.limits.ring_bytes + execs * 2 * self.limits.exec_output_cap
    }

    /// `owner`'s allowance as of `now`, refilled (unchanged in the table).
    fn bucket(&self, owner: &str, now: Instant) -> Bucket {
        let (burst, refill) = (self.limits.creation_burst, self.limits.creation_refill);
        let mut b = self.buckets.get(owner).copied().unwrap_or(Bucket {
            tokens: burst,
            since: now,
        });
        if !refill.is_zero() {
            let earned = now.saturating_duration_since(b.since).as_nanos() / refill.as_nanos();
            if earned > 0 {
                let earned = u32::try_from(earned).unwrap_or(u32::MAX);
                b.tokens = b.tokens.saturating_add(earned).min(burst);
                b.since = if b.tokens == burst {
                    now
                } else {
                    b.since + refill * earned
                };
            }
        }
        b
    }

    /// Refuses a start when `owner`'s allowance is spent.
    fn check_token(&self, owner: &str, now: Instant) -> Result<(), ToolError> {
        if self.bucket(owner, now).tokens == 0 {
            return Err(ToolError::ResourceLimit("process creation rate"));
        }
        Ok(())
    }

    /// Takes one start from `owner`'s allowance, or refuses.
    fn take_token(&mut self, owner: &str, now: Instant) -> Result<(), ToolError> {
        self.check_token(owner, now)?;
        let mut b = self.bucket(owner, now);
        b.tokens -= 1;
        self.buckets.insert(owner.to_owned(), b);
        Ok(())
    }

    /// Whether a new session of `owner` would be admitted now, or the cap it would break; takes
    /// nothing. [`Core::open`] runs it, and so does the check the application makes before it
    /// audits `start_process` (`sessions/gate.rs`).
    pub(crate) fn admits_session(&self, owner: &str, now: Instant) -> Result<(), ToolError> {
        self.check_not_ended(owner, now)?;
        let l = &self.limits;
        if self.sessions.len() >= l.max_sessions {
            return Err(ToolError::ResourceLimit("sessions"));
        }
        let mine = self.sessions.values().filter(|e| e.owner == owner).count();
        if mine >= l.max_sessions_per_owner {
            return Err(ToolError::ResourceLimit("sessions per device"));
        }
        if self.reserved() + l.ring_bytes > l.buffer_cap {
            return Err(ToolError::ResourceLimit("session buffers"));
        }
        self.check_token(owner, now)
    }

    /// Admits a new session `id` for `owner`, or names the cap it would break. The table is
    /// unchanged on refusal (a refused start spends no token).
    pub(crate) fn open(
        &mut self,
        id: String,
        owner: &str,
        command: &str,
        now: Instant,
    ) -> Result<(), ToolError> {
        self.admits_session(owner, now)?;
        self.take_token(owner, now)?;
        let entry = Entry {
            owner: owner.to_owned(),
            command: cut(command, 1024).to_owned(),
            created: now,
            last_access: now,
            ring: Ring::new(self.limits.ring_bytes),
            cursor: 0,
            running: true,
            exit: None,
        };
        self.sessions.insert(id, entry);
        Ok(())
    }

    /// Whether an `exec_command` of `owner` would be admitted now, or the cap it would break;
    /// takes nothing. [`Core::begin_exec`] runs it, and so does the application's check before
    /// it audits the call.
    pub(crate) fn admits_exec(&self, owner: &str, now: Instant) -> Result<(), ToolError> {
        self.check_not_ended(owner, now)?;
        let l = &self.limits;
        if self.execs.get(owner).copied().unwrap_or(0) >= l.exec_concurrency_per_owner {
            return Err(ToolError::ResourceLimit("exec concurrency"));
        }
        if self.reserved() + 2 * l.exec_output_cap > l.buffer_cap {
            return Err(ToolError::ResourceLimit("session buffers"));
        }
        self.check_token(owner, now)
    }

    /// Admits an `exec_command` for `owner`; the caller must [`Core::end_exec`] it.
    pub(crate) fn begin_exec(&mut self, owner: &str, now: Instant) -> Result<(), ToolError> {
        self.admits_exec(owner, now)?;
        self.take_token(owner, now)?;
        *self.execs.entry(owner.to_owned()).or_insert(0) += 1;
        Ok(())
    }

    /// An `exec_command` of `owner` ended.
    pub(crate) fn end_exec(&mut self, owner: &str) {
        if let Some(n) = self.execs.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.execs.remove(owner);
            }
        }
    }

    /// The session `id` if `owner` owns it. Another owner's session is answered exactly like a
    /// missing one. The one ownership rule: [`Core::get`] runs it, and so does the check the
    /// application makes before it audits a session tool (`sessions/gate.rs`).
    pub(crate) fn owned(&self, owner: &str, id: &str) -> Result<&Entry, ToolError> {
        match self.sessions.get(id) {
            Some(e) if e.owner == owner => Ok(e),
            _ => Err(ToolError::NoSuchSession),
        }
    }

    /// The session `id` if `owner` owns it ([`Core::owned`]), touched at `now` (a call is
    /// activity).
    pub(crate) fn get(
        &mut self,
        owner: &str,
        id: &str,
        now: Instant,
    ) -> Result<&mut Entry, ToolError> {
        self.owned(owner, id)?;
        let e = self.sessions.get_mut(id).ok_or(ToolError::NoSuchSession)?;
        e.last_access = now;
        Ok(e)
    }

    /// The session `id` whoever owns it (for the shell's own tasks).
    pub(crate) fn entry(&mut self, id: &str) -> Option<&mut Entry> {
        self.sessions.get_mut(id)
    }

    /// The session `id`, read only.
    pub(crate) fn entry_ref(&self, id: &str) -> Option<&Entry> {
        self.sessions.get(id)
    }

    /// Appends output to the session's ring (ignored once the session is forgotten).
    pub(crate) fn output(&mut self, id: &str, data: &[u8]) {
        if let Some(e) = self.sessions.get_mut(id) {
            e.ring.push(data);
        }
    }

    /// Reads `owner`'s session from `offset` (default: where the last read ended), at most `max`
    /// bytes, and moves the default cursor.
    pub(crate) fn read(
        &mut self,
        owner: &str,
        id: &str,
        offset: Option<u64>,
        max: usize,
        now: Instant,
    ) -> Result<(Slice, &Entry), ToolError> {
        let e = self.get(owner, id, now)?;
        let offset = offset.unwrap_or(e.cursor);
        let slice = e.ring.read(offset, max).ok_or_else(|| {
            ToolError::BadArgument(format!(
                "offset: past the end of the output ({})",
                e.ring.end()
            ))
        })?;
        e.cursor = slice.next_offset;
        Ok((slice, e))
    }

    /// Where `id` stands against its time limits at `now`.
    pub(crate) fn expiry(&self, id: &str, now: Instant) -> Expiry {
        let Some(e) = self.sessions.get(id) else {
            return Expiry::Gone;
        };
        let until =
            (e.created + self.limits.max_lifetime).min(e.last_access + self.limits.idle_timeout);
        if now >= until {
            Expiry::Expired
        } else {
            Expiry::Until(until)
        }
    }

    /// Forgets `id`.
    pub(crate) fn remove(&mut self, id: &str) -> Option<Entry> {
        self.sessions.remove(id)
    }

    /// The ids of `owner`'s sessions, oldest first.
    pub(crate) fn owned_by(&self, owner: &str) -> Vec<(&String, &Entry)> {
        let mut v: Vec<_> = self
            .sessions
            .iter()
            .filter(|(_, e)| e.owner == owner)
            .collect();
        v.sort_by_key(|(_, e)| e.created);
        v
    }

    /// Every session id.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.sessions.keys().cloned().collect()
    }

    /// The output bytes every ring holds now.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.sessions.values().map(|e| e.ring.len()).sum()
    }
}

/// A duration in whole milliseconds, for answers.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SessionLimits {
        SessionLimits {
            ring_bytes: 10,
            max_sessions: 3,
            max_sessions_per_owner: 2,
            buffer_cap: 30,
            exec_output_cap: 5,
            exec_concurrency_per_owner: 2,
            creation_burst: 100,
            idle_timeout: Duration::from_secs(10),
            max_lifetime: Duration::from_secs(100),
            ..SessionLimits::default()
        }
    }

    #[test]
    fn each_session_cap_is_named() {
        let now = Instant::now();
        let mut c = Core::new(small());
        c.open("a1".into(), "a", "x", now).expect("first");
        c.open("a2".into(), "a", "x", now).expect("second");
        assert_eq!(
            c.open("a3".into(), "a", "x", now),
            Err(ToolError::ResourceLimit("sessions per device"))
        );
        c.open("b1".into(), "b", "x", now).expect("third");
        assert_eq!(
            c.open("c1".into(), "c", "x", now),
            Err(ToolError::ResourceLimit("sessions"))
        );
        let mut tight = Core::new(SessionLimits {
            buffer_cap: 15,
            ..small()
        });
        tight.open("a1".into(), "a", "x", now).expect("fits");
        assert_eq!(
            tight.open("b1".into(), "b", "x", now),
            Err(ToolError::ResourceLimit("session buffers"))
        );
    }

    #[test]
    fn execs_reserve_buffers_and_count_per_owner() {
        let now = Instant::now();
        let mut c = Core::new(small());
        c.begin_exec("a", now).expect("1");
        c.begin_exec("a", now).expect("2");
        assert_eq!(
            c.begin_exec("a", now),
            Err(ToolError::ResourceLimit("exec concurrency"))
        );
        c.begin_exec("b", now).expect("another owner");
        // 3 execs × 10 bytes reserved = the whole cap: no session fits.
        assert_eq!(
            c.open("s".into(), "c", "x", now),
            Err(ToolError::ResourceLimit("session buffers"))
        );
        c.end_exec("a");
        c.begin_exec("a", now).expect("a slot came back");
    }

    #[test]
    fn the_creation_rate_refills_with_time() {
        let now = Instant::now();
        let mut c = Core::new(SessionLimits {
            creation_burst: 2,
            creation_refill: Duration::from_secs(1),
            exec_concurrency_per_owner: 100,
            buffer_cap: usize::MAX / 4,
            ..small()
        });
        c.begin_exec("a", now).expect("1");
        c.begin_exec("a", now).expect("2");
        assert_eq!(
            c.begin_exec("a", now),
            Err(ToolError::ResourceLimit("process creation rate"))
        );
        c.begin_exec("b", now).expect("buckets are per owner");
        let later = now + Duration::from_millis(1500);
        c.begin_exec("a", later).expect("one refilled");
        assert_eq!(
            c.begin_exec("a", later),
            Err(ToolError::ResourceLimit("process creation rate"))
        );
        c.begin_exec("a", now + Duration::from_secs(2))
            .expect("the half second counted");
    }

    #[test]
    fn admitting_takes_nothing_and_refuses_where_a_start_would() {
        let now = Instant::now();
        let mut c = Core::new(SessionLimits {
            creation_burst: 2,
            creation_refill: Duration::from_secs(1),
            ..small()
        });
        for _ in 0..10 {
            c.admits_session("a", now).expect("a check spends no token");
            c.admits_exec("a", now).expect("nor here");
        }
        c.open("a1".into(), "a", "x", now).expect("1");
        c.begin_exec("a", now).expect("2");
        let spent = Err(ToolError::ResourceLimit("process creation rate"));
        assert_eq!(c.admits_session("a", now), spent);
        assert_eq!(c.admits_exec("a", now), spent);
        assert_eq!(c.open("a2".into(), "a", "x", now), spent);
        let later = now + Duration::from_secs(1);
        c.admits_session("a", later).expect("refilled");
        c.open("a2".into(), "a", "x", later).expect("refilled");
        let l = later + Duration::from_secs(10);
        assert_eq!(
            c.admits_session("a", l),
            Err(ToolError::ResourceLimit("sessions per device"))
        );
    }

    #[test]
    fn an_ended_owner_starts_nothing_for_a_while() {
        let mut core = Core::new(small());
        let t0 = Instant::now();
        core.end_owner("relay:lead:ab", t0 + Duration::from_secs(10), t0);
        let refused = Err(ToolError::ResourceLimit("ended device"));
        assert_eq!(core.open("s1".into(), "relay:lead:ab", "ls", t0), refused);
        assert_eq!(core.begin_exec("relay:lead:ab", t0), refused);
        assert!(core.open("s2".into(), "relay:lead:cd", "ls", t0).is_ok());
        let later = t0 + Duration::from_secs(10);
        assert!(core.open("s3".into(), "relay:lead:ab", "ls", later).is_ok());
        core.end_owner("other", later, later);
        assert!(core.ended.is_empty(), "past ends are forgotten");
    }

    #[test]
    fn another_owners_session_is_a_missing_one() {
        let now = Instant::now();
        let mut c = Core::new(small());
        c.open("s".into(), "a", "x", now).expect("open");
        assert!(c.get("a", "s", now).is_ok());
        assert_eq!(c.get("b", "s", now).err(), Some(ToolError::NoSuchSession));
        assert_eq!(c.get("a", "t", now).err(), Some(ToolError::NoSuchSession));
    }

    #[test]
    fn idle_and_lifetime_expire_and_a_call_moves_the_idle_deadline() {
        let t0 = Instant::now();
        let mut c = Core::new(small());
        c.open("s".into(), "a", "x", t0).expect("open");
        assert_eq!(
            c.expiry("s", t0),
            Expiry::Until(t0 + Duration::from_secs(10))
        );
        let t9 = t0 + Duration::from_secs(9);
        c.get("a", "s", t9).expect("a call");
        assert_eq!(
            c.expiry("s", t0 + Duration::from_secs(12)),
            Expiry::Until(t9 + Duration::from_secs(10))
        );
        assert_eq!(c.expiry("s", t9 + Duration::from_secs(10)), Expiry::Expired);
        // Busy all along, still ends at the lifetime.
        for s in (10..100).step_by(5) {
            c.get("a", "s", t0 + Duration::from_secs(s)).expect("busy");
        }
        assert_eq!(
            c.expiry("s", t0 + Duration::from_secs(100)),
            Expiry::Expired
        );
        c.remove("s");
        assert_eq!(c.expiry("s", t0), Expiry::Gone);
    }

    #[test]
    fn reads_follow_the_cursor() {
        let now = Instant::now();
        let mut c = Core::new(small());
        c.open("s".into(), "a", "x", now).expect("open");
        c.output("s", b"hello");
        let (s, _) = c.read("a", "s", None, 3, now).expect("read");
        assert_eq!(s.text, "hel");
        let (s, _) = c.read("a", "s", None, 100, now).expect("read");
        assert_eq!((s.text.as_str(), s.next_offset), ("lo", 5));
        assert!(matches!(
            c.read("a", "s", Some(6), 1, now),
            Err(ToolError::BadArgument(_))
        ));
    }
}
