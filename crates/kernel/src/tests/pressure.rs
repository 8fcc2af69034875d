//! Capacity pressure (6.12): the RT and DL PELT signals (`update_rt_rq_load_avg()`,
//! `update_dl_rq_load_avg()`), `scale_rt_capacity()` / `update_cpu_capacity()` /
//! `update_group_capacity()`, `check_cpu_capacity()` and what the balancer
//! does with a squeezed CPU (reduced-capacity misfit, the nohz kick, the
//! active balance), and schedutil's `effective_cpu_util()` adding RT time.

use super::common::{fair_task, settle, start_fair, task_with, TestKernel};
use crate::fair::capacity::{check_cpu_capacity, scale_rt_capacity};
use crate::{Policy, TaskId, TaskState};
use schedlab_topology::Topology;
use schedlab_trace::{BalanceKind, EventKind};

const MS: u64 = 1_000_000;

fn kernel(preset: &str) -> TestKernel {
    super::common::kernel_with(Topology::preset(preset).unwrap(), "6.12", &[], 5)
}

/// The utilisation a signal reaches after running `ms` from zero, by the
/// PELT series: 1024 · (1 − y^n) with y^32 = 1/2, n in 1024-µs periods.
fn pelt_rise(ms: u64) -> f64 {
    let periods = (ms * MS) as f64 / (1024.0 * 1024.0);
    1024.0 * (1.0 - 0.5f64.powf(periods / 32.0))
}

/// An RT task pinned to `cpu` runs from `start` to `end` and blocks.
fn rt_burst(k: &mut TestKernel, pid: i32, cpu: usize, start: u64, end: u64) -> TaskId {
    let r = task_with(k, pid, Policy::Fifo, 50, &cpu.to_string(), cpu);
    k.wake_up_new_task(r, start, cpu);
    settle(k, start);
    assert_eq!(k.curr(cpu), Some(r));
    k.sync_curr(cpu, end);
    k.set_current_state(cpu, TaskState::Interruptible);
    k.schedule(cpu, end, false);
    k.finish_task_switch(cpu);
    settle(k, end);
    r
}

#[test]
fn scale_rt_capacity_leaves_what_rt_and_dl_used_and_the_margin_is_the_domains_imbalance_pct() {
    assert_eq!(scale_rt_capacity(1024, 300), 724);
    assert_eq!(scale_rt_capacity(381, 100), 281);
    assert_eq!(scale_rt_capacity(1024, 1024), 1, "never 0");
    assert_eq!(scale_rt_capacity(381, 2000), 1);
    // 117 % (MC): reduced below 1024 · 100 / 117 = 875.2.
    assert!(check_cpu_capacity(875, 1024, 117));
    assert!(!check_cpu_capacity(876, 1024, 117));
    // 110 % (SMT): below 930.9.
    assert!(check_cpu_capacity(930, 1024, 110));
    assert!(!check_cpu_capacity(931, 1024, 110));
}

#[test]
fn avg_rt_follows_the_pelt_series_while_rt_runs_and_decays_after() {
    let mut k = kernel("qemu-4");
    rt_burst(&mut k, 1, 0, 0, 48 * MS);
    let rise = pelt_rise(48);
    let util = k.cpu_util_rt(0) as f64;
    assert!((util - rise).abs() < 12.0, "util_rt {util} after 48 ms of RT, the series gives {rise:.0}");
    assert_eq!(k.cpu_util_dl(0), 0);
    assert_eq!(k.cpu_util_rt(1), 0, "only the CPU that ran RT");
    // The fair signals did not see it, and no balance ran yet: capacity_of() is still the original.
    assert_eq!(k.rqs[0].cfs.avg.util_avg, 0);
    assert_eq!(k.rqs[0].cpu_capacity, 1024);
    // Idle: the blocked-load update (CPU 0's balance softirq) decays it by
    // the same series: 32 periods halve it.
    k.nohz_csd_func(0, 48 * MS + 32 * 1024 * 1024);
    let half = k.cpu_util_rt(0) as f64;
    assert!((half - util / 2.0).abs() < 12.0, "{util} decayed over 32 periods to {half}");
    assert!(k.rqs[0].has_blocked_load, "a decaying RT signal keeps the CPU's blocked load alive");
}

#[test]
fn the_balancer_sets_capacity_of_from_rt_time_and_sums_its_child_groups() {
    let mut k = kernel("smt-2x2");
    rt_burst(&mut k, 1, 0, 0, 40 * MS);
    let now = 41 * MS;
    k.run_idle_balance(0, now, 0);
    let util = k.cpu_util_rt(0);
    assert!(util > 400, "{util}");
    assert_eq!(k.rqs[0].cpu_capacity, 1024 - util, "scale_rt_capacity() at the SMT level");
    let d = &k.domains.cpus[0].domains;
    let (smt, mc) = (d[0].groups[0].id, d[1].groups[0].id);
    assert_eq!(k.sgc[smt].capacity, 1024 - util);
    // The MC group {0,1} sums its SMT children: CPU 0 squeezed, CPU 1 as at boot.
    assert_eq!((k.sgc[mc].capacity, k.sgc[mc].min_capacity, k.sgc[mc].max_capacity), (2048 - util, 1024 - util, 1024));
    // A newidle balance refreshes only from one balance interval on: the
    // SMT domain's 2 ms (its weight) at HZ=1000, the MC domain's 4 ms.
    assert_eq!(k.sgc[smt].next_update, k.jiffies() + 2);
    assert_eq!(k.sgc[mc].next_update, k.jiffies() + 4);
}

