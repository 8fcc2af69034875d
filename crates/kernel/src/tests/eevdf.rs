//! EEVDF and DELAY_DEQUEUE rules checked directly on the kernel model, one CPU
//! at a time, with time advanced tick by tick as the simulator would.

use super::common::{kernel_with, TestKernel};
use crate::{Feature, Policy, TaskId, TaskParams, TaskState};
use schedlab_topology::{CpuSet, Topology};
use schedlab_trace::{DelayedWhat, EventKind, PreemptReason, WakePath};

const MS: u64 = 1_000_000;
const TICK: u64 = MS; // HZ=1000

/// A 4-CPU machine (smt-2x2, HZ=1000); every task here is pinned to CPU 0.
fn kernel(settings: &[&str]) -> TestKernel {
    let topology = Topology::preset("smt-2x2").unwrap();
    assert_eq!(topology.tick_ns(), TICK);
    kernel_with(topology, "6.12", settings, 1)
}

fn task(k: &mut TestKernel, pid: i32, nice: i32, slice_ns: Option<u64>) -> TaskId {
    k.add_task(TaskParams {
        pid,
        policy: Policy::Normal,
        nice,
        rt_priority: 0,
        slice_ns,
        cpus_mask: CpuSet::single(0),
        cpu: 0,
        fixed_start: true,
        dl: None,
    })
}

/// Advance CPU 0 to `until`, ticking and honouring reschedules like the simulator.
fn advance(k: &mut TestKernel, now: &mut u64, until: u64) {
    while (*now / TICK + 1) * TICK <= until {
        *now = (*now / TICK + 1) * TICK;
        k.sched_tick(0, *now);
        if k.need_resched(0, true) {
            k.schedule(0, *now, true);
        }
        k.check_invariants().unwrap();
    }
    *now = until;
    k.sync_curr(0, until);
}

fn start(k: &mut TestKernel, t: TaskId, now: u64) {
    k.wake_up_new_task(t, now, 0);
    if k.need_resched(0, true) {
        k.schedule(0, now, true);
    }
    k.check_invariants().unwrap();
}

fn block(k: &mut TestKernel, now: u64) {
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, now, false);
    k.check_invariants().unwrap();
}

fn lag(k: &mut TestKernel, t: TaskId) -> i64 {
    let v = k.avg_vruntime(0);
    v - k.tasks[t as usize].se.vruntime
}

#[test]
fn ineligible_sleeper_is_delayed_then_requeued_in_place_on_wakeup() {
    let mut k = kernel(&[]);
    let (a, b) = (task(&mut k, 1, 0, None), task(&mut k, 2, 0, None));
    let mut now = 0;
    start(&mut k, a, now);
    start(&mut k, b, now);
    assert_eq!(k.curr(0), Some(a));
    advance(&mut k, &mut now, MS / 2);
    assert!(!k.entity_eligible(0, a), "A ran ahead of V, so it is ineligible");
    block(&mut k, now);
    let se = &k.tasks[a as usize].se;
    assert!(se.sched_delayed && se.on_rq, "blocked while ineligible: stays queued, sched_delayed");
    assert_eq!(k.rqs[0].nr_running, 2, "a delayed task still counts in nr_running");
    assert_eq!(k.rqs[0].cfs.h_nr_runnable, 1);
    assert_eq!(k.curr(0), Some(b));
    assert!(!k.idle_cpu(0));

    now += 10_000;
    assert!(k.try_to_wake_up(a, now, 0, 0));
    let se = &k.tasks[a as usize].se;
    assert!(!se.sched_delayed && se.on_rq, "woken in place");
    assert_eq!(k.tasks[a as usize].cpu, 0);
    let kinds: Vec<_> = k.events.iter().map(|e| e.kind).collect();
    assert!(kinds.iter().any(|e| matches!(e, EventKind::Ttwu { path: WakePath::Runnable { delayed: true }, .. })));
    assert!(kinds.iter().any(|e| matches!(e, EventKind::Delayed { what: DelayedWhat::Requeued, .. })));
    assert!(!kinds.iter().any(|e| matches!(e, EventKind::SchedMigrateTask { .. })));
    assert_eq!(k.rqs[0].cfs.h_nr_runnable, 2);
    k.check_invariants().unwrap();
}

