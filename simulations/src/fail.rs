//! A broken invariant as a check returns it, before the harness adds where and when. Its own
//! module so every checker (the crew's, the deputy's) names it without depending on another.

use crate::ViolationKind;

/// A broken invariant, before the harness adds where and when.
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) kind: ViolationKind,
    pub(crate) detail: String,
}

/// The outcome of a check.
pub(crate) type Check = Result<(), Box<Fail>>;

/// A check that failed with `kind` for `detail`.
pub(crate) fn fail(kind: ViolationKind, detail: String) -> Check {
    Err(Box::new(Fail { kind, detail }))
}
