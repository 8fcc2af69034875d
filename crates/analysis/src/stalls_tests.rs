//! The stall breakdown on hand-built event sequences: one per class.

use schedlab_trace::testing::{event, marker, migrate, process_table, switch, trace as trace_of, EventExt};
use schedlab_trace::{BalanceKind, Event, EventKind, Nanos, Pid, PrevState, Trace, UserOp, WakePath};

use super::*;

const WAKER: Pid = 1;
const A: Pid = 2;
const B: Pid = 3;
const HOG: Pid = 4;

// Kernel events fire outside any task (context pid 0); wakeups from CPU 2.
fn ev(ts: Nanos, cpu: u32, kind: EventKind) -> Event {
    event(ts, cpu, 0, kind)
}

fn sw(ts: Nanos, cpu: u32, prev: Pid, state: PrevState, next: Pid) -> Event {
    switch(ts, cpu, prev, state, next).ctx(0)
}

fn ttwu(ts: Nanos, pid: Pid, path: WakePath, cpu: u32) -> Event {
    ev(ts, 2, EventKind::Ttwu { pid, path, cpu })
}

fn wakeup(ts: Nanos, pid: Pid, cpu: u32) -> Event {
    schedlab_trace::testing::wakeup(ts, 2, 0, pid, cpu)
}

fn lb(ts: Nanos, pid: Pid, from: u32, to: u32, kind: BalanceKind) -> Event {
    ev(ts, from, EventKind::LbMigrate { pid, src_cpu: from, dst_cpu: to, kind, delayed: false })
}

fn signal(ts: Nanos, obj: u32) -> Event {
    marker(ts, 2, WAKER, UserOp::Signal { obj })
}

fn done(ts: Nanos, cpu: u32, pid: Pid, obj: u32) -> Event {
    marker(ts, cpu, pid, UserOp::WaitDone { obj })
}

fn trace(events: Vec<Event>) -> Trace {
    let tasks = [(WAKER, "waker"), (A, "worker-0"), (B, "worker-1"), (HOG, "hog")];
    trace_of(process_table(1, &tasks, &["efd0", "efd1"]), 8, events)
}

fn opts() -> StallOptions {
    StallOptions {
        wakees: vec![A, B],
        threshold_ns: 500_000,
        top_cpu: Some(6),
        allowed_cpus: vec![4, 5, 6, 7],
        end_ts: None,
    }
}

const DELAYED: WakePath = WakePath::Runnable { delayed: true };

/// Seed 000's sequence: B is pushed onto CPU 6 by active balance, A blocks
/// there while ineligible (delayed), the waker's write requeues A in place
/// behind B, A runs 1 ms late.
fn seed_sequence(arrive: &[Event]) -> Vec<Event> {
    let mut v = vec![sw(0, 6, 0, PrevState::Running { preempt: false }, A)];
    v.extend_from_slice(arrive);
    v.extend([
        sw(200, 6, A, PrevState::Sleeping, B),
        signal(300, 0),
        ttwu(300, A, DELAYED, 6),
        wakeup(300, A, 6),
        sw(1_000_300, 6, B, PrevState::Sleeping, A),
        done(1_000_400, 6, A, 0),
    ]);
    v
}

#[test]
fn delayed_wakeup_behind_an_actively_balanced_other_on_the_top_cpu() {
    let t = trace(seed_sequence(&[migrate(100, B, 7, 6), lb(100, B, 7, 6, BalanceKind::Active)]));
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.wakeups, b.delayed_wakeups_no_select, b.handoffs, b.stalls), (1, 1, 1, 1));
    assert_eq!(b.stalls_behind_other, 1);
    assert_eq!(b.stalls_on_top_cpu_behind_other, 1);
    assert_eq!(b.stalls_after_delayed_wakeup, 1);
    assert_eq!(b.stalls_other_moved_by_active_balance, 1);
    assert_eq!(b.other_arrivals.get("active"), Some(&1));
    assert_eq!(b.stalls_all_other_allowed_idle, 1, "CPUs 4, 5, 7 never ran anything");
    let s = &b.details[0];
    assert_eq!(s.wakee_pid, A);
    assert_eq!((s.start_ts, s.end_ts, s.latency_ns), (300, 1_000_400, 1_000_100));
    assert_eq!(s.wake_cpu, Some(6));
    assert!(s.delayed_wakeup && s.on_top_cpu);
    assert_eq!((s.other_pid, s.other_arrival), (Some(B), Some(Arrival::Active)));
    assert_eq!(s.idle_allowed_at_wakeup, Some(3));
}