#[test]
fn delayed_task_is_dequeued_when_picked() {
    let mut k = kernel(&[]);
    let (a, b) = (task(&mut k, 1, 0, None), task(&mut k, 2, 0, None));
    let mut now = 0;
    start(&mut k, a, now);
    start(&mut k, b, now);
    advance(&mut k, &mut now, MS / 2);
    block(&mut k, now);
    assert!(k.tasks[a as usize].se.sched_delayed);
    // B runs and blocks too; the pick then meets A, which is completed as a sleep.
    advance(&mut k, &mut now, MS);
    block(&mut k, now);
    assert_eq!(k.curr(0), None);
    assert!(!k.tasks[a as usize].se.on_rq && !k.tasks[a as usize].se.sched_delayed);
    assert!(k
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Delayed { what: DelayedWhat::DequeuedAtPick, pid: 1, .. })));
    assert!(k.tasks[a as usize].se.vlag <= 0, "DELAY_ZERO drops positive lag at the final dequeue");
    assert!(k.idle_cpu(0));
}

#[test]
fn no_delay_dequeue_dequeues_at_once() {
    let mut k = kernel(&["NO_DELAY_DEQUEUE"]);
    let (a, b) = (task(&mut k, 1, 0, None), task(&mut k, 2, 0, None));
    let mut now = 0;
    start(&mut k, a, now);
    start(&mut k, b, now);
    advance(&mut k, &mut now, MS / 2);
    assert!(!k.entity_eligible(0, a));
    block(&mut k, now);
    assert!(!k.tasks[a as usize].se.on_rq && !k.tasks[a as usize].se.sched_delayed);
    assert_eq!(k.rqs[0].nr_running, 1);
}

#[test]
fn eligible_sleeper_is_not_delayed() {
    let mut k = kernel(&[]);
    let a = task(&mut k, 1, 0, None);
    let mut now = 0;
    start(&mut k, a, now);
    advance(&mut k, &mut now, MS / 2);
    block(&mut k, now);
    assert!(!k.tasks[a as usize].se.on_rq, "alone on the cfs_rq is always eligible");
}

/// A sleeper that blocks with positive lag: it waited a slice behind a hog,
/// then runs only 0.3 ms before blocking.
fn sleeper_lag_after_wakeup(settings: &[&str]) -> (i64, i64) {
    let mut k = kernel(settings);
    let (hog, s) = (task(&mut k, 1, 0, None), task(&mut k, 2, 0, None));
    let mut now = 0;
    start(&mut k, hog, now);
    start(&mut k, s, now);
    assert_eq!(k.curr(0), Some(hog));
    // Run until the sleeper gets the CPU, then let it run briefly and block.
    while k.curr(0) != Some(s) {
        let next = now + MS;
        advance(&mut k, &mut now, next);
    }
    let t = now + 300_000;
    advance(&mut k, &mut now, t);
    assert!(k.entity_eligible(0, s));
    let lag_at_block = lag(&mut k, s);
    block(&mut k, now);
    assert!(!k.tasks[s as usize].se.on_rq, "an eligible sleeper leaves the queue");
    let saved = k.tasks[s as usize].se.vlag;
    assert_eq!(saved > 0, lag_at_block > 0);
    let t = now + 5 * MS;
    advance(&mut k, &mut now, t);
    assert!(k.try_to_wake_up(s, now, 0, 0));
    (saved, lag(&mut k, s))
}

