//! SCHED_DEADLINE tasks seen from a trace: each job's lateness against its
//! relative deadline, and the time a runnable deadline task waited while a
//! CPU it may use ran no deadline task (what CBS throttling looks like from
//! outside the kernel).
//!
//! The same rules read a simulated trace and a real one, since 6.12 has no
//! tracepoint for a throttle:
//! * **A job** runs from a release (the task's `sched_wakeup`, or
//!   `sched_wakeup_new` for its first) to its next block (a switch out in a
//!   sleeping state). It misses when it completes after release + the
//!   reservation's `deadline`; a job still open at the end of the trace
//!   counts as missed once that instant has passed.
//! * **Throttled** time: the task is runnable but not running while some
//!   CPU of its affinity runs no deadline task (idle, or a lower class).
//!   Under global EDF that only happens while the task is throttled (or
//!   for the microseconds of a push, a pull or a wakeup's IPI in flight): a
//!   waiting task with runtime left would run there. A stretch counts (as
//!   one throttle) when it lasts at least the grace given, the work
//!   conservation's (100 us by default), which leaves those out.
//!
//! Deadline tasks are recognised by the reservations given (from the
//! scenario), and the CPUs running one by `prio` -1 in `sched_switch`.

use std::collections::BTreeMap;

use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState, TaskTable};

/// A task's reservation, in ns (`period` 0: the deadline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlReservation {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// One deadline task's figures.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeadlineTask {
    pub pid: Pid,
    pub comm: String,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
    /// Jobs completed, and those (also open ones past their deadline) late.
    pub jobs: u64,
    pub misses: u64,
    /// The latest completion past its deadline, ns (0: none late).
    pub max_lateness_ns: u64,
    /// CPU time, and runnable time while a CPU of its affinity ran no
    /// deadline task (and how many such stretches).
    pub run_ns: u64,
    pub throttled_ns: u64,
    pub throttles: u64,
}

/// Every deadline task of a run, by pid.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeadlineReport {
    pub tasks: Vec<DeadlineTask>,
}

impl DeadlineReport {
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

#[derive(Default)]
struct TaskState {
    runnable: bool,
    running: bool,
    release: Option<Nanos>,
    run_since: Option<Nanos>,
    /// Throttled as of the last settle, and since when.
    throttled_since: Option<Nanos>,
    jobs: u64,
    misses: u64,
    max_lateness: u64,
    run_ns: u64,
    throttled_ns: u64,
    throttles: u64,
}

impl TaskState {
    fn close_stretch(&mut self, ns: u64, grace: u64) {
        if ns >= grace {
            self.throttled_ns += ns;
            self.throttles += 1;
        }
    }
}

/// [`DeadlineReport`] one event at a time, in timestamp order; memory is
/// bounded by the deadline tasks and the CPUs.
pub struct DeadlineCollector {
    res: BTreeMap<Pid, (DlReservation, Vec<u32>)>,
    tasks: BTreeMap<Pid, TaskState>,
    /// Whether each CPU runs a deadline task now.
    cpu_dl: Vec<bool>,
    grace_ns: u64,
    end: Option<Nanos>,
}

impl DeadlineCollector {
    /// For the tasks of `res` (their reservation and allowed CPUs) on
    /// `nr_cpus` CPUs, throttled stretches counted from `grace_ns`; events
    /// after `end` are ignored.
    pub fn new(res: BTreeMap<Pid, (DlReservation, Vec<u32>)>, nr_cpus: u32, grace_ns: u64, end: Option<Nanos>) -> Self {
        let tasks = res.keys().map(|&p| (p, TaskState::default())).collect();
        DeadlineCollector { res, tasks, cpu_dl: vec![false; nr_cpus as usize], grace_ns, end }
    }

    /// Whether there is anything to follow.
    pub fn applies(&self) -> bool {
        !self.res.is_empty()
    }

