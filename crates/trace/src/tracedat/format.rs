//! The events a schedlab trace.dat declares and how each is laid out.
//!
//! The kernel's sched tracepoints keep the field names, types and offsets
//! of a 6.12 kernel's `events/sched/*/format` (x86-64), so tools that read
//! fields by name (KernelShark's sched plugin, trace-cmd's) find them. The
//! `print fmt` lines are written for the values schedlab produces: the
//! `prev_state` flags carry the states the model has (`R`, `R+`, `S`, `D`,
//! `X`, and the other bits a kernel prints).
//!
//! Everything else (schedlab's decision events and the workload markers)
//! lives in a `schedlab` system, one event per name, each with one dynamic
//! string `msg` printed with `%s`: its text is exactly the payload the ftrace
//! text writer prints, so `trace-cmd report` shows the same line. The
//! markers are the event `schedlab/tracing_mark_write` rather than the
//! kernel's `ftrace/print` (whose text would need the `tracing_mark_write`
//! symbol from kallsyms and would print as `print: tracing_mark_write: ...`).

use std::fmt::Write as _;

use crate::event::{Event, EventKind, PrevState, TaskTable};
use crate::ftrace::{event_name, payload_comm, write_payload};

/// The longest string a record stores; longer payloads are cut (a record
/// must fit in a page, and no schedlab payload comes near this).
pub const MAX_STRING: usize = 2048;
/// `TASK_COMM_LEN`: the fixed comm fields hold 15 bytes and a NUL.
const COMM_LEN: usize = 16;

/// One event's declaration: where it lives and its format file.
pub struct EventFormat {
    pub system: &'static str,
    pub name: &'static str,
    pub id: u16,
    /// The field lines after the common fields, and the print fmt.
    fields: &'static str,
    print: &'static str,
}

const SCHEDLAB_FIELDS: &str = "\tfield:__data_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;\n";
const SCHEDLAB_PRINT: &str = "\"%s\", __get_str(msg)";

const WAKE_FIELDS: &str = "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n";
const WAKE_PRINT: &str = "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";

/// The first id handed out; ids only need to be unique within the file.
const FIRST_ID: u16 = 300;

/// The sched tracepoints, in id order from [`FIRST_ID`].
const SCHED: [(&str, &str, &str); 8] = [
    (
        "sched_switch",
        "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n",
        "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", \
REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", \
{ 0x01, \"S\" }, { 0x02, \"D\" }, { 0x04, \"T\" }, { 0x08, \"t\" }, { 0x10, \"X\" }, { 0x20, \"Z\" }, { 0x40, \"P\" }, \
{ 0x80, \"I\" }) : \"R\", (REC->prev_state & 0x100) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio",
    ),
    ("sched_waking", WAKE_FIELDS, WAKE_PRINT),
    ("sched_wakeup", WAKE_FIELDS, WAKE_PRINT),
    ("sched_wakeup_new", WAKE_FIELDS, WAKE_PRINT),
    (
        "sched_migrate_task",
        "\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n\
\tfield:int prio;\toffset:16;\tsize:4;\tsigned:1;\n\
\tfield:int orig_cpu;\toffset:20;\tsize:4;\tsigned:1;\n\
\tfield:int dest_cpu;\toffset:24;\tsize:4;\tsigned:1;\n",
        "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", __get_str(comm), REC->pid, REC->prio, REC->orig_cpu, \
REC->dest_cpu",
    ),
    (
        "sched_stat_runtime",
        "\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n\
\tfield:u64 runtime;\toffset:16;\tsize:8;\tsigned:0;\n",
        "\"comm=%s pid=%d runtime=%Lu [ns]\", __get_str(comm), REC->pid, REC->runtime",
    ),
    (
        "sched_pi_setprio",
        "\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n\
\tfield:int oldprio;\toffset:16;\tsize:4;\tsigned:1;\n\
\tfield:int newprio;\toffset:20;\tsize:4;\tsigned:1;\n",
        "\"comm=%s pid=%d oldprio=%d newprio=%d\", __get_str(comm), REC->pid, REC->oldprio, REC->newprio",
    ),
    ("sched_wake_idle_without_ipi", "\tfield:int cpu;\toffset:8;\tsize:4;\tsigned:1;\n", "\"cpu=%d\", REC->cpu"),
];

