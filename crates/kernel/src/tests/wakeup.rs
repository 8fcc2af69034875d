//! The wakeup path on crafted machines and states: one test per
//! `select_idle_sibling()` rule, the wakelist, and the ttwu patches.

use super::common::TestKernel;
use crate::fair::select::SisRule;
use crate::{IpiKind, Policy, TaskId, TaskParams, TaskState};
use schedlab_topology::{CpuSet, Topology};
use schedlab_trace::{DelayedWhat, EventKind, WakePath};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

use super::common::{fair_task as add, start_fair as start};

fn kernel_on(topology: Topology, settings: &[&str]) -> TestKernel {
    super::common::kernel_with(topology, "6.12", settings, 1)
}

fn kernel(preset: &str, settings: &[&str]) -> TestKernel {
    kernel_on(Topology::preset(preset).unwrap(), settings)
}

/// A hog pinned to `cpu`, running.
fn busy(k: &mut TestKernel, pid: i32, cpu: usize, now: u64) -> TaskId {
    let t = add(k, pid, &cpu.to_string(), cpu);
    start(k, t, now);
    assert_eq!(k.curr(cpu), Some(t));
    t
}

/// A task that ran on `cpu` and went to sleep there (eligible, so fully dequeued).
fn sleeper(k: &mut TestKernel, pid: i32, mask: &str, cpu: usize, now: &mut u64) -> TaskId {
    let t = add(k, pid, mask, cpu);
    start(k, t, *now);
    assert_eq!(k.curr(cpu), Some(t));
    *now += 100 * US;
    k.sync_curr(cpu, *now);
    k.set_current_state(cpu, TaskState::Interruptible);
    k.schedule(cpu, *now, false);
    assert!(!k.tasks[t as usize].se.on_rq);
    k.check_invariants().unwrap();
    t
}

fn llc(k: &TestKernel, cpu: usize) -> usize {
    k.domains.cpus[cpu].sd_llc_id
}

/// `kernel(preset, settings)` with a hog running on each of `busy_cpus`
/// (pids 10, 11, ...), then the task to wake: pid 1, allowed on `mask`,
/// last run on `prev`, whose `recent_used_cpu` is `prev` too.
fn waking(preset: &str, settings: &[&str], busy_cpus: &[usize], mask: &str, prev: usize) -> (TestKernel, TaskId) {
    let mut k = kernel(preset, settings);
    for (i, &cpu) in busy_cpus.iter().enumerate() {
        busy(&mut k, 10 + i as i32, cpu, 0);
    }
    let p = add(&mut k, 1, mask, prev);
    k.tasks[p as usize].recent_used_cpu = prev;
    (k, p)
}

// ---- select_idle_sibling(), non-SMT (qemu-4: CPUs 0-3, one LLC) ----

#[test]
fn sis_target_when_idle() {
    let (mut k, p) = waking("qemu-4", &[], &[], "0-3", 1);
    assert_eq!(k.select_idle_sibling(p, 1, 2), (2, SisRule::Target));
}

#[test]
fn sis_prev_when_target_busy_and_prev_idle_in_the_same_llc() {
    let (mut k, p) = waking("qemu-4", &[], &[2], "0-3", 1);
    assert_eq!(k.select_idle_sibling(p, 1, 2), (1, SisRule::Prev));
}

#[test]
fn sis_recent_used_cpu_then_remembers_prev() {
    let (mut k, p) = waking("qemu-4", &[], &[1, 2], "0-3", 1);
    k.tasks[p as usize].recent_used_cpu = 3;
    assert_eq!(k.select_idle_sibling(p, 1, 2), (3, SisRule::RecentUsed));
    assert_eq!(k.tasks[p as usize].recent_used_cpu, 1);
}

#[test]
fn sis_scans_the_llc_from_target_plus_one() {
    let (mut k, p) = waking("qemu-4", &[], &[1, 2], "0-3", 1);
    // From target 1: CPU 2 busy, CPU 3 idle (CPU 0 is idle too but comes later).
    assert_eq!(k.select_idle_sibling(p, 1, 1), (3, SisRule::IdleCpu));
    // Affinity is honoured by the scan.
    let q = add(&mut k, 2, "0-2", 1);
    k.tasks[q as usize].recent_used_cpu = 1;
    assert_eq!(k.select_idle_sibling(q, 1, 1), (0, SisRule::IdleCpu));
}

