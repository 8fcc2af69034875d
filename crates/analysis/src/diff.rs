//! Where two runs of one workload part ways: the first scheduler step at which
//! their traces differ, what each side decided there in kernel terms, and the
//! state of the CPUs involved just before it.
//!
//! The simulator is deterministic, so two runs of one scenario and seed under
//! two settings (say `DELAY_DEQUEUE` and `NO_DELAY_DEQUEUE`) emit the very same
//! events until the first step the setting changes. That step is the cause of
//! every later difference; all the rest is drift. This module needs no
//! simulator: it compares two [`Trace`]s, so it also works on two captures of
//! a real, deterministic enough workload.
//!
//! Two events are the same step when timestamp, CPU, context task and payload
//! agree; the latency-format flags (`d..2.`) are not compared (they follow
//! from the same state). CPU state is rebuilt from the common prefix only, by
//! the same rules `perf sched` uses: `rq->curr` is the last `sched_switch`'s
//! next task; a task woken onto a CPU (`sched_wakeup`), preempted there
//! (`prev_state` `R`/`R+`) or migrated there while runnable waits on it until
//! switched in; `schedlab_delayed` marks a blocked task DELAY_DEQUEUE left
//! queued (`sched_delayed`).

use std::collections::{BTreeMap, BTreeSet};

use schedlab_trace::ftrace::{format_line, user_marker_text, WriteOptions};
use schedlab_trace::{
    DelayedWhat, Event, EventKind, Nanos, Pid, PrevState, RtBalanceResult, TaskTable, Trace, WakePath,
};
use serde::Serialize;

use crate::narrative::{balancer_fn, us_signed};
use crate::table::{self, col, layout, threshold_label};
use crate::{RunMetrics, TaskMetrics};

/// Common events shown before the divergence unless told otherwise.
pub const DEFAULT_DIFF_CONTEXT: usize = 5;
/// Events of each side shown from the divergence on.
pub const DEFAULT_DIFF_AFTER: usize = 8;
/// At most this many "next decision" pairs are reported.
pub(crate) const MAX_NEXT_DECISIONS: usize = 6;

/// How much to show around the divergence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffOptions {
    /// Common events printed before the divergence.
    pub context: usize,
    /// Events of each side printed from the divergent one on.
    pub after: usize,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { context: DEFAULT_DIFF_CONTEXT, after: DEFAULT_DIFF_AFTER }
    }
}

/// One event as its ftrace line, with its index in its (time-ordered) trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffLine {
    pub index: usize,
    pub ts: Nanos,
    pub cpu: u32,
    /// `true` for the `schedlab_*` decision events, which explain choices.
    pub decision: bool,
    pub line: String,
}

/// One side's view of the divergence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DivergentSide {
    /// The first event that differs; `None` when this trace ended there.
    pub event: Option<DiffLine>,
    /// What that event means in kernel terms.
    pub meaning: Option<String>,
    /// The events from the divergent one on (at most `after`).
    pub after: Vec<DiffLine>,
    /// Events in the whole trace.
    pub total_events: usize,
}

/// The next decision of one family about one task on each side, when they differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NextDecision {
    pub pid: Pid,
    pub comm: String,
    /// `wakeup` (`schedlab_ttwu`), `delay` (`schedlab_delayed`), `load balance`
    /// (`schedlab_lb_migrate`) or `rt balance` (`schedlab_rt_push`/`_pull`).
    pub family: &'static str,
    pub a: Option<(DiffLine, String)>,
    pub b: Option<(DiffLine, String)>,
}

/// A task as seen on a CPU: since when, for how long at the divergence, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskOnCpu {
    pub pid: Pid,
    pub comm: String,
    pub since: Nanos,
    pub for_ns: u64,
    /// `running`, `idle`, `woken`, `new`, `preempted`, `runnable` (switched
    /// out `R` without preemption, e.g. a yield), `migrated`, `delayed`.
    pub why: &'static str,
}

