//! The properties a hunt looks for, checked in one pass over a run's
//! trace (only trace events: what `analyze` could check on a real trace
//! too) plus the model's own invariant check, which the simulator runs
//! after every step.
//!
//! * **idle while waiting** (work conservation, as Wasted Cores and
//!   Ipanema define it): a task is runnable and not running, the CPU it is
//!   queued on runs another task, and some other CPU it may use is idle,
//!   for at least the threshold. A task waiting on an idle CPU of its own
//!   is being delivered (IPI, idle exit), not stranded, and does not count.
//!   Classified by how the wait began: seed 000's class is a wakeup that
//!   `ttwu_runnable()` requeued in place because the task was still
//!   `sched_delayed`.
//! * **RT stranded**: an RT task (by its effective priority, so a
//!   PI-boosted fair or RT task counts at its boosted priority) is
//!   runnable and not running while a CPU it may use runs a task of lower
//!   priority, for at least the threshold. Seed 003's class is the same
//!   while the task is boosted.
//! * **starvation**: a runnable task that does not run for the threshold.
//! * **fairness spread**: identical hogs sharing one runqueue whose CPU
//!   time spreads beyond a band (`crate::fairness`).
//!
//! Each class keeps its longest instance per run.

use std::collections::BTreeMap;

use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState, WakePath};
use serde::Serialize;

/// What a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// The kernel model's consistency check failed.
    Invariant,
    /// The simulation stopped with a model error.
    ModelError,
    /// Idle while waiting, after a wakeup `ttwu_runnable()` requeued in
    /// place because the task was still delayed (DELAY_DEQUEUE): seed 000.
    DelayedInPlace,
    /// Idle while waiting, after a wakeup that found the task still queued
    /// (not delayed).
    RunnableInPlace,
    /// Idle while waiting, after `select_task_rq()` (or a migration) put
    /// the task on a busy CPU.
    PlacedOnBusyCpu,
    /// Idle while waiting, after a preemption.
    PreemptedIdle,
    /// An RT task waiting while a lower-priority task runs on a CPU it may use.
    RtStranded,
    /// The same while the task is PI-boosted: seed 003.
    RtBoostedStranded,
    /// A runnable task that did not run for the starvation threshold.
    Starvation,
    /// Identical hogs sharing one runqueue whose CPU time spread beyond
    /// the band (`crate::fairness`).
    FairnessSpread,
}

/// The groups `--find` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Invariant,
    Idle,
    Rt,
    Starvation,
    Fairness,
}

impl Family {
    pub const ALL: [Family; 5] = [Family::Invariant, Family::Idle, Family::Rt, Family::Starvation, Family::Fairness];

