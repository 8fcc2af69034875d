//! The scheduling paths' CPU time (`[costs.kernel]`): what each wakeup path
//! charges, and to which CPU.

use super::common::{fair_task as add, start_fair as start, TestKernel};
use crate::TaskState;
use schedlab_topology::Topology;

const US: u64 = 1_000;

/// Two packages (NUMA nodes) of one LLC with two CPUs each: CPUs 0-1 and 2-3.
const MACHINE: &str = r#"
hz = 1000
preempt = "full"
[layout]
packages = 2
cores_per_llc = 2
[costs.kernel]
enqueue = "100ns"
dequeue = "70ns"
select = "50ns"
select_per_cpu = "10ns"
wakelist = "30ns"
ipi_send = "20ns"
remote_rq = "200ns"
[costs.numa]
remote_rq = "500ns"
"#;

fn kernel(settings: &[&str]) -> TestKernel {
    let topo = Topology::from_toml_str("costs.toml", MACHINE).unwrap();
    super::common::kernel_with(topo, "6.12", settings, 1)
}

/// Task 1 (allowed anywhere) left delayed on CPU 0 behind a pinned hog.
fn delayed_on_cpu0() -> (TestKernel, crate::TaskId, u64) {
    let mut k = kernel(&[]);
    let (a, now) = super::common::delayed_on_cpu0(&mut k);
    (k, a, now)
}

/// What `exec` was charged, and the IPIs it sent (polled ones are free).
fn charged(k: &TestKernel, exec: u32) -> (u64, u64) {
    let ns = k.cpu_ns.iter().filter(|(c, _)| *c == exec).map(|(_, n)| n).sum();
    let sent = k.ipis.iter().filter(|i| i.from == exec as usize && !i.polled).count() as u64;
    (ns, sent)
}

#[test]
fn waking_a_queued_task_pays_the_remote_runqueue_by_distance() {
    // The same in-place wakeup (ttwu_runnable's requeue of a delayed task)
    // from its own CPU, a CPU of its LLC and a CPU of the other package:
    // the requeue's enqueue everywhere, the lock's lines by distance.
    for (exec, remote) in [(0u32, 0u64), (1, 200), (2, 500)] {
        let (mut k, a, now) = delayed_on_cpu0();
        k.try_to_wake_up(a, now, exec as usize, 0);
        assert!(!k.tasks[a as usize].se.sched_delayed, "woken in place");
        let (ns, sent) = charged(&k, exec);
        assert_eq!(ns, remote + 100 + 20 * sent, "exec CPU {exec}: {:?}", k.cpu_ns);
        assert!(k.cpu_ns.iter().all(|(c, _)| *c == exec), "only the waker pays: {:?}", k.cpu_ns);
    }
}

#[test]
fn a_wakelist_wakeup_splits_its_cost_between_waker_and_target() {
    // A sleeper fully dequeued from CPU 0, woken from the other package:
    // select_task_rq_fair() and the wakelist add on the waker, the enqueue
    // on the CPU that runs its wakelist.
    let mut k = kernel(&["NO_DELAY_DEQUEUE"]);
    let a = add(&mut k, 1, "0-1", 0);
    start(&mut k, a, 0);
    let now = 500 * US;
    k.sync_curr(0, now);
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, now, false);
    assert!(!k.tasks[a as usize].se.on_rq);
    // Past the switch: a wakeup while it is still on_cpu takes the
    // TTWU_QUEUE_ON_CPU shortcut, with no select_task_rq().
    k.finish_task_switch(0);
    k.cpu_ns.clear();
    k.ipis.clear();
    k.try_to_wake_up(a, now + 10 * US, 2, 0);
    let target = k.tasks[a as usize].cpu;
    assert!(target <= 1 && k.rqs[target].wake_list.contains(&a), "cross-package: the wakelist");
    let (ns, sent) = charged(&k, 2);
    assert!(ns >= 50 + 30 + 20 * sent, "{:?} {:?}", k.cpu_ns, k.ipis);
    let probes = (ns - 50 - 30 - 20 * sent) / 10;
    assert_eq!(ns, 50 + 10 * probes + 30 + 20 * sent, "{:?}", k.cpu_ns);
    assert!(probes >= 1, "select_idle_sibling() tested at least one CPU");
    k.cpu_ns.clear();
    k.sched_ttwu_pending(target, now + 20 * US);
    assert_eq!(charged(&k, target as u32).0, 100, "the enqueue, on the target: {:?}", k.cpu_ns);
}

/// One LLC of four CPUs with these `[costs.kernel]` lines.
fn one_llc(name: &str, kernel_costs: &str) -> Topology {
    let text = format!("hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = 4\n[costs.kernel]\n{kernel_costs}");
    Topology::from_toml_str(name, &text).unwrap()
}

