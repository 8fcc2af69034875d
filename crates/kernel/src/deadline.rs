//! The deadline class (`kernel/sched/deadline.c`): SCHED_DEADLINE tasks
//! under the constant bandwidth server (CBS) and global EDF, and the fair
//! server, the class's other entity (submodule [`server`]).
//!
//! Follows 6.12.x. A task has a reservation (`dl_runtime` every
//! `dl_period`, to be used by `dl_deadline` after each period starts):
//! * **CBS.** Running consumes `runtime`; at zero the task is throttled
//!   and leaves the runqueue until the replenishment timer fires at its
//!   next period (`update_curr_dl()` → `start_dl_timer()` →
//!   `dl_task_timer()` → `replenish_dl_entity()`, which moves the deadline
//!   a period on per runtime refill).
//! * **The wakeup rule** (`update_dl_entity()`): a task waking after its
//!   deadline, or whose runtime left would exceed its bandwidth over the
//!   time to its deadline (`dl_entity_overflow()`), gets a new period from
//!   now; a constrained task (`dl_deadline < dl_period`) inside its deadline
//!   keeps it with the runtime cut to its density times the laxity
//!   (`update_dl_revised_wakeup()`), and one woken between its deadline and
//!   its next period waits throttled for that period (`dl_check_constrained_dl()`).
//! * **EDF**: each CPU runs its earliest deadline (the fair server
//!   competes by its own deadline); across CPUs, wakeup placement
//!   (`select_task_rq_dl()` → `find_later_rq()` over [`cpudl`]), push of
//!   the earliest waiting task to a CPU with a later deadline
//!   (`push_dl_task()`) and pull by a CPU whose deadline got later
//!   (`pull_dl_task()`).
//! * **Admission** ([`admission`]): `sched_setattr()`'s parameter checks
//!   (`__checkparam_dl()`, EINVAL), the affinity rule (EPERM) and the root
//!   domain's bandwidth (`sched_dl_overflow()`, EBUSY).
//! * **GRUB** ([`grub`]): each runqueue's `running_bw`/`this_bw`/`extra_bw`,
//!   the inactive timer at a blocked task's 0-lag time, and the reclaiming
//!   charge of a SCHED_FLAG_RECLAIM task (`grub_reclaim()`).
//!
//! Simplified: no SCHED_FLAG_DL_OVERRUN signal (the workload has no
//! signals), no capacity-aware placement (asymmetric CPUs); the runtime of
//! a task that does not reclaim is charged in wall nanoseconds scaled by
//! the CPU's capacity (`dl_scaled_delta_exec()` at the maximum frequency). Deadlines are kept in the model's time
//! (`Kernel::now`), as the fair server's are, since the hrtimers are the
//! simulator's. Equal deadlines keep their queueing order (the rb-tree's).

mod admission;
mod cpudl;
mod grub;
mod server;

pub use admission::{DlAdmissionError, DlBandwidth};
pub use grub::{grub_reclaim, BW_RATIO, MAX_BW, RATIO_SHIFT, SCHED_FLAG_RECLAIM};
pub use server::*;

use crate::core::{Kernel, Outbox};
use crate::sched::class::SchedClass;
use crate::sched::{qflags::*, wflags::*, OnRq, TaskId};
use std::collections::BTreeSet;

/// `MAX_DL_PRIO`: a deadline task's priority is `MAX_DL_PRIO - 1`.
pub const MAX_DL_PRIO: i32 = 0;
/// `DL_SCALE`: `dl_entity_overflow()` compares in ~1 us units.
const DL_SCALE: u32 = 10;
/// `BW_SHIFT`: bandwidths are fixed point with 20 fractional bits.
pub const BW_SHIFT: u32 = 20;
/// `BW_UNIT`: a bandwidth of one whole CPU.
pub const BW_UNIT: u64 = 1 << BW_SHIFT;

/// `to_ratio(period, runtime)`: `runtime / period` in BW_SHIFT fixed point.
pub fn to_ratio(period: u64, runtime: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    ((runtime as u128) << BW_SHIFT).checked_div(period as u128).unwrap_or(0).min(u64::MAX as u128) as u64
}

