//! Stall attribution on hand-written traces: one stall per cause, injected
//! into an otherwise quiet machine, must be attributed to that cause.

use schedlab_trace::testing::{event as ev, marker, migrate, process_table, switch_prio, trace as trace_of};
use schedlab_trace::{
    BalanceKind, DelayedWhat, Event, EventKind, Nanos, Pid, PreemptReason, PrevState, Trace, UserOp, WakePath,
};

use super::*;
use crate::{render_cause_table, render_stall_narratives, AttributionCollector};

const WAKER: Pid = 1;
const A: Pid = 2;
const B: Pid = 3;
const RT: Pid = 5;
const STOPPER7: Pid = 107;
const S: PrevState = PrevState::Sleeping;
const RP: PrevState = PrevState::Running { preempt: true };
const DELAYED: WakePath = WakePath::Runnable { delayed: true };

fn prio(pid: Pid) -> i32 {
    match pid {
        RT => 50,
        STOPPER7 => 0,
        _ => 120,
    }
}

fn sw(ts: Nanos, cpu: u32, prev: Pid, state: PrevState, next: Pid) -> Event {
    switch_prio(ts, cpu, (prev, prio(prev)), state, (next, prio(next)))
}

fn ttwu(ts: Nanos, pid: Pid, path: WakePath, cpu: u32) -> Event {
    ev(ts, 2, WAKER, EventKind::Ttwu { pid, path, cpu })
}

fn wakeup(ts: Nanos, on: u32, pid: Pid, cpu: u32) -> Event {
    ev(ts, on, WAKER, EventKind::SchedWakeup { pid, prio: prio(pid), target_cpu: cpu })
}

fn delayed(ts: Nanos, cpu: u32, pid: Pid, what: DelayedWhat, lag: i64) -> Event {
    ev(ts, cpu, pid, EventKind::Delayed { pid, what, lag })
}

fn preempt_check(ts: Nanos, wakee: Pid, curr: Pid) -> Event {
    ev(ts, 2, WAKER, EventKind::WakeupPreempt { wakee, curr, preempt: false, reason: PreemptReason::NotPicked })
}

fn lb(ts: Nanos, pid: Pid, from: u32, to: u32, kind: BalanceKind) -> Event {
    ev(ts, from, 0, EventKind::LbMigrate { pid, src_cpu: from, dst_cpu: to, kind, delayed: false })
}

fn signal(ts: Nanos) -> Event {
    marker(ts, 2, WAKER, UserOp::Signal { obj: 0 })
}

fn done(ts: Nanos, cpu: u32, pid: Pid) -> Event {
    marker(ts, cpu, pid, UserOp::WaitDone { obj: 0 })
}

/// The waker spins on CPU 2 throughout; CPUs 4-7 are the workers'.
fn trace(mut events: Vec<Event>) -> Trace {
    events.insert(0, sw(0, 2, 0, PrevState::Running { preempt: false }, WAKER));
    let tasks = [(WAKER, "waker"), (A, "worker-0"), (B, "worker-1"), (RT, "rt-hog"), (STOPPER7, "migration/7")];
    trace_of(process_table(1, &tasks, &["efd0"]), 8, events)
}

fn attribute(events: Vec<Event>) -> Attribution {
    let opts = AttributionOptions {
        allowed: [(A, vec![4, 5, 6, 7]), (B, vec![4, 5, 6, 7])].into_iter().collect(),
        ..AttributionOptions::default()
    };
    attribute_stalls(&trace(events), &opts)
}

/// The one stall of `events`, checked to have `cause` and `culprit`.
fn only(events: Vec<Event>, cause: Cause, culprit: Option<Pid>) -> StallStory {
    let a = attribute(events);
    assert_eq!(a.stalls.len(), 1, "{a:#?}");
    let s = a.stalls[0].clone();
    assert_eq!((s.cause, s.culprit_pid), (cause, culprit), "{s:#?}");
    assert_eq!(a.count(cause), 1);
    assert!(!s.summary.is_empty());
    s
}

/// The summary of `s` contains `text`.
#[track_caller]
fn assert_says(s: &StallStory, text: &str) {
    assert!(s.summary.contains(text), "{}", s.summary);
}

