//! The pairing limits (SPEC §4.2), as pure counters fed with `now`.
//!
//! - **Per code**: five failed attempts invalidate the pending code ([`CodeFailures`]).
//! - **Per source**: more than ten attempts from one source address within a minute are refused
//!   with `Retry-After: 60` ([`SourceLimiter`]). The minute is a fixed window that opens at the
//!   source's first attempt; every attempt counts, right or wrong, and so does one that is refused.
//! - **Source**: the peer address, except behind a loopback reverse proxy ([`pairing_source`]).
//!
//! Everything lives in memory and is lost on restart, which only ever loosens the limits for a
//! moment; the code itself is in memory too and does not survive a restart either.
//!
//! **Memory bound.** At most [`MAX_TRACKED_SOURCES`] sources are tracked. Windows that have ended are
//! dropped on every call; when the map is still full, a new source evicts the source whose window
//! opened first. An attacker must therefore send from more than 4096 addresses within one minute to
//! reset one of them early, and even then the per-code limit still allows only five guesses at the
//! 40-bit code. Each call costs amortized O(1): windows are kept in opening order beside the map.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use time::{Duration, OffsetDateTime};

/// Failed attempts that invalidate a pending code.
pub const MAX_CODE_FAILURES: u32 = 5;

/// Attempts one source may make per window; the next one is refused.
pub const MAX_ATTEMPTS_PER_SOURCE: u32 = 10;

/// Length of a source's window.
pub const SOURCE_WINDOW: Duration = Duration::minutes(1);

/// What a refused source is told to wait (`Retry-After`), in seconds.
pub const RETRY_AFTER_SECS: u64 = 60;

/// Sources tracked at once (see the module doc).
pub const MAX_TRACKED_SOURCES: usize = 4096;

/// Failed attempts against one pending code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeFailures(u32);

impl CodeFailures {
    /// Records one failed attempt; true when the code is now invalid.
    pub fn record(&mut self) -> bool {
        self.0 = self.0.saturating_add(1);
        self.exhausted()
    }

    /// Whether the code has seen [`MAX_CODE_FAILURES`] failures.
    pub fn exhausted(self) -> bool {
        self.0 >= MAX_CODE_FAILURES
    }

    /// Failures so far.
    pub fn count(self) -> u32 {
        self.0
    }
}

/// A source that made too many attempts; answer 429 with `Retry-After: retry_after_secs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimited {
    /// Seconds to wait: always [`RETRY_AFTER_SECS`].
    pub retry_after_secs: u64,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    opened: OffsetDateTime,
    attempts: u32,
}

/// Attempt counters per source address, bounded in memory.
#[derive(Debug)]
pub struct SourceLimiter {
    windows: HashMap<IpAddr, Window>,
    /// Sources in the order their current window opened (oldest first), with that opening time.
    opened: VecDeque<(IpAddr, OffsetDateTime)>,
    cap: usize,
    last_now: Option<OffsetDateTime>,
}

impl Default for SourceLimiter {
    fn default() -> Self {
        SourceLimiter::new()
    }
}

impl SourceLimiter {
    /// A limiter tracking at most [`MAX_TRACKED_SOURCES`] sources.
    pub fn new() -> SourceLimiter {
        SourceLimiter::with_cap(MAX_TRACKED_SOURCES)
    }

    /// A limiter tracking at most `cap` sources (at least one).
    pub fn with_cap(cap: usize) -> SourceLimiter {
        SourceLimiter {
            windows: HashMap::new(),
            opened: VecDeque::new(),
            cap: cap.max(1),
            last_now: None,
        }
    }

    /// Counts one attempt from `source` at `now`; refused when it is more than
    /// [`MAX_ATTEMPTS_PER_SOURCE`] in the source's current window.
    ///
    /// IPv4-mapped IPv6 addresses count as their IPv4 address.
    pub fn attempt(&mut self, source: IpAddr, now: OffsetDateTime) -> Result<(), RateLimited> {
        let source = source.to_canonical();
        self.advance(now);
        let window = match self.windows.get_mut(&source) {
            Some(w) => w,
            None => {
                while self.windows.len() >= self.cap && !self.opened.is_empty() {
                    self.evict_oldest();
                }
                self.opened.push_back((source, now));
                self.windows.entry(source).or_insert(Window {
                    opened: now,
                    attempts: 0,
                })
            }
        };
        window.attempts = window.attempts.saturating_add(1);
        if window.attempts > MAX_ATTEMPTS_PER_SOURCE {
            Err(RateLimited {
                retry_after_secs: RETRY_AFTER_SECS,
            })
        } else {
            Ok(())
        }
    }

