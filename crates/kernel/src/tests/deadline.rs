//! The deadline class on crafted states: CBS throttling and replenishment,
//! the wakeup rule, EDF order, push/pull, admission.

use super::common::{dl_task, fair_task, settle, TestKernel};
use crate::deadline::{DlAdmissionError, DlParams};
use crate::{SchedClass, TaskId, TaskState, TimerKind};
use schedlab_topology::{parse_cpulist, Topology};

const MS: u64 = 1_000_000;

fn kernel(profile: &str) -> TestKernel {
    super::common::kernel_with(Topology::preset("qemu-4").unwrap(), profile, &[], 3)
}

fn res(runtime_ms: u64, deadline_ms: u64, period_ms: u64) -> DlParams {
    DlParams { runtime: runtime_ms * MS, deadline: deadline_ms * MS, period: period_ms * MS, reclaim: false }
}

fn start(k: &mut TestKernel, t: TaskId, now: u64) {
    let cpu = k.tasks[t as usize].cpu;
    k.wake_up_new_task(t, now, cpu);
    settle(k, now);
}

fn block(k: &mut TestKernel, cpu: usize, now: u64) {
    k.set_current_state(cpu, TaskState::Interruptible);
    k.schedule(cpu, now, false);
    k.finish_task_switch(cpu);
    settle(k, now);
}

fn dl_timers(k: &TestKernel, t: TaskId) -> Vec<u64> {
    k.timers.iter().filter(|r| r.what == TimerKind::DlTask(t)).map(|r| r.at).collect()
}

#[test]
fn a_task_out_of_runtime_is_throttled_until_its_next_period_then_replenished() {
    let mut k = kernel("6.12");
    let hog = fair_task(&mut k, 1, "0", 0);
    let d = dl_task(&mut k, 2, res(2, 10, 10), "0", 0);
    start(&mut k, hog, 0);
    start(&mut k, d, 0);
    assert_eq!(k.curr(0), Some(d), "a deadline task runs above a fair one");
    assert_eq!((k.tasks[d as usize].dl.deadline, k.tasks[d as usize].dl.runtime), (10 * MS, 2 * MS as i64));
    k.sched_tick(0, MS);
    settle(&mut k, MS);
    assert_eq!(k.curr(0), Some(d), "1 ms of runtime is left");
    k.sched_tick(0, 2 * MS);
    settle(&mut k, 2 * MS);
    assert_eq!(k.curr(0), Some(hog), "out of runtime: throttled, the fair task runs");
    assert!(k.tasks[d as usize].dl.throttled);
    assert_eq!(dl_timers(&k, d), vec![10 * MS], "the replenishment timer is armed at the next period");
    // A timer event for an instant not reached yet does nothing.
    k.dl_timer(d, 0, 9 * MS);
    settle(&mut k, 9 * MS);
    assert_eq!(k.curr(0), Some(hog));
    k.dl_timer(d, 0, 10 * MS);
    settle(&mut k, 10 * MS);
    assert_eq!(k.curr(0), Some(d), "replenished, it preempts the fair task");
    let dl = k.tasks[d as usize].dl;
    assert_eq!((dl.deadline, dl.runtime, dl.throttled), (20 * MS, 2 * MS as i64, false));
}

#[test]
fn a_wakeup_keeps_the_deadline_unless_the_runtime_left_would_overflow_the_bandwidth() {
    // Implicit deadline, 3 ms every 10 ms.
    let mut k = kernel("6.12");
    let d = dl_task(&mut k, 1, res(3, 10, 10), "0", 0);
    start(&mut k, d, 0);
    k.sched_tick(0, MS);
    block(&mut k, 0, MS); // 2 ms left, deadline 10 ms.
    assert_eq!(k.tasks[d as usize].dl.runtime, 2 * MS as i64);
    // At 2 ms: 2 ms left over 8 ms to the deadline is 0.25 < 0.3: kept.
    k.try_to_wake_up(d, 2 * MS, 1, 0);
    settle(&mut k, 2 * MS);
    assert_eq!((k.tasks[d as usize].dl.deadline, k.tasks[d as usize].dl.runtime), (10 * MS, 2 * MS as i64));
    block(&mut k, 0, 2 * MS);
    // At 5 ms: 2 ms over 5 ms is 0.4 > 0.3: a new period from now.
    k.try_to_wake_up(d, 5 * MS, 1, 0);
    settle(&mut k, 5 * MS);
    assert_eq!((k.tasks[d as usize].dl.deadline, k.tasks[d as usize].dl.runtime), (15 * MS, 3 * MS as i64));
}

