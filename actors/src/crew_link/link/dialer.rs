//! The member's decisions for its link to the lead, without I/O: when to dial, how long an
//! attempt (dial, hello and its answer) may take, when to send a heartbeat, when the lead has been
//! silent too long, and how long to wait before the next attempt ([`Backoff`] with its jitter).
//! `link.rs` runs it inside tokio; the crew simulations run it on their virtual clock with the
//! jitter drawn from their seeded generator. Time is a [`Duration`] since an origin the caller
//! picks; the random fraction is passed in.

use std::time::Duration;

use super::{BEAT_EVERY, MEMBER_SILENCE, OPENING_TIMEOUT};
use crate::crew_link::backoff::Backoff;

/// Where the link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting to dial at `at`.
    Waiting {
        /// When to dial.
        at: Duration,
    },
    /// Dialing and saying hello, until `deadline`.
    Opening {
        /// When the attempt is given up.
        deadline: Duration,
    },
    /// Linked: a beat is due at `beat`, the lead must be heard before `silence`.
    Linked {
        /// When the next heartbeat goes out.
        beat: Duration,
        /// When the link is given up if the lead stays silent.
        silence: Duration,
    },
}

/// What is due at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing yet.
    Nothing,
    /// Dial now ([`Dialer::dial`]).
    Dial,
    /// Send a heartbeat ([`Dialer::beat_sent`]).
    Beat,
    /// Give up the attempt or the link ([`Dialer::lost`]), for this reason.
    GiveUp(&'static str),
}

/// The member's link clock (see the module docs).
#[derive(Debug, Clone)]
pub struct Dialer {
    phase: Phase,
    backoff: Backoff,
}

impl Dialer {
    /// A link that dials at `now`.
    pub fn new(now: Duration) -> Self {
        Self {
            phase: Phase::Waiting { at: now },
            backoff: Backoff::default(),
        }
    }

    /// Where it stands.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The next time [`Dialer::due`] has something to say.
    pub fn next(&self) -> Duration {
        match self.phase {
            Phase::Waiting { at } => at,
            Phase::Opening { deadline } => deadline,
            Phase::Linked { beat, silence } => beat.min(silence),
        }
    }

    /// What is due at `now`.
    pub fn due(&self, now: Duration) -> Due {
        match self.phase {
            Phase::Waiting { at } if at <= now => Due::Dial,
            Phase::Opening { deadline } if deadline <= now => Due::GiveUp("timed out"),
            Phase::Linked { silence, .. } if silence <= now => Due::GiveUp("heartbeat missed"),
            Phase::Linked { beat, .. } if beat <= now => Due::Beat,
            _ => Due::Nothing,
        }
    }

    /// An attempt starts at `now`; returns its deadline ([`OPENING_TIMEOUT`] for the dial, the
    /// hello and its answer together).
    pub fn dial(&mut self, now: Duration) -> Duration {
        let deadline = now.saturating_add(OPENING_TIMEOUT);
        self.phase = Phase::Opening { deadline };
        deadline
    }

    /// The lead answered the hello at `now`: the backoff starts over, a beat goes out at once and
    /// the lead must be heard within [`MEMBER_SILENCE`].
    pub fn linked(&mut self, now: Duration) {
        self.backoff.reset();
        self.phase = Phase::Linked {
            beat: now,
            silence: now.saturating_add(MEMBER_SILENCE),
        };
    }

    /// A frame from the lead arrived at `now` on the link's stream.
    pub fn heard(&mut self, now: Duration) {
        if let Phase::Linked { silence, .. } = &mut self.phase {
            *silence = now.saturating_add(MEMBER_SILENCE);
        }
    }

    /// A heartbeat went out at `now`: the next is due [`BEAT_EVERY`] after the one that was due
    /// (as a tokio interval ticks), or after `now` if the member fell behind.
    pub fn beat_sent(&mut self, now: Duration) {
        if let Phase::Linked { beat, .. } = &mut self.phase {
            let next = beat.saturating_add(BEAT_EVERY);
            *beat = if next <= now {
                now.saturating_add(BEAT_EVERY)
            } else {
                next
            };
        }
    }

    /// The attempt failed or the link ended at `now`: the next dial waits for the backoff's delay
    /// (`jitter` is a fraction in `[0, 1)`). Returns when to dial again.
    pub fn lost(&mut self, now: Duration, jitter: f64) -> Duration {
        self.lost_within(now, jitter, Duration::MAX)
    }

    /// [`Dialer::lost`], but the next dial waits at most `most` (a deputy redials often, to see
    /// its lead come back; the backoff still counts the failure).
    pub fn lost_within(&mut self, now: Duration, jitter: f64, most: Duration) -> Duration {
        let at = now.saturating_add(self.backoff.next_delay(jitter).min(most));
        self.phase = Phase::Waiting { at };
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crew_link::backoff::{BASE, CAP};

    #[test]
    fn dial_link_beat_and_back_off() {
        let zero = Duration::ZERO;
        let mut d = Dialer::new(zero);
        assert_eq!(d.due(zero), Due::Dial);
        let deadline = d.dial(zero);
        assert_eq!(d.due(deadline), Due::GiveUp("timed out"));
        let again = d.lost(deadline, 1.0);
        assert_eq!(again, deadline + BASE);
        let again = d.lost(again, 1.0);
        assert_eq!(again, deadline + BASE + 2 * BASE, "the delay doubles");
        d.dial(again);
        d.linked(again);
        assert_eq!(d.due(again), Due::Beat);
        d.beat_sent(again);
        assert_eq!(d.next(), again + BEAT_EVERY);
        assert_eq!(
            d.due(again + MEMBER_SILENCE),
            Due::GiveUp("heartbeat missed")
        );
        d.heard(again + BEAT_EVERY);
        assert_ne!(
            d.due(again + MEMBER_SILENCE),
            Due::GiveUp("heartbeat missed")
        );
        let at = d.lost(again + MEMBER_SILENCE, 1.0);
        assert_eq!(
            at,
            again + MEMBER_SILENCE + BASE,
            "a link resets the backoff"
        );
        for _ in 0..40 {
            let from = d.next();
            assert!(d.lost(from, 0.5) - from <= CAP);
        }
        let from = d.next();
        let most = Duration::from_secs(2);
        assert_eq!(d.lost_within(from, 1.0, most), from + most, "capped");
        assert_eq!(d.lost(from, 1.0), from + CAP, "the failures still count");
    }
}
