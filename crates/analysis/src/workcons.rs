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

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use schedlab_trace::{EventKind, Nanos, Pid, PrevState, Trace};
use serde::Serialize;

use crate::timeline::{cpulist, percpu_kthread_cpu};
use crate::unclaimed::{Stretches, Unclaimed};

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
    /// The first [`KEPT_INTERVALS`] strict violation intervals `[start,
    /// end)`, for inspection (the figures above count all of them); not
    /// serialised.
    #[serde(skip)]
    pub intervals: Vec<(Nanos, Nanos)>,
    /// Left out of the report: it may use a CPU whose occupant the trace
    /// does not establish ([`WorkConservation::leave_out_uncertain`]).
    pub left_out: bool,
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
    /// Time whose occupant the trace does not establish (a missing switch
    /// put back, `schedlab_trace::repair`), ns.
    pub uncertain_ns: u64,
    /// Its figures are left out of the sums: `uncertain_ns` is more than
    /// [`UNCERTAIN_LIMIT_PCT`] of the window.
    pub left_out: bool,
}

/// A CPU whose occupant is unknown for more than this share of the window
/// (percent) is left out of the work-conservation figures: its idle time,
/// and so its unclaimed idle, could be off by that much. Below it, the
/// uncertain time is printed beside the figures as their error bound.
pub const UNCERTAIN_LIMIT_PCT: f64 = 1.0;

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

/// Intervals kept per task for inspection ([`TaskWorkCons::intervals`]);
/// the figures count them all.
pub const KEPT_INTERVALS: usize = 1024;

struct Waiter {
    allowed: Vec<u32>,
    /// Its affinity's class (tasks with the same CPUs share one).
    class: usize,
    waiting_since: Option<Nanos>,
    running: bool,
    violating_since: Option<Nanos>,
    /// The violation in progress has been logged as qualified for grace.
    grace_logged: bool,
    waits: u64,
    wait_ns: u64,
    strict: ViolationStats,
    grace: ViolationStats,
    intervals: Vec<(Nanos, Nanos)>,
}

impl ViolationStats {
    pub(crate) fn add(&mut self, len: u64) {
        self.count += 1;
        self.total_ns += len;
        self.max_ns = self.max_ns.max(len);
    }
}

/// One CPU: its idle time, and its unclaimed idle time strict and with
/// the grace window (see [`crate::unclaimed`]).
struct CpuAcc {
    idle: bool,
    idle_since: Nanos,
    idle_ns: u64,
    /// Final at each instant (a lag of 0): set when the CPU's idle state
    /// or a claim on it changes.
    strict: Stretches,
    grace: Unclaimed,
}

/// [`work_conservation`] one event at a time (in timestamp order), in
/// memory bounded by the tasks, the CPUs and the changes of the last grace
/// window.
pub struct WorkConsCollector {
    allowed: BTreeMap<Pid, Vec<u32>>,
    grace_ns: u64,
    nr_cpus: u32,
    table: schedlab_trace::TaskTable,
    start: Nanos,
    end: Option<Nanos>,
    group_ts: Option<Nanos>,
    curr: Vec<Pid>,
    cpus: Vec<CpuAcc>,
    /// Not ordered (a lookup per event); [`Self::finish`] visits them by pid.
    tasks: crate::pidmap::PidMap<Waiter>,
    /// Ordered: an instant's tasks are checked by pid (the order decides
    /// which of two tasks of one class opening and closing a violation at
    /// one instant the CPUs hear of).
    waiting: BTreeSet<Pid>,
    /// The tasks an instant touched, in any order and maybe twice (sorted
    /// and deduplicated at `settle`); kept, like `changed` and `check`, to
    /// reuse their buffers: an instant allocates nothing (issue 39).
    dirty: Vec<Pid>,
    /// CPUs that became idle or busy in this instant (maybe twice).
    cpu_changed: Vec<u32>,
    /// `settle`'s list of tasks to check.
    check: Vec<Pid>,
    /// Violations in progress not yet qualified for grace, by start.
    pending_grace: VecDeque<(Nanos, Pid)>,
    /// CPUs whose strict accounting this instant may have changed: those
    /// that became idle or busy, and the idle ones a class started or
    /// stopped claiming (the others need no work at an instant: 224 CPUs
    /// would otherwise be visited at every event of a large machine).
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// (time, CPU) of each change to a CPU's grace accounting, in the order
    /// made: a CPU is replayed when one of its changes becomes final.
    grace_due: VecDeque<(Nanos, u32)>,
    /// Affinity classes: their CPUs (those of the trace) and how many of
    /// their tasks violate now. A CPU's strict accounting hears only when
    /// a class starts or stops violating, not of each task (on a large
    /// machine every task may use every CPU).
    classes: Vec<(Vec<u32>, u32)>,
    class_of: std::collections::HashMap<Vec<u32>, usize>,
    /// The classes each CPU belongs to: it is claimed while one of them
    /// violates.
    classes_of_cpu: Vec<Vec<usize>>,
}

