//! The EEVDF fair class (`kernel/sched/fair.c`).
//!
//! Functions keep the kernel's names and order of effects. Entity-level
//! functions take the cfs_rq they work on (`q`); the task-level ones walk the
//! group hierarchy (`for_each_sched_entity`, one step when there are no
//! task groups, see [`group`]). Simplified: no util_est, no CFS bandwidth.
//! Follows 6.12.x; where other versions differ, [`crate::profile::Profile`]
//! says so and the function's doc names the version.
//!
//! Laid out in two pieces: this file holds the class's paths —
//! `update_curr()`, the entity enqueue/dequeue (`enqueue_entity()`,
//! `dequeue_entity()` with DELAY_DEQUEUE, `requeue_delayed_entity()`),
//! `enqueue_task_fair()`/`dequeue_entities()`/`dequeue_task_fair()`,
//! `check_preempt_wakeup_fair()`, the pick (`pick_next_entity()`,
//! `pick_task_fair()`, `pick_next_task_fair()`, `set_next_entity()`,
//! `put_prev_entity()`), `yield_task_fair()` and `task_tick_fair()`. The
//! EEVDF math they build on — `calc_delta_fair()`, `avg_vruntime()`,
//! eligibility and lag, slice protection, `pick_eevdf()`,
//! `update_deadline()` and `place_entity()` — is in `eevdf`.

use crate::core::Kernel;
use crate::fair::pelt::{DO_ATTACH, DO_DETACH, UPDATE_TG};
use crate::features::Feature;
use crate::sched::{qflags::*, wflags::*, CfsRqId, OnRq, Policy, TaskId};
use schedlab_trace::{DelayedWhat, EventKind, PreemptReason};

pub mod bandwidth;
pub mod capacity;
pub mod eas;
mod eevdf;
pub mod group;
pub mod lb;
pub mod nohz;
pub mod pelt;
pub mod select;
pub mod timeline;

pub use eevdf::{calc_delta, calc_delta_fair};
use group::HCounts;

impl Kernel {
    /// `update_curr_se()`: move `t`'s `exec_start` up to `cpu`'s rq clock and
    /// add the time since to `sum_exec_runtime`. `None` when the clock has not
    /// moved (the kernel's `delta_exec <= 0`).
    fn update_curr_se(&mut self, cpu: usize, t: TaskId) -> Option<u64> {
        let now = self.rqs[cpu].clock;
        let se = &mut self.tasks[t as usize].se;
        let delta = now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return None;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta as u64;
        Some(delta as u64)
    }

    /// `update_curr_task()`: the `sched_stat_runtime` trace of a charge and
    /// the task groups' CPU time (`cgroup_account_cputime()`). Simplified: no
    /// thread-group CPU time accounting.
    fn update_curr_task(&mut self, cpu: usize, t: TaskId, delta: u64) {
        if self.tasks[t as usize].tg != 0 {
            self.account_group_cputime(t, delta);
        }
        let pid = self.tasks[t as usize].pid;
        self.emit(cpu, EventKind::SchedStatRuntime { pid, runtime: delta });
    }

    /// `update_curr_common()`: the runtime accounting every class shares,
    /// used as is by the RT class (6.12.x; 6.14 renames it `update_se()`).
    /// Returns the time charged (`None` when the clock has not moved).
    pub(crate) fn update_curr_common(&mut self, cpu: usize, t: TaskId) -> Option<u64> {
        let delta = self.update_curr_se(cpu, t)?;
        self.update_curr_task(cpu, t, delta);
        Some(delta)
    }

