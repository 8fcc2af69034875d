//! The energy model (energy_model.c/.h, drivers/opp/of.c, 6.12) and EAS
//! (fair.c, topology.c, 6.12) on the RK3399 preset: the EM's power and cost
//! of a few OPPs by hand, `find_energy_efficient_cpu()` on a worked
//! example, the overutilized flag, and when EAS is off.

use super::common::{fair_task, kernel_with, start_fair, TestKernel};
use crate::energy_model::{dev_pm_opp_calc_power, em_cpu_energy, em_pd_get_efficient_state};
use crate::fair::lb::CpuIdleType;
use crate::sched::wflags::WF_TTWU;
use crate::topology::perf_domains::{build_perf_domains, sched_is_eas_possible, EasImpossible};
use crate::TaskId;
use schedlab_topology::{CpufreqGovernor, Opp, Topology};
use schedlab_trace::BalanceKind;

fn rk3399() -> Topology {
    Topology::preset("rk3399").unwrap()
}

fn kernel(topo: Topology) -> TestKernel {
    kernel_with(topo, "6.12", &[], 7)
}

/// Give CPU `cpu`'s root cfs_rq the utilisation `u`, its sum too, so that
/// the next PELT update decays it rather than recomputing it from 0.
fn set_util(k: &mut TestKernel, cpu: usize, u: u64) {
    let avg = &mut k.rqs[cpu].cfs.avg;
    avg.util_avg = u;
    avg.util_sum = (u * crate::pelt::get_pelt_divider(avg)) as u32;
}

#[test]
fn rk3399_power_and_cost_of_a_few_opps_by_hand() {
    // dev_pm_opp_calc_power(): C · mV · mV · MHz / 10^6 µW.
    // A53 (C = 100) at 408 MHz, 825 mV: 100 · 825² · 408 / 10^6 =
    // 100 · 680625 · 408 / 10^6 = 27769.5 -> 27769 µW.
    let opp = |mhz: u64, uv: u32| Opp { freq_khz: mhz * 1000, microvolt: Some(uv) };
    assert_eq!(dev_pm_opp_calc_power(100, &opp(408, 825_000)), Ok(27_769));
    // A53 at 1416 MHz, 1125 mV: 100 · 1265625 · 1416 / 10^6 = 179212.5 -> 179212.
    assert_eq!(dev_pm_opp_calc_power(100, &opp(1416, 1_125_000)), Ok(179_212));
    // A72 (C = 436) at 1800 MHz, 1200 mV: 436 · 1440000 · 1800 / 10^6 = 1130112.
    assert_eq!(dev_pm_opp_calc_power(436, &opp(1800, 1_200_000)), Ok(1_130_112));

    let k = kernel(rk3399());
    let little = k.em[0].as_ref().unwrap();
    let big = k.em[1].as_ref().unwrap();
    // em_init_performance(): capacity · f / fmax. A53 at 408 MHz:
    // 381 · 408000 / 1416000 = 109.8 -> 109; at 600 MHz: 381 · 600 / 1416
    // = 161.4 -> 161 (power 100 · 680625 · 600 / 10^6 = 40837).
    // em_compute_costs(): cost = 10 · power / performance:
    // 408 MHz: 277690 / 109 = 2547; 600 MHz: 408370 / 161 = 2536. The
    // slower state costs more per unit of work (same voltage): inefficient.
    let (s0, s1) = (little.states[0], little.states[1]);
    assert_eq!((s0.performance, s0.power, s0.cost, s0.inefficient), (109, 27_769, 2547, true));
    assert_eq!((s1.performance, s1.power, s1.cost, s1.inefficient), (161, 40_837, 2536, false));
    // 1416 MHz: performance 381, cost 1792120 / 381 = 4703.
    assert_eq!((little.states[5].performance, little.states[5].cost), (381, 4703));
    assert!(little.skip_inefficiencies);
    // A72 at 1800 MHz: performance 1024, cost 11301120 / 1024 = 11036. At
    // 816 MHz (825 mV, as 408 and 600): power 436 · 680625 · 816 / 10^6 =
    // 242150, performance 1024 · 816 / 1800 = 464, cost 2421500 / 464 =
    // 5218; 600 MHz: 178051 µW, 341, 5221 >= 5218: inefficient; 408 MHz:
    // 121075, 232, 5218 >= 5218: inefficient too.
    assert_eq!((big.states[7].performance, big.states[7].cost), (1024, 11036));
    assert_eq!((big.states[2].performance, big.states[2].power, big.states[2].cost), (464, 242_150, 5218));
    assert_eq!(big.states.iter().map(|s| s.inefficient).collect::<Vec<_>>()[..3], [true, true, false]);
    // em_pd_get_efficient_state(): a max_util of 300 would take the 341
    // state, which is skipped as inefficient: the 464 one (index 2).
    assert_eq!(em_pd_get_efficient_state(&big.states, 300, true), 2);
    assert_eq!(em_pd_get_efficient_state(&big.states, 300, false), 1);
    assert_eq!(em_pd_get_efficient_state(&big.states, 2000, true), 7);
    // em_cpu_energy(): cost × summed util; nothing running costs nothing.
    assert_eq!(em_cpu_energy(big, 300, 400, 1024), 5218 * 400);
    assert_eq!(em_cpu_energy(big, 300, 0, 1024), 0);
}

