//! Asymmetric CPU capacity: capacity-invariant PELT (`update_rq_clock_pelt()`,
//! `update_idle_rq_clock_pelt()`, pelt.h 6.12), `util_fits_cpu()` with
//! uclamp and `update_misfit_status()` (fair.c 6.12).

use super::common::{fair_task, kernel_with, start_fair, TestKernel};
use crate::fair::capacity::{util_fits_cpu, CpuCapacities};
use crate::pelt::clock::{cap_scale, rq_clock_pelt, update_idle_rq_clock_pelt, update_rq_clock_pelt};
use crate::pelt::{LOAD_AVG_MAX, SCHED_CAPACITY_SHIFT};
use crate::{TaskId, TaskState};
use schedlab_topology::Topology;

const MS: u64 = 1_000_000;

/// A machine of one LLC whose CPUs have the given capacities.
pub(super) fn asym_topology(caps: &[u32]) -> Topology {
    let mut text = format!("hz = 1000\npreempt = \"full\"\n[layout]\ncores_per_llc = {}\n[capacity]\n", caps.len());
    for (cpu, cap) in caps.iter().enumerate() {
        text.push_str(&format!("\"{cpu}\" = {cap}\n"));
    }
    Topology::from_toml_str("asym.toml", &text).unwrap()
}

pub(super) fn asym_kernel(caps: &[u32], settings: &[&str]) -> TestKernel {
    kernel_with(asym_topology(caps), "6.12", settings, 7)
}

#[test]
fn the_pelt_clock_runs_at_the_cpus_capacity_while_busy_and_syncs_when_idle() {
    assert_eq!(cap_scale(2 * MS, 512), MS);
    assert_eq!(cap_scale(3, 512), 1, "truncated, as the kernel's shift truncates");
    // Busy on a 512 CPU: 2 ms of task clock are 1 ms of PELT time.
    let mut clock_pelt = 10 * MS;
    update_rq_clock_pelt(&mut clock_pelt, 12 * MS, 2 * MS, false, 512, 1024);
    assert_eq!(clock_pelt, 11 * MS);
    // At capacity 1024 the PELT clock is the task clock.
    let mut c = 10 * MS;
    update_rq_clock_pelt(&mut c, 12 * MS, 2 * MS, false, 1024, 1024);
    assert_eq!(c, 12 * MS);
    // Idle: synced to the task clock, whatever the delta.
    update_rq_clock_pelt(&mut clock_pelt, 15 * MS, 3 * MS, true, 512, 1024);
    assert_eq!(clock_pelt, 15 * MS);
}

