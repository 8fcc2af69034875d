//! Metrics from a [`Trace`]: per-thread CPU time, runqueue wait, wakeup and
//! handoff latency, and the stalls to attribute.
//!
//! Analysis sees only trace events (the kernel's sched tracepoints and the
//! workload's markers), never simulator internals, so a simulated run and a
//! tracefs capture of a real one go through the same code.
//!
//! ```
//! use schedlab_analysis::{analyze, render_run_table, AnalysisOptions};
//! # let trace = schedlab_trace::Trace::default();
//! let m = analyze(&trace, &AnalysisOptions::default());
//! print!("{}", render_run_table(&m));
//! ```
//!
//! Kernel terms used by the metrics:
//! * switch-in / switch-out: `sched_switch` with the task as `next_pid` /
//!   `prev_pid`;
//! * wakeup: `sched_wakeup` or `sched_wakeup_new` (the enqueue, not
//!   `sched_waking`);
//! * preemption: a switch-out with `prev_state` `R` or `R+` (still
//!   `TASK_RUNNING`, i.e. an involuntary context switch, `nivcsw`).

mod attribution;
mod causes;
mod deadline;
mod diff;
mod diff_stream;
mod handoff;
mod measure;
mod narrative;
pub mod perf_sched;
mod pidmap;
mod rtapp;
pub mod schbench;
mod sketch;
mod stall_window;
mod stalls;
mod stats;
mod table;
mod tasks;
mod timeline;
mod unclaimed;
mod workcons;

use schedlab_trace::{Event, EventKind, Nanos, Pid, Trace};
use serde::Serialize;

pub use attribution::{attribute_stalls, AttributionOptions};
pub use causes::{
    Attribution, Cause, CauseRow, Component, CpuArrival, CpuIdle, Part, PreemptCheck, StallStory, WakeDecision,
};
pub use deadline::{render_deadline, DeadlineCollector, DeadlineReport, DeadlineTask, DlReservation};
pub use diff::{
    cpu_states, describe_event, diff_traces, drift_rows, is_decision, render_cpu_state, render_divergence,
    render_drift, same_step, CpuState, DiffLine, DiffOptions, Divergence, DivergentSide, DriftRow, NextDecision,
    TaskOnCpu, DEFAULT_DIFF_AFTER, DEFAULT_DIFF_CONTEXT,
};
pub use diff_stream::DiffStream;
pub use handoff::{Stall, KEPT_STALLS, LONGEST_STALLS};
pub use measure::{measure, render_measures, MarkerSpec, MeasureCollector, MeasureResult, MeasureSpec};
pub use narrative::{render_cause_table, render_stall_narratives, render_work_conservation, Step};
pub use rtapp::{render_rtapp_phases, rtapp_phases, RtAppCollector, RtAppPhase, RtAppReport};
pub use schbench::{schbench_report, PlatHistogram, SchbenchCollector, SchbenchReport};
pub use sketch::{LatencySketch, EXACT_SAMPLES_PER_RUN, RELATIVE_ERROR};
pub use stall_window::{AttributionCollector, LOOKBACK_NS, MAX_WINDOW_EVENTS, STALL_BATCH};
pub use stalls::{burst_starts_per_cpu, stall_breakdown, Arrival, ClassifiedStall, StallBreakdown, StallOptions};
pub use stats::{percentile, LatencyStats};
pub use table::{ms as ms_text, pad_left, pad_right, render_run_table};
pub use timeline::{cpulist, percpu_kthread_cpu, FirstOccupants};
pub use workcons::{
    covered_cpus, initial_occupants, work_conservation, CpuWorkCons, TaskWorkCons, ViolationStats, WorkConsCollector,
    WorkConsOptions, WorkConservation, DEFAULT_GRACE_NS,
};

/// The seed reports' stall definition: a handoff of 0.5 ms or more.
pub const DEFAULT_STALL_THRESHOLD_NS: u64 = 500_000;

