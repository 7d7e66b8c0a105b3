//! When the deputy's standby door serves a lead's device (SPEC §13): a pure rule over whether the
//! link to the lead is up and since when, which the bridge runs on tokio's clock and the crew
//! simulations on their virtual one.

use std::time::Duration;

use tokio::time::Instant;

/// How long the deputy must be unable to reach its lead before it stands in. Above the member's
/// own silence limit (5 s without a word from the lead ends its link), so a lead that merely
/// paused is not replaced, and short enough that a phone waits at most about twice this.
pub const STAND_IN_AFTER: Duration = Duration::from_secs(10);

/// What the door does with a lead's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The lead is up (or has been out of reach for less than [`STAND_IN_AFTER`]): the phone is
    /// sent back to it.
    Standby,
    /// The lead has been out of reach for [`STAND_IN_AFTER`]: the deputy serves its devices.
    StandingIn,
}

impl Door {
    /// The door at `now`, for a link that is `up` (or not) since `since`.
    pub fn at(up: bool, since: Instant, now: Instant) -> Door {
        if !up && now.saturating_duration_since(since) >= STAND_IN_AFTER {
            Door::StandingIn
        } else {
            Door::Standby
        }
    }

    /// `standing by` or `standing in`, as `collie crew status` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Standby => "standing by",
            Door::StandingIn => "standing in",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deputy_stands_in_only_after_the_lead_was_gone_long_enough() {
        let t0 = Instant::now();
        let just_before = t0 + STAND_IN_AFTER - Duration::from_millis(1);
        assert_eq!(Door::at(false, t0, just_before), Door::Standby);
        assert_eq!(Door::at(false, t0, t0 + STAND_IN_AFTER), Door::StandingIn);
        assert_eq!(
            Door::at(true, t0, t0 + STAND_IN_AFTER * 10),
            Door::Standby,
            "a reachable lead is never stood in for"
        );
        assert_eq!(
            Door::at(false, t0 + STAND_IN_AFTER, t0),
            Door::Standby,
            "a time before the change counts as none"
        );
    }
}
