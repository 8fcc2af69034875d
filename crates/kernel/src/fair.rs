//! The EEVDF fair class (`kernel/sched/fair.c`).
//!
//! Functions keep the kernel's names and order of effects. Simplified: one
//! root cfs_rq per CPU (no group entities, so the `for_each_sched_entity`
//! walks are one step), no PELT or util_est yet, no CFS bandwidth, no
//! fair_server accounting. Versions differ where [`crate::profile::Profile`]
//! says so.

use crate::core::Kernel;
use crate::fair_pelt::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use crate::features::Feature;
use crate::profile::{LagLimit, SliceProtection};
use crate::sched::{qflags::*, wflags::*, LoadWeight, OnRq, Policy, TaskId, NICE_0_WEIGHT};
use schedlab_trace::{DelayedWhat, EventKind, PreemptReason};

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
    fn se_weight(&self, t: TaskId) -> i64 {
        self.tasks[t as usize].se.load.weight as i64
    }

    /// `entity_key()`: vruntime relative to the cfs_rq's zero point.
    fn entity_key(&self, cpu: usize, t: TaskId) -> i64 {
        self.tasks[t as usize].se.vruntime - self.rqs[cpu].cfs.zero_vruntime
    }

    /// The running entity if it is still queued (`curr && curr->on_rq`).
    fn cfs_curr_on_rq(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].cfs.curr.filter(|&c| self.tasks[c as usize].se.on_rq)
    }

    /// `avg_vruntime_add()`.
    fn avg_vruntime_add(&mut self, cpu: usize, t: TaskId) {
        let w = self.se_weight(t);
        let key = self.entity_key(cpu, t);
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.avg_vruntime += key * w;
        cfs.avg_load += w as u64;
    }

    /// `avg_vruntime_sub()`.
    fn avg_vruntime_sub(&mut self, cpu: usize, t: TaskId) {
        let w = self.se_weight(t);
        let key = self.entity_key(cpu, t);
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.avg_vruntime -= key * w;
        cfs.avg_load -= w as u64;
    }

    /// `avg_vruntime()`: the zero-lag point V, the load-weighted mean vruntime
    /// including curr, floored so that an entity placed at V is eligible. Like
    /// the kernel it also moves `zero_vruntime` to V (6.12.117's `update_zero_vruntime`).
    pub fn avg_vruntime(&mut self, cpu: usize) -> i64 {
        let curr = self.cfs_curr_on_rq(cpu);
        let cfs = &self.rqs[cpu].cfs;
        let mut weight = cfs.avg_load as i64;
        let mut delta = 0;
        if weight != 0 {
            let mut runtime = cfs.avg_vruntime;
            if let Some(c) = curr {
                let w = self.se_weight(c);
                runtime += self.entity_key(cpu, c) * w;
                weight += w;
            }
            delta = div_floor(runtime, weight);
        } else if let Some(c) = curr {
            delta = self.entity_key(cpu, c);
        }
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.avg_vruntime -= cfs.avg_load as i64 * delta;
        cfs.zero_vruntime += delta;
        cfs.zero_vruntime
    }

    /// `vruntime_eligible()`: V ≥ v, evaluated without division.
    pub fn vruntime_eligible(&self, cpu: usize, vruntime: i64) -> bool {
        let cfs = &self.rqs[cpu].cfs;
        let mut avg = cfs.avg_vruntime;
        let mut load = cfs.avg_load as i64;
        if let Some(c) = self.cfs_curr_on_rq(cpu) {
            let w = self.se_weight(c);
            avg += self.entity_key(cpu, c) * w;
            load += w;
        }
        avg >= (vruntime - cfs.zero_vruntime) * load
    }

    /// `entity_eligible()`: lag ≥ 0.
    pub fn entity_eligible(&self, cpu: usize, t: TaskId) -> bool {
        self.vruntime_eligible(cpu, self.tasks[t as usize].se.vruntime)
    }

    /// `cfs_rq_min_slice()`.
    pub fn cfs_rq_min_slice(&self, cpu: usize) -> u64 {
        let mut min = u64::MAX;
        if let Some(c) = self.cfs_curr_on_rq(cpu) {
            min = self.tasks[c as usize].se.slice;
        }
        if let Some(s) = self.rqs[cpu].cfs.timeline.min_slice() {
            min = min.min(s);
        }
        min
    }

    /// `cfs_rq_max_slice()` (≥7.x lag bound).
    fn cfs_rq_max_slice(&self, cpu: usize) -> u64 {
        let mut max = 0;
        if let Some(c) = self.cfs_curr_on_rq(cpu) {
            max = self.tasks[c as usize].se.slice;
        }
        if let Some(s) = self.rqs[cpu].cfs.timeline.max_slice() {
            max = max.max(s);
        }
        max
    }

    /// `entity_lag()`: V − v clamped to the profile's bound.
    fn entity_lag(&self, cpu: usize, avruntime: i64, t: TaskId) -> i64 {
        let se = &self.tasks[t as usize].se;
        let vlag = avruntime - se.vruntime;
        let bound = match self.profile.lag_limit {
            LagLimit::TwiceSliceOrTick => (2 * se.slice).max(self.tick_ns),
            LagLimit::MaxSlicePlusTick => self.cfs_rq_max_slice(cpu) + self.tick_ns,
        };
        let limit = calc_delta_fair(bound, se.load) as i64;
        vlag.clamp(-limit, limit)
    }

    /// The clamped lag of a queued entity, for decision events only. Uses the
    /// same floor-biased V as `avg_vruntime()` without moving the zero point,
    /// so tracing never changes the model's state.
    fn lag_for_trace(&self, cpu: usize, t: TaskId) -> i64 {
        let curr = self.cfs_curr_on_rq(cpu);
        let cfs = &self.rqs[cpu].cfs;
        let (mut runtime, mut weight) = (cfs.avg_vruntime, cfs.avg_load as i64);
        if let Some(c) = curr {
            runtime += self.entity_key(cpu, c) * self.se_weight(c);
            weight += self.se_weight(c);
        }
        let v = if weight > 0 { cfs.zero_vruntime + div_floor(runtime, weight) } else { cfs.zero_vruntime };
        self.entity_lag(cpu, v, t)
    }

    /// `update_entity_lag()`: save the lag before the entity leaves the queue.
    fn update_entity_lag(&mut self, cpu: usize, t: TaskId) {
        debug_assert!(self.tasks[t as usize].se.on_rq);
        let v = self.avg_vruntime(cpu);
        self.tasks[t as usize].se.vlag = self.entity_lag(cpu, v, t);
    }

    /// `__enqueue_entity()`: into the tree and the weighted sums.
    fn __enqueue_entity(&mut self, cpu: usize, t: TaskId) {
        self.avg_vruntime_add(cpu, t);
        let se = &self.tasks[t as usize].se;
        let (d, v, s) = (se.deadline, se.vruntime, se.slice);
        self.rqs[cpu].cfs.timeline.insert(t, d, v, s);
    }

    /// `__dequeue_entity()`.
    fn __dequeue_entity(&mut self, cpu: usize, t: TaskId) {
        self.rqs[cpu].cfs.timeline.remove(t);
        self.avg_vruntime_sub(cpu, t);
    }

    /// `set_protect_slice()`: RUN_TO_PARITY's protection starts at pick.
    fn set_protect_slice(&mut self, cpu: usize, t: TaskId) {
        match self.profile.slice_protection {
            SliceProtection::UntilDeadline => {
                let se = &mut self.tasks[t as usize].se;
                se.vlag = se.deadline;
            }
            SliceProtection::MinQueuedSlice => {
                let mut slice = self.profile.base_slice_ns;
                if self.feat(Feature::RUN_TO_PARITY) {
                    slice = self.cfs_rq_min_slice(cpu);
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
    fn update_protect_slice(&mut self, cpu: usize, t: TaskId) {
        if self.profile.slice_protection == SliceProtection::MinQueuedSlice {
            let slice = self.cfs_rq_min_slice(cpu);
            let se = &mut self.tasks[t as usize].se;
            se.vprot = se.vprot.min(se.vruntime + calc_delta_fair(slice, se.load) as i64);
        }
    }

    /// `protect_slice()`.
    pub fn protect_slice(&self, t: TaskId) -> bool {
        let se = &self.tasks[t as usize].se;
        match self.profile.slice_protection {
            SliceProtection::UntilDeadline => se.vlag == se.deadline,
            SliceProtection::MinQueuedSlice => se.vprot > se.vruntime,
        }
    }

    /// `cancel_protect_slice()`.
    fn cancel_protect_slice(&mut self, t: TaskId) {
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
    pub fn pick_eevdf(&self, cpu: usize) -> Option<TaskId> {
        let cfs = &self.rqs[cpu].cfs;
        let first = cfs.timeline.first();
        let mut curr = cfs.curr;
        if cfs.nr_running == 1 {
            return match curr {
                Some(c) if self.tasks[c as usize].se.on_rq => Some(c),
                _ => first,
            };
        }
        if let Some(c) = curr {
            if !self.tasks[c as usize].se.on_rq || !self.entity_eligible(cpu, c) {
                curr = None;
            }
        }
        if let Some(c) = curr {
            if self.feat(Feature::RUN_TO_PARITY) && self.protect_slice(c) {
                return Some(c);
            }
        }
        let best = cfs.timeline.pick_eligible(|v| self.vruntime_eligible(cpu, v));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if self.tasks[c as usize].se.deadline < self.tasks[b as usize].se.deadline => Some(c),
            (b, _) => b,
        }
    }

    /// `update_deadline()`: once the request is served, issue a new one.
    /// Returns true when the caller should reschedule.
    fn update_deadline(&mut self, cpu: usize, t: TaskId) -> bool {
        let base = self.base_slice;
        let se = &mut self.tasks[t as usize].se;
        if se.vruntime < se.deadline {
            return false;
        }
        if !se.custom_slice {
            se.slice = base;
        }
        se.deadline = se.vruntime + calc_delta_fair(se.slice, se.load) as i64;
        self.avg_vruntime(cpu);
        true
    }

    /// `did_preempt_short()`.
    fn did_preempt_short(&self, cpu: usize, curr: TaskId) -> bool {
        if !self.feat(Feature::PREEMPT_SHORT) || self.protect_slice(curr) {
            return false;
        }
        !self.entity_eligible(cpu, curr)
    }

    /// `do_preempt_short()`: may wakee `pse` cut curr `se`'s protection short?
    fn do_preempt_short(&self, cpu: usize, pse: TaskId, se: TaskId) -> bool {
        if !self.feat(Feature::PREEMPT_SHORT) {
            return false;
        }
        let (p, s) = (&self.tasks[pse as usize].se, &self.tasks[se as usize].se);
        if p.slice >= s.slice || !self.entity_eligible(cpu, pse) {
            return false;
        }
        if p.deadline < s.deadline {
            return true;
        }
        !self.entity_eligible(cpu, se)
    }

    /// `update_curr()`: charge the running entity for the time since `exec_start`.
    pub fn update_curr(&mut self, cpu: usize) {
        let Some(curr) = self.rqs[cpu].cfs.curr else { return };
        let now = self.rqs[cpu].clock;
        let se = &mut self.tasks[curr as usize].se;
        let delta = now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta as u64;
        se.vruntime += calc_delta_fair(delta as u64, se.load) as i64;
        let resched = self.update_deadline(cpu, curr);
        self.fair_server_charge(cpu, delta as u64);
        let pid = self.tasks[curr as usize].pid;
        self.emit(cpu, EventKind::SchedStatRuntime { pid, runtime: delta as u64 });
        if self.rqs[cpu].cfs.nr_running == 1 {
            return;
        }
        if resched || self.did_preempt_short(cpu, curr) {
            // ≥6.13 charges slice expiry lazily when the lazy model is in use.
            self.resched_curr_maybe_lazy(cpu, self.profile.has_lazy_preempt);
            self.clear_buddies(cpu, curr);
        }
    }

    fn clear_buddies(&mut self, cpu: usize, t: TaskId) {
        if self.rqs[cpu].cfs.next == Some(t) {
            self.rqs[cpu].cfs.next = None;
        }
    }

    /// `place_entity()`: position an entity being enqueued from its saved lag.
    fn place_entity(&mut self, cpu: usize, t: TaskId, flags: u32) {
        let vruntime = self.avg_vruntime(cpu);
        let base = self.base_slice;
        let curr_w = self.cfs_curr_on_rq(cpu).map(|c| self.se_weight(c)).unwrap_or(0);
        let (avg_load, nr_running) = (self.rqs[cpu].cfs.avg_load as i64, self.rqs[cpu].cfs.nr_running);
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

    /// `account_entity_enqueue()`.
    fn account_entity_enqueue(&mut self, cpu: usize, t: TaskId) {
        let w = self.tasks[t as usize].se.load.weight as u64;
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.load_weight += w;
        cfs.tasks.insert(0, t);
        cfs.nr_running += 1;
    }

    /// `account_entity_dequeue()`.
    fn account_entity_dequeue(&mut self, cpu: usize, t: TaskId) {
        let w = self.tasks[t as usize].se.load.weight as u64;
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.load_weight -= w;
        if let Some(i) = cfs.tasks.iter().position(|&x| x == t) {
            cfs.tasks.remove(i);
        }
        cfs.nr_running -= 1;
    }

    /// `enqueue_entity()`.
    fn enqueue_entity(&mut self, cpu: usize, t: TaskId, flags: u32) {
        let is_curr = self.rqs[cpu].cfs.curr == Some(t);
        if is_curr {
            self.place_entity(cpu, t, flags);
        }
        self.update_curr(cpu);
        self.update_load_avg(cpu, t, UPDATE_TG | DO_ATTACH);
        if !is_curr {
            self.place_entity(cpu, t, flags);
        }
        self.account_entity_enqueue(cpu, t);
        if flags & ENQUEUE_MIGRATED != 0 {
            self.tasks[t as usize].se.exec_start = 0;
        }
        if !is_curr {
            self.__enqueue_entity(cpu, t);
        }
        self.tasks[t as usize].se.on_rq = true;
    }

    /// `set_delayed()`.
    fn set_delayed(&mut self, cpu: usize, t: TaskId) {
        self.tasks[t as usize].se.sched_delayed = true;
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.h_nr_runnable -= 1;
        cfs.h_nr_delayed += 1;
    }

    /// `clear_delayed()`.
    fn clear_delayed(&mut self, cpu: usize, t: TaskId) {
        self.tasks[t as usize].se.sched_delayed = false;
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.h_nr_runnable += 1;
        cfs.h_nr_delayed -= 1;
    }

    /// `finish_delayed_dequeue_entity()`: DELAY_ZERO forgets positive lag.
    fn finish_delayed_dequeue_entity(&mut self, cpu: usize, t: TaskId) {
        self.clear_delayed(cpu, t);
        if self.feat(Feature::DELAY_ZERO) && self.tasks[t as usize].se.vlag > 0 {
            self.tasks[t as usize].se.vlag = 0;
        }
    }

    /// `dequeue_entity()`: returns false when DELAY_DEQUEUE keeps an ineligible
    /// sleeper queued as `sched_delayed` instead.
    fn dequeue_entity(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        self.update_curr(cpu);
        self.clear_buddies(cpu, t);
        if flags & DEQUEUE_DELAYED != 0 {
            debug_assert!(self.tasks[t as usize].se.sched_delayed);
        } else {
            let delay = sleep && flags & DEQUEUE_SPECIAL == 0;
            debug_assert!(!(delay && self.tasks[t as usize].se.sched_delayed));
            if self.feat(Feature::DELAY_DEQUEUE) && delay && !self.entity_eligible(cpu, t) {
                self.update_load_avg(cpu, t, 0);
                self.set_delayed(cpu, t);
                if self.trace {
                    let lag = self.lag_for_trace(cpu, t);
                    let pid = self.tasks[t as usize].pid;
                    self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::Delayed, lag });
                }
                return false;
            }
        }
        let migrating = self.tasks[t as usize].on_rq == OnRq::Migrating;
        self.update_load_avg(cpu, t, UPDATE_TG | if migrating { DO_DETACH } else { 0 });
        self.update_entity_lag(cpu, t);
        if self.feat(Feature::PLACE_REL_DEADLINE) && !sleep {
            let se = &mut self.tasks[t as usize].se;
            se.deadline -= se.vruntime;
            se.rel_deadline = true;
        }
        if self.rqs[cpu].cfs.curr != Some(t) {
            self.__dequeue_entity(cpu, t);
        }
        self.tasks[t as usize].se.on_rq = false;
        self.account_entity_dequeue(cpu, t);
        if flags & DEQUEUE_DELAYED != 0 {
            self.finish_delayed_dequeue_entity(cpu, t);
        }
        true
    }

    /// `set_next_entity()`: `t` becomes curr; out of the tree, protection starts.
    fn set_next_entity(&mut self, cpu: usize, t: TaskId) {
        self.clear_buddies(cpu, t);
        if self.tasks[t as usize].se.on_rq {
            self.__dequeue_entity(cpu, t);
            self.update_load_avg(cpu, t, UPDATE_TG);
            self.set_protect_slice(cpu, t);
        }
        debug_assert!(self.rqs[cpu].cfs.curr.is_none());
        self.rqs[cpu].cfs.curr = Some(t);
        // update_stats_curr_start(): the entity's clock starts now.
        let now = self.rqs[cpu].clock;
        let se = &mut self.tasks[t as usize].se;
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `pick_next_entity()`: buddy or EEVDF pick; a picked delayed entity is
    /// dequeued now and `None` returned so the caller picks again.
    fn pick_next_entity(&mut self, cpu: usize) -> Option<TaskId> {
        if self.feat(Feature::PICK_BUDDY) {
            if let Some(n) = self.rqs[cpu].cfs.next {
                if self.entity_eligible(cpu, n) {
                    debug_assert!(!self.tasks[n as usize].se.sched_delayed);
                    return Some(n);
                }
            }
        }
        let se = self.pick_eevdf(cpu)?;
        if self.tasks[se as usize].se.sched_delayed {
            let pid = self.tasks[se as usize].pid;
            let lag = if self.trace { self.lag_for_trace(cpu, se) } else { 0 };
            self.dequeue_entities(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::DequeuedAtPick, lag });
            return None;
        }
        Some(se)
    }

    /// `put_prev_entity()`: curr goes back into the tree if still queued.
    fn put_prev_entity(&mut self, cpu: usize, prev: TaskId) {
        if self.tasks[prev as usize].se.on_rq {
            self.update_curr(cpu);
            self.__enqueue_entity(cpu, prev);
            self.update_load_avg(cpu, prev, 0);
        }
        debug_assert_eq!(self.rqs[cpu].cfs.curr, Some(prev));
        self.rqs[cpu].cfs.curr = None;
    }

    /// `requeue_delayed_entity()`: a delayed entity is woken in place. With
    /// DELAY_ZERO a positive lag is dropped and the entity re-placed at V; a
    /// negative lag keeps its vruntime and old deadline.
    fn requeue_delayed_entity(&mut self, cpu: usize, t: TaskId) {
        debug_assert!(self.tasks[t as usize].se.sched_delayed && self.tasks[t as usize].se.on_rq);
        if self.feat(Feature::DELAY_ZERO) {
            self.update_entity_lag(cpu, t);
            if self.tasks[t as usize].se.vlag > 0 {
                let is_curr = self.rqs[cpu].cfs.curr == Some(t);
                self.rqs[cpu].cfs.nr_running -= 1;
                if !is_curr {
                    self.__dequeue_entity(cpu, t);
                }
                self.tasks[t as usize].se.vlag = 0;
                self.place_entity(cpu, t, 0);
                if !is_curr {
                    self.__enqueue_entity(cpu, t);
                }
                self.rqs[cpu].cfs.nr_running += 1;
            }
        }
        self.update_load_avg(cpu, t, 0);
        self.clear_delayed(cpu, t);
        let pid = self.tasks[t as usize].pid;
        let lag = self.tasks[t as usize].se.vlag;
        self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::Requeued, lag });
    }

    /// `enqueue_task_fair()`.
    pub fn enqueue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if flags & ENQUEUE_DELAYED != 0 {
            self.requeue_delayed_entity(cpu, t);
            return;
        }
        let task_new = flags & ENQUEUE_WAKEUP == 0;
        let delayed_migrant = task_new && self.tasks[t as usize].se.sched_delayed;
        if self.tasks[t as usize].se.on_rq {
            if self.tasks[t as usize].se.sched_delayed {
                self.requeue_delayed_entity(cpu, t);
            }
            return;
        }
        self.enqueue_entity(cpu, t, flags);
        let idle = self.tasks[t as usize].policy == Policy::Idle;
        let cfs = &mut self.rqs[cpu].cfs;
        if !delayed_migrant {
            cfs.h_nr_runnable += 1;
        } else {
            cfs.h_nr_delayed += 1;
        }
        cfs.h_nr_queued += 1;
        cfs.idle_h_nr_running += idle as u32;
        self.add_nr_running(cpu, 1);
    }

    /// `dequeue_entities()`: returns -1 when the task was left delayed, 1 when
    /// it left the runqueue. A completed delayed dequeue also blocks the task.
    pub fn dequeue_entities(&mut self, cpu: usize, t: TaskId, flags: u32) -> i32 {
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let task_delayed = flags & DEQUEUE_DELAYED != 0;
        let counts_as_delayed = !task_sleep && !task_delayed && self.tasks[t as usize].se.sched_delayed;
        if !self.dequeue_entity(cpu, t, flags) {
            return -1;
        }
        let idle = self.tasks[t as usize].policy == Policy::Idle;
        let cfs = &mut self.rqs[cpu].cfs;
        if !counts_as_delayed {
            cfs.h_nr_runnable -= 1;
        } else {
            cfs.h_nr_delayed -= 1;
        }
        cfs.h_nr_queued -= 1;
        cfs.idle_h_nr_running -= idle as u32;
        self.rqs[cpu].nr_running -= 1;
        if task_delayed {
            debug_assert!(task_sleep);
            self.__block_task(cpu, t);
        }
        1
    }

    /// `dequeue_task_fair()`: false when the task stayed queued as delayed.
    pub fn dequeue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        self.dequeue_entities(cpu, t, flags) >= 0
    }

    /// `check_preempt_wakeup_fair()`: should wakee `p` preempt the running fair task?
    pub fn check_preempt_wakeup_fair(&mut self, cpu: usize, p: TaskId, wake_flags: u32) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        if curr == p {
            return;
        }
        let (curr_pid, wakee_pid) = (self.tasks[curr as usize].pid, self.tasks[p as usize].pid);
        let verdict = |k: &mut Kernel, preempt: bool, reason: PreemptReason| {
            k.emit(cpu, EventKind::WakeupPreempt { wakee: wakee_pid, curr: curr_pid, preempt, reason });
        };
        if self.feat(Feature::NEXT_BUDDY) && wake_flags & WF_FORK == 0 && !self.tasks[p as usize].se.sched_delayed {
            self.rqs[cpu].cfs.next = Some(p);
        }
        if self.rqs[cpu].need_resched {
            return verdict(self, false, PreemptReason::AlreadyResched);
        }
        if !self.feat(Feature::WAKEUP_PREEMPTION) {
            return verdict(self, false, PreemptReason::Disabled);
        }
        let cse_idle = self.tasks[curr as usize].policy == Policy::Idle;
        let pse_idle = self.tasks[p as usize].policy == Policy::Idle;
        let lazy = self.profile.lazy_wakeup_preempt;
        if cse_idle && !pse_idle {
            self.cancel_protect_slice(curr);
            verdict(self, true, PreemptReason::CurrIdlePolicy);
            return self.resched_curr_maybe_lazy(cpu, lazy);
        }
        if cse_idle != pse_idle {
            return verdict(self, false, PreemptReason::WakeeBatchOrIdle);
        }
        if !self.tasks[p as usize].policy.is_normal() {
            return verdict(self, false, PreemptReason::WakeeBatchOrIdle);
        }
        self.update_curr(cpu);
        let short = self.do_preempt_short(cpu, p, curr);
        if short {
            self.cancel_protect_slice(curr);
        }
        if self.pick_eevdf(cpu) == Some(p) {
            verdict(self, true, if short { PreemptReason::Short } else { PreemptReason::Pick });
            return self.resched_curr_maybe_lazy(cpu, lazy);
        }
        if self.feat(Feature::RUN_TO_PARITY) {
            self.update_protect_slice(cpu, curr);
        }
        verdict(self, false, PreemptReason::NotPicked)
    }

    /// `pick_task_fair()`.
    fn pick_task_fair(&mut self, cpu: usize) -> Option<TaskId> {
        loop {
            if self.rqs[cpu].cfs.nr_running == 0 {
                return None;
            }
            if self.cfs_curr_on_rq(cpu).is_some() {
                self.update_curr(cpu);
            }
            if let Some(se) = self.pick_next_entity(cpu) {
                return Some(se);
            }
        }
    }

    /// `pick_next_task_fair()` for a fair or idle `prev`, with newidle
    /// balancing when nothing is queued. Performs put_prev/set_next when switching.
    pub fn pick_next_task_fair(&mut self, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
        let p = loop {
            if let Some(p) = self.pick_task_fair(cpu) {
                break p;
            }
            // Nothing to run: newidle balancing may pull work, then pick again.
            if self.sched_balance_newidle(cpu) <= 0 {
                return None;
            }
        };
        let prev_fair = prev.filter(|&x| self.rqs[cpu].cfs.curr == Some(x));
        if prev_fair != Some(p) {
            if let Some(prev) = prev_fair {
                self.put_prev_entity(cpu, prev);
            }
            self.set_next_entity(cpu, p);
            self.__set_next_task_fair(cpu, p);
        }
        Some(p)
    }

    /// `set_next_task_fair(rq, p, first = false)` for a running task that
    /// (re)enters the fair class, e.g. when a PI boost ends.
    pub(crate) fn set_next_task_fair_running(&mut self, cpu: usize, p: TaskId) {
        self.set_next_entity(cpu, p);
    }

    /// `__set_next_task_fair()`: most-recently-picked to the head of cfs_tasks.
    fn __set_next_task_fair(&mut self, cpu: usize, p: TaskId) {
        let tasks = &mut self.rqs[cpu].cfs.tasks;
        if let Some(i) = tasks.iter().position(|&x| x == p) {
            tasks.remove(i);
            tasks.insert(0, p);
        }
    }

    /// `put_prev_task_fair()`.
    pub fn put_prev_task_fair(&mut self, cpu: usize, prev: TaskId) {
        if self.rqs[cpu].cfs.curr == Some(prev) {
            self.put_prev_entity(cpu, prev);
        }
    }

    /// `yield_task_fair()`: an eligible task forfeits the rest of its request.
    pub fn yield_task_fair(&mut self, cpu: usize) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        if self.rqs[cpu].nr_running == 1 {
            return;
        }
        self.clear_buddies(cpu, curr);
        self.update_curr(cpu);
        if self.entity_eligible(cpu, curr) {
            let se = &mut self.tasks[curr as usize].se;
            se.vruntime = se.deadline;
            self.update_deadline(cpu, curr);
        }
    }

    /// `task_tick_fair()` → `entity_tick()`: account and maybe reschedule.
    pub fn task_tick_fair(&mut self, cpu: usize) {
        self.update_curr(cpu);
        if let Some(curr) = self.rqs[cpu].cfs.curr {
            self.update_load_avg(cpu, curr, UPDATE_TG);
        }
        self.tick_update_idle_cpu_scan(cpu);
    }

    /// Whether `t` is queued on `cpu`'s cfs_rq as the kernel would see it.
    pub fn task_on_rq_queued(&self, t: TaskId) -> bool {
        self.tasks[t as usize].on_rq == OnRq::Queued
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
