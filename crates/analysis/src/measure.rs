//! Named latencies between workload markers (a scenario's `[[measure]]`):
//! "from W posting t_w to L's poll returning", matched by comm and object
//! name so a tracefs capture of a real run is measured the same way.

use rustc_hash::FxHashSet as HashSet;
use schedlab_trace::{ftrace::user_op_name, EventKind, Nanos, Pid, Trace, UserOp};
use serde::Serialize;

use crate::stats::percentile;

/// One end of a measure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerSpec {
    /// Comms whose markers count.
    pub comms: Vec<String>,
    /// The marker's operation as the trace names it (`post`, `poll_done`, ...).
    pub op: String,
    /// Object name; `None` = any (and `loop_end`, which has none).
    pub object: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasureSpec {
    pub name: String,
    pub from: MarkerSpec,
    pub to: MarkerSpec,
    pub within_ns: Option<u64>,
}

/// The intervals of one measure in one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MeasureResult {
    pub name: String,
    /// Completed intervals in the order they started, ns.
    pub intervals_ns: Vec<u64>,
    /// An interval still open at the end of the run: its length so far.
    pub unfinished_ns: Option<u64>,
    pub within_ns: Option<u64>,
    /// Completed intervals shorter than `within_ns` (all of them without one).
    pub timely: usize,
    /// Completed intervals during which a `to` thread was migrated
    /// (`sched_migrate_task`): the waiter was moved to run rather than
    /// waiting for its CPU.
    pub moved: usize,
    pub p50_ns: Option<u64>,
    pub max_ns: Option<u64>,
}

impl MeasureResult {
    /// Intervals started: completed plus the one left open.
    pub fn started(&self) -> usize {
        self.intervals_ns.len() + self.unfinished_ns.is_some() as usize
    }
}

struct Matcher {
    pids: HashSet<Pid>,
    op: String,
    object: Option<u32>,
    /// The object is named but absent from this trace: nothing matches.
    never: bool,
}

impl Matcher {
    fn new(table: &schedlab_trace::TaskTable, m: &MarkerSpec) -> Self {
        let pids = table.tasks.iter().filter(|(_, t)| m.comms.contains(&t.comm)).map(|(p, _)| *p).collect();
        let object = m.object.as_ref().map(|o| table.objects.iter().position(|n| n == o));
        Matcher {
            pids,
            op: m.op.clone(),
            object: object.flatten().map(|i| i as u32),
            never: matches!(object, Some(None)),
        }
    }

    fn matches(&self, pid: Pid, op: &UserOp) -> bool {
        if self.never || !self.pids.contains(&pid) || user_op_name(op) != self.op {
            return false;
        }
        let obj = match *op {
            UserOp::Signal { obj }
            | UserOp::WaitDone { obj }
            | UserOp::Post { obj }
            | UserOp::PollDone { obj }
            | UserOp::Lock { obj }
            | UserOp::Unlock { obj } => Some(obj),
            UserOp::LoopEnd { .. } | UserOp::RtAppLoop { .. } | UserOp::RtAppStats { .. } => None,
        };
        self.object.is_none() || self.object == obj
    }
}

/// Pair each `from` marker (while no interval is open) with the next `to`
/// marker; `end_ns` closes the books on one left open. Events are taken in
/// timestamp order (sorted first if the trace is not, as when per-CPU
/// buffers were concatenated).
pub fn measure(trace: &Trace, spec: &MeasureSpec, end_ns: Nanos) -> MeasureResult {
    let mut c = MeasureCollector::new(&trace.table, spec);
    for ev in trace.in_time_order().iter() {
        c.observe(ev);
    }
    c.finish(end_ns)
}

/// [`measure`] one event at a time (events in timestamp order). Its state
/// is one open interval; the intervals themselves are kept (a measure
/// pairs a scenario's own markers, a few per loop iteration).
pub struct MeasureCollector {
    name: String,
    within_ns: Option<u64>,
    from: Matcher,
    to: Matcher,
    open: Option<Nanos>,
    intervals: Vec<u64>,
    moved: usize,
    moved_now: bool,
}

