//! DUR, the one duration syntax of the CLI (SPEC §3.1): `Nm`, `Nh`, `Nd` or `Nw` — `30m`, `12h`,
//! `30d`, `2w`. Every command that takes a duration parses it here: device expiry (`collie pair
//! --expires`, `collie devices set-expiry`) and crew invites (`collie crew invite --expires`, whose
//! limit is lower: [`Dur::parse_up_to`] with [`INVITE_LIMIT`]).
//!
//! N is a decimal integer of at least 1 and the whole duration is at most 3650 days (5256000m,
//! 87600h, 521w). Nothing else is accepted: no other units (`5s`, `1y`), no spaces, no signs, no
//! fractions, no upper case. Leading zeros are harmless (`012h` is `12h`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The longest DUR accepted, in days.
pub const MAX_DAYS: u64 = 3650;

const MAX: Dur = Dur {
    count: 3650,
    unit: DurUnit::Days,
};

/// The longest a crew invite may stay valid (SPEC §3.1, §8).
pub const INVITE_LIMIT: Dur = Dur {
    count: 7,
    unit: DurUnit::Days,
};

/// The unit of a [`Dur`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurUnit {
    /// `m`: minutes.
    Minutes,
    /// `h`: hours.
    Hours,
    /// `d`: days of 24 hours.
    Days,
    /// `w`: weeks of 7 days.
    Weeks,
}

impl DurUnit {
    fn minutes(self) -> u64 {
        match self {
            DurUnit::Minutes => 1,
            DurUnit::Hours => 60,
            DurUnit::Days => 60 * 24,
            DurUnit::Weeks => 60 * 24 * 7,
        }
    }

    fn suffix(self) -> char {
        match self {
            DurUnit::Minutes => 'm',
            DurUnit::Hours => 'h',
            DurUnit::Days => 'd',
            DurUnit::Weeks => 'w',
        }
    }
}

/// A parsed DUR: a count of 1 or more and a unit, at most 3650 days in all. It keeps the unit so it
/// prints back as the user wrote it (without leading zeros).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Dur {
    count: u32,
    unit: DurUnit,
}

impl Dur {
    /// Parses `Nm`, `Nh`, `Nd` or `Nw`, at most 3650 days.
    pub fn parse(s: &str) -> Result<Dur, DurError> {
        Self::parse_up_to(s, MAX)
    }

    /// Parses a DUR that may be at most `limit` (itself at most 3650 days), e.g. an invite's
    /// [`INVITE_LIMIT`]. A longer one is refused with a message naming the limit.
    pub fn parse_up_to(s: &str, limit: Dur) -> Result<Dur, DurError> {
        let shown = || s.chars().take(32).collect::<String>();
        let limit = if limit.minutes() > MAX.minutes() {
            MAX
        } else {
            limit
        };
        let too_long = || DurError::TooLong {
            input: shown(),
            limit: limit.to_string(),
        };
        let mut chars = s.chars();
        let unit = match chars.next_back() {
            None => return Err(DurError::Empty),
            Some('m') => DurUnit::Minutes,
            Some('h') => DurUnit::Hours,
            Some('d') => DurUnit::Days,
            Some('w') => DurUnit::Weeks,
            Some(_) => return Err(DurError::Invalid(shown())),
        };
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(DurError::Invalid(shown()));
        }
        // All ASCII digits, so the only possible failure is overflow: certainly too long.
        let count: u64 = digits.parse().map_err(|_| too_long())?;
        if count == 0 {
            return Err(DurError::Zero(shown()));
        }
        if count > limit.minutes() / unit.minutes() {
            return Err(too_long());
        }
        let count = u32::try_from(count).map_err(|_| too_long())?;
        Ok(Dur { count, unit })
    }

    /// The count N (at least 1).
    pub fn count(self) -> u32 {
        self.count
    }

    /// The unit.
    pub fn unit(self) -> DurUnit {
        self.unit
    }

    fn minutes(self) -> u64 {
        u64::from(self.count) * self.unit.minutes()
    }

    /// The length as a [`time::Duration`] (days are 24 hours, weeks 7 days).
    pub fn as_duration(self) -> time::Duration {
        // At most 5,256,000 minutes: far inside i64.
        time::Duration::minutes(i64::try_from(self.minutes()).unwrap_or(i64::MAX))
    }

    /// The length as a [`std::time::Duration`].
    pub fn as_std(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.minutes() * 60)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.count, self.unit.suffix())
    }
}

impl FromStr for Dur {
    type Err = DurError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dur::parse(s)
    }
}

impl TryFrom<String> for Dur {
    type Error = DurError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Dur::parse(&s)
    }
}

impl From<Dur> for String {
    fn from(d: Dur) -> String {
        d.to_string()
    }
}

