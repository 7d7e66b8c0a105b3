//! What a push service's answer means for the subscription (SPEC §10.4; RFC 8030 §5, §8.4):
//! 2xx delivered; 404 or 410, the subscription is gone for good (the browser dropped it) and is
//! deleted; 429, nothing more goes to it before its `Retry-After`; anything else is logged and the
//! subscription kept. Pure: `now` comes in.

use time::format_description::well_known::Rfc2822;
use time::OffsetDateTime;

/// How long a 429 without a readable `Retry-After` waits.
pub const DEFAULT_RETRY_MS: u64 = 60_000;
/// The longest wait a `Retry-After` can impose (a service asking for more is asked again then).
pub const MAX_RETRY_MS: u64 = 24 * 60 * 60 * 1000;

/// What became of one post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The service took it.
    Delivered,
    /// The subscription no longer exists (404, 410): delete it.
    Gone,
    /// Too many requests: send nothing to this subscription before this time (Unix ms).
    Later(u64),
    /// Another status, or no answer at all; the subscription is kept.
    Failed(String),
}

/// The outcome of an answer with `status` and `Retry-After` value `retry_after`, at `now` (Unix
/// milliseconds).
pub fn of_status(status: u16, retry_after: Option<&str>, now: u64) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered,
        404 | 410 => Outcome::Gone,
        429 => Outcome::Later(now.saturating_add(retry_wait(retry_after, now))),
        other => Outcome::Failed(format!("push service answered {other}")),
    }
}

/// The wait a `Retry-After` asks for: delay-seconds or an HTTP-date (RFC 9110 §10.2.3), at most
/// [`MAX_RETRY_MS`]; [`DEFAULT_RETRY_MS`] when absent or unreadable.
pub fn retry_wait(retry_after: Option<&str>, now: u64) -> u64 {
    let Some(value) = retry_after.map(str::trim) else {
        return DEFAULT_RETRY_MS;
    };
    let wait = if let Ok(secs) = value.parse::<u64>() {
        secs.saturating_mul(1000)
    } else if let Ok(at) = OffsetDateTime::parse(value, &Rfc2822) {
        let at_ms = u64::try_from(at.unix_timestamp())
            .unwrap_or(0)
            .saturating_mul(1000);
        at_ms.saturating_sub(now)
    } else {
        DEFAULT_RETRY_MS
    };
    wait.min(MAX_RETRY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    #[test]
    fn statuses() {
        assert_eq!(of_status(201, None, NOW), Outcome::Delivered);
        assert_eq!(of_status(404, None, NOW), Outcome::Gone);
        assert_eq!(of_status(410, None, NOW), Outcome::Gone);
        assert_eq!(
            of_status(429, Some("120"), NOW),
            Outcome::Later(NOW + 120_000)
        );
        assert!(matches!(of_status(500, None, NOW), Outcome::Failed(_)));
        // A redirect is not followed: it is a failure like any other status.
        assert!(matches!(of_status(302, None, NOW), Outcome::Failed(_)));
    }

    #[test]
    fn retry_after_as_seconds_or_a_date_bounded() {
        assert_eq!(retry_wait(Some(" 5 "), NOW), 5_000);
        assert_eq!(retry_wait(None, NOW), DEFAULT_RETRY_MS);
        assert_eq!(retry_wait(Some("soon"), NOW), DEFAULT_RETRY_MS);
        assert_eq!(retry_wait(Some("99999999999"), NOW), MAX_RETRY_MS);
        // 1_800_000_000 s is Fri, 15 Jan 2027 08:00:00 GMT.
        assert_eq!(
            retry_wait(Some("Fri, 15 Jan 2027 08:00:30 GMT"), NOW),
            30_000
        );
        assert_eq!(retry_wait(Some("Fri, 15 Jan 2027 07:00:00 GMT"), NOW), 0);
    }
}
