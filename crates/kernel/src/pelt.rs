//! Per-entity load tracking: the model's `kernel/sched/pelt.c`, `pelt.h`,
//! `sched-pelt.h`, plus the PELT bookkeeping helpers of `fair.c` that need no
//! task-group hierarchy.
//!
//! From pelt.c / pelt.h: `decay_load()`, `__accumulate_pelt_segments()`,
//! `accumulate_sum()`, `___update_load_sum()`, `___update_load_avg()`,
//! `get_pelt_divider()`, `__update_load_avg_blocked_se()`,
//! `__update_load_avg_se()`, `__update_load_avg_cfs_rq()`.
//!
//! From fair.c, in the submodules `load_avg` (the bookkeeping) and `readers`
//! (the signals as the scheduler reads them), re-exported here:
//! `enqueue_load_avg()`, `dequeue_load_avg()`,
//! `attach_entity_load_avg()`, `detach_entity_load_avg()`,
//! `remove_entity_load_avg()` (split: [`CfsRqRemoved::add`] records, the
//! function of that name here subtracts at the next update, as the "removed"
//! block of `update_cfs_rq_load_avg()` does), `update_cfs_rq_load_avg()`,
//! `update_load_avg()` (here
//! [`fair_update_load_avg`], because [`update_load_avg`] is pelt.c's
//! `___update_load_avg`), `sync_entity_load_avg()`, the PELT step of
//! `reweight_entity()`, `init_entity_runnable_average()`,
//! `post_init_entity_util_avg()` (fair and other-class branches), and the readers `cfs_rq_load_avg()`,
//! `cfs_rq_runnable_avg()`, `cpu_load()`, `cpu_load_without()`, `task_util()`,
//! `task_runnable()`, `cpu_util()`, `cpu_util_cfs()`, `cpu_util_cfs_boost()`,
//! `cpu_util_without()`.
//!
//! Time is in ns as everywhere in the model; like the kernel the signals work
//! in 1024 ns "µs" units and 1024-unit periods, with y^32 = 1/2. The integer
//! arithmetic, including the kernel's integer widths, is reproduced exactly:
//! `util_sum`/`period_contrib` are 32-bit and wrap, `max_t(u32, …)` lower
//! bounds truncate to 32 bits, `decay_load(x, 0)` is `x - 1` for `0 < x < 2^32`
//! (the kernel never decays by 0 periods), and so on. `unsigned long` is u64
//! (64-bit kernel). Weights are in `scale_load_down()` units (1024 at nice 0).
//!
//! Follows 6.12.x. Simplified:
//! - [`clock`] scales PELT time by `arch_scale_cpu_capacity()` and
//!   `arch_scale_freq_capacity()` as `update_rq_clock_pelt()` does (the
//!   latter 1024 on machines without cpufreq policies, [`crate::cpufreq`]).
//!   On a CPU of capacity 1024 at its top frequency `rq_clock_pelt()` is the
//!   task clock. Callers pass `cfs_rq_clock_pelt()` as `now`.
//! - No UTIL_EST (`util_est`, `cfs_se_util_change()`, the util_est terms of
//!   `cpu_util()`).
//! - The task-group half (`propagate_entity_load_avg()`,
//!   `add_tg_cfs_propagate()`, `update_tg_cfs_*()`, `update_tg_load_avg()`,
//!   `task_h_load()`) works on the kernel's cfs_rqs and lives with them in
//!   [`crate::fair::pelt`]; the functions here take plain values.
//! - The rt and dl signals are in [`other`]; no irq/hw-pressure signals
//!   (see there) and no `migrate_se_pelt_lag()` (the
//!   estimate of idle time an rq with a stale clock has not yet accounted when
//!   a task leaves it): a migrating task is synced to the old cfs_rq's
//!   `last_update_time` only.
//! - `cfs_rq->removed` is a plain value ([`CfsRqRemoved`]), no lock; the
//!   32-bit `last_update_time_copy` does not exist.

pub mod clock;
mod load_avg;
pub mod other;
mod readers;
#[cfg(test)]
mod tests;

pub use load_avg::{
    attach_entity_load_avg, dequeue_load_avg, detach_entity_load_avg, enqueue_load_avg, fair_update_load_avg,
    init_entity_runnable_average, post_init_entity_util_avg, post_init_entity_util_avg_not_fair,
    remove_entity_load_avg, reweight_entity_load_avg, sync_entity_load_avg, update_cfs_rq_load_avg, CfsRqRemoved,
    DO_ATTACH, DO_DETACH, SKIP_AGE_LOAD, UPDATE_TG,
};
pub use readers::{
    cfs_rq_load_avg, cfs_rq_runnable_avg, cpu_load, cpu_load_without, cpu_util, cpu_util_cfs, cpu_util_cfs_boost,
    cpu_util_without, task_runnable, task_util,
};

