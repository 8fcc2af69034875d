//! Decode the writer's output with an independent, minimal protobuf reader and
//! check its structure, counts and exact field values.

use std::collections::BTreeMap;

use super::*;
use crate::event::*;
use crate::ftrace::{format_line, WriteOptions};
use crate::testing::{flagged as ev, spaced_trace, table};

// ---------------------------------------------------------------- field numbers

/// The field numbers again, copied from the .proto files independently of the
/// writer's constants, so a changed constant in the writer fails these tests.
#[allow(dead_code)]
mod n {
    pub mod trace {
        pub const PACKET: u32 = 1;
    }
    pub mod packet {
        pub const FTRACE_EVENTS: u32 = 1;
        pub const PROCESS_TREE: u32 = 2;
        pub const TIMESTAMP: u32 = 8;
        pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
        pub const SEQUENCE_FLAGS: u32 = 13;
        pub const SYSTEM_INFO: u32 = 45;
        pub const FIRST_PACKET_ON_SEQUENCE: u32 = 87;
        pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    }
    pub mod system_info {
        pub const UTSNAME: u32 = 1;
        pub const NUM_CPUS: u32 = 8;
        pub const UTS_SYSNAME: u32 = 1;
        pub const UTS_VERSION: u32 = 2;
        pub const UTS_RELEASE: u32 = 3;
        pub const UTS_MACHINE: u32 = 4;
    }
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
    pub mod bundle {
        pub const CPU: u32 = 1;
        pub const EVENT: u32 = 2;
    }
    pub mod event {
        pub const TIMESTAMP: u32 = 1;
        pub const PID: u32 = 2;
        pub const COMMON_FLAGS: u32 = 5;
        pub const PRINT: u32 = 3;
        pub const SCHED_SWITCH: u32 = 4;
        pub const SCHED_WAKEUP: u32 = 17;
        pub const SCHED_WAKING: u32 = 20;
        pub const SCHED_WAKEUP_NEW: u32 = 114;
        pub const GENERIC: u32 = 327;
        pub const SCHED_PI_SETPRIO: u32 = 353;
        pub const SCHED_MIGRATE_TASK: u32 = 491;
    }
    pub mod print {
        pub const BUF: u32 = 2;
    }
    pub mod switch {
        pub const PREV_COMM: u32 = 1;
        pub const PREV_PID: u32 = 2;
        pub const PREV_PRIO: u32 = 3;
        pub const PREV_STATE: u32 = 4;
        pub const NEXT_COMM: u32 = 5;
        pub const NEXT_PID: u32 = 6;
        pub const NEXT_PRIO: u32 = 7;
    }
    pub mod wake {
        pub const COMM: u32 = 1;
        pub const PID: u32 = 2;
        pub const PRIO: u32 = 3;
        pub const SUCCESS: u32 = 4;
        pub const TARGET_CPU: u32 = 5;
    }
    pub mod migrate {
        pub const COMM: u32 = 1;
        pub const PID: u32 = 2;
        pub const PRIO: u32 = 3;
        pub const ORIG_CPU: u32 = 4;
        pub const DEST_CPU: u32 = 5;
    }
    pub mod pi_setprio {
        pub const COMM: u32 = 1;
        pub const NEWPRIO: u32 = 2;
        pub const OLDPRIO: u32 = 3;
        pub const PID: u32 = 4;
    }
    pub mod generic {
        pub const EVENT_NAME: u32 = 1;
        pub const FIELD: u32 = 2;
        pub const FIELD_NAME: u32 = 1;
        pub const FIELD_STR_VALUE: u32 = 3;
        pub const FIELD_INT_VALUE: u32 = 4;
        pub const FIELD_UINT_VALUE: u32 = 5;
    }
}

// ---------------------------------------------------------------- tiny reader

#[derive(Clone, Copy, Debug, PartialEq)]
enum V<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// A decoded message: (field number, value) in wire order.
#[derive(Debug)]
struct M<'a>(Vec<(u32, V<'a>)>);

fn read_varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
    }
    panic!("varint longer than 10 bytes");
}