/// A fair task allowed on CPUs 0-3 of qemu-4 waits on CPU 0 behind an RT
/// task running `rt_ms`, then runs there alone; CPU 0 ticks every 4 ms up
/// to 120 ms with the interrupts it asks for delivered. Returns the kernel,
/// the task and the time of its balancer move, if any.
fn fair_task_after_rt(rt_ms: u64) -> (TestKernel, TaskId, Option<(u64, u32, BalanceKind)>) {
    let mut k = kernel("qemu-4");
    let f = fair_task(&mut k, 1, "0-3", 0);
    start_fair(&mut k, f, 0);
    rt_burst(&mut k, 2, 0, 0, rt_ms * MS);
    assert_eq!(k.curr(0), Some(f));
    k.events.clear();
    let mut moved = None;
    let mut now = rt_ms * MS;
    while now < 120 * MS && moved.is_none() {
        now += 4 * MS;
        if k.tasks[f as usize].cpu == 0 {
            k.sched_tick(0, now);
        }
        settle(&mut k, now);
        moved = k.events.iter().find_map(|e| match e.kind {
            EventKind::LbMigrate { pid: 1, dst_cpu, kind, .. } => Some((now, dst_cpu, kind)),
            _ => None,
        });
    }
    (k, f, moved)
}

#[test]
fn a_lone_fair_task_on_a_cpu_squeezed_by_rt_time_is_moved_to_an_idle_cpu_by_active_balance() {
    let (k, f, moved) = fair_task_after_rt(48);
    let (at, dst, kind) = moved.expect("the squeezed CPU kicks an idle balancer, which pushes the task away");
    assert_eq!(kind, BalanceKind::Active, "the task is running: only the stopper can move it");
    assert_ne!(dst, 0);
    assert_eq!(k.tasks[f as usize].cpu, dst as usize);
    // CPU 0's own busy balance (interval 4 ms x busy_factor 16, 15 jiffies at
    // HZ=250, first due at 60 ms) refreshes capacity_of(); the tick after
    // it kicks. Before that CPU 0 still has its boot capacity.
    assert!((64 * MS..=72 * MS).contains(&at), "moved at {} ms", at / MS);
    assert!(k.rqs[0].cpu_capacity * 117 < 1024 * 100, "capacity_of(0) = {}", k.rqs[0].cpu_capacity);
}

#[test]
fn a_little_rt_time_stays_within_the_margin_and_moves_nothing() {
    // 4 ms of RT: util_rt ~ 85, capacity ~ 939 > 875 at the first refresh.
    let (k, f, moved) = fair_task_after_rt(4);
    assert_eq!(moved, None);
    assert_eq!(k.tasks[f as usize].cpu, 0);
    assert!(k.rqs[0].cpu_capacity < 1024, "refreshed ({}), but not reduced", k.rqs[0].cpu_capacity);
}

#[test]
fn schedutil_counts_rt_time_in_the_cpus_utilisation() {
    let mut k = kernel("qemu-4");
    rt_burst(&mut k, 1, 0, 0, 20 * MS);
    let rt = k.cpu_util_rt(0);
    assert!(rt > 300, "{rt}");
    // effective_cpu_util(): CFS + RT (+ DL), capped at the CPU's capacity.
    assert_eq!(k.effective_cpu_util(0, 100).0, 100 + rt);
    assert_eq!(k.effective_cpu_util(0, 1000).0, 1024);
    assert_eq!(k.effective_cpu_util(1, 100).0, 100);
}

#[test]
fn deadline_time_counts_in_avg_dl_and_takes_capacity_like_rt_time() {
    let mut k = kernel("qemu-4");
    let dl = crate::deadline::DlParams { runtime: 30 * MS, deadline: 100 * MS, period: 100 * MS, reclaim: false };
    let d = super::common::dl_task(&mut k, 1, dl, "0", 0);
    k.wake_up_new_task(d, 0, 0);
    settle(&mut k, 0);
    assert_eq!(k.curr(0), Some(d));
    k.sync_curr(0, 20 * MS);
    k.set_current_state(0, TaskState::Interruptible);
    k.schedule(0, 20 * MS, false);
    k.finish_task_switch(0);
    settle(&mut k, 20 * MS);
    let util = k.cpu_util_dl(0);
    let rise = pelt_rise(20);
    assert!((util as f64 - rise).abs() < 12.0, "util_dl {util} after 20 ms of DL, the series gives {rise:.0}");
    assert_eq!(k.cpu_util_rt(0), 0);
    k.run_idle_balance(0, 21 * MS, 0);
    assert_eq!(k.rqs[0].cpu_capacity, 1024 - k.cpu_util_dl(0));
    // schedutil's view adds it too.
    assert_eq!(k.effective_cpu_util(0, 50).0, 50 + k.cpu_util_dl(0));
}
