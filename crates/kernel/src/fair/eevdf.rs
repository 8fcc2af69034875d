//! The EEVDF half of `fair.c`: the weighted-time conversions
//! (`__calc_delta()`, `calc_delta_fair()`), the zero-lag point and its sums
//! (`avg_vruntime_add()`/`_sub()`, `avg_vruntime()`), eligibility
//! (`vruntime_eligible()`, `entity_eligible()`), lag (`entity_lag()`,
//! `update_entity_lag()`), the cfs_rq's slice bounds, the tree insertion
//! (`__enqueue_entity()`, `__dequeue_entity()`), slice protection
//! (`set_protect_slice()`, `update_protect_slice()`, `protect_slice()`,
//! `cancel_protect_slice()`), `pick_eevdf()`, `update_deadline()`,
//! `did_preempt_short()`/`do_preempt_short()` and `place_entity()`.
//!
//! Follows 6.12.x, with mainline's lag bound and slice protection where the
//! profile asks for them ([`LagLimit`], [`SliceProtection`]). Each function
//! works on one cfs_rq (`q`: a CPU's root or a group's, see [`crate::fair::group`]).

use crate::core::Kernel;
use crate::features::Feature;
use crate::profile::{LagLimit, SliceProtection};
use crate::sched::{qflags::ENQUEUE_INITIAL, CfsRqId, LoadWeight, TaskId, NICE_0_WEIGHT};

/// `__calc_delta(delta, NICE_0_LOAD, lw)`: `delta · 1024 / w` with the kernel's
/// 32-bit fixed-point reciprocal and shift renormalisation, so results match
/// the kernel to the nanosecond.
pub fn calc_delta(delta: u64, weight: u64, lw: LoadWeight) -> u64 {
    const WMULT_SHIFT: u32 = 32;
    let mut shift = WMULT_SHIFT;
    let mut fact = weight;
    let fls = |x: u32| 32 - x.leading_zeros();
    let hi = (fact >> 32) as u32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs;
        fact >>= fs;
    }
    fact = (fact as u32 as u64) * lw.inv_weight as u64;
    let hi = (fact >> 32) as u32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs;
        fact >>= fs;
    }
    ((delta as u128 * fact as u128) >> shift) as u64
}

/// `calc_delta_fair()`: real time → virtual time for an entity of weight `lw`.
pub fn calc_delta_fair(delta: u64, lw: LoadWeight) -> u64 {
    if lw.weight != NICE_0_WEIGHT {
        calc_delta(delta, NICE_0_WEIGHT as u64, lw)
    } else {
        delta
    }
}

/// Floor division for the signed average (`div_s64` after the kernel's bias).
fn div_floor(runtime: i64, weight: i64) -> i64 {
    let r = if runtime < 0 { runtime - (weight - 1) } else { runtime };
    r / weight
}

impl Kernel {
    /// `scale_load_down(se->load.weight)`.
    fn se_weight(&self, t: TaskId) -> i64 {
        self.tasks[t as usize].se.load.weight as i64
    }

    /// `entity_key()`: vruntime relative to the cfs_rq's zero point.
    fn entity_key(&self, q: CfsRqId, t: TaskId) -> i64 {
        self.tasks[t as usize].se.vruntime - self.cfs(q).zero_vruntime
    }

    /// The running entity if it is still queued (`curr && curr->on_rq`).
    pub(super) fn cfs_curr_on_rq(&self, q: CfsRqId) -> Option<TaskId> {
        self.cfs(q).curr.filter(|&c| self.tasks[c as usize].se.on_rq)
    }

    /// `avg_vruntime_add()`.
    fn avg_vruntime_add(&mut self, q: CfsRqId, t: TaskId) {
        let w = self.se_weight(t);
        let key = self.entity_key(q, t);
        let cfs = self.cfs_mut(q);
        cfs.avg_vruntime += key * w;
        cfs.avg_load += w as u64;
    }

    /// `avg_vruntime_sub()`.
    fn avg_vruntime_sub(&mut self, q: CfsRqId, t: TaskId) {
        let w = self.se_weight(t);
        let key = self.entity_key(q, t);
        let cfs = self.cfs_mut(q);
        cfs.avg_vruntime -= key * w;
        cfs.avg_load -= w as u64;
    }

