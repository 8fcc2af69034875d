//! [`attribute_stalls`] as the events arrive: each stall is explained from
//! a bounded window of the trace, the same way the whole trace explains it.
//!
//! A stall's story reads the events from a little before the waker's
//! signal ([`LOOKBACK_NS`]) to the wakee's wait returning, plus what the
//! trace said earlier and still holds: each CPU's last switch (who runs
//! there), each task's last switch and what it did since (where the
//! wakee's replay starts), each task's last migration with the balancer's
//! event beside it and each CPU pair's last queued active balance (how a
//! task reached its CPU). Events older than the oldest open handoff's
//! signal minus the lookback are folded into those records and dropped,
//! so memory is the events of the longest open handoff, plus a record per
//! task and CPU (and at most [`MAX_WINDOW_EVENTS`]). The stories are then
//! [`attribute_stalls`] on that window, [`STALL_BATCH`] ended stalls at a
//! time (each pins the window until told, so fewer once the window they
//! pin has doubled: [`MIN_EXPLAIN_WINDOW`]), one attribution per run of
//! stalls whose spans overlap, and the cause table is built over all of
//! them. A streamed `run` and `analyze` of a file use
//! it; the commands that keep a trace attribute on the whole of it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use std::collections::{BTreeMap, VecDeque};

use schedlab_trace::{Event, EventKind, Nanos, Pid, TaskTable, Trace, UserOp};

use crate::attribution::{attribute_stalls, AttributionOptions, Tally, RESCHED_REACH};
use crate::causes::{Attribution, StallStory};
use crate::handoff::KEPT_STALLS;

/// Events kept before a stall's signal.
pub const LOOKBACK_NS: Nanos = 20_000_000;

/// ... but no more events before the oldest open handoff's signal than
/// this: 20 ms of a 224-CPU schbench is ~950 k events, most of a 60 s
/// run's peak memory. The records carry what a story needs from before
/// its signal (tests/stall_window.rs tells the same stories with no
/// lookback at all); the lookback is a margin, and this bounds its cost.
pub const LOOKBACK_EVENTS: usize = 1 << 16;

/// The most events the window holds: a handoff that stays open (a signal
/// nobody waits for) would otherwise keep every later event. Past it the
/// oldest are folded anyway, and a stall whose signal went with them is
/// counted in [`AttributionCollector::lost`] instead of explained.
pub const MAX_WINDOW_EVENTS: usize = 1 << 21;

/// Stalls explained together. Stalls whose spans (from the signal less
/// the lookback to the end) overlap share one attribution of their union;
/// explained one at a time, dense stalls cost stalls x span: 357 stalls of
/// a 16 k-thread schbench took 28 s for 2 ms of it (2026-12-04).
pub const STALL_BATCH: usize = 64;

/// Pending stalls are also explained once the window they pin has grown to
/// twice what it held after its last trim, and at least this many events:
/// a run whose stalls are seconds apart would otherwise hold seconds of
/// events until [`STALL_BATCH`] of them had ended (asym_min: ~360 k events
/// per batch, 300 MB at 120 s). Doubling keeps the passes over the window
/// paid for by as many new events. 8 k events are 512 KiB, which fits a
/// core's L2; at 64 k, asym_min's window averaged 22 k events (1.4 MB),
/// and a 10 s run ran 2.0 % more instructions and first touched ~7 MB
/// more memory (cachegrind: 173 k against 59 k misses of a last-level
/// cache larger than the run; issue 39). The stories do not depend on
/// the bound: the sim crate's tests/stall_window.rs holds them to the
/// whole trace's.
pub const MIN_EXPLAIN_WINDOW: usize = 1 << 13;

/// The most events [`Records`] keeps per task since its last switch: the
/// replay of a wakee needs what happened to it since it blocked, which is a
/// handful of events; a task that never blocks would otherwise keep all.
const MAX_SINCE_SWITCH: usize = 4096;

/// An event and its place in the stream (ties at one instant keep their order).
type Seq = (u64, Event);

