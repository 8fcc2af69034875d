//! Building blocks for the hand-written traces of the ftrace and Perfetto
//! writer tests.

use crate::event::{Event, EventKind, Nanos, Pid, TaskInfo, TaskTable, Trace};

/// A task table from (pid, comm, tgid) triples and object names.
pub fn table(tasks: &[(Pid, &str, Pid)], objects: &[&str]) -> TaskTable {
    TaskTable {
        tasks: tasks.iter().map(|&(p, c, g)| (p, TaskInfo { comm: c.to_string(), tgid: g })).collect(),
        objects: objects.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn ev(ts: Nanos, cpu: u32, ctx_pid: Pid, flags: &[u8; 5], kind: EventKind) -> Event {
    Event { ts, cpu, ctx_pid, flags: *flags, kind }
}

/// A 4-CPU trace of `kinds`, given as (context pid, cpu, kind): event `i`
/// is at 1 s + `i` × 1.5 ms, every event with the flags `dNh2.`.
pub fn spaced_trace(table: TaskTable, kinds: &[(Pid, u32, EventKind)]) -> Trace {
    let events = kinds
        .iter()
        .enumerate()
        .map(|(i, &(ctx, cpu, kind))| ev(1_000_000_000 + i as u64 * 1_500_000, cpu, ctx, b"dNh2.", kind))
        .collect();
    Trace { table, nr_cpus: 4, events }
}