    /// `avg_vruntime()`: the zero-lag point V, the load-weighted mean vruntime
    /// including curr, floored so that an entity placed at V is eligible. Like
    /// the kernel it also moves `zero_vruntime` to V (6.12.117's `update_zero_vruntime`).
    pub fn avg_vruntime(&mut self, q: CfsRqId) -> i64 {
        let curr = self.cfs_curr_on_rq(q);
        let cfs = self.cfs(q);
        let mut weight = cfs.avg_load as i64;
        let mut delta = 0;
        if weight != 0 {
            let mut runtime = cfs.avg_vruntime;
            if let Some(c) = curr {
                let w = self.se_weight(c);
                runtime += self.entity_key(q, c) * w;
                weight += w;
            }
            delta = div_floor(runtime, weight);
        } else if let Some(c) = curr {
            delta = self.entity_key(q, c);
        }
        let cfs = self.cfs_mut(q);
        cfs.avg_vruntime -= cfs.avg_load as i64 * delta;
        cfs.zero_vruntime += delta;
        cfs.zero_vruntime
    }

    /// `vruntime_eligible()`: V ≥ v, evaluated without division.
    pub fn vruntime_eligible(&self, q: CfsRqId, vruntime: i64) -> bool {
        let cfs = self.cfs(q);
        let mut avg = cfs.avg_vruntime;
        let mut load = cfs.avg_load as i64;
        if let Some(c) = self.cfs_curr_on_rq(q) {
            let w = self.se_weight(c);
            avg += self.entity_key(q, c) * w;
            load += w;
        }
        avg >= (vruntime - cfs.zero_vruntime) * load
    }

    /// `entity_eligible()`: lag ≥ 0.
    pub fn entity_eligible(&self, q: CfsRqId, t: TaskId) -> bool {
        self.vruntime_eligible(q, self.tasks[t as usize].se.vruntime)
    }

    /// `cfs_rq_min_slice()`.
    pub fn cfs_rq_min_slice(&self, q: CfsRqId) -> u64 {
        let mut min = u64::MAX;
        if let Some(c) = self.cfs_curr_on_rq(q) {
            min = self.tasks[c as usize].se.slice;
        }
        if let Some(s) = self.timeline(q).min_slice() {
            min = min.min(s);
        }
        min
    }

    /// `cfs_rq_max_slice()` (≥7.x lag bound).
    fn cfs_rq_max_slice(&self, q: CfsRqId) -> u64 {
        let mut max = 0;
        if let Some(c) = self.cfs_curr_on_rq(q) {
            max = self.tasks[c as usize].se.slice;
        }
        if let Some(s) = self.timeline(q).max_slice() {
            max = max.max(s);
        }
        max
    }

    /// `entity_lag()`: V − v clamped to the profile's bound: twice the slice
    /// or a tick in 6.12.x, the cfs_rq's largest slice plus a tick in
    /// mainline ([`LagLimit`]).
    pub(super) fn entity_lag(&self, q: CfsRqId, avruntime: i64, t: TaskId) -> i64 {
        let se = &self.tasks[t as usize].se;
        let vlag = avruntime - se.vruntime;
        let bound = match self.profile.lag_limit {
            LagLimit::TwiceSliceOrTick => (2 * se.slice).max(self.tick_ns),
            LagLimit::MaxSlicePlusTick => self.cfs_rq_max_slice(q) + self.tick_ns,
        };
        let limit = calc_delta_fair(bound, se.load) as i64;
        vlag.clamp(-limit, limit)
    }

    /// The clamped lag of a queued entity, for decision events only. Uses the
    /// same floor-biased V as `avg_vruntime()` without moving the zero point,
    /// so tracing never changes the model's state.
    pub(super) fn lag_for_trace(&self, q: CfsRqId, t: TaskId) -> i64 {
        let curr = self.cfs_curr_on_rq(q);
        let cfs = self.cfs(q);
        let (mut runtime, mut weight) = (cfs.avg_vruntime, cfs.avg_load as i64);
        if let Some(c) = curr {
            runtime += self.entity_key(q, c) * self.se_weight(c);
            weight += self.se_weight(c);
        }
        let v = if weight > 0 { cfs.zero_vruntime + div_floor(runtime, weight) } else { cfs.zero_vruntime };
        self.entity_lag(q, v, t)
    }

    /// `update_entity_lag()`: save the lag before the entity leaves the queue.
    pub(super) fn update_entity_lag(&mut self, q: CfsRqId, t: TaskId) {
        debug_assert!(self.tasks[t as usize].se.on_rq);
        let v = self.avg_vruntime(q);
        self.tasks[t as usize].se.vlag = self.entity_lag(q, v, t);
    }

