use proptest::prelude::*;
use schedlab_trace::testing::{event, marker, migrate, process_table, switch, trace as trace_of, wakeup, EventExt};
use schedlab_trace::{Event, EventKind, Nanos, Pid, PrevState, Trace, UserOp};

use super::*;

const S: PrevState = PrevState::Sleeping;
const R: PrevState = PrevState::Running { preempt: false };
const RP: PrevState = PrevState::Running { preempt: true };

// Every kernel event here fires outside any task (context pid 0); wakeups
// and markers are on CPU 0.
fn ev(ts: Nanos, cpu: u32, kind: EventKind) -> Event {
    event(ts, cpu, 0, kind)
}

fn sw(ts: Nanos, cpu: u32, prev: Pid, state: PrevState, next: Pid) -> Event {
    switch(ts, cpu, prev, state, next).ctx(0)
}

fn wake(ts: Nanos, pid: Pid) -> Event {
    wakeup(ts, 0, 0, pid, 0)
}

fn user(ts: Nanos, pid: Pid, op: UserOp) -> Event {
    marker(ts, 0, pid, op)
}

fn trace(events: Vec<Event>) -> Trace {
    let table = process_table(1, &[(1, "waker"), (2, "worker-a"), (3, "worker-b")], &["efd0", "efd1"]);
    trace_of(table, 2, events)
}

fn run(events: Vec<Event>) -> RunMetrics {
    analyze(&trace(events), &AnalysisOptions::default())
}

// ---------------------------------------------------------------- percentiles

#[test]
fn percentile_nearest_rank() {
    let v: Vec<u64> = (1..=10).collect();
    assert_eq!(percentile(&v, 500), Some(5));
    assert_eq!(percentile(&v, 900), Some(9));
    assert_eq!(percentile(&v, 990), Some(10));
    assert_eq!(percentile(&v, 1000), Some(10));
    assert_eq!(percentile(&v, 0), Some(1));
    assert_eq!(percentile(&v, 1), Some(1));
    assert_eq!(percentile(&v, 101), Some(2));
    let v = [10, 20, 30, 40];
    assert_eq!(percentile(&v, 500), Some(20));
    assert_eq!(percentile(&v, 501), Some(30));
    assert_eq!(percentile(&v, 750), Some(30));
    assert_eq!(percentile(&v, 990), Some(40));
    assert_eq!(percentile(&[7], 500), Some(7));
    assert_eq!(percentile(&[], 500), None);
    let v: Vec<u64> = (1..=200).collect();
    assert_eq!(percentile(&v, 990), Some(198));
    assert_eq!(percentile(&v, 999), Some(200));
}

#[test]
fn latency_stats_threshold() {
    let s = LatencyStats::from_sorted(&[100, 499, 500, 900], 500);
    assert_eq!(s.count, 4);
    assert_eq!(s.p50_ns, Some(499));
    assert_eq!(s.p90_ns, Some(900));
    assert_eq!(s.max_ns, Some(900));
    assert_eq!(s.at_or_above_threshold, 2);
    assert_eq!(s.fraction_at_or_above_threshold, 0.5);
    let e = LatencyStats::from_sorted(&[], 500);
    assert_eq!((e.count, e.p50_ns, e.max_ns, e.fraction_at_or_above_threshold), (0, None, None, 0.0));
}

// ---------------------------------------------------------------- task metrics

#[test]
fn runtime_between_switch_in_and_out() {
    let m = run(vec![sw(10, 0, 0, R, 2), sw(30, 0, 2, S, 0)]);
    let t = m.task(2).unwrap();
    assert_eq!(t.runtime_ns, 20);
    assert_eq!(t.wait_ns, 0);
    assert_eq!(t.sleep_ns, 0);
    assert_eq!(t.context_switches, 1);
    assert_eq!(t.involuntary_switches, 0);
    assert_eq!(t.comm, "worker-a");
    assert!(m.task(0).is_none(), "idle is not a task row");
}

