//! RT class and PI rules on crafted states.

use super::common::TestKernel;
use crate::{IpiKind, Policy, SchedClass, TaskId, TaskState};
use schedlab_topology::Topology;
use schedlab_trace::EventKind;

const MS: u64 = 1_000_000;

use super::common::settle;
use super::common::task_with as task;

fn kernel(settings: &[&str]) -> TestKernel {
    super::common::kernel_with(Topology::preset("qemu-4").unwrap(), "6.12", settings, 3)
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

#[test]
fn fifo_runs_the_highest_priority_then_arrival_order() {
    let mut k = kernel(&[]);
    let a = task(&mut k, 1, Policy::Fifo, 10, "0", 0);
    let b = task(&mut k, 2, Policy::Fifo, 10, "0", 0);
    let c = task(&mut k, 3, Policy::Fifo, 20, "0", 0);
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    assert_eq!(k.curr(0), Some(a), "equal priority does not preempt");
    start(&mut k, c, 0);
    assert_eq!(k.curr(0), Some(c), "higher priority preempts at once");
    block(&mut k, 0, MS);
    assert_eq!(k.curr(0), Some(a), "a preempted FIFO task keeps its place ahead of b");
    block(&mut k, 0, 2 * MS);
    assert_eq!(k.curr(0), Some(b));
}

#[test]
fn rr_rotates_among_equal_priorities_every_100_ms() {
    let mut k = kernel(&[]);
    let a = task(&mut k, 1, Policy::Rr, 10, "0", 0);
    let b = task(&mut k, 2, Policy::Rr, 10, "0", 0);
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    let tick = k.tick_ns;
    let mut now = 0;
    let mut switches = vec![];
    while now < 350 * MS {
        now += tick;
        k.sched_tick(0, now);
        if k.need_resched(0, true) {
            k.schedule(0, now, true);
            k.finish_task_switch(0);
            switches.push((now / MS, k.curr(0)));
        }
    }
    assert_eq!(switches, vec![(100, Some(b)), (200, Some(a)), (300, Some(b))]);
    // FIFO never rotates.
    let mut k = kernel(&[]);
    let a = task(&mut k, 1, Policy::Fifo, 10, "0", 0);
    let b = task(&mut k, 2, Policy::Fifo, 10, "0", 0);
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    for i in 1..=300 {
        k.sched_tick(0, i * tick);
        assert!(!k.need_resched(0, true));
    }
}

#[test]
fn rt_wakeup_preempts_fair_and_lower_rt_at_once() {
    let mut k = kernel(&[]);
    let f = task(&mut k, 1, Policy::Normal, 0, "0", 0);
    start(&mut k, f, 0);
    let r = task(&mut k, 2, Policy::Fifo, 5, "0", 0);
    k.wake_up_new_task(r, MS, 0);
    assert!(k.need_resched(0, false), "fair curr rescheduled by an RT wakeup");
    settle(&mut k, MS);
    assert_eq!(k.curr(0), Some(r));
    let r2 = task(&mut k, 3, Policy::Fifo, 6, "0", 0);
    k.wake_up_new_task(r2, 2 * MS, 0);
    assert!(k.need_resched(0, false));
    settle(&mut k, 2 * MS);
    assert_eq!(k.curr(0), Some(r2));
}

/// CPU 1: X (FIFO 99, pinned) runs, L (FIFO `l_prio`, allowed `mask`) waits.
fn waiting_l(settings: &[&str], l_prio: u32, mask: &str) -> (TestKernel, TaskId) {
    let mut k = kernel(settings);
    let l = task(&mut k, 1, Policy::Fifo, l_prio, mask, 1);
    start(&mut k, l, 0);
    let x = task(&mut k, 2, Policy::Fifo, 99, "1", 1);
    start(&mut k, x, MS);
    assert_eq!(k.curr(1), Some(x));
    (k, l)
}

#[test]
fn push_moves_the_waiting_task_to_a_lower_priority_cpu_and_never_to_an_equal_one() {
    // CPU 3 runs R at FIFO 60. L at FIFO 10 cannot go there (60 is not lower);
    // at FIFO 70 the switch to X pushes it to CPU 3.
    for (l_prio, moved) in [(10, false), (60, false), (70, true)] {
        let mut k = kernel(&[]);
        let r = task(&mut k, 3, Policy::Fifo, 60, "3", 3);
        start(&mut k, r, 0);
        let l = task(&mut k, 1, Policy::Fifo, l_prio, "1,3", 1);
        start(&mut k, l, 0);
        let x = task(&mut k, 2, Policy::Fifo, 99, "1", 1);
        start(&mut k, x, MS);
        assert_eq!(k.tasks[l as usize].cpu == 3, moved, "L at FIFO {l_prio}");
    }
    // An idle allowed CPU is the lowest of all.
    let (k, l) = waiting_l(&[], 10, "1-2");
    assert_eq!(k.tasks[l as usize].cpu, 2);
}

#[test]
fn pull_respects_the_tasks_affinity_without_rt_push_ipi() {
    // L waits on CPU 1, allowed on {1,3}; CPU 3 is busy with R (FIFO 60).
    for (mask, pulled_to_2) in [("1,3", false), ("1-2", true)] {
        let mut k = kernel(&["NO_RT_PUSH_IPI"]);
        let r = task(&mut k, 3, Policy::Fifo, 60, "3", 3);
        start(&mut k, r, 0);
        let w = task(&mut k, 4, Policy::Fifo, 90, "2", 2);
        start(&mut k, w, 0);
        let l = task(&mut k, 1, Policy::Fifo, 10, mask, 1);
        start(&mut k, l, 0);
        // CPU 2 runs W (FIFO 90), so L starts and stays on CPU 1.
        assert_eq!(k.tasks[l as usize].cpu, 1);
        let x = task(&mut k, 2, Policy::Fifo, 99, "1", 1);
        start(&mut k, x, MS);
        assert_eq!(k.tasks[l as usize].cpu, 1);
        // W blocks: CPU 2 lowers its RT level and pulls.
        block(&mut k, 2, 2 * MS);
        assert_eq!(k.tasks[l as usize].cpu == 2, pulled_to_2, "mask {mask}");
    }
}

#[test]
fn the_push_ipi_chain_visits_each_overloaded_cpu_once_per_scan() {
    let mut k = kernel(&["RT_PUSH_IPI"]);
    // CPUs 0 and 1 each run a FIFO 99 hog with a waiting FIFO 10 task
    // allowed only there and on CPU 3 (busy at FIFO 50): both are overloaded.
    let r = task(&mut k, 9, Policy::Fifo, 50, "3", 3);
    start(&mut k, r, 0);
    for cpu in 0..2 {
        let l = task(&mut k, 10 + cpu as i32, Policy::Fifo, 10, &format!("{cpu},3"), cpu);
        start(&mut k, l, 0);
        let x = task(&mut k, 20 + cpu as i32, Policy::Fifo, 99, &cpu.to_string(), cpu);
        start(&mut k, x, 0);
    }
    assert_eq!(k.rds[0].rto_count, 2);
    let w = task(&mut k, 30, Policy::Fifo, 90, "2", 2);
    start(&mut k, w, 0);
    k.events.clear();
    // W blocks on CPU 2: its pull starts the chain; deliver the irq_work hops.
    k.set_current_state(2, TaskState::Interruptible);
    k.schedule(2, MS, false);
    let mut visited = vec![];
    for _ in 0..10 {
        let hops: Vec<_> = k.ipis.drain(..).filter(|i| i.kind == IpiKind::RtPushWork).collect();
        if hops.is_empty() {
            break;
        }
        for h in hops {
            visited.push(h.cpu);
            k.rto_push_irq_work_func(h.cpu, MS);
        }
    }
    // Each scan visits every overloaded CPU once, in mask order, never the
    // puller (CPU 2). The request bumped rto_loop_next, so when the first
    // scan ends rto_loop is behind it and one more scan runs, then the chain stops.
    assert_eq!(visited, vec![0, 1, 0, 1]);
    assert_eq!(k.rds[0].rto_loop, k.rds[0].rto_loop_next);
    assert_eq!(k.rds[0].rto_cpu, -1, "the chain has finished");
}

#[test]
fn pi_boost_follows_a_chain_of_two_mutexes_and_deboosts_on_unlock() {
    let mut k = kernel(&[]);
    // C (fair) holds m1; B (FIFO 10) holds m2 and blocks on m1; A (FIFO 80) blocks on m2.
    let c = task(&mut k, 3, Policy::Normal, 0, "0", 0);
    let b = task(&mut k, 2, Policy::Fifo, 10, "1", 1);
    let a = task(&mut k, 1, Policy::Fifo, 80, "2", 2);
    start(&mut k, c, 0);
    start(&mut k, b, 0);
    start(&mut k, a, 0);
    assert!(k.rt_mutex_lock(c, 0, MS, 0));
    assert!(k.rt_mutex_lock(b, 1, MS, 1));
    assert!(!k.rt_mutex_lock(b, 0, MS, 1));
    block(&mut k, 1, MS);
    assert_eq!(k.tasks[c as usize].prio, 89, "C inherits B's FIFO 10");
    assert!(!k.rt_mutex_lock(a, 1, 2 * MS, 2));
    block(&mut k, 2, 2 * MS);
    assert_eq!(k.tasks[b as usize].prio, 19, "B inherits A's FIFO 80");
    assert_eq!(k.tasks[c as usize].prio, 19, "through B, C inherits it too");
    let setprio: Vec<_> = k.events.iter().filter(|e| matches!(e.kind, EventKind::SchedPiSetprio { .. })).collect();
    assert!(setprio.len() >= 2);
    // C unlocks m1: deboosted to its normal priority; B owns m1 now.
    let next = k.rt_mutex_unlock(c, 0, 3 * MS, 0);
    assert_eq!(next, Some(b));
    assert_eq!(k.tasks[c as usize].prio, 120);
    assert_eq!(k.tasks[b as usize].prio, 19, "still boosted by A through m2");
    let next = k.rt_mutex_unlock(b, 1, 4 * MS, 1);
    assert_eq!(next, Some(a));
    assert_eq!(k.tasks[b as usize].prio, 89);
}

#[test]
fn a_boosted_fair_task_runs_as_rt() {
    let mut k = kernel(&[]);
    let f = task(&mut k, 1, Policy::Normal, 0, "0", 0);
    let g = task(&mut k, 2, Policy::Normal, 0, "0", 0);
    let r = task(&mut k, 3, Policy::Fifo, 50, "1", 1);
    start(&mut k, f, 0);
    start(&mut k, g, 0);
    start(&mut k, r, 0);
    assert!(k.rt_mutex_lock(f, 0, MS, 0));
    // f is preempted by g eventually; make g current.
    k.sync_curr(0, 5 * MS);
    k.schedule(0, 5 * MS, true);
    k.finish_task_switch(0);
    assert_eq!(k.curr(0), Some(g));
    assert!(!k.rt_mutex_lock(r, 0, 6 * MS, 1));
    block(&mut k, 1, 6 * MS);
    assert!(k.class_of(f) == SchedClass::Rt && k.tasks[f as usize].prio == 49);
    assert_eq!(k.curr(0), Some(f), "the boosted fair task preempts the fair one");
    let next = k.rt_mutex_unlock(f, 0, 7 * MS, 0);
    assert_eq!(next, Some(r));
    assert_eq!(k.class_of(f), SchedClass::Fair);
    k.check_invariants().unwrap();
}

#[test]
fn the_watchdog_stopper_preempting_an_rt_task_keeps_its_runtime() {
    // The soft-lockup watchdog's stopper switches out whatever runs; an RT
    // task must be put back through its own class (update_curr_rt), so the
    // time it ran up to the kick is charged, not dropped.
    let mut k = kernel(&[]);
    let x = task(&mut k, 1, Policy::Fifo, 99, "1", 1);
    start(&mut k, x, 0);
    assert_eq!(k.curr(1), Some(x));
    k.watchdog_kick(1, 10 * MS);
    settle(&mut k, 10 * MS);
    assert_eq!(k.curr(1), Some(x), "the stopper ran and X is back");
    k.sync_curr(1, 20 * MS);
    assert_eq!(k.tasks[x as usize].se.sum_exec_runtime, 20 * MS);
}
