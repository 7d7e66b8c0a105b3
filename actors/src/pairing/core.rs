//! The pairing state machine (SPEC §4.1–§4.5): issuing the pending code and claiming it.
//!
//! [`PairingCore`] owns the pending code and the source limiter. It reads the
//! [`DeviceRegistry`] to decide a claim but does not change it: a successful claim returns the new
//! device and its token, and the actor persists the device, applies it to the registry and publishes
//! a new policy snapshot (see [`devices`](super::devices)).
//!
//! A claim is checked in this order, so that each answer reveals no more than it must:
//!
//! 1. the source's rate (`too many attempts`, before anything else is looked at);
//! 2. the label's shape (`invalid label`; not a code guess, so it counts only against the source);
//! 3. the code (`invalid or expired code`; a wrong code counts as one of its five failures);
//! 4. the label's owner (`label in use`; the code stays pending, so the phone can retry with
//!    another label — only someone who holds the right code learns this).
//!
//! A successful claim consumes the code at once, before the store write: if that write fails the
//! phone is told `pairing unavailable` and the user runs `collie pair` again. A code is never
//! accepted twice.

use std::net::IpAddr;

use rand::{CryptoRng, RngCore};
use time::OffsetDateTime;

use super::code::PairingCode;
use super::devices::{DeviceError, DeviceRegistry, Paired};
use super::duration::Dur;
use super::label::Label;
use super::limiter::SourceLimiter;
use super::pending::{CodeCheck, PendingCode};
use super::tier::Tier;
use super::token::DeviceToken;

/// Why a pairing attempt failed. `Display` is the exact §3.2 string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PairError {
    /// Wrong, malformed, used, expired or invalidated code, or no code pending (403).
    #[error("invalid or expired code")]
    InvalidCode,
    /// The source made more than ten attempts this minute (429 with `Retry-After`).
    #[error("too many attempts")]
    TooManyAttempts {
        /// Seconds for `Retry-After`.
        retry_after_secs: u64,
    },
    /// A live device holds the label (409).
    #[error("label in use")]
    LabelInUse,
    /// The label is not 1–64 of `[A-Za-z0-9._-]` (400).
    #[error("invalid label")]
    InvalidLabel,
}

/// A code `collie pair` prints.
#[derive(Clone, Debug)]
pub struct IssuedCode {
    /// The code (print [`PairingCode::display`], put [`PairingCode::as_str`] in the QR link).
    pub code: PairingCode,
    /// When it stops being accepted (`code_expires_at`).
    pub expires_at: OffsetDateTime,
}

/// A successful claim: the token to hand to the phone once, and the device to persist.
#[derive(Debug)]
pub struct Claimed {
    /// The new device's token; only its hash is in `paired.device`.
    pub token: DeviceToken,
    /// The new device, and the expired device it replaced, if any.
    pub paired: Paired,
}

/// The pending code and the attempt limits.
#[derive(Debug, Default)]
pub struct PairingCore {
    pending: Option<PendingCode>,
    limiter: SourceLimiter,
}

impl PairingCore {
    /// No code pending, no attempts counted.
    pub fn new() -> PairingCore {
        PairingCore::default()
    }

    /// Issues a new code for a device of `tier` living `expires` after its claim, replacing any
    /// pending code.
    pub fn issue(
        &mut self,
        rng: &mut (impl RngCore + CryptoRng),
        tier: Tier,
        expires: Option<Dur>,
        now: OffsetDateTime,
    ) -> IssuedCode {
        let pending = PendingCode::new(PairingCode::generate(rng), tier, expires, now);
        let issued = IssuedCode {
            code: pending.code().clone(),
            expires_at: pending.valid_until(),
        };
        self.pending = Some(pending);
        issued
    }

    /// The pending code, if one is still claimable at `now`.
    pub fn pending(&self, now: OffsetDateTime) -> Option<&PendingCode> {
        self.pending.as_ref().filter(|p| p.is_live(now))
    }

