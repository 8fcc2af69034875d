//! Per-entity load tracking: the model's `kernel/sched/pelt.c`, `pelt.h`,
//! `sched-pelt.h`, plus the PELT bookkeeping helpers of `fair.c` that need no
//! task-group hierarchy.
//!
//! From pelt.c / pelt.h: `decay_load()`, `__accumulate_pelt_segments()`,
//! `accumulate_sum()`, `___update_load_sum()`, `___update_load_avg()`,
//! `get_pelt_divider()`, `__update_load_avg_blocked_se()`,
//! `__update_load_avg_se()`, `__update_load_avg_cfs_rq()`.
//!
//! From fair.c: `enqueue_load_avg()`, `dequeue_load_avg()`,
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
//! Simplified:
//! - Frequency and capacity invariance factors are 1 (every CPU has capacity
//!   1024 and runs at its maximum frequency), so `update_rq_clock_pelt()`
//!   never scales time and never records lost idle time: `rq_clock_pelt()` ==
//!   `rq_clock_task()`. With no CFS bandwidth, `cfs_rq_clock_pelt()` is the
//!   same clock. Callers pass that clock as `now`.
//! - No UTIL_EST (`util_est`, `cfs_se_util_change()`, the util_est terms of
//!   `cpu_util()`).
//! - No group scheduling: no `propagate_entity_load_avg()`,
//!   `add_tg_cfs_propagate()`, `update_tg_load_avg()`, `update_cfs_group()`;
//!   every entity is a task, so `se_weight()` is the task's weight and
//!   `task_h_load()` is the task's `load_avg`. `UPDATE_TG` is accepted and
//!   has no effect.
//! - No rt/dl/irq/hw-pressure signals and no `migrate_se_pelt_lag()` (the
//!   estimate of idle time an rq with a stale clock has not yet accounted when
//!   a task leaves it): a migrating task is synced to the old cfs_rq's
//!   `last_update_time` only.
//! - `cfs_rq->removed` is a plain value ([`CfsRqRemoved`]), no lock; the
//!   32-bit `last_update_time_copy` does not exist.

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

/// `update_load_avg()` flag: also refresh the task group's load (no effect here).
pub const UPDATE_TG: u32 = 0x1;
/// `update_load_avg()` flag: do not age the entity's own signal first.
pub const SKIP_AGE_LOAD: u32 = 0x2;
/// `update_load_avg()` flag: attach the entity if it is not attached
/// (`last_update_time == 0`); passed by `enqueue_entity()`.
pub const DO_ATTACH: u32 = 0x4;
/// `update_load_avg()` flag: detach the entity; passed by `dequeue_entity()`
/// when the task is migrating (`TASK_ON_RQ_MIGRATING`).
pub const DO_DETACH: u32 = 0x8;

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

/// `cfs_rq->removed`: averages of entities that left the cfs_rq without a
/// detach under its lock (migration by wakeup, exit), subtracted at the next
/// [`update_cfs_rq_load_avg`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfsRqRemoved {
    pub nr: u32,
    pub load_avg: u64,
    pub util_avg: u64,
    pub runnable_avg: u64,
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
fn sub_positive(v: &mut u64, x: u64) {
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
fn max_u32(a: u64, b: u64) -> u32 {
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
    if update_load_sum(now, sa, on_rq as u64, runnable as u64, running) {
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

/// `enqueue_load_avg()`: add an entity's load to the cfs_rq's.
pub fn enqueue_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    cfs.load_avg = cfs.load_avg.wrapping_add(se.load_avg);
    cfs.load_sum = cfs.load_sum.wrapping_add(se_weight.wrapping_mul(se.load_sum));
}

/// `dequeue_load_avg()`: take an entity's load out of the cfs_rq's, clamping
/// at 0 and keeping `load_sum` at least `load_avg · PELT_MIN_DIVIDER` (a
/// 32-bit comparison, as the kernel's `max_t(u32, …)`).
pub fn dequeue_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    sub_positive(&mut cfs.load_avg, se.load_avg);
    sub_positive(&mut cfs.load_sum, se_weight.wrapping_mul(se.load_sum));
    cfs.load_sum = max_u32(cfs.load_sum, cfs.load_avg.wrapping_mul(PELT_MIN_DIVIDER)) as u64;
}

/// `attach_entity_load_avg()` without the group propagation: align the
/// entity on the cfs_rq's clock and period position, rebuild its sums from
/// its averages with the cfs_rq's divider (the load sum per unit weight, at
/// least 1), and add everything to the cfs_rq.
///
/// The cfs_rq must have been brought up to date just before (the kernel
/// relies on `cfs->last_update_time` being current).
pub fn attach_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, se_weight: u64) {
    let divider = get_pelt_divider(cfs);

    se.last_update_time = cfs.last_update_time;
    se.period_contrib = cfs.period_contrib;

    se.util_sum = se.util_avg.wrapping_mul(divider) as u32;
    se.runnable_sum = se.runnable_avg.wrapping_mul(divider);
    se.load_sum = se.load_avg.wrapping_mul(divider);
    se.load_sum = if se_weight < se.load_sum { se.load_sum / se_weight } else { 1 };

    enqueue_load_avg(cfs, se, se_weight);
    cfs.util_avg = cfs.util_avg.wrapping_add(se.util_avg);
    cfs.util_sum = cfs.util_sum.wrapping_add(se.util_sum);
    cfs.runnable_avg = cfs.runnable_avg.wrapping_add(se.runnable_avg);
    cfs.runnable_sum = cfs.runnable_sum.wrapping_add(se.runnable_sum);
}

/// `detach_entity_load_avg()` without the group propagation: subtract the
/// entity's load, util and runnable from the cfs_rq, each clamped at 0 and
/// each sum kept at least `avg · PELT_MIN_DIVIDER` (32-bit comparison). The
/// entity itself is untouched. Both must be up to date.
pub fn detach_entity_load_avg(cfs: &mut SchedAvg, se: &SchedAvg, se_weight: u64) {
    dequeue_load_avg(cfs, se, se_weight);

    sub_positive(&mut cfs.util_avg, se.util_avg);
    sub_positive_u32(&mut cfs.util_sum, se.util_sum as u64);
    cfs.util_sum = max_u32(cfs.util_sum as u64, cfs.util_avg.wrapping_mul(PELT_MIN_DIVIDER));

    sub_positive(&mut cfs.runnable_avg, se.runnable_avg);
    sub_positive(&mut cfs.runnable_sum, se.runnable_sum);
    cfs.runnable_sum = max_u32(cfs.runnable_sum, cfs.runnable_avg.wrapping_mul(PELT_MIN_DIVIDER)) as u64;
}