/// One CPU just before the divergence, from the common prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuState {
    pub cpu: u32,
    /// `rq->curr`; pid 0 when idle.
    pub curr: TaskOnCpu,
    /// No `sched_switch` on this CPU in the prefix: `curr` is the context of
    /// its first event, or idle, since the trace began.
    pub since_trace_start: bool,
    /// Runnable tasks waiting on this CPU, longest-waiting first.
    pub waiting: Vec<TaskOnCpu>,
    /// Blocked tasks DELAY_DEQUEUE left queued here (`se.sched_delayed`).
    pub delayed: Vec<TaskOnCpu>,
}

impl CpuState {
    pub fn is_idle(&self) -> bool {
        self.curr.pid == 0
    }
}

/// Where and how two traces part ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    /// Index of the first differing event; the traces agree on all before it.
    pub index: usize,
    /// Timestamp of the earlier of the two divergent events.
    pub ts: Nanos,
    /// The last common events (at most `context`).
    pub before: Vec<DiffLine>,
    pub a: DivergentSide,
    pub b: DivergentSide,
    /// For the tasks the divergent events name: their next wakeup / delay /
    /// balance decision on each side, where the two differ.
    pub next_decisions: Vec<NextDecision>,
    /// The CPUs the divergent events (and those next decisions) happen on or name.
    pub cpus: Vec<CpuState>,
}

/// Whether `a` and `b` are the same scheduler step (flags not compared).
pub fn same_step(a: &Event, b: &Event) -> bool {
    a.ts == b.ts && a.cpu == b.cpu && a.ctx_pid == b.ctx_pid && a.kind == b.kind
}

/// Whether `kind` is one of schedlab's own `schedlab_*` decision events
/// (`ttwu` path, delayed dequeue, resched, wakeup-preempt check, balancing
/// and RT push/pull), which the simulator emits but no real kernel trace has,
/// rather than a kernel sched tracepoint or a workload marker. Removing them
/// leaves what a tracefs capture of the same run would show.
pub fn is_decision(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Ttwu { .. }
            | EventKind::Delayed { .. }
            | EventKind::Resched { .. }
            | EventKind::WakeupPreempt { .. }
            | EventKind::LbMigrate { .. }
            | EventKind::ActiveBalanceQueued { .. }
            | EventKind::RtPush { .. }
            | EventKind::RtPull { .. }
            | EventKind::RtPushIpi { .. }
            | EventKind::RtPrioChanged { .. }
    )
}

/// `comm` for a payload pid, `idle` for pid 0.
fn name(table: &TaskTable, pid: Pid) -> String {
    if pid == 0 {
        "idle".to_string()
    } else {
        table.comm(pid).to_string()
    }
}

/// `ns` as `1.234 ms` or `56.7 us` (truncated).
pub(crate) fn duration_text(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{} ms", table::ms(ns))
    } else {
        format!("{} us", table::us(ns))
    }
}

/// A timestamp as ftrace prints it: `secs.micros`.
pub(crate) fn ts_text(ts: Nanos) -> String {
    format!("{}.{:06}", ts / 1_000_000_000, ts % 1_000_000_000 / 1_000)
}

fn rt_result_text(r: RtBalanceResult) -> &'static str {
    match r {
        RtBalanceResult::Moved => "moved",
        RtBalanceResult::NoLowerCpu => "no CPU runs anything of lower priority (find_lowest_rq)",
        RtBalanceResult::Resched => "it outranks the current task there: reschedule instead of moving",
        RtBalanceResult::NotAllowedHere => "not allowed on this CPU, or running (pick_highest_pushable_task)",
        RtBalanceResult::NotHigher => "it does not outrank what runs here",
    }
}