    /// `update_curr()` of cfs_rq `q`: charge its running entity for the time
    /// since `exec_start` (`update_curr_se()`), then its virtual time and
    /// deadline; a task's charge also feeds the fair server and the trace.
    /// Slice expiry reschedules lazily where the profile has lazy preemption
    /// (≥6.13). The model charges the fair server before the
    /// `sched_stat_runtime` trace; the kernel traces first.
    pub(crate) fn update_curr(&mut self, q: CfsRqId) {
        let Some(curr) = self.cfs(q).curr else { return };
        let cpu = self.cfs(q).cpu;
        let Some(delta) = self.update_curr_se(cpu, curr) else { return };
        let se = &mut self.tasks[curr as usize].se;
        se.vruntime += calc_delta_fair(delta, se.load) as i64;
        let resched = self.update_deadline(q, curr);
        if self.entity_is_task(curr) {
            self.dl_server_update(cpu, delta);
            self.update_curr_task(cpu, curr, delta);
        }
        self.account_cfs_rq_runtime(q, delta);
        if self.cfs(q).nr_running == 1 {
            return;
        }
        if resched || self.did_preempt_short(q, curr) {
            // ≥6.13 charges slice expiry lazily when the lazy model is in use.
            self.resched_curr_maybe_lazy(cpu, self.profile.has_lazy_preempt);
            self.clear_buddies(q, curr);
        }
    }

    /// `update_curr_fair()`: `update_curr()` of the running task's own cfs_rq
    /// (the group levels above are charged by their own paths: tick,
    /// enqueue, dequeue, put_prev).
    pub(crate) fn update_curr_fair(&mut self, cpu: usize) {
        match self.rqs[cpu].curr {
            Some(t) => self.update_curr(self.cfs_rq_of(t)),
            None => self.update_curr(cpu),
        }
    }

    /// `account_entity_enqueue()`; a task also joins `rq->cfs_tasks`.
    fn account_entity_enqueue(&mut self, q: CfsRqId, e: TaskId) {
        let w = self.tasks[e as usize].se.load.weight as u64;
        let cfs = self.cfs_mut(q);
        cfs.load_weight += w;
        cfs.nr_running += 1;
        let cpu = cfs.cpu;
        self.touched.cpu(cpu);
        self.touched.task(e);
        if self.entity_is_task(e) {
            self.rqs[cpu].cfs.tasks.insert(0, e);
        }
    }

    /// `account_entity_dequeue()`.
    fn account_entity_dequeue(&mut self, q: CfsRqId, e: TaskId) {
        let w = self.tasks[e as usize].se.load.weight as u64;
        let cfs = self.cfs_mut(q);
        cfs.load_weight -= w;
        cfs.nr_running -= 1;
        let cpu = cfs.cpu;
        self.touched.cpu(cpu);
        self.touched.task(e);
        if self.entity_is_task(e) {
            let root = &mut self.rqs[cpu].cfs;
            if let Some(i) = root.tasks.iter().position(|&x| x == e) {
                root.tasks.remove(i);
            }
        }
    }

    /// `update_load_avg(cfs_rq_of(se), se, flags)`.
    fn entity_load_avg(&mut self, e: TaskId, flags: u32) {
        self.update_load_avg(self.cfs_rq_of(e), e, flags);
    }

    /// `enqueue_entity()`.
    fn enqueue_entity(&mut self, q: CfsRqId, e: TaskId, flags: u32) {
        let is_curr = self.cfs(q).curr == Some(e);
        if is_curr {
            self.place_entity(q, e, flags);
        }
        self.update_curr(q);
        self.entity_load_avg(e, UPDATE_TG | DO_ATTACH);
        self.se_update_runnable(e);
        self.update_cfs_group(e);
        if !is_curr {
            self.place_entity(q, e, flags);
        }
        self.account_entity_enqueue(q, e);
        if flags & ENQUEUE_MIGRATED != 0 {
            self.tasks[e as usize].se.exec_start = 0;
        }
        if !is_curr {
            self.__enqueue_entity(q, e);
        }
        self.tasks[e as usize].se.on_rq = true;
        if self.cfs(q).nr_running == 1 {
            self.check_enqueue_throttle(q);
            // (6.18 counts throttled time from the first task throttled instead.)
            if !self.profile.task_based_throttle && self.cfs_rq_throttled(q) && self.cfs(q).throttled_clock.is_none() {
                let now = self.rqs[self.cfs(q).cpu].clock;
                self.cfs_mut(q).throttled_clock = Some(now);
            }
        }
    }

