//! Times as the bridge writes them: RFC 3339 in UTC with `Z`, formatted by `time` — one place
//! for every answer, record and log line that carries a time.

use time::format_description::well_known::Rfc3339;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

/// The audit log's fixed form: always three digits of milliseconds.
const MILLIS: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// `t` in UTC with `Z`, its sub-seconds written only when not zero and without trailing zeros
/// (`2025-01-02T03:04:05Z`, `2025-01-02T03:04:05.5Z`). `None` for a year RFC 3339 cannot
/// write (before year 0).
pub fn format(t: OffsetDateTime) -> Option<String> {
    t.to_offset(UtcOffset::UTC).format(&Rfc3339).ok()
}

/// `t` in UTC with `Z` and exactly three digits of milliseconds (`2025-01-02T03:04:05.006Z`):
/// the audit log's `ts`, which keeps one width so lines sort and compare as text.
pub fn format_millis(t: OffsetDateTime) -> String {
    t.to_offset(UtcOffset::UTC)
        .format(MILLIS)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn utc_with_z_and_only_the_digits_that_count() {
        assert_eq!(
            format(datetime!(2025-01-02 04:04:05 +01:00)).as_deref(),
            Some("2025-01-02T03:04:05Z")
        );
        assert_eq!(
            format(datetime!(2025-01-02 03:04:05.5 UTC)).as_deref(),
            Some("2025-01-02T03:04:05.5Z")
        );
        assert_eq!(format(datetime!(-0001-01-01 0:00 UTC)), None);
    }

    #[test]
    fn the_audit_form_always_has_three_digits_of_milliseconds() {
        assert_eq!(
            format_millis(datetime!(2025-01-02 04:04:05.006789 +01:00)),
            "2025-01-02T03:04:05.006Z"
        );
        assert_eq!(
            format_millis(datetime!(2025-01-02 03:04:05 UTC)),
            "2025-01-02T03:04:05.000Z"
        );
    }
}