impl MeasureCollector {
    /// `table` names the run's tasks and objects (the markers match by comm
    /// and object name).
    pub fn new(table: &schedlab_trace::TaskTable, spec: &MeasureSpec) -> Self {
        MeasureCollector {
            name: spec.name.clone(),
            within_ns: spec.within_ns,
            from: Matcher::new(table, &spec.from),
            to: Matcher::new(table, &spec.to),
            open: None,
            intervals: Vec::new(),
            moved: 0,
            moved_now: false,
        }
    }

    pub fn observe(&mut self, ev: &schedlab_trace::Event) {
        let (pid, op) = match ev.kind {
            EventKind::User { pid, op } => (pid, op),
            EventKind::SchedMigrateTask { pid, .. } if self.open.is_some() && self.to.pids.contains(&pid) => {
                self.moved_now = true;
                return;
            }
            _ => return,
        };
        // A marker that both ends and starts (a loop's own period) does both.
        if let Some(start) = self.open {
            if self.to.matches(pid, &op) {
                self.intervals.push(ev.ts - start);
                self.moved += std::mem::take(&mut self.moved_now) as usize;
                self.open = None;
            }
        }
        if self.open.is_none() && self.from.matches(pid, &op) {
            self.open = Some(ev.ts);
            self.moved_now = false;
        }
    }

    pub fn finish(self, end_ns: Nanos) -> MeasureResult {
        let mut sorted = self.intervals.clone();
        sorted.sort_unstable();
        let timely = match self.within_ns {
            Some(w) => sorted.partition_point(|&x| x < w),
            None => sorted.len(),
        };
        MeasureResult {
            name: self.name,
            p50_ns: percentile(&sorted, 500),
            max_ns: sorted.last().copied(),
            intervals_ns: self.intervals,
            unfinished_ns: self.open.map(|s| end_ns.saturating_sub(s)),
            within_ns: self.within_ns,
            timely,
            moved: self.moved,
        }
    }
}

