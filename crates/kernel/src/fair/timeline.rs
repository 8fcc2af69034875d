//! The queued-entity timeline of a fair runqueue: a model of `cfs_rq->tasks_timeline`.
//!
//! In the kernel this is an augmented, cached-leftmost rb-tree ordered by entity deadline.
//! `__enqueue_entity`/`__dequeue_entity` add and remove nodes, the `min_vruntime_update`
//! augment callback keeps per-subtree minima (`min_vruntime`, `min_slice`) current along
//! every rotation and update path, `__pick_first_entity` reads the cached leftmost node and
//! `pick_eevdf` uses the `min_vruntime` aggregate to find the earliest-deadline eligible
//! entity with a single root-to-leaf descent.
//!
//! What this module models, in its own structure:
//! * An AVL tree (instead of a red-black tree) whose nodes live in one arena, [`RunNodes`],
//!   indexed by entity id and shared by every timeline of the kernel, as each
//!   `sched_entity` embeds its own `run_node`: an entity is queued on at most one cfs_rq,
//!   so memory is one node per entity, not one per entity and runqueue (a per-timeline
//!   arena held a slot for every id it had ever queued: 16 k threads on 224 CPUs, or 64
//!   cgroups x 64 threads, took gigabytes). Each node names the timeline that holds it.
//!   Steady-state operation never allocates; the arena grows when an id beyond its length
//!   is inserted. [`Timeline`] is a runqueue's part (root, cached ends, length);
//!   [`TimelineRef`] and [`TimelineMut`] are the two together.
//! * Keys are `(deadline, insertion sequence number)`. The kernel inserts with a strict
//!   "deadline is less" comparison, so an entity with a deadline equal to a queued one lands
//!   to its right; ordering by sequence number reproduces exactly that FIFO tie order.
//! * Every node carries subtree aggregates `min_vruntime`, `min_slice` and `max_slice`
//!   (the last one is an extra, used for the newer lag bound on `cfs_rq_max_slice`).
//! * In-order neighbours are threaded as a doubly linked list, giving O(1) `first`/`last`
//!   (the cached leftmost) and allocation-free iteration in deadline order.
//!
//! Simplifications: vruntime and deadline are plain `i64` values compared directly, with no
//! wraparound (`(s64)(a - b)`) handling and no relative `entity_key` rebasing; the caller
//! supplies eligibility as a monotone predicate on vruntime rather than the division-free
//! `avg_vruntime` comparison; `curr` handling, buddies and the `nr_running == 1` shortcut of
//! `pick_eevdf` are the caller's business. Entity data is snapshotted at insertion; to change
//! a queued entity's deadline, vruntime or slice, remove and re-insert it (as the kernel does).

const NIL: u32 = u32::MAX;

macro_rules! bail {
    ($($fmt:tt)*) => {
        return Err(TimelineError(format!($($fmt)*)))
    };
}

/// What [`TimelineRef::check`] found wrong with the tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TimelineError(String);

#[derive(Clone, Copy, Debug)]
struct Node {
    deadline: i64,
    vruntime: i64,
    slice: u64,
    seq: u64,
    /// The timeline whose tree holds this node ([`Timeline::new`]'s id).
    owner: u32,
    /// Children: `kid[0]` is the left (earlier) subtree, `kid[1]` the right one.
    kid: [u32; 2],
    prev: u32,
    next: u32,
    /// AVL height of the subtree rooted here; 0 means "not queued".
    height: u8,
    min_vruntime: i64,
    min_slice: u64,
    max_slice: u64,
}

const EMPTY: Node = Node {
    deadline: 0,
    vruntime: 0,
    slice: 0,
    seq: 0,
    owner: NIL,
    kid: [NIL; 2],
    prev: NIL,
    next: NIL,
    height: 0,
    min_vruntime: 0,
    min_slice: 0,
    max_slice: 0,
};

/// Deadline-ordered, vruntime/slice-augmented set of queued entities (see module docs):
/// one runqueue's root and ends; its nodes are in the shared [`RunNodes`].
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Which timeline this is (a cfs_rq id), stamped on the nodes in its tree.
    id: u32,
    root: u32,
    head: u32,
    tail: u32,
    len: usize,
    seq: u64,
}

/// Every entity's node, indexed by entity id (the kernel's `se->run_node`).
#[derive(Clone, Debug, Default)]
pub struct RunNodes {
    nodes: Vec<Node>,
}

