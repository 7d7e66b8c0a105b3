//! Redaction: masking known secret shapes in text that leaves the machine (SPEC §6).
//!
//! The pure core is [`Masker`]: built once from `COLLIE_REDACT`, shared as `Arc<Masker>` and
//! called inline on hot paths — screen snapshots and streams, push notifications, diffs, the
//! file view, walky bodies, audit lines (§7) and `collie redact FILE`. The Redactor actor owns
//! the configuration and hands the masker out; a message round trip per screen update would cost
//! more than the masking.
//!
//! A secret is masked one `•` per character, so columns and line counts stay; a vendor prefix
//! and one more character stay readable (`sk-ant-a•••…`), as does the first character of a
//! value after a secret word or of a URL password. Masking is idempotent. Only high-precision
//! shapes are masked ([`shape_patterns`] lists them): vendor-prefixed tokens, JWTs, PEM and PGP
//! private key blocks, `scheme://user:password@host`, Collie device tokens and `key: value` /
//! `KEY=value` lines whose key ends with a secret word. Bare hex or base64 never is. A card
//! ([`Masker::mask_card`], SPEC §10.1) is masked without the secret-word rule: there the "value"
//! may be a command substitution that runs.
//!
//! How: three passes of a case-sensitive literal search (`prefilter.rs`: two Teddy passes and
//! one `memmem`) find the literals every shape needs (vendor prefixes, secret-word stems); only
//! lines with a hit that passes a cheap check run the regexes of the shapes that literal
//! triggers (`shapes.rs`), and the assignments to secret words are found by a hand-written walk
//! that mirrors their regex (`assign.rs`). A masked line is tried again until nothing changes,
//! with the shapes the prefilter confirms on it.

pub mod actor;
mod assign;
mod core;
mod pem;
mod prefilter;
mod shapes;

#[cfg(test)]
mod card_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use self::core::Masker;
pub use self::shapes::shape_patterns;

/// The character that replaces each masked character: `•` (U+2022).
pub const MASK: char = '\u{2022}';