#[test]
fn sis_util_budget_limits_the_scan() {
    let (mut k, p) = waking("qemu-4", &[], &[1, 2], "0-3", 1);
    let l = llc(&k, 1);
    // Budget 1 probes one CPU (CPU 2, busy) and gives up before CPU 3.
    k.llc_shared[l].nr_idle_scan = 1;
    assert_eq!(k.select_idle_sibling(p, 1, 1), (1, SisRule::Fallback));
    // Budget 0 skips the scan entirely.
    k.llc_shared[l].nr_idle_scan = 0;
    assert_eq!(k.select_idle_sibling(p, 1, 1), (1, SisRule::Fallback));
    // Without SIS_UTIL the whole LLC is scanned.
    let (mut k, p) = waking("qemu-4", &["NO_SIS_UTIL"], &[1, 2], "0-3", 1);
    let l = llc(&k, 1);
    k.llc_shared[l].nr_idle_scan = 0;
    assert_eq!(k.select_idle_sibling(p, 1, 1), (3, SisRule::IdleCpu));
}

#[test]
fn sis_falls_back_to_target_when_nothing_is_idle() {
    let (mut k, p) = waking("qemu-4", &[], &[0, 1, 2, 3], "0-3", 1);
    assert_eq!(k.select_idle_sibling(p, 1, 2), (2, SisRule::Fallback));
}

// ---- select_idle_sibling(), SMT (smt-2x2: cores {0,1} and {2,3}) ----

#[test]
fn sis_prefers_a_whole_idle_core() {
    let (mut k, p) = waking("smt-2x2", &[], &[0], "0-3", 0);
    let l = llc(&k, 0);
    assert!(k.llc_shared[l].has_idle_cores);
    // CPU 1 is idle but its sibling is busy; core {2,3} is wholly idle.
    assert_eq!(k.select_idle_sibling(p, 0, 0), (2, SisRule::IdleCore));
}

#[test]
fn sis_idle_smt_sibling_of_prev_when_no_idle_core() {
    let (mut k, p) = waking("smt-2x2", &[], &[0, 2], "0-3", 0);
    let l = llc(&k, 0);
    k.llc_shared[l].has_idle_cores = false;
    assert_eq!(k.select_idle_sibling(p, 0, 0), (1, SisRule::IdleSmt));
}

#[test]
fn sis_stale_idle_core_hint_is_cleared_and_an_idle_thread_used() {
    let (mut k, p) = waking("smt-2x2", &[], &[0, 2], "0-3", 0);
    let l = llc(&k, 0);
    k.llc_shared[l].has_idle_cores = true;
    let (cpu, rule) = k.select_idle_sibling(p, 0, 0);
    assert_eq!(rule, SisRule::IdleCore);
    assert_eq!(cpu, 1, "the first idle thread seen while looking for an idle core");
    assert!(!k.llc_shared[l].has_idle_cores, "no idle core found: the hint is cleared");
}

#[test]
fn going_idle_with_idle_siblings_sets_the_idle_core_hint() {
    let mut k = kernel("smt-2x2", &[]);
    let l = llc(&k, 2);
    k.llc_shared[l].has_idle_cores = false;
    let mut now = 0;
    sleeper(&mut k, 1, "2", 2, &mut now);
    assert!(k.llc_shared[l].has_idle_cores);
}

// ---- select_idle_sibling(), asymmetric capacity ----

#[test]
fn sis_asym_capacity_picks_an_idle_cpu_the_task_fits() {
    let text = "name = \"asym4\"\nhz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 4\n[capacity]\n\"0-1\" = 512\n\"2-3\" = 1024\n";
    let topo = Topology::from_toml_str("asym4.toml", text).unwrap();
    let mut k = kernel_on(topo, &[]);
    let p = add(&mut k, 1, "0-3", 0);
    k.tasks[p as usize].se.avg.util_avg = 600;
    // Target 0 is idle but too small for a 600-utilisation task.
    assert_eq!(k.select_idle_sibling(p, 0, 0), (2, SisRule::AsymCapacity));
    k.tasks[p as usize].se.avg.util_avg = 100;
    assert_eq!(k.select_idle_sibling(p, 0, 0), (0, SisRule::Target));
}