/// A timeline with the nodes, to read.
#[derive(Clone, Copy, Debug)]
pub struct TimelineRef<'a> {
    t: &'a Timeline,
    nodes: &'a [Node],
}

/// A timeline with the nodes, to change.
#[derive(Debug)]
pub struct TimelineMut<'a> {
    t: &'a mut Timeline,
    nodes: &'a mut Vec<Node>,
}

fn opt(i: u32) -> Option<u32> {
    (i != NIL).then_some(i)
}

impl Timeline {
    /// An empty timeline; `id` must differ from every other timeline's
    /// that shares its [`RunNodes`].
    pub fn new(id: u32) -> Self {
        Timeline { id, root: NIL, head: NIL, tail: NIL, len: 0, seq: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Earliest-deadline entity (`__pick_first_entity`): the cached end, no node read.
    pub fn first(&self) -> Option<u32> {
        opt(self.head)
    }
}

impl RunNodes {
    /// Pre-sizes the arena for ids `0..n`.
    pub fn with_capacity(n: usize) -> Self {
        RunNodes { nodes: vec![EMPTY; n] }
    }

    pub fn view<'a>(&'a self, t: &'a Timeline) -> TimelineRef<'a> {
        TimelineRef { t, nodes: &self.nodes }
    }

    pub fn view_mut<'a>(&'a mut self, t: &'a mut Timeline) -> TimelineMut<'a> {
        TimelineMut { t, nodes: &mut self.nodes }
    }
}

impl<'a> TimelineMut<'a> {
    fn r(&self) -> TimelineRef<'_> {
        TimelineRef { t: self.t, nodes: self.nodes }
    }

    /// Insert entity `id` with its current deadline, vruntime and slice. Equal deadlines:
    /// the later insertion sorts after the earlier, so ties are FIFO and deterministic.
    /// Inserting an id that is already queued is a bug (debug assertion); in release builds
    /// the old entry is replaced.
    pub fn insert(&mut self, id: u32, deadline: i64, vruntime: i64, slice: u64) {
        assert!(id != NIL, "slot id u32::MAX is reserved");
        let idx = id as usize;
        if idx >= self.nodes.len() {
            self.nodes.resize(idx + 1, EMPTY);
        }
        debug_assert!(self.nodes[idx].height == 0, "timeline: entity {id} inserted while queued (here or elsewhere)");
        if self.r().contains(id) {
            self.remove(id);
        }
        self.t.seq += 1;
        self.nodes[idx] = Node {
            deadline,
            vruntime,
            slice,
            seq: self.t.seq,
            owner: self.t.id,
            height: 1,
            min_vruntime: vruntime,
            min_slice: slice,
            max_slice: slice,
            ..EMPTY
        };
        let (mut pred, mut succ) = (NIL, NIL);
        self.t.root = self.ins(self.t.root, id, &mut pred, &mut succ);
        // Thread the new node between its in-order neighbours.
        self.nodes[idx].prev = pred;
        self.nodes[idx].next = succ;
        match pred {
            NIL => self.t.head = id,
            p => self.nodes[p as usize].next = id,
        }
        match succ {
            NIL => self.t.tail = id,
            s => self.nodes[s as usize].prev = id,
        }
        self.t.len += 1;
    }

    /// Remove queued entity `id`. Removing an absent id is a bug (debug assertion); in
    /// release builds it is a no-op.
    pub fn remove(&mut self, id: u32) {
        debug_assert!(self.r().contains(id), "timeline: removing absent entity {id}");
        if !self.r().contains(id) {
            return;
        }
        self.t.root = self.del(self.t.root, id);
        let Node { prev, next, .. } = self.nodes[id as usize];
        match prev {
            NIL => self.t.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.t.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
        self.nodes[id as usize] = EMPTY;
        self.t.len -= 1;
    }

    /// Change a queued entity's slice in place (its key is unchanged), then
    /// refresh the slice aggregates on the path to it, as the kernel's
    /// `min_vruntime_cb_propagate()` does from the node up.
    pub fn set_slice(&mut self, id: u32, slice: u64) {
        debug_assert!(self.r().contains(id), "timeline: set_slice of absent entity {id}");
        if !self.r().contains(id) {
            return;
        }
        self.nodes[id as usize].slice = slice;
        let mut path = Vec::new();
        let mut cur = self.t.root;
        while cur != NIL {
            path.push(cur);
            if cur == id {
                break;
            }
            cur = self.nodes[cur as usize].kid[self.r().before(cur, id) as usize];
        }
        for &i in path.iter().rev() {
            self.pull(i);
        }
    }

    /// Recompute height and aggregates of `i` (the augment callback).
    fn pull(&mut self, i: u32) {
        let d = self.r().derived(i);
        let n = &mut self.nodes[i as usize];
        (n.height, n.min_vruntime, n.min_slice, n.max_slice) = d;
    }

    /// Lift child `kid[d]` of `t` above it (d = 0: right rotation); returns the new root.
    fn rotate(&mut self, t: u32, d: usize) -> u32 {
        let c = self.nodes[t as usize].kid[d];
        self.nodes[t as usize].kid[d] = self.nodes[c as usize].kid[1 - d];
        self.nodes[c as usize].kid[1 - d] = t;
        self.pull(t);
        self.pull(c);
        c
    }

    /// Restore the AVL invariant at `t` (children already valid) and refresh aggregates.
    fn rebalance(&mut self, t: u32) -> u32 {
        let [l, r] = self.nodes[t as usize].kid;
        let (hl, hr) = (self.r().height(l), self.r().height(r));
        if hl.abs_diff(hr) <= 1 {
            self.pull(t);
            return t;
        }
        let d = usize::from(hr > hl); // the heavy side
        let c = self.nodes[t as usize].kid[d];
        let ck = self.nodes[c as usize].kid;
        if self.r().height(ck[1 - d]) > self.r().height(ck[d]) {
            // Inner grandchild is taller: double rotation.
            self.nodes[t as usize].kid[d] = self.rotate(c, 1 - d);
        }
        self.rotate(t, d)
    }

    /// Insert node `n` into subtree `t`, noting its in-order neighbours on the way down.
    fn ins(&mut self, t: u32, n: u32, pred: &mut u32, succ: &mut u32) -> u32 {
        if t == NIL {
            return n;
        }
        let d = usize::from(!self.r().before(n, t));
        *(if d == 0 { &mut *succ } else { &mut *pred }) = t;
        let c = self.ins(self.nodes[t as usize].kid[d], n, pred, succ);
        self.nodes[t as usize].kid[d] = c;
        self.rebalance(t)
    }

    fn del(&mut self, t: u32, id: u32) -> u32 {
        debug_assert!(t != NIL, "timeline: entity {id} not found in tree");
        let [l, r] = self.nodes[t as usize].kid;
        if t == id {
            if l == NIL || r == NIL {
                return if l == NIL { r } else { l };
            }
            // Splice the in-order successor into the removed node's position.
            let (rest, m) = self.del_min(r);
            self.nodes[m as usize].kid = [l, rest];
            return self.rebalance(m);
        }
        let d = usize::from(!self.r().before(id, t));
        let c = self.del(self.nodes[t as usize].kid[d], id);
        self.nodes[t as usize].kid[d] = c;
        self.rebalance(t)
    }

    /// Detach the minimum of subtree `t`; returns (new subtree root, detached node).
    fn del_min(&mut self, t: u32) -> (u32, u32) {
        let [l, r] = self.nodes[t as usize].kid;
        if l == NIL {
            return (r, t);
        }
        let (nl, m) = self.del_min(l);
        self.nodes[t as usize].kid[0] = nl;
        (self.rebalance(t), m)
    }
}

impl<'a> TimelineRef<'a> {
    pub fn contains(self, id: u32) -> bool {
        self.nodes.get(id as usize).is_some_and(|n| n.height > 0 && n.owner == self.t.id)
    }

    /// Latest-deadline entity (`len`, `is_empty` and `first` need no node:
    /// they are [`Timeline`]'s).
    pub fn last(self) -> Option<u32> {
        opt(self.t.tail)
    }

    /// Smallest vruntime of any queued entity (root aggregate).
    pub fn min_vruntime(self) -> Option<i64> {
        opt(self.t.root).map(|r| self.nodes[r as usize].min_vruntime)
    }

    /// Smallest slice of any queued entity (root aggregate, as used by `cfs_rq_min_slice`).
    pub fn min_slice(self) -> Option<u64> {
        opt(self.t.root).map(|r| self.nodes[r as usize].min_slice)
    }

    /// Largest slice of any queued entity (root aggregate).
    pub fn max_slice(self) -> Option<u64> {
        opt(self.t.root).map(|r| self.nodes[r as usize].max_slice)
    }

    /// Earliest-deadline entity whose vruntime satisfies `eligible`, which must be monotone
    /// (if `v` is eligible, so is every smaller `v`). Mirrors `pick_eevdf`'s search: the
    /// leftmost entity if eligible, otherwise one descent from the root guided by the
    /// left subtrees' `min_vruntime`. O(log n) calls of `eligible`.
    pub fn pick_eligible(self, eligible: impl Fn(i64) -> bool) -> Option<u32> {
        let head = opt(self.t.head)?;
        if eligible(self.nodes[head as usize].vruntime) {
            return Some(head);
        }
        let mut cur = self.t.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            let left = n.kid[0];
            if left != NIL && eligible(self.nodes[left as usize].min_vruntime) {
                // Something in the (earlier-deadline) left subtree qualifies.
                cur = left;
            } else if eligible(n.vruntime) {
                return Some(cur);
            } else {
                cur = n.kid[1];
            }
        }
        None
    }

    /// Queued ids in deadline order (ties in insertion order).
    pub fn iter(self) -> impl Iterator<Item = u32> + 'a {
        std::iter::successors(opt(self.t.head), move |&i| opt(self.nodes[i as usize].next))
    }