    pub fn name(self) -> &'static str {
        match self {
            Family::Invariant => "invariant",
            Family::Idle => "idle",
            Family::Rt => "rt",
            Family::Starvation => "starvation",
            Family::Fairness => "fairness",
        }
    }

    pub fn parse(s: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// The classes and families as `schedlab hunt --help` describes them.
pub const CLASSES_HELP: &str = "Classes (--find picks families): invariant (the model's invariant check, after every \
    step, and model errors); idle (a task waits on a busy CPU while another CPU it may use idles: \
    delayed-in-place is seed 000's class, runnable-in-place, placed-on-busy-cpu, preempted-idle); rt (an RT \
    task waits while a lower-priority task runs on a CPU it may use: rt-boosted-stranded is seed 003's class, \
    rt-stranded); starvation (a runnable task does not run for --starvation); fairness (fairness-spread: \
    identical SCHED_OTHER hogs with their CPUs to themselves that share one CPU's runqueue for 100 ms or more and \
    whose CPU time spreads beyond --fairness percent of their share and 10 ms; a hunt for it draws one case in \
    eight as such a group).";

impl Class {
    pub const ALL: [Class; 10] = [
        Class::Invariant,
        Class::ModelError,
        Class::DelayedInPlace,
        Class::RunnableInPlace,
        Class::PlacedOnBusyCpu,
        Class::PreemptedIdle,
        Class::RtStranded,
        Class::RtBoostedStranded,
        Class::Starvation,
        Class::FairnessSpread,
    ];

    /// The classes `--find` means by `name`: a family's, or one class.
    pub fn parse_target(name: &str) -> Option<Vec<Class>> {
        if let Some(f) = Family::parse(name) {
            return Some(Class::ALL.into_iter().filter(|c| c.family() == f).collect());
        }
        Class::ALL.into_iter().find(|c| c.name() == name).map(|c| vec![c])
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Invariant => "invariant",
            Class::ModelError => "model-error",
            Class::DelayedInPlace => "delayed-in-place",
            Class::RunnableInPlace => "runnable-in-place",
            Class::PlacedOnBusyCpu => "placed-on-busy-cpu",
            Class::PreemptedIdle => "preempted-idle",
            Class::RtStranded => "rt-stranded",
            Class::RtBoostedStranded => "rt-boosted-stranded",
            Class::Starvation => "starvation",
            Class::FairnessSpread => "fairness-spread",
        }
    }

    pub fn family(self) -> Family {
        match self {
            Class::Invariant | Class::ModelError => Family::Invariant,
            Class::DelayedInPlace | Class::RunnableInPlace | Class::PlacedOnBusyCpu | Class::PreemptedIdle => {
                Family::Idle
            }
            Class::RtStranded | Class::RtBoostedStranded => Family::Rt,
            Class::Starvation => Family::Starvation,
            Class::FairnessSpread => Family::Fairness,
        }
    }

    /// One line for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Class::Invariant => "the kernel model's invariant check failed",
            Class::ModelError => "the simulation stopped with a model error",
            Class::DelayedInPlace => {
                "woken in place while delayed (ttwu_runnable, DELAY_DEQUEUE) behind another task while an allowed \
                 CPU idled (seed 000's class)"
            }
            Class::RunnableInPlace => "woken while still queued, behind another task while an allowed CPU idled",
            Class::PlacedOnBusyCpu => "placed or moved onto a busy CPU while an allowed CPU idled",
            Class::PreemptedIdle => "preempted and left waiting while an allowed CPU idled",
            Class::RtStranded => "an RT task waited while a lower-priority task ran on a CPU it may use",
            Class::RtBoostedStranded => {
                "a PI-boosted task waited while a lower-priority task ran on a CPU it may use (seed 003's class)"
            }
            Class::Starvation => "a runnable task did not run for the starvation threshold",
            Class::FairnessSpread => {
                "identical hogs sharing one CPU's runqueue for 100 ms or more got CPU time spread beyond the band \
                 (EEVDF's equal service; cross-CPU balance is not judged)"
            }
        }
    }
}

/// The thresholds of the trace properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    pub idle_ns: u64,
    pub rt_ns: u64,
    pub starvation_ns: u64,
    /// The widest spread of identical hogs' CPU time, in percent of their
    /// fair share.
    pub fairness_pct: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        // Seed 000's stall threshold for the idle class; 1 ms for RT,
        // where push and pull act within microseconds; 1 s for starvation,
        // past the fair server's 50 ms per 1 s period.
        // 20 % for fairness: the model's worst spread on the grammar's
        // peer groups is 10 %, a 2 : 1 split of one CPU 66 % (crate::fairness).
        Thresholds { idle_ns: 500_000, rt_ns: 1_000_000, starvation_ns: 1_000_000_000, fairness_pct: 20 }
    }
}

/// One instance of a class in one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub class: Class,
    /// The task it happened to (0 for the model's own errors).
    pub pid: Pid,
    pub start_ns: Nanos,
    pub end_ns: Nanos,
    /// The CPU it waited on.
    pub cpu: u32,
    /// Who ran there when it began (the culprit), if anyone.
    pub behind: Option<Pid>,
    /// The other CPU: one that idled (idle classes) or ran the
    /// lower-priority task (RT classes).
    pub other_cpu: Option<u32>,
    /// What ran on `other_cpu` (RT classes).
    pub other_pid: Option<Pid>,
    /// The model's message (invariant and model errors).
    pub message: String,
}

