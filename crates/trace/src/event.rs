//! Event types.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// Nanoseconds since the start of the run (simulated) or of CLOCK_MONOTONIC (real).
pub type Nanos = u64;
/// Kernel pid (tid). 0 is the idle task of a CPU.
pub type Pid = i32;

/// Task state letters as `sched_switch` prints `prev_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrevState {
    /// Still runnable: `R`, or `R+` when preempted (`preempt == true`).
    Running { preempt: bool },
    /// TASK_INTERRUPTIBLE, `S`.
    Sleeping,
    /// TASK_UNINTERRUPTIBLE, `D`.
    DiskSleep,
    /// TASK_DEAD, `X`.
    Dead,
}

impl PrevState {
    pub fn as_str(&self) -> &'static str {
        match self {
            PrevState::Running { preempt: false } => "R",
            PrevState::Running { preempt: true } => "R+",
            PrevState::Sleeping => "S",
            PrevState::DiskSleep => "D",
            PrevState::Dead => "X",
        }
    }
}

/// Which path `try_to_wake_up()` took (decision event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WakePath {
    /// `ttwu_runnable()`: task was still queued; `delayed` if `se.sched_delayed`
    /// was set (requeued in place, no `select_task_rq()`).
    Runnable { delayed: bool },
    /// Full wakeup: `select_task_rq()` chose `cpu` (activated directly).
    Activate,
    /// Queued on the target's wakelist (`ttwu_queue_wakelist()`).
    Wakelist,
}

/// Why a delayed (`sched_delayed`) entity stopped being delayed, or became so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DelayedWhat {
    /// `dequeue_entity()` left an ineligible sleeper queued (DELAY_DEQUEUE).
    Delayed,
    /// `pick_next_entity()` picked it and completed the dequeue.
    DequeuedAtPick,
    /// `requeue_delayed_entity()` on wakeup: back in play on the same CPU.
    Requeued,
    /// A wakeup completed the dequeue so the task can be placed anew
    /// (TTWU_DEQUEUE, TTWU_QUEUE_DELAYED, DEQUEUE_DELAYED patches).
    DequeuedAtWakeup,
}

/// What a workload thread did (user-space side, like a trace_marker write).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserOp {
    /// Signalled eventfd `obj` (handoff start when it wakes someone).
    Signal {
        obj: u32,
    },
    /// Returned from a wait on eventfd `obj` (handoff end).
    WaitDone {
        obj: u32,
    },
    /// Posted flag `obj`.
    Post {
        obj: u32,
    },
    /// Saw flag `obj` while polling.
    PollDone {
        obj: u32,
    },
    /// Acquired / released mutex `obj`.
    Lock {
        obj: u32,
    },
    Unlock {
        obj: u32,
    },
    /// Finished iteration `n` of its program loop.
    LoopEnd {
        n: u32,
    },
    /// rt-app's pass marker: a pass over phase `phase` of the task's
    /// `thread_loop`-th loop (its `phase_loop`-th repetition) begins
    /// (`start`) or ends. Master writes `rtapp_loop: event=start|end
    /// thread_loop=L phase=P phase_loop=S`, 1.0 `[N] begins|end loop L
    /// phase P step S`.
    RtAppLoop {
        start: bool,
        thread_loop: u32,
        phase: u32,
        phase_loop: u32,
    },
    /// rt-app master's `rtapp_stats` after a pass (its log row), in us.
    /// rt-app prints each with `%d`, a C `int`: 32 bits hold every value
    /// it can write, and keep this variant (the largest) from making every
    /// event of every trace 32 bytes larger.
    RtAppStats {
        period: i32,
        run: i32,
        wu_lat: i32,
        slack: i32,
        c_period: i32,
        c_run: i32,
    },
}