/// How to analyse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// A handoff at least this long is a stall; also the threshold for the
    /// `at_or_above_threshold` counts of every [`LatencyStats`].
    pub stall_threshold_ns: u64,
    /// End of the observation window; default the last event's timestamp.
    /// Intervals still open (a task running, waiting or sleeping) are clipped
    /// here; later events are ignored.
    pub end_ts: Option<Nanos>,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions { stall_threshold_ns: DEFAULT_STALL_THRESHOLD_NS, end_ts: None }
    }
}

/// Everything measured for one task (pid; the idle task is not reported).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskMetrics {
    pub pid: Pid,
    /// `comm` from the trace's task table (`<...>` when unknown).
    pub comm: String,
    pub tgid: Pid,
    /// Time on a CPU: switch-in to switch-out, summed; clipped to the window.
    pub runtime_ns: u64,
    /// Runnable but not running (runqueue wait, perf's "sch delay" summed):
    /// from a wakeup or a preemption switch-out to the next switch-in.
    pub wait_ns: u64,
    /// Blocked: from a sleeping (`S`/`D`) switch-out to the next wakeup.
    pub sleep_ns: u64,
    /// `sched_wakeup` + `sched_wakeup_new` events for this task.
    pub wakeups: u64,
    /// Times switched out (`nvcsw + nivcsw` over the window).
    pub context_switches: u64,
    /// Of those, switched out while still runnable (`R`/`R+`: preempted or yielded).
    pub involuntary_switches: u64,
    /// `sched_migrate_task` events for this task.
    pub migrations: u64,
    /// `sched_wakeup`/`sched_wakeup_new` → the task's next switch-in.
    pub wakeup_latency: LatencyStats,
    /// Wakeups with no latency: the switch into the task is missing from the
    /// trace and was put back where it could have been at the earliest
    /// (`schedlab_trace::repair`), so its time is unknown.
    pub wakeup_latency_unknown: u64,
    /// Runnable → switch-in delays (`perf sched latency`'s "delay": from a
    /// wakeup or a preemption), those ending at a traced switch.
    pub delays: u64,
    pub delay_total_ns: u64,
    /// The longest, and when it ended (it began `max_delay_ns` before).
    pub max_delay_ns: u64,
    pub max_delay_end_ts: Nanos,
    /// Delays ending at a switch the trace was missing: unknown, not counted.
    pub delays_unknown: u64,
    /// Handoffs this task received: a signal on an object → this task's wait
    /// on it returning.
    pub handoff_latency: LatencyStats,
    /// The wakeup latency samples (ns): every one while the run's samples
    /// are few, else in buckets ([`LatencySketch`]); not serialised.
    #[serde(skip)]
    pub wakeup_sketch: LatencySketch,
    /// The handoff latency samples, the same way.
    #[serde(skip)]
    pub handoff_sketch: LatencySketch,
}

/// The metrics of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMetrics {
    /// Observation window: first event's timestamp to `end_ts`.
    pub start_ts: Nanos,
    pub end_ts: Nanos,
    pub stall_threshold_ns: u64,
    /// One row per pid seen in an event (except 0), sorted by pid.
    pub tasks: Vec<TaskMetrics>,
    /// Handoffs ≥ the threshold, in the order they ended: the first
    /// [`KEPT_STALLS`] of a streamed analysis (or as many as it was told to
    /// keep), every one of [`analyze`]'s.
    pub stalls: Vec<Stall>,
    /// Stalls after those: counted, not kept (serialised only when some were left out).
    #[serde(skip_serializing_if = "is_zero")]
    pub stalls_not_kept: u64,
    /// The [`LONGEST_STALLS`] longest of all, longest first (ties: the earlier signal).
    #[serde(skip)]
    pub longest_stalls: Vec<Stall>,
    /// Waits that returned with no signal pending on their object.
    pub unmatched_waits: u64,
    /// Objects signalled whose wait had not returned when the trace ended.
    pub open_handoffs_at_end: u64,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Keep the first `n` of `list`, adding how many went to `not_kept`.
pub(crate) fn keep_first<T>(list: &mut Vec<T>, n: usize, not_kept: &mut u64) {
    if list.len() > n {
        *not_kept += (list.len() - n) as u64;
        list.truncate(n);
    }
}

