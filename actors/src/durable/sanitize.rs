//! The sanitizer of SPEC §10.3 (placeholder while it is written).
//! TEMPORARY stand-ins, replaced by the real sanitizer's merge.
/// Temporary.
pub fn id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && !s
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '/' | '?' | '#'))
}