/// Which balancing path moved a task (decision event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BalanceKind {
    /// Periodic `sched_balance_rq()` from the tick's SCHED_SOFTIRQ on a busy or idle CPU.
    Periodic,
    /// `sched_balance_newidle()`: a CPU about to go idle pulled work.
    Newidle,
    /// The idle load balancer balancing on behalf of a tickless idle CPU (`nohz_idle_balance()`).
    NohzIdle,
    /// `active_load_balance_cpu_stop()`: the stopper on the source CPU pushed a task.
    Active,
}

impl BalanceKind {
    pub const ALL: [BalanceKind; 4] =
        [BalanceKind::Periodic, BalanceKind::Newidle, BalanceKind::NohzIdle, BalanceKind::Active];

    pub fn as_str(&self) -> &'static str {
        match self {
            BalanceKind::Periodic => "periodic",
            BalanceKind::Newidle => "newidle",
            BalanceKind::NohzIdle => "nohz_idle",
            BalanceKind::Active => "active",
        }
    }
}

/// What one RT push or pull step found (decision events `RtPush` / `RtPull`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RtBalanceResult {
    /// The task moved to the other runqueue.
    Moved,
    /// Push: `find_lowest_rq()` found no CPU in the task's affinity running
    /// something of strictly lower priority.
    NoLowerCpu,
    /// Push: the pushable task outranks the one running here, so
    /// `push_rt_task()` reschedules this CPU instead of moving it.
    Resched,
    /// Pull (without RT_PUSH_IPI): the source's pushable tasks are running or
    /// not allowed on the pulling CPU (`pick_highest_pushable_task()`).
    NotAllowedHere,
    /// Pull: the source's next task does not outrank what the pulling CPU
    /// runs, or would preempt the source's own current task.
    NotHigher,
}

impl RtBalanceResult {
    pub const ALL: [RtBalanceResult; 5] = [
        RtBalanceResult::Moved,
        RtBalanceResult::NoLowerCpu,
        RtBalanceResult::Resched,
        RtBalanceResult::NotAllowedHere,
        RtBalanceResult::NotHigher,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            RtBalanceResult::Moved => "moved",
            RtBalanceResult::NoLowerCpu => "no_lower_cpu",
            RtBalanceResult::Resched => "resched",
            RtBalanceResult::NotAllowedHere => "not_allowed_here",
            RtBalanceResult::NotHigher => "not_higher",
        }
    }
}

/// Why `wakeup_preempt()` did or did not preempt (decision event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreemptReason {
    /// The wakee's class is above curr's: always preempt.
    HigherClass,
    /// `pick_eevdf()` returned the wakee.
    Pick,
    /// `pick_eevdf()` returned someone else (curr protected by RUN_TO_PARITY, earlier deadline, ...).
    NotPicked,
    /// PREEMPT_SHORT cancelled curr's slice protection and the wakee won the pick.
    Short,
    /// Wakee is SCHED_BATCH / SCHED_IDLE: never preempts.
    WakeeBatchOrIdle,
    /// Curr is SCHED_IDLE and the wakee is not.
    CurrIdlePolicy,
    /// NO_WAKEUP_PREEMPTION.
    Disabled,
    /// Curr already had need_resched set.
    AlreadyResched,
    /// The CPU was idle: the wakee simply runs.
    Idle,
}

impl PreemptReason {
    /// Every reason, in declaration order.
    pub const ALL: [PreemptReason; 9] = [
        PreemptReason::HigherClass,
        PreemptReason::Pick,
        PreemptReason::NotPicked,
        PreemptReason::Short,
        PreemptReason::WakeeBatchOrIdle,
        PreemptReason::CurrIdlePolicy,
        PreemptReason::Disabled,
        PreemptReason::AlreadyResched,
        PreemptReason::Idle,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            PreemptReason::HigherClass => "higher_class",
            PreemptReason::Pick => "pick",
            PreemptReason::NotPicked => "not_picked",
            PreemptReason::Short => "short",
            PreemptReason::WakeeBatchOrIdle => "wakee_batch_idle",
            PreemptReason::CurrIdlePolicy => "curr_sched_idle",
            PreemptReason::Disabled => "disabled",
            PreemptReason::AlreadyResched => "already_resched",
            PreemptReason::Idle => "idle",
        }
    }
}