/// Put the CFS utilisation `utils[cpu]` (util and runnable) on each CPU and
/// a sleeping task of util 100 whose last CPU was 4 (its blocked util is
/// part of CPU 4's). No task runs.
fn worked_example() -> (TestKernel, TaskId) {
    let mut k = kernel(rk3399());
    let p = fair_task(&mut k, 1, "0-5", 4);
    let utils = [200, 100, 300, 50, 400, 0];
    let t0 = 1_000_000_000;
    for (cpu, &u) in utils.iter().enumerate() {
        let avg = &mut k.rqs[cpu].cfs.avg;
        avg.util_avg = u;
        avg.runnable_avg = u;
        avg.last_update_time = t0;
    }
    let se = &mut k.tasks[p as usize].se.avg;
    se.util_avg = 100;
    se.runnable_avg = 100;
    se.last_update_time = t0;
    k.kernel.exec_cpu = 4;
    (k, p)
}

#[test]
fn find_energy_efficient_cpu_picks_the_lowest_energy_cpu_of_a_worked_example() {
    let (mut k, p) = worked_example();
    assert!(k.sched_energy_enabled());
    // CFS utils: A53s CPU 0-3: 200, 100, 300, 50; A72s CPU 4: 400 (with
    // p's 100), CPU 5: 0. p: util 100, prev_cpu 4. The list is [A72s,
    // A53s] (build_perf_domains() pushes at the head).
    //
    // A72 domain (capacity 1024): CPU 4 = prev: util with p 400, fits,
    // spare 624. CPU 5: 0 + 100 = 100, spare 924: the max-spare candidate.
    // Busy time without p: 300 + 0 = 300. Base energy: max util 300 → perf
    // 300 · 1.25 = 375 → state 464 (816 MHz, the 341 one is inefficient),
    // cost 5218: 5218 · 300 = 1565400.
    //   p on CPU 4: max util 400 · 1.25 = 500 → state 573 (1008 MHz), cost
    //   5872; busy 400: 2348800; delta 783400.
    //   p on CPU 5: max(375, 125) = 375 → cost 5218; busy 400: 2087200;
    //   delta 521800 (the best so far).
    // A53 domain (capacity 381): with p each CPU's util is 300, 200, 400,
    // 150; CPU 2 does not fit (400 · 1280 >= 381 · 1024); spares 81, 181,
    // -, 231: candidate CPU 3. Busy without p: 650. Base: max util 300 ·
    // 1.25 = 375 → state 381 (1416 MHz), cost 4703: 4703 · 650 = 3056950.
    //   p on CPU 3: max(375, 150 · 1.25) = 375 → cost 4703; busy 750:
    //   3527250; delta 470300 < 521800: the best.
    // Both fit (fits = 1) and 470300 < prev's 783400: CPU 3.
    assert_eq!(k.find_energy_efficient_cpu(p, 4), Some(3));
    // The same through select_task_rq_fair() on a wakeup.
    assert_eq!(k.select_task_rq_fair(p, 4, WF_TTWU), 3);
    // (Absolute energies would have chosen CPU 5, 2087200 < 3527250: the
    // deltas against each domain's base energy decide.)

    // Overutilized: the wakeup takes the ordinary path, which keeps the
    // task on its idle previous CPU.
    k.rds[0].overutilized = true;
    assert_eq!(k.select_task_rq_fair(p, 4, WF_TTWU), 4);
}