/// What `ev` means in kernel terms, one line (decision events name the
/// kernel function that decided; tracepoints say what happened).
pub fn describe_event(table: &TaskTable, ev: &Event) -> String {
    let c = |pid: Pid| name(table, pid);
    let here = ev.cpu;
    match ev.kind {
        EventKind::SchedWaking { pid, target_cpu, .. } => {
            format!("try_to_wake_up() starts waking {} (last CPU {target_cpu})", c(pid))
        }
        EventKind::SchedWakeup { pid, target_cpu, .. } => {
            format!("{} is enqueued runnable on CPU {target_cpu} (sched_wakeup)", c(pid))
        }
        EventKind::SchedWakeupNew { pid, target_cpu, .. } => {
            format!("wake_up_new_task(): {} starts on CPU {target_cpu}", c(pid))
        }
        EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
            let how = match prev_state {
                PrevState::Running { preempt: true } => "is preempted (R+)",
                PrevState::Running { preempt: false } => "gives up the CPU still runnable (R)",
                PrevState::Sleeping | PrevState::DiskSleep => "blocks",
                PrevState::Dead => "exits",
            };
            let prev = if prev_pid == 0 { "the CPU leaves idle".to_string() } else { format!("{} {how}", c(prev_pid)) };
            let next = if next_pid == 0 { "the CPU goes idle".to_string() } else { format!("{} runs", c(next_pid)) };
            format!("__schedule() on CPU {here}: {prev}, {next}")
        }
        EventKind::SchedMigrateTask { pid, orig_cpu, dest_cpu, .. } => {
            format!("set_task_cpu(): {} moves from CPU {orig_cpu} to CPU {dest_cpu}", c(pid))
        }
        EventKind::SchedStatRuntime { pid, runtime } => {
            format!("update_curr(): {} is charged {} of runtime", c(pid), duration_text(runtime))
        }
        EventKind::SchedPiSetprio { pid, oldprio, newprio } => {
            let what = if newprio < oldprio { "boosted" } else { "deboosted" };
            format!("rt_mutex_setprio(): {} {what} from prio {oldprio} to {newprio}", c(pid))
        }
        EventKind::SchedWakeIdleWithoutIpi { cpu } => format!("CPU {cpu} polls in idle: woken without an IPI"),
        EventKind::CpuFrequency { state, cpu_id } => format!("cpufreq: CPU {cpu_id} now runs at {} MHz", state / 1000),
        EventKind::Ttwu { pid, path, cpu } => match path {
            WakePath::Runnable { delayed: true } => format!(
                "ttwu_runnable() requeued {} in place (sched_delayed) on CPU {cpu}, no select_task_rq()",
                c(pid)
            ),
            WakePath::Runnable { delayed: false } => {
                format!("ttwu_runnable(): {} was still queued on CPU {cpu}", c(pid))
            }
            WakePath::Activate => format!("select_task_rq() chose CPU {cpu} for {} (ttwu_do_activate)", c(pid)),
            WakePath::Wakelist => format!(
                "select_task_rq() chose CPU {cpu} for {}, queued on its wakelist (ttwu_queue_wakelist)",
                c(pid)
            ),
        },
        EventKind::Delayed { pid, what, lag } => match what {
            DelayedWhat::Delayed => format!(
                "dequeue_entity() left {} queued as sched_delayed on CPU {here} (blocked while ineligible, lag {}): DELAY_DEQUEUE",
                c(pid),
                us_signed(lag)
            ),
            DelayedWhat::DequeuedAtPick => {
                format!("pick_next_entity() completed the delayed dequeue of {} on CPU {here}", c(pid))
            }
            DelayedWhat::Requeued => {
                format!("requeue_delayed_entity() put {} back in play where it was queued", c(pid))
            }
            DelayedWhat::DequeuedAtWakeup => {
                format!("the wakeup completed the delayed dequeue of {} so it can be placed anew", c(pid))
            }
        },
        EventKind::Resched { cpu, ipi } => {
            format!("resched_curr() on CPU {cpu}{}", if ipi { " (reschedule IPI)" } else { "" })
        }
        EventKind::WakeupPreempt { wakee, curr, preempt, reason } => {
            if reason == schedlab_trace::PreemptReason::Idle {
                format!("wakeup_preempt(): CPU idle, {} runs next", c(wakee))
            } else if preempt {
                format!("wakeup_preempt(): {} preempts {} ({})", c(wakee), c(curr), reason.as_str())
            } else {
                format!("wakeup_preempt(): {} does not preempt {} ({})", c(wakee), c(curr), reason.as_str())
            }
        }
        EventKind::User { pid, op } => format!("{} writes the marker `{}`", c(pid), user_marker_text(table, &op)),
        EventKind::LbMigrate { pid, src_cpu, dst_cpu, kind, delayed } => format!(
            "{} moved {}{} from CPU {src_cpu} to CPU {dst_cpu}",
            balancer_fn(kind),
            c(pid),
            if delayed { " (sched_delayed)" } else { "" }
        ),
        EventKind::ActiveBalanceQueued { src_cpu, dst_cpu } => format!(
            "need_active_balance(): the stopper on CPU {src_cpu} is queued to push a task to CPU {dst_cpu}"
        ),
        EventKind::RtPush { pid, src_cpu, dst_cpu, result } => match (result, dst_cpu) {
            (RtBalanceResult::Moved, Some(d)) => {
                format!("push_rt_task() for CPU {src_cpu} pushed {} to CPU {d}", c(pid))
            }
            _ => format!("push_rt_task() for CPU {src_cpu} did not move {}: {}", c(pid), rt_result_text(result)),
        },
        EventKind::RtPull { src_cpu, pid, result } => match result {
            RtBalanceResult::Moved => format!("pull_rt_task() on CPU {here} pulled {} from CPU {src_cpu}", c(pid)),
            _ if pid == 0 => format!("pull_rt_task() on CPU {here}: CPU {src_cpu} had nothing to offer"),
            _ => format!(
                "pull_rt_task() on CPU {here} passed over {} on CPU {src_cpu}: {}",
                c(pid),
                rt_result_text(result)
            ),
        },
        EventKind::RtPushIpi { dst_cpu, first: true } => {
            format!("tell_cpu_to_push(): CPU {here} asks CPU {dst_cpu} to push by IPI (RT_PUSH_IPI) instead of pulling")
        }
        EventKind::RtPushIpi { dst_cpu, first: false } => {
            format!("rto_push_irq_work_func(): the push IPI chain moves on to CPU {dst_cpu}")
        }
        EventKind::RtPrioChanged { pid, oldprio, newprio, resched, push, pull, .. } => {
            let mut queued: Vec<&str> = Vec::new();
            if resched {
                queued.push("a reschedule");
            }
            if push {
                queued.push("a push");
            }
            if pull {
                queued.push("a pull");
            }
            let queued = if queued.is_empty() { "nothing".to_string() } else { queued.join(" and ") };
            format!("prio_changed_rt() for {} (prio {oldprio} -> {newprio}) queued {queued}", c(pid))
        }
    }
}

