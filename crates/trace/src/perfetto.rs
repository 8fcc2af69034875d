//! Perfetto's native protobuf trace: what the Perfetto UI (ui.perfetto.dev)
//! and `trace_processor` read best.
//!
//! [`write_perfetto`] writes a [`Trace`] as a `perfetto.protos.Trace`, the
//! format `traced` records on a real machine with the ftrace data source. The
//! UI then shows a track per CPU (from `sched_switch`), a thread-state track
//! per thread (Running / Runnable (Preempted) / Sleeping, from `sched_switch`
//! and `sched_waking`, with the waker of each wakeup), and every event in its
//! "Ftrace events" tracks and the `ftrace_event` SQL table.
//!
//! ```text
//! Trace {
//!   packet { trusted_packet_sequence_id: 2, sequence_flags: 1, first_packet_on_sequence: true,
//!            system_info { utsname { sysname: "Linux", release: "6.12.0-schedlab", machine: "x86_64" },
//!                          num_cpus: N } }
//!   packet { timestamp: <first event>, process_tree {
//!              processes { pid: TGID, cmdline: [comm of TGID], cmdline_is_comm: true } ...
//!              threads { tid, tgid, name: comm } ... } }
//!   packet { ftrace_events { cpu: 0, event { timestamp, pid, sched_switch { ... }, common_flags } ... } }
//!   packet { ftrace_events { cpu: 1, ... } }     one bundle per CPU per window of 4096 events
//! }
//! ```
//!
//! Every packet carries `trusted_packet_sequence_id` 2 (1 is `traced`'s own
//! sequence). No interned data is used, so no incremental state is needed; the
//! first packet still declares it cleared, as a real producer's first packet does.
//!
//! # Events
//!
//! | event                          | `FtraceEvent` field                                          |
//! |--------------------------------|--------------------------------------------------------------|
//! | `sched_switch`                 | `sched_switch` (4)                                           |
//! | `sched_waking` / `sched_wakeup` / `sched_wakeup_new` | `sched_waking` (20) / `sched_wakeup` (17) / `sched_wakeup_new` (114), `success` = 1 as the kernel writes it |
//! | `sched_migrate_task`           | `sched_migrate_task` (491)                                   |
//! | `sched_pi_setprio`             | `sched_pi_setprio` (353)                                     |
//! | `sched_stat_runtime`, `sched_wake_idle_without_ipi` | `generic` (327): Perfetto has no typed message for them; the fields are named as in the kernel's `format` file |
//! | `schedlab_*` decisions         | `print` (3), `buf` = `I|<tgid>|<name>: <payload>`            |
//! | `tracing_mark_write` (workload) | `print` (3), `buf` = `I|<tgid>|<marker text>`               |
//!
//! `FtraceEvent.pid` is the event's context task (`ctx_pid`, the kernel's
//! `common_pid`) and `common_flags` the kernel's `trace_entry.flags` behind the
//! latency characters ([`common_flags`]; `trace_processor` reads it only from
//! `compact_sched` today, so it is informational here). Comms are those of the
//! task table, `swapper/N` for the idle task as in the ftrace text.
//!
//! The print text after `I|<tgid>|` is exactly what the ftrace writer prints
//! after `tracing_mark_write: ` (workload markers) or after the timestamp
//! (decision events). The `I|<tgid>|` prefix makes it an atrace instant, so
//! `trace_processor` draws each one as an instant on the thread track of the
//! task in whose context it happened; bare text would still be kept in
//! `ftrace_event`, but `trace_processor` counts every such print as a
//! `systrace_parse_failure` import error. (An instant's name ends at a `|`,
//! should a comm hold one; the event list keeps the whole text.)
//!
//! # `prev_state`
//!
//! Encoded as the kernel (4.14 and later) reports it to the tracepoint
//! (`__trace_sched_switch_state()`): `R` = 0, `S` = 0x1, `D` = 0x2, `X`
//! (EXIT_DEAD) = 0x10, and a preempted task (`R+`) = `TASK_REPORT_MAX` =
//! 0x100. Perfetto picks the bit layout by kernel version and assumes 4.4
//! (where 0x100 is TASK_WAKING) without one; the `SystemInfo` packet's utsname
//! (`Linux`, `6.12.0-schedlab`) selects the 4.14+ layout
//! (`src/trace_processor/types/task_state.cc`).
//!
//! # Field numbers
//!
//! From the `.proto` files of google/perfetto (commit ec5d16b, 2026-08-22):
//! `protos/perfetto/trace/{trace,trace_packet}.proto`,
//! `trace/ftrace/{ftrace_event_bundle,ftrace_event,ftrace,sched,generic}.proto`,
//! `trace/ps/process_tree.proto`, `common/system_info.proto`. They are checked
//! against the PyPI `perfetto` 0.59.1 wheel's `perfetto_trace_pb2` by
//! `scripts/perfetto-check.py` (`tests/perfetto_schema.rs`).