#[test]
fn going_idle_after_full_busyness_counts_the_lag_as_lost_idle_time() {
    let full = ((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX;
    // Not fully busy: the lag becomes idle time for the signals to decay over.
    let (mut clock_pelt, mut lost) = (11 * MS, 0);
    update_idle_rq_clock_pelt(&mut clock_pelt, &mut lost, 12 * MS, full as u32 - 1);
    assert_eq!((clock_pelt, lost), (12 * MS, 0));
    assert_eq!(rq_clock_pelt(clock_pelt, lost), 12 * MS);
    // Fully busy (util_sum at the bound): the lag is lost, rq_clock_pelt() stays put.
    let (mut clock_pelt, mut lost) = (11 * MS, 0);
    update_idle_rq_clock_pelt(&mut clock_pelt, &mut lost, 12 * MS, full as u32);
    assert_eq!((clock_pelt, lost), (12 * MS, MS));
    assert_eq!(rq_clock_pelt(clock_pelt, lost), 11 * MS);
}

/// Each `(task, cpu, run)` (pinned to its CPU, started at 0) runs for
/// `run` then sleeps until the next multiple of `period`, `n` times.
fn duty_cycles(k: &mut TestKernel, tasks: &[(TaskId, usize, u64)], period: u64, n: u64) {
    for i in 0..n {
        let start = i * period;
        for &(t, cpu, _) in tasks {
            if i > 0 {
                assert!(k.try_to_wake_up(t, start, cpu, 0));
                k.schedule(cpu, start, true);
            }
            assert_eq!(k.curr(cpu), Some(t));
        }
        let mut by_end: Vec<_> = tasks.to_vec();
        by_end.sort_by_key(|&(_, _, run)| run);
        for (_, cpu, run) in by_end {
            k.sync_curr(cpu, start + run);
            k.set_current_state(cpu, TaskState::Interruptible);
            k.schedule(cpu, start + run, false);
            assert_eq!(k.curr(cpu), None);
        }
    }
    k.check_invariants().unwrap();
}

#[test]
fn running_4_ms_on_a_512_cpu_accrues_what_2_ms_accrue_on_a_1024_cpu() {
    // CPU 0 has half the capacity of CPUs 1 and 2. Each task repeats a 16 ms
    // cycle: A runs 4 ms on CPU 0, B 2 ms on CPU 1, C 4 ms on CPU 2.
    let mut k = asym_kernel(&[512, 1024, 1024], &[]);
    let mut tasks = Vec::new();
    for (cpu, run) in [(0, 4 * MS), (1, 2 * MS), (2, 4 * MS)] {
        let t = fair_task(&mut k, 1 + cpu as i32, &cpu.to_string(), cpu);
        start_fair(&mut k, t, 0);
        tasks.push((t, cpu, run));
    }
    duty_cycles(&mut k, &tasks, 16 * MS, 40);
    let util = |t: TaskId| k.tasks[t as usize].se.avg.util_avg;
    let (a, b, c) = (util(tasks[0].0), util(tasks[1].0), util(tasks[2].0));
    // 4 ms at half capacity advance the PELT clock by 2 ms, and the idle
    // switch syncs it to the rq clock: A's signal is B's. (The sums differ in
    // the last digits: a newidle balance updates CPU 0's blocked averages
    // 2 ms after the block, CPU 1's at once, so the decay is cut in
    // different pieces and rounds differently.)
    assert_eq!(a, b);
    let sum = |t: TaskId| k.tasks[t as usize].se.avg.util_sum as u64;
    let (sa, sb) = (sum(tasks[0].0), sum(tasks[1].0));
    assert!(sa.abs_diff(sb) * 10_000 < sb, "util_sum {sa} vs {sb}");
    // And half of what the same duty cycle gives at full capacity (within
    // the decay between the end of the run and the update: C's run ended 2 ms
    // of PELT time later in the period).
    assert!((2 * a).abs_diff(c) * 100 < c * 5, "A {a} is not about half of C {c}");
    assert_eq!(k.rqs[0].lost_idle_time, 0, "a 25 % duty cycle leaves idle time");
}

#[test]
fn an_always_running_task_on_a_small_cpu_reaches_full_util_and_loses_the_idle_time() {
    let mut k = asym_kernel(&[512, 1024], &[]);
    let t = fair_task(&mut k, 1, "0", 0);
    start_fair(&mut k, t, 0);
    for ms in 1..=1000 {
        k.sched_tick(0, ms * MS);
    }
    let util = k.tasks[t as usize].se.avg.util_avg;
    assert!(util > 1000, "util {util}: a CPU-bound task's util passes its small CPU's capacity");
    // 1 s of busy time were 500 ms of PELT time, and the CPU never idled:
    // when it goes idle the 500 ms are lost, not idle time.
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, 1000 * MS, false);
    assert_eq!(k.rqs[0].lost_idle_time, 500 * MS);
    assert_eq!(k.rqs[0].clock_pelt, k.rqs[0].clock);
    k.check_invariants().unwrap();
}

// ---- util_fits_cpu() and uclamp (fair.c 6.12) ----

const LITTLE: CpuCapacities = CpuCapacities { capacity: 446, capacity_orig: 446, actual: 446 };
const BIG: CpuCapacities = CpuCapacities { capacity: 1024, capacity_orig: 1024, actual: 1024 };

#[test]
fn util_fits_cpu_keeps_20_percent_headroom_and_ignores_clamps_until_one_is_set() {
    // 300 · 1280 = 384000 < 446 · 1024 = 456704; 400 · 1280 = 512000 is not.
    assert_eq!(util_fits_cpu(300, 0, 1024, LITTLE, false), 1);
    assert_eq!(util_fits_cpu(400, 0, 1024, LITTLE, false), 0);
    // Before any task sets a clamp (the sched_uclamp_used key), clamps are not read.
    assert_eq!(util_fits_cpu(400, 0, 300, LITTLE, false), 0);
    assert_eq!(util_fits_cpu(100, 800, 1024, LITTLE, false), 1);
    // 818 · 1280 = 1047040 < 1048576; 819 · 1280 = 1048320 < 1048576; 820 is over.
    assert_eq!(util_fits_cpu(819, 0, 1024, BIG, false), 1);
    assert_eq!(util_fits_cpu(820, 0, 1024, BIG, false), 0);
}

#[test]
fn util_fits_cpu_with_uclamp_max_caps_and_uclamp_min_boosts() {
    // A task capped at or below the CPU's capacity fits it, whatever its util.
    assert_eq!(util_fits_cpu(400, 0, 446, LITTLE, true), 1);
    assert_eq!(util_fits_cpu(1000, 0, 300, LITTLE, true), 1);
    assert_eq!(util_fits_cpu(400, 0, 447, LITTLE, true), 0);
    // uclamp_max = 1024 on a 1024 CPU caps nothing: the util rule stands.
    assert_eq!(util_fits_cpu(900, 0, 1024, BIG, true), 0);
    // A boost beyond the CPU's capacity: the util fits, the boost does not (-1).
    assert_eq!(util_fits_cpu(100, 512, 1024, LITTLE, true), -1);
    assert_eq!(util_fits_cpu(100, 512, 1024, BIG, true), 1);
    // A boost at or below the util changes nothing.
    assert_eq!(util_fits_cpu(300, 200, 1024, LITTLE, true), 1);
    // The floor is taken at most the ceiling: min 800 with max 300 boosts to 300 only.
    assert_eq!(util_fits_cpu(100, 800, 300, LITTLE, true), 1);
    // A task that does not fit by util is 0, boost or not.
    assert_eq!(util_fits_cpu(400, 900, 1024, LITTLE, true), 0);
}

// ---- update_misfit_status() (fair.c 6.12) ----

/// A CPU-bound task allowed on `mask`, running on CPU 0 (capacity 512) of a
/// 2 little + 2 big machine for 400 ms of ticks.
fn hog_on_little(mask: &str, uclamp_max: Option<u32>) -> (TestKernel, TaskId) {
    let mut k = asym_kernel(&[512, 512, 1024, 1024], &[]);
    let t = fair_task(&mut k, 1, mask, 0);
    if let Some(max) = uclamp_max {
        k.sched_setattr_uclamp(t, None, Some(max));
    }
    start_fair(&mut k, t, 0);
    for ms in 1..=400 {
        k.sched_tick(0, ms * MS);
    }
    assert_eq!(k.curr(0), Some(t));
    (k, t)
}

#[test]
fn a_task_too_big_for_its_little_cpu_is_misfit_with_its_load() {
    let (k, t) = hog_on_little("0-3", None);
    let util = k.tasks[t as usize].se.avg.util_avg;
    assert!(util * 1280 >= 512 * 1024, "util {util} fits 512: the test needs a bigger task");
    assert_eq!(k.rqs[0].misfit_task_load, k.tasks[t as usize].se.avg.load_avg.max(1));
    assert!(k.rqs[0].misfit_task_load > 0);
}

#[test]
fn misfit_is_cleared_when_no_bigger_cpu_is_allowed_the_task_is_capped_or_the_cpu_idles() {
    // Allowed on the little CPUs only: CPU 0 is the biggest it may use.
    let (k, _) = hog_on_little("0-1", None);
    assert_eq!(k.rqs[0].misfit_task_load, 0);
    // Pinned to one CPU (nr_cpus_allowed == 1).
    let (k, _) = hog_on_little("0", None);
    assert_eq!(k.rqs[0].misfit_task_load, 0);
    // Capped at the little CPU's capacity: it fits there (uclamp_max).
    let (k, _) = hog_on_little("0-3", Some(512));
    assert_eq!(k.rqs[0].misfit_task_load, 0);
    // A misfit task that blocks: the newidle balance clears the CPU's state.
    let (mut k, _) = hog_on_little("0-3", None);
    assert!(k.rqs[0].misfit_task_load > 0);
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, 400 * MS, false);
    assert_eq!(k.curr(0), None);
    assert_eq!(k.rqs[0].misfit_task_load, 0);
}

#[test]
fn symmetric_machines_never_set_misfit() {
    let mut k = asym_kernel(&[1024, 1024], &[]);
    let t = fair_task(&mut k, 1, "0-1", 0);
    start_fair(&mut k, t, 0);
    for ms in 1..=100 {
        k.sched_tick(0, ms * MS);
    }
    assert!(!k.asym_cpucap_active);
    assert_eq!(k.rqs[0].misfit_task_load, 0);
}