    /// `__enqueue_entity()`: into the tree and the weighted sums.
    pub(super) fn __enqueue_entity(&mut self, q: CfsRqId, t: TaskId) {
        self.avg_vruntime_add(q, t);
        let se = &self.tasks[t as usize].se;
        let (d, v, s) = (se.deadline, se.vruntime, se.slice);
        self.timeline_mut(q).insert(t, d, v, s);
    }

    /// `__dequeue_entity()`.
    pub(super) fn __dequeue_entity(&mut self, q: CfsRqId, t: TaskId) {
        self.timeline_mut(q).remove(t);
        self.avg_vruntime_sub(q, t);
    }

    /// `set_protect_slice()`: RUN_TO_PARITY's protection starts at pick. In
    /// 6.12.x it lasts until the deadline (stashed in `vlag`); from 6.17
    /// (mainline) it ends at `vprot`, at most the smallest queued slice away.
    pub(super) fn set_protect_slice(&mut self, q: CfsRqId, t: TaskId) {
        match self.profile.slice_protection {
            SliceProtection::UntilDeadline => {
                let se = &mut self.tasks[t as usize].se;
                se.vlag = se.deadline;
            }
            SliceProtection::MinQueuedSlice => {
                let mut slice = self.profile.base_slice_ns;
                if self.feat(Feature::RUN_TO_PARITY) {
                    slice = self.cfs_rq_min_slice(q);
                }
                let se = &mut self.tasks[t as usize].se;
                slice = slice.min(se.slice);
                let mut vprot = se.deadline;
                if slice != se.slice {
                    vprot = vprot.min(se.vruntime + calc_delta_fair(slice, se.load) as i64);
                }
                se.vprot = vprot;
            }
        }
    }

    /// `update_protect_slice()` (≥6.17): a queued shorter slice shortens the protection.
    pub(super) fn update_protect_slice(&mut self, q: CfsRqId, t: TaskId) {
        if self.profile.slice_protection == SliceProtection::MinQueuedSlice {
            let slice = self.cfs_rq_min_slice(q);
            let se = &mut self.tasks[t as usize].se;
            se.vprot = se.vprot.min(se.vruntime + calc_delta_fair(slice, se.load) as i64);
        }
    }

    /// `protect_slice()`, in the profile's form (see `set_protect_slice()`).
    pub fn protect_slice(&self, t: TaskId) -> bool {
        let se = &self.tasks[t as usize].se;
        match self.profile.slice_protection {
            SliceProtection::UntilDeadline => se.vlag == se.deadline,
            SliceProtection::MinQueuedSlice => se.vprot > se.vruntime,
        }
    }

    /// `cancel_protect_slice()`, in the profile's form (see `set_protect_slice()`).
    pub(super) fn cancel_protect_slice(&mut self, t: TaskId) {
        if self.protect_slice(t) {
            let se = &mut self.tasks[t as usize].se;
            match self.profile.slice_protection {
                SliceProtection::UntilDeadline => se.vlag = se.deadline + 1,
                SliceProtection::MinQueuedSlice => se.vprot = se.vruntime,
            }
        }
    }