use std::collections::BTreeMap;
use std::io;

use crate::event::{Event, EventKind, Nanos, Pid, PrevState, TaskTable, Trace};
use crate::ftrace::{event_name, payload_comm, write_payload};

mod read;
#[cfg(test)]
mod tests;

pub use read::{perfetto_to_text, PerfettoReadError, PerfettoStats, MAX_PACKET_BYTES};

/// Kernel release written into `SystemInfo.utsname`; any release ≥ 4.14
/// makes Perfetto decode `prev_state` the way [`prev_state`] encodes it.
pub const KERNEL_RELEASE: &str = "6.12.0-schedlab";

/// The `trusted_packet_sequence_id` of every packet.
pub const SEQUENCE_ID: u32 = 2;

/// Events per window: each window becomes one bundle packet per CPU.
const WINDOW: usize = 4096;

/// Field numbers, one module per message of `package perfetto.protos`.
pub mod field {
    /// `Trace`.
    pub mod trace {
        pub const PACKET: u32 = 1;
    }
    /// `TracePacket` (the data fields are one `oneof`).
    pub mod packet {
        pub const FTRACE_EVENTS: u32 = 1;
        pub const PROCESS_TREE: u32 = 2;
        pub const TIMESTAMP: u32 = 8;
        pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
        pub const SEQUENCE_FLAGS: u32 = 13;
        pub const SYSTEM_INFO: u32 = 45;
        pub const FIRST_PACKET_ON_SEQUENCE: u32 = 87;
        /// `SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
        pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    }
    /// `SystemInfo` and its `Utsname`.
    pub mod system_info {
        pub const UTSNAME: u32 = 1;
        pub const NUM_CPUS: u32 = 8;
        pub const UTS_SYSNAME: u32 = 1;
        pub const UTS_VERSION: u32 = 2;
        pub const UTS_RELEASE: u32 = 3;
        pub const UTS_MACHINE: u32 = 4;
    }
    /// `ProcessTree`, `ProcessTree.Process`, `ProcessTree.Thread`.
    pub mod process_tree {
        pub const PROCESSES: u32 = 1;
        pub const THREADS: u32 = 2;
        pub const PROCESS_PID: u32 = 1;
        pub const PROCESS_CMDLINE: u32 = 3;
        pub const PROCESS_CMDLINE_IS_COMM: u32 = 9;
        pub const THREAD_TID: u32 = 1;
        pub const THREAD_NAME: u32 = 2;
        pub const THREAD_TGID: u32 = 3;
    }
    /// `FtraceEventBundle`.
    pub mod bundle {
        pub const CPU: u32 = 1;
        pub const EVENT: u32 = 2;
    }
    /// `FtraceEvent`: common fields, then the `oneof event` members used here.
    pub mod event {
        pub const TIMESTAMP: u32 = 1;
        pub const PID: u32 = 2;
        pub const COMMON_FLAGS: u32 = 5;
        pub const PRINT: u32 = 3;
        pub const SCHED_SWITCH: u32 = 4;
        pub const SCHED_WAKEUP: u32 = 17;
        pub const SCHED_WAKING: u32 = 20;
        pub const SCHED_WAKEUP_NEW: u32 = 114;
        pub const CPU_FREQUENCY: u32 = 11;
        pub const GENERIC: u32 = 327;
        pub const SCHED_PI_SETPRIO: u32 = 353;
        pub const SCHED_MIGRATE_TASK: u32 = 491;
    }
    /// `PrintFtraceEvent`.
    pub mod print {
        pub const BUF: u32 = 2;
    }
    /// `SchedSwitchFtraceEvent`.
    pub mod switch {
        pub const PREV_COMM: u32 = 1;
        pub const PREV_PID: u32 = 2;
        pub const PREV_PRIO: u32 = 3;
        pub const PREV_STATE: u32 = 4;
        pub const NEXT_COMM: u32 = 5;
        pub const NEXT_PID: u32 = 6;
        pub const NEXT_PRIO: u32 = 7;
    }
    /// `SchedWakingFtraceEvent`, `SchedWakeupFtraceEvent`, `SchedWakeupNewFtraceEvent` (same layout).
    pub mod wake {
        pub const COMM: u32 = 1;
        pub const PID: u32 = 2;
        pub const PRIO: u32 = 3;
        pub const SUCCESS: u32 = 4;
        pub const TARGET_CPU: u32 = 5;
    }
    /// `SchedMigrateTaskFtraceEvent`.
    pub mod migrate {
        pub const COMM: u32 = 1;
        pub const PID: u32 = 2;
        pub const PRIO: u32 = 3;
        pub const ORIG_CPU: u32 = 4;
        pub const DEST_CPU: u32 = 5;
    }
    /// `SchedPiSetprioFtraceEvent`.
    pub mod pi_setprio {
        pub const COMM: u32 = 1;
        pub const NEWPRIO: u32 = 2;
        pub const OLDPRIO: u32 = 3;
        pub const PID: u32 = 4;
    }
    /// `CpuFrequencyFtraceEvent`.
    pub mod cpu_frequency {
        pub const STATE: u32 = 1;
        pub const CPU_ID: u32 = 2;
    }
    /// `GenericFtraceEvent` and its `Field`.
    pub mod generic {
        pub const EVENT_NAME: u32 = 1;
        pub const FIELD: u32 = 2;
        pub const FIELD_NAME: u32 = 1;
        pub const FIELD_STR_VALUE: u32 = 3;
        pub const FIELD_INT_VALUE: u32 = 4;
        pub const FIELD_UINT_VALUE: u32 = 5;
    }
}

