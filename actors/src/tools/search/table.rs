//! The table of searches: ids, owners, the concurrency caps and forgetting finished searches.
//! A pure core — it never reads the clock (`now` is an argument) and starts no thread; the shell
//! ([`Searches`](super::Searches)) does both.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::tools::ToolError;

/// What the table needs to know of a search.
pub(crate) trait Entry {
    /// When it ended, if it has.
    fn finished_at(&self) -> Option<Instant>;
}

struct Slot<T> {
    owner: String,
    value: T,
}

/// Searches by id.
pub(crate) struct Table<T> {
    slots: HashMap<String, Slot<T>>,
}

impl<T: Entry> Table<T> {
    pub(crate) fn new() -> Table<T> {
        Table {
            slots: HashMap::new(),
        }
    }

    /// Refuses one more running search when `max` run already, or `per_owner` of `owner`'s.
    pub(crate) fn admit(&self, owner: &str, max: usize, per_owner: usize) -> Result<(), ToolError> {
        let running = self
            .slots
            .values()
            .filter(|s| s.value.finished_at().is_none());
        let (mut all, mut mine) = (0, 0);
        for s in running {
            all += 1;
            if s.owner == owner {
                mine += 1;
            }
        }
        if all >= max || mine >= per_owner {
            return Err(ToolError::ResourceLimit("searches"));
        }
        Ok(())
    }

    pub(crate) fn insert(&mut self, id: String, owner: &str, value: T) {
        self.slots.insert(
            id,
            Slot {
                owner: owner.to_owned(),
                value,
            },
        );
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<T> {
        self.slots.remove(id).map(|s| s.value)
    }

    /// `owner`'s search `id`. Another owner's search is answered exactly like a missing one.
    pub(crate) fn get(&self, owner: &str, id: &str) -> Result<&T, ToolError> {
        match self.slots.get(id) {
            Some(s) if s.owner == owner => Ok(&s.value),
            _ => Err(ToolError::NoSuchSearch),
        }
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.values().map(|s| &s.value)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Forgets searches that ended more than `keep` before `now`, and all but the
    /// `max_per_owner` most recently ended of each owner.
    pub(crate) fn prune(&mut self, now: Instant, keep: Duration, max_per_owner: usize) {
        self.slots.retain(|_, s| match s.value.finished_at() {
            Some(at) => now.saturating_duration_since(at) <= keep,
            None => true,
        });
        let mut ended: HashMap<&str, Vec<(Instant, &str)>> = HashMap::new();
        for (id, s) in &self.slots {
            if let Some(at) = s.value.finished_at() {
                ended.entry(&s.owner).or_default().push((at, id));
            }
        }
        let mut forget: Vec<String> = Vec::new();
        for (_, mut list) in ended {
            if list.len() > max_per_owner {
                list.sort();
                let excess = list.len() - max_per_owner;
                forget.extend(list.into_iter().take(excess).map(|(_, id)| id.to_owned()));
            }
        }
        for id in forget {
            self.slots.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(Option<Instant>);
    impl Entry for Fake {
        fn finished_at(&self) -> Option<Instant> {
            self.0
        }
    }

    #[test]
    fn caps_running_searches_globally_and_per_owner() {
        let mut t = Table::new();
        t.insert("a1".into(), "a", Fake(None));
        t.insert("a2".into(), "a", Fake(None));
        assert_eq!(
            t.admit("a", 4, 2),
            Err(ToolError::ResourceLimit("searches"))
        );
        assert_eq!(t.admit("b", 4, 2), Ok(()));
        t.insert("b1".into(), "b", Fake(None));
        t.insert("c1".into(), "c", Fake(None));
        assert_eq!(
            t.admit("d", 4, 2),
            Err(ToolError::ResourceLimit("searches"))
        );
        // A finished search does not count.
        t.insert("a0".into(), "a", Fake(Some(Instant::now())));
        t.remove("c1");
        assert_eq!(t.admit("d", 4, 2), Ok(()));
    }

    #[test]
    fn another_owners_id_is_answered_like_an_unknown_one() {
        let mut t = Table::new();
        t.insert("x".into(), "a", Fake(None));
        assert!(t.get("a", "x").is_ok());
        assert_eq!(t.get("b", "x").err(), t.get("b", "nope").err());
        assert_eq!(t.get("b", "x").err(), Some(ToolError::NoSuchSearch));
    }

    #[test]
    fn forgets_old_and_surplus_finished_searches() {
        let t0 = Instant::now();
        let mut t = Table::new();
        for i in 0..5u64 {
            t.insert(
                format!("a{i}"),
                "a",
                Fake(Some(t0 + Duration::from_secs(i))),
            );
        }
        t.insert("run".into(), "a", Fake(None));
        t.prune(t0 + Duration::from_secs(5), Duration::from_secs(60), 3);
        let mut kept: Vec<_> = t.slots.keys().cloned().collect();
        kept.sort();
        assert_eq!(kept, ["a2", "a3", "a4", "run"]);
        t.prune(t0 + Duration::from_secs(1_000), Duration::from_secs(60), 3);
        assert_eq!(t.len(), 1, "only the running search is kept");
    }
}
