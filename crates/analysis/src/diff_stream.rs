//! [`crate::diff_traces`] over two event streams, in memory bounded by the
//! report rather than by the runs: `schedlab diff` feeds it both simulations
//! as they run.
//!
//! Events are compared by index, as the whole-trace function does. Until the
//! runs part ways only the side that is ahead has events waiting for their
//! counterpart (the caller keeps the two streams close: [`DiffStream::behind`]
//! says which one to read next); the common prefix is folded into the CPU
//! state ([`CpuStateFold`]) and the last `context` events. After the
//! divergence each side keeps its first `after` events and, for the tasks
//! the divergent events name, its next decision of each family; everything
//! else only counts.

use std::collections::{BTreeSet, VecDeque};

use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

use crate::diff::{
    cpus_named, decision_cpus, decision_family, describe_event, line_of, same_step, tasks_named, CpuStateFold,
    DiffLine, DiffOptions, Divergence, DivergentSide, NextDecision, FAMILIES, MAX_NEXT_DECISIONS,
};

/// One side's first decision of one family about one task, from the divergence on.
#[derive(Clone, Debug)]
struct Found {
    event: Event,
    line: DiffLine,
    meaning: String,
}

/// What is kept once the runs have parted.
#[derive(Debug)]
struct Parted {
    index: usize,
    ts: u64,
    before: Vec<DiffLine>,
    /// Each side's divergent event, line and meaning (`None`: it had ended).
    first: [Option<(Event, DiffLine, String)>; 2],
    after: [Vec<DiffLine>; 2],
    /// The tasks the divergent events name, in the order they name them.
    pids: Vec<Pid>,
    /// Per task of `pids` and family of [`FAMILIES`], each side's find.
    found: Vec<[Option<Found>; 2]>,
    /// Searches still open per side (the walk stops looking once all are found).
    open: [usize; 2],
}

/// The divergence of two event streams, A (side 0) and B (side 1).
#[derive(Debug)]
pub struct DiffStream {
    opts: DiffOptions,
    tables: [TaskTable; 2],
    /// Events each side has delivered.
    seen: [usize; 2],
    /// Before the divergence: the events of the side that is ahead, not yet
    /// compared (the other side's queue is empty).
    waiting: [VecDeque<Event>; 2],
    /// Events compared and equal.
    common: usize,
    /// The last `context` common events.
    recent: VecDeque<Event>,
    prefix: CpuStateFold,
    parted: Option<Box<Parted>>,
}

impl DiffStream {
    pub fn new(opts: DiffOptions) -> Self {
        DiffStream {
            opts,
            tables: [TaskTable::default(), TaskTable::default()],
            seen: [0; 2],
            waiting: [VecDeque::new(), VecDeque::new()],
            common: 0,
            recent: VecDeque::new(),
            prefix: CpuStateFold::default(),
            parted: None,
        }
    }

    /// Side `side`'s task table as its stream begins.
    pub fn start(&mut self, side: usize, table: &TaskTable) {
        self.tables[side] = table.clone();
    }

    /// A task side `side` created (before the events that name it).
    pub fn task_new(&mut self, side: usize, pid: Pid, info: &TaskInfo) {
        self.tables[side].tasks.insert(pid, info.clone());
    }

    /// The side that has delivered fewer events: read it next to keep the
    /// waiting queue short before the divergence.
    pub fn behind(&self) -> usize {
        usize::from(self.seen[1] < self.seen[0])
    }

    /// Events each side has delivered so far.
    pub fn seen(&self) -> [usize; 2] {
        self.seen
    }

    /// Events waiting for their counterpart (the memory this holds).
    pub fn waiting(&self) -> usize {
        self.waiting[0].len() + self.waiting[1].len()
    }

    /// The next event of side `side`.
    pub fn event(&mut self, side: usize, ev: &Event) {
        let index = self.seen[side];
        self.seen[side] += 1;
        if self.parted.is_some() {
            return self.after_parting(side, ev, index);
        }
        let other = 1 - side;
        let Some(theirs) = self.waiting[other].pop_front() else {
            self.waiting[side].push_back(*ev);
            return;
        };
        if same_step(ev, &theirs) {
            self.common += 1;
            self.prefix.observe(ev);
            if self.opts.context > 0 {
                if self.recent.len() == self.opts.context {
                    self.recent.pop_front();
                }
                self.recent.push_back(*ev);
            }
            return;
        }
        let mut pair = [None, None];
        pair[side] = Some(*ev);
        pair[other] = Some(theirs);
        self.part(pair);
        // The other side's events past the divergent one, in their order.
        let rest: Vec<Event> = self.waiting[other].drain(..).collect();
        for (k, e) in rest.iter().enumerate() {
            self.after_parting(other, e, self.common + 1 + k);
        }
    }

