//! The lead's decisions for one accepted connection, without I/O: how long its opening may take,
//! what each frame on the link's stream means (the opening, then a member's beats, echoed), how
//! long a joined machine is given to read its reply and close, and when a member's link has been
//! silent too long. `link.rs` runs it inside tokio (its deadlines become `sleep_until`s); the
//! crew simulations run it on their virtual clock. Time is a [`Duration`] since an origin the
//! caller picks.

use std::time::Duration;

use collie_crew::hello::Opening;
use collie_crew::wire;

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

/// What a frame on the link's stream asks of the lead ([`Accepted::frame`]).
#[derive(Debug)]
pub enum Heard {
    /// The opening: answer the join or the hello, then call [`Accepted::joined`] or
    /// [`Accepted::linked`].
    Opening(Opening),
    /// A sign of life on a member's link: echo a beat.
    Echo,
    /// Nothing to do (after a join the lead reads no more).
    Nothing,
    /// Close the connection with this reason.
    Close(&'static str),
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

    /// A well-framed `payload` arrived on the link's stream at `now`. First the opening: a hello
    /// or a join request; one of a kind this build does not know, or one that does not decode,
    /// closes the connection. On a member's link any frame is a sign of life, echoed (beats carry
    /// nothing the lead reads).
    pub fn frame(&mut self, now: Duration, payload: &[u8]) -> Heard {
        match self.phase {
            Phase::Opening => match wire::decode::<Opening>(payload) {
                Ok(Opening::Unknown) => Heard::Close(reason::UNKNOWN_OPENING),
                Ok(opening) => Heard::Opening(opening),
                Err(_) => Heard::Close(reason::NO_OPENING),
            },
            Phase::Joined => Heard::Nothing,
            Phase::Linked => {
                self.deadline = now.saturating_add(LEAD_SILENCE);
                Heard::Echo
            }
        }
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

    fn beat() -> Vec<u8> {
        wire::encode(&super::super::LinkFrame::Beat).expect("a beat encodes")
    }

    #[test]
    fn an_opening_must_come_in_time_and_a_link_must_be_heard() {
        let mut a = Accepted::new(Duration::ZERO);
        assert_eq!(a.due(OPENING_TIMEOUT - Duration::from_millis(1)), None);
        assert_eq!(a.due(OPENING_TIMEOUT), Some("no opening"));
        a.linked(Duration::from_secs(1));
        let silent = Duration::from_secs(1) + LEAD_SILENCE;
        assert_eq!(a.due(silent), Some("heartbeat missed"));
        assert!(matches!(
            a.frame(Duration::from_secs(2), &beat()),
            Heard::Echo
        ));
        assert_eq!(a.due(silent), None, "a beat moves the deadline");
        assert_eq!(a.stream_ended(), Some("link ended"));
        a.joined(silent);
        assert!(
            matches!(a.frame(silent, &beat()), Heard::Nothing),
            "nothing read after a join"
        );
        assert_eq!(a.due(silent + OPENING_TIMEOUT), Some("join done"));
        assert_eq!(a.stream_ended(), None, "a joined machine closes by itself");
        assert_eq!(Accepted::new(silent).stream_ended(), Some("no opening"));
    }

    #[test]
    fn the_first_frame_is_the_opening_and_nothing_else_opens() {
        let later = Duration::from_secs(1);
        let mut a = Accepted::new(Duration::ZERO);
        // A beat where the opening belongs does not read as one, and moves no deadline.
        assert!(matches!(
            a.frame(later, &beat()),
            Heard::Close("no opening")
        ));
        assert_eq!(a.deadline(), OPENING_TIMEOUT);
        // An opening of a kind a later build may add.
        let unknown = wire::encode(&9u32).expect("a number encodes");
        assert!(matches!(
            a.frame(later, &unknown),
            Heard::Close("unknown opening")
        ));
        let join = collie_crew::hello::JoinRequest {
            join_secret: [7; 32].into(),
            name: "build-01".into(),
            member_pin: [8; 32].into(),
        };
        let payload = wire::encode(&Opening::Join(join.clone())).expect("a join encodes");
        match a.frame(later, &payload) {
            Heard::Opening(Opening::Join(got)) => assert_eq!(got, join),
            other => panic!("a join request is an opening, got {other:?}"),
        }
    }
}