/// Seed 000's sequence: A blocks on CPU 6 while ineligible behind B, the
/// waker's write requeues it in place, B's burst runs first.
#[test]
fn delayed_in_place_behind_the_other_worker() {
    let s = only(
        vec![
            sw(0, 6, 0, S, A),
            migrate(50, B, 7, 6),
            lb(50, B, 7, 6, BalanceKind::Active),
            delayed(200, 6, A, DelayedWhat::Delayed, -93_000),
            sw(200, 6, A, S, B),
            signal(300),
            ttwu(300, A, DELAYED, 6),
            delayed(300, 2, A, DelayedWhat::Requeued, -93_000),
            preempt_check(300, A, B),
            wakeup(300, 2, A, 6),
            sw(1_000_300, 6, B, S, A),
            done(1_000_400, 6, A),
        ],
        Cause::DelayedInPlace,
        Some(B),
    );
    assert_eq!(s.latency_ns, 1_000_100);
    assert_eq!(s.cause_ns, 1_000_000);
    assert_eq!(s.culprit_cpu, Some(6));
    assert_eq!((s.blocked_cpu, s.blocked_delayed_lag_ns), (Some(6), Some(-93_000)));
    let w = s.wakeup.as_ref().unwrap();
    assert_eq!((w.path, w.cpu, w.curr_at_decision, w.requeued_lag_ns), (Some(DELAYED), 6, B, Some(-93_000)));
    assert_eq!(w.preempt.as_ref().map(|p| (p.preempt, p.reason)), Some((false, PreemptReason::NotPicked)));
    let arr = s.culprit_arrival.as_ref().unwrap();
    assert_eq!((arr.ts, arr.src_cpu, arr.balancer), (50, 7, Some(BalanceKind::Active)));
    // JSON names the enums as the trace text does.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["wakeup"]["path"], "runnable_delayed");
    assert_eq!(json["wakeup"]["preempt"]["reason"], "not_picked");
    assert_eq!(json["culprit_arrival"]["balancer"], "active");
    assert_eq!(s.wait_ns, 1_000_000);
    let idle: Vec<(u32, u64)> = s.idle_allowed.iter().map(|c| (c.cpu, c.idle_ns)).collect();
    assert_eq!(idle, [(4, 1_000_000), (5, 1_000_000), (7, 1_000_000)]);
    assert_says(&s, "worker-0 blocked on CPU 6 while ineligible -> left delayed (lag -93.0 us)");
    assert_says(&s, "woke it via ttwu_runnable (delayed, no select_task_rq)");
    assert_says(&s, "not preempting worker-1 (not_picked)");
    assert_says(&s, "moved there 0.2 us earlier by active_load_balance_cpu_stop from CPU 7");
    assert_says(&s, "CPUs 4-5,7 idle for 100 % of the wait");
    assert!(s.summary.ends_with("worker-0 ran 1000.0 us late"), "{}", s.summary);
}

/// Preempted (`R+`) while going to sleep, then woken by `ttwu_runnable()`
/// without a delayed entity: it keeps waiting where it was.
#[test]
fn runnable_in_place_after_a_preemption_on_the_way_to_sleep() {
    only(
        vec![
            sw(0, 6, 0, S, A),
            sw(100, 6, A, RP, B),
            signal(200),
            ttwu(200, A, WakePath::Runnable { delayed: false }, 6),
            wakeup(200, 2, A, 6),
            sw(800_200, 6, B, S, A),
            done(800_300, 6, A),
        ],
        Cause::RunnableInPlace,
        Some(B),
    );
}

/// A slept on CPU 5; its wakeup moves it to CPU 6, where B runs. A simulated
/// trace: it has the `schedlab_ttwu` and `schedlab_wakeup_preempt` events.
fn woken_onto_b_on_cpu6() -> Vec<Event> {
    vec![
        sw(0, 6, 0, S, B),
        sw(0, 5, A, S, 0),
        signal(100),
        migrate(100, A, 5, 6),
        ttwu(100, A, WakePath::Activate, 6),
        preempt_check(100, A, B),
        wakeup(100, 2, A, 6),
        sw(700_100, 6, B, S, A),
        done(700_200, 6, A),
    ]
}

#[test]
fn placed_on_a_busy_cpu_by_select_task_rq() {
    let s = only(woken_onto_b_on_cpu6(), Cause::BusyCpuSelected, Some(B));
    assert_eq!(s.wakeup.as_ref().unwrap().curr_at_decision, B);
    assert_says(&s, "select_task_rq -> CPU 6 (running worker-1 at the decision)");
}