/// The measures of a run as a small table (one line each).
pub fn render_measures(results: &[MeasureResult]) -> String {
    use std::fmt::Write as _;
    let ms = |ns: u64| format!("{:.3} ms", ns as f64 / 1e6);
    let mut s = String::new();
    for r in results {
        let _ = write!(s, "{:<20} n={}", r.name, r.intervals_ns.len());
        if let Some(p50) = r.p50_ns {
            let _ = write!(s, "  median {}  max {}", ms(p50), ms(r.max_ns.unwrap_or(p50)));
        }
        if let Some(w) = r.within_ns {
            let _ = write!(s, "  within {}: {}/{}", ms(w), r.timely, r.started());
        }
        let _ = write!(s, "  moved {}/{}", r.moved, r.intervals_ns.len());
        if let Some(u) = r.unfinished_ns {
            let _ = write!(s, "  (one still open after {})", ms(u));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_trace::testing::{flagged, process_table, trace as trace_of};
    use schedlab_trace::EventKind;

    /// Markers on CPU 0, with no flags set.
    fn trace(events: &[(Nanos, Pid, UserOp)]) -> Trace {
        let table = process_table(1, &[(1, "W"), (2, "L"), (3, "other")], &["t_w", "M"]);
        let events =
            events.iter().map(|&(ts, pid, op)| flagged(ts, 0, pid, b".....", EventKind::User { pid, op })).collect();
        trace_of(table, 4, events)
    }

    fn spec(within: Option<u64>) -> MeasureSpec {
        let m = |c: &str, op: &str, o: Option<&str>| MarkerSpec {
            comms: vec![c.into()],
            op: op.into(),
            object: o.map(Into::into),
        };
        MeasureSpec {
            name: "resume".into(),
            from: m("W", "post", Some("t_w")),
            to: m("L", "poll_done", Some("t_w")),
            within_ns: within,
        }
    }

    #[test]
    fn pairs_each_start_with_the_next_end_and_ignores_other_threads_and_objects() {
        let t = trace(&[
            (10, 2, UserOp::PollDone { obj: 0 }), // an end with nothing open
            (100, 1, UserOp::Post { obj: 0 }),
            (150, 1, UserOp::Post { obj: 0 }), // already open: the first start counts
            (160, 3, UserOp::PollDone { obj: 0 }), // another thread
            (170, 2, UserOp::PollDone { obj: 1 }), // another object
            (400, 2, UserOp::PollDone { obj: 0 }),
            (1000, 1, UserOp::Post { obj: 0 }),
            (1050, 2, UserOp::PollDone { obj: 0 }),
            (2000, 1, UserOp::Post { obj: 0 }),
        ]);
        let r = measure(&t, &spec(Some(100)), 2600);
        assert_eq!(r.intervals_ns, vec![300, 50]);
        assert_eq!(r.moved, 0);
        assert_eq!(r.unfinished_ns, Some(600));
        assert_eq!((r.timely, r.started()), (1, 3));
        assert_eq!(r.p50_ns, Some(50)); // nearest rank of [50, 300]
        let text = render_measures(&[r]);
        assert!(text.contains("within 0.000 ms: 1/3") && text.contains("still open after 0.001 ms"), "{text}");
    }

    #[test]
    fn counts_intervals_in_which_the_waiter_was_migrated() {
        let mut t = trace(&[
            (100, 1, UserOp::Post { obj: 0 }),
            (400, 2, UserOp::PollDone { obj: 0 }),
            (1000, 1, UserOp::Post { obj: 0 }),
            (1300, 2, UserOp::PollDone { obj: 0 }),
            (2000, 1, UserOp::Post { obj: 0 }),
        ]);
        let migrate = |ts, pid| {
            flagged(ts, 0, 0, b".....", EventKind::SchedMigrateTask { pid, prio: 120, orig_cpu: 1, dest_cpu: 3 })
        };
        // L moved before any interval, W moved inside one, L moved inside the second, L moved in the open one.
        t.events.extend([migrate(50, 2), migrate(200, 1), migrate(1100, 2), migrate(2100, 2)]);
        t.events.sort_by_key(|e| e.ts);
        let r = measure(&t, &spec(None), 3000);
        assert_eq!((r.intervals_ns.clone(), r.moved), (vec![300, 300], 1));
        assert!(render_measures(&[r]).contains("moved 1/2"));
    }

    #[test]
    fn an_object_absent_from_the_trace_matches_nothing() {
        let mut s = spec(None);
        s.to.object = Some("nope".into());
        let t = trace(&[(100, 1, UserOp::Post { obj: 0 }), (400, 2, UserOp::PollDone { obj: 0 })]);
        let r = measure(&t, &s, 500);
        assert!(r.intervals_ns.is_empty() && r.unfinished_ns == Some(400));
        s.to.object = None; // any object
        assert_eq!(measure(&t, &s, 500).intervals_ns, vec![300]);
    }

    #[test]
    fn an_unsorted_trace_is_measured_in_time_order() {
        // Per-CPU buffers concatenated: CPU 0's post at 1000 comes before
        // CPU 1's post at 100 and the poll at 400 that ends its interval.
        let mut t = trace(&[
            (1000, 1, UserOp::Post { obj: 0 }),
            (100, 1, UserOp::Post { obj: 0 }),
            (400, 2, UserOp::PollDone { obj: 0 }),
            (1300, 2, UserOp::PollDone { obj: 0 }),
        ]);
        for e in &mut t.events[1..] {
            e.cpu = 1;
        }
        let r = measure(&t, &spec(None), 1500);
        assert_eq!((r.intervals_ns, r.unfinished_ns), (vec![300, 300], None));
    }
}