/// `sched_attr`'s deadline fields, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlParams {
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
    /// `sched_flags` has SCHED_FLAG_RECLAIM: GRUB charges it ([`grub`]).
    pub reclaim: bool,
}

/// `struct sched_dl_entity` of a task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlEntity {
    /// The reservation: `dl_runtime`, `dl_deadline`, `dl_period` (ns).
    pub dl_runtime: u64,
    pub dl_deadline: u64,
    pub dl_period: u64,
    /// `dl_bw` = runtime/period and `dl_density` = runtime/deadline (BW_SHIFT).
    pub dl_bw: u64,
    pub dl_density: u64,
    /// Runtime left in this period (negative after an overrun).
    pub runtime: i64,
    /// Absolute deadline of this period (0: never set up).
    pub deadline: u64,
    /// `dl_throttled`: out of runtime, waiting for the replenishment timer.
    pub throttled: bool,
    /// `dl_yielded`: gave up the rest of this period's runtime.
    pub yielded: bool,
    /// On its CPU's deadline runqueue (`on_dl_rq()`).
    pub on_dl_rq: bool,
    /// Expiry of the pending replenishment timer.
    pub timer_at: Option<u64>,
    /// `pi_se`: whose reservation this entity runs with while boosted by a
    /// deadline waiter (deadline inheritance); `None`: its own.
    pub pi_se: Option<TaskId>,
    /// SCHED_FLAG_RECLAIM in `flags`: charged by `grub_reclaim()`.
    pub reclaim: bool,
    /// `dl_non_contending`: blocked before its 0-lag time, its bandwidth
    /// still active (in `running_bw`) until the inactive timer.
    pub non_contending: bool,
    /// Expiry of the pending inactive timer (`inactive_timer`).
    pub inactive_timer_at: Option<u64>,
    /// Queueing order, to keep equal deadlines in FIFO order.
    seq: u64,
}

impl DlEntity {
    /// `__setparam_dl()`: the reservation of `p`, no period started yet.
    pub fn new(p: DlParams) -> Self {
        let period = if p.period == 0 { p.deadline } else { p.period };
        DlEntity {
            dl_runtime: p.runtime,
            dl_deadline: p.deadline,
            dl_period: period,
            dl_bw: to_ratio(period, p.runtime),
            dl_density: to_ratio(p.deadline, p.runtime),
            reclaim: p.reclaim,
            ..Default::default()
        }
    }

    /// `dl_is_implicit()`: the relative deadline is the period.
    fn is_implicit(&self) -> bool {
        self.dl_deadline == self.dl_period
    }

    /// `dl_entity_overflow()`: would the runtime left, used up by the
    /// deadline, exceed the reserved bandwidth (runtime/dl_deadline of `pi`,
    /// the reservation in force)? In DL_SCALE units, as the kernel compares
    /// (to stay in 64 bits).
    fn overflow(&self, pi: &DlEntity, t: u64) -> bool {
        let left = (pi.dl_deadline >> DL_SCALE) as u128 * ((self.runtime.max(0) as u64) >> DL_SCALE) as u128;
        let right = (self.deadline.saturating_sub(t) >> DL_SCALE) as u128 * (pi.dl_runtime >> DL_SCALE) as u128;
        right < left
    }

    /// `replenish_dl_new_period()` under reservation `pi`.
    fn new_period(&mut self, pi: &DlEntity, now: u64) {
        self.deadline = now + pi.dl_deadline;
        self.runtime = pi.dl_runtime as i64;
    }

    /// `dl_next_period()`: the start of the next period.
    fn next_period(&self) -> u64 {
        self.deadline.saturating_sub(self.dl_deadline) + self.dl_period
    }
}

/// `struct dl_rq`: the CPU's deadline tasks by deadline, and those that may
/// be pushed elsewhere.
#[derive(Clone, Debug, Default)]
pub struct DlRq {
    /// `root`: queued tasks by (deadline, queueing order).
    pub queue: BTreeSet<(u64, u64, TaskId)>,
    /// `pushable_dl_tasks_root`: queued, not running, may move.
    pub pushable: BTreeSet<(u64, u64, TaskId)>,
    pub dl_nr_running: u32,
    /// A push, a pull is queued as a balance callback.
    pub push_callback: bool,
    pub pull_callback: bool,
    /// GRUB's sums ([`grub`], BW_SHIFT fixed point): the active bandwidth,
    /// the bandwidth assigned to this CPU, and what nobody reserved
    /// (`max_bw` less the root domain's reservations per CPU).
    pub running_bw: u64,
    pub this_bw: u64,
    pub extra_bw: u64,
    next_seq: u64,
}