impl WorkConsCollector {
    /// A window opening at `start` with `initial[c]` current on CPU `c`
    /// (0: idle; the simulator starts every CPU idle; a capture's first
    /// switch on a CPU names it, see [`initial_occupants`]).
    pub fn new(opts: &WorkConsOptions, table: &schedlab_trace::TaskTable, start: Nanos, initial: Vec<Pid>) -> Self {
        let n = initial.len();
        let cpus = initial
            .iter()
            .map(|&p| CpuAcc {
                idle: p == 0,
                idle_since: start,
                idle_ns: 0,
                strict: Stretches::default(),
                grace: Unclaimed::new(start, p == 0),
            })
            .collect();
        WorkConsCollector {
            allowed: opts.allowed.clone(),
            grace_ns: opts.grace_ns,
            nr_cpus: initial.len() as u32,
            table: table.clone(),
            start,
            end: opts.end_ts,
            group_ts: None,
            curr: initial,
            cpus,
            tasks: Default::default(),
            waiting: BTreeSet::new(),
            dirty: Vec::new(),
            cpu_changed: Vec::new(),
            check: Vec::new(),
            pending_grace: VecDeque::new(),
            touched: Vec::new(),
            is_touched: vec![false; n],
            grace_due: VecDeque::new(),
            classes: Vec::new(),
            class_of: std::collections::HashMap::new(),
            classes_of_cpu: vec![Vec::new(); n],
        }
    }

    /// A task created mid-run, before its first event: its comm and the
    /// CPUs it may use (`None`: as an unlisted task's).
    pub fn task_new(&mut self, pid: Pid, info: &schedlab_trace::TaskInfo, allowed: Option<Vec<u32>>) {
        self.table.tasks.insert(pid, info.clone());
        if let Some(a) = allowed {
            self.allowed.insert(pid, a);
        }
    }

    fn touch(touched: &mut Vec<u32>, is_touched: &mut [bool], c: u32) {
        if !is_touched[c as usize] {
            is_touched[c as usize] = true;
            touched.push(c);
        }
    }

    fn waiter(&mut self, pid: Pid) -> &mut Waiter {
        let (allowed_of, table, nr_cpus) = (&self.allowed, &self.table, self.nr_cpus);
        let (classes, classes_of_cpu, class_of) = (&mut self.classes, &mut self.classes_of_cpu, &mut self.class_of);
        self.tasks.get_or_insert_with(pid, || {
            let allowed = allowed_cpus(allowed_of, pid, table.comm(pid), nr_cpus);
            let class = *class_of.entry(allowed.clone()).or_insert_with(|| {
                let cpus: Vec<u32> = allowed.iter().copied().filter(|&c| c < nr_cpus).collect();
                for &c in &cpus {
                    classes_of_cpu[c as usize].push(classes.len());
                }
                classes.push((cpus, 0));
                classes.len() - 1
            });
            Waiter::new(allowed, class)
        })
    }
}

/// The sorted union of two sorted, duplicate-free sequences into `out`
/// (`BTreeSet::union`'s order, without a set for the second).
fn merge_sorted(a: impl Iterator<Item = Pid>, b: impl Iterator<Item = Pid>, out: &mut Vec<Pid>) {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(x), Some(y)) if x > y => b.next(),
            (Some(_), Some(_)) => {
                b.next();
                a.next()
            }
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => return,
        };
        out.extend(next);
    }
}

impl Waiter {
    /// Count the violation `[since, end)`; whether it lasted the grace window.
    fn close_violation(&mut self, since: Nanos, end: Nanos, grace_ns: u64) -> bool {
        let len = end - since;
        self.strict.add(len);
        if self.intervals.len() < KEPT_INTERVALS {
            self.intervals.push((since, end));
        }
        let qualifies = len >= grace_ns;
        if qualifies {
            self.grace.add(len);
        }
        qualifies
    }