/// The `power` system's events, in id order after [`SCHEDLAB`]:
/// `cpu_frequency` as include/trace/events/power.h declares it.
const POWER: [(&str, &str, &str); 1] = [(
    "cpu_frequency",
    "\tfield:u32 state;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:u32 cpu_id;\toffset:12;\tsize:4;\tsigned:0;\n",
    "\"state=%lu cpu_id=%lu\", (unsigned long)REC->state, (unsigned long)REC->cpu_id",
)];

/// The `schedlab` system's events, in id order after [`SCHED`].
const SCHEDLAB: [&str; 11] = [
    "tracing_mark_write",
    "schedlab_ttwu",
    "schedlab_delayed",
    "schedlab_resched",
    "schedlab_wakeup_preempt",
    "schedlab_lb_migrate",
    "schedlab_active_balance",
    "schedlab_rt_push",
    "schedlab_rt_pull",
    "schedlab_rt_push_ipi",
    "schedlab_rt_prio_changed",
];

/// Every event the file declares: the `sched` system's, `schedlab`'s, then `power`'s.
pub fn all_formats() -> impl Iterator<Item = EventFormat> {
    let sched = SCHED.iter().enumerate().map(|(i, &(name, fields, print))| EventFormat {
        system: "sched",
        name,
        id: FIRST_ID + i as u16,
        fields,
        print,
    });
    let schedlab = SCHEDLAB.iter().enumerate().map(|(i, &name)| EventFormat {
        system: "schedlab",
        name,
        id: FIRST_ID + (SCHED.len() + i) as u16,
        fields: SCHEDLAB_FIELDS,
        print: SCHEDLAB_PRINT,
    });
    let power = POWER.iter().enumerate().map(|(i, &(name, fields, print))| EventFormat {
        system: "power",
        name,
        id: FIRST_ID + (SCHED.len() + SCHEDLAB.len() + i) as u16,
        fields,
        print,
    });
    sched.chain(schedlab).chain(power)
}

impl EventFormat {
    /// The text of the event's `format` file.
    pub fn text(&self) -> String {
        let mut s = String::with_capacity(1024);
        let _ = write!(s, "name: {}\nID: {}\nformat:\n", self.name, self.id);
        s.push_str("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n");
        s.push_str("\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n");
        s.push_str("\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n");
        s.push_str("\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n");
        s.push_str(self.fields);
        let _ = writeln!(s, "\nprint fmt: {}", self.print);
        s
    }
}

/// The id of `kind`'s event in [`all_formats`].
pub fn event_id(kind: &EventKind) -> u16 {
    let name = event_name(kind);
    let index = SCHED
        .iter()
        .position(|&(n, _, _)| n == name)
        .or_else(|| SCHEDLAB.iter().position(|&n| n == name).map(|i| SCHED.len() + i))
        .or_else(|| POWER.iter().position(|&(n, _, _)| n == name).map(|i| SCHED.len() + SCHEDLAB.len() + i));
    // Every name event_name() gives is in one of the tables (a test checks).
    FIRST_ID + index.unwrap_or(SCHED.len()) as u16
}

/// `prev_state` as the kernel's number: one state bit, 0 for running,
/// 0x100 (`TASK_REPORT_MAX`) for preempted.
fn prev_state_bits(s: PrevState) -> i64 {
    match s {
        PrevState::Running { preempt: false } => 0,
        PrevState::Running { preempt: true } => 0x100,
        PrevState::Sleeping => 0x01,
        PrevState::DiskSleep => 0x02,
        PrevState::Dead => 0x10,
    }
}