/// Why a DUR was refused. The messages quote the input (its first 32 characters) and say what to
/// write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurError {
    /// The empty string.
    #[error("empty duration: use Nm, Nh, Nd or Nw (e.g. 30m, 12h, 30d, 2w)")]
    Empty,
    /// Not digits followed by `m`, `h`, `d` or `w`.
    #[error("invalid duration \"{0}\": use Nm, Nh, Nd or Nw (e.g. 30m, 12h, 30d, 2w)")]
    Invalid(String),
    /// N is zero.
    #[error("invalid duration \"{0}\": N must be at least 1")]
    Zero(String),
    /// Longer than the limit (3650 days, or the command's own).
    #[error("duration \"{input}\" is too long: at most {limit}")]
    TooLong {
        /// The input as written (its first 32 characters).
        input: String,
        /// The longest accepted, e.g. `3650d` or `7d`.
        limit: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minutes(s: &str) -> i64 {
        Dur::parse(s).expect(s).as_duration().whole_minutes()
    }

    #[test]
    fn parses_the_four_units() {
        assert_eq!(minutes("30m"), 30);
        assert_eq!(minutes("12h"), 12 * 60);
        assert_eq!(minutes("30d"), 30 * 24 * 60);
        assert_eq!(minutes("2w"), 14 * 24 * 60);
        assert_eq!(minutes("1m"), 1);
        assert_eq!(minutes("012h"), 12 * 60);
        assert_eq!(
            Dur::parse("1m").expect("valid").as_std(),
            std::time::Duration::from_secs(60)
        );
    }

    #[test]
    fn the_limit_is_3650_days_in_any_unit() {
        assert_eq!(minutes("3650d"), 3650 * 24 * 60);
        assert_eq!(minutes("87600h"), 3650 * 24 * 60);
        assert_eq!(minutes("5256000m"), 3650 * 24 * 60);
        assert_eq!(minutes("521w"), 521 * 7 * 24 * 60);
        for too_long in [
            "3651d",
            "87601h",
            "5256001m",
            "522w",
            "99999999999999999999999999d",
        ] {
            assert!(
                matches!(Dur::parse(too_long), Err(DurError::TooLong { .. })),
                "{too_long}"
            );
        }
        let msg = Dur::parse("3651d").expect_err("too long").to_string();
        assert_eq!(msg, "duration \"3651d\" is too long: at most 3650d");
    }

    #[test]
    fn a_command_may_set_a_lower_limit() {
        assert_eq!(
            Dur::parse_up_to("7d", INVITE_LIMIT).expect("7d").as_std(),
            std::time::Duration::from_secs(7 * 86_400)
        );
        assert!(Dur::parse_up_to("10m", INVITE_LIMIT).is_ok());
        assert!(Dur::parse_up_to("168h", INVITE_LIMIT).is_ok());
        for too_long in ["8d", "169h", "2w", "10081m"] {
            let err = Dur::parse_up_to(too_long, INVITE_LIMIT).expect_err(too_long);
            assert_eq!(
                err.to_string(),
                format!("duration \"{too_long}\" is too long: at most 7d")
            );
        }
        // The same grammar: what `parse` refuses, `parse_up_to` refuses for the same reason.
        for bad in ["30s", "", "0m", "1.5h"] {
            assert_eq!(
                std::mem::discriminant(&Dur::parse_up_to(bad, INVITE_LIMIT).expect_err(bad)),
                std::mem::discriminant(&Dur::parse(bad).expect_err(bad)),
                "{bad}"
            );
        }
    }

    #[test]
    fn zero_is_refused() {
        for zero in ["0m", "0h", "0d", "0w", "000h"] {
            assert!(matches!(Dur::parse(zero), Err(DurError::Zero(_))), "{zero}");
        }
        assert_eq!(
            Dur::parse("0h").expect_err("zero").to_string(),
            "invalid duration \"0h\": N must be at least 1"
        );
    }

    #[test]
    fn other_shapes_are_refused_with_a_hint() {
        assert_eq!(Dur::parse(""), Err(DurError::Empty));
        for bad in [
            "5s", "5", "h", "m", "d", "12H", "5M", "2W", "1.5d", "-1d", "+1d", " 12h", "12h ",
            "12 h", "1d2h", "12hh", "٣d", "1y", "PT1H", "30mo",
        ] {
            assert!(
                matches!(Dur::parse(bad), Err(DurError::Invalid(_))),
                "{bad}"
            );
        }
        let msg = Dur::parse("5s").expect_err("seconds").to_string();
        assert_eq!(
            msg,
            "invalid duration \"5s\": use Nm, Nh, Nd or Nw (e.g. 30m, 12h, 30d, 2w)"
        );
        assert!(Dur::parse("")
            .expect_err("empty")
            .to_string()
            .contains("Nm, Nh, Nd or Nw"));
    }

    #[test]
    fn prints_back_and_serializes_as_a_string() {
        let d = Dur::parse("030d").expect("valid");
        assert_eq!(d.to_string(), "30d");
        assert_eq!((d.count(), d.unit()), (30, DurUnit::Days));
        assert_eq!(serde_json::to_string(&d).expect("serializes"), "\"30d\"");
        let back: Dur = serde_json::from_str("\"2w\"").expect("parses");
        assert_eq!(back.to_string(), "2w");
        assert_eq!(
            serde_json::from_str::<Dur>("\"45m\"")
                .expect("minutes")
                .to_string(),
            "45m"
        );
        assert!(serde_json::from_str::<Dur>("\"5s\"").is_err());
    }
}