impl Finding {
    pub fn len_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

#[derive(Clone, Copy, Debug)]
enum Origin {
    Wakeup(Option<WakePath>),
    Preempted,
}

#[derive(Clone, Debug)]
struct Waiting {
    since: Nanos,
    cpu: u32,
    origin: Origin,
    moved: bool,
    idle_since: Option<(Nanos, Pid, u32)>,
    rt_since: Option<(Nanos, Pid, u32, Pid, bool)>,
}

#[derive(Clone, Debug, Default)]
struct Task {
    prio: i32,
    /// The priority before a PI boost, while boosted.
    unboosted: Option<i32>,
    last_path: Option<WakePath>,
    waiting: Option<Waiting>,
}

/// Check `events` (in time order) of a run on `nr_cpus` CPUs; `allowed`
/// gives each workload pid its CPUs (other tasks are not checked).
pub fn check_trace(
    events: &[Event],
    nr_cpus: usize,
    allowed: &BTreeMap<Pid, Vec<u32>>,
    end_ns: Nanos,
    th: &Thresholds,
) -> Vec<Finding> {
    let mut curr: Vec<Pid> = vec![0; nr_cpus];
    let mut curr_prio: Vec<i32> = vec![i32::MAX; nr_cpus];
    // Ordered by pid: ties between equally long findings go the same way every run.
    let mut tasks: BTreeMap<Pid, Task> = BTreeMap::new();
    let mut best: BTreeMap<Class, Finding> = BTreeMap::new();
    let mut keep = |f: Finding| {
        let e = best.entry(f.class).or_insert_with(|| f.clone());
        if f.len_ns() > e.len_ns() {
            *e = f;
        }
    };
    let mut i = 0;
    while i < events.len() {
        let ts = events[i].ts;
        // Apply every event of this instant, then look at the state.
        while i < events.len() && events[i].ts == ts {
            let ev = &events[i];
            i += 1;
            let cpu = ev.cpu as usize;
            match ev.kind {
                EventKind::Ttwu { pid, path, .. } => tasks.entry(pid).or_default().last_path = Some(path),
                EventKind::SchedWakeup { pid, prio, target_cpu }
                | EventKind::SchedWakeupNew { pid, prio, target_cpu } => {
                    let t = tasks.entry(pid).or_default();
                    t.prio = prio;
                    let origin = Origin::Wakeup(t.last_path.take());
                    t.waiting = Some(Waiting {
                        since: ts,
                        cpu: target_cpu,
                        origin,
                        moved: false,
                        idle_since: None,
                        rt_since: None,
                    });
                }
                EventKind::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => {
                    if cpu < nr_cpus {
                        curr[cpu] = next_pid;
                        curr_prio[cpu] = if next_pid == 0 { i32::MAX } else { next_prio };
                    }
                    if prev_pid != 0 {
                        let t = tasks.entry(prev_pid).or_default();
                        t.prio = prev_prio;
                        if matches!(prev_state, PrevState::Running { .. }) {
                            t.waiting = Some(Waiting {
                                since: ts,
                                cpu: ev.cpu,
                                origin: Origin::Preempted,
                                moved: false,
                                idle_since: None,
                                rt_since: None,
                            });
                        }
                    }
                    if next_pid != 0 {
                        let t = tasks.entry(next_pid).or_default();
                        t.prio = next_prio;
                        if let Some(w) = t.waiting.take() {
                            close(next_pid, &w, ts, th, &mut keep);
                        }
                    }
                }
                EventKind::SchedMigrateTask { pid, dest_cpu, .. } => {
                    if let Some(w) = tasks.entry(pid).or_default().waiting.as_mut() {
                        w.cpu = dest_cpu;
                        w.moved = true;
                    }
                }
                EventKind::SchedPiSetprio { pid, oldprio, newprio } => {
                    let t = tasks.entry(pid).or_default();
                    if newprio < oldprio && t.unboosted.is_none() {
                        t.unboosted = Some(oldprio);
                    } else if t.unboosted.is_some_and(|u| newprio >= u) {
                        t.unboosted = None;
                    }
                    t.prio = newprio;
                    for c in 0..nr_cpus {
                        if curr[c] == pid {
                            curr_prio[c] = newprio;
                        }
                    }
                }
                _ => {}
            }
        }
        // The predicates, for every waiting workload task.
        for (&pid, t) in tasks.iter_mut() {
            let Some(cpus) = allowed.get(&pid) else { continue };
            let (prio, boosted) = (t.prio, t.unboosted.is_some());
            let Some(w) = t.waiting.as_mut() else { continue };
            let own = w.cpu as usize;
            let own_busy = own < nr_cpus && curr[own] != 0 && curr[own] != pid;
            let idle_other =
                cpus.iter().copied().find(|&c| c != w.cpu && (c as usize) < nr_cpus && curr[c as usize] == 0);
            match (own_busy.then_some(idle_other).flatten(), w.idle_since) {
                (Some(c), None) => w.idle_since = Some((ts, curr[own], c)),
                (None, Some(_)) => close_idle(pid, w, ts, th, &mut keep),
                _ => {}
            }
            let lower = (prio < 100)
                .then(|| {
                    cpus.iter().copied().find(|&c| {
                        (c as usize) < nr_cpus
                            && curr[c as usize] != 0
                            && curr[c as usize] != pid
                            && curr_prio[c as usize] > prio
                    })
                })
                .flatten();
            match (lower, w.rt_since) {
                (Some(c), None) => {
                    w.rt_since = Some((ts, curr[c as usize], c, if own < nr_cpus { curr[own] } else { 0 }, boosted))
                }
                (None, Some(_)) => close_rt(pid, w, ts, th, &mut keep),
                _ => {}
            }
        }
    }
    let end = end_ns.max(events.last().map_or(0, |e| e.ts));
    for (&pid, t) in tasks.iter() {
        if let Some(w) = &t.waiting {
            if allowed.contains_key(&pid) {
                close(pid, w, end, th, &mut keep);
            }
        }
    }
    best.into_values().collect()
}

/// End of a wait: close its open intervals and check starvation.
fn close(pid: Pid, w: &Waiting, ts: Nanos, th: &Thresholds, keep: &mut impl FnMut(Finding)) {
    let mut w = w.clone();
    close_idle(pid, &mut w, ts, th, keep);
    close_rt(pid, &mut w, ts, th, keep);
    if ts - w.since >= th.starvation_ns {
        keep(Finding {
            class: Class::Starvation,
            pid,
            start_ns: w.since,
            end_ns: ts,
            cpu: w.cpu,
            behind: None,
            other_cpu: None,
            other_pid: None,
            message: String::new(),
        });
    }
}

fn close_idle(pid: Pid, w: &mut Waiting, ts: Nanos, th: &Thresholds, keep: &mut impl FnMut(Finding)) {
    let Some((since, behind, idle_cpu)) = w.idle_since.take() else { return };
    if ts - since < th.idle_ns {
        return;
    }
    let class = match (w.origin, w.moved) {
        (_, true) => Class::PlacedOnBusyCpu,
        (Origin::Wakeup(Some(WakePath::Runnable { delayed: true })), _) => Class::DelayedInPlace,
        (Origin::Wakeup(Some(WakePath::Runnable { delayed: false })), _) => Class::RunnableInPlace,
        (Origin::Wakeup(_), _) => Class::PlacedOnBusyCpu,
        (Origin::Preempted, _) => Class::PreemptedIdle,
    };
    keep(Finding {
        class,
        pid,
        start_ns: since,
        end_ns: ts,
        cpu: w.cpu,
        behind: Some(behind),
        other_cpu: Some(idle_cpu),
        other_pid: None,
        message: String::new(),
    });
}

fn close_rt(pid: Pid, w: &mut Waiting, ts: Nanos, th: &Thresholds, keep: &mut impl FnMut(Finding)) {
    let Some((since, lower, cpu, behind, boosted)) = w.rt_since.take() else { return };
    if ts - since < th.rt_ns {
        return;
    }
    keep(Finding {
        class: if boosted { Class::RtBoostedStranded } else { Class::RtStranded },
        pid,
        start_ns: since,
        end_ns: ts,
        cpu: w.cpu,
        behind: (behind != 0).then_some(behind),
        other_cpu: Some(cpu),
        other_pid: Some(lower),
        message: String::new(),
    });
}
