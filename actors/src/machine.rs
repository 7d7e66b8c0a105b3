//! This bridge's machine name, one value everyone reads (SPEC §3.1).
//!
//! The name appears in pane lists, audit lines, `COLLIE_PANE` and walky headers, so every part of
//! the bridge must agree on it. It is chosen at start (`--name`, `name` in config.toml, or the
//! host name — or, once this bridge joined a crew, the name it joined with) and changes at most
//! once while the bridge runs: when `collie crew join --name N` succeeds, the crew actor sets it to
//! `N`, and everything that reads it from here follows at once.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

/// The shared machine name; cheap to clone and to read.
#[derive(Clone)]
pub struct MachineName(Arc<ArcSwap<String>>);

impl MachineName {
    /// A name holding `name` (already validated by the caller).
    pub fn new(name: impl Into<String>) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(name.into())))
    }

    /// The current name.
    pub fn get(&self) -> String {
        self.0.load().as_ref().clone()
    }

    /// Whether `candidate` is this machine's current name.
    pub fn is(&self, candidate: &str) -> bool {
        self.0.load().as_str() == candidate
    }

    /// Sets a new name (a crew join).
    pub fn set(&self, name: impl Into<String>) {
        self.0.store(Arc::new(name.into()));
    }
}

impl fmt::Display for MachineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.load().as_str())
    }
}

impl fmt::Debug for MachineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MachineName({:?})", self.0.load().as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_sees_a_change() {
        let a = MachineName::new("laptop");
        let b = a.clone();
        assert!(b.is("laptop"));
        a.set("web-1");
        assert_eq!(b.get(), "web-1");
        assert_eq!(b.to_string(), "web-1");
    }
}