/// Tasks an event is about (pid 0 excluded).
pub(crate) fn tasks_named(kind: &EventKind) -> Vec<Pid> {
    let v = match *kind {
        EventKind::SchedWaking { pid, .. }
        | EventKind::SchedWakeup { pid, .. }
        | EventKind::SchedWakeupNew { pid, .. }
        | EventKind::SchedMigrateTask { pid, .. }
        | EventKind::SchedStatRuntime { pid, .. }
        | EventKind::SchedPiSetprio { pid, .. }
        | EventKind::Ttwu { pid, .. }
        | EventKind::Delayed { pid, .. }
        | EventKind::User { pid, .. }
        | EventKind::LbMigrate { pid, .. }
        | EventKind::RtPush { pid, .. }
        | EventKind::RtPull { pid, .. }
        | EventKind::RtPrioChanged { pid, .. } => vec![pid],
        EventKind::SchedSwitch { prev_pid, next_pid, .. } => vec![prev_pid, next_pid],
        EventKind::WakeupPreempt { wakee, curr, .. } => vec![wakee, curr],
        EventKind::SchedWakeIdleWithoutIpi { .. }
        | EventKind::CpuFrequency { .. }
        | EventKind::Resched { .. }
        | EventKind::ActiveBalanceQueued { .. }
        | EventKind::RtPushIpi { .. } => vec![],
    };
    v.into_iter().filter(|&p| p != 0).collect()
}