    /// Number of sources currently tracked.
    pub fn tracked(&self) -> usize {
        self.windows.len()
    }

    /// Drops the windows that have ended by `now`. A clock that went backwards forgets every
    /// window (loosening the limit for at most a minute) so the opening order stays sorted.
    fn advance(&mut self, now: OffsetDateTime) {
        if self.last_now.is_some_and(|last| now < last) {
            self.windows.clear();
            self.opened.clear();
        }
        self.last_now = Some(now);
        while let Some(&(_, opened)) = self.opened.front() {
            if now - opened < SOURCE_WINDOW {
                break;
            }
            self.evict_oldest();
        }
    }

    fn evict_oldest(&mut self) {
        if let Some((ip, opened)) = self.opened.pop_front() {
            if self.windows.get(&ip).is_some_and(|w| w.opened == opened) {
                self.windows.remove(&ip);
            }
        }
    }
}

/// The source address a pairing attempt is counted against (SPEC §4.2): the peer address, except
/// when the peer is loopback (a local reverse proxy such as `tailscale serve`) and the request carries
/// `X-Forwarded-For`; then the last entry of that header, the address the proxy itself saw.
///
/// `x_forwarded_for` is the header's value; when a request carries the header more than once the
/// caller joins the values with `,` in order, so "last" is the last entry of the last header. An
/// entry may be a bare address or `address:port` / `[v6]:port`. When the last entry does not parse
/// (empty, `unknown`, garbage), the peer address is used: every such request then shares the
/// proxy's one budget, which is the conservative reading.
pub fn pairing_source(peer: IpAddr, x_forwarded_for: Option<&str>) -> IpAddr {
    let peer = peer.to_canonical();
    if !peer.is_loopback() {
        return peer;
    }
    x_forwarded_for
        .and_then(|h| h.rsplit(',').next())
        .and_then(|last| parse_entry(last.trim()))
        .map_or(peer, |ip| ip.to_canonical())
}