#[test]
fn other_arrival_by_wakeup_placement_or_other_balancer_is_not_active() {
    let t = trace(seed_sequence(&[migrate(100, B, 7, 6)]));
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.stalls, b.stalls_behind_other, b.stalls_other_moved_by_active_balance), (1, 1, 0));
    assert_eq!(b.details[0].other_arrival, Some(Arrival::Wakeup));

    let t = trace(seed_sequence(&[migrate(100, B, 7, 6), lb(100, B, 7, 6, BalanceKind::Newidle)]));
    let b = stall_breakdown(&t, &opts());
    assert_eq!(b.stalls_other_moved_by_active_balance, 0);
    assert_eq!(b.other_arrivals.get("newidle"), Some(&1));

    // An active push onto CPU 6 followed by a wakeup placement elsewhere and
    // back: the last arrival counts.
    let t = trace(seed_sequence(&[
        migrate(50, B, 7, 6),
        lb(50, B, 7, 6, BalanceKind::Active),
        migrate(80, B, 6, 5),
        migrate(100, B, 5, 6),
    ]));
    assert_eq!(stall_breakdown(&t, &opts()).details[0].other_arrival, Some(Arrival::Wakeup));

    // Never migrated: it started there.
    let t = trace(seed_sequence(&[]));
    assert_eq!(stall_breakdown(&t, &opts()).details[0].other_arrival, Some(Arrival::NotSeen));

    // Its last recorded arrival was on another CPU: how it reached CPU 6 is
    // not in the trace.
    let t = trace(seed_sequence(&[migrate(100, B, 7, 5), lb(100, B, 7, 5, BalanceKind::Active)]));
    assert_eq!(stall_breakdown(&t, &opts()).details[0].other_arrival, Some(Arrival::NotSeen));
}

#[test]
fn the_enqueue_cpu_of_sched_wakeup_wins_over_the_decision_event() {
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, B),
        signal(100, 0),
        ttwu(100, A, WakePath::Wakelist, 5),
        wakeup(110, A, 6),
        sw(800_000, 6, B, PrevState::Sleeping, A),
        done(800_001, 6, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.details[0].wake_cpu, b.details[0].other_pid), (Some(6), Some(B)));
    assert_eq!(b.stalls_on_top_cpu_behind_other, 1);
}

#[test]
fn each_wait_starts_fresh_when_the_wakee_blocks() {
    // A sleeps, is woken and runs (a sleep, not a handoff), then blocks on its
    // eventfd while B runs: the handoff's wakeup is the one that counts.
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, 0),
        ttwu(10, A, WakePath::Activate, 6),
        wakeup(10, A, 6),
        sw(11, 6, 0, PrevState::Running { preempt: false }, A),
        sw(20, 6, A, PrevState::Sleeping, B),
        signal(30, 0),
        ttwu(30, A, DELAYED, 6),
        wakeup(30, A, 6),
        sw(700_000, 6, B, PrevState::Sleeping, A),
        done(700_001, 6, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    let s = &b.details[0];
    assert_eq!((s.wake_cpu, s.delayed_wakeup, s.other_pid), (Some(6), true, Some(B)));
}

#[test]
fn a_wakeup_before_the_signal_is_not_this_handoffs_wakeup() {
    // A is woken from a sleep and runs, is preempted by B (still runnable),
    // and the signal finds it not blocked: no wakeup belongs to this handoff.
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, 0),
        ttwu(10, A, WakePath::Activate, 6),
        wakeup(10, A, 6),
        sw(11, 6, 0, PrevState::Running { preempt: false }, A),
        sw(20, 6, A, PrevState::Running { preempt: true }, B),
        signal(30, 0),
        sw(600_030, 6, B, PrevState::Sleeping, A),
        done(600_031, 6, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!(b.stalls, 1);
    assert_eq!((b.details[0].wake_cpu, b.details[0].other_pid), (None, None));
}

#[test]
fn top_cpu_is_a_parameter() {
    let t = trace(seed_sequence(&[]));
    let b = stall_breakdown(&t, &StallOptions { top_cpu: Some(7), ..opts() });
    assert_eq!((b.stalls_behind_other, b.stalls_on_top_cpu_behind_other), (1, 0));
    let b = stall_breakdown(&t, &StallOptions { top_cpu: None, ..opts() });
    assert_eq!(b.stalls_on_top_cpu_behind_other, 0);
    assert!(!b.details[0].on_top_cpu);
}