// ---- wakelist and IPIs ----

#[test]
fn wakeup_to_an_idle_cpu_goes_through_its_wakelist() {
    let mut k = kernel("qemu-4", &[]);
    let mut now = 0;
    busy(&mut k, 10, 0, now);
    let s = sleeper(&mut k, 1, "1", 1, &mut now);
    assert!(k.idle_cpu(1));
    now += 50 * US;
    k.events.clear();
    assert!(k.try_to_wake_up(s, now, 0, 0));
    assert_eq!(k.ipis.len(), 1);
    let ipi = k.ipis[0];
    assert_eq!((ipi.cpu, ipi.kind, ipi.idle, ipi.polled), (1, IpiKind::CallFunction, true, false));
    assert!(k.rqs[1].ttwu_pending && !k.idle_cpu(1), "ttwu_pending makes the target non-idle at once");
    assert!(!k.tasks[s as usize].se.on_rq, "not enqueued until the target runs its wakelist");
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::Ttwu { path: WakePath::Wakelist, cpu: 1, .. })));
    k.check_invariants().unwrap();
    k.ipis.clear();
    k.sched_ttwu_pending(1, now + 50 * US);
    assert!(k.tasks[s as usize].se.on_rq && !k.rqs[1].ttwu_pending);
    let wakeup = k.events.iter().find(|e| matches!(e.kind, EventKind::SchedWakeup { .. })).unwrap();
    assert_eq!(wakeup.cpu, 1, "sched_wakeup is emitted by the target CPU");
    assert!(k.need_resched(1, false));
    k.check_invariants().unwrap();
}

#[test]
fn polling_idle_cpus_are_woken_without_an_ipi() {
    let topo = Topology::preset("qemu-4").unwrap();
    let mut k = kernel_on(topo, &[]);
    let mut now = 0;
    let s = sleeper(&mut k, 1, "1", 1, &mut now);
    // Halted (the idle state does not poll): an IPI.
    k.events.clear();
    k.try_to_wake_up(s, now, 0, 0);
    assert!(!k.ipis[0].polled && k.ipis[0].idle);
    assert_eq!((k.ipis[0].from, k.ipis[0].cpu), (0, 1));
    // In a polling idle state: the flag alone.
    let mut k = kernel_on(Topology::preset("qemu-4").unwrap(), &[]);
    let mut now = 0;
    let s = sleeper(&mut k, 1, "1", 1, &mut now);
    k.set_idle_polling(1, true);
    k.events.clear();
    k.try_to_wake_up(s, now, 0, 0);
    assert!(k.ipis[0].polled);
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::SchedWakeIdleWithoutIpi { cpu: 1 })));
}

/// `kernel("qemu-4", settings)` with a task (pid 1, pinned to CPU 1) that
/// slept there and a hog (pid 10) now running there. Returns (kernel, sleeper, now).
fn sleeper_behind_a_hog_on_cpu1(settings: &[&str]) -> (TestKernel, TaskId, u64) {
    let mut k = kernel("qemu-4", settings);
    let mut now = 0;
    let s = sleeper(&mut k, 1, "1", 1, &mut now);
    busy(&mut k, 10, 1, now);
    (k, s, now)
}

#[test]
fn busy_target_in_the_same_llc_is_activated_directly() {
    let (mut k, s, now) = sleeper_behind_a_hog_on_cpu1(&[]);
    k.events.clear();
    k.try_to_wake_up(s, now, 0, 0);
    assert!(k.tasks[s as usize].se.on_rq, "enqueued from the waker's CPU");
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::Ttwu { path: WakePath::Activate, .. })));
    // TTWU_QUEUE_DEFAULT (RFC) queues it remotely anyway.
    let (mut k, s, now) = sleeper_behind_a_hog_on_cpu1(&["TTWU_QUEUE_DEFAULT"]);
    k.try_to_wake_up(s, now, 0, 0);
    assert!(!k.tasks[s as usize].se.on_rq && k.rqs[1].ttwu_pending);
}