    /// The runs part at index `self.common` with these events.
    fn part(&mut self, pair: [Option<Event>; 2]) {
        let index = self.common;
        let ts = pair.iter().flatten().map(|e| e.ts).min().expect("one side has an event");
        let start = index - self.recent.len();
        let before = self.recent.iter().enumerate().map(|(k, e)| line_of(&self.tables[0], e, start + k)).collect();
        let mut pids = Vec::new();
        for e in pair.iter().flatten() {
            for p in tasks_named(&e.kind) {
                if !pids.contains(&p) {
                    pids.push(p);
                }
            }
        }
        let searches = pids.len() * FAMILIES.len();
        self.parted = Some(Box::new(Parted {
            index,
            ts,
            before,
            first: [None, None],
            after: [Vec::new(), Vec::new()],
            pids,
            found: vec![[None, None]; searches],
            open: [searches; 2],
        }));
        for (side, e) in pair.iter().enumerate() {
            if let Some(e) = e {
                let line = line_of(&self.tables[side], e, index);
                let meaning = describe_event(&self.tables[side], e);
                self.parted.as_mut().expect("just set").first[side] = Some((*e, line, meaning));
                self.after_parting(side, e, index);
            }
        }
    }

    /// Side `side`'s `index`-th event, at or past the divergence.
    fn after_parting(&mut self, side: usize, ev: &Event, index: usize) {
        let table = &self.tables[side];
        let p = self.parted.as_mut().expect("parted");
        if p.after[side].len() < self.opts.after {
            p.after[side].push(line_of(table, ev, index));
        }
        if p.open[side] == 0 {
            return;
        }
        let Some((pid, family)) = decision_family(&ev.kind) else { return };
        let Some(t) = p.pids.iter().position(|&x| x == pid) else { return };
        let f = FAMILIES.iter().position(|&x| x == family).expect("a known family");
        let slot = &mut p.found[t * FAMILIES.len() + f][side];
        if slot.is_none() {
            *slot = Some(Found { event: *ev, line: line_of(table, ev, index), meaning: describe_event(table, ev) });
            p.open[side] -= 1;
        }
    }

    /// Both streams have ended: where they part, or `None` when every event agrees.
    pub fn finish(mut self) -> Option<Divergence> {
        if self.parted.is_none() {
            // Equal as far as the shorter went; the longer one's rest waits.
            let longer = usize::from(self.waiting[1].len() > self.waiting[0].len());
            let rest: Vec<Event> = self.waiting[longer].drain(..).collect();
            let first = *rest.first()?;
            let mut pair = [None, None];
            pair[longer] = Some(first);
            self.part(pair);
            for (k, e) in rest.iter().enumerate().skip(1) {
                self.after_parting(longer, e, self.common + k);
            }
        }
        let p = *self.parted.take().expect("parted");
        let mut cpus: BTreeSet<u32> = BTreeSet::new();
        for (e, _, _) in p.first.iter().flatten() {
            cpus.extend(cpus_named(e));
        }
        let mut next_decisions = Vec::new();
        'pids: for (t, &pid) in p.pids.iter().enumerate() {
            for (f, &family) in FAMILIES.iter().enumerate() {
                let [a, b] = &p.found[t * FAMILIES.len() + f];
                let same = match (a, b) {
                    (None, None) => true,
                    (Some(x), Some(y)) => x.event.kind == y.event.kind && x.event.cpu == y.event.cpu,
                    _ => false,
                };
                if same {
                    continue;
                }
                for found in [a, b].into_iter().flatten() {
                    cpus.extend(decision_cpus(&found.event));
                }
                let pick = |x: &Option<Found>| x.as_ref().map(|x| (x.line.clone(), x.meaning.clone()));
                next_decisions.push(NextDecision {
                    pid,
                    comm: self.tables[0].comm(pid).to_string(),
                    family,
                    a: pick(a),
                    b: pick(b),
                });
                if next_decisions.len() == MAX_NEXT_DECISIONS {
                    break 'pids;
                }
            }
        }
        let cpus: Vec<u32> = cpus.into_iter().collect();
        let [first_a, first_b] = p.first;
        let [after_a, after_b] = p.after;
        let side = |first: Option<(Event, DiffLine, String)>, after: Vec<DiffLine>, total: usize| {
            let (event, meaning) = first.map(|(_, l, m)| (l, m)).unzip();
            DivergentSide { event, meaning, after, total_events: total }
        };
        Some(Divergence {
            index: p.index,
            ts: p.ts,
            before: p.before,
            a: side(first_a, after_a, self.seen[0]),
            b: side(first_b, after_b, self.seen[1]),
            next_decisions,
            cpus: self.prefix.states(&self.tables[0], &cpus, p.ts),
        })
    }
}