#[test]
fn wakeup_latency_and_wait() {
    let m = run(vec![sw(0, 0, 0, R, 2), sw(40, 0, 2, S, 0), wake(100, 2), sw(150, 0, 0, R, 2), sw(170, 0, 2, S, 0)]);
    let t = m.task(2).unwrap();
    assert_eq!(t.wakeup_sketch.sorted_samples(), vec![50]);
    assert_eq!(t.wakeup_latency.p50_ns, Some(50));
    assert_eq!(t.wakeups, 1);
    assert_eq!(t.wait_ns, 50);
    assert_eq!(t.sleep_ns, 60);
    assert_eq!(t.runtime_ns, 40 + 20);
    assert_eq!(t.context_switches, 2);
}

#[test]
fn wakeup_new_and_multiple_samples() {
    let m = run(vec![
        ev(0, 1, EventKind::SchedWakeupNew { pid: 3, prio: 120, target_cpu: 1 }),
        sw(7, 1, 0, R, 3),
        sw(10, 1, 3, S, 0),
        wake(20, 3),
        sw(23, 1, 0, R, 3),
        sw(30, 1, 3, S, 0),
        wake(40, 3),
        sw(41, 1, 0, R, 3),
    ]);
    let t = m.task(3).unwrap();
    assert_eq!(t.wakeups, 3);
    assert_eq!(t.wakeup_sketch.sorted_samples(), vec![1, 3, 7]);
    assert_eq!(t.wait_ns, 11);
    assert_eq!(t.sleep_ns, 10 + 10, "no sleep before wakeup_new");
    assert_eq!(t.runtime_ns, 3 + 7);
}

#[test]
fn preemption_counts_as_wait_not_wakeup() {
    let m = run(vec![
        sw(0, 0, 0, R, 2),
        sw(100, 0, 2, RP, 3),
        sw(130, 0, 3, S, 2),
        sw(200, 0, 2, R, 3),
        sw(205, 0, 3, S, 2),
    ]);
    let a = m.task(2).unwrap();
    assert_eq!(a.runtime_ns, 100 + 70);
    assert_eq!(a.wait_ns, 30 + 5);
    assert_eq!(a.involuntary_switches, 2);
    assert_eq!(a.context_switches, 2);
    assert_eq!(a.wakeup_latency.count, 0);
    // 3 had been runnable since the window opened at 0.
    let b = m.task(3).unwrap();
    assert_eq!(b.wait_ns, 100);
    assert_eq!(b.runtime_ns, 30 + 5);
    assert_eq!(b.sleep_ns, 70);
}

#[test]
fn trace_end_clips_runtime() {
    let events = vec![sw(0, 0, 0, R, 2), wake(500, 3), sw(1_000, 1, 0, R, 1)];
    let m = analyze(&trace(events.clone()), &AnalysisOptions::default());
    assert_eq!(m.end_ts, 1_000);
    assert_eq!(m.task(2).unwrap().runtime_ns, 1_000);
    assert_eq!(m.task(3).unwrap().wait_ns, 500);
    assert_eq!(m.task(3).unwrap().sleep_ns, 500, "asleep from the window start");
    let m = analyze(&trace(events), &AnalysisOptions { end_ts: Some(5_000), ..Default::default() });
    assert_eq!(m.task(2).unwrap().runtime_ns, 5_000);
    assert_eq!(m.task(1).unwrap().runtime_ns, 4_000);
    assert_eq!(m.task(3).unwrap().wait_ns, 4_500);
    assert_eq!(m.task(3).unwrap().wakeup_latency.count, 0, "never ran: no sample");
}

#[test]
fn switched_out_without_switch_in_ran_since_window_start() {
    let m = run(vec![wake(100, 1), sw(250, 0, 2, S, 1)]);
    assert_eq!(m.start_ts, 100);
    assert_eq!(m.task(2).unwrap().runtime_ns, 150);
    assert_eq!(m.task(1).unwrap().wakeup_sketch.sorted_samples(), vec![150]);
}

