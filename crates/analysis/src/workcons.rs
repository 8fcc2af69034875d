//! Work conservation: moments when a runnable task waited while a CPU it may
//! run on sat idle.
//!
//! This is the invariant of Lozi et al., "The Linux Scheduler: a Decade of
//! Wasted Cores" (EuroSys 2016) — no CPU is idle while a thread that could run
//! on it waits in a runqueue — checked on every event instead of sampled, and
//! its relaxation from Ipanema (Lepers et al., EuroSys 2020), *concurrent*
//! work conservation: a violation that ends within a grace window `G` (by
//! default 100 µs) is the unavoidable cost of concurrent wakeups, blocks and
//! balancing (an IPI in flight, an idle exit, a newidle pull about to happen)
//! and is not counted.
//!
//! From the trace alone:
//! * a task *waits* from its `sched_wakeup`/`sched_wakeup_new` (the enqueue)
//!   or from a `sched_switch` that switched it out still `TASK_RUNNING`
//!   (`R`/`R+`, preempted) until it is switched in again — the runqueue wait
//!   perf calls "sch delay";
//! * a CPU is *idle* while `sched_switch` says its current task is pid 0 (see
//!   the timeline module: a CPU with a wakeup IPI in flight is still idle);
//! * a task may run on the CPUs of its affinity (`sched_setaffinity`,
//!   `taskset`), which the trace does not record: the caller passes them
//!   ([`WorkConsOptions::allowed`]); a task it does not name is bound to its
//!   CPU if its comm is a per-CPU kthread's (`migration/N`, `ksoftirqd/N`,
//!   `kworker/N:M`) and may use every CPU otherwise.
//!
//! A *violation* of a task is a maximal interval during which it waits and at
//! least one CPU of its affinity is idle — including the CPU it is queued on,
//! which is how an IPI or idle-exit delay shows up (those are short and the
//! grace window removes them). A CPU's *unclaimed idle* time is idle time
//! during which some task that may run on it was waiting (bcc's
//! `cpuunclaimed`, measured exactly); its percentage is of the CPU's idle time.

use std::collections::{BTreeMap, BTreeSet};

use schedlab_trace::{EventKind, Nanos, Pid, PrevState, Trace};
use serde::Serialize;

use crate::timeline::{cpulist, intersect, merge, percpu_kthread_cpu, CpuTimeline};

/// Ipanema's grace window for concurrent work conservation: violations
/// shorter than this are not counted in the `grace` figures.
pub const DEFAULT_GRACE_NS: u64 = 100_000;

/// What to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkConsOptions {
    /// pid → the CPUs it may run on (its affinity). Tasks not listed: their
    /// per-CPU kthread CPU, else every CPU of the trace.
    pub allowed: BTreeMap<Pid, Vec<u32>>,
    /// Violations shorter than this are ignored in the `grace` figures.
    pub grace_ns: u64,
    /// End of the observation window; default the last event.
    pub end_ts: Option<Nanos>,
}

impl Default for WorkConsOptions {
    fn default() -> Self {
        WorkConsOptions { allowed: BTreeMap::new(), grace_ns: DEFAULT_GRACE_NS, end_ts: None }
    }
}

/// Count, total and longest of a set of intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ViolationStats {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl ViolationStats {
    fn of(intervals: &[(Nanos, Nanos)]) -> Self {
        let mut s = ViolationStats::default();
        for &(a, b) in intervals {
            s.count += 1;
            s.total_ns += b - a;
            s.max_ns = s.max_ns.max(b - a);
        }
        s
    }
}

/// One task's waits and violations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskWorkCons {
    pub pid: Pid,
    pub comm: String,
    /// The CPUs it may run on, as used.
    pub allowed: Vec<u32>,
    /// Runqueue waits (wakeup or preemption → switch-in) in the window.
    pub waits: u64,
    /// Their total length (perf sched's summed "sch delay").
    pub wait_ns: u64,
    /// Every interval of waiting while an allowed CPU was idle (Wasted Cores' invariant).
    pub strict: ViolationStats,
    /// Only the violations lasting at least the grace window (Ipanema's
    /// concurrent work conservation), counted whole.
    pub grace: ViolationStats,
    /// The strict violation intervals `[start, end)`; not serialised.
    #[serde(skip)]
    pub intervals: Vec<(Nanos, Nanos)>,
}

/// One CPU's idle time and how much of it a waiting task could have used.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuWorkCons {
    pub cpu: u32,
    /// Time the idle task was current.
    pub idle_ns: u64,
    /// Idle time overlapping a violation of a task allowed on this CPU
    /// (count = separate stretches of such time).
    pub unclaimed: ViolationStats,
    /// The same, counting only violations at least the grace window long.
    pub unclaimed_grace: ViolationStats,
    /// `unclaimed / idle` and `unclaimed_grace / idle`, in percent (0 when never idle).
    pub unclaimed_pct: f64,
    pub unclaimed_grace_pct: f64,
}