/// The payload of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    SchedWaking {
        pid: Pid,
        prio: i32,
        target_cpu: u32,
    },
    SchedWakeup {
        pid: Pid,
        prio: i32,
        target_cpu: u32,
    },
    SchedWakeupNew {
        pid: Pid,
        prio: i32,
        target_cpu: u32,
    },
    SchedSwitch {
        prev_pid: Pid,
        prev_prio: i32,
        prev_state: PrevState,
        next_pid: Pid,
        next_prio: i32,
    },
    SchedMigrateTask {
        pid: Pid,
        prio: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    SchedStatRuntime {
        pid: Pid,
        runtime: u64,
    },
    SchedPiSetprio {
        pid: Pid,
        oldprio: i32,
        newprio: i32,
    },
    SchedWakeIdleWithoutIpi {
        cpu: u32,
    },
    /// `power:cpu_frequency`: CPU `cpu_id` now runs at `state` kHz (emitted
    /// by the cpufreq core for each CPU of a policy after a transition).
    CpuFrequency {
        state: u32,
        cpu_id: u32,
    },
    // ---- schedlab decision events (not kernel tracepoints) ----
    /// `try_to_wake_up()` outcome for `pid`.
    Ttwu {
        pid: Pid,
        path: WakePath,
        cpu: u32,
    },
    /// DELAY_DEQUEUE lifecycle step of `pid` on this CPU.
    Delayed {
        pid: Pid,
        what: DelayedWhat,
        lag: i64,
    },
    /// `resched_curr()` on `cpu`; `ipi` if an IPI was sent to deliver it.
    Resched {
        cpu: u32,
        ipi: bool,
    },
    /// Wakeup preemption check: `wakee` vs the running `curr` and the verdict.
    WakeupPreempt {
        wakee: Pid,
        curr: Pid,
        preempt: bool,
        reason: PreemptReason,
    },
    /// A workload-level operation (the trace_marker equivalent).
    User {
        pid: Pid,
        op: UserOp,
    },
    /// The load balancer moved `pid` from `src_cpu` to `dst_cpu` (emitted right
    /// after the `sched_migrate_task` it explains; `delayed` if it was `sched_delayed`).
    LbMigrate {
        pid: Pid,
        src_cpu: u32,
        dst_cpu: u32,
        kind: BalanceKind,
        delayed: bool,
    },
    /// `need_active_balance()` queued the stopper on `src_cpu` to push toward `dst_cpu`.
    ActiveBalanceQueued {
        src_cpu: u32,
        dst_cpu: u32,
    },
    /// `push_rt_task()` for runqueue `src_cpu` (run on this CPU, which is
    /// `src_cpu` except for balance callbacks run by a remote locker) tried
    /// to move `pid`; `dst_cpu` is where it went, `None` when no CPU qualified.
    RtPush {
        pid: Pid,
        src_cpu: u32,
        dst_cpu: Option<u32>,
        result: RtBalanceResult,
    },
    /// `pull_rt_task()` on this CPU looked at overloaded `src_cpu`; `pid` is
    /// the task it pulled or passed over (0 when `src_cpu` had none to offer).
    RtPull {
        src_cpu: u32,
        pid: Pid,
        result: RtBalanceResult,
    },
    /// RT_PUSH_IPI: this CPU sent the push irq_work to `dst_cpu`; `first` for
    /// `tell_cpu_to_push()` starting the chain, else a hop of `rto_push_irq_work_func()`.
    RtPushIpi {
        dst_cpu: u32,
        first: bool,
    },
    /// `prio_changed_rt()` for queued `pid` (a PI boost or deboost) and what
    /// it queued: a reschedule of this CPU, a push, a pull — or nothing.
    RtPrioChanged {
        pid: Pid,
        oldprio: i32,
        newprio: i32,
        running: bool,
        resched: bool,
        push: bool,
        pull: bool,
    },
}