#[test]
fn migrations_and_unsorted_input() {
    let mig = |ts, pid| migrate(ts, pid, 0, 1);
    // Per-CPU buffers concatenated: CPU 1's events after CPU 0's.
    let m = run(vec![sw(10, 0, 0, R, 2), sw(20, 0, 2, S, 0), mig(30, 2), sw(15, 1, 0, R, 3), sw(40, 1, 3, S, 2)]);
    assert_eq!(m.task(2).unwrap().migrations, 1);
    assert_eq!(m.task(3).unwrap().runtime_ns, 25);
    assert_eq!(m.task(2).unwrap().sleep_ns, 20);
    assert_eq!(m.task(2).unwrap().runtime_ns, 10);
}

// ---------------------------------------------------------------- handoffs

#[test]
fn two_signals_one_wait_is_one_handoff_from_the_first() {
    let m = run(vec![
        user(100, 1, UserOp::Signal { obj: 0 }),
        user(150, 1, UserOp::Signal { obj: 0 }),
        user(400, 2, UserOp::WaitDone { obj: 0 }),
        user(500, 1, UserOp::Signal { obj: 0 }),
        user(520, 2, UserOp::WaitDone { obj: 0 }),
    ]);
    let t = m.task(2).unwrap();
    assert_eq!(t.handoff_sketch.sorted_samples(), vec![20, 300]);
    assert_eq!(t.handoff_latency.count, 2);
    assert_eq!(m.task(1).unwrap().handoff_latency.count, 0);
    assert_eq!(m.unmatched_waits, 0);
    assert!(m.stalls.is_empty());
}

#[test]
fn handoffs_per_object_and_stalls() {
    let opts = AnalysisOptions { stall_threshold_ns: 1_000, end_ts: None };
    let events = vec![
        user(0, 2, UserOp::WaitDone { obj: 1 }),
        user(100, 1, UserOp::Signal { obj: 0 }),
        user(110, 1, UserOp::Signal { obj: 1 }),
        user(600, 3, UserOp::WaitDone { obj: 1 }),
        user(1_100, 2, UserOp::WaitDone { obj: 0 }),
        user(1_200, 1, UserOp::Post { obj: 1 }),
        user(1_250, 3, UserOp::PollDone { obj: 1 }),
        user(2_000, 1, UserOp::Signal { obj: 0 }),
        user(2_000, 2, UserOp::Lock { obj: 0 }),
    ];
    let m = analyze(&trace(events), &opts);
    assert_eq!(m.unmatched_waits, 1);
    assert_eq!(m.open_handoffs_at_end, 1);
    assert_eq!(m.task(2).unwrap().handoff_sketch.sorted_samples(), vec![1_000]);
    // The flag post/poll at 1_200/1_250 is not a handoff.
    assert_eq!(m.task(3).unwrap().handoff_sketch.sorted_samples(), vec![490]);
    assert_eq!(
        m.stalls,
        vec![Stall {
            obj: 0,
            obj_name: "efd0".into(),
            start_ts: 100,
            end_ts: 1_100,
            latency_ns: 1_000,
            waker_pid: 1,
            wakee_pid: 2
        }]
    );
    assert_eq!(m.task(2).unwrap().handoff_latency.at_or_above_threshold, 1);
    assert_eq!(m.task(3).unwrap().handoff_latency.at_or_above_threshold, 0);
}

// ---------------------------------------------------------------- table