/// `LOAD_AVG_PERIOD`: the half-life of the signals, in periods.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX`: the largest value a per-unit `_sum` reaches (the fixed
/// point of `s = decay_load(s, 1) + 1024` with the integer decay).
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER`: the divider at the very start of a period.
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// `SCHED_CAPACITY_SHIFT`.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE`: capacity of the biggest CPU at max frequency.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;

/// `runnable_avg_yN_inv[]`: y^n as 32-bit fractions, n in 0..32, i.e.
/// ⌊(2^32 − 1) · y^n⌋ with y = 2^(−1/32).
pub const RUNNABLE_AVG_YN_INV: [u32; LOAD_AVG_PERIOD as usize] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9,
    0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373,
    0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// `struct sched_avg` without `util_est`.
///
/// For an entity, `last_update_time == 0` means "not attached to any cfs_rq"
/// (a new task, or one that `migrate_task_rq_fair()` has just moved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u32,
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

/// What `__update_load_avg_se()` reads about a task's entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeLoad {
    /// `se_weight(se)`, scale_load_down units.
    pub weight: u64,
    /// `se->on_rq` (true also while `sched_delayed`).
    pub on_rq: bool,
    /// `se_runnable(se)`: `on_rq && !sched_delayed`.
    pub runnable: bool,
    /// `cfs_rq->curr == se`.
    pub running: bool,
}

/// What `__update_load_avg_cfs_rq()` reads about a cfs_rq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsRqLoad {
    /// `scale_load_down(cfs_rq->load.weight)`: the summed weight of queued
    /// entities, delayed ones included.
    pub load_weight: u64,
    /// `h_nr_queued - h_nr_delayed`: queued tasks that are not delayed.
    pub h_nr_runnable: u64,
    /// `cfs_rq->curr != NULL` (still true while the running task is being
    /// dequeued to sleep, until `put_prev_entity()`).
    pub curr: bool,
}

/// `sub_positive()`/`lsub_positive()` on a 64-bit field: subtract, clamping at 0.
#[inline]
pub(crate) fn sub_positive(v: &mut u64, x: u64) {
    *v = v.saturating_sub(x);
}

/// `sub_positive()` on a 32-bit field: the subtrahend is first converted to
/// the field's type, as the kernel macro does.
#[inline]
fn sub_positive_u32(v: &mut u32, x: u64) {
    *v = v.saturating_sub(x as u32);
}

/// `max_t(u32, a, b)`: both operands truncated to 32 bits before comparing.
#[inline]
pub(crate) fn max_u32(a: u64, b: u64) -> u32 {
    (a as u32).max(b as u32)
}

/// `decay_load()`: `val · y^n` in fixed point. Whole half-lives are shifts,
/// the rest a multiplication by the table entry; anything older than 63
/// half-lives is 0.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut val = val;
    let mut local_n = n as u32;
    if local_n as u64 >= LOAD_AVG_PERIOD {
        val >>= local_n as u64 / LOAD_AVG_PERIOD;
        local_n %= LOAD_AVG_PERIOD as u32;
    }
    // mul_u64_u32_shr(val, inv, 32)
    ((val as u128 * RUNNABLE_AVG_YN_INV[local_n as usize] as u128) >> 32) as u64
}

/// `__accumulate_pelt_segments()`: the contribution of a span that crossed
/// `periods` period boundaries: the tail `d1` of the first period decayed by
/// `periods`, the full periods in between (as `LOAD_AVG_MAX` minus its decayed
/// value minus the undecayed first term), and the head `d3` of the current
/// period undecayed. 32-bit arithmetic as in the kernel.
pub fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(d1 as u64, periods) as u32;
    let c2 = (LOAD_AVG_MAX as u32).wrapping_sub(decay_load(LOAD_AVG_MAX, periods) as u32).wrapping_sub(1024);
    c1.wrapping_add(c2).wrapping_add(d3)
}