/// The same stall in a real kernel's trace (no `schedlab_ttwu`, no
/// `schedlab_wakeup_preempt`): the path is not claimed, only the busy CPU.
#[test]
fn woken_onto_a_busy_cpu_without_decision_events() {
    let real = woken_onto_b_on_cpu6()
        .into_iter()
        .filter(|e| !matches!(e.kind, EventKind::Ttwu { .. } | EventKind::WakeupPreempt { .. }))
        .collect();
    let s = only(real, Cause::WokenOntoBusyCpu, Some(B));
    assert_eq!(s.wakeup.as_ref().unwrap().path, None);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!((&json["wakeup"]["path"], &json["wakeup"]["preempt"]), (&"unknown".into(), &serde_json::Value::Null));
    assert!(!s.summary.contains("select_task_rq ->"), "{}", s.summary);
}

/// The wakeup vs. active-balance race: CPU 6 idle when chosen, the stopper
/// on CPU 7 pushes B there and B is picked first.
fn race(arrive: &[Event]) -> Vec<Event> {
    let mut v = vec![sw(0, 7, 0, S, B), sw(10, 6, A, S, 0), signal(100), ttwu(100, A, WakePath::Wakelist, 6)];
    v.extend_from_slice(arrive);
    v.extend([wakeup(110, 6, A, 6), sw(110, 6, 0, S, B), sw(700_000, 6, B, S, A), done(700_100, 6, A)]);
    v
}

#[test]
fn stacked_by_the_load_balancer_after_select_task_rq() {
    let s = only(
        race(&[
            ev(90, 0, 0, EventKind::ActiveBalanceQueued { src_cpu: 7, dst_cpu: 6 }),
            sw(105, 7, B, RP, STOPPER7),
            migrate(105, B, 7, 6),
            lb(105, B, 7, 6, BalanceKind::Active),
            sw(105, 7, STOPPER7, S, 0),
        ]),
        Cause::StackedByBalancer,
        Some(B),
    );
    assert_eq!(s.wakeup.as_ref().unwrap().curr_at_decision, 0);
    let arr = s.culprit_arrival.as_ref().unwrap();
    assert_eq!((arr.balancer, arr.active_queued_ts), (Some(BalanceKind::Active), Some(90)));
    assert!(s.steps.iter().any(|st| st.text.contains("need_active_balance")), "{:#?}", s.steps);
}

#[test]
fn stacked_by_a_concurrent_wakeup() {
    let s = only(
        race(&[sw(105, 7, B, S, 0), migrate(106, B, 7, 6), wakeup(106, 7, B, 6)]),
        Cause::StackedByWakeup,
        Some(B),
    );
    let arr = s.culprit_arrival.as_ref().unwrap();
    assert_eq!((arr.ts, arr.balancer), (106, None));
    assert_eq!(serde_json::to_value(&s).unwrap()["culprit_arrival"]["balancer"], serde_json::Value::Null);
}

#[test]
fn migrated_onto_a_busy_cpu_while_waiting() {
    let s = only(
        vec![
            sw(0, 6, 0, S, B),
            sw(0, 5, A, S, 0),
            signal(100),
            ttwu(100, A, WakePath::Activate, 5),
            wakeup(100, 2, A, 5),
            migrate(2_100, A, 5, 6),
            lb(2_100, A, 5, 6, BalanceKind::Periodic),
            sw(600_000, 6, B, S, A),
            done(600_100, 6, A),
        ],
        Cause::MovedOntoBusyCpu,
        Some(B),
    );
    assert_says(&s, "periodic sched_balance_rq moved worker-0 from CPU 5 to CPU 6 after 2.0 us");
}

/// A preempted before the signal: the signal finds it runnable behind B.
fn preempted_by(culprit: Pid) -> Vec<Event> {
    vec![sw(0, 6, 0, S, A), sw(20, 6, A, RP, culprit), signal(30), sw(600_030, 6, culprit, S, A), done(600_031, 6, A)]
}

#[test]
fn preempted_by_a_fair_task() {
    let s = only(preempted_by(B), Cause::Preempted, Some(B));
    assert!(s.wakeup.is_none());
    assert!(s.summary.starts_with("worker-0 preempted on CPU 6 by worker-1"), "{}", s.summary);
}

#[test]
fn waiting_behind_a_higher_class() {
    only(preempted_by(RT), Cause::HigherClass, Some(RT));
}

#[test]
fn ipi_and_idle_exit_latency() {
    let s = only(
        vec![
            sw(0, 6, A, S, 0),
            signal(100),
            ttwu(100, A, WakePath::Wakelist, 6),
            ev(100, 2, WAKER, EventKind::Resched { cpu: 6, ipi: true }),
            wakeup(400_100, 6, A, 6),
            sw(600_100, 6, 0, S, A),
            done(600_200, 6, A),
        ],
        Cause::IpiIdleExit,
        None,
    );
    assert_eq!(s.cause_ns, 600_000);
    let parts: Vec<(Part, u64)> = s.components.iter().map(|c| (c.part, c.ns)).collect();
    assert_eq!(parts, [(Part::Wakeup, 400_000), (Part::IdleExit, 200_000), (Part::Running, 100)]);
}

