//! The discrete-event queue: integer-ns time, ties broken by insertion order.
//!
//! Two kinds of events share one order (time, then push sequence number):
//!
//! * one-shot events, in a plain binary heap;
//! * keyed events — per-CPU timers that the engine re-arms all the time (the
//!   next op boundary, the tick, the end of a context switch) — of which at
//!   most one is pending per key. Re-arming one replaces it in place, and
//!   cancelling one removes it. With plain pushes and generation numbers the
//!   superseded entries would stay in the heap until their time came: in
//!   schbench they outnumbered the live ones and popping them dominated the
//!   run time. Replacing gives the same pops in the same order (a superseded
//!   event did nothing when it popped), without the dead weight.
//!
//! One-shot events armed with the same delay are in order among themselves
//! (the clock only moves forward), so they need no heap: a few FIFO lanes,
//! each holding the events of one delay while it has any, take them, and
//! only the rest go to the heap. Sleeps are the common case: every
//! `usleep(100)` of schbench's 512 workers is armed at now + 150 us; in the
//! heap they made its pops the largest entry of the profile (6 % of a
//! schbench-spr run). Keying by delay rather than taking whatever is no
//! earlier than a lane's last event keeps one far event (the run's end)
//! from closing a lane to all the near ones. The pop order is the same
//! total order.
//!
//! Two shortcuts keep a pop cheap without changing that order: the earliest
//! one-shot event (heap top or a lane's front) is remembered, and found
//! again only when a one-shot event pops, so a keyed pop compares two
//! values; and a popped keyed entry stays at the keyed heap's root until
//! the next pop, so that re-arming the same key before then (a CPU's next
//! op boundary after it ran, the next tick after a tick) replaces it in
//! place with one sift down instead of a removal and an insertion.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Min-queue of `(time, seq, payload)`; equal times pop in push order.
#[derive(Debug)]
pub struct EventQueue<T> {
    heap: BinaryHeap<Reverse<(u128, Slot<T>)>>,
    /// One-shot events outside the heap, each lane in ascending order.
    lanes: [Lane<T>; LANES],
    /// The time of the last pop: delays are measured from it.
    now: u64,
    keyed: KeyedHeap<T>,
    seq: u64,
    /// Latest time of any event that was replaced or cancelled before it
    /// popped: the time a drained queue would have reached had it popped it.
    dropped_max: u64,
    /// The earliest one-shot event's order and where it is (a lane's
    /// index, or `LANES` for the heap); `None` when there is none.
    one_shot: Option<(u128, usize)>,
}

/// FIFO lanes for one-shot events: schbench needs one (its sleeps); the
/// others let a second periodic delay in a scenario skip the heap too.
const LANES: usize = 4;

/// One-shot events armed with one delay, in push order (so in time order).
#[derive(Debug)]
struct Lane<T> {
    delay: u64,
    events: VecDeque<(u128, T)>,
}

/// Wrapper so payloads need no ordering of their own.
#[derive(Debug)]
struct Slot<T>(T);

impl<T> PartialEq for Slot<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Slot<T> {}
impl<T> PartialOrd for Slot<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Slot<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// An indexed binary min-heap of keys ordered by `(time, seq)`, with each
/// key's position so that an entry can be moved or removed in O(log n).
///
/// A popped entry is not removed at once: it stays at the root, no longer
/// pending (`popped`), until the next pop removes it, unless its key is
/// armed again first, which then overwrites it in place. Meanwhile every
/// other entry armed has a later order than it (a later or equal time and a
/// larger sequence number), so it stays the root whatever else moves.
#[derive(Debug)]
struct KeyedHeap<T> {
    /// `(order, key)`, heap-ordered, where `order` packs `(time, seq)` into
    /// one integer (see `order`) so that each comparison is a single one.
    heap: Vec<(u128, u32)>,
    /// Index in `heap` of each key's entry, or `NONE`.
    pos: Vec<u32>,
    payload: Vec<Option<T>>,
    /// The key whose entry at the root has popped.
    popped: Option<u32>,
}

const NONE: u32 = u32::MAX;

/// `(time, seq)` as one integer that orders the same way.
fn order(at: u64, seq: u64) -> u128 {
    (u128::from(at) << 64) | u128::from(seq)
}

fn time_of(order: u128) -> u64 {
    (order >> 64) as u64
}