impl RunMetrics {
    /// Every stall, kept or not.
    pub fn stall_count(&self) -> u64 {
        self.stalls.len() as u64 + self.stalls_not_kept
    }

    /// Keep only the first `n` stalls (the rest counted in `stalls_not_kept`).
    pub fn keep_stalls(&mut self, n: usize) {
        keep_first(&mut self.stalls, n, &mut self.stalls_not_kept);
    }

    /// The row for `pid`.
    pub fn task(&self, pid: Pid) -> Option<&TaskMetrics> {
        self.tasks.binary_search_by_key(&pid, |t| t.pid).ok().map(|i| &self.tasks[i])
    }

    /// One sketch of the samples `pick` chooses from every task's row
    /// (e.g. `|t| &t.handoff_sketch`), ascending while exact.
    pub fn merged(&self, pick: impl Fn(&TaskMetrics) -> &LatencySketch) -> LatencySketch {
        let mut all = LatencySketch::new(self.stall_threshold_ns);
        for t in &self.tasks {
            all.merge(pick(t));
        }
        all.sorted();
        all
    }

    /// Keep only the rows `keep` accepts (e.g. the workload's threads).
    pub fn retain_tasks(&mut self, keep: impl FnMut(&TaskMetrics) -> bool) {
        self.tasks.retain(keep);
    }
}

/// Compute [`RunMetrics`] from the events of `trace`.
///
/// Events are taken in timestamp order (a stable sort is applied if the trace
/// is not already sorted, as when per-CPU buffers were concatenated).
pub fn analyze(trace: &Trace, opts: &AnalysisOptions) -> RunMetrics {
    let events = trace.in_time_order();
    let end = opts.end_ts.unwrap_or_else(|| events.last().map_or(0, |e| e.ts));
    let mut c = MetricsCollector::new(opts.stall_threshold_ns, Some(end)).with_kept_stalls(usize::MAX);
    for ev in events.iter() {
        c.observe(ev, &trace.table);
    }
    c.finish(&trace.table)
}

/// [`analyze`] one event at a time, in bounded memory: per-task counters,
/// latency sketches (exact while the run's samples are few, see
/// [`LatencySketch`]), the handoffs in flight, the first [`KEPT_STALLS`]
/// stalls and the longest. Feed events in timestamp order; the first one
/// opens the window.
pub struct MetricsCollector {
    threshold: u64,
    end: Option<Nanos>,
    start: Option<Nanos>,
    last: Nanos,
    tasks: tasks::TaskTracker,
    handoffs: handoff::HandoffTracker,
}

impl MetricsCollector {
    /// Stalls at `threshold_ns`; events after `end` (when given) are
    /// ignored and open intervals are closed there.
    pub fn new(threshold_ns: u64, end: Option<Nanos>) -> Self {
        MetricsCollector {
            threshold: threshold_ns,
            end,
            start: None,
            last: 0,
            tasks: tasks::TaskTracker::new(0, threshold_ns),
            handoffs: handoff::HandoffTracker::with_threshold(threshold_ns),
        }
    }

    /// Keep at most `samples` latency samples one by one (half for
    /// wakeups, half for handoffs) before turning to buckets; the default
    /// is [`EXACT_SAMPLES_PER_RUN`].
    pub fn with_exact_samples(mut self, samples: usize) -> Self {
        self.tasks.wakeups = sketch::SketchSet::new(self.threshold, samples / 2);
        self.handoffs.samples = Some(sketch::SketchSet::new(self.threshold, samples / 2));
        self
    }

    /// Keep the first `n` stalls instead of [`KEPT_STALLS`] (the rest are
    /// counted; the longest are kept whatever `n`).
    pub fn with_kept_stalls(mut self, n: usize) -> Self {
        self.handoffs.keep_stalls(n);
        self
    }

    /// Close the window at `end` (a run's end, known once it is over; no
    /// event after it may have been observed).
    pub fn ending_at(mut self, end: Nanos) -> Self {
        self.end = Some(end);
        self
    }