impl DlRq {
    /// `earliest_dl.curr`: the earliest queued deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.queue.first().map(|e| e.0)
    }

    /// `overloaded`: it has pushable tasks (in the root domain's `dlo_mask`).
    pub fn overloaded(&self) -> bool {
        !self.pushable.is_empty()
    }

    /// `earliest_dl.next`: the earliest pushable deadline.
    pub fn earliest_pushable(&self) -> Option<u64> {
        self.pushable.first().map(|e| e.0)
    }
}

/// `dl_time_before(a, b)`: `a` is earlier, wrap-safe.
pub(crate) fn dl_time_before(a: u64, b: u64) -> bool {
    (a as i64).wrapping_sub(b as i64) < 0
}

impl Kernel {
    fn dl(&self, p: TaskId) -> &DlEntity {
        &self.tasks[p as usize].dl
    }

    fn dl_mut(&mut self, p: TaskId) -> &mut DlEntity {
        &mut self.tasks[p as usize].dl
    }

    /// `pi_of()`: the entity whose reservation (`dl_runtime`,
    /// `dl_deadline`, `dl_period`) `p` runs with: its donor's while boosted.
    fn pi_of(&self, p: TaskId) -> DlEntity {
        let dl = self.dl(p);
        *dl.pi_se.map_or(dl, |d| self.dl(d))
    }

    /// `is_dl_boosted()`.
    fn is_dl_boosted(&self, p: TaskId) -> bool {
        self.dl(p).pi_se.is_some()
    }

    /// `dl_task(rq->curr)`: the deadline of the CPU's running deadline task.
    fn curr_dl_deadline(&self, cpu: usize) -> Option<u64> {
        let c = self.rqs[cpu].curr?;
        (self.class_of(c) == SchedClass::Dl).then(|| self.dl(c).deadline)
    }

    /// `dl_entity_preempt(p, curr)` for `cpu`'s running task: true when
    /// nothing of the deadline class runs there or `p`'s deadline is earlier.
    pub(crate) fn dl_preempts_curr(&self, cpu: usize, deadline: u64) -> bool {
        self.curr_dl_deadline(cpu).is_none_or(|d| dl_time_before(deadline, d))
    }

    /// `dl_task_is_earliest_deadline()`: `p` would be the first on `cpu`.
    fn dl_is_earliest_on(&self, p: TaskId, cpu: usize) -> bool {
        self.rqs[cpu].dl.earliest().is_none_or(|e| dl_time_before(self.dl(p).deadline, e))
    }

    // ---- enqueue / dequeue ----