    /// A phone at `source` (see [`pairing_source`](super::pairing_source)) presents `code` and asks
    /// for `label`. On success the code is consumed and a fresh token generated.
    pub fn claim(
        &mut self,
        registry: &DeviceRegistry,
        rng: &mut (impl RngCore + CryptoRng),
        code: &str,
        label: &str,
        source: IpAddr,
        now: OffsetDateTime,
    ) -> Result<Claimed, PairError> {
        self.limiter
            .attempt(source, now)
            .map_err(|r| PairError::TooManyAttempts {
                retry_after_secs: r.retry_after_secs,
            })?;
        let label = Label::parse(label).map_err(|_| PairError::InvalidLabel)?;
        let pending = self.pending.as_mut().ok_or(PairError::InvalidCode)?;
        match pending.check(code, now) {
            CodeCheck::Match => {}
            CodeCheck::Wrong => return Err(PairError::InvalidCode),
            CodeCheck::Invalidated | CodeCheck::Dead => {
                self.pending = None;
                return Err(PairError::InvalidCode);
            }
        }
        let token = DeviceToken::generate(rng);
        let paired = registry
            .pair(
                label,
                pending.tier(),
                token.hash(),
                pending.device_expiry(now),
                now,
            )
            .map_err(|e| match e {
                DeviceError::LabelInUse => PairError::LabelInUse,
                // `pair` refuses nothing else; a new refusal is safest read as a refused code.
                _ => PairError::InvalidCode,
            })?;
        self.pending = None;
        Ok(Claimed { token, paired })
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use time::macros::datetime;
    use time::Duration;

    use super::*;

    const T0: OffsetDateTime = datetime!(2025-06-01 12:00:00 UTC);

    struct Setup {
        core: PairingCore,
        reg: DeviceRegistry,
        rng: StdRng,
    }

    impl Setup {
        fn new() -> Setup {
            Setup {
                core: PairingCore::new(),
                reg: DeviceRegistry::new(),
                rng: StdRng::seed_from_u64(42),
            }
        }

        fn issue(&mut self, tier: Tier, expires: Option<&str>, now: OffsetDateTime) -> String {
            let dur = expires.map(|s| Dur::parse(s).expect(s));
            self.core
                .issue(&mut self.rng, tier, dur, now)
                .code
                .display()
        }

        fn claim_from(
            &mut self,
            code: &str,
            label: &str,
            source: &str,
            now: OffsetDateTime,
        ) -> Result<Claimed, PairError> {
            let source = source.parse().expect("an address");
            self.core
                .claim(&self.reg, &mut self.rng, code, label, source, now)
        }

        fn claim(
            &mut self,
            code: &str,
            label: &str,
            now: OffsetDateTime,
        ) -> Result<Claimed, PairError> {
            self.claim_from(code, label, "100.64.0.2", now)
        }

        /// Claims and applies the result to the registry, as the actor does after the store write.
        fn pair(&mut self, code: &str, label: &str, now: OffsetDateTime) -> Claimed {
            let c = self.claim(code, label, now).expect("claim succeeds");
            self.reg.apply(c.paired.write());
            c
        }
    }

    fn wrong(code: &str) -> String {
        // Same shape, different first character.
        let first = if code.starts_with('A') { 'B' } else { 'A' };
        format!("{first}{}", &code[1..])
    }

    #[test]
    fn the_error_strings_are_the_spec_strings() {
        assert_eq!(
            PairError::InvalidCode.to_string(),
            "invalid or expired code"
        );
        assert_eq!(
            PairError::TooManyAttempts {
                retry_after_secs: 60
            }
            .to_string(),
            "too many attempts"
        );
        assert_eq!(PairError::LabelInUse.to_string(), "label in use");
        assert_eq!(PairError::InvalidLabel.to_string(), "invalid label");
    }

    #[test]
    fn a_claim_pairs_a_device_with_the_codes_tier_and_a_fresh_token() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Files, None, T0);
        let c = s.pair(&code.to_lowercase(), "pixel", T0 + Duration::minutes(1));
        let d = s.reg.get("pixel").expect("paired");
        assert_eq!(d.tier, Tier::Files);
        assert_eq!(d.expires_at, None);
        assert_eq!(d.created_at, T0 + Duration::minutes(1));
        assert_eq!(d.token_hash, c.token.hash());
        assert!(c.token.expose_secret().starts_with("collie_"));
        assert_eq!(c.paired.replaced, None);
    }

    #[test]
    fn no_code_pending_is_an_invalid_code() {
        let mut s = Setup::new();
        assert_eq!(
            s.claim("7K3Q-M9XT", "pixel", T0).map(|_| ()),
            Err(PairError::InvalidCode)
        );
    }

    #[test]
    fn a_code_is_accepted_once() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        s.pair(&code, "pixel", T0);
        assert_eq!(
            s.claim(&code, "tablet", T0).map(|_| ()),
            Err(PairError::InvalidCode)
        );
        assert!(s.core.pending(T0).is_none());
    }

    #[test]
    fn a_code_expires_after_ten_minutes() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        assert!(s.core.pending(T0 + Duration::seconds(599)).is_some());
        assert_eq!(
            s.claim(&code, "pixel", T0 + Duration::minutes(10))
                .map(|_| ()),
            Err(PairError::InvalidCode)
        );
        // Gone for good, even if the clock were read earlier again.
        assert_eq!(
            s.claim(&code, "pixel", T0).map(|_| ()),
            Err(PairError::InvalidCode)
        );

        let code = s.issue(Tier::Full, None, T0);
        assert!(s.claim(&code, "pixel", T0 + Duration::seconds(599)).is_ok());
    }

    #[test]
    fn a_new_code_replaces_the_pending_one() {
        let mut s = Setup::new();
        let first = s.issue(Tier::Full, None, T0);
        let second = s.issue(Tier::Read, None, T0 + Duration::minutes(1));
        assert_ne!(first, second);
        assert_eq!(
            s.claim(&first, "pixel", T0 + Duration::minutes(2))
                .map(|_| ()),
            Err(PairError::InvalidCode)
        );
        s.pair(&second, "pixel", T0 + Duration::minutes(2));
        assert_eq!(s.reg.get("pixel").map(|d| d.tier), Some(Tier::Read));
    }

    #[test]
    fn a_replacement_code_starts_with_no_failures_and_a_fresh_ten_minutes() {
        let mut s = Setup::new();
        let first = s.issue(Tier::Full, None, T0);
        for _ in 0..4 {
            let _ = s.claim(&wrong(&first), "pixel", T0);
        }
        let later = T0 + Duration::minutes(8);
        let second = s.issue(Tier::Full, None, later);
        for _ in 0..4 {
            let _ = s.claim_from(&wrong(&second), "pixel", "100.64.0.3", later);
        }
        assert!(s
            .claim_from(&second, "pixel", "100.64.0.4", later + Duration::minutes(9))
            .is_ok());
    }

    #[test]
    fn five_wrong_codes_invalidate_it() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        for n in 1..=5 {
            assert_eq!(
                s.claim(&wrong(&code), "pixel", T0).map(|_| ()),
                Err(PairError::InvalidCode),
                "wrong code {n}"
            );
        }
        assert!(s.core.pending(T0).is_none());
        // The right code, from another source, no longer works.
        assert_eq!(
            s.claim_from(&code, "pixel", "100.64.0.9", T0).map(|_| ()),
            Err(PairError::InvalidCode)
        );
    }

    #[test]
    fn malformed_codes_count_as_failures() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        for junk in ["", "1234", "hello world", "UUUU-UUUU", "7K3Q-M9XT-EXTRA"] {
            assert_eq!(
                s.claim(junk, "pixel", T0).map(|_| ()),
                Err(PairError::InvalidCode)
            );
        }
        assert_eq!(
            s.claim(&code, "pixel", T0).map(|_| ()),
            Err(PairError::InvalidCode)
        );
    }

    #[test]
    fn four_wrong_codes_leave_it_usable() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        for _ in 0..4 {
            let _ = s.claim(&wrong(&code), "pixel", T0);
        }
        assert!(s.claim(&code, "pixel", T0).is_ok());
    }

    #[test]
    fn the_eleventh_attempt_from_a_source_is_refused_even_with_the_right_code() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        // Ten attempts with bad labels: they do not touch the code, but they count for the source.
        for _ in 0..10 {
            assert_eq!(
                s.claim(&code, "bad label", T0).map(|_| ()),
                Err(PairError::InvalidLabel)
            );
        }
        assert_eq!(
            s.claim(&code, "pixel", T0 + Duration::seconds(30))
                .map(|_| ()),
            Err(PairError::TooManyAttempts {
                retry_after_secs: 60
            })
        );
        // Another source is not affected, and the code is still there for it.
        assert!(s
            .claim_from(&code, "pixel", "100.64.0.3", T0 + Duration::seconds(30))
            .is_ok());
    }

    #[test]
    fn the_source_may_try_again_after_the_minute() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        for _ in 0..11 {
            let _ = s.claim(&code, "", T0);
        }
        assert!(matches!(
            s.claim(&code, "pixel", T0),
            Err(PairError::TooManyAttempts { .. })
        ));
        assert!(s.claim(&code, "pixel", T0 + Duration::seconds(60)).is_ok());
    }

    #[test]
    fn an_invalid_label_is_refused_without_touching_the_code() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, None, T0);
        let too_long = "x".repeat(65);
        for bad in ["", "my phone", too_long.as_str(), "ü"] {
            assert_eq!(
                s.claim(&wrong(&code), bad, T0).map(|_| ()),
                Err(PairError::InvalidLabel)
            );
        }
        assert_eq!(s.core.pending(T0).map(|p| p.failures().count()), Some(0));
        assert!(s.claim(&code, "pixel", T0).is_ok());
    }

    #[test]
    fn a_label_in_use_keeps_the_code_pending() {
        let mut s = Setup::new();
        let first = s.issue(Tier::Full, None, T0);
        s.pair(&first, "pixel", T0);
        let code = s.issue(Tier::Read, None, T0);
        assert_eq!(
            s.claim(&code, "pixel", T0).map(|_| ()),
            Err(PairError::LabelInUse)
        );
        assert_eq!(s.core.pending(T0).map(|p| p.failures().count()), Some(0));
        s.pair(&code, "pixel-2", T0);
        assert_eq!(s.reg.len(), 2);
    }

    #[test]
    fn an_expired_devices_label_is_taken_over() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, Some("12h"), T0);
        let old = s.pair(&code, "pixel", T0);
        let after = T0 + Duration::hours(12);
        let code = s.issue(Tier::Read, None, after);
        let new = s.claim(&code, "pixel", after).expect("takeover");
        let replaced = new
            .paired
            .replaced
            .clone()
            .expect("the old device is reported");
        assert_eq!(replaced.token_hash, old.token.hash());
        s.reg.apply(new.paired.write());
        assert_eq!(
            s.reg.get("pixel").map(|d| d.token_hash),
            Some(new.token.hash())
        );
    }

    #[test]
    fn the_expiry_counts_from_the_claim() {
        let mut s = Setup::new();
        let code = s.issue(Tier::Full, Some("2w"), T0);
        let claimed_at = T0 + Duration::minutes(7);
        s.pair(&code, "pixel", claimed_at);
        assert_eq!(
            s.reg.get("pixel").and_then(|d| d.expires_at),
            Some(claimed_at + Duration::weeks(2))
        );
    }

    #[test]
    fn issued_code_reports_its_expiry() {
        let mut s = Setup::new();
        let issued = s.core.issue(&mut s.rng, Tier::Read, None, T0);
        assert_eq!(issued.expires_at, T0 + Duration::minutes(10));
        assert_eq!(
            s.core.pending(T0).map(|p| p.code().as_str()),
            Some(issued.code.as_str())
        );
    }
}