    fn new(allowed: Vec<u32>, class: usize) -> Waiter {
        Waiter {
            allowed,
            class,
            waiting_since: None,
            running: false,
            violating_since: None,
            grace_logged: false,
            waits: 0,
            wait_ns: 0,
            strict: ViolationStats::default(),
            grace: ViolationStats::default(),
            intervals: Vec::new(),
        }
    }
}

impl WorkConsCollector {
    pub fn observe(&mut self, ev: &schedlab_trace::Event) {
        if self.end.is_some_and(|e| ev.ts > e.max(self.start)) {
            return;
        }
        if self.group_ts.is_some_and(|g| g != ev.ts) {
            self.settle();
        }
        self.group_ts = Some(ev.ts);
        match ev.kind {
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } if pid != 0 => {
                let w = self.waiter(pid);
                if !w.running && w.waiting_since.is_none() {
                    w.waiting_since = Some(ev.ts);
                    self.waiting.insert(pid);
                    self.dirty.push(pid);
                }
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                let cpu = ev.cpu as usize;
                if cpu < self.curr.len() {
                    if (self.curr[cpu] == 0) != (next_pid == 0) {
                        self.cpu_changed.push(cpu as u32);
                    }
                    self.curr[cpu] = next_pid;
                }
                if prev_pid != 0 {
                    let w = self.waiter(prev_pid);
                    w.running = false;
                    if matches!(prev_state, PrevState::Running { .. }) && w.waiting_since.is_none() {
                        w.waiting_since = Some(ev.ts);
                        self.waiting.insert(prev_pid);
                    }
                    self.dirty.push(prev_pid);
                }
                if next_pid != 0 {
                    let w = self.waiter(next_pid);
                    w.running = true;
                    if let Some(since) = w.waiting_since.take() {
                        w.waits += 1;
                        w.wait_ns += ev.ts - since;
                    }
                    self.waiting.remove(&next_pid);
                    self.dirty.push(next_pid);
                }
            }
            _ => {}
        }
    }

    /// Close the instant: the CPUs' idle states after it, who violates
    /// now, which violations have lasted the grace window; then replay
    /// what is final.
    fn settle(&mut self) {
        let Some(ts) = self.group_ts else { return };
        // Idle changes of this instant (a CPU that left and re-entered idle
        // at one instant has not changed).
        let mut changed = std::mem::take(&mut self.cpu_changed);
        changed.sort_unstable();
        changed.dedup();
        let mut any_cpu = false;
        for &c in &changed {
            let idle = self.curr[c as usize] == 0;
            let acc = &mut self.cpus[c as usize];
            if acc.idle != idle {
                any_cpu = true;
                if acc.idle {
                    acc.idle_ns += ts - acc.idle_since;
                } else {
                    acc.idle_since = ts;
                }
                acc.idle = idle;
                acc.grace.idle_changed(ts, idle);
                Self::touch(&mut self.touched, &mut self.is_touched, c);
                self.grace_due.push_back((ts, c));
            }
        }
        changed.clear();
        self.cpu_changed = changed;
        self.dirty.sort_unstable();
        self.dirty.dedup();
        let mut check = std::mem::take(&mut self.check);
        check.clear();
        if any_cpu {
            merge_sorted(self.waiting.iter().copied(), self.dirty.iter().copied(), &mut check);
        } else {
            check.extend_from_slice(&self.dirty);
        }
        self.dirty.clear();
        for &pid in &check {
            let Some(w) = self.tasks.get_mut(&pid) else { continue };
            let curr = &self.curr;
            let idle = |c: &u32| curr.get(*c as usize) == Some(&0);
            let violating = w.waiting_since.is_some() && w.allowed.iter().any(idle);
            match (violating, w.violating_since) {
                (true, None) => {
                    w.violating_since = Some(ts);
                    w.grace_logged = false;
                    let class = &mut self.classes[w.class];
                    class.1 += 1;
                    if class.1 == 1 {
                        // Only an idle CPU's stretches can change (a busy
                        // one is evaluated when it becomes idle).
                        for &c in class.0.iter().filter(|&&c| self.cpus[c as usize].idle) {
                            Self::touch(&mut self.touched, &mut self.is_touched, c);
                        }
                    }
                    self.pending_grace.push_back((ts, pid));
                }
                (false, Some(since)) => {
                    w.violating_since = None;
                    let qualifies = w.close_violation(since, ts, self.grace_ns);
                    let class = &mut self.classes[w.class];
                    class.1 -= 1;
                    if class.1 == 0 {
                        for &c in class.0.iter().filter(|&&c| self.cpus[c as usize].idle) {
                            Self::touch(&mut self.touched, &mut self.is_touched, c);
                        }
                    }
                    if qualifies {
                        for &c in &class.0 {
                            let acc = &mut self.cpus[c as usize];
                            if !w.grace_logged {
                                acc.grace.qualified(since);
                            }
                            acc.grace.ended(ts);
                            self.grace_due.push_back((since, c));
                        }
                    }
                    w.grace_logged = false;
                }
                _ => {}
            }
        }
        self.check = check;
        // Violations in progress that have now lasted the grace window.
        while let Some(&(since, pid)) = self.pending_grace.front() {
            if since.saturating_add(self.grace_ns) > ts {
                break;
            }
            self.pending_grace.pop_front();
            let Some(w) = self.tasks.get_mut(&pid) else { continue };
            if w.violating_since == Some(since) && !w.grace_logged {
                w.grace_logged = true;
                for &c in w.allowed.iter().filter(|&&c| c < self.nr_cpus) {
                    self.cpus[c as usize].grace.qualified(since);
                    self.grace_due.push_back((since, c));
                }
            }
        }
        // The strict accounting of the CPUs this instant touched, whole.
        for &c in &self.touched {
            let c = c as usize;
            self.is_touched[c] = false;
            let classes = &self.classes;
            let claimed = || self.classes_of_cpu[c].iter().any(|&k| classes[k].1 > 0);
            let acc = &mut self.cpus[c];
            acc.strict.set(ts, acc.idle && claimed());
        }
        self.touched.clear();
        // The grace accounting of a CPU is visited once one of its changes
        // is final (all of them are replayed at the end).
        let final_before = ts.saturating_sub(self.grace_ns);
        while let Some(&(t, c)) = self.grace_due.front() {
            if t >= final_before {
                break;
            }
            self.grace_due.pop_front();
            self.cpus[c as usize].grace.advance(final_before);
        }
    }

    /// The report at `end` (the window's end given in the options, else
    /// `last_ts`, the last event's time).
    pub fn finish(mut self, last_ts: Nanos) -> WorkConservation {
        self.settle();
        let end = self.end.unwrap_or(last_ts).max(self.start);
        let mut tasks: Vec<(Pid, Waiter)> = self.tasks.take_all();
        tasks.sort_unstable_by_key(|&(pid, _)| pid);
        for (_, w) in &mut tasks {
            if let Some(since) = w.waiting_since.take() {
                w.waits += 1;
                w.wait_ns += end - since;
            }
            if let Some(since) = w.violating_since.take() {
                if end > since {
                    let qualifies = w.close_violation(since, end, self.grace_ns);
                    // (The strict stretches all close at `end` below;
                    // the classes' violation counts are not read again.)
                    if qualifies {
                        for &c in &self.classes[w.class].0 {
                            let acc = &mut self.cpus[c as usize];
                            if !w.grace_logged {
                                acc.grace.qualified(since);
                            }
                            acc.grace.ended(end);
                        }
                    }
                }
            }
        }
        let table = &self.table;
        let rows: Vec<TaskWorkCons> = tasks
            .into_iter()
            .filter(|(_, w)| w.waits > 0)
            .map(|(pid, w)| TaskWorkCons {
                pid,
                comm: table.comm(pid).to_string(),
                strict: w.strict,
                grace: w.grace,
                allowed: w.allowed,
                waits: w.waits,
                wait_ns: w.wait_ns,
                intervals: w.intervals,
                left_out: false,
            })
            .collect();
        let cpu_set: BTreeSet<u32> =
            rows.iter().flat_map(|t| t.allowed.iter().copied()).filter(|&c| c < self.nr_cpus).collect();
        let mut out = WorkConservation {
            start_ts: self.start,
            end_ts: end,
            grace_ns: self.grace_ns,
            tasks: Vec::new(),
            cpus: Vec::new(),
            idle_ns: 0,
            unclaimed_ns: 0,
            unclaimed_grace_ns: 0,
            unclaimed_pct: 0.0,
            unclaimed_grace_pct: 0.0,
        };
        for cpu in cpu_set {
            let acc = &mut self.cpus[cpu as usize];
            if acc.idle {
                acc.idle_ns += end - acc.idle_since;
            }
            acc.strict.finish(end);
            acc.grace.finish(end);
            let (idle_ns, unclaimed, unclaimed_grace) = (acc.idle_ns, acc.strict.stats, acc.grace.stretches.stats);
            out.cpus.push(CpuWorkCons {
                cpu,
                idle_ns,
                unclaimed_pct: pct(unclaimed.total_ns, idle_ns),
                unclaimed_grace_pct: pct(unclaimed_grace.total_ns, idle_ns),
                unclaimed,
                unclaimed_grace,
                uncertain_ns: 0,
                left_out: false,
            });
        }
        out.tasks = rows;
        out.sum_kept_cpus();
        out
    }
}