/// One event: when, on which CPU, in whose context, what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    pub ts: Nanos,
    pub cpu: u32,
    /// Task whose context emitted the event (the prefix's `comm-pid`); 0 = idle.
    pub ctx_pid: Pid,
    /// The five latency-format characters (`d..2.`).
    pub flags: [u8; 5],
    pub kind: EventKind,
}

/// Static facts about a task, shared by all events that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    pub comm: String,
    pub tgid: Pid,
}

/// pid → comm/tgid, plus the names of workload objects for `User` events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskTable {
    pub tasks: BTreeMap<Pid, TaskInfo>,
    /// Names of eventfds/flags/mutexes indexed by `obj`.
    pub objects: Vec<String>,
    /// The comms of the pids whose comm was set during the trace (exec,
    /// `prctl(PR_SET_NAME)`): from when each held, in time order, the first
    /// being the comm the pid was first known by. `tasks` keeps the last.
    /// Pids with one comm throughout are not listed.
    pub comm_history: BTreeMap<Pid, Vec<(Nanos, String)>>,
    /// The comms over time the events' own fields give (`next_comm=`,
    /// `comm=`), for the pids where they differ from `comm_history` (a
    /// capture whose line columns name the task otherwise: perf's name of a
    /// kthread from `/proc`, longer than the kernel's).
    pub field_comms: BTreeMap<Pid, Vec<(Nanos, String)>>,
}

/// The sched tracepoints a capture by `schedlab real` enables, by their
/// tracefs names; [`EventKind::is_captured_tracepoint`] says which events
/// are these.
pub const CAPTURED_TRACEPOINTS: [&str; 6] =
    ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task", "sched_pi_setprio"];

impl EventKind {
    /// One of [`CAPTURED_TRACEPOINTS`]: the events a traced real run pays for.
    pub fn is_captured_tracepoint(&self) -> bool {
        matches!(
            self,
            EventKind::SchedSwitch { .. }
                | EventKind::SchedWaking { .. }
                | EventKind::SchedWakeup { .. }
                | EventKind::SchedWakeupNew { .. }
                | EventKind::SchedMigrateTask { .. }
                | EventKind::SchedPiSetprio { .. }
        )
    }
}

impl TaskTable {
    /// The comm the kernel would print for `pid` (`swapper/N` for idle inside payloads).
    pub fn comm(&self, pid: Pid) -> &str {
        self.tasks.get(&pid).map(|t| t.comm.as_str()).unwrap_or("<...>")
    }

    /// The comm `pid` had at `ts`: the one set last at or before `ts`, the
    /// first known before that (a task first named later).
    pub fn comm_at(&self, pid: Pid, ts: Nanos) -> &str {
        match self.comm_history.get(&pid) {
            Some(h) if !h.is_empty() => &h[h.partition_point(|(t, _)| *t <= ts).saturating_sub(1)].1,
            _ => self.comm(pid),
        }
    }

    /// The comm the events' fields gave `pid` at `ts` (as [`TaskTable::comm_at`]).
    pub fn field_comm_at(&self, pid: Pid, ts: Nanos) -> &str {
        match self.field_comms.get(&pid) {
            Some(h) if !h.is_empty() => &h[h.partition_point(|(t, _)| *t <= ts).saturating_sub(1)].1,
            _ => self.comm_at(pid, ts),
        }
    }

    /// Whether `pid`'s comm was set (to a new name, or again by an exec) in
    /// `(after, upto]`.
    pub fn comm_set_between(&self, pid: Pid, after: Nanos, upto: Nanos) -> bool {
        self.comm_history.get(&pid).is_some_and(|h| h.iter().skip(1).any(|(t, _)| *t > after && *t <= upto))
    }