fn decode(b: &[u8]) -> M<'_> {
    let mut pos = 0;
    let mut fields = Vec::new();
    while pos < b.len() {
        let key = read_varint(b, &mut pos);
        let (num, wt) = ((key >> 3) as u32, key & 7);
        assert!(num > 0, "field number 0 at byte {pos}");
        let v = match wt {
            0 => V::Varint(read_varint(b, &mut pos)),
            2 => {
                let len = read_varint(b, &mut pos) as usize;
                assert!(pos + len <= b.len(), "length {len} runs past the message");
                pos += len;
                V::Bytes(&b[pos - len..pos])
            }
            _ => panic!("unexpected wire type {wt} for field {num}"),
        };
        fields.push((num, v));
    }
    M(fields)
}

impl<'a> M<'a> {
    fn all(&self, n: u32) -> impl Iterator<Item = V<'a>> + '_ {
        self.0.iter().filter(move |(k, _)| *k == n).map(|(_, v)| *v)
    }
    fn one(&self, n: u32) -> Option<V<'a>> {
        let mut it = self.all(n);
        let v = it.next();
        assert!(it.next().is_none(), "field {n} repeated");
        v
    }
    fn u(&self, n: u32) -> u64 {
        match self.one(n) {
            Some(V::Varint(v)) => v,
            other => panic!("field {n}: want varint, got {other:?}"),
        }
    }
    fn i(&self, n: u32) -> i64 {
        self.u(n) as i64
    }
    fn s(&self, n: u32) -> &'a str {
        match self.one(n) {
            Some(V::Bytes(b)) => std::str::from_utf8(b).unwrap(),
            other => panic!("field {n}: want string, got {other:?}"),
        }
    }
    fn m(&self, n: u32) -> M<'a> {
        match self.one(n) {
            Some(V::Bytes(b)) => decode(b),
            other => panic!("field {n}: want message, got {other:?}"),
        }
    }
    fn ms(&self, n: u32) -> Vec<M<'a>> {
        self.all(n)
            .map(|v| match v {
                V::Bytes(b) => decode(b),
                other => panic!("field {n}: want message, got {other:?}"),
            })
            .collect()
    }
    fn has(&self, n: u32) -> bool {
        self.all(n).next().is_some()
    }
}

/// The `FtraceEvent` oneof member present, by name.
fn kind_name(e: &M) -> &'static str {
    use n::event::*;
    let known = [
        (PRINT, "print"),
        (SCHED_SWITCH, "sched_switch"),
        (SCHED_WAKEUP, "sched_wakeup"),
        (SCHED_WAKING, "sched_waking"),
        (SCHED_WAKEUP_NEW, "sched_wakeup_new"),
        (GENERIC, "generic"),
        (SCHED_PI_SETPRIO, "sched_pi_setprio"),
        (SCHED_MIGRATE_TASK, "sched_migrate_task"),
    ];
    let present: Vec<_> = known.iter().filter(|(n, _)| e.has(*n)).collect();
    assert_eq!(present.len(), 1, "exactly one oneof member: {e:?}");
    let allowed = [TIMESTAMP, PID, COMMON_FLAGS, present[0].0];
    assert!(e.0.iter().all(|(k, _)| allowed.contains(k)), "unexpected field in {e:?}");
    present[0].1
}

/// Decoded output: packets, and the events of every bundle with their CPU.
struct Out {
    bytes: Vec<u8>,
}

impl Out {
    fn new(trace: &Trace) -> Self {
        let mut bytes = Vec::new();
        write_perfetto(trace, &mut bytes).unwrap();
        Out { bytes }
    }
    fn packets(&self) -> Vec<M<'_>> {
        let top = decode(&self.bytes);
        assert!(top.0.iter().all(|(k, _)| *k == n::trace::PACKET), "Trace has only packets");
        top.ms(n::trace::PACKET)
    }
    /// (bundle cpu, event) in file order.
    fn events(&self) -> Vec<(u64, M<'_>)> {
        let mut out = Vec::new();
        for p in self.packets() {
            if p.has(n::packet::FTRACE_EVENTS) {
                let b = p.m(n::packet::FTRACE_EVENTS);
                let cpu = b.u(n::bundle::CPU);
                out.extend(b.ms(n::bundle::EVENT).into_iter().map(|e| (cpu, e)));
            }
        }
        out
    }
}