#[test]
fn find_energy_efficient_cpu_keeps_prev_when_no_other_cpu_saves_energy() {
    let (mut k, p) = worked_example();
    // Every A53 at 300: with p's 100 none fits (400 · 1280 >= 381 · 1024),
    // so the A53 domain has no candidate; CPU 5 at 300 too.
    for (cpu, u) in [(0, 300), (1, 300), (2, 300), (3, 300), (5, 300)] {
        k.rqs[cpu].cfs.avg.util_avg = u;
        k.rqs[cpu].cfs.avg.runnable_avg = u;
    }
    // A72s: CPU 4 util 400 with p, spare 624; CPU 5 300 + 100 = 400, spare
    // 624: not more than prev's, so not evaluated. Only prev: CPU 4.
    assert_eq!(k.find_energy_efficient_cpu(p, 4), Some(4));
}

#[test]
fn overutilized_is_set_by_the_tick_and_cleared_by_the_root_balance() {
    let mut k = kernel(rk3399());
    let t = fair_task(&mut k, 1, "0", 0);
    start_fair(&mut k, t, 0);
    assert!(!k.rds[0].overutilized);
    // util 300 on the A53 (capacity 381) fits: 300 · 1280 = 384000 <
    // 381 · 1024 = 390144.
    k.rqs[0].cfs.avg.util_avg = 300;
    assert!(!k.cpu_overutilized(0));
    k.sched_tick(0, 1_000_000);
    assert!(!k.rds[0].overutilized);
    // 305 does not (390400 >= 390144): the tick sets the flag.
    k.rqs[0].cfs.avg.util_avg = 305;
    assert!(k.cpu_overutilized(0));
    // On an A72 the same util fits.
    k.rqs[4].cfs.avg.util_avg = 305;
    assert!(!k.cpu_overutilized(4));
    k.rqs[4].cfs.avg.util_avg = 0;
    k.sched_tick(0, 2_000_000);
    assert!(k.rds[0].overutilized, "the tick on an overutilized CPU sets rd->overutilized");
    // A balance at the top domain (PKG, which spans every CPU) sees no CPU
    // overutilized any more and clears it.
    k.rqs[0].cfs.avg.util_avg = 100;
    // (CPU 4: the first idle CPU of its group, the one should_we_balance() lets balance.)
    let top = k.domains.cpus[4].domains.len() - 1;
    k.kernel.now = 3_000_000;
    k.kernel.exec_cpu = 4;
    k.sched_balance_rq(4, top, CpuIdleType::Idle, BalanceKind::Periodic, &mut true);
    assert!(!k.rds[0].overutilized, "the root balance clears it");
}

#[test]
fn eas_is_off_without_schedutil_with_smt_or_with_the_sysctl_off() {
    let k = kernel(rk3399());
    assert!(k.sched_energy_enabled());
    assert_eq!(k.rds[0].pd, vec![1, 0], "A72 domain first: build_perf_domains() pushes at the head");
    let span = k.rds[0].span;

    // A domain governed by performance: EAS impossible.
    let mut topo = rk3399();
    topo.perf_domains[1].governor = CpufreqGovernor::Performance;
    let k2 = kernel(topo.clone());
    assert!(!k2.sched_energy_enabled());
    assert!(k2.rds[0].pd.is_empty());
    assert_eq!(
        sched_is_eas_possible(&topo, &k2.domains, &span),
        Err(EasImpossible::NotSchedutil(4)),
        "the first CPU whose policy is not schedutil"
    );
    // Off, the overutilized flag is never set and always reads as set.
    let mut k2 = k2;
    k2.rqs[0].cfs.avg.util_avg = 380;
    assert!(!k2.cpu_overutilized(0));
    k2.check_update_overutilized_status(0);
    assert!(!k2.rds[0].overutilized && k2.is_rd_overutilized(0));

    // SMT: a big.LITTLE-like machine of 2-thread cores with EMs.
    let mut text = Topology::preset_text("rk3399").unwrap().to_string();
    for (id, core) in [(1, 0), (2, 1), (3, 1), (4, 2), (5, 2)] {
        text = text.replace(&format!("id = {id}\ncore = {id}\n"), &format!("id = {id}\ncore = {core}\n"));
    }
    let smt = Topology::from_toml_str("smt.toml", &text).unwrap();
    assert!(smt.has_smt());
    let k3 = kernel(smt.clone());
    assert!(!k3.sched_energy_enabled());
    assert_eq!(sched_is_eas_possible(&smt, &k3.domains, &span), Err(EasImpossible::Smt));

    // sysctl kernel.sched_energy_aware = 0.
    let mut off = rk3399();
    off.sched_energy_aware = false;
    let k4 = kernel(off.clone());
    assert!(!k4.sched_energy_enabled());
    assert_eq!(build_perf_domains(&off, &k4.domains, &k4.em, &span), Err(EasImpossible::SysctlOff));

    // A domain without a power coefficient has no EM: no EAS.
    let mut noem = rk3399();
    noem.perf_domains[0].dynamic_power_coefficient = None;
    let k5 = kernel(noem.clone());
    assert!(k5.em[0].is_none() && !k5.sched_energy_enabled());
    assert_eq!(build_perf_domains(&noem, &k5.domains, &k5.em, &span), Err(EasImpossible::NoEnergyModel(0)));

    // Symmetric capacities: nothing to gain.
    assert!(!kernel(Topology::preset("qemu-4").unwrap()).sched_energy_enabled());
}

