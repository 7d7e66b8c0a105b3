//! The pending pairing code (SPEC §4.1, §4.2, §4.5): at most one at a time, in memory only.
//!
//! It carries what `collie pair --tier T --expires DUR` chose; the device's expiry is counted from
//! the moment the phone claims the code, not from when the code was printed.

use time::{Duration, OffsetDateTime};

use super::code::PairingCode;
use super::duration::Dur;
use super::limiter::CodeFailures;
use super::tier::Tier;

/// How long a code is valid after it is issued.
pub const CODE_TTL: Duration = Duration::minutes(10);

/// The code `collie pair` printed, waiting for a phone.
#[derive(Clone, Debug)]
pub struct PendingCode {
    code: PairingCode,
    tier: Tier,
    expires: Option<Dur>,
    valid_until: OffsetDateTime,
    failures: CodeFailures,
}

/// What comparing a presented code with the pending one found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code matches and is still valid.
    Match,
    /// Wrong or malformed; the code is still pending.
    Wrong,
    /// Wrong, and that was the fifth failure: the code is now invalid.
    Invalidated,
    /// The code was already past its ten minutes or invalidated; nothing was compared.
    Dead,
}

impl PendingCode {
    /// A code issued at `now`, valid for [`CODE_TTL`].
    pub fn new(code: PairingCode, tier: Tier, expires: Option<Dur>, now: OffsetDateTime) -> Self {
        PendingCode {
            code,
            tier,
            expires,
            valid_until: now + CODE_TTL,
            failures: CodeFailures::default(),
        }
    }

    /// The code itself.
    pub fn code(&self) -> &PairingCode {
        &self.code
    }

    /// The tier the paired device will hold.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// The device's lifetime, counted from the claim; `None`: it never expires.
    pub fn expires(&self) -> Option<Dur> {
        self.expires
    }

    /// The first instant at which the code is no longer accepted.
    pub fn valid_until(&self) -> OffsetDateTime {
        self.valid_until
    }

    /// Failed attempts so far.
    pub fn failures(&self) -> CodeFailures {
        self.failures
    }

    /// Whether the code can still be claimed at `now`: within its ten minutes and fewer than five
    /// failures.
    pub fn is_live(&self, now: OffsetDateTime) -> bool {
        now < self.valid_until && !self.failures.exhausted()
    }

    /// Compares `presented` (as the phone sent it) with the code in constant time, counting a
    /// failure when it does not match.
    pub fn check(&mut self, presented: &str, now: OffsetDateTime) -> CodeCheck {
        if !self.is_live(now) {
            return CodeCheck::Dead;
        }
        let matches = PairingCode::normalize(presented).is_ok_and(|c| c.ct_eq(&self.code));
        if matches {
            CodeCheck::Match
        } else if self.failures.record() {
            CodeCheck::Invalidated
        } else {
            CodeCheck::Wrong
        }
    }

    /// The device's expiry for a claim at `now`.
    pub fn device_expiry(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        self.expires.map(|d| now + d.as_duration())
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const T0: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    fn pending(expires: Option<&str>) -> PendingCode {
        let code = PairingCode::normalize("7K3Q-M9XT").expect("valid");
        PendingCode::new(
            code,
            Tier::Files,
            expires.map(|s| Dur::parse(s).expect(s)),
            T0,
        )
    }

    #[test]
    fn valid_for_ten_minutes() {
        let mut p = pending(None);
        assert_eq!(p.valid_until(), T0 + Duration::minutes(10));
        assert!(p.is_live(T0 + Duration::minutes(10) - Duration::nanoseconds(1)));
        assert!(!p.is_live(T0 + Duration::minutes(10)));
        assert_eq!(
            p.check("7K3QM9XT", T0 + Duration::seconds(599)),
            CodeCheck::Match
        );
        assert_eq!(
            p.check("7K3QM9XT", T0 + Duration::seconds(600)),
            CodeCheck::Dead
        );
    }

    #[test]
    fn five_failures_invalidate_even_the_right_code() {
        let mut p = pending(None);
        for n in 1..5 {
            assert_eq!(p.check("AAAA-AAAA", T0), CodeCheck::Wrong, "failure {n}");
        }
        assert_eq!(p.check("not a code", T0), CodeCheck::Invalidated);
        assert_eq!(p.failures().count(), 5);
        assert!(!p.is_live(T0));
        assert_eq!(p.check("7K3Q-M9XT", T0), CodeCheck::Dead);
    }

    #[test]
    fn a_match_does_not_count_and_is_case_and_dash_blind() {
        let mut p = pending(None);
        assert_eq!(p.check("7k3q-m9xt", T0), CodeCheck::Match);
        assert_eq!(p.check("-7K3QM9XT-", T0), CodeCheck::Match);
        assert_eq!(p.failures().count(), 0);
    }

    #[test]
    fn device_expiry_counts_from_the_claim() {
        let p = pending(Some("2w"));
        let claim = T0 + Duration::minutes(9);
        assert_eq!(p.device_expiry(claim), Some(claim + Duration::weeks(2)));
        assert_eq!(pending(None).device_expiry(claim), None);
        assert_eq!(p.tier(), Tier::Files);
    }
}