    /// `enqueue_task_dl()` → `enqueue_dl_entity()`: a waking task's period
    /// by the wakeup rule, a replenished one's from the timer; a throttled
    /// task stays off the queue (its timer will enqueue it).
    pub(crate) fn enqueue_task_dl(&mut self, cpu: usize, p: TaskId, flags: u32) {
        let now = self.now;
        if self.is_dl_boosted(p) {
            // A boosted task is never throttled: its donor's reservation is
            // replenished at once.
            let dl = self.dl_mut(p);
            dl.throttled = false;
            dl.timer_at = None;
        } else if self.tasks[p as usize].normal_prio >= MAX_DL_PRIO {
            // Being deboosted while out of runtime: no point replenishing a
            // task about to leave the class.
            self.dl_mut(p).throttled = false;
            return;
        }
        let mut flags = flags;
        if self.tasks[p as usize].on_rq == OnRq::Migrating {
            flags |= ENQUEUE_MIGRATING;
        }
        if !self.dl(p).throttled && !self.dl(p).is_implicit() {
            self.dl_check_constrained_dl(p);
        }
        self.dl_enqueue_bw(cpu, p, flags);
        // Throttled, it waits for its timer off the queue (its bandwidth is
        // active all the same).
        if self.dl(p).throttled && flags & ENQUEUE_REPLENISH == 0 {
            if flags & ENQUEUE_WAKEUP != 0 {
                self.task_contending(p, flags);
            }
            return;
        }
        let pi = self.pi_of(p);
        let boosted = self.is_dl_boosted(p);
        if flags & ENQUEUE_WAKEUP != 0 {
            self.task_contending(p, flags);
            // update_dl_entity()
            let dl = self.dl_mut(p);
            if dl_time_before(dl.deadline, now) || dl.overflow(&pi, now) {
                if !dl.is_implicit() && !dl_time_before(dl.deadline, now) && !boosted {
                    let laxity = dl.deadline - now;
                    dl.runtime = ((dl.dl_density as u128 * laxity as u128) >> BW_SHIFT) as i64;
                } else {
                    dl.new_period(&pi, now);
                }
            }
        } else if flags & ENQUEUE_REPLENISH != 0 {
            self.replenish_dl_entity(p);
        } else if flags & ENQUEUE_RESTORE != 0 && !boosted && dl_time_before(self.dl(p).deadline, now) {
            self.dl_mut(p).new_period(&pi, now);
        }
        if self.dl(p).throttled {
            if self.start_dl_task_timer(p) {
                return;
            }
            self.dl_mut(p).throttled = false;
        }
        self.__enqueue_dl_entity(cpu, p);
        if self.rqs[cpu].curr != Some(p) && self.tasks[p as usize].nr_cpus_allowed() > 1 {
            self.enqueue_pushable_dl_task(cpu, p);
        }
    }

    /// `setup_new_dl_entity()` of a task about to start as SCHED_DEADLINE
    /// (the model's threads get their policy before they first run, as
    /// `sched_setattr()` on a just-created thread would give it): its first
    /// period starts now, before its placement compares deadlines.
    pub(crate) fn setup_new_dl_entity(&mut self, p: TaskId) {
        if self.tasks[p as usize].policy == crate::sched::Policy::Deadline && self.dl(p).deadline == 0 {
            let (now, pi) = (self.now, self.pi_of(p));
            self.dl_mut(p).new_period(&pi, now);
        }
    }

    /// `dl_check_constrained_dl()`: a constrained task woken after its
    /// deadline but before its next period waits for that period, throttled.
    fn dl_check_constrained_dl(&mut self, p: TaskId) {
        let now = self.now;
        let dl = *self.dl(p);
        if dl.is_implicit()
            || dl.deadline == 0
            || self.is_dl_boosted(p)
            || !dl_time_before(dl.deadline, now)
            || !dl_time_before(now, dl.next_period())
        {
            return;
        }
        if !self.start_dl_task_timer(p) {
            return;
        }
        let dl = self.dl_mut(p);
        dl.throttled = true;
        if dl.runtime > 0 {
            dl.runtime = 0;
        }
    }

    fn __enqueue_dl_entity(&mut self, cpu: usize, p: TaskId) {
        let rq = &mut self.rqs[cpu].dl;
        let seq = rq.next_seq;
        rq.next_seq += 1;
        let dl = &mut self.tasks[p as usize].dl;
        dl.seq = seq;
        dl.on_dl_rq = true;
        rq.queue.insert((dl.deadline, seq, p));
        rq.dl_nr_running += 1;
        self.add_nr_running(cpu, 1);
    }

    fn __dequeue_dl_entity(&mut self, cpu: usize, p: TaskId) {
        let dl = &mut self.tasks[p as usize].dl;
        if !dl.on_dl_rq {
            return;
        }
        dl.on_dl_rq = false;
        let key = (dl.deadline, dl.seq, p);
        let rq = &mut self.rqs[cpu];
        rq.dl.queue.remove(&key);
        rq.dl.dl_nr_running -= 1;
        rq.nr_running -= 1;
    }