#[test]
fn not_a_runqueue_wait() {
    only(vec![sw(0, 6, 0, S, A), signal(100), done(600_100, 6, A)], Cause::NoRunqueueWait, None);
}

#[test]
fn short_handoffs_are_not_stalls() {
    let a = attribute(vec![
        sw(0, 6, A, S, 0),
        signal(100),
        ttwu(100, A, WakePath::Wakelist, 6),
        wakeup(103, 6, A, 6),
        sw(103, 6, 0, S, A),
        done(104, 6, A),
    ]);
    assert!(a.stalls.is_empty() && a.causes.is_empty());
}

/// The cause table sums stalls per (cause, culprit); shares add up to 100 %.
#[test]
fn cause_table_aggregates_per_cause_and_culprit() {
    let mut events = preempted_by(B);
    let shift = |e: &Event, by: Nanos| Event { ts: e.ts + by, ..*e };
    // A second preemption by B and one by the RT task, later in the trace.
    events.extend(preempted_by(B).iter().skip(1).map(|e| shift(e, 1_000_000)));
    events.extend(preempted_by(RT).iter().skip(1).map(|e| shift(e, 2_000_000)));
    let a = attribute(events);
    assert_eq!(a.stalls.len(), 3);
    let rows: Vec<(Cause, Option<Pid>, u64)> = a.causes.iter().map(|r| (r.cause, r.culprit_pid, r.stalls)).collect();
    assert_eq!(rows, [(Cause::Preempted, Some(B), 2), (Cause::HigherClass, Some(RT), 1)]);
    assert_eq!(a.total_ns, 3 * 600_001);
    let share: f64 = a.causes.iter().map(|r| r.share_pct).sum();
    assert!((share - 100.0).abs() < 1e-9);

    let table = render_cause_table(&a);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("cause") && lines[0].ends_with("culprit"), "{table}");
    assert!(
        lines[1].contains("preempted, waiting behind a fair task") && lines[1].ends_with("worker-1 (3)"),
        "{table}"
    );
    assert!(lines[1].contains("  2  ") && lines[1].contains("1200.0") && lines[1].contains("66.7 %"), "{table}");
    assert!(table.lines().all(|l| l == l.trim_end()));

    let text = render_stall_narratives(&a, 2);
    assert!(text.starts_with("stall 1 of 3: worker-0 waited 600.0 us for efd0 from waker"), "{text}");
    assert!(text.contains("stall 2 of 3") && !text.contains("stall 3 of 3"), "{text}");
    assert!(
        text.contains("  cause     preempted, waiting behind worker-1 (600.0 us, 100.0 % of the handoff)"),
        "{text}"
    );
    assert!(text.lines().all(|l| l == l.trim_end()));
    assert_eq!(render_stall_narratives(&a, 0), "");
}

/// A streamed run holds a bounded window: a stall whose signal left it is
/// counted as unexplained (and said so in the report), not dropped silently
/// or explained from half its story.
#[test]
fn a_stall_whose_signal_left_the_window_is_counted_unexplained() {
    let mut events = vec![sw(0, 6, 0, S, A), sw(200, 6, A, S, B), signal(300), wakeup(300, 2, A, 6)];
    // Work on another CPU while the handoff stays open.
    events.extend((0..20).map(|i| sw(400 + i * 1000, 3, 0, RP, 0)));
    events.extend([sw(1_000_300, 6, B, S, A), done(1_000_400, 6, A)]);
    let t = trace(events);
    let opts = AttributionOptions { allowed: [(A, vec![4, 5, 6, 7])].into_iter().collect(), ..Default::default() };
    let feed = |c: AttributionCollector| {
        let mut c = c;
        t.events.iter().for_each(|e| c.observe(e));
        c.finish()
    };
    let whole = feed(AttributionCollector::new(&opts, &t.table, t.nr_cpus));
    assert_eq!((whole.stalls.len(), whole.unexplained), (1, 0));
    let tiny = feed(AttributionCollector::new(&opts, &t.table, t.nr_cpus).with_max_window(8));
    assert_eq!((tiny.stalls.len(), tiny.unexplained, tiny.total_ns), (0, 1, 0));
    assert_eq!(serde_json::to_value(&tiny).unwrap()["unexplained"], 1);
    assert!(serde_json::to_value(&whole).unwrap().get("unexplained").is_none(), "absent when 0");
}
