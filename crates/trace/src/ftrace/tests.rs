use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::event::*;
use crate::testing::{flagged as ev, spaced_trace, table};

const FL: [u8; 5] = *b"d..2.";

fn line(t: &TaskTable, e: Event) -> String {
    format_line(t, &e, &WriteOptions::default())
}

fn to_text(trace: &Trace, opts: &WriteOptions) -> String {
    let mut out = Vec::new();
    write_ftrace_with(trace, &mut out, opts).unwrap();
    String::from_utf8(out).unwrap()
}

// ---------------------------------------------------------------- golden lines

#[test]
fn header_matches_kernel() {
    // ecosystem.md §3.1, copied from a 6.18 kernel.
    let expected = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 3614/3614   #P:2
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";
    assert_eq!(header(3614, 2, false), expected);
    let tgid = header(1, 4, true);
    assert!(tgid.contains("#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n"), "{tgid}");
    assert!(tgid.contains("#                                          _-----=> irqs-off/BH-disabled\n"), "{tgid}");
}

#[test]
fn golden_sched_switch_to_idle() {
    // kernel-model.md §I.1; timestamp truncated, not rounded.
    let t = table(&[(1234, "worker", 1234)], &[]);
    let e = ev(
        812_004_113_999,
        5,
        1234,
        &FL,
        EventKind::SchedSwitch {
            prev_pid: 1234,
            prev_prio: 120,
            prev_state: PrevState::Sleeping,
            next_pid: 0,
            next_prio: 120,
        },
    );
    assert_eq!(
        line(&t, e),
        "          worker-1234    [005] d..2.   812.004113: sched_switch: prev_comm=worker prev_pid=1234 prev_prio=120 prev_state=S ==> next_comm=swapper/5 next_pid=0 next_prio=120"
    );
}