/// What the trace said before the window and still holds.
#[derive(Clone, Default)]
struct Records {
    /// By CPU: each one's last switch (a lookup per switch folded).
    cpu_switch: Vec<Option<Seq>>,
    /// pid → its last switch and every later event about it.
    since_switch: HashMap<Pid, Vec<Seq>>,
    /// pid → its last `sched_migrate_task` and the balancer's event at that instant.
    migration: HashMap<Pid, Vec<Seq>>,
    active_queued: BTreeMap<(u32, u32), Seq>,
    /// How many events were folded, the instant of the last, and the
    /// wakeups (new or not) and migrations folded at that instant within
    /// [`RESCHED_REACH`] of the last: (their count, the task). A story reads
    /// the `resched_curr()` that follows its wakee's wakeup or move at the
    /// same instant (`Builder::resched_step`); that event is about no task,
    /// so it joins the lists of the tasks these name.
    folded: u64,
    folded_ts: Nanos,
    moved_at: VecDeque<(u64, Pid)>,
}

/// The pids an event is about, as the attribution indexes them (0: none).
pub(crate) fn about(ev: &Event) -> [Pid; 2] {
    match ev.kind {
        EventKind::SchedWaking { pid, .. }
        | EventKind::SchedWakeup { pid, .. }
        | EventKind::SchedWakeupNew { pid, .. }
        | EventKind::Ttwu { pid, .. }
        | EventKind::Delayed { pid, .. }
        | EventKind::LbMigrate { pid, .. }
        | EventKind::WakeupPreempt { wakee: pid, .. }
        | EventKind::SchedMigrateTask { pid, .. }
        | EventKind::User { pid, .. } => [pid, 0],
        EventKind::SchedSwitch { prev_pid, next_pid, .. } => {
            [prev_pid, if next_pid == prev_pid { 0 } else { next_pid }]
        }
        _ => [0, 0],
    }
}

impl Records {
    fn fold(&mut self, se: &Seq) {
        self.fold_keeping(se, |_| true);
    }

    /// [`Records::fold`], keeping the events since their last switch only
    /// of the tasks `keep` names (a task's list is read and written only by
    /// events about it, so the others' lists are those of a full fold).
    fn fold_keeping(&mut self, se: &Seq, keep: impl Fn(Pid) -> bool) {
        let ev = &se.1;
        self.fold_resched_reach(se, &keep);
        match ev.kind {
            EventKind::SchedSwitch { .. } => {
                let cpu = ev.cpu as usize;
                if cpu >= self.cpu_switch.len() {
                    self.cpu_switch.resize(cpu + 1, None);
                }
                self.cpu_switch[cpu] = Some(*se);
                for pid in about(ev).into_iter().filter(|&p| p != 0 && keep(p)) {
                    // The replay starts at the switch and the events at its
                    // instant before it (a dequeue's decision events).
                    let list = self.since_switch.entry(pid).or_default();
                    list.retain(|e| e.1.ts == ev.ts);
                    list.push(*se);
                }
                return;
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } => {
                // With the stopper's queueing that led to it, if any.
                let queued = self.active_queued.get(&(orig_cpu, dest_cpu)).copied();
                self.migration.insert(pid, queued.into_iter().chain([*se]).collect());
            }
            EventKind::LbMigrate { pid, .. } => {
                if let Some(m) = self.migration.get_mut(&pid).filter(|m| m.last().is_some_and(|l| l.1.ts == ev.ts)) {
                    m.push(*se);
                }
            }
            EventKind::ActiveBalanceQueued { src_cpu, dst_cpu } => {
                self.active_queued.insert((src_cpu, dst_cpu), *se);
            }
            _ => {}
        }
        // A workload marker before the window tells a replay nothing: a
        // story reads its wakee's markers from its signal on (attribution.rs),
        // and its signal is in the window. A task that never blocks marks
        // every loop: they would only fill its list.
        if matches!(ev.kind, EventKind::User { .. }) {
            return;
        }
        for pid in about(ev).into_iter().filter(|&p| p != 0 && keep(p)) {
            self.push_since_switch(pid, se);
        }
    }

    /// Add `se` to `pid`'s events since its last switch.
    fn push_since_switch(&mut self, pid: Pid, se: &Seq) {
        let list = self.since_switch.entry(pid).or_default();
        if list.len() >= MAX_SINCE_SWITCH {
            // A task that never switches (a hog woken again and again
            // while it runs) keeps its switch and the latest events.
            let keep_from = list.len() - MAX_SINCE_SWITCH / 2;
            let head = usize::from(list.first().is_some_and(|e| matches!(e.1.kind, EventKind::SchedSwitch { .. })));
            list.drain(head..keep_from);
        }
        list.push(*se);
    }

