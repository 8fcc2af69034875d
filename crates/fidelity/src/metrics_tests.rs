//! The metrics on small hand-made traces: what each reads, and when it
//! refuses to give a figure.

use super::*;
use schedlab_report::Report;
use schedlab_scenario::Scenario;
use schedlab_trace::{Event, EventKind, PrevState, TaskInfo, Trace, UserOp};
use std::collections::BTreeMap;
use std::path::Path;

const A: Pid = 101;
const B: Pid = 102;

fn scenario(case: &str) -> Scenario {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let topo = schedlab_topology::Topology::load(&root.join(crate::DEFAULT_TOPOLOGY)).unwrap();
    crate::load_case(crate::cases::CASES.iter().find(|c| c.name == case).unwrap(), &topo).unwrap()
}

fn ev(ts: u64, kind: EventKind) -> Event {
    Event { ts, cpu: 1, ctx_pid: 0, flags: *b"d..2.", kind }
}

fn switch(ts: u64, prev: Pid, sleeping: bool, next: Pid) -> Event {
    let prev_state = if sleeping { PrevState::Sleeping } else { PrevState::Running { preempt: true } };
    ev(ts, EventKind::SchedSwitch { prev_pid: prev, prev_prio: 120, prev_state, next_pid: next, next_prio: 120 })
}

fn wakeup(ts: u64, pid: Pid) -> Event {
    ev(ts, EventKind::SchedWakeup { pid, prio: 120, target_cpu: 1 })
}

fn loop_end(ts: u64, pid: Pid, n: u32) -> Event {
    ev(ts, EventKind::User { pid, op: UserOp::LoopEnd { n } })
}

struct Run {
    scenario: Scenario,
    trace: Trace,
    report: Report,
    end: u64,
    pids: Vec<Pid>,
}

/// `events` as a run of `case`'s scenario whose threads are A (and B), from 0 to `end`.
fn run(case: &str, events: Vec<Event>, end: u64) -> Run {
    let scenario = scenario(case);
    let pids: Vec<Pid> = [A, B].into_iter().take(scenario.threads.len()).collect();
    let mut trace = Trace { nr_cpus: 2, events, ..Default::default() };
    for (t, &p) in scenario.threads.iter().zip(&pids) {
        trace.table.tasks.insert(p, TaskInfo { comm: t.name.clone(), tgid: 100 });
    }
    let allowed: BTreeMap<Pid, Vec<u32>> = pids.iter().map(|&p| (p, vec![1])).collect();
    let report = Report::of_workload(&scenario, &trace, end, allowed, &pids, 100_000);
    Run { scenario, trace, report, end, pids }
}

impl Run {
    fn side<'a>(&'a self, resolution_ns: u64, problems: &'a [String]) -> Side<'a> {
        Side {
            scenario: &self.scenario,
            trace: &self.trace,
            report: &self.report,
            start_ns: 0,
            end_ns: self.end,
            pids: &self.pids,
            resolution_ns,
            problems,
        }
    }
}

/// cyclictest's thread A: `late(i)` ns past each 1 ms sleep, `n` periods.
fn periodic(n: u64, late: impl Fn(u64) -> u64) -> Vec<Event> {
    let mut t = 1_000;
    let mut v = vec![loop_end(t, A, 0)];
    for i in 0..n {
        t += 1_000_000 + late(i);
        v.push(loop_end(t, A, i as u32 + 1));
    }
    v
}

#[test]
fn timer_to_run_is_each_period_beyond_the_sleep_from_markers_alone() {
    // 3..12 us late, ten of each: p50 is the 150th of 300 (7 us), p99 the 297th (12 us).
    let r = run("cyclictest", periodic(300, |i| (i % 10 + 3) * 1000), 400_000_000);
    let side = r.side(1000, &[]);
    assert_eq!(Metric::TimerToRun(Pct::P50, "cyclic").figure(&side), Ok(7.0));
    assert_eq!(Metric::TimerToRun(Pct::P99, "cyclic").figure(&side), Ok(12.0));

    let r = run("cyclictest", periodic(100, |i| (i % 10 + 3) * 1000), 400_000_000);
    let err = Metric::TimerToRun(Pct::P99, "cyclic").figure(&r.side(1000, &[])).unwrap_err();
    assert_eq!(err, "100 periods (a p99 needs 200)");
    assert_eq!(Metric::TimerToRun(Pct::P50, "cyclic").figure(&r.side(1000, &[])), Ok(7.0));
}