#[test]
fn other_switched_in_after_the_wakeup_counts_as_behind() {
    // A is woken (full wakeup) onto idle CPU 5, but B is switched in there
    // first (say it was pulled) and A waits behind it.
    let t = trace(vec![
        sw(0, 5, A, PrevState::Sleeping, 0),
        signal(100, 0),
        ttwu(100, A, WakePath::Activate, 5),
        wakeup(100, A, 5),
        migrate(150, B, 4, 5),
        lb(150, B, 4, 5, BalanceKind::Periodic),
        sw(150, 5, 0, PrevState::Running { preempt: false }, B),
        sw(900_000, 5, B, PrevState::Sleeping, A),
        done(900_010, 5, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!(
        (b.stalls, b.stalls_behind_other, b.stalls_after_delayed_wakeup, b.delayed_wakeups_no_select),
        (1, 1, 0, 0)
    );
    assert_eq!(b.details[0].other_arrival, Some(Arrival::Periodic));
    assert_eq!(b.stalls_on_top_cpu_behind_other, 0, "CPU 5 is not the top CPU");
    assert_eq!(b.details[0].idle_allowed_at_wakeup, Some(3), "4, 6 and 7 idle; B was not on 5 yet");
}

#[test]
fn stall_behind_a_non_wakee_is_not_behind_the_other_worker() {
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, HOG),
        sw(10, 7, 0, PrevState::Running { preempt: false }, B),
        signal(100, 0),
        ttwu(100, A, DELAYED, 6),
        wakeup(100, A, 6),
        sw(700_000, 6, HOG, PrevState::Running { preempt: true }, A),
        done(700_001, 6, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.stalls, b.stalls_behind_other, b.stalls_after_delayed_wakeup), (1, 0, 1));
    assert_eq!(b.details[0].other_pid, None);
    assert_eq!(b.details[0].idle_allowed_at_wakeup, Some(2), "B runs on CPU 7");
    assert_eq!(b.stalls_all_other_allowed_idle, 0);
}

#[test]
fn short_handoffs_and_non_wakees_are_not_stalls() {
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, 0),
        signal(100, 0),
        ttwu(100, A, WakePath::Activate, 6),
        wakeup(100, A, 6),
        sw(103, 6, 0, PrevState::Running { preempt: false }, A),
        done(104, 6, A, 0),
        // HOG (not a wakee) takes a long handoff on efd1.
        sw(200, 4, HOG, PrevState::Sleeping, 0),
        signal(300, 1),
        ttwu(300, HOG, DELAYED, 4),
        wakeup(300, HOG, 4),
        done(900_000, 4, HOG, 1),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.wakeups, b.delayed_wakeups_no_select, b.handoffs, b.stalls), (1, 0, 1, 0));
    assert!(b.details.is_empty());
    let b = stall_breakdown(&t, &StallOptions { threshold_ns: 4, ..opts() });
    assert_eq!(b.stalls, 1, "4 ns is at the threshold");
}

#[test]
fn a_wait_that_returns_without_a_wakeup_is_unclassified() {
    // A was woken (delayed) for an earlier wait that returned; this handoff's
    // wait returns without any wakeup (A was preempted, not blocked, when the
    // signal came), so nothing is known about where it waited.
    let t = trace(vec![
        sw(0, 6, A, PrevState::Sleeping, B),
        signal(10, 0),
        ttwu(10, A, DELAYED, 6),
        wakeup(10, A, 6),
        sw(20, 6, B, PrevState::Sleeping, A),
        done(21, 6, A, 0),
        sw(30, 6, A, PrevState::Running { preempt: true }, B),
        signal(40, 0),
        sw(600_040, 6, B, PrevState::Sleeping, A),
        done(600_041, 6, A, 0),
    ]);
    let b = stall_breakdown(&t, &opts());
    assert_eq!((b.wakeups, b.delayed_wakeups_no_select, b.handoffs, b.stalls), (1, 1, 2, 1));
    let s = &b.details[0];
    assert_eq!((s.wake_cpu, s.delayed_wakeup, s.other_pid, s.idle_allowed_at_wakeup), (None, false, None, None));
    assert_eq!(b.stalls_after_delayed_wakeup, 0);
}

#[test]
fn end_ts_clips_the_window() {
    let t = trace(seed_sequence(&[]));
    let b = stall_breakdown(&t, &StallOptions { end_ts: Some(1_000_000), ..opts() });
    assert_eq!((b.wakeups, b.handoffs, b.stalls), (1, 0, 0));
}

#[test]
fn burst_starts_count_wait_returns_per_cpu() {
    let t = trace(vec![
        done(1, 6, A, 0),
        done(2, 6, A, 0),
        done(3, 7, A, 0),
        done(4, 7, B, 1),
        done(5, 4, HOG, 1),
        signal(6, 0),
    ]);
    let m = burst_starts_per_cpu(&t, &[A, B, 99]);
    assert_eq!(m.len(), 3);
    assert_eq!(m[&A], BTreeMap::from([(6, 2), (7, 1)]));
    assert_eq!(m[&B], BTreeMap::from([(7, 1)]));
    assert!(m[&99].is_empty());
}