// ---------------------------------------------------------------- fixtures

/// Every event kind once or more, on CPUs 0 and 3, times increasing.
fn every_kind_trace() -> Trace {
    let t = table(
        &[(99, "app", 99), (100, "worker-a", 99), (101, "my app [x]", 99), (200, "waker", 200), (7, "kworker/0:1H", 7)],
        &["efd0", "flag", "mutex"],
    );
    let (r, rp) = (PrevState::Running { preempt: false }, PrevState::Running { preempt: true });
    let (s, d, x) = (PrevState::Sleeping, PrevState::DiskSleep, PrevState::Dead);
    let kinds = [
        (200, 0, EventKind::SchedWaking { pid: 100, prio: 120, target_cpu: 3 }),
        (200, 0, EventKind::Ttwu { pid: 100, path: WakePath::Activate, cpu: 3 }),
        (200, 0, EventKind::SchedMigrateTask { pid: 100, prio: 120, orig_cpu: 1, dest_cpu: 3 }),
        (200, 0, EventKind::SchedWakeIdleWithoutIpi { cpu: 3 }),
        (0, 3, EventKind::SchedWakeup { pid: 100, prio: 120, target_cpu: 3 }),
        (0, 3, EventKind::WakeupPreempt { wakee: 100, curr: 0, preempt: true, reason: PreemptReason::Idle }),
        (0, 3, EventKind::Resched { cpu: 3, ipi: false }),
        (0, 3, EventKind::SchedSwitch { prev_pid: 0, prev_prio: 120, prev_state: r, next_pid: 100, next_prio: 120 }),
        (200, 0, EventKind::SchedWakeupNew { pid: 101, prio: 139, target_cpu: 0 }),
        (100, 3, EventKind::User { pid: 100, op: UserOp::WaitDone { obj: 0 } }),
        (200, 0, EventKind::User { pid: 101, op: UserOp::LoopEnd { n: 3 } }),
        (100, 3, EventKind::SchedPiSetprio { pid: 7, oldprio: 100, newprio: -1 }),
        (100, 3, EventKind::SchedStatRuntime { pid: 100, runtime: 1_234_567 }),
        (100, 3, EventKind::Delayed { pid: 100, what: DelayedWhat::Delayed, lag: -17 }),
        (200, 0, EventKind::LbMigrate { pid: 101, src_cpu: 0, dst_cpu: 3, kind: BalanceKind::Active, delayed: false }),
        (200, 0, EventKind::ActiveBalanceQueued { src_cpu: 0, dst_cpu: 3 }),
        (100, 3, EventKind::SchedSwitch { prev_pid: 100, prev_prio: 120, prev_state: s, next_pid: 7, next_prio: 100 }),
        (7, 3, EventKind::SchedSwitch { prev_pid: 7, prev_prio: 100, prev_state: rp, next_pid: 101, next_prio: 139 }),
        (
            101,
            3,
            EventKind::SchedSwitch { prev_pid: 101, prev_prio: 139, prev_state: d, next_pid: 200, next_prio: 120 },
        ),
        (200, 3, EventKind::SchedSwitch { prev_pid: 200, prev_prio: 120, prev_state: x, next_pid: 0, next_prio: 120 }),
    ];
    spaced_trace(t, &kinds)
}

// ---------------------------------------------------------------- tests

#[test]
fn wire_encoding_of_scalars() {
    let mut pb = Pb::default();
    pb.uint(1, 300);
    pb.int(2, -1);
    pb.str(3, "hi");
    pb.msg(4, |m| m.uint(1, 1));
    let mut want = vec![0x08, 0xac, 0x02, 0x10];
    want.extend([0xff; 9]);
    want.push(0x01);
    want.extend([0x1a, 2, b'h', b'i', 0x22, 2, 0x08, 1]);
    assert_eq!(pb.0, want);
    // a field number above 15 takes a two-byte key; an embedded message of 200 bytes a two-byte length
    let mut pb = Pb::default();
    pb.msg(491, |m| m.str(1, &"x".repeat(197)));
    assert_eq!(&pb.0[..5], &[0xda, 0x1e, 0xc8, 0x01, 0x0a]);
    assert_eq!(pb.0.len(), 2 + 2 + 200);
}