#[test]
fn run_table_golden() {
    let events = vec![
        sw(0, 0, 0, R, 1),
        user(1_000, 1, UserOp::Signal { obj: 0 }),
        wake(1_000, 2),
        sw(4_000, 0, 1, S, 2),
        user(4_500, 2, UserOp::WaitDone { obj: 0 }),
        user(5_000, 2, UserOp::Signal { obj: 1 }),
        sw(2_000_000, 0, 2, S, 0),
        wake(2_000_000, 3),
        sw(2_001_250, 1, 0, R, 3),
        user(2_600_000, 3, UserOp::WaitDone { obj: 1 }),
    ];
    let m = run(events);
    let table = render_run_table(&m);
    // Checked by hand: 2 waits 1000→4000 (3.0 us) and runs 4000→2000000;
    // 3 waits 1250 ns (1.2 us truncated) and runs to the end (598750 ns);
    // handoffs 1000→4500 and 5000→2600000 (a stall at the 500 us threshold).
    let want = [
        "                                         wakeup latency (us)                 handoff latency (us)",
        "thread    pid  run ms  wait ms  wakeups  p50  p90  p99   max  handoffs     p50     p90     p99     max  stalls>=500us",
        "waker       1   0.004    0.000        0    -    -    -     -         0       -       -       -       -              -",
        "worker-a    2   1.996    0.003        1  3.0  3.0  3.0   3.0         1     3.5     3.5     3.5     3.5              0",
        "worker-b    3   0.598    0.001        1  1.2  1.2  1.2   1.2         1  2595.0  2595.0  2595.0  2595.0              1",
    ]
    .join("\n")
        + "\n";
    assert_eq!(table, want, "\n{table}");
}

// ---------------------------------------------------------------- invariants

/// A random but consistent schedule on `ncpu` CPUs: every task starts asleep
/// and is first seen in a wakeup, so its runtime + wait + sleep must cover the
/// whole window exactly.
fn schedule(ops: &[(u8, u8, u16)], ncpu: usize, ntask: i32) -> (Vec<Event>, Nanos) {
    #[derive(Clone, Copy, PartialEq)]
    enum St {
        Asleep,
        Queued,
        On(usize),
    }
    let mut st = vec![St::Asleep; ntask as usize + 1];
    let mut curr = vec![0i32; ncpu];
    let mut ts: Nanos = 0;
    let mut out = vec![];
    for &(kind, arg, dt) in ops {
        ts += u64::from(dt);
        let pid = 1 + i32::from(arg) % ntask;
        let cpu = usize::from(arg) % ncpu;
        match kind % 3 {
            0 if st[pid as usize] == St::Asleep => {
                out.push(wake(ts, pid));
                st[pid as usize] = St::Queued;
            }
            1 => {
                // Switch on `cpu` to some queued task (or idle), prev sleeps or is preempted.
                let next = (1..=ntask).find(|&p| st[p as usize] == St::Queued).unwrap_or(0);
                let prev = curr[cpu];
                if prev == next {
                    continue;
                }
                let state = if arg % 2 == 0 { S } else { RP };
                if prev != 0 {
                    st[prev as usize] = if state == S { St::Asleep } else { St::Queued };
                }
                if next != 0 {
                    st[next as usize] = St::On(cpu);
                }
                curr[cpu] = next;
                out.push(sw(ts, cpu as u32, prev, state, next));
            }
            _ => {
                if let St::On(c) = st[pid as usize] {
                    out.push(ev(
                        ts,
                        c as u32,
                        EventKind::SchedMigrateTask { pid, prio: 120, orig_cpu: 0, dest_cpu: 1 },
                    ));
                }
            }
        }
    }
    (out, ts)
}