    /// One event; `table` names the objects of the stalls it may complete.
    pub fn observe(&mut self, ev: &Event, table: &schedlab_trace::TaskTable) {
        if self.start.is_none() {
            self.start = Some(ev.ts);
            self.tasks.start = ev.ts;
        }
        if self.end.is_some_and(|e| ev.ts > e.max(self.start.unwrap_or(0))) {
            return;
        }
        self.last = self.last.max(ev.ts);
        self.tasks.event(ev);
        if let EventKind::User { pid, op } = ev.kind {
            self.tasks.touch(pid);
            let name = |obj: u32| table.objects.get(obj as usize).cloned().unwrap_or_else(|| format!("obj{obj}"));
            self.handoffs.event(ev.ts, pid, op, self.threshold, name);
        }
    }

    /// The metrics; `table` gives each task's comm and tgid.
    pub fn finish(mut self, table: &schedlab_trace::TaskTable) -> RunMetrics {
        let start = self.start.unwrap_or(0);
        let end = self.end.unwrap_or(self.last).max(start);
        self.tasks.finish(end);
        let threshold = self.threshold;
        let mut handoffs = self.handoffs;
        let mut accs: Vec<(Pid, tasks::TaskAcc)> = self.tasks.tasks.take_all();
        accs.sort_unstable_by_key(|&(pid, _)| pid);
        let rows = accs
            .into_iter()
            .map(|(pid, a)| {
                let handoff_sketch = handoffs.samples.as_mut().expect("the metrics keep samples").take(pid);
                let wakeup_sketch = self.tasks.wakeups.take(pid);
                let info = table.tasks.get(&pid);
                TaskMetrics {
                    pid,
                    comm: table.comm(pid).to_string(),
                    tgid: info.map_or(pid, |i| i.tgid),
                    runtime_ns: a.runtime,
                    wait_ns: a.wait,
                    sleep_ns: a.sleep,
                    wakeups: a.wakeups,
                    context_switches: a.switches,
                    involuntary_switches: a.involuntary,
                    migrations: a.migrations,
                    wakeup_latency: LatencyStats::from_sketch(&wakeup_sketch),
                    wakeup_latency_unknown: a.latency_unknown,
                    delays: a.delays,
                    delay_total_ns: a.delay_sum,
                    max_delay_ns: a.max_delay,
                    max_delay_end_ts: a.max_delay_end,
                    delays_unknown: a.delays_unknown,
                    handoff_latency: LatencyStats::from_sketch(&handoff_sketch),
                    wakeup_sketch,
                    handoff_sketch,
                }
            })
            .collect();
        RunMetrics {
            start_ts: start,
            end_ts: end,
            stall_threshold_ns: threshold,
            tasks: rows,
            open_handoffs_at_end: handoffs.open_at_end(),
            stalls: handoffs.stalls,
            stalls_not_kept: handoffs.stalls_not_kept,
            longest_stalls: handoffs.longest,
            unmatched_waits: handoffs.unmatched_waits,
        }
    }
}

/// The handoff latencies of a stream per wakee, and nothing else: what a
/// sweep's table reads. [`MetricsCollector`] pairs the same handoffs into
/// the same samples beside each task's accounting, which costs a lookup or
/// two per event (2.5 % of the seed-000 sweep; issue 39).
pub struct HandoffCollector {
    threshold: u64,
    handoffs: handoff::HandoffTracker,
}

impl HandoffCollector {
    /// Samples at or above `threshold_ns` count as stalls in the sketches.
    pub fn new(threshold_ns: u64) -> Self {
        HandoffCollector { threshold: threshold_ns, handoffs: handoff::HandoffTracker::with_threshold(threshold_ns) }
    }

    /// One event, in timestamp order.
    pub fn observe(&mut self, ev: &Event) {
        if let EventKind::User { pid, op } = ev.kind {
            // The stalls it records are not read: their objects need no name.
            self.handoffs.event(ev.ts, pid, op, self.threshold, |_| String::new());
        }
    }

    /// The latencies of the handoffs `pid` received, as
    /// [`TaskMetrics::handoff_sketch`] holds them (taken: a second call is empty).
    pub fn take(&mut self, pid: Pid) -> LatencySketch {
        self.handoffs.samples.as_mut().expect("the collector keeps samples").take(pid)
    }
}

#[cfg(test)]
mod tests;
