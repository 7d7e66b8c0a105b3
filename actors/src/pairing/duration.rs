//! DUR, the duration syntax of the CLI (SPEC §3.1): `Nh`, `Nd` or `Nw` — `12h`, `30d`, `2w`.
//!
//! N is a decimal integer of at least 1 and the whole duration is at most 3650 days (87600h, 521w).
//! Nothing else is accepted: no other units (`5m` is not five minutes or months), no spaces, no signs,
//! no fractions. Leading zeros are harmless (`012h` is `12h`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The longest DUR accepted, in days.
pub const MAX_DAYS: u64 = 3650;

const MAX_HOURS: u64 = MAX_DAYS * 24;

/// The unit of a [`Dur`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurUnit {
    /// `h`: hours.
    Hours,
    /// `d`: days of 24 hours.
    Days,
    /// `w`: weeks of 7 days.
    Weeks,
}

impl DurUnit {
    fn hours(self) -> u64 {
        match self {
            DurUnit::Hours => 1,
            DurUnit::Days => 24,
            DurUnit::Weeks => 24 * 7,
        }
    }

    fn suffix(self) -> char {
        match self {
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
    /// Parses `Nh`, `Nd` or `Nw`.
    pub fn parse(s: &str) -> Result<Dur, DurError> {
        let shown = || s.chars().take(32).collect::<String>();
        let mut chars = s.chars();
        let unit = match chars.next_back() {
            None => return Err(DurError::Empty),
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
        let count: u64 = digits.parse().map_err(|_| DurError::TooLong(shown()))?;
        if count == 0 {
            return Err(DurError::Zero(shown()));
        }
        if count > MAX_HOURS / unit.hours() {
            return Err(DurError::TooLong(shown()));
        }
        let count = u32::try_from(count).map_err(|_| DurError::TooLong(shown()))?;
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

    /// The length as a [`time::Duration`] (days are 24 hours, weeks 7 days).
    pub fn as_duration(self) -> time::Duration {
        // At most 87600 hours: far inside i64.
        time::Duration::hours(i64::from(self.count) * self.unit.hours() as i64)
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
    #[error("empty duration: use Nh, Nd or Nw (e.g. 12h, 30d, 2w)")]
    Empty,
    /// Not digits followed by `h`, `d` or `w`.
    #[error("invalid duration \"{0}\": use Nh, Nd or Nw (e.g. 12h, 30d, 2w)")]
    Invalid(String),
    /// N is zero.
    #[error("invalid duration \"{0}\": N must be at least 1")]
    Zero(String),
    /// Longer than 3650 days.
    #[error("duration \"{0}\" is too long: at most 3650d")]
    TooLong(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hours(s: &str) -> i64 {
        Dur::parse(s).expect(s).as_duration().whole_hours()
    }

    #[test]
    fn parses_the_three_units() {
        assert_eq!(hours("12h"), 12);
        assert_eq!(hours("30d"), 30 * 24);
        assert_eq!(hours("2w"), 14 * 24);
        assert_eq!(hours("1h"), 1);
        assert_eq!(hours("012h"), 12);
    }

    #[test]
    fn the_limit_is_3650_days_in_any_unit() {
        assert_eq!(hours("3650d"), 3650 * 24);
        assert_eq!(hours("87600h"), 3650 * 24);
        assert_eq!(hours("521w"), 521 * 7 * 24);
        for too_long in ["3651d", "87601h", "522w", "99999999999999999999999999d"] {
            assert!(
                matches!(Dur::parse(too_long), Err(DurError::TooLong(_))),
                "{too_long}"
            );
        }
        let msg = Dur::parse("3651d").expect_err("too long").to_string();
        assert_eq!(msg, "duration \"3651d\" is too long: at most 3650d");
    }

    #[test]
    fn zero_is_refused() {
        for zero in ["0h", "0d", "0w", "000h"] {
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
            "5m", "5", "h", "d", "12H", "2W", "1.5d", "-1d", "+1d", " 12h", "12h ", "12 h", "1d2h",
            "12hh", "٣d", "1y", "PT1H",
        ] {
            assert!(
                matches!(Dur::parse(bad), Err(DurError::Invalid(_))),
                "{bad}"
            );
        }
        let msg = Dur::parse("5m").expect_err("minutes").to_string();
        assert_eq!(
            msg,
            "invalid duration \"5m\": use Nh, Nd or Nw (e.g. 12h, 30d, 2w)"
        );
        assert!(Dur::parse("")
            .expect_err("empty")
            .to_string()
            .contains("Nh, Nd or Nw"));
    }

    #[test]
    fn prints_back_and_serializes_as_a_string() {
        let d = Dur::parse("030d").expect("valid");
        assert_eq!(d.to_string(), "30d");
        assert_eq!((d.count(), d.unit()), (30, DurUnit::Days));
        assert_eq!(serde_json::to_string(&d).expect("serializes"), "\"30d\"");
        let back: Dur = serde_json::from_str("\"2w\"").expect("parses");
        assert_eq!(back.to_string(), "2w");
        assert!(serde_json::from_str::<Dur>("\"5m\"").is_err());
    }
}
