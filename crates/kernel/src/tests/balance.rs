//! Load-balancing decisions on crafted states: asym packing, the SMT rule,
//! active balance, the delayed-task rule per profile, newidle gating, and
//! seed 000's LB_FIRST_MIGRATION patch.

use super::common::TestKernel;
use crate::{IpiKind, KernelConfig, Profile, TaskId, TaskState};
use schedlab_topology::{PreemptModel, Topology};
use schedlab_trace::{BalanceKind, EventKind};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

use super::common::{fair_task as task, start_fair as start};

fn kernel(preset: &str, profile: &str, settings: &[&str]) -> TestKernel {
    super::common::kernel_with(Topology::preset(preset).unwrap(), profile, settings, 7)
}

fn lb_moves(k: &TestKernel) -> Vec<(i32, u32, u32, BalanceKind, bool)> {
    k.events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::LbMigrate { pid, src_cpu, dst_cpu, kind, delayed } => {
                Some((pid, src_cpu, dst_cpu, kind, delayed))
            }
            _ => None,
        })
        .collect()
}

/// A lone task runs on CPU 4 of the 7950X (rank 211); CPU 6 (rank 231) is idle.
fn lone_task_on_cpu4(busy_sibling_of_6: bool) -> (TestKernel, TaskId) {
    let mut k = kernel("ryzen-7950x", "6.12", &[]);
    let t = task(&mut k, 1, "4-7", 4);
    start(&mut k, t, 0);
    if busy_sibling_of_6 {
        let s = task(&mut k, 2, "22", 22);
        start(&mut k, s, 0);
    }
    k.events.clear();
    (k, t)
}

#[test]
fn asym_packing_pulls_a_lone_running_task_to_the_preferred_idle_core_by_active_balance() {
    let (mut k, t) = lone_task_on_cpu4(false);
    let now = 100 * MS;
    k.sync_curr(4, now);
    k.run_idle_balance(6, now, 6);
    // The running task cannot be detached, so the stopper is queued on CPU 4.
    assert!(k.events.iter().any(|e| matches!(e.kind, EventKind::ActiveBalanceQueued { src_cpu: 4, dst_cpu: 6 })));
    assert!(k.rqs[4].active_balance && k.rqs[4].push_cpu == 6);
    assert!(k.ipis.iter().any(|i| i.cpu == 4 && i.kind == IpiKind::Resched));
    assert_eq!(k.tasks[t as usize].cpu, 4, "nothing moves until the stopper runs");
    k.check_invariants().unwrap();
    // The stopper preempts the task on CPU 4 and pushes it to CPU 6.
    k.schedule(4, now + 2 * US, true);
    assert_eq!(k.tasks[t as usize].cpu, 6);
    assert_eq!(lb_moves(&k), vec![(1, 4, 6, BalanceKind::Active, false)]);
    assert_eq!(k.curr(4), None);
    assert!(k.need_resched(6, false));
    k.schedule(6, now + 5 * US, true);
    assert_eq!(k.curr(6), Some(t));
    k.check_invariants().unwrap();
    // The stopper shows in the trace as migration/4 between the two tasks.
    let switches: Vec<_> = k
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::SchedSwitch { prev_pid, next_pid, .. } if e.cpu == 4 => Some((prev_pid, next_pid)),
            _ => None,
        })
        .collect();
    let stopper = crate::core::stopper_pid(4);
    assert_eq!(switches, vec![(1, stopper), (stopper, 0)]);
}

#[test]
fn a_busy_smt_sibling_keeps_the_preferred_core_from_pulling() {
    let (mut k, t) = lone_task_on_cpu4(true);
    let now = 100 * MS;
    k.sync_curr(4, now);
    k.run_idle_balance(6, now, 6);
    assert!(!k.rqs[4].active_balance, "CPU 6's core is not idle, so its priority does not count");
    assert!(!k.events.iter().any(|e| matches!(e.kind, EventKind::ActiveBalanceQueued { .. })));
    assert_eq!(k.tasks[t as usize].cpu, 4);
}