    /// `(deadline, vruntime, slice)` of a queued entity.
    pub fn entity(self, id: u32) -> Option<(i64, i64, u64)> {
        self.contains(id).then(|| {
            let n = &self.nodes[id as usize];
            (n.deadline, n.vruntime, n.slice)
        })
    }

    /// Verify ordering, AVL balance, aggregates, the threaded list and the counters,
    /// and that no slot outside the tree is marked queued (a scan of the whole arena).
    pub fn check(self) -> Result<(), TimelineError> {
        self.check_queued()?;
        let queued = self.nodes.iter().filter(|n| n.height > 0 && n.owner == self.t.id).count();
        if queued != self.t.len {
            bail!("len {} but {queued} slots queued", self.t.len);
        }
        Ok(())
    }

    /// [`TimelineRef::check`] without the arena scan: O(len), not O(largest id ever
    /// inserted), so a kernel with thousands of tasks and hundreds of runqueues can
    /// afford it every step (whether each task's slot agrees is the caller's check).
    pub fn check_queued(self) -> Result<(), TimelineError> {
        // The threaded list is walked alongside the tree's in-order walk, so
        // nothing is collected (this runs after every kernel entry under the
        // scoped invariant checks).
        let mut walk = ListWalk { at: self.t.head, prev: NIL, seen: 0 };
        self.check_sub(self.t.root, &mut walk, 0)?;
        if walk.at != NIL {
            bail!("the list goes on at {} after the tree's last node", walk.at);
        }
        if self.t.tail != walk.prev {
            bail!("tail {} but the tree's last node is {}", self.t.tail, walk.prev);
        }
        if walk.seen != self.t.len {
            bail!("len {} but {} in tree", self.t.len, walk.seen);
        }
        Ok(())
    }