/// The CPU an event happened on plus every CPU it names.
pub(crate) fn cpus_named(ev: &Event) -> Vec<u32> {
    let mut v = vec![ev.cpu];
    match ev.kind {
        EventKind::SchedWaking { target_cpu, .. }
        | EventKind::SchedWakeup { target_cpu, .. }
        | EventKind::SchedWakeupNew { target_cpu, .. } => v.push(target_cpu),
        EventKind::SchedMigrateTask { orig_cpu, dest_cpu, .. } => v.extend([orig_cpu, dest_cpu]),
        EventKind::SchedWakeIdleWithoutIpi { cpu }
        | EventKind::CpuFrequency { cpu_id: cpu, .. }
        | EventKind::Ttwu { cpu, .. }
        | EventKind::Resched { cpu, .. } => v.push(cpu),
        EventKind::LbMigrate { src_cpu, dst_cpu, .. } | EventKind::ActiveBalanceQueued { src_cpu, dst_cpu } => {
            v.extend([src_cpu, dst_cpu])
        }
        EventKind::RtPush { src_cpu, dst_cpu, .. } => v.extend(std::iter::once(src_cpu).chain(dst_cpu)),
        EventKind::RtPull { src_cpu, .. } => v.push(src_cpu),
        EventKind::RtPushIpi { dst_cpu, .. } => v.push(dst_cpu),
        _ => {}
    }
    v
}

/// The CPUs a decision is about: the runqueues it chose or moved between
/// (not the CPU a remote waker or the idle load balancer happened to run on).
pub(crate) fn decision_cpus(ev: &Event) -> Vec<u32> {
    match ev.kind {
        EventKind::Ttwu { cpu, .. } => vec![cpu],
        EventKind::LbMigrate { src_cpu, dst_cpu, .. } => vec![src_cpu, dst_cpu],
        EventKind::RtPush { src_cpu, dst_cpu, .. } => std::iter::once(src_cpu).chain(dst_cpu).collect(),
        _ => cpus_named(ev),
    }
}

/// The decision family an event belongs to, for the task it decides about.
pub(crate) fn decision_family(kind: &EventKind) -> Option<(Pid, &'static str)> {
    match *kind {
        EventKind::Ttwu { pid, .. } => Some((pid, "wakeup")),
        EventKind::Delayed { pid, .. } => Some((pid, "delay")),
        EventKind::LbMigrate { pid, .. } => Some((pid, "load balance")),
        EventKind::RtPush { pid, .. } | EventKind::RtPull { pid, .. } if pid != 0 => Some((pid, "rt balance")),
        _ => None,
    }
}

pub(crate) const FAMILIES: [&str; 4] = ["wakeup", "delay", "load balance", "rt balance"];

/// `ev`, the `index`-th event of its trace, as a [`DiffLine`].
pub(crate) fn line_of(table: &TaskTable, ev: &Event, index: usize) -> DiffLine {
    DiffLine {
        index,
        ts: ev.ts,
        cpu: ev.cpu,
        decision: is_decision(&ev.kind),
        line: format_line(table, ev, &WriteOptions::default()),
    }
}

/// Compare `a` and `b` (each taken in time order) and describe their first
/// divergence; `None` when every event agrees. The traces are fed to a
/// [`DiffStream`](crate::DiffStream) in turn, as `schedlab diff` feeds two
/// running simulations.
pub fn diff_traces(a: &Trace, b: &Trace, opts: &DiffOptions) -> Option<Divergence> {
    let (ea, eb) = (a.in_time_order(), b.in_time_order());
    let mut stream = crate::DiffStream::new(*opts);
    stream.start(0, &a.table);
    stream.start(1, &b.table);
    let (mut ia, mut ib) = (ea.iter(), eb.iter());
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => break,
            (x, y) => {
                x.into_iter().for_each(|e| stream.event(0, e));
                y.into_iter().for_each(|e| stream.event(1, e));
            }
        }
    }
    stream.finish()
}

