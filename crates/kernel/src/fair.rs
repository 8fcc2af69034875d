//! The EEVDF fair class (`kernel/sched/fair.c`).
//!
//! Functions keep the kernel's names and order of effects. Simplified: one
//! root cfs_rq per CPU (no group entities, so the `for_each_sched_entity`
//! walks are one step), no util_est, no CFS bandwidth. Follows 6.12.x;
//! where other versions differ, [`crate::profile::Profile`] says so and the
//! function's doc names the version.
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
use crate::sched::{qflags::*, wflags::*, OnRq, Policy, TaskId};
use schedlab_trace::{DelayedWhat, EventKind, PreemptReason};

mod eevdf;
pub mod lb;
pub mod nohz;
pub mod pelt;
pub mod select;
pub mod timeline;

pub use eevdf::{calc_delta, calc_delta_fair};

impl Kernel {
    /// `update_curr_se()`: move `t`'s `exec_start` up to the rq clock and add
    /// the time since to `sum_exec_runtime`. `None` when the clock has not
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

    /// `update_curr_task()`: the `sched_stat_runtime` trace of a charge.
    /// Simplified: no cgroup or thread-group CPU time accounting.
    fn update_curr_task(&mut self, cpu: usize, t: TaskId, delta: u64) {
        let pid = self.tasks[t as usize].pid;
        self.emit(cpu, EventKind::SchedStatRuntime { pid, runtime: delta });
    }

    /// `update_curr_common()`: the runtime accounting every class shares,
    /// used as is by the RT class (6.12.x; 6.14 renames it `update_se()`).
    pub(crate) fn update_curr_common(&mut self, cpu: usize, t: TaskId) {
        if let Some(delta) = self.update_curr_se(cpu, t) {
            self.update_curr_task(cpu, t, delta);
        }
    }

    /// `update_curr()`: charge the running entity for the time since
    /// `exec_start` (`update_curr_se()`), then its virtual time, deadline and
    /// the fair server; slice expiry reschedules lazily where the profile has
    /// lazy preemption (≥6.13). The model charges the fair server before the
    /// `sched_stat_runtime` trace; the kernel traces first.
    pub(crate) fn update_curr(&mut self, cpu: usize) {
        let Some(curr) = self.rqs[cpu].cfs.curr else { return };
        let Some(delta) = self.update_curr_se(cpu, curr) else { return };
        let se = &mut self.tasks[curr as usize].se;
        se.vruntime += calc_delta_fair(delta, se.load) as i64;
        let resched = self.update_deadline(cpu, curr);
        self.dl_server_update(cpu, delta);
        self.update_curr_task(cpu, curr, delta);
        if self.rqs[cpu].cfs.nr_running == 1 {
            return;
        }
        if resched || self.did_preempt_short(cpu, curr) {
            // ≥6.13 charges slice expiry lazily when the lazy model is in use.
            self.resched_curr_maybe_lazy(cpu, self.profile.has_lazy_preempt);
            self.clear_buddies(cpu, curr);
        }
    }

    /// `clear_buddies()`: the next buddy is the only one left (6.12 dropped
    /// `last` and `skip`).
    fn clear_buddies(&mut self, cpu: usize, t: TaskId) {
        if self.rqs[cpu].cfs.next == Some(t) {
            self.rqs[cpu].cfs.next = None;
        }
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
    pub(crate) fn enqueue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) {
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
    pub(crate) fn dequeue_entities(&mut self, cpu: usize, t: TaskId, flags: u32) -> i32 {
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
    pub(crate) fn dequeue_task_fair(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        self.dequeue_entities(cpu, t, flags) >= 0
    }

    /// `check_preempt_wakeup_fair()`: should wakee `p` preempt the running
    /// fair task? Mainline (≥7.0) reschedules lazily under preempt=lazy.
    /// Simplified: no group entities to walk (`find_matching_se()`).
    pub(crate) fn check_preempt_wakeup_fair(&mut self, cpu: usize, p: TaskId, wake_flags: u32) {
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
    pub(crate) fn pick_next_task_fair(&mut self, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
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
    pub(crate) fn put_prev_task_fair(&mut self, cpu: usize, prev: TaskId) {
        if self.rqs[cpu].cfs.curr == Some(prev) {
            self.put_prev_entity(cpu, prev);
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
        self.clear_buddies(cpu, curr);
        self.update_curr(cpu);
        if self.entity_eligible(cpu, curr) {
            let se = &mut self.tasks[curr as usize].se;
            se.vruntime = se.deadline;
            self.update_deadline(cpu, curr);
        }
    }

    /// `task_tick_fair()` → `entity_tick()`: account and maybe reschedule.
    pub(crate) fn task_tick_fair(&mut self, cpu: usize) {
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
