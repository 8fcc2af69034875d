//! Per-task accounting from `sched_wakeup*`, `sched_switch` and
//! `sched_migrate_task`: the state machine `perf sched` also runs.

use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState};

use crate::sketch::{SketchSet, EXACT_SAMPLES_PER_RUN};

/// Where a task is, as far as the trace shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not seen yet in an event that tells its state.
    Unknown,
    /// On a CPU since `since` (switched in).
    Running { since: Nanos },
    /// Runnable but not running since `since` (woken, or switched out while
    /// still `TASK_RUNNING`).
    Runnable { since: Nanos },
    /// Blocked since `since` (switched out with `S`/`D`).
    Sleeping { since: Nanos },
    /// Switched out with `X`.
    Dead,
}

/// Running totals for one task.
#[derive(Clone, Debug)]
pub(crate) struct TaskAcc {
    state: State,
    /// `sched_wakeup` time not yet followed by a switch-in.
    pending_wakeup: Option<Nanos>,
    pub runtime: u64,
    pub wait: u64,
    pub sleep: u64,
    pub wakeups: u64,
    pub switches: u64,
    pub involuntary: u64,
    pub migrations: u64,
    /// Wakeups whose switch-in was inserted by the trace's repair: no sample.
    pub latency_unknown: u64,
    /// Runnable → switch-in delays (perf sched's "sch delay"), those ending
    /// at a traced switch: count, sum, longest and when it ended.
    pub delays: u64,
    pub delay_sum: u64,
    pub max_delay: u64,
    pub max_delay_end: Nanos,
    /// Delays ending at a repaired switch (not counted above).
    pub delays_unknown: u64,
}

impl TaskAcc {
    fn new() -> Self {
        TaskAcc {
            state: State::Unknown,
            pending_wakeup: None,
            runtime: 0,
            wait: 0,
            sleep: 0,
            wakeups: 0,
            switches: 0,
            involuntary: 0,
            migrations: 0,
            latency_unknown: 0,
            delays: 0,
            delay_sum: 0,
            max_delay: 0,
            max_delay_end: 0,
            delays_unknown: 0,
        }
    }
}

/// Feeds events to per-task accumulators.
///
/// The window is `[start, end]`; time before a task's first informative event
/// is attributed from `start` (a task switched out by the first switch on its
/// CPU has been running since the window opened, one switched in had been
/// waiting, one woken had been sleeping), so each task's
/// runtime + wait + sleep covers the whole window once its state is known.
pub(crate) struct TaskTracker {
    /// Set by the window's first event.
    pub start: Nanos,
    /// Not ordered (a per-event lookup): [`crate::MetricsCollector::finish`] sorts the rows.
    pub tasks: crate::pidmap::PidMap<TaskAcc>,
    /// Wakeup latencies, exact for half of [`EXACT_SAMPLES_PER_RUN`].
    pub wakeups: SketchSet,
}

impl TaskTracker {
    pub fn new(start: Nanos, threshold: u64) -> Self {
        TaskTracker { start, tasks: Default::default(), wakeups: SketchSet::new(threshold, EXACT_SAMPLES_PER_RUN / 2) }
    }

    fn acc(&mut self, pid: Pid) -> &mut TaskAcc {
        self.tasks.get_or_insert_with(pid, TaskAcc::new)
    }

    /// Make sure `pid` has a row even if the event tells nothing about it.
    #[inline]
    pub fn touch(&mut self, pid: Pid) {
        if pid != 0 {
            self.acc(pid);
        }
    }

    /// One event of the stream. (`#[inline]`: its one caller is
    /// `MetricsCollector::observe`, per event; the compiler stopped
    /// inlining it after an unrelated change to this crate, and the hint
    /// took 25 M instructions off schbench-spr at 100 ms, issue 39.)
    #[inline]
    pub fn event(&mut self, ev: &Event) {
        let ts = ev.ts;
        let start = self.start;
        match ev.kind {
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } if pid != 0 => {
                let new = matches!(ev.kind, EventKind::SchedWakeupNew { .. });
                let a = self.acc(pid);
                a.wakeups += 1;
                match a.state {
                    State::Unknown | State::Sleeping { .. } => {
                        let since = match a.state {
                            State::Sleeping { since } => Some(since),
                            _ if new => None,
                            _ => Some(start),
                        };
                        if let Some(since) = since {
                            a.sleep += ts.saturating_sub(since);
                        }
                        a.state = State::Runnable { since: ts };
                        a.pending_wakeup = Some(ts);
                    }
                    // Woken after being preempted while going to sleep (`R+`):
                    // it was already waiting; latency counts from the wakeup.
                    State::Runnable { .. } => {
                        a.pending_wakeup.get_or_insert(ts);
                    }
                    // ttwu_runnable() on a task still on its CPU, or a reused pid.
                    State::Running { .. } | State::Dead => {}
                }
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                if prev_pid != 0 {
                    let a = self.acc(prev_pid);
                    match a.state {
                        State::Running { since } => a.runtime += ts.saturating_sub(since),
                        State::Unknown => a.runtime += ts.saturating_sub(start),
                        _ => {}
                    }
                    a.switches += 1;
                    a.pending_wakeup = None;
                    a.state = match prev_state {
                        PrevState::Running { .. } => {
                            a.involuntary += 1;
                            State::Runnable { since: ts }
                        }
                        PrevState::Sleeping | PrevState::DiskSleep => State::Sleeping { since: ts },
                        PrevState::Dead => State::Dead,
                    };
                }
                if next_pid != 0 {
                    let a = self.acc(next_pid);
                    let mut sample = None;
                    match a.state {
                        State::Runnable { since } => {
                            let delay = ts.saturating_sub(since);
                            a.wait += delay;
                            sample = a.pending_wakeup.map(|w| ts.saturating_sub(w));
                            if ev.is_repaired() {
                                a.delays_unknown += 1;
                            } else {
                                a.delays += 1;
                                a.delay_sum += delay;
                                if delay > a.max_delay || a.delays == 1 {
                                    a.max_delay = delay;
                                    a.max_delay_end = ts;
                                }
                            }
                        }
                        State::Unknown => a.wait += ts.saturating_sub(start),
                        // The wakeup was lost: the sleep ends here.
                        State::Sleeping { since } => a.sleep += ts.saturating_sub(since),
                        State::Running { .. } | State::Dead => {}
                    }
                    a.pending_wakeup = None;
                    a.state = State::Running { since: ts };
                    match sample {
                        // An inserted switch's time is only the earliest it
                        // could have been: the latency is unknown.
                        Some(_) if ev.is_repaired() => a.latency_unknown += 1,
                        Some(ns) => self.wakeups.push(next_pid, ns),
                        None => {}
                    }
                }
            }
            EventKind::SchedMigrateTask { pid, .. } if pid != 0 => self.acc(pid).migrations += 1,
            EventKind::SchedWaking { pid, .. }
            | EventKind::SchedStatRuntime { pid, .. }
            | EventKind::SchedPiSetprio { pid, .. } => self.touch(pid),
            _ => {}
        }
    }

    /// Close every open interval at `end`.
    pub fn finish(&mut self, end: Nanos) {
        for a in self.tasks.values_mut() {
            match a.state {
                State::Running { since } => a.runtime += end.saturating_sub(since),
                State::Runnable { since } => a.wait += end.saturating_sub(since),
                State::Sleeping { since } => a.sleep += end.saturating_sub(since),
                State::Unknown | State::Dead => {}
            }
        }
    }
}