/// The work-conservation report of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkConservation {
    pub start_ts: Nanos,
    pub end_ts: Nanos,
    pub grace_ns: u64,
    /// Tasks that waited at least once, by pid.
    pub tasks: Vec<TaskWorkCons>,
    /// The CPUs some checked task may use (the union of the affinities), in order.
    pub cpus: Vec<CpuWorkCons>,
    /// Sums over `cpus`.
    pub idle_ns: u64,
    pub unclaimed_ns: u64,
    pub unclaimed_grace_ns: u64,
    /// Unclaimed-idle percentage over `cpus` (cpuunclaimed's figure): strict and with the grace window.
    pub unclaimed_pct: f64,
    pub unclaimed_grace_pct: f64,
}

impl WorkConservation {
    /// The row of `pid`.
    pub fn task(&self, pid: Pid) -> Option<&TaskWorkCons> {
        self.tasks.iter().find(|t| t.pid == pid)
    }

    /// The row of `cpu`.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuWorkCons> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }
}

/// The CPUs `pid` may run on under `allowed` (see [`WorkConsOptions::allowed`]).
pub(crate) fn allowed_cpus(allowed: &BTreeMap<Pid, Vec<u32>>, pid: Pid, comm: &str, nr_cpus: u32) -> Vec<u32> {
    if let Some(v) = allowed.get(&pid) {
        let mut v = v.clone();
        v.sort_unstable();
        v.dedup();
        return v;
    }
    match percpu_kthread_cpu(comm) {
        Some(cpu) => vec![cpu],
        None => (0..nr_cpus).collect(),
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

struct Waiter {
    allowed: Vec<u32>,
    waiting_since: Option<Nanos>,
    running: bool,
    violating_since: Option<Nanos>,
    waits: u64,
    wait_ns: u64,
    intervals: Vec<(Nanos, Nanos)>,
}

fn waiter<'a>(
    tasks: &'a mut BTreeMap<Pid, Waiter>,
    pid: Pid,
    allowed: &BTreeMap<Pid, Vec<u32>>,
    trace: &Trace,
    nr_cpus: u32,
) -> &'a mut Waiter {
    tasks.entry(pid).or_insert_with(|| Waiter {
        allowed: allowed_cpus(allowed, pid, trace.table.comm(pid), nr_cpus),
        waiting_since: None,
        running: false,
        violating_since: None,
        waits: 0,
        wait_ns: 0,
        intervals: Vec::new(),
    })
}