/// `common_flags` and `common_preempt_count` from the five latency
/// characters (`d..2.`): irqs-off, need-resched, hard/soft irq, preempt
/// depth, migrate-disable depth.
fn latency_bits(flags: &[u8; 5]) -> (u8, u8) {
    let mut f = match flags[0] {
        b'd' => 0x01,
        b'D' => 0x81,
        b'b' => 0x80,
        b'X' => 0x02,
        _ => 0,
    };
    f |= match flags[1] {
        b'N' => 0x24,
        b'n' => 0x04,
        b'p' => 0x20,
        _ => 0,
    };
    f |= match flags[2] {
        b'Z' => 0x48,
        b'z' => 0x40,
        b'H' => 0x18,
        b'h' => 0x08,
        b's' => 0x10,
        _ => 0,
    };
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    (f, nibble(flags[3]) | (nibble(flags[4]) << 4))
}

/// Builds one record's bytes.
struct Rec<'a> {
    buf: &'a mut Vec<u8>,
    /// Strings placed after the fixed fields: (where their `__data_loc` word is, text).
    dynamic: Vec<(usize, &'a [u8])>,
}

impl<'a> Rec<'a> {
    fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// A `char[16]` comm, cut to 15 bytes like the kernel's.
    fn comm(&mut self, s: &str) {
        let b = &s.as_bytes()[..s.len().min(COMM_LEN - 1)];
        let mut field = [0u8; COMM_LEN];
        field[..b.len()].copy_from_slice(b);
        self.buf.extend_from_slice(&field);
    }
    /// A `__data_loc char[]` word; the text goes after the fixed fields.
    fn loc(&mut self, s: &'a str) {
        let b = cut(s);
        self.dynamic.push((self.buf.len(), b));
        self.u32(0);
    }
    fn finish(self) {
        for (at, s) in self.dynamic {
            let offset = self.buf.len() as u32;
            let len = s.len() as u32 + 1;
            self.buf[at..at + 4].copy_from_slice(&(offset | (len << 16)).to_le_bytes());
            self.buf.extend_from_slice(s);
            self.buf.push(0);
        }
    }
}