    /// The next node of the in-order walk is `t`: the list must be at it,
    /// linked back to the one before, with keys increasing.
    fn visit(self, t: u32, walk: &mut ListWalk) -> Result<(), TimelineError> {
        if walk.at != t {
            bail!("the list has {} where the tree's order has {t}", walk.at);
        }
        if self.nodes[t as usize].prev != walk.prev {
            bail!("node {t} links back to {} but follows {}", self.nodes[t as usize].prev, walk.prev);
        }
        if walk.prev != NIL && !self.before(walk.prev, t) {
            bail!("in-order keys not increasing at {} -> {t}", walk.prev);
        }
        walk.prev = t;
        walk.at = self.nodes[t as usize].next;
        walk.seen += 1;
        Ok(())
    }

    fn before(self, a: u32, b: u32) -> bool {
        let (a, b) = (self.nodes[a as usize], &self.nodes[b as usize]);
        (a.deadline, a.seq) < (b.deadline, b.seq)
    }

    fn height(self, i: u32) -> u8 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].height
        }
    }

    /// Height and aggregates of `i` derived from its own data and its children.
    fn derived(self, i: u32) -> (u8, i64, u64, u64) {
        let n = &self.nodes[i as usize];
        let (mut h, mut mv, mut mins, mut maxs) = (0, n.vruntime, n.slice, n.slice);
        for c in n.kid {
            if c != NIL {
                let c = &self.nodes[c as usize];
                h = h.max(c.height);
                mv = mv.min(c.min_vruntime);
                mins = mins.min(c.min_slice);
                maxs = maxs.max(c.max_slice);
            }
        }
        (h + 1, mv, mins, maxs)
    }

    /// Validate subtree `t`, appending its in-order ids; returns its height.
    fn check_sub(self, t: u32, walk: &mut ListWalk, depth: usize) -> Result<u8, TimelineError> {
        if t == NIL {
            return Ok(0);
        }
        if depth > 64 || t as usize >= self.nodes.len() {
            bail!("bad node {t} at depth {depth} (cycle or dangling link)");
        }
        let n = &self.nodes[t as usize];
        if n.owner != self.t.id {
            bail!("node {t} in timeline {}'s tree is marked as timeline {}'s", self.t.id, n.owner);
        }
        let hl = self.check_sub(n.kid[0], walk, depth + 1)?;
        self.visit(t, walk)?;
        let hr = self.check_sub(n.kid[1], walk, depth + 1)?;
        if hl.abs_diff(hr) > 1 {
            bail!("node {t}: unbalanced, children heights {hl}/{hr}");
        }
        let stored = (n.height, n.min_vruntime, n.min_slice, n.max_slice);
        if stored != self.derived(t) {
            bail!("node {t}: stored {stored:?}, derived {:?}", self.derived(t));
        }
        Ok(n.height)
    }
}