#[test]
fn without_itmt_nothing_is_packed() {
    let mut topo = Topology::preset("ryzen-7950x").unwrap();
    topo.itmt_enabled = false;
    let profile = Profile::by_name("6.12").unwrap();
    let mut k = TestKernel::new(KernelConfig {
        features: profile.defaults,
        profile,
        topology: topo,
        preempt: PreemptModel::Full,
        trace: true,
        seed: 7,
        partitions: Vec::new(),
    });
    let t = task(&mut k, 1, "4-7", 4);
    start(&mut k, t, 0);
    k.run_idle_balance(6, 100 * MS, 6);
    assert!(!k.rqs[4].active_balance);
}

/// On qemu-4: A runs on CPU 0, B blocked while ineligible and is delayed
/// there; CPU 1 is idle. Returns (kernel, A, B, now).
fn delayed_next_to_a_runner(profile: &str, settings: &[&str]) -> (TestKernel, TaskId, TaskId, u64) {
    let mut k = kernel("qemu-4", profile, settings);
    let b = task(&mut k, 2, "0-1", 0);
    let a = task(&mut k, 1, "0-1", 0);
    start(&mut k, b, 0);
    start(&mut k, a, 0);
    assert_eq!(k.curr(0), Some(b));
    k.sync_curr(0, 500 * US);
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, 500 * US, false);
    k.finish_task_switch(0);
    assert!(k.tasks[b as usize].se.sched_delayed);
    assert_eq!(k.curr(0), Some(a));
    let now = 10 * MS;
    k.sync_curr(0, now);
    k.events.clear();
    (k, a, b, now)
}

#[test]
fn the_6_12_balancer_migrates_a_delayed_task_and_it_stays_delayed() {
    let (mut k, _a, b, now) = delayed_next_to_a_runner("6.12", &[]);
    k.run_idle_balance(1, now, 1);
    assert_eq!(lb_moves(&k), vec![(2, 0, 1, BalanceKind::NohzIdle, true)]);
    assert_eq!(k.tasks[b as usize].cpu, 1);
    assert!(k.tasks[b as usize].se.sched_delayed, "delayed on its new runqueue");
    assert!(!k.idle_cpu(1));
    k.check_invariants().unwrap();
    // CPU 1 picks it and completes the dequeue: it was a sleeper all along.
    k.schedule(1, now + 5 * US, true);
    assert!(k.idle_cpu(1) && !k.tasks[b as usize].se.on_rq);
    k.check_invariants().unwrap();
}

#[test]
fn the_mainline_balancer_leaves_delayed_tasks_alone() {
    let (mut k, _a, b, now) = delayed_next_to_a_runner("mainline", &[]);
    k.run_idle_balance(1, now, 1);
    assert!(lb_moves(&k).is_empty(), "{:?}", lb_moves(&k));
    assert_eq!(k.tasks[b as usize].cpu, 0);
}

#[test]
fn lb_first_migration_blocks_a_delayed_task_instead_of_moving_it() {
    let (mut k, _a, b, now) = delayed_next_to_a_runner("6.12", &["LB_FIRST_MIGRATION"]);
    k.run_idle_balance(1, now, 1);
    assert!(lb_moves(&k).is_empty());
    assert_eq!(k.tasks[b as usize].cpu, 0);
    assert!(!k.tasks[b as usize].se.on_rq, "blocked on its old CPU");
    k.check_invariants().unwrap();
}

#[test]
fn lb_first_migration_hands_the_first_task_to_the_idle_cpu_through_its_wakelist() {
    let mut k = kernel("qemu-4", "6.12", &["LB_FIRST_MIGRATION"]);
    let a = task(&mut k, 1, "0-1", 0);
    let b = task(&mut k, 2, "0-1", 0);
    start(&mut k, a, 0);
    start(&mut k, b, 0);
    let now = 10 * MS;
    k.sync_curr(0, now);
    k.events.clear();
    // The ILB (CPU 2) balances for idle CPU 1.
    k.run_idle_balance(1, now, 2);
    let moved = lb_moves(&k);
    assert_eq!(moved.len(), 1);
    let t = if moved[0].0 == 1 { a } else { b };
    assert!(k.rqs[1].ttwu_pending && k.rqs[1].wake_list == vec![t], "queued for CPU 1 to enqueue");
    assert!(!k.idle_cpu(1));
    k.check_invariants().unwrap();
    k.sched_ttwu_pending(1, now + 3 * US);
    assert!(k.tasks[t as usize].se.on_rq && k.tasks[t as usize].cpu == 1);
    k.check_invariants().unwrap();
}