/// At most [`MAX_STRING`] bytes, cut at a character boundary.
fn cut(s: &str) -> &[u8] {
    let mut end = s.len().min(MAX_STRING);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

/// The record data of `ev` (common fields, then its own) into `buf`;
/// `text` is scratch for payload strings.
pub fn encode(ev: &Event, table: &TaskTable, buf: &mut Vec<u8>, text: &mut String) {
    buf.clear();
    text.clear();
    let (flags, preempt) = latency_bits(&ev.flags);
    buf.extend_from_slice(&event_id(&ev.kind).to_le_bytes());
    buf.push(flags);
    buf.push(preempt);
    buf.extend_from_slice(&ev.ctx_pid.to_le_bytes());
    let comm = |pid| payload_comm(table, pid, ev.cpu);
    match ev.kind {
        EventKind::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => {
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.comm(&comm(prev_pid));
            r.i32(prev_pid);
            r.i32(prev_prio);
            r.buf.extend_from_slice(&prev_state_bits(prev_state).to_le_bytes());
            r.comm(&comm(next_pid));
            r.i32(next_pid);
            r.i32(next_prio);
        }
        EventKind::SchedWaking { pid, prio, target_cpu }
        | EventKind::SchedWakeup { pid, prio, target_cpu }
        | EventKind::SchedWakeupNew { pid, prio, target_cpu } => {
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.comm(&comm(pid));
            r.i32(pid);
            r.i32(prio);
            r.u32(target_cpu);
        }
        EventKind::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu } => {
            let c = comm(pid);
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.loc(&c);
            r.i32(pid);
            r.i32(prio);
            r.u32(orig_cpu);
            r.u32(dest_cpu);
            r.finish();
        }
        EventKind::SchedStatRuntime { pid, runtime } => {
            let c = comm(pid);
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.loc(&c);
            r.i32(pid);
            r.buf.extend_from_slice(&runtime.to_le_bytes());
            r.finish();
        }
        EventKind::SchedPiSetprio { pid, oldprio, newprio } => {
            let c = comm(pid);
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.loc(&c);
            r.i32(pid);
            r.i32(oldprio);
            r.i32(newprio);
            r.finish();
        }
        EventKind::SchedWakeIdleWithoutIpi { cpu } => buf.extend_from_slice(&cpu.to_le_bytes()),
        EventKind::CpuFrequency { state, cpu_id } => {
            buf.extend_from_slice(&state.to_le_bytes());
            buf.extend_from_slice(&cpu_id.to_le_bytes());
        }
        _ => {
            write_payload(text, table, ev);
            let mut r = Rec { buf, dynamic: Vec::new() };
            r.loc(text);
            r.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{TaskInfo, UserOp};

    #[test]
    fn every_event_name_has_its_own_format() {
        let formats: Vec<EventFormat> = all_formats().collect();
        let kinds = [
            EventKind::SchedSwitch {
                prev_pid: 1,
                prev_prio: 120,
                prev_state: PrevState::Sleeping,
                next_pid: 0,
                next_prio: 120,
            },
            EventKind::SchedWakeIdleWithoutIpi { cpu: 1 },
            EventKind::CpuFrequency { state: 408_000, cpu_id: 2 },
            EventKind::User { pid: 1, op: UserOp::LoopEnd { n: 1 } },
            EventKind::Resched { cpu: 1, ipi: true },
            EventKind::RtPrioChanged {
                pid: 1,
                oldprio: 1,
                newprio: 2,
                running: false,
                resched: false,
                push: false,
                pull: false,
            },
        ];
        for k in kinds {
            let f = formats.iter().find(|f| f.id == event_id(&k)).unwrap();
            assert_eq!(f.name, event_name(&k));
        }
        let mut ids: Vec<u16> = formats.iter().map(|f| f.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), SCHED.len() + SCHEDLAB.len() + POWER.len());
    }

    #[test]
    fn a_switch_is_laid_out_as_its_format_says() {
        let mut table = TaskTable::default();
        table.tasks.insert(42, TaskInfo { comm: "a-very-long-comm-name".into(), tgid: 42 });
        let ev = Event {
            ts: 1,
            cpu: 3,
            ctx_pid: 42,
            flags: *b"dN.2.",
            kind: EventKind::SchedSwitch {
                prev_pid: 42,
                prev_prio: 98,
                prev_state: PrevState::Running { preempt: true },
                next_pid: 0,
                next_prio: 120,
            },
        };
        let (mut buf, mut text) = (Vec::new(), String::new());
        encode(&ev, &table, &mut buf, &mut text);
        assert_eq!(buf.len(), 64);
        assert_eq!(u16::from_le_bytes([buf[0], buf[1]]), event_id(&ev.kind));
        assert_eq!((buf[2], buf[3]), (0x25, 2));
        assert_eq!(&buf[8..24], b"a-very-long-com\0");
        assert_eq!(i32::from_le_bytes(buf[28..32].try_into().unwrap()), 98);
        assert_eq!(i64::from_le_bytes(buf[32..40].try_into().unwrap()), 0x100);
        assert_eq!(&buf[40..50], b"swapper/3\0");
        assert_eq!(i32::from_le_bytes(buf[60..64].try_into().unwrap()), 120);
    }

    #[test]
    fn a_decision_event_stores_its_ftrace_payload_as_a_dynamic_string() {
        let table = TaskTable::default();
        let ev = Event { ts: 1, cpu: 2, ctx_pid: 0, flags: *b".....", kind: EventKind::Resched { cpu: 2, ipi: true } };
        let (mut buf, mut text) = (Vec::new(), String::new());
        encode(&ev, &table, &mut buf, &mut text);
        let loc = u32::from_le_bytes(buf[8..12].try_into().unwrap());
        assert_eq!((loc & 0xffff, loc >> 16), (12, 12));
        assert_eq!(&buf[12..], b"cpu=2 ipi=1\0");
    }
}
