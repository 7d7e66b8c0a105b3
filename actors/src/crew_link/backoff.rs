//! Reconnect delays for a member's link: exponential from [`BASE`], capped at [`CAP`], with "equal
//! jitter" (half the delay fixed, half random) so a crew of members that lost the lead at the same
//! moment does not come back in lock step. Pure: the caller passes the random fraction.

use std::time::Duration;

/// The first retry delay (before jitter).
pub const BASE: Duration = Duration::from_millis(250);

/// The longest delay between two attempts.
pub const CAP: Duration = Duration::from_secs(15);

/// Consecutive failed attempts, and the delay before the next.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The delay before the next attempt, counting one more failure. `jitter` is a fraction in
    /// `[0, 1)`; values outside are clamped.
    pub fn next_delay(&mut self, jitter: f64) -> Duration {
        let exp = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        let full = BASE.saturating_mul(1u32 << exp).min(CAP);
        let jitter = jitter.clamp(0.0, 1.0);
        full / 2 + full.mul_f64(jitter / 2.0)
    }

    /// A connection succeeded: the next failure starts from [`BASE`] again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_then_caps_and_resets() {
        let mut b = Backoff::default();
        assert_eq!(b.next_delay(1.0), BASE);
        assert_eq!(b.next_delay(1.0), BASE * 2);
        assert_eq!(b.next_delay(0.0), BASE * 2);
        for _ in 0..40 {
            let d = b.next_delay(0.99);
            assert!(d <= CAP);
        }
        assert_eq!(b.next_delay(1.0), CAP);
        assert_eq!(b.next_delay(0.0), CAP / 2);
        b.reset();
        assert_eq!(b.next_delay(1.0), BASE);
    }
}
