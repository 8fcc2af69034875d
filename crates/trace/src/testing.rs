//! Builders for hand-written traces in tests (feature `test-builders`).
//!
//! Tests of analysis, plots and the writers state a scene event by event;
//! these spell the events and tables the way the kernel's tracepoints would
//! fill them, so a test names only what its scene is about (who switched to
//! whom, who woke whom where). Where a scene needs another context or flags,
//! [`EventExt`] changes them on the built event.

use crate::event::{Event, EventKind, Nanos, Pid, PrevState, TaskInfo, TaskTable, Trace, UserOp};

/// The flags the tests give sched tracepoints: IRQs off, preempt count 2.
pub const SCHED_FLAGS: [u8; 5] = *b"d..2.";

/// The flags the tests give workload markers (a `trace_marker` write from
/// user space: preempt count 1).
pub const MARKER_FLAGS: [u8; 5] = *b"...1.";

/// The priority of a nice-0 fair task, as `sched_switch` prints it.
pub const NICE_0_PRIO: i32 = 120;

/// An event with explicit flags.
pub fn flagged(ts: Nanos, cpu: u32, ctx_pid: Pid, flags: &[u8; 5], kind: EventKind) -> Event {
    Event { ts, cpu, ctx_pid, flags: *flags, kind }
}

/// An event with [`SCHED_FLAGS`], fired on `cpu` in the context of `ctx_pid`.
pub fn event(ts: Nanos, cpu: u32, ctx_pid: Pid, kind: EventKind) -> Event {
    flagged(ts, cpu, ctx_pid, &SCHED_FLAGS, kind)
}

/// `sched_switch` from `prev` to `next`, both nice 0, in `prev`'s context.
pub fn switch(ts: Nanos, cpu: u32, prev: Pid, prev_state: PrevState, next: Pid) -> Event {
    switch_prio(ts, cpu, (prev, NICE_0_PRIO), prev_state, (next, NICE_0_PRIO))
}

/// `sched_switch` with each side's priority given as `(pid, prio)`.
pub fn switch_prio(ts: Nanos, cpu: u32, prev: (Pid, i32), prev_state: PrevState, next: (Pid, i32)) -> Event {
    let kind =
        EventKind::SchedSwitch { prev_pid: prev.0, prev_prio: prev.1, prev_state, next_pid: next.0, next_prio: next.1 };
    event(ts, cpu, prev.0, kind)
}

/// `sched_wakeup` of nice-0 `pid` onto `target_cpu`, fired on `cpu` by `waker`.
pub fn wakeup(ts: Nanos, cpu: u32, waker: Pid, pid: Pid, target_cpu: u32) -> Event {
    event(ts, cpu, waker, EventKind::SchedWakeup { pid, prio: NICE_0_PRIO, target_cpu })
}

/// `sched_waking` of nice-0 `pid`, fired on `cpu` by `waker`.
pub fn waking(ts: Nanos, cpu: u32, waker: Pid, pid: Pid, target_cpu: u32) -> Event {
    event(ts, cpu, waker, EventKind::SchedWaking { pid, prio: NICE_0_PRIO, target_cpu })
}

/// `sched_migrate_task` of nice-0 `pid`, fired on the source CPU outside
/// any task (context pid 0).
pub fn migrate(ts: Nanos, pid: Pid, from: u32, to: u32) -> Event {
    event(ts, from, 0, EventKind::SchedMigrateTask { pid, prio: NICE_0_PRIO, orig_cpu: from, dest_cpu: to })
}

/// A workload marker `pid` wrote on `cpu`, with [`MARKER_FLAGS`].
pub fn marker(ts: Nanos, cpu: u32, pid: Pid, op: UserOp) -> Event {
    flagged(ts, cpu, pid, &MARKER_FLAGS, EventKind::User { pid, op })
}

/// Changes to a built event, for scenes that need them.
pub trait EventExt {
    /// The same event in the context of `pid`.
    fn ctx(self, pid: Pid) -> Event;
}

impl EventExt for Event {
    fn ctx(mut self, pid: Pid) -> Event {
        self.ctx_pid = pid;
        self
    }
}

/// A task table from (pid, comm, tgid) triples and object names.
pub fn table(tasks: &[(Pid, &str, Pid)], objects: &[&str]) -> TaskTable {
    TaskTable {
        tasks: tasks.iter().map(|&(p, c, g)| (p, TaskInfo { comm: c.to_string(), tgid: g })).collect(),
        objects: objects.iter().map(|s| s.to_string()).collect(),
        comm_history: Default::default(),
        field_comms: Default::default(),
    }
}

/// A task table of one process `tgid` from (pid, comm) pairs and object names.
pub fn process_table(tgid: Pid, tasks: &[(Pid, &str)], objects: &[&str]) -> TaskTable {
    let tasks: Vec<(Pid, &str, Pid)> = tasks.iter().map(|&(p, c)| (p, c, tgid)).collect();
    table(&tasks, objects)
}

/// A trace of `events` as given (not sorted).
pub fn trace(table: TaskTable, nr_cpus: u32, events: Vec<Event>) -> Trace {
    Trace { table, nr_cpus, events }
}

/// A 4-CPU trace of `kinds`, given as (context pid, cpu, kind): event `i`
/// is at 1 s + `i` × 1.5 ms, every event with the flags `dNh2.`.
pub fn spaced_trace(table: TaskTable, kinds: &[(Pid, u32, EventKind)]) -> Trace {
    let events = kinds
        .iter()
        .enumerate()
        .map(|(i, &(ctx, cpu, kind))| flagged(1_000_000_000 + i as u64 * 1_500_000, cpu, ctx, b"dNh2.", kind))
        .collect();
    trace(table, 4, events)
}