#[test]
fn golden_kernel_lines() {
    let t = table(&[(4533, "sleep", 4533), (4531, "bash", 4531), (4338, "dpkg", 4338)], &[]);
    let sw = EventKind::SchedSwitch {
        prev_pid: 0,
        prev_prio: 120,
        prev_state: PrevState::Running { preempt: false },
        next_pid: 4533,
        next_prio: 120,
    };
    let mig = EventKind::SchedMigrateTask { pid: 4533, prio: 120, orig_cpu: 1, dest_cpu: 0 };
    let preempt = EventKind::SchedSwitch {
        prev_pid: 4531,
        prev_prio: 120,
        prev_state: PrevState::Running { preempt: true },
        next_pid: 4338,
        next_prio: 98,
    };
    let cases = [
        (
            ev(320_447_799_000, 0, 0, &FL, sw),
            "          <idle>-0       [000] d..2.   320.447799: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sleep next_pid=4533 next_prio=120",
        ),
        (
            ev(320_447_990_123, 0, 4533, b"dN.5.", EventKind::SchedWaking { pid: 4531, prio: 120, target_cpu: 0 }),
            "           sleep-4533    [000] dN.5.   320.447990: sched_waking: comm=bash pid=4531 prio=120 target_cpu=000",
        ),
        (
            ev(320_447_734_000, 1, 4338, b"d.h2.", mig),
            "            dpkg-4338    [001] d.h2.   320.447734: sched_migrate_task: comm=sleep pid=4533 prio=120 orig_cpu=1 dest_cpu=0",
        ),
        (
            ev(5_000_001_000, 12, 4531, &FL, preempt),
            "            bash-4531    [012] d..2.     5.000001: sched_switch: prev_comm=bash prev_pid=4531 prev_prio=120 prev_state=R+ ==> next_comm=dpkg next_pid=4338 next_prio=98",
        ),
        (
            ev(0, 3, 4531, b"d..3.", EventKind::SchedWakeupNew { pid: 4533, prio: 120, target_cpu: 17 }),
            "            bash-4531    [003] d..3.     0.000000: sched_wakeup_new: comm=sleep pid=4533 prio=120 target_cpu=017",
        ),
        (
            ev(461_135_012_000, 1, 4533, &FL, EventKind::SchedStatRuntime { pid: 4533, runtime: 112093 }),
            "           sleep-4533    [001] d..2.   461.135012: sched_stat_runtime: comm=sleep pid=4533 runtime=112093 [ns]",
        ),
        (
            ev(1_000_000, 2, 4531, b"d..3.", EventKind::SchedPiSetprio { pid: 4338, oldprio: 120, newprio: 49 }),
            "            bash-4531    [002] d..3.     0.001000: sched_pi_setprio: comm=dpkg pid=4338 oldprio=120 newprio=49",
        ),
        (
            ev(123_456_789_000_000, 2, 4531, b"d..4.", EventKind::SchedWakeIdleWithoutIpi { cpu: 7 }),
            "            bash-4531    [002] d..4. 123456.789000: sched_wake_idle_without_ipi: cpu=7",
        ),
        // Unknown comm.
        (
            ev(1_000, 1, 77, b"d.h3.", EventKind::SchedWakeup { pid: 99, prio: 120, target_cpu: 1 }),
            "           <...>-77      [001] d.h3.     0.000001: sched_wakeup: comm=<...> pid=99 prio=120 target_cpu=001",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(line(&t, e), want);
    }
}

#[test]
fn golden_tgid_and_ns_options() {
    let t = table(&[(8697, "periodic", 8696)], &[]);
    let e = ev(461_135_012_345, 1, 8697, &FL, EventKind::SchedStatRuntime { pid: 8697, runtime: 112093 });
    let o = WriteOptions { record_tgid: true, ns_timestamps: false };
    assert_eq!(
        format_line(&t, &e, &o),
        "        periodic-8697    (   8696) [001] d..2.   461.135012: sched_stat_runtime: comm=periodic pid=8697 runtime=112093 [ns]"
    );
    let idle = ev(0, 0, 0, &FL, EventKind::SchedWakeIdleWithoutIpi { cpu: 1 });
    assert_eq!(
        format_line(&t, &idle, &o),
        "          <idle>-0       (-------) [000] d..2.     0.000000: sched_wake_idle_without_ipi: cpu=1"
    );
    let o = WriteOptions { record_tgid: false, ns_timestamps: true };
    assert_eq!(
        format_line(&t, &e, &o),
        "        periodic-8697    [001] d..2.   461.135012345: sched_stat_runtime: comm=periodic pid=8697 runtime=112093 [ns]"
    );
}

#[test]
fn golden_decision_events_and_markers() {
    let t = table(&[(1234, "worker", 1234), (1300, "waker", 1234)], &["ping", "pong"]);
    let cases = [
        (
            ev(1_000, 2, 1300, b"d..2.", EventKind::Ttwu { pid: 1234, path: WakePath::Runnable { delayed: true }, cpu: 6 }),
            "           waker-1300    [002] d..2.     0.000001: schedlab_ttwu: comm=worker pid=1234 path=runnable_delayed cpu=6",
        ),
        (
            ev(2_000, 6, 1234, b"d..2.", EventKind::Delayed { pid: 1234, what: DelayedWhat::Delayed, lag: -4500 }),
            "          worker-1234    [006] d..2.     0.000002: schedlab_delayed: comm=worker pid=1234 what=delayed lag=-4500",
        ),
        (
            ev(3_000, 2, 1300, b"d..3.", EventKind::Resched { cpu: 6, ipi: true }),
            "           waker-1300    [002] d..3.     0.000003: schedlab_resched: cpu=6 ipi=1",
        ),
        (
            ev(
                4_000,
                6,
                0,
                b"dNh3.",
                EventKind::WakeupPreempt { wakee: 1234, curr: 0, preempt: true, reason: PreemptReason::Idle },
            ),
            "          <idle>-0       [006] dNh3.     0.000004: schedlab_wakeup_preempt: comm=worker pid=1234 curr_comm=swapper/6 curr_pid=0 preempt=1 reason=idle",
        ),
        (
            ev(5_000, 2, 1300, b"...1.", EventKind::User { pid: 1300, op: UserOp::Signal { obj: 1 } }),
            "           waker-1300    [002] ...1.     0.000005: tracing_mark_write: schedlab signal obj=pong",
        ),
        (
            ev(6_000, 6, 1234, b"...1.", EventKind::User { pid: 1234, op: UserOp::LoopEnd { n: 42 } }),
            "          worker-1234    [006] ...1.     0.000006: tracing_mark_write: schedlab loop_end n=42",
        ),
        (
            ev(7_000, 6, 1300, b"...1.", EventKind::User { pid: 1234, op: UserOp::WaitDone { obj: 0 } }),
            "           waker-1300    [006] ...1.     0.000007: tracing_mark_write: schedlab wait_done obj=ping pid=1234",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(line(&t, e), want);
        let opts = ParseOptions { objects: t.objects.clone() };
        let back = parse_ftrace_with("t", want, &opts).unwrap();
        assert_eq!(back.trace.events, vec![e], "{want}");
    }
    assert_eq!(user_marker_text(&t, &UserOp::PollDone { obj: 0 }), "schedlab poll_done obj=ping");
    assert_eq!(user_marker_text(&t, &UserOp::Lock { obj: 9 }), "schedlab lock obj=obj9");
}

// ---------------------------------------------------------------- round trip

fn every_kind_trace() -> Trace {
    let t = table(
        &[(100, "worker-a", 100), (101, "my app [x]", 100), (200, "waker", 200), (7, "kworker/0:1H", 7)],
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
        (100, 3, EventKind::User { pid: 100, op: UserOp::Post { obj: 1 } }),
        (100, 3, EventKind::User { pid: 100, op: UserOp::Lock { obj: 2 } }),
        (100, 3, EventKind::User { pid: 100, op: UserOp::Unlock { obj: 2 } }),
        (200, 0, EventKind::User { pid: 200, op: UserOp::PollDone { obj: 1 } }),
        (200, 0, EventKind::User { pid: 200, op: UserOp::Signal { obj: 0 } }),
        (200, 0, EventKind::User { pid: 101, op: UserOp::LoopEnd { n: 3 } }),
        (100, 3, EventKind::SchedPiSetprio { pid: 7, oldprio: 100, newprio: -1 }),
        (100, 3, EventKind::SchedStatRuntime { pid: 100, runtime: 1_234_567 }),
        (100, 3, EventKind::Delayed { pid: 100, what: DelayedWhat::Delayed, lag: -17 }),
        (100, 3, EventKind::SchedSwitch { prev_pid: 100, prev_prio: 120, prev_state: s, next_pid: 7, next_prio: 100 }),
        (7, 3, EventKind::Delayed { pid: 100, what: DelayedWhat::DequeuedAtPick, lag: 0 }),
        (7, 3, EventKind::Delayed { pid: 100, what: DelayedWhat::Requeued, lag: 99 }),
        (7, 3, EventKind::Ttwu { pid: 100, path: WakePath::Runnable { delayed: false }, cpu: 3 }),
        (7, 3, EventKind::Ttwu { pid: 100, path: WakePath::Wakelist, cpu: 3 }),
        (7, 3, EventKind::WakeupPreempt { wakee: 101, curr: 7, preempt: false, reason: PreemptReason::NotPicked }),
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

fn comms(t: &TaskTable) -> BTreeMap<Pid, String> {
    t.tasks.iter().map(|(p, i)| (*p, i.comm.clone())).collect()
}

#[test]
fn round_trip_every_kind() {
    let trace = every_kind_trace();
    for opts in [
        WriteOptions::default(),
        WriteOptions { ns_timestamps: true, record_tgid: false },
        WriteOptions { ns_timestamps: false, record_tgid: true },
    ] {
        let text = to_text(&trace, &opts);
        let parsed = parse_ftrace_with("rt.trace", &text, &ParseOptions::default()).unwrap();
        assert_eq!(parsed.trace.events, trace.events, "{opts:?}\n{text}");
        assert_eq!(comms(&parsed.trace.table), comms(&trace.table));
        assert_eq!(parsed.trace.table.objects, trace.table.objects);
        assert_eq!(parsed.trace.nr_cpus, 4);
        assert_eq!(parsed.stats.events, trace.events.len());
        assert_eq!(parsed.stats.skipped_lines, 0);
        assert_eq!(parsed.stats.comment_lines, 12);
        if opts.record_tgid {
            // Every task here emits at least one event, so the column gives all tgids.
            assert_eq!(parsed.trace.table, trace.table);
        }
    }
}

prop_compose! {
    fn arb_comm()(s in "[a-zA-Z0-9_/:. \\[\\]()<>-]{0,14}", c in "[a-zA-Z0-9_]") -> String {
        // Comms never start or end with a space in this test (the prefix is
        // right-aligned and trimmed) and never contain `=`.
        format!("{c}{}", s.trim_end())
    }
}

fn arb_flags() -> impl Strategy<Value = [u8; 5]> {
    (
        prop::sample::select(b"dDbX.".to_vec()),
        prop::sample::select(b"Nnp.".to_vec()),
        prop::sample::select(b"ZzHhs.".to_vec()),
        prop::sample::select(b"0123456789abcdef.".to_vec()),
        prop::sample::select(b"0123f.".to_vec()),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e])
}

fn arb_state() -> impl Strategy<Value = PrevState> {
    prop_oneof![
        any::<bool>().prop_map(|preempt| PrevState::Running { preempt }),
        Just(PrevState::Sleeping),
        Just(PrevState::DiskSleep),
        Just(PrevState::Dead),
    ]
}

fn arb_kind(pids: Vec<Pid>, nobj: u32) -> impl Strategy<Value = EventKind> {
    let pid = prop::sample::select(pids);
    let cpu = 0u32..300;
    let prio = -1i32..140;
    let obj = 0..nobj;
    let reason = prop::sample::select(PreemptReason::ALL.to_vec());
    let path = prop_oneof![
        any::<bool>().prop_map(|delayed| WakePath::Runnable { delayed }),
        Just(WakePath::Activate),
        Just(WakePath::Wakelist)
    ];
    let what = prop::sample::select(vec![
        DelayedWhat::Delayed,
        DelayedWhat::DequeuedAtPick,
        DelayedWhat::Requeued,
        DelayedWhat::DequeuedAtWakeup,
    ]);
    let op = prop_oneof![
        obj.clone().prop_map(|obj| UserOp::Signal { obj }),
        obj.clone().prop_map(|obj| UserOp::WaitDone { obj }),
        obj.clone().prop_map(|obj| UserOp::Post { obj }),
        obj.clone().prop_map(|obj| UserOp::PollDone { obj }),
        obj.clone().prop_map(|obj| UserOp::Lock { obj }),
        obj.prop_map(|obj| UserOp::Unlock { obj }),
        any::<u32>().prop_map(|n| UserOp::LoopEnd { n }),
    ];
    prop_oneof![
        (pid.clone(), prio.clone(), cpu.clone()).prop_map(|(pid, prio, target_cpu)| EventKind::SchedWaking {
            pid,
            prio,
            target_cpu
        }),
        (pid.clone(), prio.clone(), cpu.clone()).prop_map(|(pid, prio, target_cpu)| EventKind::SchedWakeup {
            pid,
            prio,
            target_cpu
        }),
        (pid.clone(), prio.clone(), cpu.clone()).prop_map(|(pid, prio, target_cpu)| EventKind::SchedWakeupNew {
            pid,
            prio,
            target_cpu
        }),
        (pid.clone(), prio.clone(), arb_state(), pid.clone(), prio.clone()).prop_map(
            |(prev_pid, prev_prio, prev_state, next_pid, next_prio)| EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio
            }
        ),
        (pid.clone(), prio.clone(), cpu.clone(), cpu.clone())
            .prop_map(|(pid, prio, orig_cpu, dest_cpu)| EventKind::SchedMigrateTask { pid, prio, orig_cpu, dest_cpu }),
        (pid.clone(), any::<u64>()).prop_map(|(pid, runtime)| EventKind::SchedStatRuntime { pid, runtime }),
        (pid.clone(), prio.clone(), prio.clone()).prop_map(|(pid, oldprio, newprio)| EventKind::SchedPiSetprio {
            pid,
            oldprio,
            newprio
        }),
        cpu.clone().prop_map(|cpu| EventKind::SchedWakeIdleWithoutIpi { cpu }),
        (any::<u32>(), cpu.clone()).prop_map(|(state, cpu_id)| EventKind::CpuFrequency { state, cpu_id }),
        (pid.clone(), path, cpu.clone()).prop_map(|(pid, path, cpu)| EventKind::Ttwu { pid, path, cpu }),
        (pid.clone(), what, any::<i64>()).prop_map(|(pid, what, lag)| EventKind::Delayed { pid, what, lag }),
        (cpu.clone(), any::<bool>()).prop_map(|(cpu, ipi)| EventKind::Resched { cpu, ipi }),
        (pid.clone(), cpu.clone(), cpu.clone(), prop::sample::select(BalanceKind::ALL.to_vec()), any::<bool>())
            .prop_map(|(pid, src_cpu, dst_cpu, kind, delayed)| EventKind::LbMigrate {
                pid,
                src_cpu,
                dst_cpu,
                kind,
                delayed
            }),
        (cpu.clone(), cpu.clone()).prop_map(|(src_cpu, dst_cpu)| EventKind::ActiveBalanceQueued { src_cpu, dst_cpu }),
        (pid.clone(), cpu.clone(), prop::option::of(cpu.clone()), prop::sample::select(RtBalanceResult::ALL.to_vec()))
            .prop_map(|(pid, src_cpu, dst_cpu, result)| EventKind::RtPush { pid, src_cpu, dst_cpu, result }),
        (cpu.clone(), pid.clone(), prop::sample::select(RtBalanceResult::ALL.to_vec()))
            .prop_map(|(src_cpu, pid, result)| EventKind::RtPull { src_cpu, pid, result }),
        (cpu.clone(), any::<bool>()).prop_map(|(dst_cpu, first)| EventKind::RtPushIpi { dst_cpu, first }),
        (pid.clone(), prio.clone(), prio.clone(), any::<[bool; 4]>()).prop_map(|(pid, oldprio, newprio, b)| {
            EventKind::RtPrioChanged { pid, oldprio, newprio, running: b[0], resched: b[1], push: b[2], pull: b[3] }
        }),
        (pid.clone(), pid.clone(), any::<bool>(), reason)
            .prop_map(|(wakee, curr, preempt, reason)| EventKind::WakeupPreempt { wakee, curr, preempt, reason }),
        (pid, op).prop_map(|(pid, op)| EventKind::User { pid, op }),
    ]
}

fn arb_trace() -> impl Strategy<Value = (Trace, bool)> {
    (prop::collection::btree_map(1i32..5_000_000, arb_comm(), 1..6), 1u32..4, any::<bool>()).prop_flat_map(
        |(comms, nobj, ns)| {
            let mut pids: Vec<Pid> = comms.keys().copied().collect();
            pids.push(0);
            let table = TaskTable {
                tasks: comms.iter().map(|(&p, c)| (p, TaskInfo { comm: c.clone(), tgid: p })).collect(),
                objects: (0..nobj).map(|i| format!("obj-{i}.x")).collect(),
                comm_history: Default::default(),
                field_comms: Default::default(),
            };
            let ctx = prop::sample::select(pids.clone());
            let one = (0u64..2_000_000_000_000, 0u32..300, ctx, arb_flags(), arb_kind(pids, nobj));
            prop::collection::vec(one, 0..40).prop_map(move |evs| {
                let events = evs
                    .into_iter()
                    .map(|(ts, cpu, ctx_pid, flags, kind)| Event {
                        ts: if ns { ts } else { ts / 1000 * 1000 },
                        cpu,
                        ctx_pid,
                        flags,
                        kind,
                    })
                    .collect();
                (Trace { table: table.clone(), nr_cpus: 300, events }, ns)
            })
        },
    )
}

proptest! {
    #[test]
    fn round_trip_random((trace, ns) in arb_trace()) {
        let text = to_text(&trace, &WriteOptions { ns_timestamps: ns, record_tgid: false });
        let opts = ParseOptions { objects: trace.table.objects.clone() };
        let parsed = parse_ftrace_with("p.trace", &text, &opts).unwrap();
        prop_assert_eq!(&parsed.trace.events, &trace.events);
        prop_assert_eq!(&parsed.trace.table.objects, &trace.table.objects);
        // Every comm that the text mentions comes back unchanged.
        for (pid, info) in &parsed.trace.table.tasks {
            prop_assert_eq!(Some(&info.comm), trace.table.tasks.get(pid).map(|i| &i.comm));
        }
        for e in &trace.events {
            if e.ctx_pid != 0 {
                prop_assert!(parsed.trace.table.tasks.contains_key(&e.ctx_pid));
            }
        }
    }
}

// ---------------------------------------------------------------- real-looking input

const REAL: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 14/14   #P:8
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [004] d..2.  1520.318001: sched_switch: prev_comm=swapper/4 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=asym_min next_pid=9031 next_prio=120
        asym_min-9031    [004] ...1.  1520.318010: tracing_mark_write: schedlab wait_done obj=efd1
        asym_min-9031    [004] ...1.  1520.318011: tracing_mark_write: some other marker text
 systemd-journal-402     [001] d.h2.  1520.318020: irq_handler_entry: irq=30 name=nvme0q1
CPU:6 [LOST 12 EVENTS]
   my-app [beta]-9040    [002] dN.4.  1520.318030: sched_waking: comm=asym_min pid=9031 prio=120 target_cpu=004 extra_key=1
           <...>-9041    (   9030) [002] d..2.  1520.318040: sched_wakeup: comm=asym_min pid=9031 prio=120 target_cpu=004
   kworker/u16:3-201     [004] d..2.  1520.318050: sched_switch: prev_comm=asym_min prev_pid=9031 prev_prio=120 prev_state=D|K ==> next_comm=kworker/u16:3 next_pid=201 next_prio=120
        asym_min-9031    (   9030) [004] d..2.  1520.318060: sched_stat_runtime: comm=asym_min pid=9031 runtime=50000 [ns] vruntime=123 [ns]
CPU:2 [LOST 3 EVENTS]
          <idle>-0       [007] dNh3.  1520.318070: sched_wake_idle_without_ipi: cpu=7
";

#[test]
fn parses_real_looking_trace() {
    let p = parse_ftrace_with("cap.trace", REAL, &ParseOptions::default()).unwrap();
    let t = &p.trace;
    assert_eq!(t.nr_cpus, 8);
    assert_eq!(p.stats.lines, 23);
    assert_eq!(p.stats.comment_lines, 12);
    assert_eq!(p.stats.lost_lines, 2);
    assert_eq!(p.stats.lost_events, 15);
    assert_eq!(p.stats.skipped_lines, 2);
    assert_eq!(p.stats.skipped_by_event.get("irq_handler_entry"), Some(&1));
    assert_eq!(p.stats.skipped_by_event.get("tracing_mark_write"), Some(&1));
    assert_eq!(p.stats.events, 7);
    assert_eq!(t.table.objects, vec!["efd1".to_string()]);
    assert_eq!(t.events[0].ts, 1_520_318_001_000);
    assert_eq!(t.events[0].ctx_pid, 0);
    assert_eq!(t.events[1].kind, EventKind::User { pid: 9031, op: UserOp::WaitDone { obj: 0 } });
    assert_eq!(t.events[2].ctx_pid, 9040);
    assert_eq!(t.events[2].cpu, 2);
    assert_eq!(t.events[2].flags, *b"dN.4.");
    assert_eq!(t.events[2].kind, EventKind::SchedWaking { pid: 9031, prio: 120, target_cpu: 4 });
    assert_eq!(t.events[3].ctx_pid, 9041);
    assert_eq!(
        t.events[4].kind,
        EventKind::SchedSwitch {
            prev_pid: 9031,
            prev_prio: 120,
            prev_state: PrevState::DiskSleep,
            next_pid: 201,
            next_prio: 120
        }
    );
    assert_eq!(t.events[5].kind, EventKind::SchedStatRuntime { pid: 9031, runtime: 50_000 });
    assert_eq!(t.events[6].kind, EventKind::SchedWakeIdleWithoutIpi { cpu: 7 });
    let c = comms(&t.table);
    assert_eq!(c.get(&9031).map(String::as_str), Some("asym_min"));
    assert_eq!(c.get(&9040).map(String::as_str), Some("my-app [beta]"));
    assert_eq!(c.get(&201).map(String::as_str), Some("kworker/u16:3"));
    assert_eq!(c.get(&402).map(String::as_str), Some("systemd-journal"));
    assert!(!c.contains_key(&9041), "<...> is not a comm");
    assert!(!c.contains_key(&0));
    assert_eq!(t.table.tasks[&9031].tgid, 9030);
    assert_eq!(t.table.tasks[&201].tgid, 201);
}

#[test]
fn garbage_line_reports_line_and_column() {
    let mut text = REAL.to_string();
    text.push_str("this is not a trace line\n");
    let e = parse_ftrace("cap.trace", &text).unwrap_err();
    assert_eq!((e.line, e.col), (24, 1));
    assert!(e.to_string().starts_with("cap.trace:24:1: expected an event line"), "{e}");

    let bad_ts =
        "            bash-4531    [002] d..3.     0.00x000: sched_wakeup: comm=a pid=1 prio=120 target_cpu=000\n";
    let e = parse_ftrace("x", &format!("# tracer: nop\n{bad_ts}")).unwrap_err();
    assert_eq!((e.line, e.col), (2, bad_ts.find("0.00x").unwrap() + 1), "{e}");
    assert!(e.message.contains("timestamp"), "{e}");

    let bad_pid =
        "            bash-4531    [002] d..3.     0.000001: sched_wakeup: comm=a pid=x1 prio=120 target_cpu=000";
    let e = parse_ftrace("x", bad_pid).unwrap_err();
    let col = bad_pid.find("x1").unwrap() + 1;
    assert_eq!((e.line, e.col), (1, col), "{e}");
    assert_eq!(e.message, "sched_wakeup: expected an integer for `pid`, found `x1`");

    let missing =
        "            bash-4531    [002] d..3.     0.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=120";
    let e = parse_ftrace("x", missing).unwrap_err();
    assert!(e.message.contains("expected `prev_state=`"), "{e}");
    assert_eq!(e.col, missing.len() + 1);

    let bad_marker = "            bash-4531    [002] ...1.     0.000001: tracing_mark_write: schedlab signal";
    let e = parse_ftrace("x", bad_marker).unwrap_err();
    assert!(e.message.contains("expected `obj=`"), "{e}");

    let bad_flags = "            bash-4531    [002] d..3.xx     0.000001: sched_wake_idle_without_ipi: cpu=1";
    let e = parse_ftrace("x", bad_flags).unwrap_err();
    assert_eq!(e.col, bad_flags.find("d..3.xx").unwrap() + 1, "{e}");
}

#[test]
fn parses_trace_cmd_report() {
    let text = "\
version = 6
cpus=8
CPU 3 is empty
              ls-16326 [005] 435246.915558: sched_wakeup:         migration/5:48 [0] success=1 CPU:005
              ls-16326 [005] 435246.915564: sched_switch:         trace-cmd:16326 [120] R ==> migration/5:48 [0]
     migration/5-48    [005] 435246.915571123: sched_migrate_task:   comm=trace-cmd pid=16326 prio=120 orig_cpu=5 dest_cpu=6
  rcuop/6-54  [000] d..2  183.755959: sched_switch:         rcuop/6:54 [120] S ==> irq/396-5-0072:12675 [49]
          father-1234  [002] 18765.018235: sched_switch:          prev_comm=father prev_pid=1234 prev_prio=120 prev_state=0 next_comm=father next_pid=5678 next_prio=120
CPU:1 [2 EVENTS DROPPED]
            bash-9    [001]  1.000000: print:                tracing_mark_write: schedlab post obj=f
";
    let p = parse_ftrace_with("r.txt", text, &ParseOptions::default()).unwrap();
    assert_eq!(p.trace.nr_cpus, 8);
    assert_eq!(p.stats.lost_events, 2);
    let k: Vec<_> = p.trace.events.iter().map(|e| e.kind).collect();
    assert_eq!(
        k,
        vec![
            EventKind::SchedWakeup { pid: 48, prio: 0, target_cpu: 5 },
            EventKind::SchedSwitch {
                prev_pid: 16326,
                prev_prio: 120,
                prev_state: PrevState::Running { preempt: false },
                next_pid: 48,
                next_prio: 0
            },
            EventKind::SchedMigrateTask { pid: 16326, prio: 120, orig_cpu: 5, dest_cpu: 6 },
            EventKind::SchedSwitch {
                prev_pid: 54,
                prev_prio: 120,
                prev_state: PrevState::Sleeping,
                next_pid: 12675,
                next_prio: 49
            },
            EventKind::SchedSwitch {
                prev_pid: 1234,
                prev_prio: 120,
                prev_state: PrevState::Running { preempt: false },
                next_pid: 5678,
                next_prio: 120
            },
            EventKind::User { pid: 9, op: UserOp::Post { obj: 0 } },
        ]
    );
    assert_eq!(p.trace.events[0].flags, *b".....");
    assert_eq!(p.trace.events[2].ts, 435_246_915_571_123);
    assert_eq!(p.trace.events[3].flags, *b"d..2.");
    let c = comms(&p.trace.table);
    assert_eq!(c[&12675], "irq/396-5-0072");
    assert_eq!(c[&16326], "trace-cmd");
    assert_eq!(c[&48], "migration/5");
}

#[test]
fn object_names_seeded_and_appended() {
    let text = "\
               a-1       [000] ...1.     0.000001: tracing_mark_write: schedlab signal obj=late
               a-1       [000] ...1.     0.000002: tracing_mark_write: schedlab signal obj=known
";
    let opts = ParseOptions { objects: vec!["known".into()] };
    let p = parse_ftrace_with("m", text, &opts).unwrap();
    assert_eq!(p.trace.table.objects, vec!["known".to_string(), "late".to_string()]);
    assert_eq!(p.trace.events[0].kind, EventKind::User { pid: 1, op: UserOp::Signal { obj: 1 } });
    assert_eq!(p.trace.events[1].kind, EventKind::User { pid: 1, op: UserOp::Signal { obj: 0 } });
}

#[test]
fn cpu_number_and_count_beyond_the_cap_are_refused() {
    // A `[CPU]` column at the cap (or beyond u32) names the line and column.
    for cpu in [MAX_CPUS.to_string(), "4000000000".into(), "99999999999".into()] {
        let l = format!("            bash-4531    [{cpu}] d..3.     0.000001: sched_wake_idle_without_ipi: cpu=1");
        let e = parse_ftrace("x", &format!("# tracer: nop\n{l}\n")).unwrap_err();
        assert_eq!((e.line, e.col), (2, l.find(&cpu).unwrap() + 1), "{e}");
        assert_eq!(e.message, format!("expected a CPU number below {MAX_CPUS}, found `{cpu}`"));
    }
    let last = MAX_CPUS - 1;
    let l = format!("            bash-4531    [{last}] d..3.     0.000001: sched_wake_idle_without_ipi: cpu=1");
    assert_eq!(parse_ftrace("x", &l).unwrap().nr_cpus, MAX_CPUS);

    // The header forms: tracefs `#P:N` and trace-cmd `cpus=N`.
    let event = "            bash-4531    [002] d..3.     0.000001: sched_wake_idle_without_ipi: cpu=1\n";
    for n in [MAX_CPUS + 1, 3_000_000_000] {
        let hdr = format!("# entries-in-buffer/entries-written: 1/1   #P:{n}");
        let e = parse_ftrace("x", &format!("# tracer: nop\n{hdr}\n{event}")).unwrap_err();
        assert_eq!((e.line, e.col), (2, hdr.find(&n.to_string()).unwrap() + 1), "{e}");
        assert_eq!(e.message, format!("expected a CPU count of at most {MAX_CPUS}, found `{n}`"));

        let e = parse_ftrace("r.txt", &format!("version = 6\ncpus={n}\n{event}")).unwrap_err();
        assert_eq!((e.line, e.col), (2, 6), "{e}");
        assert_eq!(e.to_string(), format!("r.txt:2:6: expected a CPU count of at most {MAX_CPUS}, found `{n}`"));
    }
    let e = parse_ftrace("x", &format!("#P:99999999999\n{event}")).unwrap_err();
    assert_eq!((e.line, e.col), (1, 4), "{e}");
    assert_eq!(parse_ftrace("x", &format!("#P:{MAX_CPUS}\n{event}")).unwrap().nr_cpus, MAX_CPUS);
    assert_eq!(parse_ftrace("x", &format!("cpus={MAX_CPUS}\n{event}")).unwrap().nr_cpus, MAX_CPUS);
}

/// `trace-cmd report -R` prints `prev_state` as `__trace_sched_switch_state()`'s
/// number: 0x80 is I (an idle kthread sleeping), 0x100 a preempted task,
/// 0x40 P (parked), 0x20 Z.
#[test]
fn raw_prev_state_numbers_decode_as_the_kernel_encodes_them() {
    let line = |state: &str| {
        format!(
            "cpus=2\n     rcu_preempt-15    [000] 49916.488723856: sched_switch:          prev_comm=rcu_preempt \
             prev_pid=15 prev_prio=120 prev_state={state} next_comm=swapper/0 next_pid=0 next_prio=120\n"
        )
    };
    let state = |n: &str| match parse_ftrace("r.txt", &line(n)).map(|t| t.events[0].kind) {
        Ok(EventKind::SchedSwitch { prev_state, .. }) => Ok(prev_state),
        Ok(k) => panic!("{k:?}"),
        Err(e) => Err(e.to_string()),
    };
    assert_eq!(state("0"), Ok(PrevState::Running { preempt: false }));
    assert_eq!(state("256"), Ok(PrevState::Running { preempt: true }));
    assert_eq!(state("1"), Ok(PrevState::Sleeping));
    assert_eq!(state("2"), Ok(PrevState::DiskSleep));
    assert_eq!(state("128"), Ok(PrevState::Sleeping), "I");
    assert_eq!(state("64"), Ok(PrevState::Sleeping), "P");
    assert_eq!(state("32"), Ok(PrevState::Dead), "Z");
    assert!(state("512").unwrap_err().contains("prev_state 512"));
}

#[test]
fn rt_app_markers_of_master_and_1_0_are_read_and_written_in_masters_format() {
    let master_start = "      periodic-3001    [001] ...1.     1.000100: tracing_mark_write: rtapp_loop: event=start thread_loop=2 phase=1 phase_loop=3";
    let master_stats = "      periodic-3001    [001] ...1.     1.000200: tracing_mark_write: rtapp_stats: period=10012 run=2010 wu_lat=146 slack=-7 c_period=10000 c_run=2000";
    let v1_end = "      periodic-3001    [001] ...1.     1.000300: tracing_mark_write: [0] end loop 2 phase 1 step 3";
    let text = [master_start, master_stats, v1_end].join("\n");
    let p = parse_ftrace_with("rt.trace", &text, &ParseOptions::default()).unwrap();
    let ops: Vec<UserOp> = p
        .trace
        .events
        .iter()
        .map(|e| match e.kind {
            EventKind::User { pid: 3001, op } => op,
            ref k => panic!("{k:?}"),
        })
        .collect();
    assert_eq!(
        ops,
        [
            UserOp::RtAppLoop { start: true, thread_loop: 2, phase: 1, phase_loop: 3 },
            UserOp::RtAppStats { period: 10012, run: 2010, wu_lat: 146, slack: -7, c_period: 10000, c_run: 2000 },
            UserOp::RtAppLoop { start: false, thread_loop: 2, phase: 1, phase_loop: 3 },
        ]
    );
    let t = TaskTable::default();
    assert_eq!(user_marker_text(&t, &ops[0]), "rtapp_loop: event=start thread_loop=2 phase=1 phase_loop=3");
    assert_eq!(user_marker_text(&t, &ops[2]), "rtapp_loop: event=end thread_loop=2 phase=1 phase_loop=3");
    // rt-app's other markers, and text that only resembles 1.0's, are not events.
    let other = "      periodic-3001    [001] ...1.     1.000400: tracing_mark_write: rtapp_main: event=start\n\
                 \x20     periodic-3001    [001] ...1.     1.000500: tracing_mark_write: [0] starts\n\
                 \x20     periodic-3001    [001] ...1.     1.000600: tracing_mark_write: [x] begins loop 1 phase 2 step 3";
    assert!(parse_ftrace_with("rt.trace", other, &ParseOptions::default()).unwrap().trace.events.is_empty());
    // A master marker that lacks a field is an error at its line.
    let bad = "      periodic-3001    [001] ...1.     1.000700: tracing_mark_write: rtapp_loop: event=start phase=1";
    let e = parse_ftrace_with("rt.trace", bad, &ParseOptions::default()).unwrap_err();
    assert!(e.to_string().contains("expected `thread_loop=`"), "{e}");
    // rt-app prints its stats as C ints: the extremes read, one past them is not rt-app's.
    let stats = |slack: &str| {
        format!("      periodic-3001    [001] ...1.     1.000800: tracing_mark_write: rtapp_stats: period=1 run=1 wu_lat=0 slack={slack} c_period=1 c_run=1")
    };
    for ok in ["-2147483648", "2147483647"] {
        let p = parse_ftrace_with("rt.trace", &stats(ok), &ParseOptions::default()).unwrap();
        assert!(
            matches!(p.trace.events[0].kind, EventKind::User { op: UserOp::RtAppStats { slack, .. }, .. } if slack.to_string() == ok)
        );
    }
    let e = parse_ftrace_with("rt.trace", &stats("2147483648"), &ParseOptions::default()).unwrap_err();
    assert!(e.to_string().contains("`slack=2147483648` is out of range: rt-app prints it as a C int"), "{e}");
}

/// `trace-cmd report -R` of a schedlab trace.dat: the decision events and
/// markers print their one string field as `msg=TEXT`; errors still point
/// into the line.
#[test]
fn parses_raw_report_of_a_schedlab_trace_dat() {
    let text = "\
cpus=2
          <idle>-0     [000]     0.000000000: schedlab_resched:      msg=cpu=1 ipi=1
        worker-0-1001  [001]     0.001008233: tracing_mark_write:    msg=schedlab post obj=done0
        worker-0-1001  [001]     0.001008233: sched_stat_runtime:    comm=worker-0 pid=1001 runtime=1008233
";
    let p = parse_ftrace_with("r.txt", text, &ParseOptions::default()).unwrap();
    let k: Vec<_> = p.trace.events.iter().map(|e| e.kind).collect();
    assert_eq!(
        k,
        vec![
            EventKind::Resched { cpu: 1, ipi: true },
            EventKind::User { pid: 1001, op: UserOp::Post { obj: 0 } },
            EventKind::SchedStatRuntime { pid: 1001, runtime: 1_008_233 },
        ]
    );
    let bad = "          <idle>-0     [000]     0.000000000: schedlab_resched:      msg=cpu=x ipi=1";
    let e = parse_ftrace("x", bad).unwrap_err();
    assert_eq!(e.col, bad.find("x ipi").unwrap() + 1, "{e}");
}

/// A task forked as `sh` that exec'd `sleep`, and a kworker whose line
/// columns (perf's name, from `/proc`) are longer than its events' fields.
const RENAMES: &str = "\
cpus=1
              sh-10    [000]   1.000000: sched_process_fork: comm=sh pid=10 child_comm=sh child_pid=11
              sh-10    [000]   1.000010: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=11 next_prio=120
           sleep-11    [000]   1.000020: sched_switch: prev_comm=sleep prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=kworker/0:1 next_pid=12 next_prio=120
 kworker/0:1-eve-12    [000]   1.000030: sched_switch: prev_comm=kworker/0:1 prev_pid=12 prev_prio=120 prev_state=I ==> next_comm=sleep next_pid=11 next_prio=120
";

#[test]
fn comms_over_time_come_from_the_fields_or_from_current_line_columns() {
    // tracefs / trace-cmd text: the fields, which the kernel fills in at
    // each event; the columns may be names looked up later.
    let t = parse_ftrace("t", RENAMES).unwrap().table;
    assert_eq!(t.comm_history[&11], [(1_000_000_000, "sh".to_string()), (1_000_020_000, "sleep".to_string())]);
    assert_eq!((t.comm_at(11, 1_000_010_000), t.comm_at(11, 1_000_020_000)), ("sh", "sleep"));
    assert_eq!((t.comm(11), t.comm(12)), ("sleep", "kworker/0:1"));
    assert!(!t.comm_history.contains_key(&12));
    // perf's text says its columns are current: they are the comms, the
    // fork's child_comm before the task's first line.
    let perf = format!("{PREFIX_COMMS_ARE_CURRENT}\n{RENAMES}");
    let t = parse_ftrace("p", &perf).unwrap().table;
    assert_eq!((t.comm_at(11, 1_000_010_000), t.comm_at(11, 1_000_020_000)), ("sh", "sleep"));
    assert!(t.comm_set_between(11, 1_000_010_000, 1_000_030_000));
    assert_eq!(t.comm(12), "kworker/0:1-eve", "perf's name");
    assert_eq!(t.comm_at(12, 1_000_020_000), "kworker/0:1-eve", "before its first line too");
    assert_eq!(t.field_comm_at(12, 1_000_020_000), "kworker/0:1", "the switch's own next_comm");
    assert_eq!(t.field_comm_at(11, 1_000_030_000), "sleep");
}