#[test]
fn cross_llc_wakeup_is_queued_remotely_even_to_a_busy_cpu() {
    let mut k = kernel("ryzen-7950x", &[]);
    let mut now = 0;
    let s = sleeper(&mut k, 1, "10", 10, &mut now);
    busy(&mut k, 20, 10, now);
    busy(&mut k, 21, 2, now);
    k.try_to_wake_up(s, now, 2, 0);
    assert!(k.rqs[10].ttwu_pending);
    assert_eq!((k.ipis[0].cpu, k.ipis[0].kind, k.ipis[0].idle), (10, IpiKind::CallFunction, false));
}

// ---- delayed tasks at wakeup ----

/// A (allowed on all of qemu-4) left sched_delayed on CPU 0 (see
/// `common::delayed_on_cpu0`). Returns (kernel, A, now).
fn delayed_on_cpu0(settings: &[&str]) -> (TestKernel, TaskId, u64) {
    let mut k = kernel("qemu-4", settings);
    let (a, now) = super::common::delayed_on_cpu0(&mut k);
    (k, a, now)
}

#[test]
fn woken_delayed_task_stays_on_its_busy_cpu_by_default() {
    let (mut k, a, now) = delayed_on_cpu0(&[]);
    k.try_to_wake_up(a, now, 3, 0);
    assert_eq!(k.tasks[a as usize].cpu, 0);
    assert!(k.tasks[a as usize].se.on_rq && !k.tasks[a as usize].se.sched_delayed);
    assert!(k
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Ttwu { path: WakePath::Runnable { delayed: true }, .. })));
    assert!(!k.events.iter().any(|e| matches!(e.kind, EventKind::SchedMigrateTask { .. })));
}

#[test]
fn ttwu_dequeue_moves_a_woken_delayed_task_to_an_idle_cpu() {
    let (mut k, a, now) = delayed_on_cpu0(&["TTWU_DEQUEUE"]);
    k.try_to_wake_up(a, now, 3, 0);
    assert_ne!(k.tasks[a as usize].cpu, 0);
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::Delayed { what: DelayedWhat::DequeuedAtWakeup, .. })));
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::SchedMigrateTask { orig_cpu: 0, .. })));
    k.check_invariants().unwrap();
}

#[test]
fn dequeue_delayed_moves_it_unless_it_is_the_running_tasks_buddy() {
    let (mut k, a, now) = delayed_on_cpu0(&["DEQUEUE_DELAYED"]);
    k.try_to_wake_up(a, now, 3, 0);
    assert_ne!(k.tasks[a as usize].cpu, 0);
    let (mut k, a, now) = delayed_on_cpu0(&["DEQUEUE_DELAYED"]);
    let b = k.curr(0).unwrap();
    k.tasks[b as usize].wakee.last_wakee = Some(a);
    k.try_to_wake_up(a, now, 3, 0);
    assert_eq!(k.tasks[a as usize].cpu, 0, "buddies are not ripped apart");
}

#[test]
fn ttwu_queue_delayed_hands_the_wakeup_to_the_tasks_cpu_which_places_it() {
    let (mut k, a, now) = delayed_on_cpu0(&["TTWU_QUEUE_DELAYED"]);
    k.try_to_wake_up(a, now, 3, 0);
    assert!(k.rqs[0].ttwu_pending, "queued on its own CPU's wakelist");
    assert!(k.tasks[a as usize].se.sched_delayed, "still delayed until CPU 0 runs the list");
    assert_eq!(k.tasks[a as usize].wake_cpu, 3);
    k.check_invariants().unwrap();
    k.ipis.clear();
    k.sched_ttwu_pending(0, now + 5 * US);
    let dest = k.tasks[a as usize].cpu;
    assert_ne!(dest, 0, "placed away from the busy CPU");
    assert!(k.rqs[dest].ttwu_pending, "forwarded to the chosen CPU's wakelist");
    k.check_invariants().unwrap();
    k.sched_ttwu_pending(dest, now + 10 * US);
    assert!(k.tasks[a as usize].se.on_rq && k.tasks[a as usize].state == TaskState::Running);
    k.check_invariants().unwrap();
}