    /// Counts the event (every event counts toward the reach) and puts a
    /// `resched_curr()` in the lists of the tasks a wakeup or move within
    /// reach before it at its instant names, each once. A list may then
    /// hold one a story would not have read: a second wakeup or move of
    /// the task at that instant within reach of it, the first not.
    fn fold_resched_reach(&mut self, se: &Seq, keep: &impl Fn(Pid) -> bool) {
        let ev = &se.1;
        self.folded += 1;
        if ev.ts != self.folded_ts {
            self.folded_ts = ev.ts;
            self.moved_at.clear();
        }
        while self.moved_at.front().is_some_and(|&(at, _)| self.folded - at > RESCHED_REACH as u64) {
            self.moved_at.pop_front();
        }
        match ev.kind {
            EventKind::Resched { .. } => {
                for k in 0..self.moved_at.len() {
                    let pid = self.moved_at[k].1;
                    let named_before = self.moved_at.iter().take(k).any(|&(_, p)| p == pid);
                    if !named_before && keep(pid) {
                        self.push_since_switch(pid, se);
                    }
                }
            }
            EventKind::SchedWakeup { pid, .. }
            | EventKind::SchedWakeupNew { pid, .. }
            | EventKind::SchedMigrateTask { pid, .. } => self.moved_at.push_back((self.folded, pid)),
            _ => {}
        }
    }

    fn events(&self) -> Vec<Seq> {
        let mut v: Vec<Seq> = self.cpu_switch.iter().flatten().copied().collect();
        v.extend(self.since_switch.values().flatten().copied());
        v.extend(self.migration.values().flatten().copied());
        v.extend(self.active_queued.values().copied());
        v
    }
}

/// The events of `window` (in sequence order) and `records` (sorted by
/// sequence) as one list in sequence order, each sequence once (a record
/// may hold an event twice, or one the window holds). Built straight into
/// events: the window is copied once (it was copied as (seq, event) pairs
/// first: 13 % of a run's time and twice the window's memory, issue 39).
fn merged_events<'a>(window: impl Iterator<Item = &'a Seq>, records: &[Seq], events: &mut Vec<Event>) {
    events.clear();
    let mut kept = window.peekable();
    let mut told = records.iter().peekable();
    let mut last = None;
    loop {
        let next = match (kept.peek(), told.peek()) {
            (Some(w), Some(r)) if r.0 < w.0 => told.next(),
            (Some(_), _) => kept.next(),
            (None, Some(_)) => told.next(),
            (None, None) => break,
        };
        let &(seq, ev) = next.expect("peeked");
        if last != Some(seq) {
            events.push(ev);
            last = Some(seq);
        }
    }
}

/// The attribution of a stream, stall by stall.
pub struct AttributionCollector {
    opts: AttributionOptions,
    table: TaskTable,
    nr_cpus: u32,
    window: VecDeque<Seq>,
    records: Records,
    seq: u64,
    /// obj → the first signal of the handoff in flight (as the whole-trace
    /// attribution and `HandoffTracker` pair them; a wait's latency is
    /// measured from it).
    signals: HashMap<u32, Nanos>,
    /// The same, ordered by time: the oldest open handoff bounds the window.
    open: std::collections::BTreeSet<(Nanos, u32)>,
    /// Its first signal (`Nanos::MAX` when none), kept as it changes: read
    /// at every event (issue 39).
    open_oldest: Nanos,
    /// The stories told: each counted in the cause table, the first kept.
    tally: Tally,
    /// Stalls ended but not yet explained: `(signal, end, obj, wakee)`, in
    /// the order they ended. Explained together ([`STALL_BATCH`]).
    pending: Vec<(Nanos, Nanos, u32, Pid)>,
    /// The earliest signal of `pending` (`Nanos::MAX` when empty): read at
    /// every event, where a scan of up to [`STALL_BATCH`] stalls was ~2 %
    /// of a run (issue 39).
    pending_oldest: Nanos,
    lookback_ns: Nanos,
    max_window: usize,
    /// Window length past which pending stalls are explained (see
    /// [`MIN_EXPLAIN_WINDOW`]).
    explain_at: usize,
    /// Stalls not explained: their signal had left the window (a handoff
    /// open longer than [`MAX_WINDOW_EVENTS`] events).
    pub lost: u64,
    /// The events of the last explanation, kept for the next: a fresh
    /// window-sized buffer each time is fresh memory, paid in page faults
    /// (issue 39).
    explained_events: Vec<Event>,
}