#[test]
fn prev_state_is_the_kernel_report_value() {
    assert_eq!(prev_state(PrevState::Running { preempt: false }), 0);
    assert_eq!(prev_state(PrevState::Running { preempt: true }), 0x100);
    assert_eq!(prev_state(PrevState::Sleeping), 1);
    assert_eq!(prev_state(PrevState::DiskSleep), 2);
    assert_eq!(prev_state(PrevState::Dead), 0x10);
}

#[test]
fn common_flags_from_latency_chars() {
    assert_eq!(common_flags(b"....."), 0);
    assert_eq!(common_flags(b"d..2."), 0x01);
    assert_eq!(common_flags(b"dNh2."), 0x01 | 0x04 | 0x20 | 0x08);
    assert_eq!(common_flags(b"Dns1."), 0x01 | 0x80 | 0x04 | 0x10);
    assert_eq!(common_flags(b"bpH.."), 0x80 | 0x20 | 0x08 | 0x10);
    assert_eq!(common_flags(b".Lz.."), 0x02 | 0x20 | 0x40);
    assert_eq!(common_flags(b".BZ.."), 0x04 | 0x02 | 0x20 | 0x40 | 0x08);
}

#[test]
fn header_packets() {
    let trace = every_kind_trace();
    let out = Out::new(&trace);
    let packets = out.packets();
    for p in &packets {
        assert_eq!(p.u(n::packet::TRUSTED_PACKET_SEQUENCE_ID), u64::from(SEQUENCE_ID));
    }
    let first = &packets[0];
    assert_eq!(first.u(n::packet::SEQUENCE_FLAGS), 1);
    assert_eq!(first.u(n::packet::FIRST_PACKET_ON_SEQUENCE), 1);
    let si = first.m(n::packet::SYSTEM_INFO);
    assert_eq!(si.u(n::system_info::NUM_CPUS), 4);
    let uts = si.m(n::system_info::UTSNAME);
    assert_eq!(uts.s(n::system_info::UTS_SYSNAME), "Linux");
    assert_eq!(uts.s(n::system_info::UTS_RELEASE), "6.12.0-schedlab");
    assert_eq!(uts.s(n::system_info::UTS_MACHINE), "x86_64");

    let second = &packets[1];
    assert_eq!(second.u(n::packet::TIMESTAMP), 1_000_000_000);
    let pt = second.m(n::packet::PROCESS_TREE);
    let procs: Vec<(i64, &str)> = pt
        .ms(n::process_tree::PROCESSES)
        .iter()
        .map(|p| {
            assert_eq!(p.u(n::process_tree::PROCESS_CMDLINE_IS_COMM), 1);
            (p.i(n::process_tree::PROCESS_PID), p.s(n::process_tree::PROCESS_CMDLINE))
        })
        .collect();
    assert_eq!(procs, [(7, "kworker/0:1H"), (99, "app"), (200, "waker")]);
    let threads: Vec<(i64, i64, &str)> = pt
        .ms(n::process_tree::THREADS)
        .iter()
        .map(|t| {
            (t.i(n::process_tree::THREAD_TID), t.i(n::process_tree::THREAD_TGID), t.s(n::process_tree::THREAD_NAME))
        })
        .collect();
    assert_eq!(
        threads,
        [(7, 7, "kworker/0:1H"), (99, 99, "app"), (100, 99, "worker-a"), (101, 99, "my app [x]"), (200, 200, "waker")]
    );
    // the rest are bundles
    assert!(packets[2..].iter().all(|p| p.has(n::packet::FTRACE_EVENTS)));
}