    pub fn observe(&mut self, ev: &Event) {
        if self.end.is_some_and(|e| ev.ts > e) || !self.applies() {
            return;
        }
        let ts = ev.ts;
        match ev.kind {
            EventKind::SchedWakeup { pid, .. } | EventKind::SchedWakeupNew { pid, .. } => {
                if let Some(t) = self.tasks.get_mut(&pid) {
                    if !t.runnable {
                        t.runnable = true;
                        t.release = Some(ts);
                    }
                }
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, next_prio, .. } => {
                let cpu = ev.cpu as usize;
                if cpu >= self.cpu_dl.len() {
                    self.cpu_dl.resize(cpu + 1, false);
                }
                if let Some(t) = self.tasks.get_mut(&prev_pid) {
                    t.running = false;
                    if let Some(s) = t.run_since.take() {
                        t.run_ns += ts.saturating_sub(s);
                    }
                    if !matches!(prev_state, PrevState::Running { .. }) {
                        t.runnable = false;
                        if let Some(r) = t.release.take() {
                            t.jobs += 1;
                            let due = r + self.res[&prev_pid].0.deadline_ns;
                            if ts > due {
                                t.misses += 1;
                                t.max_lateness = t.max_lateness.max(ts - due);
                            }
                        }
                    }
                }
                if let Some(t) = self.tasks.get_mut(&next_pid) {
                    t.running = true;
                    t.runnable = true;
                    t.run_since = Some(ts);
                    t.release.get_or_insert(ts);
                }
                self.cpu_dl[cpu] = next_pid != 0 && next_prio < 0;
            }
            _ => return,
        }
        self.settle(ts);
    }

    /// Close the throttled stretches that ended at `ts` and open those
    /// that start there.
    fn settle(&mut self, ts: Nanos) {
        let grace = self.grace_ns;
        for (pid, t) in self.tasks.iter_mut() {
            let waiting = t.runnable && !t.running;
            let free_cpu =
                waiting && self.res[pid].1.iter().any(|&c| !self.cpu_dl.get(c as usize).copied().unwrap_or(true));
            match (t.throttled_since, free_cpu) {
                (None, true) => t.throttled_since = Some(ts),
                (Some(s), false) => {
                    t.throttled_since = None;
                    t.close_stretch(ts.saturating_sub(s), grace);
                }
                _ => {}
            }
        }
    }

