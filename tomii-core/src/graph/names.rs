//! The maps from names to positions that resolving a graph looks names up in: std's `HashMap`
//! with foldhash's fast hasher, a few instructions a name where std's SipHash takes over a hundred.
//!
//! `foldhash::fast::RandomState` seeds every map from a per-process random seed, so a file cannot
//! choose in advance names that all fall in one bucket. Maps here only ever hold names of the graph
//! being read.

use std::collections::HashMap;

use foldhash::fast::RandomState;

/// A map keyed by names (or positions), hashed with foldhash.
pub(crate) type NameMap<K, V> = HashMap<K, V, RandomState>;

/// An empty [`NameMap`] with room for `capacity` entries.
pub(crate) fn map<K, V>(capacity: usize) -> NameMap<K, V> {
    HashMap::with_capacity_and_hasher(capacity, RandomState::default())
}

#[cfg(test)]
mod tests {
    use super::map;

    #[test]
    fn names_map_to_their_positions() {
        let names: Vec<String> = (0..1000).map(|i| format!("node_{i}")).chain(["".into(), "a".into()]).collect();
        let mut ids = map(names.len());
        for (k, name) in names.iter().enumerate() {
            assert_eq!(ids.insert(name.as_str(), k), None);
        }
        for (k, name) in names.iter().enumerate() {
            assert_eq!(ids.get(name.as_str()), Some(&k));
        }
        assert_eq!(ids.get("node_1000"), None);
    }
}
