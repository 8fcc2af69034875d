//! The PELT clock of a runqueue: `update_rq_clock_pelt()`,
//! `update_idle_rq_clock_pelt()` and `rq_clock_pelt()` (pelt.h, 6.12), on
//! plain values; [`crate::core::Kernel::update_rq_clock`] and the switch to
//! the idle task call them through the `Kernel` wrappers in
//! [`crate::fair::pelt`].
//!
//! Capacity invariance: while a task runs, PELT time advances by
//! `arch_scale_cpu_capacity() / 1024` of real time, so a CPU of capacity 512
//! running a task for 2 ms accrues the utilisation a 1024 CPU accrues in
//! 1 ms. When the CPU goes idle the PELT clock jumps forward to the task
//! clock, and the gap becomes idle time the signals decay over — unless the
//! CPU was fully busy, when the gap is counted as lost idle time instead.
//!
//! Frequency invariance: the same time is further scaled by the CPU's
//! current frequency over its maximum (`arch_scale_freq_capacity()`, from
//! [`crate::cpufreq`]; 1024 on a machine without cpufreq policies).
//!
//! Simplified: `clock_task` is the rq clock
//! (no IRQ or steal time accounting), and the fully-busy test of
//! `update_idle_rq_clock_pelt()` sums the cfs util_sum only (the model keeps
//! no rt or dl PELT signals, whose sums the kernel adds).

use super::{LOAD_AVG_MAX, SCHED_CAPACITY_SHIFT};

/// `cap_scale(v, s)`: `v · s / 1024`, truncated.
pub fn cap_scale(v: u64, s: u64) -> u64 {
    v.wrapping_mul(s) >> SCHED_CAPACITY_SHIFT
}

/// `update_rq_clock_pelt()` (pelt.h, 6.12): `delta` ns of the task clock
/// have passed. On an idle CPU the PELT clock is synced to the task clock
/// (`_update_idle_rq_clock_pelt()`); otherwise it advances by `delta`
/// scaled by the CPU's capacity and (here always 1024) its frequency factor.
pub fn update_rq_clock_pelt(
    clock_pelt: &mut u64,
    clock_task: u64,
    delta: u64,
    idle: bool,
    cpu_capacity: u64,
    freq_scale: u64,
) {
    if idle {
        *clock_pelt = clock_task;
        return;
    }
    let delta = cap_scale(delta, cpu_capacity);
    let delta = cap_scale(delta, freq_scale);
    *clock_pelt += delta;
}

/// `update_idle_rq_clock_pelt()` (pelt.h, 6.12): the CPU is about to run its
/// idle task. If the utilisation sum shows a CPU that never idled (at or
/// above the upper bound of a full sum, ignoring the position in the
/// period, as the kernel does), the time `clock_pelt` lags the task clock is
/// not idle time it could have had: it is added to `lost_idle_time`. Either
/// way the PELT clock is then synced to the task clock. `util_sum` is the
/// cfs_rq's (see the module doc).
pub fn update_idle_rq_clock_pelt(clock_pelt: &mut u64, lost_idle_time: &mut u64, clock_task: u64, util_sum: u32) {
    let divider = (((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX) as u32;
    if util_sum >= divider {
        *lost_idle_time += clock_task - *clock_pelt;
    }
    *clock_pelt = clock_task;
}

/// `rq_clock_pelt()`: the PELT clock less the idle time lost to full busyness.
pub fn rq_clock_pelt(clock_pelt: u64, lost_idle_time: u64) -> u64 {
    clock_pelt - lost_idle_time
}