use field as f;

/// `sched_switch.prev_state` as the kernel (≥ 4.14) reports it: `1 <<
/// (task_state_index - 1)` for a sleeping or dead task, 0 for `R`, and
/// `TASK_REPORT_MAX` (0x100) for a preempted task (`R+`).
pub fn prev_state(s: PrevState) -> i64 {
    match s {
        PrevState::Running { preempt: false } => 0,
        PrevState::Running { preempt: true } => 0x100, // TASK_REPORT_MAX
        PrevState::Sleeping => 0x1,                    // TASK_INTERRUPTIBLE
        PrevState::DiskSleep => 0x2,                   // TASK_UNINTERRUPTIBLE
        PrevState::Dead => 0x10,                       // EXIT_DEAD
    }
}

/// The kernel's `trace_entry.flags` (`enum trace_flag_type` in
/// `kernel/trace/trace.h`) behind the first three latency characters, decoded
/// as `trace_print_lat_fmt()` prints them. The preempt-depth and
/// migrate-disable columns are separate counters that `FtraceEvent` does not carry.
pub fn common_flags(flags: &[u8; 5]) -> u32 {
    const IRQS_OFF: u32 = 0x01;
    const NEED_RESCHED_LAZY: u32 = 0x02;
    const NEED_RESCHED: u32 = 0x04;
    const HARDIRQ: u32 = 0x08;
    const SOFTIRQ: u32 = 0x10;
    const PREEMPT_RESCHED: u32 = 0x20;
    const NMI: u32 = 0x40;
    const BH_OFF: u32 = 0x80;
    let irqs = match flags[0] {
        b'D' => IRQS_OFF | BH_OFF,
        b'd' => IRQS_OFF,
        b'b' => BH_OFF,
        _ => 0,
    };
    let resched = match flags[1] {
        b'B' => NEED_RESCHED | NEED_RESCHED_LAZY | PREEMPT_RESCHED,
        b'N' => NEED_RESCHED | PREEMPT_RESCHED,
        b'L' => NEED_RESCHED_LAZY | PREEMPT_RESCHED,
        b'b' => NEED_RESCHED | NEED_RESCHED_LAZY,
        b'n' => NEED_RESCHED,
        b'l' => NEED_RESCHED_LAZY,
        b'p' => PREEMPT_RESCHED,
        _ => 0,
    };
    let context = match flags[2] {
        b'Z' => NMI | HARDIRQ,
        b'z' => NMI,
        b'H' => HARDIRQ | SOFTIRQ,
        b'h' => HARDIRQ,
        b's' => SOFTIRQ,
        _ => 0,
    };
    irqs | resched | context
}

/// Write `trace` as a Perfetto protobuf trace (`.pftrace`): its events in
/// time order (stably: same-time events keep their order) through a
/// [`PerfettoWriter`].
pub fn write_perfetto(trace: &Trace, out: &mut impl io::Write) -> io::Result<()> {
    let mut w = PerfettoWriter::new(out, trace.table.clone(), trace.nr_cpus)?;
    for ev in trace.in_time_order().iter() {
        w.event(ev)?;
    }
    w.finish().map(drop)
}