/// `sync_entity_load_avg()`: age a dequeued entity up to its cfs_rq's
/// `last_update_time` (pass `cfs.last_update_time`), without touching the cfs_rq.
pub fn sync_entity_load_avg(se: &mut SchedAvg, se_weight: u64, cfs_last_update_time: u64) -> bool {
    update_load_avg_blocked_se(cfs_last_update_time, se, se_weight)
}

impl CfsRqRemoved {
    /// The recording half of the kernel's `remove_entity_load_avg()`: add the
    /// entity's averages to `cfs_rq->removed`. They stay in the cfs_rq's
    /// averages until its next update subtracts them with
    /// [`remove_entity_load_avg`] (the kernel defers this because the caller
    /// may not hold that rq's lock).
    ///
    /// The caller must first [`sync_entity_load_avg`] the entity against the
    /// cfs_rq it leaves, as the kernel does at the start of the function.
    pub fn add(&mut self, se: &SchedAvg) {
        self.nr += 1;
        self.util_avg = self.util_avg.wrapping_add(se.util_avg);
        self.load_avg = self.load_avg.wrapping_add(se.load_avg);
        self.runnable_avg = self.runnable_avg.wrapping_add(se.runnable_avg);
    }
}

/// The subtraction that completes `remove_entity_load_avg()`, i.e. the
/// "removed" block at the top of `update_cfs_rq_load_avg()`: take the removed
/// averages out of a cfs_rq, and `avg · divider` (the divider as it stands
/// before the cfs_rq's own update) out of each sum, all clamped at 0, each sum
/// then kept at least `avg · PELT_MIN_DIVIDER` (32-bit comparison).
///
/// Lazy as in the kernel: leaving a cfs_rq only records the amounts
/// ([`CfsRqRemoved::add`]); call this at that cfs_rq's next update, before
/// [`update_cfs_rq_avg`] ([`update_cfs_rq_load_avg`] does both), and count it
/// as "decayed".
pub fn remove_entity_load_avg(cfs: &mut SchedAvg, removed_load: u64, removed_util: u64, removed_runnable: u64) {
    let divider = get_pelt_divider(cfs);

    sub_positive(&mut cfs.load_avg, removed_load);
    sub_positive(&mut cfs.load_sum, removed_load.wrapping_mul(divider));
    cfs.load_sum = max_u32(cfs.load_sum, cfs.load_avg.wrapping_mul(PELT_MIN_DIVIDER)) as u64;

    sub_positive(&mut cfs.util_avg, removed_util);
    sub_positive_u32(&mut cfs.util_sum, removed_util.wrapping_mul(divider));
    cfs.util_sum = max_u32(cfs.util_sum as u64, cfs.util_avg.wrapping_mul(PELT_MIN_DIVIDER));

    sub_positive(&mut cfs.runnable_avg, removed_runnable);
    sub_positive(&mut cfs.runnable_sum, removed_runnable.wrapping_mul(divider));
    cfs.runnable_sum = max_u32(cfs.runnable_sum, cfs.runnable_avg.wrapping_mul(PELT_MIN_DIVIDER)) as u64;
}

/// `update_cfs_rq_load_avg()`: apply and clear pending removals, then age the
/// cfs_rq's own signal. Returns true if anything was removed or the averages
/// were recomputed ("decayed").
pub fn update_cfs_rq_load_avg(now: u64, cfs: &mut SchedAvg, removed: &mut CfsRqRemoved, cfs_rq: CfsRqLoad) -> bool {
    let mut decayed = false;
    if removed.nr != 0 {
        let r = std::mem::take(removed);
        remove_entity_load_avg(cfs, r.load_avg, r.util_avg, r.runnable_avg);
        decayed = true;
    }
    decayed |= update_cfs_rq_avg(now, cfs, cfs_rq.load_weight, cfs_rq.h_nr_runnable, cfs_rq.curr);
    decayed
}

/// fair.c's `update_load_avg(cfs_rq, se, flags)` for a task entity: age the
/// entity (if attached and not `SKIP_AGE_LOAD`), update the cfs_rq (with
/// pending removals), then attach (`DO_ATTACH` and not attached, i.e.
/// `last_update_time == 0`) or detach (`DO_DETACH`). Returns true when the
/// cfs_rq's averages changed (where the kernel calls `cfs_rq_util_change()`).
///
/// `se_state` and `cfs_state` describe the span since the last update, i.e.
/// the state *before* the event that triggers the call (the kernel calls this
/// before changing `on_rq`, `cfs_rq->load`, `h_nr_*` or `curr`).
pub fn fair_update_load_avg(
    now: u64,
    cfs: &mut SchedAvg,
    removed: &mut CfsRqRemoved,
    cfs_state: CfsRqLoad,
    se: &mut SchedAvg,
    se_state: SeLoad,
    flags: u32,
) -> bool {
    if se.last_update_time != 0 && flags & SKIP_AGE_LOAD == 0 {
        update_load_avg_se(now, se, se_state);
    }
    let decayed = update_cfs_rq_load_avg(now, cfs, removed, cfs_state);

    if se.last_update_time == 0 && flags & DO_ATTACH != 0 {
        attach_entity_load_avg(cfs, se, se_state.weight);
        true
    } else if flags & DO_DETACH != 0 {
        detach_entity_load_avg(cfs, se, se_state.weight);
        true
    } else {
        decayed
    }
}

/// The PELT step of `reweight_entity()`: take the entity's load out of the
/// cfs_rq with the old weight, recompute its `load_avg` from its `load_sum`
/// with the new weight, and put it back.
pub fn reweight_entity_load_avg(cfs: &mut SchedAvg, se: &mut SchedAvg, old_weight: u64, new_weight: u64) {
    dequeue_load_avg(cfs, se, old_weight);
    se.load_avg = new_weight.wrapping_mul(se.load_sum) / get_pelt_divider(se);
    enqueue_load_avg(cfs, se, new_weight);
}