    /// `set_delayed()`: a delayed task stops counting as runnable at every
    /// level above it (a delayed group entity has no tasks left to count).
    fn set_delayed(&mut self, e: TaskId) {
        self.tasks[e as usize].se.sched_delayed = true;
        if self.entity_is_task(e) {
            self.for_each_cfs_rq_up(e, |cfs| {
                cfs.h_nr_runnable -= 1;
                cfs.h_nr_delayed += 1;
            });
        }
    }

    /// `clear_delayed()`.
    fn clear_delayed(&mut self, e: TaskId) {
        self.tasks[e as usize].se.sched_delayed = false;
        if self.entity_is_task(e) {
            self.for_each_cfs_rq_up(e, |cfs| {
                cfs.h_nr_runnable += 1;
                cfs.h_nr_delayed -= 1;
            });
        }
    }

    /// `finish_delayed_dequeue_entity()`: DELAY_ZERO forgets positive lag.
    fn finish_delayed_dequeue_entity(&mut self, e: TaskId) {
        self.clear_delayed(e);
        if self.feat(Feature::DELAY_ZERO) && self.tasks[e as usize].se.vlag > 0 {
            self.tasks[e as usize].se.vlag = 0;
        }
    }

    /// `dequeue_entity()`: returns false when DELAY_DEQUEUE keeps an ineligible
    /// sleeper queued as `sched_delayed` instead.
    fn dequeue_entity(&mut self, q: CfsRqId, e: TaskId, flags: u32) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        self.update_curr(q);
        self.clear_buddies(q, e);
        if flags & DEQUEUE_DELAYED != 0 {
            debug_assert!(self.tasks[e as usize].se.sched_delayed);
        } else {
            let delay = sleep && flags & (DEQUEUE_SPECIAL | DEQUEUE_THROTTLE) == 0;
            debug_assert!(!(delay && self.tasks[e as usize].se.sched_delayed));
            if self.feat(Feature::DELAY_DEQUEUE) && delay && !self.entity_eligible(q, e) {
                self.entity_load_avg(e, 0);
                self.set_delayed(e);
                if self.trace && self.entity_is_task(e) {
                    let lag = self.lag_for_trace(q, e);
                    let pid = self.tasks[e as usize].pid;
                    self.emit(self.cfs(q).cpu, EventKind::Delayed { pid, what: DelayedWhat::Delayed, lag });
                }
                return false;
            }
        }
        let migrating = self.entity_is_task(e) && self.tasks[e as usize].on_rq == OnRq::Migrating;
        self.entity_load_avg(e, UPDATE_TG | if migrating { DO_DETACH } else { 0 });
        self.se_update_runnable(e);
        self.update_entity_lag(q, e);
        if self.feat(Feature::PLACE_REL_DEADLINE) && !sleep {
            let se = &mut self.tasks[e as usize].se;
            se.deadline -= se.vruntime;
            se.rel_deadline = true;
        }
        if self.cfs(q).curr != Some(e) {
            self.__dequeue_entity(q, e);
        }
        self.tasks[e as usize].se.on_rq = false;
        self.account_entity_dequeue(q, e);
        // 6.18: an emptied cfs_rq of a throttled hierarchy stops its PELT clock.
        if self.profile.task_based_throttle
            && self.cfs(q).nr_running == 0
            && self.throttled_hierarchy(q)
            && !self.cfs(q).pelt_clock_throttled
        {
            let pelt_now = self.rq_clock_pelt(self.cfs(q).cpu);
            let cfs = self.cfs_mut(q);
            cfs.pelt_clock_throttled = true;
            cfs.throttled_clock_pelt = pelt_now;
        }
        self.return_cfs_rq_runtime(q);
        self.update_cfs_group(e);
        if flags & DEQUEUE_DELAYED != 0 {
            self.finish_delayed_dequeue_entity(e);
        }
        true
    }

    /// `set_next_entity()`: `e` becomes curr of `q`; out of the tree, protection starts.
    fn set_next_entity(&mut self, q: CfsRqId, e: TaskId) {
        self.clear_buddies(q, e);
        if self.tasks[e as usize].se.on_rq {
            self.__dequeue_entity(q, e);
            self.entity_load_avg(e, UPDATE_TG);
            self.set_protect_slice(q, e);
        }
        debug_assert!(self.cfs(q).curr.is_none());
        self.cfs_mut(q).curr = Some(e);
        // update_stats_curr_start(): the entity's clock starts now.
        let now = self.rqs[self.cfs(q).cpu].clock;
        let se = &mut self.tasks[e as usize].se;
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `pick_next_entity()`: buddy or EEVDF pick; a picked delayed entity is
    /// dequeued now and `None` returned so the caller picks again.
    fn pick_next_entity(&mut self, q: CfsRqId) -> Option<TaskId> {
        if self.feat(Feature::PICK_BUDDY) {
            if let Some(n) = self.cfs(q).next {
                if self.entity_eligible(q, n) {
                    debug_assert!(!self.tasks[n as usize].se.sched_delayed);
                    return Some(n);
                }
            }
        }
        let se = self.pick_eevdf(q)?;
        if self.tasks[se as usize].se.sched_delayed {
            let cpu = self.cfs(q).cpu;
            let is_task = self.entity_is_task(se);
            let pid = self.tasks[se as usize].pid;
            let lag = if self.trace && is_task { self.lag_for_trace(q, se) } else { 0 };
            self.dequeue_entities(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            if is_task {
                self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::DequeuedAtPick, lag });
            }
            return None;
        }
        Some(se)
    }

    /// `put_prev_entity()`: curr goes back into the tree if still queued.
    fn put_prev_entity(&mut self, q: CfsRqId, prev: TaskId) {
        if self.tasks[prev as usize].se.on_rq {
            self.update_curr(q);
        }
        // Throttle a cfs_rq that ran out (its entity leaves the parent, with curr still set here).
        self.check_cfs_rq_runtime(q);
        if self.tasks[prev as usize].se.on_rq {
            self.__enqueue_entity(q, prev);
            self.entity_load_avg(prev, 0);
        }
        debug_assert_eq!(self.cfs(q).curr, Some(prev));
        self.cfs_mut(q).curr = None;
    }

    /// `requeue_delayed_entity()`: a delayed entity is woken in place. With
    /// DELAY_ZERO a positive lag is dropped and the entity re-placed at V; a
    /// negative lag keeps its vruntime and old deadline.
    fn requeue_delayed_entity(&mut self, e: TaskId) {
        let q = self.cfs_rq_of(e);
        debug_assert!(self.tasks[e as usize].se.sched_delayed && self.tasks[e as usize].se.on_rq);
        if self.feat(Feature::DELAY_ZERO) {
            self.update_entity_lag(q, e);
            if self.tasks[e as usize].se.vlag > 0 {
                let is_curr = self.cfs(q).curr == Some(e);
                self.cfs_mut(q).nr_running -= 1;
                if !is_curr {
                    self.__dequeue_entity(q, e);
                }
                self.tasks[e as usize].se.vlag = 0;
                self.place_entity(q, e, 0);
                if !is_curr {
                    self.__enqueue_entity(q, e);
                }
                self.cfs_mut(q).nr_running += 1;
            }
        }
        self.entity_load_avg(e, 0);
        self.clear_delayed(e);
        if self.entity_is_task(e) {
            let pid = self.tasks[e as usize].pid;
            let lag = self.tasks[e as usize].se.vlag;
            self.emit(self.cfs(q).cpu, EventKind::Delayed { pid, what: DelayedWhat::Requeued, lag });
        }
    }

    /// `enqueue_task_fair()`: enqueue the task and every ancestor not yet
    /// queued (a delayed one is requeued), then bring the rest of the
    /// hierarchy's counts, shares and slices up to date.
    pub(crate) fn enqueue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if flags & ENQUEUE_DELAYED != 0 {
            self.requeue_delayed_entity(t);
            return;
        }
        let task_new = flags & ENQUEUE_WAKEUP == 0;
        if self.tasks[t as usize].se.on_rq {
            if self.tasks[t as usize].se.sched_delayed {
                self.requeue_delayed_entity(t);
            }
            return;
        }
        let idle = (self.tasks[t as usize].policy == Policy::Idle) as u32;
        let delayed = (task_new && self.tasks[t as usize].se.sched_delayed) as u32;
        let mut counts = HCounts { queued: 1, delayed, idle };
        let (mut flags, mut slice) = (flags, 0);
        let mut se = Some(t);
        while let Some(e) = se {
            if self.tasks[e as usize].se.on_rq {
                if self.tasks[e as usize].se.sched_delayed {
                    self.requeue_delayed_entity(e);
                }
                break;
            }
            let q = self.cfs_rq_of(e);
            if slice != 0 {
                let s = &mut self.tasks[e as usize].se;
                s.slice = slice;
                s.custom_slice = true;
            }
            self.enqueue_entity(q, e, flags);
            slice = self.cfs_rq_min_slice(q);
            self.h_counts(q, counts, true);
            if self.cfs(q).idle {
                counts.idle = 1;
            }
            // A throttled group holds the task; nothing above sees it (6.18:
            // a throttled group stays queued, so the walk goes on).
            if self.cfs_rq_throttled(q) && !self.profile.task_based_throttle {
                return;
            }
            flags = ENQUEUE_WAKEUP;
            se = self.cfs(q).se;
        }
        while let Some(e) = se {
            let q = self.cfs_rq_of(e);
            slice = self.update_ancestor(q, e, slice, counts, true);
            if self.cfs(q).idle {
                counts.idle = 1;
            }
            if self.cfs_rq_throttled(q) && !self.profile.task_based_throttle {
                return;
            }
            se = self.cfs(q).se;
        }
        self.add_nr_running(cpu, 1);
        // A new task's first utilisation is a guess (half the spare
        // capacity): it does not mark the CPU overutilized.
        if !task_new {
            self.check_update_overutilized_status(cpu);
        }
    }

    /// `dequeue_entities()`: returns -1 when the task was left delayed, 1 when
    /// it left the runqueue. The walk stops at the first level that keeps
    /// other entities (its group stays queued, biased to be picked again when
    /// the task slept) or that delays its group entity; the levels above only
    /// have their counts, shares and slices updated. A completed delayed
    /// dequeue also blocks the task. `e` may be a group entity (a delayed
    /// one picked), which carries no task counts.
    pub(crate) fn dequeue_entities(&mut self, cpu: usize, e: TaskId, flags: u32) -> i32 {
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let task_delayed = flags & DEQUEUE_DELAYED != 0;
        let task = self.entity_is_task(e).then_some(e);
        let mut counts = HCounts { queued: 0, delayed: 0, idle: 0 };
        if let Some(p) = task {
            counts.queued = 1;
            counts.idle = (self.tasks[p as usize].policy == Policy::Idle) as u32;
            if !task_sleep && !task_delayed {
                counts.delayed = self.tasks[p as usize].se.sched_delayed as u32;
            }
        }
        let (mut flags, mut slice) = (flags, 0);
        let mut se = Some(e);
        while let Some(s) = se {
            let q = self.cfs_rq_of(s);
            if !self.dequeue_entity(q, s, flags) {
                if task == Some(s) {
                    return -1;
                }
                slice = self.cfs_rq_min_slice(q);
                break;
            }
            self.h_counts(q, counts, false);
            if self.cfs(q).idle {
                counts.idle = counts.queued;
            }
            if self.cfs_rq_throttled(q) && !self.profile.task_based_throttle {
                return self.dequeue_throttled(cpu, task.filter(|_| task_delayed));
            }
            if self.cfs(q).load_weight != 0 {
                slice = self.cfs_rq_min_slice(q);
                se = self.cfs(q).se;
                if let Some(parent) = se.filter(|_| task_sleep && !self.throttled_hierarchy(q)) {
                    self.set_next_buddy(parent);
                }
                break;
            }
            flags |= DEQUEUE_SLEEP;
            flags &= !(DEQUEUE_DELAYED | DEQUEUE_SPECIAL);
            se = self.cfs(q).se;
        }
        while let Some(s) = se {
            let q = self.cfs_rq_of(s);
            slice = self.update_ancestor(q, s, slice, counts, false);
            if self.cfs(q).idle {
                counts.idle = counts.queued;
            }
            if self.cfs_rq_throttled(q) && !self.profile.task_based_throttle {
                return self.dequeue_throttled(cpu, task.filter(|_| task_delayed));
            }
            se = self.cfs(q).se;
        }
        self.touched.cpu(cpu);
        self.rqs[cpu].nr_running -= counts.queued;
        if let Some(p) = task.filter(|_| task_delayed) {
            debug_assert!(task_sleep);
            self.__block_task(cpu, p);
        }
        1
    }

    /// The second walk of `enqueue_task_fair()`/`dequeue_entities()`: a
    /// queued ancestor `e` on `q` gets its load and runnable count brought
    /// up to date, its share recomputed, the slice from below, and the task's
    /// counts. Returns the slice for the level above.
    fn update_ancestor(&mut self, q: CfsRqId, e: TaskId, slice: u64, counts: HCounts, add: bool) -> u64 {
        self.update_load_avg(q, e, UPDATE_TG);
        self.se_update_runnable(e);
        self.update_cfs_group(e);
        self.set_group_slice(q, e, slice);
        let slice = self.cfs_rq_min_slice(q);
        self.h_counts(q, counts, add);
        slice
    }

    /// `dequeue_entities()` stopping at a throttled cfs_rq (returns 0): the
    /// task was never counted above it; a delayed one still blocks.
    fn dequeue_throttled(&mut self, cpu: usize, delayed_task: Option<TaskId>) -> i32 {
        if let Some(p) = delayed_task {
            self.__block_task(cpu, p);
        }
        0
    }

    /// `dequeue_task_fair()`: false when the task stayed queued as delayed.
    pub(crate) fn dequeue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        if self.tasks[t as usize].throttled {
            self.dequeue_throttled_task(t);
            return true;
        }
        self.dequeue_entities(cpu, t, flags) >= 0
    }

    /// `check_preempt_wakeup_fair()`: should wakee `p` preempt the running
    /// fair task? The two are compared where their ancestors are siblings
    /// (`find_matching_se()`). Mainline (≥7.0) reschedules lazily under preempt=lazy.
    pub(crate) fn check_preempt_wakeup_fair(&mut self, cpu: usize, p: TaskId, wake_flags: u32) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        if curr == p {
            return;
        }
        if self.throttled_hierarchy(self.cfs_rq_of(p)) {
            return;
        }
        let (curr_pid, wakee_pid) = (self.tasks[curr as usize].pid, self.tasks[p as usize].pid);
        let verdict = |k: &mut Kernel, preempt: bool, reason: PreemptReason| {
            k.emit(cpu, EventKind::WakeupPreempt { wakee: wakee_pid, curr: curr_pid, preempt, reason });
        };
        if self.feat(Feature::NEXT_BUDDY) && wake_flags & WF_FORK == 0 && !self.tasks[p as usize].se.sched_delayed {
            self.set_next_buddy(p);
        }
        if self.rqs[cpu].need_resched {
            return verdict(self, false, PreemptReason::AlreadyResched);
        }
        if !self.feat(Feature::WAKEUP_PREEMPTION) {
            return verdict(self, false, PreemptReason::Disabled);
        }
        let (se, pse) = self.find_matching_se(curr, p);
        let cse_idle = self.se_is_idle(se);
        let pse_idle = self.se_is_idle(pse);
        let lazy = self.profile.lazy_wakeup_preempt;
        if cse_idle && !pse_idle {
            self.cancel_protect_slice(se);
            verdict(self, true, PreemptReason::CurrIdlePolicy);
            return self.resched_curr_maybe_lazy(cpu, lazy);
        }
        if cse_idle != pse_idle {
            return verdict(self, false, PreemptReason::WakeeBatchOrIdle);
        }
        if !self.tasks[p as usize].policy.is_normal() {
            return verdict(self, false, PreemptReason::WakeeBatchOrIdle);
        }
        let q = self.cfs_rq_of(se);
        self.update_curr(q);
        let short = self.do_preempt_short(q, pse, se);
        if short {
            self.cancel_protect_slice(se);
        }
        if self.pick_eevdf(q) == Some(pse) {
            verdict(self, true, if short { PreemptReason::Short } else { PreemptReason::Pick });
            return self.resched_curr_maybe_lazy(cpu, lazy);
        }
        if self.feat(Feature::RUN_TO_PARITY) {
            self.update_protect_slice(q, se);
        }
        verdict(self, false, PreemptReason::NotPicked)
    }

    /// `pick_task_fair()`: pick at the root, then down each picked group's
    /// cfs_rq. With the mainline profile's task-based throttling a
    /// throttled level is descended too, and the task comes back marked
    /// (true) for `task_throttle_setup_work()`.
    fn pick_task_fair(&mut self, cpu: usize) -> Option<(TaskId, bool)> {
        'again: loop {
            if self.rqs[cpu].cfs.nr_running == 0 {
                return None;
            }
            let mut q = cpu;
            let mut throttled = false;
            loop {
                if self.cfs_curr_on_rq(q).is_some() {
                    self.update_curr(q);
                }
                if self.check_cfs_rq_runtime(q) {
                    if !self.profile.task_based_throttle {
                        continue 'again;
                    }
                    throttled = true;
                }
                let Some(se) = self.pick_next_entity(q) else { continue 'again };
                match self.tasks[se as usize].my_q {
                    Some(gq) => q = gq,
                    None => return Some((se, throttled)),
                }
            }
        }
    }

    /// `pick_next_task_fair()` for a fair or idle `prev`, with newidle
    /// balancing when nothing is queued. Performs put_prev/set_next when
    /// switching: from a fair prev only up to the level the two tasks share.
    pub(crate) fn pick_next_task_fair(&mut self, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
        let p = loop {
            if let Some((p, throttled)) = self.pick_task_fair(cpu) {
                // It would run only until its return to user space.
                if throttled && self.throttle_cfs_rq_work(cpu, p) {
                    continue;
                }
                break p;
            }
            // Nothing to run: newidle balancing may pull work, then pick again.
            if self.sched_balance_newidle(cpu) <= 0 {
                return None;
            }
        };
        let prev_fair = prev.filter(|&x| self.cfs(self.cfs_rq_of(x)).curr == Some(x));
        if prev_fair != Some(p) {
            match prev_fair {
                Some(prev) => self.put_prev_set_next_entities(prev, p),
                None => self.set_next_entities(p),
            }
            self.__set_next_task_fair(cpu, p);
        }
        Some(p)
    }

    /// The FAIR_GROUP_SCHED part of `pick_next_task_fair()`: put `prev`'s
    /// entities and set `next`'s level by level until they meet.
    fn put_prev_set_next_entities(&mut self, prev: TaskId, next: TaskId) {
        let (mut pse, mut se) = (prev, next);
        loop {
            let q = self.cfs_rq_of(se);
            if q == self.cfs_rq_of(pse) {
                self.put_prev_entity(q, pse);
                self.set_next_entity(q, se);
                return;
            }
            let (sd, pd) = (self.se_depth(se), self.se_depth(pse));
            if sd <= pd {
                self.put_prev_entity(self.cfs_rq_of(pse), pse);
                pse = self.parent_entity(pse).expect("prev is below a common root");
            }
            if sd >= pd {
                self.set_next_entity(q, se);
                se = self.parent_entity(se).expect("next is below a common root");
            }
        }
    }

    /// `set_next_task_fair()`'s walk: every level of `p` becomes curr (and
    /// makes sure its cfs_rq has a bandwidth slice).
    fn set_next_entities(&mut self, p: TaskId) {
        let mut se = Some(p);
        while let Some(s) = se {
            let q = self.cfs_rq_of(s);
            self.set_next_entity(q, s);
            self.account_cfs_rq_runtime(q, 0);
            se = self.cfs(q).se;
        }
    }

    /// `set_next_task_fair(rq, p, first = false)` for a running task that
    /// (re)enters the fair class, e.g. when a PI boost ends.
    pub(crate) fn set_next_task_fair_running(&mut self, _cpu: usize, p: TaskId) {
        self.set_next_entities(p);
    }

    /// `__set_next_task_fair(rq, p, first = true)`: most-recently-picked to
    /// the head of cfs_tasks, and the misfit state of the new current task.
    fn __set_next_task_fair(&mut self, cpu: usize, p: TaskId) {
        let tasks = &mut self.rqs[cpu].cfs.tasks;
        if let Some(i) = tasks.iter().position(|&x| x == p) {
            tasks.remove(i);
            tasks.insert(0, p);
        }
        self.update_misfit_status(Some(p), cpu);
    }

    /// `put_prev_task_fair()`: every level of `prev` puts its entity back.
    pub(crate) fn put_prev_task_fair(&mut self, _cpu: usize, prev: TaskId) {
        if self.cfs(self.cfs_rq_of(prev)).curr != Some(prev) {
            return;
        }
        let mut se = Some(prev);
        while let Some(s) = se {
            let q = self.cfs_rq_of(s);
            self.put_prev_entity(q, s);
            se = self.cfs(q).se;
        }
    }

    /// `prio_changed_fair()`: a queued task that is not running may now
    /// preempt; the running task whose priority dropped reschedules.
    pub(crate) fn prio_changed_fair(&mut self, cpu: usize, p: TaskId, oldprio: i32) {
        if !self.task_on_rq_queued(p) || self.rqs[cpu].cfs.nr_running == 1 {
            return;
        }
        if self.rqs[cpu].curr == Some(p) {
            if self.tasks[p as usize].prio > oldprio {
                self.resched_curr(cpu);
            }
        } else {
            self.wakeup_preempt(cpu, p, 0);
        }
    }

    /// `switched_to_fair()`: a task that came from RT (a deboost, a
    /// `sched_setscheduler()`) reschedules its CPU if it runs, or may
    /// preempt the running task if it is queued. Simplified: the PELT
    /// detach/attach around class changes is not modeled (the task's
    /// averages stay on the cfs_rq).
    pub(crate) fn switched_to_fair(&mut self, cpu: usize, p: TaskId) {
        if !self.task_on_rq_queued(p) {
            return;
        }
        if self.rqs[cpu].curr == Some(p) {
            self.resched_curr(cpu);
        } else {
            self.wakeup_preempt(cpu, p, 0);
        }
    }

    /// `yield_task_fair()`: an eligible task forfeits the rest of its request.
    pub(crate) fn yield_task_fair(&mut self, cpu: usize) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        if self.rqs[cpu].nr_running == 1 {
            return;
        }
        let q = self.cfs_rq_of(curr);
        self.clear_buddies(q, curr);
        self.update_curr(q);
        if self.entity_eligible(q, curr) {
            let se = &mut self.tasks[curr as usize].se;
            se.vruntime = se.deadline;
            self.update_deadline(q, curr);
        }
    }

    /// `task_tick_fair()` → `entity_tick()` at every level, the task's first:
    /// account, age the averages, re-weight the group entities.
    pub(crate) fn task_tick_fair(&mut self, cpu: usize) {
        let mut leaf = self.rqs[cpu].cfs.curr;
        while let Some(gq) = leaf.and_then(|e| self.tasks[e as usize].my_q) {
            match self.cfs(gq).curr {
                Some(c) => leaf = Some(c),
                None => break,
            }
        }
        match leaf {
            None => self.update_curr(cpu),
            Some(t) => {
                let mut se = Some(t);
                while let Some(s) = se {
                    let q = self.cfs_rq_of(s);
                    self.update_curr(q);
                    self.entity_load_avg(s, UPDATE_TG);
                    self.update_cfs_group(s);
                    se = self.cfs(q).se;
                }
            }
        }
        if let Some(curr) = self.rqs[cpu].curr {
            self.update_misfit_status(Some(curr), cpu);
            self.check_update_overutilized_status(cpu);
        }
        self.tick_update_idle_cpu_scan(cpu);
    }

    /// Whether `t` is queued on `cpu`'s cfs_rq as the kernel would see it.
    pub fn task_on_rq_queued(&self, t: TaskId) -> bool {
        self.tasks[t as usize].on_rq == OnRq::Queued
    }
}