/// Where a task is, as the prefix shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Running,
    Waiting { cpu: u32, since: Nanos, why: &'static str },
    Blocked,
}

/// The state of `cpus` at time `at`, rebuilt from `prefix` (time-ordered events).
///
/// A CPU without a `sched_switch` in the prefix runs the task in whose
/// context its first event was emitted, else the idle task, since the
/// prefix's first timestamp (as [`crate::work_conservation`] assumes).
pub fn cpu_states(table: &TaskTable, prefix: &[Event], cpus: &[u32], at: Nanos) -> Vec<CpuState> {
    let mut fold = CpuStateFold::default();
    prefix.iter().for_each(|ev| fold.observe(ev));
    fold.states(table, cpus, at)
}

/// [`cpu_states`] one event at a time: what the prefix so far says about
/// each CPU and task, in state bounded by the numbers of CPUs and tasks.
#[derive(Clone, Debug, Default)]
pub struct CpuStateFold {
    start: Option<Nanos>,
    curr: BTreeMap<u32, (Pid, Nanos)>,
    first_ctx: BTreeMap<u32, Pid>,
    place: BTreeMap<Pid, Place>,
    delayed: BTreeMap<Pid, (u32, Nanos)>,
}

impl CpuStateFold {
    /// The next event of the prefix.
    pub fn observe(&mut self, ev: &Event) {
        let (place, delayed) = (&mut self.place, &mut self.delayed);
        self.start.get_or_insert(ev.ts);
        self.first_ctx.entry(ev.cpu).or_insert(ev.ctx_pid);
        match ev.kind {
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                if prev_pid != 0 {
                    let p = match prev_state {
                        PrevState::Running { preempt: true } => {
                            Place::Waiting { cpu: ev.cpu, since: ev.ts, why: "preempted" }
                        }
                        PrevState::Running { preempt: false } => {
                            Place::Waiting { cpu: ev.cpu, since: ev.ts, why: "runnable" }
                        }
                        _ => Place::Blocked,
                    };
                    place.insert(prev_pid, p);
                }
                if next_pid != 0 {
                    place.insert(next_pid, Place::Running);
                    delayed.remove(&next_pid);
                }
                self.curr.insert(ev.cpu, (next_pid, ev.ts));
            }
            EventKind::SchedWakeup { pid, target_cpu, .. } | EventKind::SchedWakeupNew { pid, target_cpu, .. } => {
                let why = if matches!(ev.kind, EventKind::SchedWakeupNew { .. }) { "new" } else { "woken" };
                match place.get(&pid) {
                    Some(Place::Running) => {}
                    Some(Place::Waiting { cpu, .. }) if *cpu == target_cpu => {}
                    _ => {
                        place.insert(pid, Place::Waiting { cpu: target_cpu, since: ev.ts, why });
                    }
                }
            }
            EventKind::SchedMigrateTask { pid, dest_cpu, .. } => {
                if let Some(Place::Waiting { cpu, .. }) = place.get_mut(&pid) {
                    *cpu = dest_cpu;
                }
                if let Some((cpu, _)) = delayed.get_mut(&pid) {
                    *cpu = dest_cpu;
                }
            }
            EventKind::Delayed { pid, what: DelayedWhat::Delayed, .. } => {
                delayed.insert(pid, (ev.cpu, ev.ts));
            }
            EventKind::Delayed { pid, .. } => {
                delayed.remove(&pid);
            }
            _ => {}
        }
    }

    /// The state of `cpus` at `at`, as the events so far leave it.
    pub fn states(&self, table: &TaskTable, cpus: &[u32], at: Nanos) -> Vec<CpuState> {
        let start = self.start.unwrap_or(at);
        let task = |pid: Pid, since: Nanos, why: &'static str| TaskOnCpu {
            pid,
            comm: if pid == 0 { "idle".to_string() } else { table.comm(pid).to_string() },
            since,
            for_ns: at.saturating_sub(since),
            why,
        };
        cpus.iter()
            .map(|&cpu| {
                let (curr, since_trace_start) = match self.curr.get(&cpu) {
                    Some(&(pid, since)) => (task(pid, since, if pid == 0 { "idle" } else { "running" }), false),
                    None => {
                        let pid = self.first_ctx.get(&cpu).copied().unwrap_or(0);
                        (task(pid, start, if pid == 0 { "idle" } else { "running" }), true)
                    }
                };
                let mut waiting: Vec<TaskOnCpu> = self
                    .place
                    .iter()
                    .filter_map(|(&pid, p)| match *p {
                        Place::Waiting { cpu: c, since, why } if c == cpu => Some(task(pid, since, why)),
                        _ => None,
                    })
                    .collect();
                waiting.sort_by_key(|t| (t.since, t.pid));
                let delayed = self
                    .delayed
                    .iter()
                    .filter(|(pid, (c, _))| *c == cpu && self.place.get(pid) != Some(&Place::Running))
                    .map(|(&pid, &(_, since))| task(pid, since, "delayed"))
                    .collect();
                CpuState { cpu, curr, since_trace_start, waiting, delayed }
            })
            .collect()
    }
}