impl AttributionCollector {
    pub fn new(opts: &AttributionOptions, table: &TaskTable, nr_cpus: u32) -> Self {
        AttributionCollector {
            opts: opts.clone(),
            table: table.clone(),
            nr_cpus,
            window: VecDeque::new(),
            records: Records::default(),
            seq: 0,
            signals: HashMap::default(),
            open: std::collections::BTreeSet::new(),
            open_oldest: Nanos::MAX,
            tally: Tally::new(opts.stall_threshold_ns, KEPT_STALLS),
            pending: Vec::new(),
            pending_oldest: Nanos::MAX,
            lookback_ns: LOOKBACK_NS,
            max_window: MAX_WINDOW_EVENTS,
            explain_at: MIN_EXPLAIN_WINDOW,
            lost: 0,
            explained_events: Vec::new(),
        }
    }

    /// A task created mid-run, before its first event (see
    /// [`crate::WorkConsCollector::task_new`]).
    pub fn task_new(&mut self, pid: Pid, info: &schedlab_trace::TaskInfo, allowed: Option<Vec<u32>>) {
        self.table.tasks.insert(pid, info.clone());
        if let Some(a) = allowed {
            self.opts.allowed.insert(pid, a);
        }
    }

    /// Keep `ns` before each signal instead of [`LOOKBACK_NS`] (the records
    /// carry the rest: tests run it with none).
    pub fn with_lookback(mut self, ns: Nanos) -> Self {
        self.lookback_ns = ns;
        self
    }

    /// Keep the first `n` stories instead of [`KEPT_STALLS`] (every story
    /// is in the cause table whatever `n`).
    pub fn with_kept_stalls(mut self, n: usize) -> Self {
        self.tally.keep(n);
        self
    }

    /// Hold at most `n` events instead of [`MAX_WINDOW_EVENTS`] (tests).
    pub fn with_max_window(mut self, n: usize) -> Self {
        self.max_window = n;
        self
    }