#[test]
fn enqueue_sets_overutilized_except_for_a_new_tasks_first_enqueue() {
    // (NO_DELAY_DEQUEUE: a delayed task's wakeup requeues it in place,
    // ENQUEUE_DELAYED, which returns before the check, as in the kernel.)
    let mut k = kernel_with(rk3399(), "6.12", &["NO_DELAY_DEQUEUE"], 7);
    let a = fair_task(&mut k, 1, "2", 2);
    start_fair(&mut k, a, 0);
    // A new task's first enqueue on a CPU whose util does not fit (350 on
    // an A53): task_new, no check.
    set_util(&mut k, 2, 350);
    let t = fair_task(&mut k, 2, "2", 2);
    start_fair(&mut k, t, 0);
    assert!(k.cpu_overutilized(2));
    assert!(!k.rds[0].overutilized, "a new task's first enqueue is not counted");
    // `a` blocks and wakes on the same CPU: a wakeup's enqueue checks.
    k.set_current_state(2, crate::TaskState::Interruptible);
    k.schedule(2, 1_000_000, false);
    assert_eq!(k.curr(2), Some(t));
    set_util(&mut k, 2, 350);
    assert!(k.try_to_wake_up(a, 2_000_000, 2, 0));
    assert!(k.rds[0].overutilized, "the wakeup's enqueue sets it");
}

/// Two small tasks queued on A53 CPU 0, the other A53s idle; CPU 1
/// balances its MC domain (the A53 cluster). Returns the tasks moved.
fn two_on_cpu0(eas: bool) -> (TestKernel, u32) {
    let mut topo = rk3399();
    topo.sched_energy_aware = eas;
    let mut k = kernel(topo);
    let a = fair_task(&mut k, 1, "0-3", 0);
    let b = fair_task(&mut k, 2, "0-3", 0);
    start_fair(&mut k, a, 0);
    start_fair(&mut k, b, 0);
    assert_eq!(k.rqs[0].nr_running, 2);
    // A tick at 1 ms brings CPU 0's clock on, so the queued task is not
    // cache-hot (task_hot(): it has waited longer than 0.5 ms).
    k.sched_tick(0, 1_000_000);
    k.events.clear();
    k.kernel.exec_cpu = 1;
    let moved = k.sched_balance_rq(1, 0, CpuIdleType::Idle, BalanceKind::Periodic, &mut true);
    (k, moved)
}

#[test]
fn without_overutilization_the_balancer_leaves_eas_placement_alone() {
    // EAS off: CPU 0 runs one task and queues another, CPU 1 is idle: the
    // balance pulls one (both groups have spare capacity; the busiest runs
    // two tasks, the local one none).
    let (k, moved) = two_on_cpu0(false);
    assert_eq!((moved, k.rqs[0].nr_running, k.rqs[1].nr_running), (1, 1, 1));
    // EAS on, no CPU overutilized (CPU 0's util is 290 of 381, which fits:
    // the new tasks started at 190 and 95, half the spare capacity each):
    // sched_balance_find_src_group() declares the domain balanced.
    let (k, moved) = two_on_cpu0(true);
    assert!(k.sched_energy_enabled() && !k.rds[0].overutilized);
    assert_eq!((moved, k.rqs[0].nr_running), (0, 2));
}