/// `init_entity_runnable_average()` for a task (every entity in the model is
/// one): clear the averages and start with the full weight as `load_avg`, so a
/// new task looks heavy until its signal settles. Sums, util and runnable
/// start at 0 and `last_update_time` at 0 (not attached). The kernel does this
/// at fork for every task, whatever its class.
pub fn init_entity_runnable_average(se: &mut SchedAvg, weight: u64) {
    *se = SchedAvg { load_avg: weight, ..SchedAvg::default() };
}

/// `post_init_entity_util_avg()` for a task of the fair class, at
/// `wake_up_new_task()`: the task starts with the cfs_rq's util per unit of
/// load times its weight, capped at half the capacity the cfs_rq leaves
/// unused (`(cpu_capacity − cfs util) / 2`, signed); with no util on the
/// cfs_rq it gets the whole cap, with no spare capacity it keeps 0.
/// `runnable_avg` copies `util_avg`. `last_update_time` stays 0, so the first
/// enqueue attaches the task (`DO_ATTACH`).
///
/// For a task of another class the kernel does none of this: see
/// [`post_init_entity_util_avg_not_fair`].
pub fn post_init_entity_util_avg(se: &mut SchedAvg, cfs: &SchedAvg, se_weight: u64, cpu_capacity: u64) {
    let cap = (cpu_capacity as i64).wrapping_sub(cfs.util_avg as i64) / 2;

    if cap > 0 {
        if cfs.util_avg != 0 {
            se.util_avg = cfs.util_avg.wrapping_mul(se_weight) / (cfs.load_avg + 1);
            if se.util_avg > cap as u64 {
                se.util_avg = cap as u64;
            }
        } else {
            se.util_avg = cap as u64;
        }
    }
    se.runnable_avg = se.util_avg;
}

/// The `p->sched_class != &fair_sched_class` branch of
/// `post_init_entity_util_avg()`: the averages stay as initialised and only
/// `last_update_time` is set to the cfs_rq's PELT clock `now`, as if the task
/// had been attached and then switched away; a later switch to fair then
/// attaches it from that point.
pub fn post_init_entity_util_avg_not_fair(se: &mut SchedAvg, now: u64) {
    se.last_update_time = now;
}

/// `cfs_rq_load_avg()`.
pub fn cfs_rq_load_avg(cfs: &SchedAvg) -> u64 {
    cfs.load_avg
}

/// `cfs_rq_runnable_avg()`.
pub fn cfs_rq_runnable_avg(cfs: &SchedAvg) -> u64 {
    cfs.runnable_avg
}

/// `cpu_load(rq)`: the root cfs_rq's `load_avg`.
pub fn cpu_load(root_cfs: &SchedAvg) -> u64 {
    cfs_rq_load_avg(root_cfs)
}

/// `cpu_load_without(rq, p)`: the CPU's load minus the task's
/// (`task_h_load()` = its `load_avg` without groups) when the task counts on
/// this CPU. Pass `p = Some(avg)` only if `task_cpu(p)` is this CPU; a task
/// not attached (`last_update_time == 0`) counts nothing. 32-bit like the
/// kernel's local.
pub fn cpu_load_without(root_cfs: &SchedAvg, p: Option<&SchedAvg>) -> u64 {
    match p {
        Some(p) if p.last_update_time != 0 => {
            let load = root_cfs.load_avg as u32;
            (load - load.min(p.load_avg as u32)) as u64
        }
        _ => cpu_load(root_cfs),
    }
}

/// `task_util(p)`.
pub fn task_util(se: &SchedAvg) -> u64 {
    se.util_avg
}

/// `task_runnable(p)`.
pub fn task_runnable(se: &SchedAvg) -> u64 {
    se.runnable_avg
}

/// `cpu_util(cpu, p, dst_cpu, boost)` without UTIL_EST: the root cfs_rq's
/// util, plus the task's if it moves here from elsewhere (`task_cpu != cpu`,
/// `dst_cpu == cpu`), minus it (clamped) if it leaves (`task_cpu == cpu`,
/// `dst_cpu != cpu`, `None` being the kernel's −1); with `boost`, the max of
/// that and the same computation on runnable. Capped at `cpu_capacity`.
///
/// `p` is the task's average and `task_cpu(p)`.
pub fn cpu_util(
    root_cfs: &SchedAvg,
    cpu: usize,
    p: Option<(&SchedAvg, usize)>,
    dst_cpu: Option<usize>,
    boost: bool,
    cpu_capacity: u64,
) -> u64 {
    let add_task = matches!(p, Some((_, tcpu)) if tcpu != cpu && dst_cpu == Some(cpu));
    let sub_task = matches!(p, Some((_, tcpu)) if tcpu == cpu && dst_cpu != Some(cpu));
    let mut util = root_cfs.util_avg;

    if let Some((se, _)) = p {
        if add_task {
            util = util.wrapping_add(task_util(se));
        } else if sub_task {
            sub_positive(&mut util, task_util(se));
        }
    }

    if boost {
        let mut runnable = root_cfs.runnable_avg;
        if let Some((se, _)) = p {
            if add_task {
                runnable = runnable.wrapping_add(se.runnable_avg);
            } else if sub_task {
                sub_positive(&mut runnable, se.runnable_avg);
            }
        }
        util = util.max(runnable);
    }

    util.min(cpu_capacity)
}

/// `cpu_util_cfs(cpu)`: the root cfs_rq's util, capped at the capacity.
pub fn cpu_util_cfs(root_cfs: &SchedAvg, cpu_capacity: u64) -> u64 {
    cpu_util(root_cfs, 0, None, None, false, cpu_capacity)
}

/// `cpu_util_cfs_boost(cpu)`: max(util, runnable), capped at the capacity.
pub fn cpu_util_cfs_boost(root_cfs: &SchedAvg, cpu_capacity: u64) -> u64 {
    cpu_util(root_cfs, 0, None, None, true, cpu_capacity)
}