impl<T> KeyedHeap<T> {
    fn new(keys: usize) -> Self {
        KeyedHeap {
            heap: Vec::with_capacity(keys),
            pos: vec![NONE; keys],
            payload: (0..keys).map(|_| None).collect(),
            popped: None,
        }
    }

    /// The earliest pending entry's order: the root's, or with the root
    /// popped, the smaller of its children's.
    fn top(&self) -> Option<u128> {
        if self.popped.is_none() {
            return self.heap.first().map(|&(o, _)| o);
        }
        match (self.heap.get(1), self.heap.get(2)) {
            (Some(&(a, _)), Some(&(b, _))) => Some(a.min(b)),
            (a, _) => a.map(|&(o, _)| o),
        }
    }

    fn len(&self) -> usize {
        self.heap.len() - usize::from(self.popped.is_some())
    }

    /// Insert or move `key` to `(at, seq)`; returns the time it replaced.
    fn set(&mut self, key: u32, at: u64, seq: u64, ev: T) -> Option<u64> {
        self.payload[key as usize] = Some(ev);
        if self.popped == Some(key) {
            // Re-armed after it popped: it takes its own old place at the
            // root, and its new order (later than every pending one's
            // predecessor) can only move it down.
            self.popped = None;
            self.heap[0] = (order(at, seq), key);
            self.sift_down_to_place(0);
            return None;
        }
        if let Some(gone) = self.popped {
            // An entry earlier than the popped root would displace it: take
            // the root out first (the engine never arms one in the past).
            if order(at, seq) < self.heap[0].0 {
                self.popped = None;
                self.remove_root(gone);
            }
        }
        let p = self.pos[key as usize];
        if p == NONE {
            let i = self.heap.len();
            self.heap.push((order(at, seq), key));
            self.pos[key as usize] = i as u32;
            self.sift_up(i);
            None
        } else {
            let i = p as usize;
            let old = time_of(self.heap[i].0);
            // The new sequence number is the largest yet: the entry can only
            // move up if its time decreased, else only down.
            self.heap[i] = (order(at, seq), key);
            if at < old {
                self.sift_up(i);
            } else {
                self.sift_down_to_place(i);
            }
            Some(old)
        }
    }

    /// Remove `key`'s pending entry; returns its time.
    fn remove(&mut self, key: u32) -> Option<u64> {
        let p = self.pos[key as usize];
        if p == NONE || self.popped == Some(key) {
            return None;
        }
        let i = p as usize;
        let at = time_of(self.heap[i].0);
        self.pos[key as usize] = NONE;
        self.payload[key as usize] = None;
        let last = self.heap.pop().expect("a pending key is in the heap");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.1 as usize] = i as u32;
            // The moved entry came from a leaf: it may belong above or below.
            self.sift_up(i);
            self.sift_down(self.pos[last.1 as usize] as usize);
        }
        Some(at)
    }

    /// Pop the earliest pending entry; it stays at the root until the
    /// next pop (or its key's next `set`).
    fn pop(&mut self) -> Option<(u64, T)> {
        if let Some(gone) = self.popped.take() {
            self.remove_root(gone);
        }
        let &(o, key) = self.heap.first()?;
        let ev = self.payload[key as usize].take().expect("a pending key has a payload");
        self.popped = Some(key);
        Some((time_of(o), ev))
    }

    /// Take the popped entry at the root out of the heap.
    fn remove_root(&mut self, key: u32) {
        debug_assert_eq!(self.pos[key as usize], 0, "a popped entry stays at the root");
        self.pos[key as usize] = NONE;
        let last = self.heap.pop().expect("the popped entry is in the heap");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.pos[last.1 as usize] = 0;
            self.sift_down(0);
        }
    }

    /// Put `entry` at index `i`, noting its key's new position.
    #[inline]
    fn put(&mut self, i: usize, entry: (u128, u32)) {
        self.heap[i] = entry;
        self.pos[entry.1 as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if p.0 <= e.0 {
                break;
            }
            self.put(i, p);
            i = parent;
        }
        self.put(i, e);
    }

    /// The textbook sift down, which stops where the entry belongs: for a
    /// re-armed timer (a CPU's next op boundary a few microseconds on)
    /// that is near the top, where Floyd's variant below would walk to a
    /// leaf and climb back (issue 39).
    fn sift_down_to_place(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.heap[l + 1].0 < self.heap[l].0 { l + 1 } else { l };
            let ch = self.heap[c];
            if e.0 <= ch.0 {
                break;
            }
            self.put(i, ch);
            i = c;
        }
        self.put(i, e);
    }

    /// Floyd's variant: walk the hole down to a leaf along the smaller
    /// children, then sift the entry up from there. The entries it moves
    /// (the last leaf, put at a pop's or a removal's place) mostly belong
    /// near the bottom, so this saves a comparison per level, and the child
    /// choice is branch-free.
    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        let mut l = 2 * i + 1;
        while l + 1 < n {
            let c = l + usize::from(self.heap[l + 1].0 < self.heap[l].0);
            self.put(i, self.heap[c]);
            i = c;
            l = 2 * i + 1;
        }
        if l < n {
            self.put(i, self.heap[l]);
            i = l;
        }
        self.heap[i] = e;
        self.sift_up(i);
    }
}

