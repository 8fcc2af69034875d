//! [`PidMap`]: per-task state looked up at every event, by pid.
//!
//! The collectors look a task up once or twice per event (a switch names
//! two). A hash map costs a hash and a probe each time; the simulator's
//! pids are small and dense (from `FIRST_PID`, 1001), so pids below
//! [`DENSE_PIDS`] find their slot through an index of 4 bytes per pid, and
//! only larger ones (a real trace's, up to `pid_max`) go through a hash
//! map. Memory stays at most 256 KiB of index beside the entries.

use rustc_hash::FxHashMap;
use schedlab_trace::Pid;

/// Pids below this are indexed directly (the index grows to the largest
/// seen); others are hashed.
const DENSE_PIDS: usize = 1 << 16;

const NONE: u32 = u32::MAX;

/// A map from pid to `V`. Iteration order is the order of insertion for
/// the indexed pids, then the hashed ones: callers that print sort first.
pub(crate) struct PidMap<V> {
    /// pid → its place in `entries` (`NONE`: absent), for pids below [`DENSE_PIDS`].
    index: Vec<u32>,
    entries: Vec<(Pid, V)>,
    sparse: FxHashMap<Pid, V>,
}

impl<V> Default for PidMap<V> {
    fn default() -> Self {
        PidMap { index: Vec::new(), entries: Vec::new(), sparse: FxHashMap::default() }
    }
}

fn dense(pid: Pid) -> Option<usize> {
    usize::try_from(pid).ok().filter(|&p| p < DENSE_PIDS)
}

impl<V> PidMap<V> {
    pub(crate) fn get_mut(&mut self, pid: &Pid) -> Option<&mut V> {
        match dense(*pid) {
            Some(p) => match self.index.get(p) {
                Some(&i) if i != NONE => Some(&mut self.entries[i as usize].1),
                _ => None,
            },
            None => self.sparse.get_mut(pid),
        }
    }

    /// `pid`'s entry, made by `make` if it has none.
    pub(crate) fn get_or_insert_with(&mut self, pid: Pid, make: impl FnOnce() -> V) -> &mut V {
        let Some(p) = dense(pid) else {
            return self.sparse.entry(pid).or_insert_with(make);
        };
        if p >= self.index.len() {
            self.index.resize(p + 1, NONE);
        }
        if self.index[p] == NONE {
            self.index[p] = u32::try_from(self.entries.len()).expect("fewer than 2^32 tasks");
            self.entries.push((pid, make()));
        }
        &mut self.entries[self.index[p] as usize].1
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v).chain(self.sparse.values_mut())
    }

    /// Every entry, the map left empty.
    pub(crate) fn take_all(&mut self) -> Vec<(Pid, V)> {
        self.index.clear();
        let mut all = std::mem::take(&mut self.entries);
        all.extend(self.sparse.drain());
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The map holds what a BTreeMap given the same calls holds, for pids
        /// on both sides of the index's bound and negative ones.
        #[test]
        fn a_pidmap_holds_what_a_map_does(
            ops in proptest::collection::vec((prop_oneof![0..40i32, 65_530..65_545i32, -3..0i32, 4_000_000..4_000_003i32], 0..3u8), 0..200)
        ) {
            let (mut m, mut reference) = (PidMap::default(), BTreeMap::new());
            for (n, (pid, op)) in ops.into_iter().enumerate() {
                match op {
                    0 => {
                        *m.get_or_insert_with(pid, || 0usize) += n;
                        *reference.entry(pid).or_insert(0usize) += n;
                    }
                    1 => prop_assert_eq!(m.get_mut(&pid).copied(), reference.get(&pid).copied()),
                    _ => {
                        for v in m.values_mut() {
                            *v += 1;
                        }
                        for v in reference.values_mut() {
                            *v += 1;
                        }
                    }
                }
            }
            let mut all = m.take_all();
            all.sort_unstable();
            prop_assert_eq!(all, reference.into_iter().collect::<Vec<_>>());
            prop_assert!(m.take_all().is_empty());
            prop_assert!(m.get_mut(&5).is_none());
        }
    }
}