fn task_list(tasks: &[TaskOnCpu]) -> String {
    tasks
        .iter()
        .map(|t| format!("{} ({}) {} for {}", t.comm, t.pid, t.why, duration_text(t.for_ns)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per CPU: who runs (or idle) and for how long, who waits, who is delayed.
pub fn render_cpu_state(s: &CpuState) -> String {
    let head = if s.is_idle() {
        format!("CPU {:<3} idle for {}", s.cpu, duration_text(s.curr.for_ns))
    } else {
        format!("CPU {:<3} running {} ({}) for {}", s.cpu, s.curr.comm, s.curr.pid, duration_text(s.curr.for_ns))
    };
    let mut line = head;
    if s.since_trace_start {
        line.push_str(" (since the trace began: no sched_switch on it yet)");
    }
    line.push_str("; waiting: ");
    line.push_str(if s.waiting.is_empty() { "none".into() } else { task_list(&s.waiting) }.as_str());
    if !s.delayed.is_empty() {
        line.push_str("; sched_delayed (blocked, still queued): ");
        line.push_str(&task_list(&s.delayed));
    }
    line
}

/// The divergence as text: where, the common context, each side's next
/// events, what the divergent decisions mean, the next differing decisions
/// about the tasks involved, and the CPUs involved.
pub fn render_divergence(d: &Divergence) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "first divergence at {} s: event #{} (the runs agree on the {} events before it)",
        ts_text(d.ts),
        d.index,
        d.index
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "last {} common events", d.before.len());
    for l in &d.before {
        let _ = writeln!(s, "   {}", l.line);
    }
    for (label, side) in [("A", &d.a), ("B", &d.b)] {
        let _ = writeln!(s);
        match &side.event {
            None => {
                let _ = writeln!(s, "{label}: the trace ends here ({} events)", side.total_events);
            }
            Some(_) => {
                let _ = writeln!(s, "{label} from the divergence on");
                for (i, l) in side.after.iter().enumerate() {
                    let _ = writeln!(s, "{} {}", if i == 0 { ">>" } else { "  " }, l.line);
                }
            }
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "what differs");
    for (label, side) in [("A", &d.a), ("B", &d.b)] {
        let kind = match &side.event {
            Some(e) if e.decision => "decision",
            Some(_) => "event",
            None => "end",
        };
        let meaning = side.meaning.as_deref().unwrap_or("no more events");
        match &side.event {
            // The other side inserted a step here; this one did nothing then.
            Some(e) if e.ts > d.ts => {
                let _ = writeln!(
                    s,
                    "  {label}: nothing at {}; next, at {} ({kind}): {meaning}",
                    ts_text(d.ts),
                    ts_text(e.ts)
                );
            }
            _ => {
                let _ = writeln!(s, "  {label} ({kind}): {meaning}");
            }
        }
    }
    if !d.next_decisions.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "next differing decisions about the tasks involved");
        for n in &d.next_decisions {
            let _ = writeln!(s, "  {} ({}) {}:", n.comm, n.pid, n.family);
            for (label, x) in [("A", &n.a), ("B", &n.b)] {
                match x {
                    Some((l, meaning)) => {
                        let _ = writeln!(s, "    {label} {}: {meaning}", ts_text(l.ts));
                    }
                    None => {
                        let _ = writeln!(s, "    {label} none in the rest of the run");
                    }
                }
            }
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "CPUs involved, just before the divergence (from the common prefix)");
    for c in &d.cpus {
        let _ = writeln!(s, "  {}", render_cpu_state(c));
    }
    s
}

/// One thread's metrics in A and B side by side (`[a, b]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DriftRow {
    pub pid: Pid,
    pub comm: String,
    pub runtime_ns: [u64; 2],
    pub wait_ns: [u64; 2],
    pub migrations: [u64; 2],
    pub handoffs: [u64; 2],
    pub handoff_p50_ns: [Option<u64>; 2],
    pub handoff_p99_ns: [Option<u64>; 2],
    /// Handoffs at or above the stall threshold.
    pub stalls: [u64; 2],
}