#[test]
fn a_latency_the_trace_clock_cannot_resolve_for_its_band_is_refused() {
    // 1.5 us late every time: the model (1 ns steps) has a figure, a
    // tracefs capture (1 us steps) cannot judge it within ±50 %.
    let r = run("cyclictest", periodic(300, |_| 1_500), 400_000_000);
    assert_eq!(Metric::TimerToRun(Pct::P50, "cyclic").figure(&r.side(1, &[])), Ok(1.5));
    let err = Metric::TimerToRun(Pct::P50, "cyclic").figure(&r.side(1000, &[])).unwrap_err();
    assert!(err.contains("below 2.0 us"), "{err}");
    // The model's exact 0 is a figure (a ratio of 0 fails the band).
    let r0 = run("cyclictest", periodic(300, |_| 0), 400_000_000);
    assert_eq!(Metric::TimerToRun(Pct::P50, "cyclic").figure(&r0.side(1, &[])), Ok(0.0));
    // A 3x band tolerates coarser steps.
    assert_eq!(Metric::TimerToRun(Pct::P99, "cyclic").figure(&r.side(1000, &[])), Ok(1.5));
}

/// A wakes at 1 ms intervals and runs 100 us; `switched_in(i)` says whether
/// the trace has its i-th switch-in (a real capture may miss some).
fn wakeups(n: u64, switched_in: impl Fn(u64) -> bool) -> Vec<Event> {
    let mut v = Vec::new();
    for i in 0..n {
        let t = 1_000_000 * (i + 1);
        v.push(wakeup(t, A));
        if switched_in(i) {
            v.push(switch(t + 4_000, 0, false, A));
        }
        v.push(switch(t + 100_000, A, true, 0));
    }
    v
}

#[test]
fn a_wakeup_latency_needs_nearly_every_wakeup_switched_in() {
    let r = run("cyclictest", wakeups(300, |_| true), 400_000_000);
    assert_eq!(Metric::Wakeup(Pct::P50).figure(&r.side(1000, &[])), Ok(4.0));
    // Every third switch-in missing: the latency of the rest is not the whole story.
    let r = run("cyclictest", wakeups(300, |i| i % 3 != 0), 400_000_000);
    let err = Metric::Wakeup(Pct::P50).figure(&r.side(1000, &[])).unwrap_err();
    assert!(err.starts_with("200 of 300 wakeups have a traced switch-in"), "{err}");
}

#[test]
fn a_loop_rate_counts_one_thread_s_iterations_in_the_window() {
    let mut events: Vec<Event> = (0..500u64).map(|i| loop_end(1_000 + i * 2_000_000, A, i as u32)).collect();
    events.extend((0..50u64).map(|i| loop_end(5_000 + i * 2_000_000, B, i as u32)));
    let r = run("pingpong-2cpu", events, 1_000_000_000);
    assert_eq!(Metric::LoopRate("ping").figure(&r.side(1000, &[])), Ok(500.0));
    assert_eq!(Metric::LoopRate("pong").figure(&r.side(1000, &[])), Ok(50.0));
    let r = run("pingpong-2cpu", vec![loop_end(1_000, A, 0)], 1_000_000_000);
    assert_eq!(Metric::LoopRate("ping").figure(&r.side(1000, &[])), Err("ping ended 1 loops (a rate needs 20)".into()));
}

#[test]
fn a_share_is_of_the_hogs_cpu_time_and_needs_them_to_have_had_the_cpu() {
    // A runs 3 ms, B 1 ms, over and over, for 1 s.
    let mut events = Vec::new();
    let mut t = 0;
    while t < 1_000_000_000 {
        events.push(switch(t, B, false, A));
        events.push(switch(t + 3_000_000, A, false, B));
        t += 4_000_000;
    }
    // Then both leave the CPU (B blocks at the end of its turn).
    events.push(switch(t, B, true, 0));
    let r = run("nice", events, 1_000_000_000);
    let share = Metric::Share("nice0").figure(&r.side(1000, &[])).unwrap();
    assert!((share - 75.0).abs() < 0.01, "{share}");

    // The same over a 4 s window: the hogs had the CPU a quarter of it.
    let r = run("nice", r.trace.events.clone(), 4_000_000_000);
    let err = Metric::Share("nice0").figure(&r.side(1000, &[])).unwrap_err();
    assert!(err.starts_with("the workload ran 25 % of the window"), "{err}");
}

#[test]
fn a_capture_with_problems_gives_no_figure_at_all() {
    let r = run("cyclictest", periodic(300, |_| 5_000), 400_000_000);
    let problems = ["the ring buffer lost 12 events".to_string()];
    for m in [Metric::TimerToRun(Pct::P50, "cyclic"), Metric::Wakeup(Pct::P99), Metric::StallFraction] {
        assert_eq!(m.figure(&r.side(1000, &problems)), Err("the ring buffer lost 12 events".into()), "{m:?}");
    }
}