    /// The figures at `end_ns`.
    pub fn finish(mut self, end_ns: Nanos, table: &TaskTable) -> DeadlineReport {
        let mut tasks = Vec::new();
        for (pid, mut t) in std::mem::take(&mut self.tasks) {
            let (res, _) = self.res[&pid];
            if let Some(s) = t.run_since.take() {
                t.run_ns += end_ns.saturating_sub(s);
            }
            if let Some(s) = t.throttled_since.take() {
                t.close_stretch(end_ns.saturating_sub(s), self.grace_ns);
            }
            if let Some(r) = t.release {
                let due = r + res.deadline_ns;
                if end_ns > due {
                    t.misses += 1;
                    t.max_lateness = t.max_lateness.max(end_ns - due);
                }
            }
            tasks.push(DeadlineTask {
                pid,
                comm: table.comm(pid).to_string(),
                runtime_ns: res.runtime_ns,
                deadline_ns: res.deadline_ns,
                period_ns: if res.period_ns == 0 { res.deadline_ns } else { res.period_ns },
                jobs: t.jobs,
                misses: t.misses,
                max_lateness_ns: t.max_lateness,
                run_ns: t.run_ns,
                throttled_ns: t.throttled_ns,
                throttles: t.throttles,
            });
        }
        DeadlineReport { tasks }
    }
}

/// The deadline table: one row per task.
pub fn render_deadline(r: &DeadlineReport) -> String {
    use std::fmt::Write as _;
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out = String::from(
        "thread            pid   runtime/deadline/period ms    jobs  missed  max late ms   run ms  throttled ms  throttles\n",
    );
    for t in &r.tasks {
        let res = format!("{}/{}/{}", ms(t.runtime_ns), ms(t.deadline_ns), ms(t.period_ns));
        let _ = writeln!(
            out,
            "{:<16} {:>5}   {:<26} {:>6}  {:>6}  {:>11.3}  {:>7.3}  {:>12.3}  {:>9}",
            t.comm,
            t.pid,
            res,
            t.jobs,
            t.misses,
            ms(t.max_lateness_ns),
            ms(t.run_ns),
            ms(t.throttled_ns),
            t.throttles
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_trace::TaskInfo;

    const MS: u64 = 1_000_000;
    const D: Pid = 7;
    const HOG: Pid = 9;

    fn ev(ts: Nanos, cpu: u32, kind: EventKind) -> Event {
        Event { ts, cpu, ctx_pid: 0, flags: *b"d..2.", kind }
    }

    fn sw(ts: Nanos, cpu: u32, prev: Pid, state: PrevState, next: Pid) -> Event {
        let prio = |p: Pid| if p == D { -1 } else { 120 };
        ev(
            ts,
            cpu,
            EventKind::SchedSwitch {
                prev_pid: prev,
                prev_prio: prio(prev),
                prev_state: state,
                next_pid: next,
                next_prio: prio(next),
            },
        )
    }

    fn wake(ts: Nanos, cpu: u32) -> Event {
        ev(ts, cpu, EventKind::SchedWakeup { pid: D, prio: -1, target_cpu: cpu })
    }

    fn run(events: &[Event], end: Nanos) -> DeadlineTask {
        let res = DlReservation { runtime_ns: 2 * MS, deadline_ns: 10 * MS, period_ns: 10 * MS };
        let mut c = DeadlineCollector::new(BTreeMap::from([(D, (res, vec![0, 1]))]), 2, 100_000, None);
        for e in events {
            c.observe(e);
        }
        let mut table = TaskTable::default();
        table.tasks.insert(D, TaskInfo { comm: "d".into(), tgid: D });
        c.finish(end, &table).tasks.remove(0)
    }

    const R: PrevState = PrevState::Running { preempt: true };
    const S: PrevState = PrevState::Sleeping;

    #[test]
    fn a_job_done_by_its_deadline_is_on_time_and_one_done_after_misses_by_its_lateness() {
        // Job 1: woken at 0, done at 3 ms. Job 2: woken at 20 ms, done at 33 ms (3 ms late).
        let t = run(
            &[wake(0, 0), sw(0, 0, 0, S, D), sw(3 * MS, 0, D, S, 0), wake(20 * MS, 0), sw(20 * MS, 0, 0, S, D)]
                .into_iter()
                .chain([sw(33 * MS, 0, D, S, 0)])
                .collect::<Vec<_>>(),
            40 * MS,
        );
        assert_eq!((t.jobs, t.misses, t.max_lateness_ns, t.run_ns), (2, 1, 3 * MS, 16 * MS));
        // A job still open past its deadline at the end counts as missed.
        let t = run(&[wake(0, 0), sw(0, 0, 0, S, D)], 15 * MS);
        assert_eq!((t.jobs, t.misses, t.max_lateness_ns), (0, 1, 5 * MS));
    }

    #[test]
    fn waiting_while_a_cpu_runs_no_deadline_task_is_throttled_time_past_the_grace() {
        // Switched out runnable at 2 ms while CPU 1 runs a hog: throttled
        // until it runs again at 10 ms. A 50 us wait for an idle CPU (a
        // wakeup's IPI) stays under the grace.
        let t = run(
            &[
                sw(0, 1, 0, S, HOG),
                wake(0, 0),
                sw(0, 0, 0, S, D),
                sw(2 * MS, 0, D, R, HOG),
                sw(10 * MS, 0, HOG, R, D),
                sw(11 * MS, 0, D, S, 0),
                wake(20 * MS, 0),
                sw(20 * MS + 50_000, 0, 0, S, D),
                sw(21 * MS, 0, D, S, 0),
            ],
            30 * MS,
        );
        assert_eq!((t.throttled_ns, t.throttles), (8 * MS, 1));
        // While both CPUs run deadline tasks it waits for EDF, not for its budget.
        let other: Pid = 8;
        let mut events = vec![wake(0, 0), sw(0, 0, 0, S, D), sw(0, 1, 0, S, other)];
        if let EventKind::SchedSwitch { next_prio, .. } = &mut events[2].kind {
            *next_prio = -1;
        }
        events.push(sw(2 * MS, 0, D, R, other));
        if let EventKind::SchedSwitch { next_prio, .. } = &mut events[3].kind {
            *next_prio = -1;
        }
        events.push(sw(5 * MS, 0, other, S, D));
        let t = run(&events, 6 * MS);
        assert_eq!((t.throttled_ns, t.throttles), (0, 0));
    }
}