impl<T> EventQueue<T> {
    /// A queue with no keyed events.
    pub fn new() -> Self {
        Self::with_keys(0)
    }

    /// A queue whose keyed events use keys `0..keys`.
    pub fn with_keys(keys: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            lanes: std::array::from_fn(|_| Lane { delay: 0, events: VecDeque::new() }),
            now: 0,
            keyed: KeyedHeap::new(keys),
            seq: 0,
            dropped_max: 0,
            one_shot: None,
        }
    }

    /// Queue a one-shot event: in the lane of its delay, or an empty lane
    /// (which then takes that delay), else in the heap.
    pub fn push(&mut self, at: u64, ev: T) {
        self.seq += 1;
        let o = order(at, self.seq);
        let delay = at.wrapping_sub(self.now);
        let lane = self
            .lanes
            .iter()
            .position(|l| l.delay == delay && !l.events.is_empty())
            .or_else(|| self.lanes.iter().position(|l| l.events.is_empty()));
        let place = match lane {
            Some(i) if at >= self.now => {
                let l = &mut self.lanes[i];
                debug_assert!(l.events.back().is_none_or(|&(last, _)| last < o), "a lane stays in order");
                l.delay = delay;
                l.events.push_back((o, ev));
                i
            }
            _ => {
                self.heap.push(Reverse((o, Slot(ev))));
                LANES
            }
        };
        // Behind a lane's front it cannot be the earliest; elsewhere it may.
        if self.one_shot.is_none_or(|(t, _)| o < t) {
            self.one_shot = Some((o, place));
        }
    }

    /// The earliest one-shot event's order, and where it is: a lane's index,
    /// or `LANES` for the heap (found again after a one-shot pop).
    fn find_one_shot_top(&self) -> Option<(u128, usize)> {
        let mut top = self.heap.peek().map(|Reverse((o, _))| (*o, LANES));
        for (i, l) in self.lanes.iter().enumerate() {
            if let Some(&(o, _)) = l.events.front() {
                if top.is_none_or(|(t, _)| o < t) {
                    top = Some((o, i));
                }
            }
        }
        top
    }

    /// Queue `key`'s event, replacing the one pending under `key` if any. It
    /// takes its place in the order as a fresh push would.
    pub fn push_keyed(&mut self, key: usize, at: u64, ev: T) {
        self.seq += 1;
        if let Some(old) = self.keyed.set(key as u32, at, self.seq, ev) {
            self.dropped_max = self.dropped_max.max(old);
        }
    }

    /// Drop `key`'s pending event, if any.
    pub fn cancel(&mut self, key: usize) {
        if let Some(old) = self.keyed.remove(key as u32) {
            self.dropped_max = self.dropped_max.max(old);
        }
    }

    pub fn pop(&mut self) -> Option<(u64, T)> {
        let popped = match (self.one_shot, self.keyed.top()) {
            (Some((h, _)), Some(k)) if k < h => self.keyed.pop(),
            (None, Some(_)) => self.keyed.pop(),
            (None, None) => None,
            (Some((_, i)), _) => {
                let ev = if i < LANES {
                    self.lanes[i].events.pop_front().map(|(o, ev)| (time_of(o), ev))
                } else {
                    self.heap.pop().map(|Reverse((o, Slot(ev)))| (time_of(o), ev))
                };
                self.one_shot = self.find_one_shot_top();
                ev
            }
        };
        if let Some((at, _)) = popped {
            self.now = at;
        }
        popped
    }

    pub fn peek_time(&self) -> Option<u64> {
        let h = self.one_shot.map(|(o, _)| o);
        match (h, self.keyed.top()) {
            (Some(a), Some(b)) => Some(time_of(a.min(b))),
            (a, b) => a.or(b).map(time_of),
        }
    }

    /// Latest time among the events replaced or cancelled before they popped.
    pub fn dropped_max(&self) -> u64 {
        self.dropped_max
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(|l| l.events.len()).sum::<usize>() + self.keyed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_with_fifo_ties() {
        let mut q = EventQueue::new();
        q.push(5, "c");
        q.push(1, "a");
        q.push(5, "d");
        q.push(1, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(1, "a"), (1, "b"), (5, "c"), (5, "d")]);
    }

    #[test]
    fn keyed_events_replace_and_keep_fifo_ties() {
        let mut q = EventQueue::with_keys(3);
        q.push(5, "a");
        q.push_keyed(0, 3, "x");
        q.push_keyed(1, 5, "b");
        q.push_keyed(0, 5, "c"); // replaces x, and ties after b
        q.push(5, "d");
        q.push_keyed(2, 1, "gone");
        q.cancel(2);
        q.cancel(2);
        assert_eq!(q.len(), 4);
        assert_eq!(q.peek_time(), Some(5));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, "a"), (5, "b"), (5, "c"), (5, "d")]);
        assert_eq!(q.dropped_max(), 3);
    }

    /// Against the generation-number scheme on a plain binary heap: same
    /// pops, same order (one-shots through the lane and the heap alike).
    #[test]
    fn keyed_matches_lazy_cancellation() {
        // Few keys (the heap three levels deep) and many (eight levels, as
        // a large machine's per-CPU timers).
        for keys in [8, 300] {
            matches_lazy_cancellation(keys);
        }
    }

    fn matches_lazy_cancellation(keys: usize) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = crate::rng::Rng::new(7);
        let mut q = EventQueue::with_keys(keys);
        // Gaps of ns to ~200 ms, so entries spread over many buckets.
        // (time, push number, key, generation); key `ONE_SHOT` = one-shot.
        const ONE_SHOT: usize = usize::MAX;
        let mut lazy = BinaryHeap::new();
        let mut pushes = 0u64;
        let mut gen = vec![0u64; keys];
        let mut now = 0;
        let mut popped = (Vec::new(), Vec::new());
        let (mut lane_used, mut heap_used, mut keyed_used) = (0, 0, 0);
        for _ in 0..20_000 {
            match rng.below_incl(9) {
                0..=4 => {
                    let key = rng.below_incl(keys as u64 - 1) as usize;
                    let at = now + (rng.below_incl(50) << (12 * rng.below_incl(3)));
                    gen[key] += 1;
                    pushes += 1;
                    q.push_keyed(key, at, (key, gen[key]));
                    lazy.push(Reverse((at, pushes, key, gen[key])));
                }
                5 => {
                    let key = rng.below_incl(keys as u64 - 1) as usize;
                    gen[key] += 1;
                    q.cancel(key);
                }
                6 => {
                    // Half like a sleep (a fixed delay, so mostly the lane),
                    // half anywhere (mostly the heap).
                    let at = if rng.below_incl(1) == 0 {
                        now + 150_000
                    } else {
                        now + (rng.below_incl(50) << (12 * rng.below_incl(3)))
                    };
                    pushes += 1;
                    q.push(at, (ONE_SHOT, 0));
                    lazy.push(Reverse((at, pushes, ONE_SHOT, 0)));
                }
                _ => {
                    if let Some((t, ev)) = q.pop() {
                        now = t;
                        popped.0.push((t, ev));
                    }
                    while let Some(Reverse((t, _, k, g))) = lazy.pop() {
                        if k == ONE_SHOT || gen[k] == g {
                            popped.1.push((t, (k, g)));
                            break;
                        }
                    }
                }
            }
            assert_eq!(q.len(), lazy.iter().filter(|Reverse((_, _, k, g))| *k == ONE_SHOT || gen[*k] == *g).count());
            lane_used = lane_used.max(q.lanes.iter().map(|l| l.events.len()).max().unwrap_or(0));
            heap_used = heap_used.max(q.heap.len());
            keyed_used = keyed_used.max(q.keyed.len());
        }
        assert!(lane_used > 1 && heap_used > 1, "both one-shot paths were taken: {lane_used} {heap_used}");
        assert!(keyed_used * 2 >= keys, "{keyed_used} of {keys} keys were pending at once");
        assert_eq!(popped.0, popped.1);
        assert!(!popped.0.is_empty());
    }
}