proptest! {
    #[test]
    fn accounting_covers_the_window(ops in prop::collection::vec((any::<u8>(), any::<u8>(), 0u16..5000), 1..200)) {
        let (events, end) = schedule(&ops, 2, 4);
        if events.is_empty() {
            return Ok(());
        }
        let m = analyze(&trace(events.clone()), &AnalysisOptions { end_ts: Some(end), ..Default::default() });
        let window = m.end_ts - m.start_ts;
        let mut total_run = 0;
        for t in &m.tasks {
            prop_assert_eq!(t.runtime_ns + t.wait_ns + t.sleep_ns, window, "pid {}", t.pid);
            prop_assert!(t.wakeup_latency.count <= t.wakeups);
            let samples = t.wakeup_sketch.samples().expect("a short trace stays exact");
            prop_assert!(samples.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(samples.iter().sum::<u64>() <= t.wait_ns);
            total_run += t.runtime_ns;
        }
        prop_assert!(total_run <= 2 * window);
    }

    /// A sweep reads the handoffs alone: the same samples per wakee as the
    /// full metrics keep, repeated signals, unmatched waits and wakees that
    /// never waited included.
    #[test]
    fn handoffs_alone_are_the_metrics_handoffs(ops in prop::collection::vec((1u64..3_000, 1i32..5, 0u32..3, any::<bool>()), 0..300)) {
        let table = process_table(1, &[(1, "a"), (2, "b"), (3, "c"), (4, "d")], &["e0", "e1", "e2"]);
        let (mut full, mut alone) = (MetricsCollector::new(1_000, None), HandoffCollector::new(1_000));
        let mut ts = 0;
        for (dt, pid, obj, signal) in ops {
            ts += dt;
            let op = if signal { UserOp::Signal { obj } } else { UserOp::WaitDone { obj } };
            let ev = marker(ts, 0, pid, op);
            full.observe(&ev, &table);
            alone.observe(&ev);
        }
        let m = full.finish(&table);
        for pid in 1..=5 {
            let want = m.task(pid).map(|t| t.handoff_sketch.sorted_samples()).unwrap_or_default();
            prop_assert_eq!(alone.take(pid).sorted_samples(), want, "pid {}", pid);
        }
    }
}

// ---------------------------------------------------------------- pipeline

#[test]
fn same_metrics_through_ftrace_text() {
    let (events, end) = schedule(
        &[(0, 1, 10), (0, 2, 10), (1, 0, 1000), (1, 1, 3000), (0, 3, 7), (1, 2, 2000), (2, 1, 5), (1, 3, 4000)],
        2,
        3,
    );
    // Timestamps in µs so the kernel's text format is exact.
    let events: Vec<Event> = events.into_iter().map(|e| Event { ts: e.ts * 1000, ..e }).collect();
    let mut events = events;
    events.push(user(end * 1000, 1, UserOp::Signal { obj: 1 }));
    events.push(user(end * 1000 + 7_000, 2, UserOp::WaitDone { obj: 1 }));
    let original = trace(events);
    let mut text = Vec::new();
    schedlab_trace::write_ftrace(&original, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let opts = schedlab_trace::ftrace::ParseOptions { objects: original.table.objects.clone() };
    let back = schedlab_trace::ftrace::parse_ftrace_with("x.trace", &text, &opts).unwrap().trace;
    let mut a = analyze(&original, &AnalysisOptions::default());
    let mut b = analyze(&back, &AnalysisOptions::default());
    // The default text has no tgid column.
    for t in a.tasks.iter_mut().chain(b.tasks.iter_mut()) {
        t.tgid = 0;
    }
    assert_eq!(a, b);
    assert!(a.tasks.iter().any(|t| t.runtime_ns > 0));
    assert_eq!(a.task(2).unwrap().handoff_sketch.sorted_samples(), vec![7_000]);
}

#[test]
fn metrics_serialise_to_json() {
    let m =
        run(vec![sw(0, 0, 0, R, 2), user(5, 1, UserOp::Signal { obj: 0 }), user(9, 2, UserOp::WaitDone { obj: 0 })]);
    let v: serde_json::Value = serde_json::to_value(&m).unwrap();
    assert_eq!(v["stall_threshold_ns"], 500_000);
    let t2 = &v["tasks"][1];
    assert_eq!(t2["pid"], 2);
    assert_eq!(t2["comm"], "worker-a");
    assert_eq!(t2["runtime_ns"], 9);
    assert_eq!(t2["handoff_latency"]["count"], 1);
    assert_eq!(t2["handoff_latency"]["p99_ns"], 4);
    assert!(t2["wakeup_latency"]["p50_ns"].is_null());
    assert!(t2.get("wakeup_sketch").is_none() && t2.get("wakeup_samples").is_none());
}

/// A long run past the exact-sample cap: the same counts, waits and
/// maximum as with every sample kept; percentiles at most 1/128 below.
#[test]
fn past_the_exact_cap_the_collector_buckets_and_stays_within_its_error() {
    // Task 1 woken on CPU 0 and switched in after 1..5000 ns, 6000 times;
    // handoffs to it from task 2 of 10..60000 ns.
    let mut events = Vec::new();
    let mut t = 1_000;
    for i in 0..6_000u64 {
        let lat = 1 + (i * 7_919) % 5_000;
        events.push(wake(t, 1));
        events.push(sw(t + lat, 0, 0, PrevState::Running { preempt: false }, 1));
        events.push(user(t + lat + 1, 2, UserOp::Signal { obj: 0 }));
        events.push(user(t + lat + 11 + (i * 104_729) % 60_000, 1, UserOp::WaitDone { obj: 0 }));
        t += 100_000;
        events.push(sw(t - 10, 0, 1, PrevState::Sleeping, 0));
    }
    let tr = trace(events);
    let exact = analyze(&tr, &AnalysisOptions { stall_threshold_ns: 50_000, end_ts: None });
    let mut c = MetricsCollector::new(50_000, None).with_exact_samples(2_000);
    for e in tr.in_time_order().iter() {
        c.observe(e, &tr.table);
    }
    let sketched = c.finish(&tr.table);
    let (a, b) = (exact.task(1).unwrap(), sketched.task(1).unwrap());
    assert_eq!((a.runtime_ns, a.wait_ns, a.sleep_ns, a.wakeups), (b.runtime_ns, b.wait_ns, b.sleep_ns, b.wakeups));
    // The collector keeps the first stalls it was told to and counts the rest.
    assert_eq!(exact.stall_count(), sketched.stall_count());
    assert_eq!(exact.stalls[..sketched.stalls.len()], sketched.stalls[..]);
    for (x, y) in [(&a.wakeup_latency, &b.wakeup_latency), (&a.handoff_latency, &b.handoff_latency)] {
        assert!(!x.approximate && y.approximate);
        assert_eq!((x.count, x.max_ns, x.at_or_above_threshold), (y.count, y.max_ns, y.at_or_above_threshold));
        for (e, s) in [(x.p50_ns, y.p50_ns), (x.p90_ns, y.p90_ns), (x.p99_ns, y.p99_ns)] {
            let (e, s) = (e.unwrap() as f64, s.unwrap() as f64);
            assert!(s <= e && s >= e * (1.0 - RELATIVE_ERROR), "{s} vs exact {e}");
        }
    }
    assert!(!b.wakeup_sketch.is_exact() && b.handoff_sketch.count() == 6_000);
    // JSON says which figures are approximate, and only then.
    let j = serde_json::to_value(&sketched).unwrap();
    assert_eq!(j["tasks"][0]["wakeup_latency"]["approximate"], true);
    assert!(serde_json::to_value(&exact).unwrap()["tasks"][0]["wakeup_latency"].get("approximate").is_none());
    // So does the table.
    let (te, ts) = (render_run_table(&exact), render_run_table(&sketched));
    assert!(!te.contains('~'), "{te}");
    assert!(ts.contains(" ~") && ts.contains("percentiles from buckets") && ts.contains("0.78 % below"), "{ts}");
}

/// A wakeup whose switch-in the trace's repair put back has no latency:
/// the inserted switch's time is only the earliest it could have been.
#[test]
fn a_wakeup_ending_at_a_repaired_switch_has_unknown_latency() {
    let mut repaired = sw(300, 1, 0, R, 2);
    repaired.flags = Event::REPAIRED_FLAGS;
    let m = run(vec![wake(100, 2), repaired, sw(500, 1, 2, S, 0), wake(600, 2), sw(650, 1, 0, R, 2)]);
    let t = m.task(2).unwrap();
    assert_eq!(t.wakeups, 2);
    assert_eq!(t.wakeup_latency_unknown, 1);
    assert_eq!(t.wakeup_latency.count, 1, "only the traced switch-in gives a sample");
    assert_eq!(t.wakeup_latency.max_ns, Some(50));
}
