//! GRUB reclaiming on crafted states: the charge `grub_reclaim()` makes,
//! the active bandwidth leaving at the 0-lag time rather than at the
//! block, and a reclaiming task's runtime spent at u / max_bw per ns.

use super::common::{dl_task, TestKernel};
use crate::deadline::{grub_reclaim, to_ratio, DlParams, BW_RATIO, MAX_BW};
use crate::{TaskId, TaskState, TimerKind};
use schedlab_topology::Topology;

const MS: u64 = 1_000_000;

fn kernel() -> TestKernel {
    super::common::kernel_with(Topology::preset("qemu-4").unwrap(), "6.12", &[], 3)
}

fn res(runtime_ms: u64, period_ms: u64, reclaim: bool) -> DlParams {
    DlParams { runtime: runtime_ms * MS, deadline: period_ms * MS, period: period_ms * MS, reclaim }
}

fn settle(k: &mut TestKernel, now: u64) {
    for cpu in 0..k.rqs.len() {
        if k.need_resched(cpu, true) {
            k.schedule(cpu, now, true);
            k.finish_task_switch(cpu);
        }
    }
    k.check_invariants().unwrap();
}

fn start(k: &mut TestKernel, t: TaskId, now: u64) {
    k.wake_up_new_task(t, now, 0);
    settle(k, now);
}

fn block(k: &mut TestKernel, cpu: usize, now: u64, state: TaskState) {
    k.set_current_state(cpu, state);
    k.schedule(cpu, now, false);
    k.finish_task_switch(cpu);
    settle(k, now);
}

fn inactive_timers(k: &TestKernel, t: TaskId) -> Vec<u64> {
    k.timers.iter().filter(|r| r.what == TimerKind::DlInactive(t)).map(|r| r.at).collect()
}

#[test]
fn grub_reclaim_charges_by_the_bandwidth_nobody_else_is_using() {
    // init_dl_rq_bw_ratio() with sched_rt_runtime_us = 950000 of 1000000.
    assert_eq!(MAX_BW, 996_147, "0.95 << 20");
    assert_eq!(BW_RATIO, 269, "(1 / 0.95) << 8, rounded down");
    let u = to_ratio(10 * MS, 2 * MS);
    assert_eq!(u, 209_715);
    // Alone: this_bw = running_bw, extra_bw 0.8 > max_bw - u = 0.75, so
    // the charge is u / max_bw: (209715 * 269 >> 8) = 220364 per 2^20, so
    // 1 ms of running costs 210155 ns of runtime (2 ms last 9.52 ms).
    assert_eq!(grub_reclaim(MS, u, 262_143, 262_143, 838_860), 210_155);
    // 0.4 of the CPU's 0.8 is inactive and 0.1 is extra: the task pays for
    // max_bw - 0.4 - 0.1 = 0.45 (471860 + 1 rounding) over max_bw:
    // 495821 per 2^20, 472851 ns per ms.
    assert_eq!(grub_reclaim(MS, u, 838_860, 419_430, 104_857), 472_851);
    // Only 0.2 inactive: max_bw - 0.2 - 0.1 = 0.65, 716186 per 2^20.
    assert_eq!(grub_reclaim(MS, u, 838_860, 629_145, 104_857), 683_008);
}

#[test]
fn a_reclaiming_task_spends_its_runtime_at_its_bandwidth_over_max_bw() {
    // 3 ms every 10 ms, alone on a 4-CPU machine whose other bandwidth is
    // free: 1 ms of running costs 0.3 / 0.95 ms, so the runtime lasts
    // 9.52 ms of the period (its twin without the flag pays 1 ms per ms).
    let mut k = kernel();
    let r = dl_task(&mut k, 1, res(3, 10, true), "0-3", 0);
    let n = dl_task(&mut k, 2, res(3, 10, false), "0-3", 1);
    start(&mut k, r, 0);
    k.wake_up_new_task(n, 0, 1);
    settle(&mut k, 0);
    assert_eq!((k.curr(0), k.curr(1)), (Some(r), Some(n)));
    let (_, this, extra) = k.dl_rq_bw(0);
    // CPU 0: its server (52428) and the task (314572); the root domain's
    // four servers and two tasks leave max_bw - 52428 - 2 x 78643 per CPU.
    assert_eq!((this, extra), (52_428 + 314_572, MAX_BW - 52_428 - 2 * 78_643));
    k.sched_tick(0, MS);
    k.sched_tick(1, MS);
    let u = to_ratio(10 * MS, 3 * MS);
    let charged = (MS * ((u * BW_RATIO) >> 8)) >> 20;
    assert_eq!(charged, 315_233);
    assert_eq!(k.tasks[r as usize].dl.runtime, (3 * MS - charged) as i64);
    assert_eq!(k.tasks[n as usize].dl.runtime, 2 * MS as i64);
}

