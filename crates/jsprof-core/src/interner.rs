//! A table of distinct values, each with an id in first-seen order: the deduplication behind the
//! trace's resources and frames, a profile's strings and the exporters' string tables.

// foldhash: several times SipHash's speed on these short keys, still seeded per process (profiles
// can come from anyone, so keys must not be able to pick their own collisions).
use foldhash::HashMap;
use std::borrow::Borrow;
use std::hash::Hash;

/// Each distinct value once, in first-seen order; ids index [`Interner::values`].
#[derive(Debug, Clone)]
pub(crate) struct Interner<T> {
    values: Vec<T>,
    ids: HashMap<T, u32>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            values: Vec::new(),
            ids: HashMap::default(),
        }
    }
}

impl<T: Hash + Eq + Clone> Interner<T> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The id of `value`, added at the end if it is new (borrowed: cloned only then).
    pub(crate) fn id<Q>(&mut self, value: &Q) -> u32
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        match self.ids.get(value) {
            Some(&id) => id,
            None => self.insert(value.to_owned()),
        }
    }

    /// [`Interner::id`] for a value the caller already owns.
    pub(crate) fn id_of_owned(&mut self, value: T) -> u32 {
        match self.ids.get(&value) {
            Some(&id) => id,
            None => self.insert(value),
        }
    }

    fn insert(&mut self, value: T) -> u32 {
        let id = self.values.len() as u32;
        self.values.push(value.clone());
        self.ids.insert(value, id);
        id
    }

    pub(crate) fn values(&self) -> &[T] {
        &self.values
    }

    pub(crate) fn into_values(self) -> Vec<T> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_first_sight_and_repeat_for_equal_values() {
        let mut t = Interner::<String>::new();
        assert_eq!(
            [
                t.id("b"),
                t.id("a"),
                t.id("b"),
                t.id_of_owned("c".to_owned()),
                t.id("a")
            ],
            [0, 1, 0, 2, 1]
        );
        assert_eq!(t.values(), ["b", "a", "c"]);
        assert_eq!(t.into_values(), ["b", "a", "c"]);
    }
}