    pub fn observe(&mut self, ev: &Event) {
        if self.opts.end_ts.is_some_and(|e| ev.ts > e) {
            return;
        }
        self.window.push_back((self.seq, *ev));
        self.seq += 1;
        if let EventKind::User { pid, op } = ev.kind {
            match op {
                UserOp::Signal { obj } => {
                    if let std::collections::hash_map::Entry::Vacant(v) = self.signals.entry(obj) {
                        v.insert(ev.ts);
                        self.open.insert((ev.ts, obj));
                        self.open_oldest = self.open_oldest.min(ev.ts);
                    }
                }
                UserOp::WaitDone { obj } => {
                    let signal = self.signals.remove(&obj);
                    if let Some(s) = signal {
                        self.open.remove(&(s, obj));
                        self.open_oldest = self.open.first().map_or(Nanos::MAX, |&(t, _)| t);
                    }
                    if let Some(s) = signal {
                        if ev.ts.saturating_sub(s) >= self.opts.stall_threshold_ns {
                            self.pending.push((s, ev.ts, obj, pid));
                            self.pending_oldest = self.pending_oldest.min(s);
                            if self.pending.len() >= STALL_BATCH {
                                self.explain_pending();
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        // Fold what no open handoff's or unexplained stall's story can read any more.
        let explained = !self.pending.is_empty() && self.window.len() > self.explain_at.min(self.max_window);
        if explained {
            self.explain_pending();
        }
        let oldest = self.open_oldest.min(ev.ts).min(self.pending_oldest);
        let horizon = oldest.saturating_sub(self.lookback_ns);
        while self
            .window
            .front()
            .is_some_and(|e| e.1.ts < horizon || (e.1.ts < oldest && self.window.len() > LOOKBACK_EVENTS))
            || self.window.len() > self.max_window
        {
            let e = self.window.pop_front().expect("checked");
            self.records.fold(&e);
        }
        if explained {
            self.explain_at = MIN_EXPLAIN_WINDOW.max(2 * self.window.len());
        }
    }

    /// The stories of the pending stalls. A story reads only its own
    /// handoff's span (from its signal less the lookback to its end) and
    /// what the records say of before, so each is the one a run of its own
    /// would tell (tests/stall_window.rs compares them with the whole
    /// trace's). Stalls whose spans overlap are told by one attribution of
    /// their union; the others each by one of their own span. One
    /// attribution from the earliest signal to the window's end read every
    /// event of the window for a few stalls seconds apart (asym_min: ~6 %
    /// of a run, issue 39); dense stalls still share one pass.
    fn explain_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_oldest = Nanos::MAX;
        let lookback = self.lookback_ns;
        let mut by_span: Vec<(Nanos, Nanos)> = pending.iter().map(|p| (p.0.saturating_sub(lookback), p.1)).collect();
        by_span.sort_unstable();
        let mut clusters: Vec<(Nanos, Nanos)> = Vec::new();
        for (from, end) in by_span {
            match clusters.last_mut() {
                Some(last) if from <= last.1 => last.1 = last.1.max(end),
                _ => clusters.push((from, end)),
            }
        }
        let mut before = Records {
            cpu_switch: self.records.cpu_switch.clone(),
            since_switch: HashMap::default(),
            migration: self.records.migration.clone(),
            active_queued: self.records.active_queued.clone(),
            folded: self.records.folded,
            folded_ts: self.records.folded_ts,
            moved_at: self.records.moved_at.clone(),
        };
        // Only the wakees' replays read a task's events since its switch.
        let wakees: FxHashSet<Pid> = pending.iter().map(|p| p.3).collect();
        for &w in &wakees {
            if let Some(list) = self.records.since_switch.get(&w) {
                before.since_switch.insert(w, list.clone());
            }
        }
        let mut told: HashMap<(Nanos, Nanos, Pid), StallStory> = HashMap::default();
        let events = std::mem::take(&mut self.explained_events);
        let mut trace = Trace { table: self.table.clone(), nr_cpus: self.nr_cpus, events };
        // The window's events before the cursor are folded into `before`.
        let mut cursor = 0;
        for (from, end) in clusters {
            while let Some(e) = self.window.get(cursor).filter(|e| e.1.ts < from) {
                before.fold_keeping(e, |p| wakees.contains(&p));
                cursor += 1;
            }
            // The stream's own order: the window is in it already, so only
            // the few records are sorted, then merged with it.
            let mut records = before.events();
            records.sort_unstable_by_key(|e| e.0);
            let kept = self.window.range(cursor..).take_while(|e| e.1.ts <= end);
            merged_events(kept, &records, &mut trace.events);
            let opts = AttributionOptions { end_ts: Some(end), ..self.opts.clone() };
            told.extend(
                attribute_stalls(&trace, &opts).stalls.into_iter().map(|s| ((s.start_ts, s.end_ts, s.wakee_pid), s)),
            );
        }
        self.explained_events = trace.events;
        for (start, end, obj, wakee) in pending {
            match told.remove(&(start, end, wakee)) {
                Some(mut story) => {
                    story.obj_name =
                        self.table.objects.get(obj as usize).cloned().unwrap_or_else(|| format!("obj{obj}"));
                    self.tally.add(story);
                }
                None => self.lost += 1,
            }
        }
    }

    pub fn finish(mut self) -> Attribution {
        self.explain_pending();
        Attribution { unexplained: self.lost, ..self.tally.finish() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_trace::testing::{event, marker, process_table, switch};
    use schedlab_trace::PrevState;

    #[test]
    fn merging_gives_the_sorted_union_once_each() {
        let ev = |ts| event(ts, 0, 0, schedlab_trace::EventKind::Resched { cpu: 0, ipi: false });
        let seqs = |v: &[u64]| v.iter().map(|&q| (q, ev(q))).collect::<Vec<Seq>>();
        let cases: [(&[u64], &[u64]); 7] = [
            (&[], &[]),
            (&[1, 2, 3], &[]),
            (&[], &[4, 5]),
            (&[2, 4, 6, 8], &[1, 5, 9]),
            (&[10, 11], &[1, 2, 3]),
            (&[1, 3, 5], &[3, 5, 7]),    // records repeating window events
            (&[2, 6], &[1, 1, 4, 4, 6]), // a record holding an event twice
        ];
        // One buffer for every case: what a case leaves must not leak into the next.
        let mut v = vec![ev(999)];
        for (window, records) in cases {
            merged_events(seqs(window).iter(), &seqs(records), &mut v);
            let mut want: Vec<u64> = window.iter().chain(records).copied().collect();
            want.sort_unstable();
            want.dedup();
            // Each event is the one of its sequence (here ts == seq).
            assert_eq!(v.iter().map(|e| e.ts).collect::<Vec<_>>(), want, "{window:?} + {records:?}");
        }
    }

    /// Stalls far apart: each waited for a batch of [`STALL_BATCH`] and
    /// pinned every event between them (asym_min held 300 MB at 120 s).
    #[test]
    fn rare_stalls_are_explained_before_they_pin_seconds_of_events() {
        let table = process_table(1, &[(1, "wakee"), (2, "waker")], &["efd"]);
        let opts = AttributionOptions { stall_threshold_ns: 1_000, ..Default::default() };
        let mut c = AttributionCollector::new(&opts, &table, 2).with_lookback(0);
        let gap = 4 * MIN_EXPLAIN_WINDOW as u64;
        let (mut ts, mut largest) = (0u64, 0usize);
        for _ in 0..8 {
            c.observe(&marker(ts, 1, 2, UserOp::Signal { obj: 0 }));
            c.observe(&marker(ts + 5_000, 0, 1, UserOp::WaitDone { obj: 0 }));
            ts += 5_000;
            for _ in 0..gap {
                ts += 1;
                c.observe(&event(ts, 1, 2, EventKind::Resched { cpu: 1, ipi: false }));
                largest = largest.max(c.window.len());
            }
        }
        assert!(largest <= MIN_EXPLAIN_WINDOW + 2, "the window reached {largest} events");
        let told = c.finish();
        assert_eq!(told.stalls.len(), 8, "every stall is still told once");
        assert_eq!(told.unexplained, 0);
    }

    /// A dense trace: 20 ms of it would be millions of events.
    #[test]
    fn the_lookback_holds_at_most_its_event_cap_but_never_an_open_handoffs_events() {
        let table = process_table(1, &[(1, "wakee"), (2, "waker")], &["efd"]);
        let mut c = AttributionCollector::new(&AttributionOptions::default(), &table, 2);
        let resched = |ts| event(ts, 1, 2, EventKind::Resched { cpu: 1, ipi: false });
        let n = 3 * LOOKBACK_EVENTS as u64;
        for ts in 1..=n {
            c.observe(&resched(ts));
        }
        assert_eq!(c.window.len(), LOOKBACK_EVENTS, "no handoff open: the cap, not 20 ms");
        // Once a handoff is open, everything since its signal stays.
        c.observe(&marker(n + 1, 1, 2, UserOp::Signal { obj: 0 }));
        for ts in n + 2..=2 * n {
            c.observe(&resched(ts));
        }
        assert!(c.window.len() as u64 >= n, "the open handoff's events are kept: {}", c.window.len());
        assert!(c.window.len() <= n as usize + LOOKBACK_EVENTS, "and at most the cap before its signal");
    }

    /// Issue 21: a hog that never switches, marking a loop per nanosecond
    /// and woken while it runs, made the records grow with the run.
    #[test]
    fn a_task_that_never_switches_keeps_bounded_records() {
        let table = process_table(1, &[(1, "hog")], &[]);
        let mut c = AttributionCollector::new(&AttributionOptions::default(), &table, 2).with_max_window(16);
        c.observe(&switch(0, 0, 0, PrevState::Running { preempt: false }, 1));
        for i in 1..100_000u64 {
            let ev = if i % 2 == 0 {
                marker(i, 0, 1, UserOp::LoopEnd { n: i as u32 })
            } else {
                event(i, 1, 0, EventKind::SchedWaking { pid: 1, prio: 120, target_cpu: 0 })
            };
            c.observe(&ev);
        }
        let kept = c.records.since_switch.get(&1).map_or(0, Vec::len);
        assert!(kept <= MAX_SINCE_SWITCH, "{kept} events kept for the hog");
        assert!(kept >= MAX_SINCE_SWITCH / 2, "the latest are kept: {kept}");
        let first = c.records.since_switch[&1][0].1;
        assert!(matches!(first.kind, EventKind::SchedSwitch { .. }), "its switch stays first");
    }
}