impl WorkConservation {
    /// Note each CPU's uncertain time (ns, by CPU: where the trace's
    /// switches had to be repaired) and leave out the CPUs above
    /// [`UNCERTAIN_LIMIT_PCT`] of the window, with the tasks allowed on
    /// them (whether such a task waited while that CPU idled is unknown);
    /// the sums cover the CPUs kept.
    pub fn leave_out_uncertain(&mut self, uncertain: &BTreeMap<u32, u64>) {
        let window = self.end_ts.saturating_sub(self.start_ts).max(1) as f64;
        for c in &mut self.cpus {
            c.uncertain_ns = uncertain.get(&c.cpu).copied().unwrap_or(0);
            c.left_out = 100.0 * c.uncertain_ns as f64 / window > UNCERTAIN_LIMIT_PCT;
        }
        let out: BTreeSet<u32> = self.cpus.iter().filter(|c| c.left_out).map(|c| c.cpu).collect();
        for t in &mut self.tasks {
            t.left_out = t.allowed.iter().any(|c| out.contains(c));
        }
        self.sum_kept_cpus();
    }

    /// Whether any CPU's figures are kept (else the sums mean nothing).
    pub fn has_figures(&self) -> bool {
        self.cpus.iter().any(|c| !c.left_out)
    }

    fn sum_kept_cpus(&mut self) {
        let kept = || self.cpus.iter().filter(|c| !c.left_out);
        self.idle_ns = kept().map(|c| c.idle_ns).sum();
        self.unclaimed_ns = kept().map(|c| c.unclaimed.total_ns).sum();
        self.unclaimed_grace_ns = kept().map(|c| c.unclaimed_grace.total_ns).sum();
        self.unclaimed_pct = pct(self.unclaimed_ns, self.idle_ns);
        self.unclaimed_grace_pct = pct(self.unclaimed_grace_ns, self.idle_ns);
    }
}