    /// `pick_eevdf()`: the eligible entity with the earliest virtual deadline,
    /// honouring RUN_TO_PARITY for curr.
    pub fn pick_eevdf(&self, q: CfsRqId) -> Option<TaskId> {
        let cfs = self.cfs(q);
        let first = cfs.timeline.first();
        let mut curr = cfs.curr;
        if cfs.nr_running == 1 {
            return match curr {
                Some(c) if self.tasks[c as usize].se.on_rq => Some(c),
                _ => first,
            };
        }
        if let Some(c) = curr {
            if !self.tasks[c as usize].se.on_rq || !self.entity_eligible(q, c) {
                curr = None;
            }
        }
        if let Some(c) = curr {
            if self.feat(Feature::RUN_TO_PARITY) && self.protect_slice(c) {
                return Some(c);
            }
        }
        let best = self.timeline(q).pick_eligible(|v| self.vruntime_eligible(q, v));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if self.tasks[c as usize].se.deadline < self.tasks[b as usize].se.deadline => Some(c),
            (b, _) => b,
        }
    }

    /// `update_deadline()`: once the request is served, issue a new one.
    /// Returns true when the caller should reschedule.
    pub(super) fn update_deadline(&mut self, q: CfsRqId, t: TaskId) -> bool {
        let base = self.base_slice;
        let se = &mut self.tasks[t as usize].se;
        if se.vruntime < se.deadline {
            return false;
        }
        if !se.custom_slice {
            se.slice = base;
        }
        se.deadline = se.vruntime + calc_delta_fair(se.slice, se.load) as i64;
        self.avg_vruntime(q);
        true
    }

    /// `did_preempt_short()`.
    pub(super) fn did_preempt_short(&self, q: CfsRqId, curr: TaskId) -> bool {
        if !self.feat(Feature::PREEMPT_SHORT) || self.protect_slice(curr) {
            return false;
        }
        !self.entity_eligible(q, curr)
    }

    /// `do_preempt_short()`: may wakee `pse` cut curr `se`'s protection short?
    pub(super) fn do_preempt_short(&self, q: CfsRqId, pse: TaskId, se: TaskId) -> bool {
        if !self.feat(Feature::PREEMPT_SHORT) {
            return false;
        }
        let (p, s) = (&self.tasks[pse as usize].se, &self.tasks[se as usize].se);
        if p.slice >= s.slice || !self.entity_eligible(q, pse) {
            return false;
        }
        if p.deadline < s.deadline {
            return true;
        }
        !self.entity_eligible(q, se)
    }

    /// `place_entity()`: position an entity being enqueued from its saved lag.
    pub(super) fn place_entity(&mut self, q: CfsRqId, t: TaskId, flags: u32) {
        let vruntime = self.avg_vruntime(q);
        let base = self.base_slice;
        let curr_w = self.cfs_curr_on_rq(q).map(|c| self.se_weight(c)).unwrap_or(0);
        let (avg_load, nr_running) = (self.cfs(q).avg_load as i64, self.cfs(q).nr_running);
        let place_lag = self.feat(Feature::PLACE_LAG);
        let rel_deadline = self.feat(Feature::PLACE_REL_DEADLINE);
        let deadline_initial = self.feat(Feature::PLACE_DEADLINE_INITIAL);
        let se = &mut self.tasks[t as usize].se;
        if !se.custom_slice {
            se.slice = base;
        }
        let mut vslice = calc_delta_fair(se.slice, se.load) as i64;
        let mut lag = 0i64;
        if place_lag && nr_running > 0 {
            // Inflate the lag so it survives the shift of V caused by adding this entity.
            let mut load = avg_load + curr_w;
            lag = se.vlag * (load + se.load.weight as i64);
            if load == 0 {
                load = 1;
            }
            lag /= load; // div_s64 truncates toward zero
        }
        se.vruntime = vruntime - lag;
        if rel_deadline && se.rel_deadline {
            se.deadline += se.vruntime;
            se.rel_deadline = false;
            return;
        }
        if deadline_initial && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime + vslice;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::SCHED_PRIO_TO_WEIGHT;

    #[test]
    fn inverse_weights_match_the_kernel_table() {
        // Spot values of sched_prio_to_wmult[] (nice -20, 0, 1, 5, 19).
        let wmult = |nice: i32| crate::sched::inv_weight(SCHED_PRIO_TO_WEIGHT[(nice + 20) as usize]);
        assert_eq!(wmult(-20), 48388);
        assert_eq!(wmult(0), 4194304);
        assert_eq!(wmult(1), 5237765);
        assert_eq!(wmult(5), 12820798);
        assert_eq!(wmult(19), 286331153);
    }

    #[test]
    fn calc_delta_fair_scales_by_weight() {
        let nice0 = LoadWeight::new(1024);
        assert_eq!(calc_delta_fair(1_000_000, nice0), 1_000_000);
        let nice5 = LoadWeight::new(335);
        // 1 ms at weight 335 is 1024/335 ms of virtual time (fixed point rounds down).
        let v = calc_delta_fair(1_000_000, nice5);
        assert!((3_056_700..=3_056_717).contains(&v), "{v}");
        let heavy = LoadWeight::new(88761);
        assert_eq!(calc_delta_fair(88761, heavy), 1023);
    }

    #[test]
    fn floor_division_biases_left() {
        assert_eq!(div_floor(7, 2), 3);
        assert_eq!(div_floor(-7, 2), -4);
        assert_eq!(div_floor(-8, 2), -4);
    }
}