fn parse_entry(s: &str) -> Option<IpAddr> {
    s.parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<std::net::SocketAddr>().ok().map(|sa| sa.ip()))
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use time::macros::datetime;

    use super::*;

    const T0: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    fn ip(s: &str) -> IpAddr {
        s.parse().expect(s)
    }

    #[test]
    fn five_failures_exhaust_a_code() {
        let mut f = CodeFailures::default();
        for n in 1..5 {
            assert!(!f.record(), "failure {n} must not invalidate");
        }
        assert!(f.record(), "the fifth failure invalidates");
        assert!(f.exhausted());
        assert_eq!(f.count(), 5);
    }

    #[test]
    fn the_eleventh_attempt_in_a_minute_is_refused_with_60s() {
        let mut l = SourceLimiter::new();
        let a = ip("203.0.113.7");
        for n in 0..10 {
            assert_eq!(
                l.attempt(a, T0 + Duration::seconds(n)),
                Ok(()),
                "attempt {}",
                n + 1
            );
        }
        assert_eq!(
            l.attempt(a, T0 + Duration::seconds(10)),
            Err(RateLimited {
                retry_after_secs: 60
            })
        );
        // Still refused to the end of the window, however many times it asks.
        for _ in 0..50 {
            assert!(l.attempt(a, T0 + Duration::seconds(59)).is_err());
        }
    }

    #[test]
    fn another_source_is_not_affected() {
        let mut l = SourceLimiter::new();
        let a = ip("203.0.113.7");
        let b = ip("203.0.113.8");
        for _ in 0..11 {
            let _ = l.attempt(a, T0);
        }
        assert!(l.attempt(a, T0).is_err());
        for _ in 0..10 {
            assert_eq!(l.attempt(b, T0), Ok(()));
        }
        assert!(l.attempt(b, T0).is_err());
    }

    #[test]
    fn counters_reset_after_the_minute() {
        let mut l = SourceLimiter::new();
        let a = ip("2001:db8::1");
        for _ in 0..10 {
            l.attempt(a, T0).expect("within the limit");
        }
        assert!(l.attempt(a, T0 + Duration::seconds(59)).is_err());
        let later = T0 + SOURCE_WINDOW;
        for _ in 0..10 {
            assert_eq!(l.attempt(a, later), Ok(()));
        }
        assert!(l.attempt(a, later).is_err());
    }

    #[test]
    fn mapped_ipv4_counts_as_ipv4() {
        let mut l = SourceLimiter::new();
        for _ in 0..10 {
            l.attempt(ip("198.51.100.1"), T0).expect("within the limit");
        }
        assert!(l.attempt(ip("::ffff:198.51.100.1"), T0).is_err());
    }

    #[test]
    fn memory_is_bounded_under_a_flood_of_sources() {
        let mut l = SourceLimiter::with_cap(100);
        for n in 0..10_000u32 {
            let src = IpAddr::V6(Ipv6Addr::from(u128::from(n) + 1));
            l.attempt(src, T0).expect("a new source is allowed");
            assert!(l.tracked() <= 100);
            assert!(l.opened.len() <= 100);
        }
        assert_eq!(l.tracked(), 100);
        // The newest sources are the ones kept.
        let newest = IpAddr::V6(Ipv6Addr::from(10_000u128));
        assert_eq!(l.windows.get(&newest).map(|w| w.attempts), Some(1));
    }

    #[test]
    fn ended_windows_are_dropped() {
        let mut l = SourceLimiter::new();
        for n in 0..50u8 {
            l.attempt(IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)), T0)
                .expect("allowed");
        }
        assert_eq!(l.tracked(), 50);
        l.attempt(ip("10.1.0.1"), T0 + Duration::seconds(61))
            .expect("allowed");
        assert_eq!(l.tracked(), 1);
        assert_eq!(l.opened.len(), 1);
    }

    #[test]
    fn a_clock_going_backwards_forgets_windows() {
        let mut l = SourceLimiter::new();
        let a = ip("203.0.113.7");
        for _ in 0..11 {
            let _ = l.attempt(a, T0);
        }
        assert!(l.attempt(a, T0).is_err());
        assert_eq!(l.attempt(a, T0 - Duration::seconds(5)), Ok(()));
    }

    #[test]
    fn source_is_the_peer_when_the_peer_is_not_loopback() {
        let peer = ip("100.64.0.9");
        assert_eq!(pairing_source(peer, None), peer);
        assert_eq!(pairing_source(peer, Some("203.0.113.7")), peer);
        assert_eq!(pairing_source(peer, Some("1.1.1.1, 203.0.113.7")), peer);
        let lan6 = ip("fd00::5");
        assert_eq!(pairing_source(lan6, Some("::1")), lan6);
    }

    #[test]
    fn source_is_the_last_forwarded_entry_behind_a_loopback_proxy() {
        for lo in ["127.0.0.1", "127.0.0.53", "::1", "::ffff:127.0.0.1"] {
            let peer = ip(lo);
            assert_eq!(
                pairing_source(peer, Some("203.0.113.7")),
                ip("203.0.113.7"),
                "{lo}"
            );
            // A client can prepend anything; only the proxy's own (last) entry counts.
            assert_eq!(
                pairing_source(peer, Some("10.9.9.9, 198.51.100.2 ,203.0.113.7")),
                ip("203.0.113.7")
            );
            assert_eq!(
                pairing_source(peer, Some("1.2.3.4,2001:db8::7")),
                ip("2001:db8::7")
            );
            assert_eq!(
                pairing_source(peer, Some("203.0.113.7:5123")),
                ip("203.0.113.7")
            );
            assert_eq!(
                pairing_source(peer, Some("[2001:db8::7]:443")),
                ip("2001:db8::7")
            );
            assert_eq!(
                pairing_source(peer, Some("::ffff:203.0.113.7")),
                ip("203.0.113.7")
            );
        }
    }

    #[test]
    fn source_falls_back_to_the_peer_when_the_header_is_missing_or_unreadable() {
        let peer = ip("127.0.0.1");
        assert_eq!(pairing_source(peer, None), peer);
        for bad in [
            "",
            " ",
            "unknown",
            "203.0.113.7, ",
            "203.0.113.7,garbage",
            "999.1.1.1",
        ] {
            assert_eq!(pairing_source(peer, Some(bad)), peer, "{bad:?}");
        }
    }
}