#[test]
fn a_constrained_task_inside_its_deadline_gets_its_density_times_the_laxity() {
    // 2 ms within 4 ms, every 10 ms: density 0.5.
    let mut k = kernel("6.12");
    let d = dl_task(&mut k, 1, res(2, 4, 10), "0", 0);
    start(&mut k, d, 0);
    block(&mut k, 0, 0); // Full 2 ms left, deadline 4 ms.
                         // At 3 ms: 2 ms over 1 ms overflows, the deadline is not past:
                         // runtime = 0.5 x 1 ms (update_dl_revised_wakeup()).
    k.try_to_wake_up(d, 3 * MS, 1, 0);
    settle(&mut k, 3 * MS);
    let dl = k.tasks[d as usize].dl;
    assert_eq!(dl.deadline, 4 * MS);
    assert!((dl.runtime - (MS / 2) as i64).abs() <= 1, "runtime {}", dl.runtime);
    block(&mut k, 0, 3 * MS);
    // At 6 ms: past the deadline (4 ms), before the next period (10 ms):
    // throttled until then (dl_check_constrained_dl()).
    k.try_to_wake_up(d, 6 * MS, 1, 0);
    settle(&mut k, 6 * MS);
    assert!(k.tasks[d as usize].dl.throttled);
    assert_ne!(k.curr(0), Some(d));
    assert_eq!(dl_timers(&k, d), vec![10 * MS]);
    k.dl_timer(d, 0, 10 * MS);
    settle(&mut k, 10 * MS);
    assert_eq!(k.curr(0), Some(d));
    assert_eq!(k.tasks[d as usize].dl.deadline, 14 * MS);
}

#[test]
fn the_earliest_deadline_runs_and_an_earlier_wakeup_preempts() {
    let mut k = kernel("6.12");
    let late = dl_task(&mut k, 1, res(5, 50, 50), "0", 0);
    let early = dl_task(&mut k, 2, res(2, 20, 20), "0", 0);
    start(&mut k, late, 0);
    assert_eq!(k.curr(0), Some(late));
    start(&mut k, early, MS);
    assert_eq!(k.curr(0), Some(early), "deadline 21 ms before 50 ms");
    block(&mut k, 0, 2 * MS);
    assert_eq!(k.curr(0), Some(late));
    // Woken at 3 ms with 1 ms left over 18 ms (below 2/20): it keeps its
    // deadline, 21 ms, and preempts.
    k.try_to_wake_up(early, 3 * MS, 1, 0);
    settle(&mut k, 3 * MS);
    assert_eq!(k.curr(0), Some(early));
    assert_eq!(k.tasks[early as usize].dl.deadline, 21 * MS);
    assert_eq!(k.class_of(early), SchedClass::Dl);
}

#[test]
fn a_task_that_blocks_with_its_runtime_used_up_stays_throttled_through_its_wakeup() {
    let mut k = kernel("6.12");
    let d = dl_task(&mut k, 1, res(1, 10, 10), "0", 0);
    start(&mut k, d, 0);
    block(&mut k, 0, MS);
    assert!(k.tasks[d as usize].dl.throttled, "the sleep's accounting used the last of the runtime");
    k.try_to_wake_up(d, 2 * MS, 1, 0);
    settle(&mut k, 2 * MS);
    assert_ne!(k.curr(0), Some(d), "woken, but throttled until 10 ms");
    k.dl_timer(d, 0, 10 * MS);
    settle(&mut k, 10 * MS);
    assert_eq!(k.curr(0), Some(d));
}

#[test]
fn a_task_woken_behind_an_earlier_deadline_goes_to_a_cpu_without_one() {
    let mut k = kernel("6.12");
    let a = dl_task(&mut k, 1, res(5, 10, 10), "0-3", 0);
    let b = dl_task(&mut k, 2, res(5, 30, 30), "0-3", 0);
    k.tasks[b as usize].fixed_start = false;
    start(&mut k, a, 0);
    assert_eq!(k.curr(0), Some(a));
    start(&mut k, b, 0);
    let cpu_b = k.tasks[b as usize].cpu;
    assert_ne!(cpu_b, 0, "placed away from the earlier deadline (select_task_rq_dl)");
    assert_eq!(k.curr(cpu_b), Some(b));
}

#[test]
fn a_cpu_whose_deadline_task_blocks_pulls_a_waiting_one() {
    let mut k = kernel("6.12");
    // Only CPUs 0 and 1, so the waiting task has nowhere free to go.
    let a = dl_task(&mut k, 1, res(5, 10, 10), "0-1", 0);
    let b = dl_task(&mut k, 2, res(5, 12, 12), "0-1", 1);
    let c = dl_task(&mut k, 3, res(5, 40, 40), "0-1", 0);
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    start(&mut k, c, 0);
    assert_eq!((k.curr(0), k.curr(1)), (Some(a), Some(b)));
    assert_eq!(k.tasks[c as usize].cpu, 0, "no CPU has a later deadline");
    assert!(k.rqs[0].dl.overloaded());
    block(&mut k, 1, MS);
    assert_eq!(k.curr(1), Some(c), "CPU 1 pulled the waiting task (pull_dl_task)");
    assert!(!k.rqs[0].dl.overloaded());
}