/// Each CPU's current task when the window opens (0: idle), as
/// [`WorkConsCollector::new`] takes it: from a trace's time-ordered events
/// (its first switch's `prev_pid`, else its first event's context).
pub fn initial_occupants(events: &[schedlab_trace::Event], nr_cpus: u32, end: Nanos) -> Vec<Pid> {
    crate::timeline::initial_occupants(events, nr_cpus, end).into_iter().map(|(p, _)| p).collect()
}

/// Check `trace` (see the module doc).
pub fn work_conservation(trace: &Trace, opts: &WorkConsOptions) -> WorkConservation {
    let events = trace.in_time_order();
    let start = events.first().map_or(0, |e| e.ts);
    let end = opts.end_ts.unwrap_or_else(|| events.last().map_or(0, |e| e.ts)).max(start);
    let initial = initial_occupants(&events, trace.nr_cpus, end);
    let mut c =
        WorkConsCollector::new(&WorkConsOptions { end_ts: Some(end), ..opts.clone() }, &trace.table, start, initial);
    for ev in events.iter() {
        c.observe(ev);
    }
    c.finish(end)
}

/// The CPUs the report covers, as a cpulist (`2,4-7`).
pub fn covered_cpus(w: &WorkConservation) -> String {
    cpulist(&w.cpus.iter().filter(|c| !c.left_out).map(|c| c.cpu).collect::<Vec<_>>())
}

#[cfg(test)]
#[path = "workcons_tests.rs"]
mod tests;
