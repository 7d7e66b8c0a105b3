//! The sanitizer of SPEC §10.3 (placeholder while it is written).