/// `accumulate_sum()`: `delta` (in 1024 ns units) more of history. If period
/// boundaries were crossed, the sums are decayed first and the new time is
/// split into segments (only computed when `load != 0`; with `load == 0` the
/// caller has already cleared `runnable` and `running`). The load sum grows by
/// `load · contrib`, the runnable sum by `runnable · contrib · 1024` and the
/// util sum by `contrib · 1024` while running. Returns the number of periods
/// crossed, truncated to 32 bits like the kernel's return type.
pub fn accumulate_sum(delta: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> u32 {
    let mut contrib = delta as u32; // no period crossed: delta < 1024
    let mut delta = delta.wrapping_add(sa.period_contrib as u64);
    let periods = delta / 1024;

    if periods != 0 {
        sa.load_sum = decay_load(sa.load_sum, periods);
        sa.runnable_sum = decay_load(sa.runnable_sum, periods);
        sa.util_sum = decay_load(sa.util_sum as u64, periods) as u32;

        delta %= 1024;
        if load != 0 {
            contrib = accumulate_pelt_segments(periods, 1024 - sa.period_contrib, delta as u32);
        }
    }
    sa.period_contrib = delta as u32;

    if load != 0 {
        sa.load_sum = sa.load_sum.wrapping_add(load.wrapping_mul(contrib as u64));
    }
    if runnable != 0 {
        sa.runnable_sum = sa.runnable_sum.wrapping_add(runnable.wrapping_mul(contrib as u64) << SCHED_CAPACITY_SHIFT);
    }
    if running {
        sa.util_sum = sa.util_sum.wrapping_add(contrib << SCHED_CAPACITY_SHIFT);
    }
    periods as u32
}

/// `___update_load_sum()`: bring the sums of `sa` up to `now` (ns), the span
/// since `last_update_time` having been spent with the given `load`,
/// `runnable` count and `running` state. Time going backwards resets
/// `last_update_time`; less than 1024 ns is left for later (only whole units
/// are consumed, so `last_update_time` stays a multiple of 1024 ns apart from
/// its origin). `running` and `runnable` are ignored when `load == 0`.
/// Returns true when a period boundary was crossed, i.e. the averages must be
/// recomputed with [`update_load_avg`].
pub fn update_load_sum(now: u64, sa: &mut SchedAvg, load: u64, runnable: u64, running: bool) -> bool {
    let delta = now.wrapping_sub(sa.last_update_time);
    if (delta as i64) < 0 {
        sa.last_update_time = now;
        return false;
    }
    let delta = delta >> 10;
    if delta == 0 {
        return false;
    }
    sa.last_update_time = sa.last_update_time.wrapping_add(delta << 10);

    let (runnable, running) = if load == 0 { (0, false) } else { (runnable, running) };
    accumulate_sum(delta, sa, load, runnable, running) != 0
}

/// `get_pelt_divider()`: the maximum a per-unit sum can hold at the current
/// position in the period, `LOAD_AVG_MAX - 1024 + period_contrib`.
pub fn get_pelt_divider(sa: &SchedAvg) -> u64 {
    PELT_MIN_DIVIDER + sa.period_contrib as u64
}

/// `___update_load_avg()`: averages from sums, dividing by the position-aware
/// divider so a fully busy signal does not dip within a period; `load_avg` is
/// scaled by `load` (the entity weight, or 1 for a cfs_rq whose sum already
/// carries the weights).
pub fn update_load_avg(sa: &mut SchedAvg, load: u64) {
    let divider = get_pelt_divider(sa);
    sa.load_avg = load.wrapping_mul(sa.load_sum) / divider;
    sa.runnable_avg = sa.runnable_sum / divider;
    sa.util_avg = (sa.util_sum / divider as u32) as u64;
}

/// `__update_load_avg_se()` (and, with `on_rq == false`,
/// `__update_load_avg_blocked_se()`) on plain values: the entity counted 1
/// in the load sum while queued (the weight multiplies in the average),
/// `runnable` while `se_runnable()`, `running` while it is `cfs_rq->curr`.
///
/// The caller must pass `runnable = false` for a `sched_delayed` entity: it
/// is still queued (`on_rq`, so it keeps its load) but no longer runnable.
/// Returns true when the averages were recomputed.
pub fn update_entity_avg(now: u64, sa: &mut SchedAvg, weight: u64, on_rq: bool, runnable: bool, running: bool) -> bool {
    update_entity_avg_runnable(now, sa, weight, on_rq, runnable as u64, running)
}

/// [`update_entity_avg`] with `se_runnable()` as a count: a group entity's
/// `runnable_weight` is its group cfs_rq's `h_nr_runnable`
/// (`se_update_runnable()`), a task's is 0 or 1.
pub fn update_entity_avg_runnable(
    now: u64,
    sa: &mut SchedAvg,
    weight: u64,
    on_rq: bool,
    runnable: u64,
    running: bool,
) -> bool {
    if update_load_sum(now, sa, on_rq as u64, runnable, running) {
        update_load_avg(sa, weight);
        true
    } else {
        false
    }
}

/// `__update_load_avg_blocked_se()`: age an entity that is not queued.
pub fn update_load_avg_blocked_se(now: u64, sa: &mut SchedAvg, weight: u64) -> bool {
    update_entity_avg(now, sa, weight, false, false, false)
}

/// `__update_load_avg_se()` with the entity state as an [`SeLoad`].
pub fn update_load_avg_se(now: u64, sa: &mut SchedAvg, se: SeLoad) -> bool {
    update_entity_avg(now, sa, se.weight, se.on_rq, se.runnable, se.running)
}

/// `__update_load_avg_cfs_rq()` on plain values: the cfs_rq's load is its
/// queued weight (`scale_load_down(cfs_rq->load.weight)`), its runnable count
/// the queued tasks that are not delayed, and it is running while it has a
/// `curr`. The averages use a factor of 1 (the weights are in the sum).
/// Returns true when the averages were recomputed.
pub fn update_cfs_rq_avg(
    now: u64,
    sa: &mut SchedAvg,
    load_weight: u64,
    h_nr_runnable: u64,
    curr_running: bool,
) -> bool {
    if update_load_sum(now, sa, load_weight, h_nr_runnable, curr_running) {
        update_load_avg(sa, 1);
        true
    } else {
        false
    }
}