#[test]
fn newidle_pulls_a_waiting_task_unless_avg_idle_is_short() {
    let setup = |avg_idle: u64, cost: u64| {
        let mut k = kernel("qemu-4", "6.12", &["NO_NI_RANDOM"]);
        let a = task(&mut k, 1, "0-1", 0);
        let b = task(&mut k, 2, "0-1", 0);
        let s = task(&mut k, 3, "1", 1);
        start(&mut k, a, 0);
        start(&mut k, b, 0);
        start(&mut k, s, 0);
        k.rqs[1].avg_idle = avg_idle;
        for st in k.sd_state[1].iter_mut() {
            st.max_newidle_lb_cost = cost;
        }
        let now = 200 * US;
        k.sync_curr(1, now);
        k.events.clear();
        k.set_current_state(1, TaskState::Interruptible);
        k.schedule(1, now, false);
        k.check_invariants().unwrap();
        (k, b)
    };
    let (k, b) = setup(1_000_000, 0);
    assert_eq!(lb_moves(&k), vec![(2, 0, 1, BalanceKind::Newidle, false)]);
    assert_eq!(k.curr(1), Some(b), "the pulled task runs instead of going idle");
    let (k, b) = setup(10 * US, 50 * US);
    assert!(lb_moves(&k).is_empty(), "expected idle time below the balance cost: give up");
    assert_eq!(k.curr(1), None);
    assert_eq!(k.tasks[b as usize].cpu, 0);
}

/// CPU 1's task blocks while CPU 0 holds two tasks: a movable one (when
/// `movable`) or one pinned there, so the root domain is overloaded and
/// the newidle balance runs; it pulls the movable one, or fails.
fn newidle_setup(features: &[&str], avg_idle: u64, max_cost: u64, movable: bool) -> TestKernel {
    let mut k = kernel("qemu-4", "6.12", features);
    let a = task(&mut k, 1, "0", 0);
    let b = task(&mut k, 2, if movable { "0-1" } else { "0" }, 0);
    let s = task(&mut k, 3, "1", 1);
    for t in [a, b, s] {
        start(&mut k, t, 0);
    }
    k.rqs[1].avg_idle = avg_idle;
    for st in k.sd_state[1].iter_mut() {
        st.max_newidle_lb_cost = max_cost;
    }
    k
}

fn block_cpu1(k: &mut TestKernel, now: u64) {
    k.sync_curr(1, now);
    k.events.clear();
    k.set_current_state(1, TaskState::Interruptible);
    k.schedule(1, now, false);
    k.check_invariants().unwrap();
}

#[test]
fn newidle_migration_cost_restores_the_gate_c5b0a7eefc_removed() {
    // 100 us of expected idle covers a balance that costs nothing, so a
    // stock kernel balances; with the old gate 100 us is below 500 us.
    for (features, pulls) in [(&["NO_NI_RANDOM"][..], true), (&["NO_NI_RANDOM", "NEWIDLE_MIGRATION_COST"][..], false)] {
        let mut k = newidle_setup(features, 100 * US, 0, true);
        block_cpu1(&mut k, 200 * US);
        assert_eq!(!lb_moves(&k).is_empty(), pulls, "{features:?}");
        assert_eq!(k.curr(1).is_some(), pulls, "{features:?}");
    }
    // 600 us passes the old gate too.
    let mut k = newidle_setup(&["NO_NI_RANDOM", "NEWIDLE_MIGRATION_COST"], 600 * US, 0, true);
    block_cpu1(&mut k, 200 * US);
    assert!(k.curr(1).is_some());
}