#[test]
fn ttwu_delayed_v1_requeues_in_place_on_the_owning_cpu() {
    // The RFC's first version: the wakelist only moves the requeue to the
    // task's own CPU; no selection, so it stays on busy CPU 0.
    let (mut k, a, now) = delayed_on_cpu0(&["TTWU_QUEUE_DELAYED", "TTWU_DELAYED_V1"]);
    k.try_to_wake_up(a, now, 3, 0);
    assert!(k.rqs[0].ttwu_pending && k.tasks[a as usize].se.sched_delayed);
    k.sched_ttwu_pending(0, now + 5 * US);
    let t = &k.tasks[a as usize];
    assert_eq!(t.cpu, 0, "requeued where it was");
    assert!(!t.se.sched_delayed && t.se.on_rq && t.state == TaskState::Running);
    assert!((1..4).all(|c| !k.rqs[c].ttwu_pending), "nothing forwarded");
    k.check_invariants().unwrap();
}

#[test]
fn idle_cpu_is_false_on_a_cpu_holding_only_a_delayed_task() {
    let (mut k, a, now) = delayed_on_cpu0(&[]);
    // An affinity change moves the queued (delayed) task to idle CPU 2.
    k.set_cpus_allowed_ptr(a, CpuSet::single(2), now, 0);
    assert_eq!(k.tasks[a as usize].cpu, 2);
    assert!(k.tasks[a as usize].se.sched_delayed, "the delayed state travels with the task");
    assert_eq!(k.curr(2), None);
    assert_eq!(k.rqs[2].nr_running, 1);
    assert!(!k.idle_cpu(2), "a delayed task counts in nr_running");
    k.check_invariants().unwrap();
    // The idle CPU picks it, which completes the delayed dequeue.
    k.schedule(2, now + 5 * US, true);
    assert!(k.idle_cpu(2));
    assert!(!k.tasks[a as usize].se.on_rq);
    k.check_invariants().unwrap();
}

#[test]
fn fork_balancing_spreads_new_tasks_over_idle_cpus() {
    let mut k = kernel("qemu-4", &[]);
    let mut cpus = Vec::new();
    for i in 0..4 {
        let t = k.add_task(TaskParams {
            pid: 1 + i,
            policy: Policy::Normal,
            nice: 0,
            rt_priority: 0,
            slice_ns: None,
            cpus_mask: CpuSet::first_n(4),
            cpu: 0,
            fixed_start: false,
            dl: None,
        });
        start(&mut k, t, i as u64 * MS);
        cpus.push(k.tasks[t as usize].cpu);
    }
    cpus.sort();
    assert_eq!(cpus, vec![0, 1, 2, 3], "each new task lands on an idle CPU");
}

/// `kernel("qemu-4", settings)` with a task (pid 1, allowed on 0-3) that ran
/// on CPU 1 and blocked there at 100 us: schedule() has picked the next task
/// but the switch away from it has not completed.
fn switching_away_on_cpu1(settings: &[&str]) -> (TestKernel, TaskId) {
    let mut k = kernel("qemu-4", settings);
    let s = add(&mut k, 1, "0-3", 1);
    start(&mut k, s, 0);
    k.sync_curr(1, 100 * US);
    k.set_current_state(1, TaskState::Interruptible);
    k.schedule(1, 100 * US, false);
    (k, s)
}

#[test]
fn wakeup_during_the_switch_away_takes_the_on_cpu_wakelist_shortcut() {
    let (mut k, s) = switching_away_on_cpu1(&[]);
    assert!(k.tasks[s as usize].on_cpu, "still on CPU 1 until the switch completes");
    k.check_invariants().unwrap();
    k.events.clear();
    k.try_to_wake_up(s, 100 * US, 0, 0);
    assert!(k.rqs[1].ttwu_pending, "queued to its own CPU without select_task_rq()");
    assert!(!k.events.iter().any(|e| matches!(e.kind, EventKind::SchedMigrateTask { .. })));
    k.check_invariants().unwrap();
    k.sched_ttwu_pending(1, 102 * US);
    assert!(!k.tasks[s as usize].on_cpu || k.curr(1) == Some(s));
    assert!(k.tasks[s as usize].se.on_rq);
    k.check_invariants().unwrap();

    // Without TTWU_QUEUE_ON_CPU the waker waits for the switch, then selects a CPU.
    let (mut k, s) = switching_away_on_cpu1(&["NO_TTWU_QUEUE_ON_CPU"]);
    k.try_to_wake_up(s, 100 * US, 0, 0);
    assert!(!k.tasks[s as usize].on_cpu || k.curr(k.tasks[s as usize].cpu) == Some(s));
    k.check_invariants().unwrap();
}