    /// `dequeue_task_dl()` → `dequeue_dl_entity()`. A throttled task is
    /// already off its queue (and, as in the kernel, out of `nr_running`,
    /// though still `on_rq`); its bandwidth moves as the flags say.
    pub(crate) fn dequeue_task_dl(&mut self, cpu: usize, p: TaskId, flags: u32) {
        self.update_curr_dl(cpu);
        let mut flags = flags;
        if self.tasks[p as usize].on_rq == OnRq::Migrating {
            flags |= DEQUEUE_MIGRATING;
        }
        self.__dequeue_dl_entity(cpu, p);
        self.dl_dequeue_bw(cpu, p, flags);
        self.dequeue_pushable_dl_task(cpu, p);
    }

    /// `enqueue_pushable_dl_task()`.
    fn enqueue_pushable_dl_task(&mut self, cpu: usize, p: TaskId) {
        let dl = self.dl(p);
        let key = (dl.deadline, dl.seq, p);
        self.rqs[cpu].dl.pushable.insert(key);
    }

    /// `dequeue_pushable_dl_task()`.
    fn dequeue_pushable_dl_task(&mut self, cpu: usize, p: TaskId) {
        self.rqs[cpu].dl.pushable.retain(|&(_, _, t)| t != p);
    }

    // ---- runtime: CBS ----

    /// `update_curr_dl()`: charge the running deadline task; out of runtime
    /// (or yielded), it is throttled until its next period, or replenished
    /// at once when that is already past.
    pub(crate) fn update_curr_dl(&mut self, cpu: usize) {
        let Some(c) = self.rqs[cpu].curr else { return };
        if self.class_of(c) != SchedClass::Dl {
            return;
        }
        let Some(delta) = self.update_curr_common(cpu, c) else { return };
        let scaled = self.dl_scaled_delta_exec(cpu, c, delta) as i64;
        let dl = self.dl_mut(c);
        dl.runtime -= scaled;
        if dl.runtime > 0 && !dl.yielded {
            return;
        }
        dl.throttled = true;
        self.__dequeue_dl_entity(cpu, c);
        self.dequeue_pushable_dl_task(cpu, c);
        if self.is_dl_boosted(c) || !self.start_dl_task_timer(c) {
            self.enqueue_task_dl(cpu, c, ENQUEUE_REPLENISH);
        }
        if self.rqs[cpu].dl.queue.first().is_none_or(|&(_, _, t)| t != c) {
            self.resched_curr(cpu);
        }
    }

    /// `replenish_dl_entity()`: refill the runtime a period at a time; a
    /// task lagging past its deadline even so starts a period from now.
    fn replenish_dl_entity(&mut self, p: TaskId) {
        let (now, pi) = (self.now, self.pi_of(p));
        let dl = self.dl_mut(p);
        // A task boosted from below the class has no reservation of its
        // own (`dl_deadline` 0): each replenishment is a period from now.
        if dl.dl_deadline == 0 {
            dl.new_period(&pi, now);
        }
        if dl.yielded && dl.runtime > 0 {
            dl.runtime = 0;
        }
        while dl.runtime <= 0 {
            dl.deadline += pi.dl_period;
            dl.runtime += pi.dl_runtime as i64;
        }
        if dl_time_before(dl.deadline, now) {
            dl.new_period(&pi, now);
        }
        dl.yielded = false;
        dl.throttled = false;
    }

    /// `start_dl_timer()`: arm the replenishment timer at the next period;
    /// false when that instant has passed.
    fn start_dl_task_timer(&mut self, p: TaskId) -> bool {
        let at = self.dl(p).next_period();
        if !dl_time_before(self.now, at) {
            return false;
        }
        if self.dl(p).timer_at == Some(at) {
            return true;
        }
        self.dl_mut(p).timer_at = Some(at);
        let cpu = self.tasks[p as usize].cpu;
        self.request_timer(TimerRequest { cpu, at, what: TimerKind::DlTask(p) });
        true
    }