/// A Perfetto trace written as the events arrive (in time order), holding
/// at most one window of them.
///
/// Events are grouped per CPU in windows of [`WINDOW`] consecutive events,
/// each CPU's bundle in the order the events came. The process tree is
/// written with the first event's timestamp.
pub struct PerfettoWriter<W: io::Write> {
    out: W,
    table: TaskTable,
    pb: Pb,
    text: String,
    tree_written: bool,
    window: Vec<Event>,
    last_ts: Nanos,
}

impl<W: io::Write> PerfettoWriter<W> {
    /// Start a trace of a machine with `nr_cpus` CPUs whose tasks are `table`.
    pub fn new(mut out: W, table: TaskTable, nr_cpus: u32) -> io::Result<Self> {
        let mut pb = Pb::default();
        write_packet(&mut out, &mut pb, |p| {
            p.uint(f::packet::SEQUENCE_FLAGS, f::packet::SEQ_INCREMENTAL_STATE_CLEARED);
            p.uint(f::packet::FIRST_PACKET_ON_SEQUENCE, 1);
            p.msg(f::packet::SYSTEM_INFO, |s| {
                s.msg(f::system_info::UTSNAME, |u| {
                    u.str(f::system_info::UTS_SYSNAME, "Linux");
                    u.str(f::system_info::UTS_VERSION, "#1 SMP PREEMPT_DYNAMIC schedlab");
                    u.str(f::system_info::UTS_RELEASE, KERNEL_RELEASE);
                    u.str(f::system_info::UTS_MACHINE, "x86_64");
                });
                s.uint(f::system_info::NUM_CPUS, u64::from(nr_cpus));
            });
        })?;
        Ok(PerfettoWriter { out, table, pb, text: String::new(), tree_written: false, window: Vec::new(), last_ts: 0 })
    }

    /// A task created mid-run, before its first event: once the process
    /// tree is out, a packet of its own names the thread (at the last
    /// event's time, so packets stay in order).
    pub fn task_new(&mut self, pid: Pid, info: &crate::TaskInfo) -> io::Result<()> {
        self.table.tasks.insert(pid, info.clone());
        if !self.tree_written {
            return Ok(());
        }
        self.flush_window()?;
        let ts = self.last_ts;
        write_packet(&mut self.out, &mut self.pb, |p| {
            p.uint(f::packet::TIMESTAMP, ts);
            p.msg(f::packet::PROCESS_TREE, |t| {
                t.msg(f::process_tree::THREADS, |th| {
                    th.int(f::process_tree::THREAD_TID, i64::from(pid));
                    th.str(f::process_tree::THREAD_NAME, &info.comm);
                    th.int(f::process_tree::THREAD_TGID, i64::from(if info.tgid > 0 { info.tgid } else { pid }));
                });
            });
        })
    }

    /// The next event (not earlier than the last).
    pub fn event(&mut self, ev: &Event) -> io::Result<()> {
        if !self.tree_written {
            self.process_tree(ev.ts)?;
        }
        self.last_ts = ev.ts;
        self.window.push(*ev);
        if self.window.len() == WINDOW {
            self.flush_window()?;
        }
        Ok(())
    }

    /// Write what is held; the output back.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.tree_written {
            self.process_tree(0)?;
        }
        self.flush_window()?;
        Ok(self.out)
    }

    fn process_tree(&mut self, first_ts: Nanos) -> io::Result<()> {
        self.tree_written = true;
        let table = &self.table;
        write_packet(&mut self.out, &mut self.pb, |p| {
            p.uint(f::packet::TIMESTAMP, first_ts);
            p.msg(f::packet::PROCESS_TREE, |t| process_tree(t, table));
        })
    }

    fn flush_window(&mut self) -> io::Result<()> {
        let mut window = std::mem::take(&mut self.window);
        window.sort_by_key(|e| e.cpu);
        let (table, text) = (&self.table, &mut self.text);
        for group in window.chunk_by(|a, b| a.cpu == b.cpu) {
            write_packet(&mut self.out, &mut self.pb, |p| {
                p.msg(f::packet::FTRACE_EVENTS, |b| {
                    b.uint(f::bundle::CPU, u64::from(group[0].cpu));
                    for ev in group {
                        b.msg(f::bundle::EVENT, |e| ftrace_event(e, table, ev, text));
                    }
                });
            })?;
        }
        window.clear();
        self.window = window;
        Ok(())
    }
}