/// Two tasks allowed on CPUs 2-3 that both last ran, and now sleep, on CPU 2.
fn two_sleepers_of_cpu2() -> (TestKernel, crate::TaskId, crate::TaskId, u64) {
    let topo = one_llc("slow-select.toml", "select = \"200ns\"\nselect_per_cpu = \"10ns\""); // its selection takes time
    let mut k = super::common::kernel_with(topo, "6.12", &["NO_DELAY_DEQUEUE"], 1);
    let (a, b) = (add(&mut k, 1, "2-3", 2), add(&mut k, 2, "2-3", 2));
    let mut now = 0;
    for t in [a, b] {
        start(&mut k, t, now);
        now += 100 * US;
        k.sync_curr(2, now);
        if k.curr(2) != Some(t) {
            k.schedule(2, now, true);
        }
        assert_eq!(k.curr(2), Some(t));
        k.set_current_state(2, TaskState::Interruptible);
        k.schedule(2, now, false);
        k.finish_task_switch(2);
    }
    assert!(k.curr(2).is_none() && k.tasks[a as usize].wake_cpu == 2 && k.tasks[b as usize].wake_cpu == 2);
    k.ipis.clear();
    k.cpu_ns.clear();
    (k, a, b, now + 10 * US)
}

#[test]
fn wakers_selecting_at_once_can_choose_the_same_idle_cpu() {
    // Queued at once, the first wakeup marks CPU 2 (ttwu_pending) before
    // the second selects, which then finds CPU 3.
    let (mut k, a, b, now) = two_sleepers_of_cpu2();
    k.try_to_wake_up(a, now, 0, 0);
    k.try_to_wake_up(b, now, 1, 0);
    assert_eq!((k.tasks[a as usize].cpu, k.tasks[b as usize].cpu), (2, 3));

    // With the selection's 200+ ns in between (the kernel's order: scan,
    // then mark the target), both scans see CPU 2 idle and both choose it.
    let (mut k, a, b, now) = two_sleepers_of_cpu2();
    k.hold_wakes = true;
    assert!(k.try_to_wake_up(a, now, 0, 0) && k.try_to_wake_up(b, now, 1, 0));
    assert_eq!(k.deferred.len(), 2, "both remote wakeups wait for their selection's time");
    assert_eq!(k.tasks[a as usize].state, TaskState::Waking, "TASK_WAKING meanwhile");
    assert!(!k.try_to_wake_up(a, now, 3, 0), "a second waker of a waking task does nothing");
    assert!(!k.rqs[2].ttwu_pending, "CPU 2 does not know yet");
    let ws = std::mem::take(&mut k.deferred);
    assert!(ws.iter().all(|w| w.cpu == 2 && w.after_ns >= 200), "{ws:?}");
    assert_eq!(ws[0].from, 0);
    for w in ws {
        k.finish_wake(w, now + w.after_ns);
    }
    assert_eq!(k.rqs[2].wake_list, vec![a, b], "stacked on CPU 2 while CPU 3 idles");
    assert!(!k.rqs[3].ttwu_pending);
    k.check_invariants().unwrap();
}

/// Three tasks with affinity `cpu0_tasks` share CPU 0 and CPU 1 runs one
/// of its own, on a machine whose balances cost `balance_per_cpu` per CPU
/// read; CPU 1 expects long idles.
fn cpu0_crowded(balance_per_cpu: &str, cpu0_tasks: &str) -> TestKernel {
    let text =
        MACHINE.replace("[costs.kernel]\n", &format!("[costs.kernel]\nbalance_per_cpu = \"{balance_per_cpu}\"\n"));
    let topo = Topology::from_toml_str("costs.toml", &text).unwrap();
    let mut k = super::common::kernel_with(topo, "6.12", &["NO_NI_RANDOM"], 1);
    let crowd: Vec<_> = (1..=3).map(|pid| add(&mut k, pid, cpu0_tasks, 0)).collect();
    let s = add(&mut k, 9, "1", 1);
    for &t in crowd.iter().chain([&s]) {
        start(&mut k, t, 0);
    }
    k.rqs[1].avg_idle = 1_000_000;
    k
}

/// CPU 1's only task blocks while three movable tasks share CPU 0: the
/// newidle balance pulls one. The kernel, and what CPU 1 was charged.
fn newidle_pull(balance_per_cpu: &str) -> (TestKernel, u64) {
    let mut k = cpu0_crowded(balance_per_cpu, "0-1");
    let ns = block_on_cpu1(&mut k, 200 * US);
    (k, ns)
}

/// CPU 1's current task blocks at `now`; what CPU 1 is charged.
fn block_on_cpu1(k: &mut TestKernel, now: u64) -> u64 {
    k.sync_curr(1, now);
    k.cpu_ns.clear();
    k.events.clear();
    k.set_current_state(1, TaskState::Interruptible);
    k.schedule(1, now, false);
    k.check_invariants().unwrap();
    charged(k, 1).0
}