    /// `dl_task_timer()`: the replenishment instant of `p`. A sleeping task
    /// is only replenished; a queued one goes back on its runqueue and
    /// preempts by deadline; then the CPU pushes what it cannot run.
    pub(crate) fn dl_task_timer(&mut self, p: TaskId) {
        let now = self.now;
        if self.dl(p).timer_at.is_none_or(|at| at > now) {
            return;
        }
        self.dl_mut(p).timer_at = None;
        if self.class_of(p) != SchedClass::Dl || !self.dl(p).throttled {
            return;
        }
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        if self.tasks[p as usize].on_rq != OnRq::Queued {
            self.replenish_dl_entity(p);
            return;
        }
        self.enqueue_task_dl(cpu, p, ENQUEUE_REPLENISH);
        if self.curr_dl_deadline(cpu).is_some() {
            self.wakeup_preempt_dl(cpu, p);
        } else {
            self.resched_curr(cpu);
        }
        if self.rqs[cpu].dl.overloaded() {
            self.push_dl_tasks(cpu);
        }
    }

    // ---- pick / put / tick / preempt ----

    /// `pick_task_dl()`'s choice among tasks: the earliest deadline.
    pub(crate) fn pick_task_dl(&self, cpu: usize) -> Option<(TaskId, u64)> {
        self.rqs[cpu].dl.queue.first().map(|&(d, _, t)| (t, d))
    }

    /// `set_next_task_dl()`: the running task is not pushable; a real switch
    /// (`first`) queues a push of the rest.
    pub(crate) fn set_next_task_dl(&mut self, cpu: usize, p: TaskId, first: bool) {
        self.tasks[p as usize].se.exec_start = self.rqs[cpu].clock;
        self.dequeue_pushable_dl_task(cpu, p);
        if !first {
            return;
        }
        // From another class (`rq->curr` is still the previous task): the
        // span since the last update was not DL time.
        if self.class_of_curr(cpu) != SchedClass::Dl {
            self.update_dl_rq_load_avg(cpu, false);
        }
        if self.rqs[cpu].dl.overloaded() {
            self.rqs[cpu].dl.push_callback = true;
        }
    }

    /// `put_prev_task_dl()`: still queued and movable → pushable again.
    pub(crate) fn put_prev_task_dl(&mut self, cpu: usize, p: TaskId) {
        self.update_curr_dl(cpu);
        self.update_dl_rq_load_avg(cpu, true);
        if self.dl(p).on_dl_rq && self.tasks[p as usize].nr_cpus_allowed() > 1 {
            self.enqueue_pushable_dl_task(cpu, p);
        }
    }

    /// `task_tick_dl()`: runtime accounting; the tick's span is DL time.
    pub(crate) fn task_tick_dl(&mut self, cpu: usize) {
        self.update_curr_dl(cpu);
        self.update_dl_rq_load_avg(cpu, true);
    }

    /// `yield_task_dl()`: the rest of this period's runtime is given up.
    pub(crate) fn yield_task_dl(&mut self, cpu: usize) {
        if let Some(c) = self.rqs[cpu].curr {
            self.dl_mut(c).yielded = true;
        }
        self.update_rq_clock(cpu);
        self.update_curr_dl(cpu);
    }

    /// `wakeup_preempt_dl()`: an earlier deadline preempts. Simplified: the
    /// equal-deadline case (`check_preempt_equal_dl()`) does not reschedule.
    pub(crate) fn wakeup_preempt_dl(&mut self, cpu: usize, p: TaskId) {
        if self.dl_preempts_curr(cpu, self.dl(p).deadline) {
            self.resched_curr(cpu);
        }
    }

    // ---- placement ----

    /// `select_task_rq_dl()`: a task woken where an earlier (or pinned)
    /// deadline task runs looks for a CPU with a later deadline.
    pub(crate) fn select_task_rq_dl(&mut self, p: TaskId, cpu: usize, wake_flags: u32) -> usize {
        if wake_flags & (WF_TTWU | WF_FORK) == 0 {
            return cpu;
        }
        let select = self.rqs[cpu].curr.is_some_and(|c| {
            self.class_of(c) == SchedClass::Dl
                && (self.tasks[c as usize].nr_cpus_allowed() < 2
                    || !dl_time_before(self.dl(p).deadline, self.dl(c).deadline))
        }) && self.tasks[p as usize].nr_cpus_allowed() > 1;
        if select {
            if let Some(target) = self.find_later_rq(p) {
                if self.dl_is_earliest_on(p, target) {
                    return target;
                }
            }
        }
        cpu
    }

