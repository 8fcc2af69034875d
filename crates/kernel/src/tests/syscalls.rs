//! `sched_setaffinity()` and `sched_setscheduler()` on crafted states
//! (core.c's `affine_move_task()`, syscalls.c's `__sched_setscheduler()`).

use super::common::{fair_task, kernel_with, start_fair, task_with, TestKernel};
use crate::core::stopper_pid;
use crate::syscalls::SchedAttr;
use crate::{Policy, SchedClass};
use schedlab_topology::{CpuSet, Topology};
use schedlab_trace::EventKind;

const US: u64 = 1_000;

fn kernel() -> TestKernel {
    kernel_with(Topology::preset("qemu-4").unwrap(), "6.12", &[], 5)
}

const FIFO_10: SchedAttr = SchedAttr { policy: Policy::Fifo, nice: 0, rt_priority: 10 };

#[test]
fn setaffinity_of_a_running_task_moves_it_through_the_migration_stopper() {
    let mut k = kernel();
    let a = fair_task(&mut k, 1, "0-3", 0);
    start_fair(&mut k, a, 0);
    assert_eq!(k.curr(0), Some(a));
    k.events.clear();
    k.set_cpus_allowed_ptr(a, CpuSet::single(2), 100 * US, 0);
    // The task cannot be moved while it runs: its CPU's stopper is queued
    // and preempts it.
    assert_eq!(k.rqs[0].migration_pending, Some((a, 2)));
    assert_eq!(k.tasks[a as usize].cpu, 0, "still on CPU 0 until the stopper runs");
    assert!(k.need_resched(0, true), "the stopper preempts the task");
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::SchedWakeup { pid, .. } if pid == stopper_pid(0))));
    k.check_invariants().unwrap();
    k.events.clear();
    k.schedule(0, 100 * US, true);
    let migrate = k
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::SchedMigrateTask { pid: 1, orig_cpu: 0, dest_cpu: 2, .. }))
        .expect("a sched_migrate_task 0 -> 2");
    assert_eq!(migrate.ctx_pid, stopper_pid(0), "emitted by migration/0, as migration_cpu_stop() runs there");
    assert_eq!(k.tasks[a as usize].cpu, 2);
    assert_eq!(k.curr(0), None, "CPU 0 has nothing left");
    assert_eq!(k.rqs[0].migration_pending, None);
    k.check_invariants().unwrap();
    assert!(k.need_resched(2, true), "the idle destination is told to pick it");
    k.schedule(2, 101 * US, true);
    assert_eq!(k.curr(2), Some(a));
}

#[test]
fn setaffinity_moves_a_queued_task_at_once_and_leaves_one_already_inside_the_mask() {
    let mut k = kernel();
    let a = fair_task(&mut k, 1, "0-3", 0);
    let b = fair_task(&mut k, 2, "0-3", 0);
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    let (running, queued) = if k.curr(0) == Some(a) { (a, b) } else { (b, a) };
    assert_eq!(k.tasks[queued as usize].cpu, 0);
    // A queued task outside its new mask: move_queued_task(), no stopper.
    k.set_cpus_allowed_ptr(queued, CpuSet::single(3), 50 * US, 0);
    assert_eq!(k.tasks[queued as usize].cpu, 3);
    assert_eq!(k.rqs[0].migration_pending, None);
    assert_eq!(k.rqs[3].nr_running, 1);
    k.check_invariants().unwrap();
    // The running task on a CPU its new mask still allows: nothing moves.
    k.events.clear();
    k.set_cpus_allowed_ptr(running, CpuSet::from_iter([0, 1]), 60 * US, 0);
    assert_eq!(k.rqs[0].migration_pending, None);
    assert_eq!(k.tasks[running as usize].cpu, 0);
    assert!(!k.events.iter().any(|e| matches!(e.kind, EventKind::SchedMigrateTask { .. })));
    k.check_invariants().unwrap();
}

