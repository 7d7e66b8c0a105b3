//! The lead's decisions for one accepted connection, without I/O: how long its opening may take,
//! how long a joined machine is given to read its reply and close, and when a member's link has
//! been silent too long. `link.rs` runs it inside tokio (its deadlines become `sleep_until`s); the
//! crew simulations run it on their virtual clock. Time is a [`Duration`] since an origin the
//! caller picks.

use std::time::Duration;

use super::{LEAD_SILENCE, OPENING_TIMEOUT};

/// Why the lead closes a connection (the reason its peer reads), by what happened.
pub mod reason {
    /// The opening did not come in time, did not decode, or its stream ended first.
    pub const NO_OPENING: &str = "no opening";
    /// The opening is of a kind this build does not know.
    pub const UNKNOWN_OPENING: &str = "unknown opening";
    /// The joined machine was given its time to read the reply.
    pub const JOIN_DONE: &str = "join done";
    /// A member's link was silent too long.
    pub const HEARTBEAT_MISSED: &str = "heartbeat missed";
    /// A member's link stream ended or carried a malformed frame.
    pub const LINK_ENDED: &str = "link ended";
}

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the opening (a join request or a hello).
    Opening,
    /// A join was answered; the machine reads the reply and closes.
    Joined,
    /// A member's link: its heartbeat is being heard.
    Linked,
}

/// One accepted connection's clock (see the module docs).
#[derive(Debug, Clone)]
pub struct Accepted {
    phase: Phase,
    deadline: Duration,
}

impl Accepted {
    /// A connection accepted at `now`: its opening must come within [`OPENING_TIMEOUT`].
    pub fn new(now: Duration) -> Self {
        Self {
            phase: Phase::Opening,
            deadline: now.saturating_add(OPENING_TIMEOUT),
        }
    }

    /// Where it stands.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// When [`Accepted::due`] next has something to say.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The join's reply was sent at `now`: the machine gets [`OPENING_TIMEOUT`] to close.
    pub fn joined(&mut self, now: Duration) {
        self.phase = Phase::Joined;
        self.deadline = now.saturating_add(OPENING_TIMEOUT);
    }

    /// The hello was answered at `now`: from here on the member must be heard every
    /// [`LEAD_SILENCE`].
    pub fn linked(&mut self, now: Duration) {
        self.phase = Phase::Linked;
        self.deadline = now.saturating_add(LEAD_SILENCE);
    }

    /// A frame arrived on the link's stream at `now`: a sign of life. Returns whether to echo a
    /// beat (only on a member's link).
    pub fn heard(&mut self, now: Duration) -> bool {
        if self.phase != Phase::Linked {
            return false;
        }
        self.deadline = now.saturating_add(LEAD_SILENCE);
        true
    }

    /// The reason to close the connection at `now`, if its deadline has passed.
    pub fn due(&self, now: Duration) -> Option<&'static str> {
        if now < self.deadline {
            return None;
        }
        Some(match self.phase {
            Phase::Opening => reason::NO_OPENING,
            Phase::Joined => reason::JOIN_DONE,
            Phase::Linked => reason::HEARTBEAT_MISSED,
        })
    }

    /// The link's stream ended, or carried a frame that does not read: the reason to close now,
    /// or `None` after a join (the machine closes by itself; [`Accepted::due`] ends the wait).
    pub fn stream_ended(&self) -> Option<&'static str> {
        match self.phase {
            Phase::Opening => Some(reason::NO_OPENING),
            Phase::Joined => None,
            Phase::Linked => Some(reason::LINK_ENDED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opening_must_come_in_time_and_a_link_must_be_heard() {
        let mut a = Accepted::new(Duration::ZERO);
        assert_eq!(a.due(OPENING_TIMEOUT - Duration::from_millis(1)), None);
        assert_eq!(a.due(OPENING_TIMEOUT), Some("no opening"));
        assert!(!a.heard(Duration::from_secs(1)), "no echo before the hello");
        a.linked(Duration::from_secs(1));
        let silent = Duration::from_secs(1) + LEAD_SILENCE;
        assert_eq!(a.due(silent), Some("heartbeat missed"));
        assert!(a.heard(Duration::from_secs(2)));
        assert_eq!(a.due(silent), None, "a beat moves the deadline");
        assert_eq!(a.stream_ended(), Some("link ended"));
        a.joined(silent);
        assert_eq!(a.due(silent + OPENING_TIMEOUT), Some("join done"));
        assert_eq!(a.stream_ended(), None, "a joined machine closes by itself");
        assert_eq!(Accepted::new(silent).stream_ended(), Some("no opening"));
    }
}