#[test]
fn positive_lag_survives_sleep_with_place_lag_only() {
    let (saved, after) = sleeper_lag_after_wakeup(&[]);
    assert!(saved > 0, "the sleeper blocked owed service (lag {saved})");
    assert!(after > 0, "PLACE_LAG restores the credit: lag after wakeup {after}");
    // The inflation by (W + w)/W means the lag seen after enqueue equals the saved lag (±1 ns rounding).
    assert!((after - saved).abs() <= 1, "saved {saved}, after {after}");

    let (saved, after) = sleeper_lag_after_wakeup(&["NO_PLACE_LAG"]);
    assert!(saved > 0);
    assert_eq!(after, 0, "without PLACE_LAG the wakee is placed at V");
}

/// A runs with a 10 ms custom slice (protected by RUN_TO_PARITY); B wakes as a
/// new task with the default slice and an earlier deadline. Returns who runs next
/// and the verdict reason.
fn wakeup_against_protected_curr(settings: &[&str]) -> (bool, PreemptReason) {
    let mut k = kernel(settings);
    let a = task(&mut k, 1, 0, Some(10 * MS));
    let b = task(&mut k, 2, 0, None);
    let mut now = 0;
    start(&mut k, a, now);
    advance(&mut k, &mut now, MS + MS / 2);
    assert!(k.protect_slice(a));
    k.events.clear();
    k.wake_up_new_task(b, now, 0);
    let verdict = k
        .events
        .iter()
        .find_map(|e| match e.kind {
            EventKind::WakeupPreempt { preempt, reason, .. } => Some((preempt, reason)),
            _ => None,
        })
        .expect("wakeup_preempt ran");
    let sa = &k.tasks[a as usize].se;
    let sb = &k.tasks[b as usize].se;
    assert!(sb.deadline < sa.deadline, "the wakee's deadline is earlier");
    assert_eq!(k.need_resched(0, true), verdict.0);
    verdict
}

#[test]
fn run_to_parity_protects_curr_from_an_equal_or_longer_slice_wakee() {
    assert_eq!(wakeup_against_protected_curr(&["NO_PREEMPT_SHORT"]), (false, PreemptReason::NotPicked));
    assert_eq!(wakeup_against_protected_curr(&["NO_PREEMPT_SHORT", "NO_RUN_TO_PARITY"]), (true, PreemptReason::Pick));
}

#[test]
fn preempt_short_lets_a_shorter_slice_wakee_cut_protection() {
    assert_eq!(wakeup_against_protected_curr(&[]), (true, PreemptReason::Short));
}

#[test]
fn invariant_checker_catches_corruption() {
    let mut k = kernel(&[]);
    let (a, b) = (task(&mut k, 1, 0, None), task(&mut k, 2, 0, None));
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    k.check_invariants().unwrap();
    let mut broken = k.clone();
    broken.rqs[0].nr_running += 1;
    assert!(broken.check_invariants().unwrap_err().to_string().contains("nr_running"));
    let mut broken = k.clone();
    broken.rqs[0].cfs.avg_load += 1;
    assert!(broken.check_invariants().is_err());
    let mut broken = k.clone();
    broken.tasks[b as usize].on_cpu = true;
    assert!(broken.check_invariants().is_err());
    // Tree membership, gathered per cfs_rq rather than asked per task:
    // queued in a tree where it does not live, and missing from its own.
    let waiting = if k.rqs[0].curr == Some(a) { b } else { a };
    let se = k.tasks[waiting as usize].se.clone();
    let mut broken = k.clone();
    broken.timeline_mut(0).remove(waiting);
    broken.timeline_mut(1).insert(waiting, se.deadline, se.vruntime, se.slice);
    let e = broken.check_invariants().unwrap_err().to_string();
    assert!(e.contains("is in cfs_rq 1's tree"), "{e}");
    let mut broken = k.clone();
    broken.timeline_mut(0).remove(waiting);
    let e = broken.check_invariants().unwrap_err().to_string();
    assert!(e.contains("in_tree=false"), "{e}");
    let _ = Feature::DELAY_DEQUEUE;
}