/// Check `trace` (see the module doc).
pub fn work_conservation(trace: &Trace, opts: &WorkConsOptions) -> WorkConservation {
    let events = trace.in_time_order();
    let start = events.first().map_or(0, |e| e.ts);
    let end = opts.end_ts.unwrap_or_else(|| events.last().map_or(0, |e| e.ts)).max(start);
    let timeline = CpuTimeline::build(&events, trace.nr_cpus, start, end);
    let nr_cpus = timeline.cpus.len() as u32;
    let mut curr = timeline.initial();
    let mut tasks: BTreeMap<Pid, Waiter> = BTreeMap::new();
    let mut waiting: BTreeSet<Pid> = BTreeSet::new();
    let mut dirty: BTreeSet<Pid> = BTreeSet::new();
    let mut cpu_changed = false;

    // Close the ts group: re-evaluate who violates now.
    let settle = |ts: Nanos,
                  tasks: &mut BTreeMap<Pid, Waiter>,
                  curr: &[Pid],
                  waiting: &BTreeSet<Pid>,
                  dirty: &mut BTreeSet<Pid>,
                  cpu_changed: &mut bool| {
        let check: Vec<Pid> =
            if *cpu_changed { waiting.union(dirty).copied().collect() } else { dirty.iter().copied().collect() };
        for pid in check {
            let Some(w) = tasks.get_mut(&pid) else { continue };
            let idle = |c: &u32| curr.get(*c as usize) == Some(&0);
            let violating = w.waiting_since.is_some() && w.allowed.iter().any(idle);
            match (violating, w.violating_since) {
                (true, None) => w.violating_since = Some(ts),
                (false, Some(since)) => {
                    if ts > since {
                        w.intervals.push((since, ts));
                    }
                    w.violating_since = None;
                }
                _ => {}
            }
        }
        dirty.clear();
        *cpu_changed = false;
    };

    let mut group_ts = start;
    for ev in events.iter().take_while(|e| e.ts <= end) {
        if ev.ts != group_ts {
            settle(group_ts, &mut tasks, &curr, &waiting, &mut dirty, &mut cpu_changed);
            group_ts = ev.ts;
        }
        match ev.kind {
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } if pid != 0 => {
                let w = waiter(&mut tasks, pid, &opts.allowed, trace, nr_cpus);
                if !w.running && w.waiting_since.is_none() {
                    w.waiting_since = Some(ev.ts);
                    waiting.insert(pid);
                    dirty.insert(pid);
                }
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                let cpu = ev.cpu as usize;
                if cpu < curr.len() && (curr[cpu] == 0) != (next_pid == 0) {
                    cpu_changed = true;
                }
                if cpu < curr.len() {
                    curr[cpu] = next_pid;
                }
                if prev_pid != 0 {
                    let w = waiter(&mut tasks, prev_pid, &opts.allowed, trace, nr_cpus);
                    w.running = false;
                    if matches!(prev_state, PrevState::Running { .. }) && w.waiting_since.is_none() {
                        w.waiting_since = Some(ev.ts);
                        waiting.insert(prev_pid);
                    }
                    dirty.insert(prev_pid);
                }
                if next_pid != 0 {
                    let w = waiter(&mut tasks, next_pid, &opts.allowed, trace, nr_cpus);
                    w.running = true;
                    if let Some(since) = w.waiting_since.take() {
                        w.waits += 1;
                        w.wait_ns += ev.ts - since;
                    }
                    waiting.remove(&next_pid);
                    dirty.insert(next_pid);
                }
            }
            _ => {}
        }
    }
    settle(group_ts, &mut tasks, &curr, &waiting, &mut dirty, &mut cpu_changed);
    for w in tasks.values_mut() {
        if let Some(since) = w.waiting_since.take() {
            w.waits += 1;
            w.wait_ns += end - since;
        }
        if let Some(since) = w.violating_since.take() {
            if end > since {
                w.intervals.push((since, end));
            }
        }
    }

    let grace_of = |iv: &[(Nanos, Nanos)]| -> Vec<(Nanos, Nanos)> {
        iv.iter().copied().filter(|&(a, b)| b - a >= opts.grace_ns).collect()
    };
    let rows: Vec<TaskWorkCons> = tasks
        .into_iter()
        .filter(|(_, w)| w.waits > 0)
        .map(|(pid, w)| TaskWorkCons {
            pid,
            comm: trace.table.comm(pid).to_string(),
            strict: ViolationStats::of(&w.intervals),
            grace: ViolationStats::of(&grace_of(&w.intervals)),
            allowed: w.allowed,
            waits: w.waits,
            wait_ns: w.wait_ns,
            intervals: w.intervals,
        })
        .collect();

    let cpu_set: BTreeSet<u32> = rows.iter().flat_map(|t| t.allowed.iter().copied()).filter(|&c| c < nr_cpus).collect();
    let mut out = WorkConservation {
        start_ts: start,
        end_ts: end,
        grace_ns: opts.grace_ns,
        tasks: Vec::new(),
        cpus: Vec::new(),
        idle_ns: 0,
        unclaimed_ns: 0,
        unclaimed_grace_ns: 0,
        unclaimed_pct: 0.0,
        unclaimed_grace_pct: 0.0,
    };
    for cpu in cpu_set {
        let idle = timeline.idle_intervals(cpu);
        let idle_ns: u64 = idle.iter().map(|(a, b)| b - a).sum();
        let claimants = rows.iter().filter(|t| t.allowed.binary_search(&cpu).is_ok());
        let strict = merge(claimants.clone().flat_map(|t| t.intervals.iter().copied()).collect());
        let grace = merge(claimants.flat_map(|t| grace_of(&t.intervals)).collect());
        let unclaimed = ViolationStats::of(&merge(intersect(&idle, &strict)));
        let unclaimed_grace = ViolationStats::of(&merge(intersect(&idle, &grace)));
        out.idle_ns += idle_ns;
        out.unclaimed_ns += unclaimed.total_ns;
        out.unclaimed_grace_ns += unclaimed_grace.total_ns;
        out.cpus.push(CpuWorkCons {
            cpu,
            idle_ns,
            unclaimed_pct: pct(unclaimed.total_ns, idle_ns),
            unclaimed_grace_pct: pct(unclaimed_grace.total_ns, idle_ns),
            unclaimed,
            unclaimed_grace,
        });
    }
    out.unclaimed_pct = pct(out.unclaimed_ns, out.idle_ns);
    out.unclaimed_grace_pct = pct(out.unclaimed_grace_ns, out.idle_ns);
    out.tasks = rows;
    out
}

/// The CPUs the report covers, as a cpulist (`2,4-7`).
pub fn covered_cpus(w: &WorkConservation) -> String {
    cpulist(&w.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>())
}

#[cfg(test)]
#[path = "workcons_tests.rs"]
mod tests;