#[test]
fn newidle_cost_bump_grows_the_cost_of_failing_balances_up_to_the_sysctl() {
    // Nothing CPU 1 may pull: every balance fails. With the bump the
    // lowest domain's remembered cost grows by half at each failure, and
    // stops at sysctl_sched_migration_cost + 200 ns; without it, it stays.
    let costs = |features: &[&str]| {
        let mut k = newidle_setup(features, 10_000 * US, 10 * US, false);
        let mut seen = Vec::new();
        for i in 0..12u64 {
            // The balance found nothing to move and cleared the overload;
            // the test is about what a failure costs, so keep it set.
            // Likewise the idle time's average, which the short idles pull down.
            let rd = k.rqs[1].rd;
            k.rds[rd].overloaded = true;
            k.rqs[1].avg_idle = 10_000 * US;
            block_cpu1(&mut k, (200 + 100 * i) * US);
            seen.push(k.sd_state[1][0].max_newidle_lb_cost);
            assert!(lb_moves(&k).is_empty() && k.curr(1).is_none());
            // CPU 1's task wakes again for the next round.
            let s = k.tasks.iter().position(|t| t.pid == 3).unwrap() as crate::TaskId;
            let t = (200 + 100 * i) * US + 5 * US;
            k.try_to_wake_up(s, t, 0, 0);
            k.sched_ttwu_pending(1, t);
            k.schedule(1, t, false);
            assert_eq!(k.curr(1), Some(s));
        }
        seen
    };
    let bumped = costs(&["NO_NI_RANDOM", "NEWIDLE_COST_BUMP"]);
    assert_eq!(&bumped[..3], &[15 * US, 22_500, 33_750], "{bumped:?}");
    assert_eq!(*bumped.last().unwrap(), 500_200, "capped: {bumped:?}");
    assert!(costs(&["NO_NI_RANDOM"]).iter().all(|&c| c == 10 * US));
}

#[test]
fn a_balance_pass_decays_the_newidle_costs_once_a_second_and_sums_them() {
    // `update_newidle_cost(sd, 0)` from sched_balance_domains(): each
    // domain's max_newidle_lb_cost loses 3/256 when a second (HZ jiffies)
    // has passed since its last decay, and the CPU's max_idle_balance_cost
    // becomes their sum (at least the migration cost) when one decayed.
    let mut k = kernel("qemu-4", "6.12", &[]);
    let hz = k.hz();
    let jiffy = MS * 1000 / hz;
    let domains = k.sd_state[1].len() as u64;
    assert!(domains >= 1);
    for st in k.sd_state[1].iter_mut() {
        st.max_newidle_lb_cost = 1_000_000;
        st.last_decay_max_lb_cost = 0;
    }
    let costs = |k: &TestKernel| k.sd_state[1].iter().map(|st| st.max_newidle_lb_cost).collect::<Vec<_>>();
    // A second has not passed since jiffy 0 at jiffy hz: nothing decays.
    k.run_idle_balance(1, hz * jiffy, 2);
    assert_eq!(costs(&k), vec![1_000_000; domains as usize]);
    let before = k.rqs[1].max_idle_balance_cost;
    // At jiffy hz + 1 every domain decays once, stamped with the jiffy.
    k.run_idle_balance(1, (hz + 1) * jiffy, 2);
    assert_eq!(costs(&k), vec![1_000_000 * 253 / 256; domains as usize]);
    assert!(k.sd_state[1].iter().all(|st| st.last_decay_max_lb_cost == hz + 1));
    let sum = domains * (1_000_000 * 253 / 256);
    assert_eq!(k.rqs[1].max_idle_balance_cost, sum.max(500_000), "was {before}");
    // Within the next second, no further decay.
    k.run_idle_balance(1, (2 * hz + 1) * jiffy, 2);
    assert_eq!(costs(&k), vec![1_000_000 * 253 / 256; domains as usize]);
    // Past it, a second one.
    k.run_idle_balance(1, (2 * hz + 2) * jiffy, 2);
    assert_eq!(costs(&k), vec![1_000_000 * 253 / 256 * 253 / 256; domains as usize]);
}