#[test]
fn counts_per_kind_and_cpu() {
    let trace = every_kind_trace();
    let out = Out::new(&trace);
    let mut got: BTreeMap<(&str, u64), usize> = BTreeMap::new();
    for (cpu, e) in out.events() {
        *got.entry((kind_name(&e), cpu)).or_default() += 1;
    }
    let want: BTreeMap<(&str, u64), usize> = [
        (("sched_waking", 0), 1),
        (("sched_migrate_task", 0), 1),
        (("generic", 0), 1),
        (("sched_wakeup_new", 0), 1),
        (("print", 0), 4),
        (("sched_wakeup", 3), 1),
        (("print", 3), 4),
        (("sched_switch", 3), 5),
        (("sched_pi_setprio", 3), 1),
        (("generic", 3), 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    assert_eq!(got.values().sum::<usize>(), trace.events.len());
}

#[test]
fn exact_field_values() {
    let trace = every_kind_trace();
    let out = Out::new(&trace);
    let events = out.events();
    let by_ts = |ts: u64| events.iter().find(|(_, e)| e.u(n::event::TIMESTAMP) == ts).map(|(c, e)| (*c, e)).unwrap();
    let ts = |i: u64| 1_000_000_000 + i * 1_500_000;

    // sched_waking from the waker on CPU 0
    let (cpu, e) = by_ts(ts(0));
    assert_eq!((cpu, e.u(n::event::PID), e.u(n::event::COMMON_FLAGS)), (0, 200, 0x2d));
    let w = e.m(n::event::SCHED_WAKING);
    assert_eq!(
        (w.s(n::wake::COMM), w.i(n::wake::PID), w.i(n::wake::PRIO), w.i(n::wake::SUCCESS), w.i(n::wake::TARGET_CPU)),
        ("worker-a", 100, 120, 1, 3)
    );
    // swapper/3 -> worker-a, then R+ and D and X
    let s = by_ts(ts(7)).1.m(n::event::SCHED_SWITCH);
    assert_eq!(by_ts(ts(7)).1.u(n::event::PID), 0);
    assert_eq!(
        (s.s(n::switch::PREV_COMM), s.i(n::switch::PREV_PID), s.i(n::switch::PREV_STATE), s.s(n::switch::NEXT_COMM)),
        ("swapper/3", 0, 0, "worker-a")
    );
    assert_eq!((s.i(n::switch::PREV_PRIO), s.i(n::switch::NEXT_PID), s.i(n::switch::NEXT_PRIO)), (120, 100, 120));
    let states: Vec<i64> =
        (16..20).map(|i| by_ts(ts(i)).1.m(n::event::SCHED_SWITCH).i(n::switch::PREV_STATE)).collect();
    assert_eq!(states, [0x1, 0x100, 0x2, 0x10]);
    assert_eq!(by_ts(ts(19)).1.m(n::event::SCHED_SWITCH).s(n::switch::NEXT_COMM), "swapper/3");
    // migrate, pi_setprio with a negative prio (ten-byte varint)
    let m = by_ts(ts(2)).1.m(n::event::SCHED_MIGRATE_TASK);
    assert_eq!((m.i(n::migrate::PID), m.i(n::migrate::ORIG_CPU), m.i(n::migrate::DEST_CPU)), (100, 1, 3));
    let pi = by_ts(ts(11)).1.m(n::event::SCHED_PI_SETPRIO);
    assert_eq!(
        (pi.s(n::pi_setprio::COMM), pi.i(n::pi_setprio::PID), pi.i(n::pi_setprio::OLDPRIO)),
        ("kworker/0:1H", 7, 100)
    );
    assert_eq!(pi.i(n::pi_setprio::NEWPRIO) as i32, -1);
    // generic sched_stat_runtime
    let g = by_ts(ts(12)).1.m(n::event::GENERIC);
    assert_eq!(g.s(n::generic::EVENT_NAME), "sched_stat_runtime");
    let fields: Vec<(&str, V)> =
        g.ms(n::generic::FIELD).iter().map(|fl| (fl.s(n::generic::FIELD_NAME), fl.0[1].1)).collect();
    assert_eq!(fields[0], ("comm", V::Bytes(b"worker-a")));
    assert_eq!(fields[1], ("pid", V::Varint(100)));
    assert_eq!(fields[2], ("runtime", V::Varint(1_234_567)));
    assert_eq!(g.ms(n::generic::FIELD)[2].0[1].0, n::generic::FIELD_UINT_VALUE);
    // prints: atrace instant with the context task's tgid and the ftrace text
    let buf = |i: u64| by_ts(ts(i)).1.m(n::event::PRINT).s(n::print::BUF).to_string();
    assert_eq!(buf(1), "I|200|schedlab_ttwu: comm=worker-a pid=100 path=activate cpu=3");
    assert_eq!(
        buf(5),
        "I|0|schedlab_wakeup_preempt: comm=worker-a pid=100 curr_comm=swapper/3 curr_pid=0 preempt=1 reason=idle"
    );
    assert_eq!(buf(9), "I|99|schedlab wait_done obj=efd0");
    assert_eq!(buf(10), "I|200|schedlab loop_end n=3 pid=101");
    assert_eq!(buf(13), "I|99|schedlab_delayed: comm=worker-a pid=100 what=delayed lag=-17");
}

#[test]
fn print_text_matches_ftrace_lines() {
    let trace = every_kind_trace();
    let out = Out::new(&trace);
    let mut n = 0;
    for (_, e) in out.events() {
        if !e.has(n::event::PRINT) {
            continue;
        }
        let buf = e.m(n::event::PRINT).s(n::print::BUF);
        assert!(buf.starts_with("I|"), "{buf:?}");
        let text = buf.splitn(3, '|').nth(2).unwrap();
        let src = trace.events.iter().find(|x| x.ts == e.u(n::event::TIMESTAMP)).unwrap();
        let line = format_line(&trace.table, src, &WriteOptions::default());
        let tail = if matches!(src.kind, EventKind::User { .. }) {
            format!("tracing_mark_write: {text}")
        } else {
            text.to_string()
        };
        assert!(line.ends_with(&format!(": {tail}")), "{line:?} vs {buf:?}");
        n += 1;
    }
    assert_eq!(n, 8);
}

#[test]
fn bundles_are_per_cpu_sorted_and_windowed() {
    // 3 CPUs, 10 000 events emitted slightly out of time order; every bundle
    // holds one CPU's events in time order, and no event is lost or duplicated.
    let t = table(&[(10, "a", 10)], &[]);
    let events: Vec<Event> = (0..10_000u64)
        .map(|i| {
            let ts = 1_000 * i + if i % 7 == 3 { 2_500 } else { 0 };
            ev(ts, (i % 3) as u32, 10, b"d..2.", EventKind::Resched { cpu: (i % 3) as u32, ipi: i % 2 == 0 })
        })
        .collect();
    let trace = Trace { table: t, nr_cpus: 3, events };
    let out = Out::new(&trace);
    let cpu_of: BTreeMap<u64, u32> = trace.events.iter().map(|e| (e.ts, e.cpu)).collect();
    let mut seen = Vec::new();
    let mut bundles = 0;
    for p in out.packets().iter().filter(|p| p.has(n::packet::FTRACE_EVENTS)) {
        bundles += 1;
        let b = p.m(n::packet::FTRACE_EVENTS);
        let cpu = b.u(n::bundle::CPU);
        let ts: Vec<u64> = b.ms(n::bundle::EVENT).iter().map(|e| e.u(n::event::TIMESTAMP)).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "bundle for cpu {cpu} sorted");
        for t in ts {
            assert_eq!(u64::from(cpu_of[&t]), cpu);
            seen.push(t);
        }
    }
    assert_eq!(bundles, 3 * 10_000usize.div_ceil(WINDOW));
    seen.sort_unstable();
    let mut want: Vec<u64> = trace.events.iter().map(|e| e.ts).collect();
    want.sort_unstable();
    assert_eq!(seen, want);
}

#[test]
fn empty_trace_has_header_packets_only() {
    let trace = Trace { nr_cpus: 2, ..Default::default() };
    let out = Out::new(&trace);
    let packets = out.packets();
    assert_eq!(packets.len(), 2);
    assert_eq!(packets[1].u(n::packet::TIMESTAMP), 0);
    assert!(!packets[1].m(n::packet::PROCESS_TREE).has(n::process_tree::PROCESSES));
}

/// Our own trace read back: every event, with its time, CPU, context and
/// fields, as the ftrace text reader gives it (flags are not carried).
#[test]
fn a_written_trace_reads_back_event_for_event() {
    let trace = every_kind_trace();
    let mut bytes = Vec::new();
    write_perfetto(&trace, &mut bytes).unwrap();
    let mut text = Vec::new();
    let stats = super::perfetto_to_text(&bytes[..], &mut text).unwrap();
    assert_eq!(stats.events as usize, trace.events.len());
    let text = String::from_utf8(text).unwrap();
    let opts = crate::ftrace::ParseOptions { objects: trace.table.objects.clone() };
    let back = crate::ftrace::parse_ftrace_with("t.pftrace", &text, &opts).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let key = |e: &Event| (e.ts, e.cpu, e.ctx_pid, e.kind);
    let mut want: Vec<_> = trace.events.iter().map(key).collect();
    let mut got: Vec<_> = back.trace.events.iter().map(key).collect();
    want.sort_by_key(|k| (k.0, k.1));
    got.sort_by_key(|k| (k.0, k.1));
    assert_eq!(got, want);
    assert_eq!(back.trace.table.comm(101), "my app [x]");
}

#[test]
fn malformed_perfetto_bytes_are_located_errors() {
    let mut bytes = Vec::new();
    write_perfetto(&every_kind_trace(), &mut bytes).unwrap();
    // Cut inside the last packet.
    let e = super::perfetto_to_text(&bytes[..bytes.len() - 3], &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("run past the end of the file"), "{e}");
    // A length that runs past its message inside a packet.
    let mut bad = [0x0a, 0x03, 0x0a, 0x7f, 0x00];
    let e = super::perfetto_to_text(&bad[..], &mut Vec::new()).unwrap_err();
    assert_eq!(e.offset, 2, "{e}");
    assert!(e.message.contains("runs past the message"), "{e}");
    bad[0] = 0x12;
    let e = super::perfetto_to_text(&bad[..], &mut Vec::new()).unwrap_err();
    assert!(e.to_string().starts_with("byte 0: expected a TracePacket"), "{e}");
    // A packet claiming more than the limit is refused before allocating.
    let huge = [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f];
    let e = super::perfetto_to_text(&huge[..], &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("more than the"), "{e}");
}

/// Protobuf by hand: a varint, a varint field and a length-delimited one.
fn varint(mut x: u64, out: &mut Vec<u8>) {
    loop {
        let b = (x & 0x7f) as u8;
        x >>= 7;
        out.push(if x == 0 { b } else { b | 0x80 });
        if x == 0 {
            return;
        }
    }
}

fn vi(field: u32, v: u64, out: &mut Vec<u8>) {
    varint(u64::from(field) << 3, out);
    varint(v, out);
}

fn ld(field: u32, body: &[u8], out: &mut Vec<u8>) {
    varint(u64::from(field) << 3 | 2, out);
    varint(body.len() as u64, out);
    out.extend(body);
}

/// A bundle `traced` flagged with `lost_events` becomes a gap.
#[test]
fn a_lost_events_bundle_is_a_gap() {
    let mut sw = Vec::new();
    ld(1, b"a", &mut sw);
    vi(2, 5, &mut sw);
    vi(3, 120, &mut sw);
    vi(4, 1, &mut sw);
    ld(5, b"swapper/1", &mut sw);
    vi(6, 0, &mut sw);
    vi(7, 120, &mut sw);
    let mut ev = Vec::new();
    vi(1, 1_000, &mut ev);
    vi(2, 5, &mut ev);
    ld(4, &sw, &mut ev);
    let mut bundle = Vec::new();
    vi(1, 1, &mut bundle);
    vi(3, 1, &mut bundle);
    ld(2, &ev, &mut bundle);
    let mut packet = Vec::new();
    ld(1, &bundle, &mut packet);
    let mut trace = Vec::new();
    ld(1, &packet, &mut trace);
    let mut text = Vec::new();
    super::perfetto_to_text(&trace[..], &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let parsed = crate::ftrace::parse_ftrace_with("t", &text, &Default::default()).unwrap();
    assert_eq!(parsed.stats.lost.len(), 1, "{text}");
    assert_eq!(parsed.stats.lost[0].cpu, 1);
    assert_eq!(parsed.trace.events.len(), 1);
}

/// A trace of one packet holding one bundle for `cpu` whose `compact_sched` is `body`.
fn compact_trace(cpu: u64, body: &[u8]) -> Vec<u8> {
    let mut bundle = Vec::new();
    vi(1, cpu, &mut bundle);
    ld(4, body, &mut bundle);
    let (mut packet, mut trace) = (Vec::new(), Vec::new());
    ld(1, &bundle, &mut packet);
    ld(1, &packet, &mut trace);
    trace
}

fn packed(field: u32, values: &[u64], out: &mut Vec<u8>) {
    let mut body = Vec::new();
    for &v in values {
        varint(v, &mut body);
    }
    ld(field, &body, out);
}

/// `compact_sched` as traced writes it: switch and waking arrays, times
/// absolute then deltas, comms interned. A switch's previous task is the
/// CPU's task from the switch before (the first one has none and is
/// skipped); a waking's waker is the task current at its time.
#[test]
fn compact_sched_bundles_decode_into_switches_and_wakings() {
    let mut c = Vec::new();
    // Switches at 1000 (→ a:5), 1500 (a sleeps → idle), 1800 (→ a:5).
    packed(1, &[1000, 500, 300], &mut c);
    packed(2, &[0, 1, 0], &mut c);
    packed(3, &[5, 0, 5], &mut c);
    packed(4, &[120, 120, 120], &mut c);
    ld(5, b"a", &mut c);
    ld(5, b"swapper/0", &mut c);
    packed(6, &[0, 1, 0], &mut c);
    // a:5 woken at 1700 onto CPU 0, by the idle task then current.
    packed(7, &[1700], &mut c);
    packed(8, &[5], &mut c);
    packed(9, &[0], &mut c);
    packed(10, &[120], &mut c);
    packed(11, &[0], &mut c);
    let mut text = Vec::new();
    let stats = super::perfetto_to_text(&compact_trace(0, &c)[..], &mut text).unwrap();
    assert_eq!(stats.skipped.get(&0), Some(&1), "the first switch has no known previous task");
    let text = String::from_utf8(text).unwrap();
    let t = crate::ftrace::parse_ftrace_with("t", &text, &Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .trace;
    let got: Vec<_> = t.events.iter().map(|e| (e.ts, e.ctx_pid, e.kind)).collect();
    assert_eq!(
        got,
        vec![
            (
                1500,
                5,
                EventKind::SchedSwitch {
                    prev_pid: 5,
                    prev_prio: 120,
                    prev_state: PrevState::Sleeping,
                    next_pid: 0,
                    next_prio: 120
                }
            ),
            (1700, 0, EventKind::SchedWaking { pid: 5, prio: 120, target_cpu: 0 }),
            (
                1800,
                0,
                EventKind::SchedSwitch {
                    prev_pid: 0,
                    prev_prio: 120,
                    prev_state: PrevState::Running { preempt: false },
                    next_pid: 5,
                    next_prio: 120
                }
            ),
        ],
        "{text}"
    );
    assert_eq!(t.table.comm(5), "a");
    // Arrays of different lengths are a located error.
    let mut bad = Vec::new();
    packed(1, &[1000, 500], &mut bad);
    packed(3, &[5], &mut bad);
    let e = super::perfetto_to_text(&compact_trace(0, &bad)[..], &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("2 switch timestamps but arrays of other lengths"), "{e}");
    let mut bad = Vec::new();
    packed(1, &[1000], &mut bad);
    packed(2, &[0], &mut bad);
    packed(3, &[5], &mut bad);
    packed(4, &[120], &mut bad);
    packed(6, &[3], &mut bad);
    let e = super::perfetto_to_text(&compact_trace(0, &bad)[..], &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("comm index 3 beyond the intern table of 0"), "{e}");
}

proptest::proptest! {
    /// Any bytes, and any damage to a real trace: an answer or an error,
    /// never a panic or a hang.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let _ = super::perfetto_to_text(&bytes[..], &mut Vec::new());
    }

    #[test]
    fn damaged_traces_never_panic(flips in proptest::collection::vec((0usize..4096, 1u8..=255), 1..8), cut in 0usize..4096) {
        let mut bytes = Vec::new();
        write_perfetto(&every_kind_trace(), &mut bytes).unwrap();
        for (at, x) in flips {
            let n = bytes.len();
            bytes[at % n] ^= x;
        }
        bytes.truncate(bytes.len().saturating_sub(cut % 64));
        let _ = super::perfetto_to_text(&bytes[..], &mut Vec::new());
    }
}