#[test]
fn placement_pairs_each_wakeup_with_the_waking_before_it() {
    let on = |ts, cpu, kind| Event { ts, cpu, ctx_pid: 0, flags: *b"d..2.", kind };
    let waking = |ts, cpu, pid, target_cpu| on(ts, cpu, EventKind::SchedWaking { pid, prio: 120, target_cpu });
    let wakeup = |ts, cpu, pid, target_cpu| on(ts, cpu, EventKind::SchedWakeup { pid, prio: 120, target_cpu });
    // The placement case: A is the waker (CPU 0), B the sleeper. 30
    // wakeups, every third placed on the waker's CPU 0, the rest on CPU 1.
    let mut events = Vec::new();
    for i in 0..30u64 {
        let t = 1_000 + i * 220_000;
        events.push(waking(t, 0, B, 1));
        let target = if i % 3 == 0 { 0 } else { 1 };
        events.push(wakeup(t + 500, target, B, target));
    }
    // A wakeup without its waking (before the capture began) is not paired.
    events.insert(0, wakeup(10, 1, B, 1));
    let r = run("placement", events, 10_000_000);
    let on_waker = Metric::WakerCpu("sleeper").figure(&r.side(1000, &[])).unwrap();
    assert!((on_waker - 100.0 / 3.0).abs() < 1e-9, "{on_waker}");
    assert_eq!(Band::Placement.judge(&Ok(on_waker), &Ok(0.0)).1, schedlab_report::Verdict::Fail);
    assert_eq!(Band::Placement.judge(&Ok(8.0), &Ok(0.0)).1, schedlab_report::Verdict::Pass);

    // Fewer than 20 pairs: no figure.
    let r = run("placement", r.trace.events[..20].to_vec(), 10_000_000);
    let err = Metric::WakerCpu("sleeper").figure(&r.side(1000, &[])).unwrap_err();
    assert!(err.starts_with("9 wakeups of sleeper with their sched_waking"), "{err}");
}

#[test]
fn woken_running_counts_the_wakings_of_a_task_still_current_on_a_cpu() {
    let on = |ts, cpu, kind| Event { ts, cpu, ctx_pid: 0, flags: *b"d..2.", kind };
    let waking = |ts, cpu, pid| on(ts, cpu, EventKind::SchedWaking { pid, prio: 120, target_cpu: 1 });
    let sw = |ts, cpu, prev, next, sleeping: bool| {
        let prev_state = if sleeping { PrevState::Sleeping } else { PrevState::Running { preempt: true } };
        on(
            ts,
            cpu,
            EventKind::SchedSwitch { prev_pid: prev, prev_prio: 120, prev_state, next_pid: next, next_prio: 120 },
        )
    };
    // B runs on CPU 1; A (on CPU 0) wakes it 40 times: every fourth while it
    // is still current (its switch out comes after), the rest after it slept.
    let mut events = vec![sw(0, 1, 0, B, false)];
    for i in 0..40u64 {
        let t = 1_000 + i * 10_000;
        if i % 4 == 0 {
            events.push(waking(t, 0, B));
        } else {
            events.push(sw(t, 1, B, 0, true));
            events.push(waking(t + 100, 0, B));
            events.push(sw(t + 200, 1, 0, B, false));
        }
    }
    let r = run("schbench-m1-t2", events, 1_000_000);
    let share = Metric::WokenRunning.figure(&r.side(1000, &[])).unwrap();
    assert!((share - 25.0).abs() < 1e-9, "{share}");
    // Wakings of a thread that is not the workload's are not counted.
    let r = run("schbench-m1-t2", vec![waking(5, 0, 999); 30], 1_000_000);
    assert!(Metric::WokenRunning.figure(&r.side(1000, &[])).unwrap_err().starts_with("0 wakeups"));
}

#[test]
fn loops_on_cpu_counts_the_second_half_of_the_window_only() {
    let on = |ts, cpu, n| Event {
        ts,
        cpu,
        ctx_pid: 0,
        flags: *b"d..2.",
        kind: EventKind::User { pid: B, op: UserOp::LoopEnd { n } },
    };
    // The rt-squeeze case: B is the fair thread. 100 loops 10 ms apart over
    // 1 s: the first 30 on CPU 0, then on CPU 1, except every tenth of the
    // second half, which ends on CPU 0 again.
    let events: Vec<Event> = (0..100u32)
        .map(|i| {
            let cpu = if i < 30 || (i >= 50 && i % 10 == 0) { 0 } else { 1 };
            on(5_000_000 + u64::from(i) * 10_000_000, cpu, i)
        })
        .collect();
    let r = run("rt-squeeze", events, 1_000_000_000);
    let m = Metric::LoopsOnCpu("fair", 0);
    // Second half: loops 50..99, five of them (50, 60, ..., 90) on CPU 0.
    assert_eq!(m.figure(&r.side(1000, &[])), Ok(10.0));
    assert_eq!(Metric::LoopsOnCpu("fair", 1).figure(&r.side(1000, &[])), Ok(90.0));
    assert_eq!(Band::Placement.judge(&Ok(100.0), &Ok(0.0)).1, schedlab_report::Verdict::Fail);
    // Fewer than 20 loops in the second half: no figure.
    let r = run("rt-squeeze", r.trace.events[..65].to_vec(), 1_000_000_000);
    let err = m.figure(&r.side(1000, &[])).unwrap_err();
    assert!(err.starts_with("fair ended 15 loops in the second half"), "{err}");
}