/// Where [`TimelineRef::check_queued`]'s walk of the threaded list is.
struct ListWalk {
    /// The list's node expected next.
    at: u32,
    /// The node visited last.
    prev: u32,
    seen: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One timeline with nodes of its own, the old interface for the tests.
    struct Solo {
        t: Timeline,
        n: RunNodes,
    }

    impl Solo {
        fn new() -> Self {
            Self::with_capacity(0)
        }
        fn with_capacity(n: usize) -> Self {
            Solo { t: Timeline::new(0), n: RunNodes::with_capacity(n) }
        }
        fn r(&self) -> TimelineRef<'_> {
            self.n.view(&self.t)
        }
        fn insert(&mut self, id: u32, d: i64, v: i64, s: u64) {
            self.n.view_mut(&mut self.t).insert(id, d, v, s)
        }
        fn remove(&mut self, id: u32) {
            self.n.view_mut(&mut self.t).remove(id)
        }
        fn set_slice(&mut self, id: u32, s: u64) {
            self.n.view_mut(&mut self.t).set_slice(id, s)
        }
        fn check(&self) -> Result<(), TimelineError> {
            self.r().check()
        }
        fn contains(&self, id: u32) -> bool {
            self.r().contains(id)
        }
        fn len(&self) -> usize {
            self.t.len()
        }
        fn is_empty(&self) -> bool {
            self.t.is_empty()
        }
        fn first(&self) -> Option<u32> {
            self.t.first()
        }
        fn last(&self) -> Option<u32> {
            self.r().last()
        }
        fn min_vruntime(&self) -> Option<i64> {
            self.r().min_vruntime()
        }
        fn min_slice(&self) -> Option<u64> {
            self.r().min_slice()
        }
        fn max_slice(&self) -> Option<u64> {
            self.r().max_slice()
        }
        fn entity(&self, id: u32) -> Option<(i64, i64, u64)> {
            self.r().entity(id)
        }
        fn pick_eligible(&self, f: impl Fn(i64) -> bool) -> Option<u32> {
            self.r().pick_eligible(f)
        }
    }

    fn ids(t: &Solo) -> Vec<u32> {
        t.r().iter().collect()
    }

    #[test]
    fn orders_by_deadline() {
        let mut t = Solo::new();
        for (id, d) in [(3, 30), (1, 10), (4, -5), (2, 20), (0, 25)] {
            t.insert(id, d, 0, 1);
            t.check().unwrap();
        }
        assert_eq!(ids(&t), vec![4, 1, 2, 0, 3]);
        assert_eq!((t.first(), t.last(), t.len()), (Some(4), Some(3), 5));
        assert_eq!(t.entity(2), Some((20, 0, 1)));
        assert_eq!(t.entity(9), None);
    }

    #[test]
    fn check_queued_finds_a_broken_list() {
        let mut t = Solo::new();
        for (id, d) in [(3, 30), (1, 10), (4, -5), (2, 20), (0, 25)] {
            t.insert(id, d, 0, 1);
        }
        t.r().check_queued().unwrap();
        // In order: 4, 1, 2, 0, 3.
        type Corrupt = fn(&mut Solo);
        let corruptions: [(&str, Corrupt); 5] = [
            ("the list has", |t| t.n.nodes[1].next = 0),
            ("links back", |t| t.n.nodes[2].prev = 4),
            ("tail", |t| t.t.tail = 0),
            ("len", |t| t.t.len = 4),
            ("goes on", |t| t.n.nodes[3].next = 1),
        ];
        for (what, corrupt) in corruptions {
            let mut broken = Solo { t: t.t.clone(), n: t.n.clone() };
            corrupt(&mut broken);
            let err = broken.r().check_queued().expect_err(what).to_string();
            assert!(err.contains(what), "{what}: {err}");
        }
    }

    #[test]
    fn equal_deadlines_are_fifo() {
        let mut t = Solo::with_capacity(8);
        for id in [5, 2, 7, 0] {
            t.insert(id, 100, 0, 1);
        }
        t.insert(1, 50, 0, 1);
        assert_eq!(ids(&t), vec![1, 5, 2, 7, 0]);
        // Re-inserting moves an entity behind its equal-deadline peers.
        t.remove(5);
        t.insert(5, 100, 0, 1);
        t.check().unwrap();
        assert_eq!(ids(&t), vec![1, 2, 7, 0, 5]);
        assert_eq!(t.pick_eligible(|_| true), Some(1));
    }

    #[test]
    fn remove_and_reinsert() {
        let mut t = Solo::new();
        for id in 0..20u32 {
            t.insert(id, (id as i64 * 7) % 11, id as i64, 1);
        }
        for id in (0..20).step_by(3) {
            t.remove(id);
            t.check().unwrap();
            assert!(!t.contains(id));
        }
        assert_eq!(t.len(), 13);
        t.insert(3, -100, 0, 1);
        assert_eq!(t.first(), Some(3));
        while let Some(f) = t.first() {
            t.remove(f);
            t.check().unwrap();
        }
        assert!(t.is_empty());
        assert_eq!((t.first(), t.last(), t.min_vruntime()), (None, None, None));
        assert_eq!(t.pick_eligible(|_| true), None);
    }

    #[test]
    fn aggregates_follow_membership() {
        let aggs = |t: &Solo| (t.min_vruntime(), t.min_slice(), t.max_slice());
        let mut t = Solo::new();
        t.insert(0, 10, 50, 3_000);
        t.insert(1, 20, -7, 700);
        t.insert(2, 30, 12, 9_000);
        assert_eq!(aggs(&t), (Some(-7), Some(700), Some(9_000)));
        t.remove(1);
        assert_eq!(aggs(&t), (Some(12), Some(3_000), Some(9_000)));
        t.remove(2);
        assert_eq!(aggs(&t), (Some(50), Some(3_000), Some(3_000)));
    }

    #[test]
    fn set_slice_keeps_the_order_and_refreshes_the_aggregates() {
        let mut t = Solo::new();
        for i in 0..40u32 {
            t.insert(i, (i as i64 * 7) % 23, i as i64, 1_000 + i as u64);
        }
        let order = ids(&t);
        t.set_slice(17, 10);
        t.set_slice(3, 90_000);
        assert_eq!(ids(&t), order, "a slice is not part of the key");
        assert_eq!((t.min_slice(), t.max_slice()), (Some(10), Some(90_000)));
        assert_eq!(t.entity(17), Some(((17 * 7) % 23, 17, 10)));
        t.check().unwrap();
        t.set_slice(17, 5_000);
        t.set_slice(3, 1_003);
        assert_eq!((t.min_slice(), t.max_slice()), (Some(1_000), Some(5_000)));
    }

    #[test]
    fn timelines_sharing_the_nodes_hold_their_own_entities() {
        let mut nodes = RunNodes::default();
        let (mut a, mut b) = (Timeline::new(0), Timeline::new(1));
        nodes.view_mut(&mut a).insert(7, 10, 0, 1);
        nodes.view_mut(&mut b).insert(3, 5, 0, 1);
        nodes.view_mut(&mut b).insert(9, 1, 0, 1);
        assert!(nodes.view(&a).contains(7) && !nodes.view(&b).contains(7));
        assert!(!nodes.view(&a).contains(9) && nodes.view(&b).contains(9));
        assert_eq!(nodes.view(&a).iter().collect::<Vec<_>>(), vec![7]);
        assert_eq!(nodes.view(&b).iter().collect::<Vec<_>>(), vec![9, 3]);
        // An entity moves: out of one tree, into the other (a migration).
        nodes.view_mut(&mut a).remove(7);
        nodes.view_mut(&mut b).insert(7, 2, 0, 1);
        assert_eq!(nodes.view(&b).iter().collect::<Vec<_>>(), vec![9, 7, 3]);
        nodes.view(&a).check().unwrap();
        nodes.view(&b).check().unwrap();
        assert!(a.is_empty() && b.len() == 3, "one node per entity, whichever tree holds it");
        assert_eq!(nodes.nodes.len(), 10);
    }

    #[test]
    fn pick_skips_ineligible_leftmost() {
        let mut t = Solo::new();
        t.insert(0, 10, 100, 1); // earliest deadline, but far ahead in vruntime
        t.insert(1, 20, 5, 1);
        t.insert(2, 30, 0, 1);
        assert_eq!(t.pick_eligible(|v| v <= 100), Some(0));
        assert_eq!(t.pick_eligible(|v| v <= 5), Some(1));
        assert_eq!(t.pick_eligible(|v| v <= 4), Some(2));
        assert_eq!(t.pick_eligible(|v| v < 0), None);
    }

    #[test]
    fn pick_descent_is_logarithmic() {
        let n = 4096u32;
        let mut t = Solo::with_capacity(n as usize);
        let mut x = 0x9e37_79b9u64;
        for id in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            t.insert(id, (x >> 40) as i64, (x >> 20 & 0xfffff) as i64, 1);
        }
        t.check().unwrap();
        let cap = t.n.nodes.capacity();
        for id in 0..n / 2 {
            t.remove(id);
            t.insert(id, id as i64, -(id as i64), 1);
        }
        assert_eq!(t.n.nodes.capacity(), cap, "steady state must not reallocate");
        let height = t.n.nodes[t.t.root as usize].height as usize;
        assert!(height <= 18, "AVL height {height} too large for {n} nodes");
        let calls = std::cell::Cell::new(0usize);
        let picked = t.pick_eligible(|v| {
            calls.set(calls.get() + 1);
            v <= -(n as i64 / 2 - 10)
        });
        assert!(picked.is_some());
        assert!(calls.get() <= 2 * height + 1, "{} eligibility calls", calls.get());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn matches_brute_force_oracle(ops in prop::collection::vec(
            (0u32..64, -12i64..12, -12i64..12, 1u64..6, prop::collection::vec(-14i64..14, 4)),
            1..400,
        )) {
            let mut t = Solo::new();
            // Oracle: (id, deadline, vruntime, slice) in insertion order.
            let mut oracle: Vec<(u32, i64, i64, u64)> = Vec::new();
            for (id, deadline, vruntime, slice, probes) in ops {
                // Toggle membership of `id`: remove if queued, otherwise insert.
                if let Some(pos) = oracle.iter().position(|e| e.0 == id) {
                    oracle.remove(pos);
                    t.remove(id);
                } else {
                    oracle.push((id, deadline, vruntime, slice));
                    t.insert(id, deadline, vruntime, slice);
                }
                if let Err(e) = t.check() {
                    return Err(TestCaseError::fail(e.to_string()));
                }
                let mut sorted = oracle.clone();
                sorted.sort_by_key(|e| e.1); // stable: ties stay in insertion order
                let want: Vec<u32> = sorted.iter().map(|e| e.0).collect();
                prop_assert_eq!(ids(&t), want.clone());
                prop_assert_eq!(t.first(), want.first().copied());
                prop_assert_eq!(t.last(), want.last().copied());
                prop_assert_eq!(t.len(), oracle.len());
                prop_assert_eq!(t.min_vruntime(), oracle.iter().map(|e| e.2).min());
                prop_assert_eq!(t.min_slice(), oracle.iter().map(|e| e.3).min());
                prop_assert_eq!(t.max_slice(), oracle.iter().map(|e| e.3).max());
                for v in probes {
                    let best = sorted.iter().find(|e| e.2 <= v).map(|e| e.0);
                    prop_assert_eq!(t.pick_eligible(|x| x <= v), best, "V = {}", v);
                }
                for e in &oracle {
                    prop_assert_eq!(t.entity(e.0), Some((e.1, e.2, e.3)));
                }
            }
        }
    }
}