    /// `task_woken_dl()`: a woken task that will not run here soon is pushed.
    pub(crate) fn task_woken_dl(&mut self, cpu: usize, p: TaskId) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        let push = !self.tasks[p as usize].on_cpu
            && !self.rqs[cpu].need_resched
            && self.tasks[p as usize].nr_cpus_allowed() > 1
            && self.class_of(curr) == SchedClass::Dl
            && (self.tasks[curr as usize].nr_cpus_allowed() < 2
                || !dl_time_before(self.dl(p).deadline, self.dl(curr).deadline));
        if push {
            self.push_dl_tasks(cpu);
        }
    }

    /// `find_later_rq()`: where `p` would run earliest — the task's own CPU
    /// when it qualifies, else the executing CPU or one spread over the
    /// first wake-affine domain holding a candidate.
    fn find_later_rq(&mut self, p: TaskId) -> Option<usize> {
        if self.tasks[p as usize].nr_cpus_allowed() == 1 {
            return None;
        }
        let later = self.cpudl_find(p)?;
        let cpu = self.tasks[p as usize].cpu;
        if later.contains(cpu) {
            return Some(cpu);
        }
        let this_cpu = Some(self.exec_cpu).filter(|c| later.contains(*c));
        for d in 0..self.domains.cpus[cpu].domains.len() {
            let dom = &self.domains.cpus[cpu].domains[d];
            if dom.flags & crate::topology::sd_flags::SD_WAKE_AFFINE != 0 {
                let span = dom.span;
                if let Some(t) = this_cpu.filter(|c| span.contains(*c)) {
                    return Some(t);
                }
                if let Some(best) = self.any_distribute(&later.and(&span)) {
                    return Some(best);
                }
            }
        }
        if let Some(t) = this_cpu {
            return Some(t);
        }
        self.any_distribute(&later)
    }

    // ---- push / pull ----

    /// `push_dl_task()`: move the earliest waiting task to a CPU where it
    /// would run first; reschedule instead when it beats the running task
    /// here and that one can move.
    fn push_dl_task(&mut self, cpu: usize) -> bool {
        let Some(&(deadline, _, next)) = self.rqs[cpu].dl.pushable.first() else { return false };
        if let Some(c) = self.rqs[cpu].curr {
            if self.class_of(c) == SchedClass::Dl
                && dl_time_before(deadline, self.dl(c).deadline)
                && self.tasks[c as usize].nr_cpus_allowed() > 1
            {
                self.resched_curr(cpu);
                return false;
            }
        }
        if self.rqs[cpu].curr == Some(next) {
            return false;
        }
        // find_lock_later_rq(): its retries are for runqueues that change
        // while it takes their locks. With CONFIG_PREEMPTION (PREEMPT_DYNAMIC
        // kernels) double_lock_balance() always drops this runqueue's lock,
        // and a CPU told to reschedule may pick the task in that window (the
        // push then gives up on it). Simplified: an entry here is atomic, so
        // the push always proceeds.
        let Some(later) = self.find_later_rq(next).filter(|&t| t != cpu && self.dl_is_earliest_on(next, t)) else {
            return false;
        };
        self.move_queued_for_balance(next, cpu, later);
        self.resched_curr(later);
        true
    }

    /// `push_dl_tasks()`.
    pub(crate) fn push_dl_tasks(&mut self, cpu: usize) {
        while self.push_dl_task(cpu) {}
    }

    /// `pull_dl_task()`: from each overloaded CPU of the root domain, pull
    /// the earliest pushable task allowed here that would run first here and
    /// is not beaten by the task running there.
    pub(crate) fn pull_dl_task(&mut self, this_cpu: usize) {
        let rd = self.rqs[this_cpu].rd;
        let sources: Vec<usize> =
            self.rds[rd].span.iter().filter(|&c| c != this_cpu && self.rqs[c].dl.overloaded()).collect();
        let mut dmin = i64::MAX as u64;
        let mut resched = false;
        for src in sources {
            // Nothing there would run before what this CPU has.
            if let (Some(mine), Some(next)) = (self.rqs[this_cpu].dl.earliest(), self.rqs[src].dl.earliest_pushable()) {
                if dl_time_before(mine, next) {
                    continue;
                }
            }
            self.pull_dl_from(src, this_cpu, &mut dmin, &mut resched);
        }
        if resched {
            self.resched_curr(this_cpu);
        }
    }

    fn pull_dl_from(&mut self, src: usize, this_cpu: usize, dmin: &mut u64, resched: &mut bool) {
        if self.rqs[src].dl.dl_nr_running <= 1 {
            return;
        }
        let Some(p) = self.rqs[src]
            .dl
            .pushable
            .iter()
            .map(|e| e.2)
            .find(|&t| !self.tasks[t as usize].on_cpu && self.tasks[t as usize].cpus_mask.contains(this_cpu))
        else {
            return;
        };
        let d = self.dl(p).deadline;
        if !dl_time_before(d, *dmin) || !self.dl_is_earliest_on(p, this_cpu) {
            return;
        }
        if self.curr_dl_deadline(src).is_some_and(|c| dl_time_before(d, c)) {
            return;
        }
        self.move_queued_for_balance(p, src, this_cpu);
        *dmin = d;
        *resched = true;
    }

    /// `balance_dl()`: a CPU whose deadline task left pulls.
    pub(crate) fn balance_dl(&mut self, cpu: usize, prev: TaskId) {
        if !self.dl(prev).on_dl_rq {
            self.pull_dl_task(cpu);
        }
    }

    /// The queued push and pull callbacks of `cpu` (`__balance_callbacks()`).
    pub(crate) fn dl_balance_callback(&mut self, cpu: usize) {
        // (Cleared only when set, as `balance_callbacks()` does.)
        if self.rqs[cpu].dl.push_callback {
            self.rqs[cpu].dl.push_callback = false;
            self.push_dl_tasks(cpu);
        }
        if self.rqs[cpu].dl.pull_callback {
            self.rqs[cpu].dl.pull_callback = false;
            self.pull_dl_task(cpu);
        }
    }

    // ---- class changes (PI boosts) ----

    /// `switched_to_dl()`: a queued task that entered the class (a boost)
    /// preempts by deadline, or is pushed.
    pub(crate) fn switched_to_dl(&mut self, cpu: usize, p: TaskId) {
        if self.rqs[cpu].curr == Some(p) {
            // Running: its time counts in `avg_dl` from now on.
            self.update_dl_rq_load_avg(cpu, false);
            return;
        }
        if self.tasks[p as usize].on_rq != OnRq::Queued {
            return;
        }
        if self.tasks[p as usize].nr_cpus_allowed() > 1 && self.rqs[cpu].dl.overloaded() {
            self.rqs[cpu].dl.push_callback = true;
        }
        if self.curr_dl_deadline(cpu).is_some() {
            self.wakeup_preempt_dl(cpu, p);
        } else {
            self.resched_curr(cpu);
        }
    }

    /// `switched_from_dl()`: the CPU may have lost its last deadline task;
    /// it pulls one from an overloaded CPU.
    pub(crate) fn switched_from_dl(&mut self, cpu: usize, p: TaskId) {
        if self.tasks[p as usize].on_rq == OnRq::Queued && self.rqs[cpu].dl.dl_nr_running == 0 {
            self.rqs[cpu].dl.pull_callback = true;
        }
    }

    /// `prio_changed_dl()`: the deadline may have moved either way: pull
    /// when not overloaded, and reschedule when the order changed.
    pub(crate) fn prio_changed_dl(&mut self, cpu: usize, p: TaskId) {
        if self.tasks[p as usize].on_rq != OnRq::Queued {
            return;
        }
        if !self.rqs[cpu].dl.overloaded() {
            self.rqs[cpu].dl.pull_callback = true;
        }
        let deadline = self.dl(p).deadline;
        if self.rqs[cpu].curr == Some(p) {
            if self.rqs[cpu].dl.earliest().is_some_and(|e| dl_time_before(e, deadline)) {
                self.resched_curr(cpu);
            }
        } else if self.dl_preempts_curr(cpu, deadline) {
            self.resched_curr(cpu);
        }
    }

    /// A deadline task's replenishment timer fired on `cpu` at `now`.
    pub fn dl_timer(&mut self, p: TaskId, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| k.dl_task_timer(p))
    }
}