/// One `Trace.packet`: the packet's fields (after the sequence id) are written by `fill`.
fn write_packet(out: &mut impl io::Write, pb: &mut Pb, fill: impl FnOnce(&mut Pb)) -> io::Result<()> {
    pb.0.clear();
    pb.uint(f::packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(SEQUENCE_ID));
    fill(pb);
    let mut head = Pb::default();
    head.key(f::trace::PACKET, LEN);
    head.varint(pb.0.len() as u64);
    out.write_all(&head.0)?;
    out.write_all(&pb.0)
}

/// A process per tgid (named by its leader's comm) and a thread per task;
/// the idle task (pid 0) is Perfetto's own `swapper`.
fn process_tree(t: &mut Pb, table: &TaskTable) {
    let mut groups: BTreeMap<Pid, Vec<Pid>> = BTreeMap::new();
    for (&pid, info) in table.tasks.iter().filter(|(&pid, _)| pid > 0) {
        groups.entry(if info.tgid > 0 { info.tgid } else { pid }).or_default().push(pid);
    }
    for (&tgid, pids) in &groups {
        let leader = if table.tasks.contains_key(&tgid) { tgid } else { pids[0] };
        t.msg(f::process_tree::PROCESSES, |p| {
            p.int(f::process_tree::PROCESS_PID, i64::from(tgid));
            p.str(f::process_tree::PROCESS_CMDLINE, table.comm(leader));
            p.uint(f::process_tree::PROCESS_CMDLINE_IS_COMM, 1);
        });
    }
    for (&tgid, pids) in &groups {
        for &pid in pids {
            t.msg(f::process_tree::THREADS, |th| {
                th.int(f::process_tree::THREAD_TID, i64::from(pid));
                th.str(f::process_tree::THREAD_NAME, table.comm(pid));
                th.int(f::process_tree::THREAD_TGID, i64::from(tgid));
            });
        }
    }
}

/// The fields of one `FtraceEvent`.
fn ftrace_event(e: &mut Pb, table: &TaskTable, ev: &Event, text: &mut String) {
    e.uint(f::event::TIMESTAMP, ev.ts);
    e.uint(f::event::PID, ev.ctx_pid.max(0) as u64);
    let c = |pid: Pid| payload_comm(table, pid, ev.cpu);
    let wake = |e: &mut Pb, field: u32, pid: Pid, prio: i32, target_cpu: u32| {
        e.msg(field, |w| {
            w.str(f::wake::COMM, &c(pid));
            w.int(f::wake::PID, i64::from(pid));
            w.int(f::wake::PRIO, i64::from(prio));
            w.int(f::wake::SUCCESS, 1);
            w.int(f::wake::TARGET_CPU, i64::from(target_cpu));
        })
    };
    match ev.kind {
        EventKind::SchedWaking { pid, prio, target_cpu } => wake(e, f::event::SCHED_WAKING, pid, prio, target_cpu),
        EventKind::SchedWakeup { pid, prio, target_cpu } => wake(e, f::event::SCHED_WAKEUP, pid, prio, target_cpu),
        EventKind::SchedWakeupNew { pid, prio, target_cpu } => {
            wake(e, f::event::SCHED_WAKEUP_NEW, pid, prio, target_cpu)
        }
        EventKind::SchedSwitch { prev_pid, prev_prio, prev_state: state, next_pid, next_prio } => {
            e.msg(f::event::SCHED_SWITCH, |s| {
                s.str(f::switch::PREV_COMM, &c(prev_pid));
                s.int(f::switch::PREV_PID, i64::from(prev_pid));
                s.int(f::switch::PREV_PRIO, i64::from(prev_prio));
                s.int(f::switch::PREV_STATE, prev_state(state));
                s.str(f::switch::NEXT_COMM, &c(next_pid));
                s.int(f::switch::NEXT_PID, i64::from(next_pid));
                s.int(f::switch::NEXT_PRIO, i64::from(next_prio));
            })
        }
        EventKind::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => e.msg(f::event::SCHED_MIGRATE_TASK, |m| {
            m.str(f::migrate::COMM, &c(pid));
            m.int(f::migrate::PID, i64::from(pid));
            m.int(f::migrate::PRIO, i64::from(prio));
            m.int(f::migrate::ORIG_CPU, i64::from(orig_cpu));
            m.int(f::migrate::DEST_CPU, i64::from(dest_cpu));
        }),
        EventKind::SchedPiSetprio { pid, oldprio, newprio } => e.msg(f::event::SCHED_PI_SETPRIO, |m| {
            m.str(f::pi_setprio::COMM, &c(pid));
            m.int(f::pi_setprio::NEWPRIO, i64::from(newprio));
            m.int(f::pi_setprio::OLDPRIO, i64::from(oldprio));
            m.int(f::pi_setprio::PID, i64::from(pid));
        }),
        EventKind::SchedStatRuntime { pid, runtime } => e.msg(f::event::GENERIC, |g| {
            g.str(f::generic::EVENT_NAME, "sched_stat_runtime");
            generic_field(g, "comm", Value::Str(&c(pid)));
            generic_field(g, "pid", Value::Int(i64::from(pid)));
            generic_field(g, "runtime", Value::Uint(runtime));
        }),
        EventKind::CpuFrequency { state, cpu_id } => e.msg(f::event::CPU_FREQUENCY, |m| {
            m.int(f::cpu_frequency::STATE, i64::from(state));
            m.int(f::cpu_frequency::CPU_ID, i64::from(cpu_id));
        }),
        EventKind::SchedWakeIdleWithoutIpi { cpu } => e.msg(f::event::GENERIC, |g| {
            g.str(f::generic::EVENT_NAME, "sched_wake_idle_without_ipi");
            generic_field(g, "cpu", Value::Int(i64::from(cpu)));
        }),
        EventKind::Ttwu { .. }
        | EventKind::Delayed { .. }
        | EventKind::Resched { .. }
        | EventKind::WakeupPreempt { .. }
        | EventKind::User { .. }
        | EventKind::LbMigrate { .. }
        | EventKind::ActiveBalanceQueued { .. }
        | EventKind::RtPush { .. }
        | EventKind::RtPull { .. }
        | EventKind::RtPushIpi { .. }
        | EventKind::RtPrioChanged { .. } => {
            print_text(text, table, ev);
            e.msg(f::event::PRINT, |p| p.str(f::print::BUF, text));
        }
    }
    // After the payload: trace_processor's tokenizer expects timestamp, pid
    // and the event message first (its fast path), as traced writes them.
    e.uint(f::event::COMMON_FLAGS, u64::from(common_flags(&ev.flags)));
}