#[test]
fn admission_refuses_bad_parameters_partial_affinity_and_too_much_bandwidth() {
    let mut k = kernel("6.12");
    let all = parse_cpulist("0-3").unwrap();
    let bad = |r, d, p| DlParams { runtime: r, deadline: d, period: p, reclaim: false };
    for p in [bad(1000, MS, MS), bad(2 * MS, MS, 10 * MS), bad(MS, 10 * MS, 5 * MS), bad(10_000, 50_000, 50_000)] {
        assert!(matches!(k.dl_admit(&p, &all, 0), Err(DlAdmissionError::Invalid { .. })), "{p:?}");
    }
    assert!(matches!(
        k.dl_admit(&res(1, 10, 10), &parse_cpulist("0-1").unwrap(), 0),
        Err(DlAdmissionError::Affinity { .. })
    ));
    // 0.95 x 4 CPUs = 3.8, of which the four fair servers hold 4 x 0.05:
    // four tasks of 0.9 fit (3.6), a fifth of 0.01 does not.
    for pid in 0..4 {
        k.dl_admit(&res(9, 10, 10), &all, 0).unwrap();
        dl_task(&mut k, 10 + pid, res(9, 10, 10), "0-3", 0);
    }
    let err = k
        .dl_admit(&DlParams { runtime: 100_000, deadline: 10 * MS, period: 10 * MS, reclaim: false }, &all, 0)
        .unwrap_err();
    assert!(matches!(err, DlAdmissionError::Busy { .. }), "{err}");
    assert!(err.to_string().starts_with("EBUSY"));
    // Without fair servers (6.9) the same 3.6 leaves room for 0.2 more.
    let mut k = kernel("6.9");
    for pid in 0..4 {
        dl_task(&mut k, 10 + pid, res(9, 10, 10), "0-3", 0);
    }
    k.dl_admit(&res(1, 10, 10), &all, 0).unwrap();
}

#[test]
fn a_deadline_waiter_lends_its_reservation_to_the_fair_lock_holder() {
    // Seed 003's shape with a deadline donor: fair L holds the lock, a fair
    // hog shares CPU 0 with it, and deadline D (3 ms every 10 ms) blocks on
    // the lock from CPU 1.
    let mut k = kernel("6.12");
    let l = fair_task(&mut k, 1, "0", 0);
    let hog = fair_task(&mut k, 2, "0", 0);
    let d = dl_task(&mut k, 3, res(3, 10, 10), "0-3", 1);
    start(&mut k, l, 0);
    start(&mut k, hog, 0);
    start(&mut k, d, 0);
    assert!(k.rt_mutex_lock(l, 0, MS, 0));
    k.sync_curr(0, 5 * MS);
    k.schedule(0, 5 * MS, true);
    k.finish_task_switch(0);
    assert_eq!(k.curr(0), Some(hog));
    assert!(!k.rt_mutex_lock(d, 0, 6 * MS, 1));
    block(&mut k, 1, 6 * MS);
    // L now runs in the deadline class with D's reservation, from a fresh
    // period (its own dl_deadline is 0): deadline 6 + 10 ms, 3 ms of runtime.
    assert_eq!(k.class_of(l), SchedClass::Dl);
    assert_eq!(k.tasks[l as usize].dl.pi_se, Some(d));
    assert_eq!((k.tasks[l as usize].dl.deadline, k.tasks[l as usize].dl.runtime), (16 * MS, 3 * MS as i64));
    assert_eq!(k.curr(0), Some(l), "the boosted holder preempts the fair hog");
    // Boosted, it is never throttled: out of runtime it is replenished at once.
    k.sched_tick(0, 10 * MS);
    settle(&mut k, 10 * MS);
    assert_eq!(k.curr(0), Some(l));
    assert!(!k.tasks[l as usize].dl.throttled);
    assert!(k.tasks[l as usize].dl.deadline > 16 * MS, "a replenishment moved its deadline on");
    // The unlock deboosts L and hands the lock to D.
    assert_eq!(k.rt_mutex_unlock(l, 0, 11 * MS, 0), Some(d));
    assert_eq!((k.class_of(l), k.tasks[l as usize].dl.pi_se), (SchedClass::Fair, None));
    settle(&mut k, 11 * MS);
    k.check_invariants().unwrap();
}

#[test]
fn deadline_waiters_queue_by_deadline_and_the_earliest_boosts() {
    let mut k = kernel("6.12");
    let owner = fair_task(&mut k, 1, "0", 0);
    let late = dl_task(&mut k, 2, res(1, 40, 40), "0-3", 1);
    let early = dl_task(&mut k, 3, res(1, 20, 20), "0-3", 2);
    start(&mut k, owner, 0);
    start(&mut k, late, 0);
    start(&mut k, early, 0);
    assert!(k.rt_mutex_lock(owner, 0, 0, 0));
    assert!(!k.rt_mutex_lock(late, 0, 0, 1));
    block(&mut k, 1, 0);
    assert_eq!(k.tasks[owner as usize].dl.pi_se, Some(late));
    assert!(!k.rt_mutex_lock(early, 0, 0, 2));
    block(&mut k, 2, 0);
    assert_eq!(k.tasks[owner as usize].dl.pi_se, Some(early), "the earlier deadline is the top waiter");
    assert_eq!(k.rt_mutex_unlock(owner, 0, MS, 0), Some(early));
    k.check_invariants().unwrap();
}