/// Rows for the tasks of `a` or `b` that `keep` accepts, by pid.
pub fn drift_rows(a: &RunMetrics, b: &RunMetrics, keep: impl Fn(&TaskMetrics) -> bool) -> Vec<DriftRow> {
    let pids: BTreeSet<Pid> = a.tasks.iter().chain(&b.tasks).filter(|t| keep(t)).map(|t| t.pid).collect();
    pids.into_iter()
        .map(|pid| {
            let (ta, tb) = (a.task(pid), b.task(pid));
            let get = |f: &dyn Fn(&TaskMetrics) -> u64| [ta.map_or(0, f), tb.map_or(0, f)];
            let opt = |f: &dyn Fn(&TaskMetrics) -> Option<u64>| [ta.and_then(f), tb.and_then(f)];
            DriftRow {
                pid,
                comm: ta.or(tb).map_or_else(String::new, |t| t.comm.clone()),
                runtime_ns: get(&|t| t.runtime_ns),
                wait_ns: get(&|t| t.wait_ns),
                migrations: get(&|t| t.migrations),
                handoffs: get(&|t| t.handoff_latency.count),
                handoff_p50_ns: opt(&|t| t.handoff_latency.p50_ns),
                handoff_p99_ns: opt(&|t| t.handoff_latency.p99_ns),
                stalls: get(&|t| t.handoff_latency.at_or_above_threshold),
            }
        })
        .collect()
}

/// The drift table: per thread, A and B columns for runtime, wait and
/// migrations, handoffs, handoff p50/p99 (µs) and stalls.
pub fn render_drift(rows: &[DriftRow], stall_threshold_ns: u64) -> String {
    let us = |ns: Option<u64>| ns.map_or_else(|| "-".to_string(), table::us);
    let stalls = format!("stalls>={}", threshold_label(stall_threshold_ns));
    let mut cols = vec![col("", "thread", true), col("", "pid", false)];
    for group in ["run ms", "wait ms", "migrations", "handoffs", "handoff p50 us", "handoff p99 us", stalls.as_str()] {
        // Pad the heads so a long group label widens both columns alike.
        let w = group.chars().count().saturating_sub(2).div_ceil(2);
        cols.push(col(group, &crate::pad_left("A", w), false));
        cols.push(col(group, &crate::pad_left("B", w), false));
    }
    let out: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = vec![r.comm.clone(), r.pid.to_string()];
            v.extend(r.runtime_ns.map(table::ms));
            v.extend(r.wait_ns.map(table::ms));
            v.extend(r.migrations.map(|n| n.to_string()));
            v.extend(r.handoffs.map(|n| n.to_string()));
            v.extend(r.handoff_p50_ns.map(us));
            v.extend(r.handoff_p99_ns.map(us));
            v.extend([0, 1].map(|i| if r.handoffs[i] == 0 { "-".to_string() } else { r.stalls[i].to_string() }));
            v
        })
        .collect();
    layout(&cols, &out)
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