    /// The process `pid` belongs to (itself when the trace did not say).
    pub fn tgid(&self, pid: Pid) -> Pid {
        self.tasks.get(&pid).map_or(pid, |t| t.tgid)
    }
}

/// Where events go. The kernel model and the simulator write through this.
pub trait TraceSink {
    /// Whether events are wanted at all; emitters skip building them when false.
    fn enabled(&self) -> bool {
        true
    }
    fn emit(&mut self, ev: Event);
}

/// Collects every event in order.
#[derive(Default, Debug, Clone)]
pub struct VecSink {
    pub events: Vec<Event>,
}

impl TraceSink for VecSink {
    fn emit(&mut self, ev: Event) {
        self.events.push(ev);
    }
}

/// Drops everything.
#[derive(Default, Debug, Clone, Copy)]
pub struct NullSink;

impl TraceSink for NullSink {
    fn enabled(&self) -> bool {
        false
    }
    fn emit(&mut self, _ev: Event) {}
}

/// A complete trace: task table plus events in emission order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub table: TaskTable,
    pub nr_cpus: u32,
    pub events: Vec<Event>,
}

impl Trace {
    /// The events in timestamp order: borrowed when already sorted (every
    /// simulated trace), else a stable-sorted copy (a real capture's per-CPU
    /// buffers may come concatenated).
    pub fn in_time_order(&self) -> Cow<'_, [Event]> {
        if self.events.windows(2).all(|w| w[0].ts <= w[1].ts) {
            Cow::Borrowed(&self.events)
        } else {
            let mut v = self.events.clone();
            v.sort_by_key(|e| e.ts);
            Cow::Owned(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{flagged as ev, table};

    fn trace(ts: &[Nanos]) -> Trace {
        let events = ts
            .iter()
            .enumerate()
            .map(|(i, &t)| ev(t, i as u32, 0, b".....", EventKind::Resched { cpu: 0, ipi: false }));
        Trace { table: table(&[], &[]), nr_cpus: 8, events: events.collect() }
    }

    #[test]
    fn in_time_order_borrows_a_sorted_trace_and_stable_sorts_a_concatenated_one() {
        let sorted = trace(&[1, 2, 2, 5]);
        assert!(matches!(sorted.in_time_order(), Cow::Borrowed(_)));
        // Two per-CPU buffers one after the other: equal stamps keep their order.
        let joined = trace(&[3, 7, 1, 3, 9]);
        let order: Vec<(Nanos, u32)> = joined.in_time_order().iter().map(|e| (e.ts, e.cpu)).collect();
        assert_eq!(order, [(1, 2), (3, 0), (3, 3), (7, 1), (9, 4)]);
    }

    /// Every trace event is as large as the largest variant, and a run
    /// writes, copies and keeps millions of them: 88 bytes while
    /// `RtAppStats` held six i64s, 56 since.
    #[test]
    fn comm_at_gives_the_comm_set_last_and_the_first_before_it() {
        let mut t = table(&[(7, "yes", 7), (8, "cat", 8)], &[]);
        t.comm_history.insert(7, vec![(100, "sh".into()), (250, "timeout".into()), (400, "yes".into())]);
        assert_eq!(
            [50, 100, 249, 250, 399, 400, 9_999].map(|ts| t.comm_at(7, ts)),
            ["sh", "sh", "sh", "timeout", "timeout", "yes", "yes"]
        );
        assert_eq!(t.comm_at(8, 0), "cat");
        assert_eq!(t.comm_at(9, 0), "<...>");
        // The first entry is the comm first known, not a change.
        assert!(!t.comm_set_between(7, 0, 100));
        assert!(t.comm_set_between(7, 100, 250));
        assert!(!t.comm_set_between(7, 250, 399));
        assert!(!t.comm_set_between(8, 0, 9_999));
    }

    #[test]
    fn an_event_stays_small() {
        assert!(std::mem::size_of::<Event>() <= 56, "{} bytes", std::mem::size_of::<Event>());
    }
}