#[test]
fn setscheduler_to_fifo_preempts_the_running_fair_task_and_back_to_fair_reschedules() {
    let mut k = kernel();
    let a = fair_task(&mut k, 1, "0", 0);
    let b = fair_task(&mut k, 2, "0", 0);
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    let queued = if k.curr(0) == Some(a) { b } else { a };
    assert!(!k.need_resched(0, true));
    assert!(k.sched_setscheduler(queued, FIFO_10, 10 * US, 0));
    assert_eq!(k.class_of(queued), SchedClass::Rt);
    assert_eq!(k.tasks[queued as usize].prio, 89, "MAX_RT_PRIO - 1 - 10");
    assert!(k.need_resched(0, true), "an RT task outranks the running fair one");
    k.check_invariants().unwrap();
    k.schedule(0, 10 * US, true);
    assert_eq!(k.curr(0), Some(queued));
    // Identical parameters: the kernel returns early, nothing happens.
    assert!(!k.sched_setscheduler(queued, FIFO_10, 20 * US, 0));
    // Back to SCHED_OTHER while running: switched_to_fair() reschedules so
    // the fair class can pick between it and the other task.
    let other = SchedAttr { policy: Policy::Normal, nice: 0, rt_priority: 0 };
    assert!(k.sched_setscheduler(queued, other, 30 * US, 0));
    assert_eq!(k.class_of(queued), SchedClass::Fair);
    assert_eq!(k.tasks[queued as usize].prio, 120);
    assert!(k.need_resched(0, true));
    k.check_invariants().unwrap();
}

#[test]
fn setscheduler_nice_rise_of_the_running_task_reschedules_and_reweights() {
    let mut k = kernel();
    let a = fair_task(&mut k, 1, "0", 0);
    let b = fair_task(&mut k, 2, "0", 0);
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    let running = k.curr(0).unwrap();
    let nice10 = SchedAttr { policy: Policy::Normal, nice: 10, rt_priority: 0 };
    assert!(k.sched_setscheduler(running, nice10, 10 * US, 0));
    assert_eq!(k.tasks[running as usize].se.load.weight, 110, "sched_prio_to_weight[30]");
    assert!(k.need_resched(0, true), "prio_changed_fair(): the running task's priority dropped");
    k.check_invariants().unwrap();
    // An RT policy keeps the static priority, and set_load_weight() its weight.
    assert!(k.sched_setscheduler(running, FIFO_10, 20 * US, 0));
    assert_eq!((k.tasks[running as usize].static_prio, k.tasks[running as usize].se.load.weight), (130, 110));
    k.check_invariants().unwrap();
}

#[test]
fn setscheduler_keeps_a_pi_boost_above_the_new_priority() {
    let mut k = kernel();
    let owner = task_with(&mut k, 1, Policy::Normal, 0, "0", 0);
    let waiter = task_with(&mut k, 2, Policy::Fifo, 50, "1", 1);
    start_fair(&mut k, owner, 0);
    start_fair(&mut k, waiter, 0);
    assert!(k.rt_mutex_lock(owner, 0, 10 * US, 0));
    assert!(!k.rt_mutex_lock(waiter, 0, 20 * US, 1));
    assert_eq!(k.tasks[owner as usize].prio, 49, "boosted to the waiter's priority");
    // The owner asks for FIFO 10 (prio 89): the boost (49) stays in force.
    assert!(k.sched_setscheduler(owner, FIFO_10, 30 * US, 0));
    assert_eq!(k.tasks[owner as usize].prio, 49);
    assert_eq!(k.tasks[owner as usize].normal_prio, 89);
    k.check_invariants().unwrap();
    // Unlock ends the boost: the owner falls to its own new priority.
    k.rt_mutex_unlock(owner, 0, 40 * US, 0);
    assert_eq!(k.tasks[owner as usize].prio, 89);
    k.check_invariants().unwrap();
}

#[test]
fn set_user_nice_reweights_a_fair_task_keeps_its_slice_and_only_records_it_for_rt() {
    let mut k = kernel();
    let a = fair_task(&mut k, 1, "0", 0);
    let b = fair_task(&mut k, 2, "0", 0);
    k.tasks[a as usize].se.custom_slice = true;
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    let running = k.curr(0).unwrap();
    assert!(k.set_user_nice(running, 5, 10 * US, 0));
    assert_eq!(k.tasks[running as usize].se.load.weight, 335, "sched_prio_to_weight[25]");
    assert_eq!(k.tasks[running as usize].prio, 125);
    assert!(k.need_resched(0, true), "its priority dropped while it ran");
    assert!(!k.set_user_nice(running, 5, 11 * US, 0), "the same value: nothing to do");
    assert!(k.tasks[a as usize].se.custom_slice, "setpriority() leaves a custom slice alone");
    k.check_invariants().unwrap();
    // An RT task records the nice value; its priority and weight stay.
    let r = task_with(&mut k, 3, Policy::Fifo, 10, "1", 1);
    start_fair(&mut k, r, 20 * US);
    let weight = k.tasks[r as usize].se.load.weight;
    assert!(k.set_user_nice(r, -5, 30 * US, 1));
    assert_eq!((k.tasks[r as usize].prio, k.tasks[r as usize].static_prio), (89, 115));
    assert_eq!(k.tasks[r as usize].se.load.weight, weight);
    k.check_invariants().unwrap();
}