#[test]
fn a_misfit_task_is_balanced_even_when_the_root_domain_is_not_overutilized() {
    // A small task boosted to uclamp_min 700 runs on A53 CPU 0: its util
    // fits, its boost does not (util_fits_cpu() = -1), so it is misfit
    // (task_fits_cpu() wants 1) while the CPU is not overutilized
    // (cpu_overutilized() wants 0). sched_balance_find_src_group() forces
    // the misfit balance before the EAS gate.
    let mut k = kernel(rk3399());
    let t = fair_task(&mut k, 1, "0-5", 0);
    start_fair(&mut k, t, 0);
    k.tasks[t as usize].uclamp_min = Some(700);
    k.kernel.uclamp_used = true;
    k.sched_tick(0, 1_000_000);
    assert!(k.rqs[0].misfit_task_load > 0);
    assert!(!k.cpu_overutilized(0) && !k.rds[0].overutilized);
    // CPU 4 (an idle A72, first of its group) balances the PKG domain: the
    // running misfit task can only go by the stopper's active balance.
    let top = k.domains.cpus[4].domains.len() - 1;
    k.kernel.exec_cpu = 4;
    k.sched_balance_rq(4, top, CpuIdleType::Idle, BalanceKind::Periodic, &mut true);
    assert!(k.rqs[0].active_balance && k.rqs[0].push_cpu == 4, "no active balance queued for the misfit task");
}

#[test]
fn the_invariants_check_the_eas_state() {
    let k = kernel(rk3399());
    k.check_invariants().unwrap();
    let mut broken = k.clone();
    broken.rds[0].pd = vec![1];
    assert!(broken.check_invariants().unwrap_err().to_string().contains("covering only 4-5"));
    let mut broken = k.clone();
    broken.kernel.sched_energy_present = false;
    assert!(broken.check_invariants().is_err());
    let mut off = kernel(Topology::preset("qemu-4").unwrap());
    off.check_invariants().unwrap();
    off.rds[0].overutilized = true;
    assert!(off.check_invariants().unwrap_err().to_string().contains("overutilized with EAS off"));
}

#[test]
fn a_cpuset_partition_gets_perf_domains_only_where_capacities_differ() {
    // Partition "0-1" (two A53s) is a root domain of its own: symmetric, no
    // EAS there. The rest (A53s 2-3, A72s 4-5) keeps both domains, the A53
    // one listed whole (as the kernel attaches the EM of its policy);
    // find_energy_efficient_cpu() skips CPUs 0-1, outside its sched domain.
    let profile = crate::Profile::by_name("6.12").unwrap();
    let mut k = TestKernel::new(crate::KernelConfig {
        features: profile.defaults,
        profile,
        topology: rk3399(),
        preempt: schedlab_topology::PreemptModel::Full,
        trace: true,
        seed: 7,
        partitions: vec![crate::Partition { cpus: schedlab_topology::parse_cpulist("0-1").unwrap(), isolated: false }],
    });
    k.check_invariants().unwrap();
    let (rest, part) = (k.rqs[2].rd, k.rqs[0].rd);
    assert_eq!(k.rds[rest].pd, vec![1, 0]);
    assert!(k.rds[part].pd.is_empty());
    assert!(k.sched_energy_enabled());
    // A small task last on A72 CPU 4, everything idle: the A53 with the
    // most spare capacity inside the root domain is CPU 2, not CPU 0.
    let p = fair_task(&mut k, 1, "0-5", 4);
    let t0 = 1_000_000_000;
    let se = &mut k.tasks[p as usize].se.avg;
    se.util_avg = 100;
    se.runnable_avg = 100;
    se.last_update_time = t0;
    k.rqs[4].cfs.avg.last_update_time = t0;
    k.rqs[4].cfs.avg.util_avg = 100;
    k.rqs[4].cfs.avg.runnable_avg = 100;
    k.kernel.exec_cpu = 4;
    assert_eq!(k.find_energy_efficient_cpu(p, 4), Some(2));
}