#[test]
fn a_blocked_task_stays_active_until_its_zero_lag_time() {
    let mut k = kernel();
    // Another task's SCHED_FLAG_RECLAIM is what makes the model arm
    // inactive timers.
    let _reader = dl_task(&mut k, 1, res(1, 100, true), "0-3", 3);
    let d = dl_task(&mut k, 2, res(2, 10, false), "0-3", 0);
    let bw = to_ratio(10 * MS, 2 * MS);
    start(&mut k, d, 0);
    assert_eq!(k.dl_rq_bw(0).0, bw, "queued: active");
    k.sched_tick(0, MS);
    block(&mut k, 0, MS, TaskState::Interruptible);
    // 1 ms of runtime left of 2 per 10, deadline 10 ms: the 0-lag time is
    // 10 - 1 x 10 / 2 = 5 ms. Until then the bandwidth stays active.
    assert_eq!(k.dl_rq_bw(0).0, bw, "blocked before its 0-lag time: still active");
    assert!(k.tasks[d as usize].dl.non_contending);
    assert_eq!(inactive_timers(&k, d), vec![5 * MS]);
    k.dl_inactive_timer(TimerKind::DlInactive(d), 0, 4 * MS);
    assert_eq!(k.dl_rq_bw(0).0, bw, "an event before the expiry does nothing");
    k.dl_inactive_timer(TimerKind::DlInactive(d), 0, 5 * MS);
    k.check_invariants().unwrap();
    assert_eq!(k.dl_rq_bw(0).0, 0, "the inactive timer takes it out at the 0-lag time");
    assert!(!k.tasks[d as usize].dl.non_contending);
    // Waking makes it active again (task_contending()).
    k.try_to_wake_up(d, 6 * MS, 0, 0);
    settle(&mut k, 6 * MS);
    assert_eq!(k.dl_rq_bw(0).0, bw);
    // Blocked and woken again before the 0-lag time: the timer is
    // cancelled and the bandwidth never left.
    k.sched_tick(0, 7 * MS);
    block(&mut k, 0, 7 * MS, TaskState::Interruptible);
    let zerolag = *inactive_timers(&k, d).last().unwrap();
    assert!(zerolag > 8 * MS, "{zerolag}");
    k.try_to_wake_up(d, 8 * MS, 0, 0);
    settle(&mut k, 8 * MS);
    assert_eq!(k.tasks[d as usize].dl.inactive_timer_at, None);
    k.dl_inactive_timer(TimerKind::DlInactive(d), 0, zerolag);
    assert_eq!(k.dl_rq_bw(0).0, bw, "the cancelled timer's event is stale");
}

#[test]
fn an_exiting_task_keeps_its_reservation_until_its_zero_lag_time() {
    let mut k = kernel();
    let _reader = dl_task(&mut k, 1, res(1, 100, true), "0-3", 3);
    let d = dl_task(&mut k, 2, res(2, 10, false), "0-3", 0);
    let bw = to_ratio(10 * MS, 2 * MS);
    start(&mut k, d, 0);
    let (total, extra) = (k.dl_bandwidth(0).total_bw, k.dl_rq_bw(0).2);
    k.sched_tick(0, MS);
    block(&mut k, 0, MS, TaskState::Dead);
    assert_eq!(k.dl_bandwidth(0).total_bw, total, "dead before its 0-lag time: still reserved");
    assert_eq!(inactive_timers(&k, d), vec![5 * MS]);
    k.dl_inactive_timer(TimerKind::DlInactive(d), 0, 5 * MS);
    k.check_invariants().unwrap();
    assert_eq!(k.dl_bandwidth(0).total_bw, total - bw, "released by the inactive timer");
    assert_eq!(k.dl_rq_bw(0), (0, 52_428, extra + bw / 4), "only the fair server is left on CPU 0");
}

#[test]
fn without_a_reclaiming_task_no_inactive_timer_is_armed() {
    let mut k = kernel();
    let d = dl_task(&mut k, 2, res(2, 10, false), "0-3", 0);
    start(&mut k, d, 0);
    k.sched_tick(0, MS);
    block(&mut k, 0, MS, TaskState::Interruptible);
    assert!(k.tasks[d as usize].dl.non_contending, "the bookkeeping runs all the same");
    assert!(inactive_timers(&k, d).is_empty(), "but no timer costs CPU time");
}

#[test]
fn a_wakeup_that_migrates_a_task_moves_its_bandwidth_at_once() {
    let mut k = kernel();
    let _reader = dl_task(&mut k, 1, res(1, 100, true), "0-3", 3);
    let d = dl_task(&mut k, 2, res(2, 10, false), "0-3", 0);
    let e = dl_task(&mut k, 3, res(5, 8, false), "0-3", 0);
    let (bw_d, bw_e, server) = (to_ratio(10 * MS, 2 * MS), to_ratio(8 * MS, 5 * MS), 52_428);
    start(&mut k, d, 0);
    k.sched_tick(0, MS);
    block(&mut k, 0, MS, TaskState::Interruptible);
    assert!(k.tasks[d as usize].dl.non_contending, "blocked with its 0-lag time at 5 ms");
    // e takes CPU 0 with deadline 9 ms; d, woken at 2 ms with deadline 10 ms,
    // would not run first there, so select_task_rq_dl() moves it to CPU 1.
    k.wake_up_new_task(e, MS, 0);
    settle(&mut k, MS);
    assert_eq!(k.curr(0), Some(e));
    k.try_to_wake_up(d, 2 * MS, 1, 0);
    settle(&mut k, 2 * MS);
    assert_eq!((k.tasks[d as usize].cpu, k.curr(1)), (1, Some(d)));
    // migrate_task_rq_dl() took d's bandwidth, active part included, off
    // CPU 0 before its 0-lag time; task_contending(ENQUEUE_MIGRATED) put
    // both on CPU 1.
    assert_eq!(k.dl_rq_bw(0).0, bw_e);
    assert_eq!(k.dl_rq_bw(0).1, server + bw_e);
    assert_eq!((k.dl_rq_bw(1).0, k.dl_rq_bw(1).1), (bw_d, server + bw_d));
    assert_eq!(k.tasks[d as usize].dl.inactive_timer_at, None, "its inactive timer is cancelled");
}