/// The `print` buffer of a decision event or workload marker (see the module docs).
fn print_text(text: &mut String, table: &TaskTable, ev: &Event) {
    text.clear();
    let tgid = if ev.ctx_pid > 0 { table.tasks.get(&ev.ctx_pid).map_or(0, |t| t.tgid.max(0)) } else { 0 };
    text.push_str(&format!("I|{tgid}|"));
    if !matches!(ev.kind, EventKind::User { .. }) {
        text.push_str(event_name(&ev.kind));
        text.push_str(": ");
    }
    write_payload(text, table, ev);
}

enum Value<'a> {
    Str(&'a str),
    Int(i64),
    Uint(u64),
}

fn generic_field(g: &mut Pb, name: &str, v: Value) {
    g.msg(f::generic::FIELD, |fl| {
        fl.str(f::generic::FIELD_NAME, name);
        match v {
            Value::Str(s) => fl.str(f::generic::FIELD_STR_VALUE, s),
            Value::Int(i) => fl.int(f::generic::FIELD_INT_VALUE, i),
            Value::Uint(u) => fl.uint(f::generic::FIELD_UINT_VALUE, u),
        }
    });
}

// ---------------------------------------------------------------------------
// Protobuf wire format (proto2; only what the messages above need)
// ---------------------------------------------------------------------------

const VARINT: u64 = 0;
const LEN: u64 = 2;

/// A message under construction: fields are appended in call order.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u64) {
        self.varint(u64::from(field) << 3 | wire_type);
    }

    /// `uint32`, `uint64`, `bool` and enum fields.
    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.varint(v);
    }

    /// `int32` and `int64` fields: two's complement, so a negative value takes
    /// ten bytes (these are not `sint` fields, no zigzag).
    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    fn str(&mut self, field: u32, s: &str) {
        self.key(field, LEN);
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// An embedded message whose fields `fill` appends; the length prefix is
    /// inserted in front of them afterwards.
    fn msg(&mut self, field: u32, fill: impl FnOnce(&mut Pb)) {
        self.key(field, LEN);
        let start = self.0.len();
        fill(self);
        let mut len = Pb::default();
        len.varint((self.0.len() - start) as u64);
        self.0.splice(start..start, len.0);
    }
}