#[test]
fn balancing_pays_for_each_cpu_it_reads_and_the_newidle_gate_weighs_it() {
    // The pull at the first domain (CPUs 0-1) read 2 CPUs' statistics.
    let (k0, base) = newidle_pull("0ns");
    let (k1, with) = newidle_pull("40ns");
    assert!(k0.curr(1).is_some() && k1.curr(1).is_some(), "both pulled a task");
    assert_eq!(with - base, 2 * 40, "{:?} against {:?}", k1.cpu_ns, k0.cpu_ns);

    // At 50 us per CPU read the domain's balance costs 100 us, and the gate
    // learns that figure: 80 us of expected idle no longer covers it...
    let (mut k, _) = newidle_pull("50us");
    assert_eq!(k.sd_state[1][0].max_newidle_lb_cost, 2 * 50 * US);
    k.rqs[1].avg_idle = 80 * US;
    let ns = block_on_cpu1(&mut k, 400 * US);
    assert_eq!(k.curr(1), None, "CPU 1 idles");
    assert!(ns < 100 * US, "no balance ran: {:?}", k.cpu_ns);
    // ...and 1 ms does: the same balance pulls again.
    let (mut k, _) = newidle_pull("50us");
    let ns = block_on_cpu1(&mut k, 400 * US);
    assert!(k.curr(1).is_some(), "a task was pulled");
    assert!(ns >= 100 * US, "{:?}", k.cpu_ns);
}

#[test]
fn arming_an_hrtimer_costs_the_cpu_that_does_it() {
    // A fair task's first enqueue on an empty CPU starts the fair server,
    // deferred: its zero-laxity timer is armed there. What CPU 0 pays.
    let start = |hrtimer: &str| {
        let text = MACHINE.replace("[costs.kernel]\n", &format!("[costs.kernel]\nhrtimer = \"{hrtimer}\"\n"));
        let topo = Topology::from_toml_str("costs.toml", &text).unwrap();
        let mut k = super::common::kernel_with(topo, "6.12", &[], 1);
        let a = add(&mut k, 1, "0", 0);
        k.cpu_ns.clear();
        k.wake_up_new_task(a, 0, 0);
        let armed = k.timers.iter().filter(|t| t.what == crate::TimerKind::FairServer && t.cpu == 0).count();
        (charged(&k, 0).0, armed as u64)
    };
    let ((base, armed0), (with, armed)) = (start("0ns"), start("300ns"));
    assert_eq!((armed0, armed), (1, 1), "the server's timer is armed once");
    assert_eq!(with - base, 300, "one hrtimer_start()");
}

/// Three sleepers pinned to CPU 0 (no selection to pay), a hog running
/// there, in one LLC: a wakeup onto busy CPU 0 takes its runqueue lock from
/// the waker unless TTWU_QUEUE_DEFAULT sends it through the wakelist; a time after the setup, whose charges are cleared.
fn three_sleepers_behind_a_hog(settings: &[&str]) -> (TestKernel, Vec<crate::TaskId>, u64) {
    let topo = one_llc("one-llc.toml", "enqueue = \"100ns\"\nremote_rq = \"200ns\"");
    let mut k = super::common::kernel_with(topo, "6.12", settings, 1);
    let sleepers: Vec<_> = (1..=3).map(|pid| add(&mut k, pid, "0", 0)).collect();
    let mut now = 0;
    for &t in &sleepers {
        start(&mut k, t, now);
        now += 100 * US;
        k.sync_curr(0, now);
        if k.curr(0) != Some(t) {
            k.schedule(0, now, true);
        }
        k.set_current_state(0, TaskState::Interruptible);
        k.schedule(0, now, false);
        k.finish_task_switch(0);
    }
    let hog = add(&mut k, 4, "0", 0);
    start(&mut k, hog, now);
    assert_eq!(k.curr(0), Some(hog));
    k.cpu_ns.clear();
    k.ipis.clear();
    (k, sleepers, now + 100 * US)
}