/// `cpu_util_without(cpu, p)`: the CPU's util without the task's contribution,
/// which only counts if the task's CPU is this one and it is attached.
pub fn cpu_util_without(root_cfs: &SchedAvg, cpu: usize, p: (&SchedAvg, usize), cpu_capacity: u64) -> u64 {
    let p = if p.1 != cpu || p.0.last_update_time == 0 { None } else { Some(p) };
    cpu_util(root_cfs, cpu, p, None, false, cpu_capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const US: u64 = 1024; // one PELT time unit in ns
    const PERIOD_NS: u64 = 1024 * US;
    const MS: u64 = 1_000_000;

    /// y^n as 2^32 fixed point, computed independently with f64.
    fn y_pow_fixed(n: u32) -> f64 {
        (u32::MAX as f64) * 0.5f64.powf(n as f64 / 32.0)
    }

    #[test]
    fn table_matches_y_pow_n() {
        for n in 0..32u32 {
            let want = y_pow_fixed(n).floor();
            let got = RUNNABLE_AVG_YN_INV[n as usize] as f64;
            assert!((got - want).abs() <= 1.0, "n={n}: table {got} vs 2^32·y^n {want}");
            let exact = 4294967296.0 * 0.5f64.powf(n as f64 / 32.0);
            assert!((got - exact).abs() < 2.0, "n={n}");
        }
        // y^16 = 1/sqrt(2)
        assert_eq!(RUNNABLE_AVG_YN_INV[16] as f64, ((u32::MAX as f64) / 2f64.sqrt()).floor());
    }

    #[test]
    fn load_avg_max_is_the_integer_fixed_point() {
        // Independent: iterate s = ⌊s·y⌋ + 1024 with y from f64, in u128.
        let y1 = y_pow_fixed(1).floor() as u128;
        let mut s: u128 = 0;
        loop {
            let next = ((s * y1) >> 32) + 1024;
            if next == s {
                break;
            }
            s = next;
        }
        assert_eq!(s as u64, LOAD_AVG_MAX);
        // And it sits just below the real series sum 1024/(1-y).
        let real = 1024.0 / (1.0 - 0.5f64.powf(1.0 / 32.0));
        assert!(real - (LOAD_AVG_MAX as f64) < 64.0 && real > LOAD_AVG_MAX as f64);
        assert_eq!(PELT_MIN_DIVIDER, 46718);
    }

    #[test]
    fn decay_load_halves_every_period() {
        // 47742 >> 1 = 23871, then · (2^32−1) >> 32 loses one.
        assert_eq!(decay_load(LOAD_AVG_MAX, 32), 23870);
        assert!((decay_load(LOAD_AVG_MAX, 32) as i64 - (LOAD_AVG_MAX / 2) as i64).abs() <= 1);
        assert_eq!(decay_load(LOAD_AVG_MAX * 1024, 64), (LOAD_AVG_MAX * 1024 / 4) - 1);
        // 0 periods: the 0xffffffff entry, so x − 1 for 0 < x < 2^32 (kernel behaviour).
        assert_eq!(decay_load(1024, 0), 1023);
        assert_eq!(decay_load(0, 0), 0);
        assert_eq!(decay_load(1 << 40, 0), (1 << 40) - (1 << 8));
        // Past 63 half-lives everything is gone, even u64::MAX.
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 63 + 1), 0);
        assert_eq!(decay_load(u64::MAX, u64::MAX), 0);
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 64), 0);
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 64 + 31), 0);
        // At 63 half-lives u64::MAX >> 63 = 1, then ·y^0 → 0.
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 63), 0);
        // At 62: 3, times y^0 → 2.
        assert_eq!(decay_load(u64::MAX, LOAD_AVG_PERIOD * 62), 2);
        // One period: ⌊1024·y⌋ with the independent y.
        assert_eq!(decay_load(1024, 1), ((1024u128 * y_pow_fixed(1).floor() as u128) >> 32) as u64);
        assert_eq!(decay_load(1024, 1), 1002);
    }

    #[test]
    fn segments_of_whole_periods() {
        // One full period from a period boundary: d1 = 1024 decayed once, c2 = 0.
        assert_eq!(accumulate_pelt_segments(1, 1024, 0), 1002);
        // Many periods approach LOAD_AVG_MAX.
        let c = accumulate_pelt_segments(2000, 1024, 0);
        assert!(c as u64 <= LOAD_AVG_MAX && c as u64 >= LOAD_AVG_MAX - 1024 - 2, "{c}");
    }

    #[test]
    fn small_deltas_accumulate_without_decay() {
        let mut sa = SchedAvg::default();
        // 500 ns is below one unit: nothing happens.
        assert!(!update_entity_avg(500, &mut sa, 1024, true, true, true));
        assert_eq!(sa, SchedAvg::default());
        // 100 units inside the first period: sums grow linearly, avg untouched.
        assert!(!update_entity_avg(100 * US + 500, &mut sa, 1024, true, true, true));
        assert_eq!(sa.last_update_time, 100 * US);
        assert_eq!(sa.period_contrib, 100);
        assert_eq!(sa.load_sum, 100);
        assert_eq!(sa.runnable_sum, 100 << 10);
        assert_eq!(sa.util_sum, 100 << 10);
        assert_eq!(sa.util_avg, 0);
        // Time going backwards only resets the stamp.
        let before = sa;
        assert!(!update_entity_avg(50 * US, &mut sa, 1024, true, true, true));
        assert_eq!(sa, SchedAvg { last_update_time: 50 * US, ..before });
    }

    #[test]
    fn load_zero_clears_runnable_and_running() {
        let mut a = SchedAvg::default();
        update_load_sum(10 * PERIOD_NS, &mut a, 0, 5, true);
        assert_eq!((a.load_sum, a.runnable_sum, a.util_sum), (0, 0, 0));
    }

    /// Running one full period from a fresh average, then idle for 32 periods.
    #[test]
    fn one_period_then_half_life_by_hand() {
        let y1 = y_pow_fixed(1).floor() as u128; // 0xfa83b2da
        let w = 1024u64;
        let mut sa = SchedAvg::default();
        assert!(update_entity_avg(PERIOD_NS, &mut sa, w, true, true, true));

        // delta = 1024 units, period_contrib 0 → periods = 1, d1 = 1024, d3 = 0.
        let c1 = ((1024u128 * y1) >> 32) as u64; // 1002
        let c2 = LOAD_AVG_MAX - ((LOAD_AVG_MAX as u128 * y1) >> 32) as u64 - 1024; // 0
        let contrib = c1 + c2;
        assert_eq!((c1, c2), (1002, 0));
        assert_eq!(sa.period_contrib, 0);
        assert_eq!(sa.load_sum, contrib);
        assert_eq!(sa.runnable_sum, contrib * 1024);
        assert_eq!(sa.util_sum as u64, contrib * 1024);
        let divider = 47742 - 1024;
        assert_eq!(sa.load_avg, w * contrib / divider); // 21
        assert_eq!(sa.util_avg, contrib * 1024 / divider); // 21
        assert_eq!(sa.runnable_avg, contrib * 1024 / divider);
        assert_eq!(sa.util_avg, 21);

        // 32 idle periods: sums halve (>>1, then ·(2^32−1)>>32 loses one).
        assert!(update_entity_avg(33 * PERIOD_NS, &mut sa, w, false, false, false));
        let util_sum = ((((contrib * 1024) >> 1) as u128 * 0xffff_ffffu128) >> 32) as u64; // 513023
        let load_sum = ((((contrib) >> 1) as u128 * 0xffff_ffffu128) >> 32) as u64; // 500
        assert_eq!(util_sum, 513023);
        assert_eq!(sa.util_sum as u64, util_sum);
        assert_eq!(sa.load_sum, load_sum);
        assert_eq!(sa.util_avg, util_sum / divider); // 10 = ⌊21/2⌋
        assert_eq!(sa.util_avg, 10);
        assert_eq!(sa.load_avg, w * load_sum / divider);
        assert_eq!(sa.load_avg, 10);
        assert_eq!(sa.last_update_time, 33 * PERIOD_NS);
    }

    #[test]
    fn saturated_signal_halves_in_32_idle_periods() {
        let mut sa = SchedAvg::default();
        let mut now = 0;
        for _ in 0..1000 {
            now += PERIOD_NS;
            update_entity_avg(now, &mut sa, 1024, true, true, true);
        }
        let full = sa.util_avg;
        now += 32 * PERIOD_NS;
        update_entity_avg(now, &mut sa, 1024, false, false, false);
        assert!((sa.util_avg as i64 - full as i64 / 2).abs() <= 1, "{} vs {}", sa.util_avg, full);
    }

    #[test]
    fn always_running_converges() {
        for &w in &[1024u64, 88761, 15, 3] {
            let mut se = SchedAvg::default();
            let mut cfs = SchedAvg::default();
            let mut now = 0;
            let mut min_util_after_1s = u64::MAX;
            for i in 1..=2000u64 {
                now += PERIOD_NS;
                update_entity_avg(now, &mut se, w, true, true, true);
                update_cfs_rq_avg(now, &mut cfs, w, 1, true);
                assert!(se.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
                assert!(se.runnable_sum <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
                assert!(se.load_sum <= LOAD_AVG_MAX);
                assert!(cfs.load_sum <= LOAD_AVG_MAX * w);
                assert!(se.util_avg <= SCHED_CAPACITY_SCALE && se.load_avg <= w);
                assert!(cfs.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
                if now >= 1_000_000_000 {
                    min_util_after_1s = min_util_after_1s.min(se.util_avg);
                    assert!(se.load_avg >= w * 1002 / 1024, "i={i} w={w} load_avg={}", se.load_avg);
                    // The cfs_rq decays w·sum in one piece, so it loses less to
                    // rounding than the entity and can sit a hair above w.
                    assert!(cfs.load_avg >= w * 1002 / 1024 && cfs.load_avg <= w + w / 512, "w={w} {}", cfs.load_avg);
                    assert_eq!(cfs.util_avg, se.util_avg);
                    assert!(se.runnable_avg >= 1002);
                }
            }
            assert!((1002..=1024).contains(&min_util_after_1s), "{min_util_after_1s}");
        }
    }

    #[test]
    fn always_running_odd_steps_stays_high() {
        // Updates at 1 ms (not period-aligned) steps: the position-aware
        // divider keeps util in [1002, 1024].
        let mut se = SchedAvg::default();
        let mut now = 0;
        for _ in 0..3000 {
            now += 1_000_000 + 317;
            update_entity_avg(now, &mut se, 1024, true, true, true);
            if now > 1_000_000_000 {
                assert!((1002..=1024).contains(&se.util_avg), "{}", se.util_avg);
            }
        }
    }

    #[test]
    fn half_duty_cycle_converges_to_half() {
        let mut se = SchedAvg::default();
        let mut now = 0;
        let mut samples = Vec::new();
        for cycle in 0..2000 {
            // 1 ms running, updated at tick granularity like the kernel would.
            now += MS;
            update_entity_avg(now, &mut se, 1024, true, true, true);
            let on_end = se.util_avg;
            now += MS;
            update_entity_avg(now, &mut se, 1024, false, false, false);
            let off_end = se.util_avg;
            if cycle > 1000 {
                samples.push(on_end);
                samples.push(off_end);
            }
        }
        for &u in &samples {
            assert!((512 - 30..=512 + 30).contains(&u), "util {u}");
        }
        let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64;
        assert!((mean - 512.0).abs() < 512.0 * 0.03, "mean {mean}");
        // Load tracks on_rq the same way.
        assert!((se.load_avg as i64 - 512).abs() < 40);
    }

    /// A delayed entity (on_rq but not runnable) keeps load but loses runnable.
    #[test]
    fn delayed_entity_keeps_load_not_runnable() {
        let mut se = SchedAvg::default();
        let mut now = 0;
        for _ in 0..500 {
            now += PERIOD_NS;
            update_load_avg_se(now, &mut se, SeLoad { weight: 1024, on_rq: true, runnable: false, running: false });
        }
        assert!(se.load_avg >= 1002);
        assert_eq!((se.runnable_avg, se.util_avg), (0, 0));
    }

    fn busy_cfs(periods: u64, load_weight: u64, nr: u64) -> SchedAvg {
        let mut cfs = SchedAvg::default();
        for i in 1..=periods {
            update_cfs_rq_avg(i * PERIOD_NS + 333 * US, &mut cfs, load_weight, nr, nr > 0);
        }
        cfs
    }

    #[test]
    fn attach_then_detach_restores_cfs() {
        let cfs0 = busy_cfs(200, 2048, 2);
        let mut cfs = cfs0;
        let mut se = SchedAvg::default();
        init_entity_runnable_average(&mut se, 1024);
        post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
        attach_entity_load_avg(&mut cfs, &mut se, 1024);
        assert_eq!(se.last_update_time, cfs0.last_update_time);
        assert_eq!(se.period_contrib, cfs0.period_contrib);
        let divider = PELT_MIN_DIVIDER + cfs0.period_contrib as u64;
        assert_eq!(se.util_sum as u64, se.util_avg * divider);
        assert_eq!(se.load_sum, 1024 * divider / 1024);
        assert_eq!(cfs.load_avg, cfs0.load_avg + 1024);
        assert_eq!(cfs.util_avg, cfs0.util_avg + se.util_avg);
        assert_eq!(cfs.runnable_avg, cfs0.runnable_avg + se.runnable_avg);
        detach_entity_load_avg(&mut cfs, &se, 1024);
        assert_eq!(cfs, cfs0);
    }

    #[test]
    fn attach_load_sum_is_at_least_one() {
        let mut cfs = SchedAvg::default();
        let mut se = SchedAvg { load_avg: 0, ..SchedAvg::default() };
        attach_entity_load_avg(&mut cfs, &mut se, 1024);
        assert_eq!(se.load_sum, 1);
        assert_eq!(cfs.load_sum, 1024);
    }

    #[test]
    fn detach_clamps_at_zero() {
        let mut cfs = SchedAvg {
            load_avg: 10,
            load_sum: 10 * PELT_MIN_DIVIDER,
            util_avg: 5,
            util_sum: 5 * 46718,
            ..Default::default()
        };
        let se = SchedAvg {
            load_avg: 100,
            load_sum: 1000,
            util_avg: 50,
            util_sum: 50 * 46718,
            runnable_avg: 7,
            runnable_sum: 7,
            ..Default::default()
        };
        detach_entity_load_avg(&mut cfs, &se, 1024);
        assert_eq!((cfs.load_avg, cfs.load_sum, cfs.util_avg, cfs.util_sum), (0, 0, 0, 0));
        assert_eq!((cfs.runnable_avg, cfs.runnable_sum), (0, 0));
    }

    #[test]
    fn remove_is_applied_at_next_update_and_clamps() {
        let cfs0 = busy_cfs(300, 1024, 1);
        let mut cfs = cfs0;
        let mut removed = CfsRqRemoved::default();
        let se = SchedAvg { load_avg: 300, util_avg: 200, runnable_avg: 250, ..Default::default() };
        removed.add(&se);
        assert_eq!(removed, CfsRqRemoved { nr: 1, load_avg: 300, util_avg: 200, runnable_avg: 250 });
        assert_eq!(cfs, cfs0, "nothing happens until the next update");

        // Next update within the same unit: only the removal happens.
        let idle = CfsRqLoad { load_weight: 0, h_nr_runnable: 0, curr: false };
        assert!(update_cfs_rq_load_avg(cfs0.last_update_time, &mut cfs, &mut removed, idle));
        assert_eq!(removed, CfsRqRemoved::default());
        let divider = PELT_MIN_DIVIDER + cfs0.period_contrib as u64;
        assert_eq!(cfs.load_avg, cfs0.load_avg - 300);
        assert_eq!(cfs.util_avg, cfs0.util_avg - 200);
        assert_eq!(cfs.runnable_avg, cfs0.runnable_avg - 250);
        assert_eq!(cfs.load_sum, (cfs0.load_sum - 300 * divider).max(cfs.load_avg * PELT_MIN_DIVIDER));
        assert_eq!(cfs.util_sum as u64, (cfs0.util_sum as u64 - 200 * divider).max(cfs.util_avg * PELT_MIN_DIVIDER));
        assert_eq!(cfs.runnable_sum, (cfs0.runnable_sum - 250 * divider).max(cfs.runnable_avg * PELT_MIN_DIVIDER));

        // Removing more than is there clamps at 0.
        let big = SchedAvg { load_avg: 1 << 20, util_avg: 1 << 20, runnable_avg: 1 << 20, ..Default::default() };
        removed.add(&big);
        removed.add(&big);
        assert_eq!(removed.nr, 2);
        update_cfs_rq_load_avg(cfs.last_update_time, &mut cfs, &mut removed, idle);
        assert_eq!(
            cfs,
            SchedAvg {
                last_update_time: cfs.last_update_time,
                period_contrib: cfs.period_contrib,
                ..Default::default()
            }
        );
    }

    #[test]
    fn lower_bound_uses_32_bit_max_like_the_kernel() {
        // load_sum above 2^32 is truncated by max_t(u32, …) before comparing.
        let mut cfs = SchedAvg { load_avg: 1, load_sum: (1 << 32) + 5 * PELT_MIN_DIVIDER, ..Default::default() };
        remove_entity_load_avg(&mut cfs, 0, 0, 0);
        assert_eq!(cfs.load_sum, 5 * PELT_MIN_DIVIDER);
        let mut cfs = SchedAvg { load_avg: 1, load_sum: (1 << 32) + 10, ..Default::default() };
        remove_entity_load_avg(&mut cfs, 0, 0, 0);
        assert_eq!(cfs.load_sum, PELT_MIN_DIVIDER);
    }

    #[test]
    fn post_init_gives_half_spare_capacity() {
        let mut cfs = SchedAvg::default();
        let mut want = 512;
        let mut total = 0;
        // The series 512, 256, 128, … of successive nice-0 tasks on a cfs_rq
        // whose util is the sum of theirs and whose load is large.
        for _ in 0..8 {
            let mut se = SchedAvg::default();
            init_entity_runnable_average(&mut se, 1024);
            assert_eq!(se, SchedAvg { load_avg: 1024, ..Default::default() });
            post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
            assert_eq!(se.util_avg, want);
            assert_eq!(se.runnable_avg, want);
            total += want;
            cfs.util_avg = total;
            cfs.load_avg += 1024; // each new task brings its full weight
            want = (1024 - total) / 2;
        }

        // Extrapolated from the cfs_rq when below the cap: util·w/(load+1).
        let cfs = SchedAvg { util_avg: 300, load_avg: 2047, ..Default::default() };
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
        assert_eq!(se.util_avg, 300 * 1024 / 2048);
        // The divisor is load_avg + 1: 100·100/(99+1).
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &SchedAvg { util_avg: 100, load_avg: 99, ..Default::default() }, 100, 1024);
        assert_eq!(se.util_avg, 100);
        // A light task gets proportionally less.
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &cfs, 15, 1024);
        assert_eq!(se.util_avg, 300 * 15 / 2048);
        // A heavy one is capped at (1024 − 300) / 2.
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &cfs, 88761, 1024);
        assert_eq!(se.util_avg, 362);

        // No spare capacity (util at or over capacity): stays 0.
        for u in [1023u64, 1024, 1500] {
            let cfs = SchedAvg { util_avg: u, load_avg: 1024, ..Default::default() };
            let mut se = SchedAvg::default();
            post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);
            assert_eq!((se.util_avg, se.runnable_avg), (0, 0));
        }
        // Smaller CPU capacity.
        let mut se = SchedAvg::default();
        post_init_entity_util_avg(&mut se, &SchedAvg::default(), 1024, 446);
        assert_eq!(se.util_avg, 223);

        // Not fair: only the clock.
        let mut se = SchedAvg { load_avg: 1024, ..Default::default() };
        post_init_entity_util_avg_not_fair(&mut se, 12345);
        assert_eq!(se, SchedAvg { load_avg: 1024, last_update_time: 12345, ..Default::default() });
    }

    #[test]
    fn fair_update_load_avg_attaches_and_detaches() {
        let mut cfs = SchedAvg::default();
        let mut removed = CfsRqRemoved::default();
        let mut se = SchedAvg::default();
        init_entity_runnable_average(&mut se, 1024);
        post_init_entity_util_avg(&mut se, &cfs, 1024, 1024);

        // Enqueue at 5 ms on an empty cfs_rq: attach.
        let empty = CfsRqLoad { load_weight: 0, h_nr_runnable: 0, curr: false };
        let se_off = SeLoad { weight: 1024, on_rq: false, runnable: false, running: false };
        let now = 5 * MS;
        assert!(fair_update_load_avg(now, &mut cfs, &mut removed, empty, &mut se, se_off, UPDATE_TG | DO_ATTACH));
        assert_eq!(se.last_update_time, cfs.last_update_time);
        assert_eq!(cfs.load_avg, 1024);
        assert_eq!(cfs.util_avg, 512);

        // Run 100 ms with ticks.
        let busy = CfsRqLoad { load_weight: 1024, h_nr_runnable: 1, curr: true };
        let se_run = SeLoad { weight: 1024, on_rq: true, runnable: true, running: true };
        let mut t = now;
        for _ in 0..100 {
            t += MS;
            fair_update_load_avg(t, &mut cfs, &mut removed, busy, &mut se, se_run, UPDATE_TG);
            assert_eq!(se.last_update_time, cfs.last_update_time);
            assert_eq!(se.period_contrib, cfs.period_contrib);
        }
        assert!(se.util_avg > 900);
        // A single task's signals equal its cfs_rq's, up to the attach rounding.
        assert!((cfs.util_avg as i64 - se.util_avg as i64).abs() <= 2);

        // Migrating dequeue: detach leaves nothing behind.
        t += MS;
        fair_update_load_avg(t, &mut cfs, &mut removed, busy, &mut se, se_run, UPDATE_TG | DO_DETACH);
        assert!(cfs.load_avg <= 2 && cfs.util_avg <= 2, "{cfs:?}");
    }

    #[test]
    fn skip_age_load_leaves_the_entity() {
        let mut cfs = busy_cfs(10, 1024, 1);
        let mut removed = CfsRqRemoved::default();
        let mut se = SchedAvg { last_update_time: PERIOD_NS, load_avg: 1024, ..Default::default() };
        let before = se;
        let st = SeLoad { weight: 1024, on_rq: true, runnable: true, running: true };
        let cfs_st = CfsRqLoad { load_weight: 1024, h_nr_runnable: 1, curr: true };
        fair_update_load_avg(50 * PERIOD_NS, &mut cfs, &mut removed, cfs_st, &mut se, st, SKIP_AGE_LOAD);
        assert_eq!(se, before);
        assert_eq!(cfs.last_update_time, 50 * PERIOD_NS);
        fair_update_load_avg(60 * PERIOD_NS, &mut cfs, &mut removed, cfs_st, &mut se, st, 0);
        assert_eq!(se.last_update_time, 60 * PERIOD_NS);
        assert!(se.util_avg > 0);
    }

    #[test]
    fn cfs_runnable_counts_tasks_util_counts_curr() {
        // Three runnable tasks, one running: runnable_avg ≈ 3·1024, util ≈ 1024.
        let cfs = busy_cfs(1000, 3 * 1024, 3);
        assert!((3 * 1002..=3 * 1024 + 6).contains(&cfs.runnable_avg), "{}", cfs.runnable_avg);
        assert!((1002..=1024).contains(&cfs.util_avg), "{}", cfs.util_avg);
        assert!((3 * 1002..=3 * 1024 + 6).contains(&cfs.load_avg), "{}", cfs.load_avg);
    }

    #[test]
    fn reweight_recomputes_load_avg() {
        let mut cfs = busy_cfs(200, 1024, 1);
        let mut se = SchedAvg::default();
        let mut now = 0;
        for _ in 0..200 {
            now += PERIOD_NS;
            update_entity_avg(now, &mut se, 1024, true, true, true);
        }
        let cfs_before = cfs;
        let old = se.load_avg;
        reweight_entity_load_avg(&mut cfs, &mut se, 1024, 2048);
        assert_eq!(se.load_avg, 2048 * se.load_sum / get_pelt_divider(&se));
        assert!((se.load_avg as i64 - 2 * old as i64).abs() <= 1);
        assert_eq!(cfs.load_avg, cfs_before.load_avg - old + se.load_avg);
    }

    #[test]
    fn readers() {
        let cfs =
            SchedAvg { load_avg: 3000, util_avg: 700, runnable_avg: 900, last_update_time: 1, ..Default::default() };
        let p =
            SchedAvg { load_avg: 1000, util_avg: 400, runnable_avg: 450, last_update_time: 1, ..Default::default() };
        assert_eq!(cpu_load(&cfs), 3000);
        assert_eq!(cpu_load_without(&cfs, Some(&p)), 2000);
        assert_eq!(cpu_load_without(&cfs, Some(&SchedAvg { last_update_time: 0, ..p })), 3000);
        assert_eq!(cpu_load_without(&cfs, None), 3000);
        assert_eq!(cpu_util_cfs(&cfs, 1024), 700);
        assert_eq!(cpu_util_cfs(&cfs, 512), 512);
        assert_eq!(cpu_util_cfs_boost(&cfs, 1024), 900);
        // p leaves cpu 0: subtract; p comes to cpu 1 from cpu 0: add.
        assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), None, false, 1024), 300);
        assert_eq!(cpu_util(&cfs, 1, Some((&p, 0)), Some(1), false, 1024), 1024);
        assert_eq!(cpu_util(&cfs, 1, Some((&p, 0)), Some(1), false, 2048), 1100);
        assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), None, true, 1024), 450);
        // p stays on its own cpu: unchanged.
        assert_eq!(cpu_util(&cfs, 0, Some((&p, 0)), Some(0), false, 1024), 700);
        assert_eq!(cpu_util_without(&cfs, 0, (&p, 0), 1024), 300);
        assert_eq!(cpu_util_without(&cfs, 1, (&p, 0), 1024), 700);
        let big = SchedAvg { util_avg: 5000, ..p };
        assert_eq!(cpu_util_without(&cfs, 0, (&big, 0), 1024), 0);
        assert_eq!((task_util(&p), task_runnable(&p)), (400, 450));
    }

    proptest! {
        /// Arbitrary on/running/idle histories: sums and averages stay within
        /// their maxima, and the entity and its (single-task) cfs_rq agree.
        #[test]
        fn bounded_under_random_histories(steps in prop::collection::vec((1u64..5_000_000, 0u8..3), 1..300), w in 1u64..100_000) {
            let mut se = SchedAvg::default();
            let mut cfs = SchedAvg::default();
            let mut now = 0u64;
            for (dt, state) in steps {
                now += dt;
                let (on_rq, running) = match state { 0 => (false, false), 1 => (true, false), _ => (true, true) };
                update_entity_avg(now, &mut se, w, on_rq, on_rq, running);
                update_cfs_rq_avg(now, &mut cfs, if on_rq { w } else { 0 }, on_rq as u64, running);
                prop_assert!(se.load_sum <= LOAD_AVG_MAX);
                prop_assert!(se.util_sum as u64 <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
                prop_assert!(se.runnable_sum <= LOAD_AVG_MAX * SCHED_CAPACITY_SCALE);
                prop_assert!(se.util_avg <= SCHED_CAPACITY_SCALE);
                prop_assert!(se.runnable_avg <= SCHED_CAPACITY_SCALE);
                prop_assert!(se.load_avg <= w);
                prop_assert!(se.util_avg <= se.runnable_avg && se.util_sum as u64 <= se.runnable_sum);
                prop_assert!(se.period_contrib < 1024);
                prop_assert_eq!(se.last_update_time, cfs.last_update_time);
                prop_assert_eq!(se.util_sum, cfs.util_sum);
                prop_assert_eq!(se.runnable_sum, cfs.runnable_sum);
                // The load sums differ by rounding only (w·⌊s·y⌋ vs ⌊w·s·y⌋).
                prop_assert!(cfs.load_sum <= LOAD_AVG_MAX * w && se.load_sum * w <= cfs.load_sum);
                prop_assert!(cfs.load_avg.abs_diff(se.load_avg) <= 1 + w / 512);
                prop_assert!(now - se.last_update_time < 1024);
            }
        }

        /// Attach then detach of any entity restores a cfs_rq built by real updates.
        #[test]
        fn attach_detach_roundtrip(
            steps in prop::collection::vec((1u64..3_000_000, 0u64..5), 1..100),
            se_load in 0u64..100_000, se_util in 0u64..1025, se_run in 0u64..1025,
            w in 1u64..100_000,
        ) {
            let mut cfs = SchedAvg::default();
            let mut now = 0;
            for (dt, nr) in steps {
                now += dt;
                update_cfs_rq_avg(now, &mut cfs, nr * 1024, nr, nr > 0);
            }
            let cfs0 = cfs;
            let mut se = SchedAvg { load_avg: se_load, util_avg: se_util, runnable_avg: se_run, ..Default::default() };
            attach_entity_load_avg(&mut cfs, &mut se, w);
            detach_entity_load_avg(&mut cfs, &se, w);
            prop_assert_eq!(cfs, cfs0);
        }

        /// Removal never goes below zero and keeps sums ≥ avg · PELT_MIN_DIVIDER.
        #[test]
        fn removal_keeps_lower_bounds(
            n in 1u64..400, nr in 0u64..4,
            rl in 0u64..10_000, ru in 0u64..3000, rr in 0u64..3000,
        ) {
            let mut cfs = busy_cfs(n, nr * 1024, nr);
            let before = cfs;
            remove_entity_load_avg(&mut cfs, rl, ru, rr);
            prop_assert_eq!(cfs.load_avg, before.load_avg.saturating_sub(rl));
            prop_assert_eq!(cfs.util_avg, before.util_avg.saturating_sub(ru));
            prop_assert_eq!(cfs.runnable_avg, before.runnable_avg.saturating_sub(rr));
            prop_assert!(cfs.load_sum >= cfs.load_avg * PELT_MIN_DIVIDER);
            prop_assert!(cfs.util_sum as u64 >= cfs.util_avg * PELT_MIN_DIVIDER);
            prop_assert!(cfs.runnable_sum >= cfs.runnable_avg * PELT_MIN_DIVIDER);
            prop_assert!(cfs.load_sum <= before.load_sum && cfs.util_sum <= before.util_sum);
        }
    }
}
