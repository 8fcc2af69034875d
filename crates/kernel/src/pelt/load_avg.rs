//! `fair.c`'s PELT bookkeeping for a cfs_rq without a task-group hierarchy:
//! the `update_load_avg()` flags, `cfs_rq->removed` ([`CfsRqRemoved`]),
//! `enqueue_load_avg()`, `dequeue_load_avg()`, `attach_entity_load_avg()`,
//! `detach_entity_load_avg()`, `sync_entity_load_avg()`,
//! `remove_entity_load_avg()`, `update_cfs_rq_load_avg()`,
//! `update_load_avg()` (here [`fair_update_load_avg`]), the PELT step of
//! `reweight_entity()`, `init_entity_runnable_average()` and
//! `post_init_entity_util_avg()`.
//!
//! Simplified as described in [`crate::pelt`]: no group propagation, no
//! UTIL_EST, no `migrate_se_pelt_lag()`, `cfs_rq->removed` without its lock.

use super::{
    get_pelt_divider, max_u32, sub_positive, sub_positive_u32, update_cfs_rq_avg, update_load_avg_blocked_se,
    update_load_avg_se, CfsRqLoad, SchedAvg, SeLoad, PELT_MIN_DIVIDER,
};

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