#[test]
fn wakers_locking_one_runqueue_at_once_wait_for_each_other() {
    // CPUs 1-3 wake a task onto busy CPU 0 at the same instant, each
    // activating it under CPU 0's lock (200 ns of lines + 100 ns of
    // enqueue): the second spins through the first's hold, the third
    // through both.
    let (mut k, sleepers, now) = three_sleepers_behind_a_hog(&["NO_DELAY_DEQUEUE"]);
    for (waker, &t) in (1..=3).zip(&sleepers) {
        assert!(k.try_to_wake_up(t, now, waker, 0));
        assert!(k.tasks[t as usize].se.on_rq, "activated by the waker, not queued on the wakelist");
    }
    let paid: Vec<u64> = (1..=3).map(|c| charged(&k, c).0).collect();
    assert_eq!(paid, [300, 600, 900], "each waker's spin, lines and enqueue: {:?}", k.cpu_ns);
    assert_eq!(k.rq_lock_wait_ns(), 300 + 600);
    k.check_invariants().unwrap();

    // A waker that comes once the others are done finds the lock free.
    let (mut k, sleepers, now) = three_sleepers_behind_a_hog(&["NO_DELAY_DEQUEUE"]);
    k.try_to_wake_up(sleepers[0], now, 1, 0);
    k.try_to_wake_up(sleepers[1], now + 300, 2, 0);
    assert_eq!((charged(&k, 1).0, charged(&k, 2).0, k.rq_lock_wait_ns()), (300, 300, 0));
}

#[test]
fn the_wakelist_leaves_the_activations_to_the_target_under_one_lock() {
    // TTWU_QUEUE_DEFAULT: the same wakeups go through CPU 0's wakelist;
    // the wakers pay only the list add (free here) and nobody spins, and
    // CPU 0 does the three enqueues itself when it takes its list.
    let (mut k, sleepers, now) = three_sleepers_behind_a_hog(&["NO_DELAY_DEQUEUE", "TTWU_QUEUE_DEFAULT"]);
    for (waker, &t) in (1..=3).zip(&sleepers) {
        assert!(k.try_to_wake_up(t, now, waker, 0));
    }
    assert!(sleepers.iter().all(|&t| !k.tasks[t as usize].se.on_rq) && k.rqs[0].wake_list.len() == 3);
    assert_eq!((1..=3).map(|c| charged(&k, c).0).sum::<u64>(), 0);
    k.sched_ttwu_pending(0, now + 2 * US);
    assert!(sleepers.iter().all(|&t| k.tasks[t as usize].se.on_rq));
    assert_eq!((charged(&k, 0).0, k.rq_lock_wait_ns()), (300, 0));
    k.check_invariants().unwrap();
}

#[test]
fn a_cpu_in_a_newidle_balance_is_not_idle_until_the_balance_is_over() {
    // CPU 1's only task blocks with nothing to pull (the tasks crowding CPU
    // 0 are pinned there): the balance reads 2 CPUs at 50 us each. Until
    // those 100 us have passed, CPU 1 is not idle to a waker (the kernel
    // balances with the blocked task still rq->curr).
    let mut k = cpu0_crowded("50us", "0");
    let rd = k.rqs[1].rd;
    k.rds[rd].overloaded = true;
    let now = 200 * US;
    let ns = block_on_cpu1(&mut k, now);
    assert_eq!(k.curr(1), None);
    assert!(ns >= 100 * US, "{:?}", k.cpu_ns);
    assert!(!k.idle_cpu(1), "still balancing at {now}");
    // A kernel entry elsewhere after the balance's time sees it idle.
    k.sync_curr(0, now + ns);
    assert!(k.idle_cpu(1));
}

#[test]
fn the_old_dl_server_stops_at_every_last_fair_dequeue_and_is_armed_again() {
    // A fair task on CPU 0 blocks and wakes again, ten times. 6.12.0's
    // fair server stops each time the task leaves and its next start arms
    // the timer again (10 arms after the first); Debian's 6.12, or 6.12.0
    // with cccb45d7c429 (DL_SERVER_LAZY_STOP), keeps it started: one arm.
    let arms = |profile: &str, settings: &[&str]| {
        let text = MACHINE.replace("[costs.kernel]\n", "[costs.kernel]\nhrtimer = \"100ns\"\n");
        let topo = Topology::from_toml_str("costs.toml", &text).unwrap();
        let mut k = super::common::kernel_with(topo, profile, settings, 1);
        let a = add(&mut k, 1, "0", 0);
        k.wake_up_new_task(a, 0, 0);
        k.schedule(0, 0, false);
        for i in 1..=10u64 {
            let now = i * 100 * US;
            k.sync_curr(0, now);
            k.set_current_state(0, TaskState::Interruptible);
            k.schedule(0, now, false);
            assert_eq!(k.rqs[0].fair_server.active, profile == "6.12" || !settings.is_empty());
            k.try_to_wake_up(a, now + 50 * US, 0, 0);
            k.schedule(0, now + 50 * US, false);
            assert_eq!(k.curr(0), Some(a));
        }
        k.timers.iter().filter(|t| t.what == crate::TimerKind::FairServer && t.cpu == 0).count()
    };
    assert_eq!(arms("6.12.0", &[]), 11);
    assert_eq!(arms("6.12.0", &["DL_SERVER_LAZY_STOP"]), 1);
    assert_eq!(arms("6.12", &[]), 1);
}
