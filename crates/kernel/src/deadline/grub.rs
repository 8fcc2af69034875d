//! GRUB reclaiming (`kernel/sched/deadline.c`, 6.12.x): a deadline task
//! with SCHED_FLAG_RECLAIM is charged less than the time it runs, by how
//! much of the CPU's reserved bandwidth is idle, so it may use up to
//! `max_bw` (`sched_rt_runtime_us / sched_rt_period_us`, 95 %) of a CPU
//! (Documentation/scheduler/sched-deadline.rst, 2.2).
//!
//! The bookkeeping it reads, per deadline runqueue (`struct dl_rq`):
//! * `this_bw`: the bandwidth of every deadline entity assigned to the CPU
//!   (its fair server and its deadline tasks, queued or asleep);
//! * `running_bw`: the part of it that is *active*: queued (throttled or
//!   not), or blocked but not yet past its 0-lag time. A task that blocks
//!   stays active until the instant its unused runtime, spent at its own
//!   bandwidth, would have run out (`task_non_contending()`); the inactive
//!   timer takes it out then (`inactive_task_timer()`), unless it wakes
//!   first (`task_contending()`);
//! * `extra_bw`: `max_bw` less the root domain's reserved bandwidth per CPU,
//!   which nobody may ever use (`__dl_add()` / `__dl_sub()`).
//!
//! The charge (`grub_reclaim()`): running `dt` costs
//! `max(u, max_bw - (this_bw - running_bw) - extra_bw) / max_bw * dt` of
//! runtime, `u` the task's own bandwidth, in the kernel's fixed point
//! (BW_SHIFT for bandwidths, RATIO_SHIFT for 1/max_bw). A reclaiming task
//! alone on its CPU, with the CPU's other bandwidth free, pays `u / max_bw`
//! per ns and so runs `max_bw` of the time.
//!
//! Simplified: the model arms inactive timers only once some task reclaims
//! ([`Kernel::dl_grub`]): nothing else reads `running_bw` (schedutil is not
//! modeled), and an unneeded timer would only cost its CPU time; without
//! them a blocked task stays in `running_bw` until it wakes. The model's
//! deadline tasks never leave the class (a PI boost from below brings no
//! bandwidth: `dl_bw` 0), so `switched_from_dl()`'s and `switched_to_dl()`'s
//! bandwidth moves have nothing to move; no SCHED_FLAG_SUGOV, no hotplug, no
//! root domain rebuilds; the 0-lag product is computed in 128 bits (the
//! kernel's 64 bits overflow only for reservations of seconds).

use super::{to_ratio, BW_SHIFT, FAIR_SERVER_PERIOD};
use crate::core::{Kernel, Outbox};
use crate::sched::class::SchedClass;
use crate::sched::{qflags::*, TaskId, TaskState};

/// `RATIO_SHIFT`: `bw_ratio` (1 / max_bw) has 8 fractional bits.
pub const RATIO_SHIFT: u32 = 8;
/// `global_rt_runtime()` / `global_rt_period()` at their defaults, in ns.
const RT_RUNTIME_NS: u64 = super::admission::RT_RUNTIME_US * 1000;
const RT_PERIOD_NS: u64 = super::admission::RT_PERIOD_US * 1000;
/// `dl_rq->max_bw` (`init_dl_rq_bw_ratio()`): the most a CPU may give its
/// deadline entities, `to_ratio(rt period, rt runtime)` (996147: 0.95).
pub const MAX_BW: u64 = (((RT_RUNTIME_NS as u128) << BW_SHIFT) / RT_PERIOD_NS as u128) as u64;
/// `dl_rq->bw_ratio`: `to_ratio(rt runtime, rt period)` cut to RATIO_SHIFT
/// bits (269: 1/0.95 = 1.0508 in 1/256 units).
pub const BW_RATIO: u64 =
    ((((RT_PERIOD_NS as u128) << BW_SHIFT) / RT_RUNTIME_NS as u128) >> (BW_SHIFT - RATIO_SHIFT)) as u64;

/// `SCHED_FLAG_RECLAIM` (include/uapi/linux/sched.h).
pub const SCHED_FLAG_RECLAIM: u64 = 0x02;

/// `grub_reclaim()`: the runtime `delta` ns of running cost an entity of
/// bandwidth `u` on a runqueue with `this_bw`, `running_bw` and `extra_bw`.
pub fn grub_reclaim(delta: u64, u: u64, this_bw: u64, running_bw: u64, extra_bw: u64) -> u64 {
    let u_inact = this_bw.saturating_sub(running_bw);
    // max(u, max_bw - u_inact - extra_bw), without going below zero.
    let u_act = if u_inact + extra_bw > MAX_BW.saturating_sub(u) { u } else { MAX_BW - u_inact - extra_bw };
    let u_act = (u_act * BW_RATIO) >> RATIO_SHIFT;
    ((delta as u128 * u_act as u128) >> BW_SHIFT) as u64
}

/// The 0-lag instant of an entity with `runtime` left of `dl_runtime` per
/// `dl_period`, deadline `deadline`: when its runtime, spent at its own
/// bandwidth, would be used up (`task_non_contending()`'s `zerolag_time`).
fn zerolag_time(deadline: u64, runtime: i64, dl_runtime: u64, dl_period: u64) -> i128 {
    deadline as i128 - (runtime as i128 * dl_period as i128) / dl_runtime as i128
}

impl Kernel {
    /// The fair server's share of `cpu`'s `this_bw` (0 when disabled). The
    /// kernel attaches it at the server's first start, at boot; the model,
    /// as its admission does, counts it from the start.
    pub(crate) fn fair_server_bw(&self, cpu: usize) -> u64 {
        let runtime = self.rqs[cpu].fair_server.dl_runtime;
        if runtime == 0 {
            0
        } else {
            to_ratio(FAIR_SERVER_PERIOD, runtime)
        }
    }

    /// `init_dl_rq_bw_ratio()` and the fair servers' `dl_server_apply_params()`
    /// at boot: each CPU's `this_bw` holds its server, `extra_bw` is
    /// `max_bw` less its root domain's servers per CPU.
    pub(crate) fn init_dl_rq_bw(&mut self) {
        for cpu in 0..self.rqs.len() {
            let bw = self.fair_server_bw(cpu);
            let dl = &mut self.rqs[cpu].dl;
            dl.running_bw = 0;
            dl.this_bw = bw;
            dl.extra_bw = MAX_BW;
        }
        for cpu in 0..self.rqs.len() {
            let bw = self.fair_server_bw(cpu);
            self.__dl_add(cpu, bw);
        }
    }

    /// `__dl_add()`'s `__dl_update()`: bandwidth `bw` reserved in the root
    /// domain of `cpu` leaves `extra_bw` on each of its CPUs (an equal part,
    /// divided as the kernel divides).
    pub(crate) fn __dl_add(&mut self, cpu: usize, bw: u64) {
        let span = self.rds[self.rqs[cpu].rd].span;
        let part = bw / span.len().max(1) as u64;
        for c in span.iter() {
            let dl = &mut self.rqs[c].dl;
            dl.extra_bw = dl.extra_bw.wrapping_sub(part);
        }
    }

    /// `__dl_sub()`: released bandwidth returns to every CPU's `extra_bw`.
    pub(crate) fn __dl_sub(&mut self, cpu: usize, bw: u64) {
        let span = self.rds[self.rqs[cpu].rd].span;
        let part = bw / span.len().max(1) as u64;
        for c in span.iter() {
            let dl = &mut self.rqs[c].dl;
            dl.extra_bw = dl.extra_bw.wrapping_add(part);
        }
    }

    /// `add_running_bw()` of `p`'s bandwidth on `cpu`.
    fn add_running_bw(&mut self, cpu: usize, p: TaskId) {
        let bw = self.dl(p).dl_bw;
        let dl = &mut self.rqs[cpu].dl;
        dl.running_bw += bw;
        debug_assert!(dl.running_bw <= dl.this_bw, "CPU {cpu}: running_bw {} > this_bw {}", dl.running_bw, dl.this_bw);
    }

    /// `sub_running_bw()`: clamped at zero, as the kernel clamps an underflow.
    fn sub_running_bw(&mut self, cpu: usize, p: TaskId) {
        let bw = self.dl(p).dl_bw;
        let dl = &mut self.rqs[cpu].dl;
        debug_assert!(dl.running_bw >= bw, "CPU {cpu}: running_bw {} underflows by {bw}", dl.running_bw);
        dl.running_bw = dl.running_bw.saturating_sub(bw);
    }

    /// `add_rq_bw()`.
    fn add_rq_bw(&mut self, cpu: usize, p: TaskId) {
        self.rqs[cpu].dl.this_bw += self.dl(p).dl_bw;
    }

    /// `sub_rq_bw()`.
    fn sub_rq_bw(&mut self, cpu: usize, p: TaskId) {
        let bw = self.dl(p).dl_bw;
        let dl = &mut self.rqs[cpu].dl;
        debug_assert!(dl.this_bw >= bw, "CPU {cpu}: this_bw {} underflows by {bw}", dl.this_bw);
        dl.this_bw = dl.this_bw.saturating_sub(bw);
        debug_assert!(dl.running_bw <= dl.this_bw, "CPU {cpu}: running_bw {} > this_bw {}", dl.running_bw, dl.this_bw);
    }

    /// `enqueue_dl_entity()`'s bandwidth steps for `p` entering `cpu`'s
    /// runqueue: a move or a restore brings its bandwidth, active
    /// (ENQUEUE_MIGRATING, ENQUEUE_RESTORE); so does the first enqueue of a
    /// task created as SCHED_DEADLINE (ENQUEUE_INITIAL: the model's stand-in
    /// for `sched_setattr()` on the running thread, whose restore adds it).
    pub(crate) fn dl_enqueue_bw(&mut self, cpu: usize, p: TaskId, flags: u32) {
        if flags & (ENQUEUE_MIGRATING | ENQUEUE_RESTORE | ENQUEUE_INITIAL) != 0 {
            self.add_rq_bw(cpu, p);
            self.add_running_bw(cpu, p);
        }
    }

    /// `dequeue_dl_entity()`'s bandwidth steps: a move or a save takes the
    /// bandwidth away (DEQUEUE_MIGRATING, DEQUEUE_SAVE); a sleep makes the
    /// task non-contending (DEQUEUE_SLEEP).
    pub(crate) fn dl_dequeue_bw(&mut self, cpu: usize, p: TaskId, flags: u32) {
        if flags & (DEQUEUE_MIGRATING | DEQUEUE_SAVE) != 0 {
            self.sub_running_bw(cpu, p);
            self.sub_rq_bw(cpu, p);
        }
        if flags & DEQUEUE_SLEEP != 0 {
            self.task_non_contending(p);
        }
    }

    /// `task_non_contending()`: `p` blocks (or exits). Past its 0-lag time
    /// its bandwidth stops being active at once (and an exiting task's
    /// reservation is released); before it, it stays active until the
    /// inactive timer fires at that instant.
    pub(crate) fn task_non_contending(&mut self, p: TaskId) {
        let dl = *self.dl(p);
        // A task boosted into the class has no reservation of its own.
        if dl.dl_runtime == 0 {
            return;
        }
        debug_assert!(!dl.non_contending, "task {p} is already non-contending");
        let cpu = self.tasks[p as usize].cpu;
        let zerolag = zerolag_time(dl.deadline, dl.runtime, dl.dl_runtime, dl.dl_period) - self.now as i128;
        if zerolag < 0 {
            if self.class_of(p) == SchedClass::Dl {
                self.sub_running_bw(cpu, p);
            }
            if self.tasks[p as usize].state == TaskState::Dead {
                self.sub_rq_bw(cpu, p);
                self.dl_release(cpu, p);
            }
            return;
        }
        self.dl_mut(p).non_contending = true;
        if self.dl_grub {
            let at = self.now + zerolag as u64;
            self.dl_mut(p).inactive_timer_at = Some(at);
            self.request_timer(super::TimerRequest { cpu, at, what: super::TimerKind::DlInactive(p) });
        }
    }

    /// `task_contending()`: `p` wakes on its CPU. Still active (its inactive
    /// timer pending), it only cancels the timer; otherwise its bandwidth
    /// is active again. A wakeup that migrated it brings its bandwidth here
    /// first (ENQUEUE_MIGRATED; [`Self::migrate_task_rq_dl`] took it away).
    pub(crate) fn task_contending(&mut self, p: TaskId, flags: u32) {
        if self.dl(p).dl_runtime == 0 {
            return;
        }
        let cpu = self.tasks[p as usize].cpu;
        if flags & ENQUEUE_MIGRATED != 0 {
            self.add_rq_bw(cpu, p);
        }
        let dl = self.dl_mut(p);
        if dl.non_contending {
            dl.non_contending = false;
            dl.inactive_timer_at = None;
        } else {
            self.add_running_bw(cpu, p);
        }
    }

    /// `migrate_task_rq_dl()`: a waking deadline task leaves its old CPU
    /// (`set_task_cpu()` from `try_to_wake_up()`): its bandwidth goes, the
    /// active part too when its 0-lag time had not come.
    pub(crate) fn migrate_task_rq_dl(&mut self, p: TaskId) {
        if self.tasks[p as usize].state != TaskState::Waking {
            return;
        }
        let cpu = self.tasks[p as usize].cpu;
        if self.dl(p).non_contending {
            self.sub_running_bw(cpu, p);
            let dl = self.dl_mut(p);
            dl.non_contending = false;
            dl.inactive_timer_at = None;
        }
        self.sub_rq_bw(cpu, p);
    }

    /// `__dl_sub()` + `__dl_clear_params()` of an exited task: its
    /// reservation goes back to the root domain.
    fn dl_release(&mut self, cpu: usize, p: TaskId) {
        let bw = self.dl(p).dl_bw;
        self.__dl_sub(cpu, bw);
        let dl = self.dl_mut(p);
        dl.dl_runtime = 0;
        dl.dl_deadline = 0;
        dl.dl_period = 0;
        dl.dl_bw = 0;
        dl.dl_density = 0;
        dl.reclaim = false;
        dl.non_contending = false;
    }

    /// `inactive_task_timer()`: `p`'s 0-lag instant. A task still
    /// non-contending stops being active; an exited one also gives its
    /// reservation back.
    pub(crate) fn inactive_task_timer(&mut self, p: TaskId) {
        let now = self.now;
        // A cancelled timer, or one re-armed for later, is stale.
        if self.dl(p).inactive_timer_at.is_none_or(|at| at > now) {
            return;
        }
        self.dl_mut(p).inactive_timer_at = None;
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        if self.tasks[p as usize].state == TaskState::Dead {
            if self.dl(p).non_contending {
                self.sub_running_bw(cpu, p);
                self.sub_rq_bw(cpu, p);
            }
            self.dl_release(cpu, p);
            return;
        }
        if !self.dl(p).non_contending {
            return;
        }
        self.sub_running_bw(cpu, p);
        self.dl_mut(p).non_contending = false;
    }

    /// `dl_scaled_delta_exec()`: the runtime `delta` ns of running costs the
    /// deadline task `p` on `cpu`: reclaimed by GRUB with SCHED_FLAG_RECLAIM,
    /// else scaled by the CPU's capacity (at its maximum frequency).
    pub(crate) fn dl_scaled_delta_exec(&self, cpu: usize, p: TaskId, delta: u64) -> u64 {
        let dl = self.dl(p);
        if dl.reclaim {
            let rq = &self.rqs[cpu].dl;
            grub_reclaim(delta, dl.dl_bw, rq.this_bw, rq.running_bw, rq.extra_bw)
        } else {
            let capacity = self.topo.cpus[cpu].capacity as u64;
            ((delta as u128 * capacity as u128) >> 10) as u64
        }
    }

    // ---- the fair server's active bandwidth ----

    /// `task_contending()` of `cpu`'s fair server, as `dl_server_start()`
    /// enqueues it.
    pub(crate) fn fair_server_contending(&mut self, cpu: usize) {
        let bw = self.fair_server_bw(cpu);
        let fs = &mut self.rqs[cpu].fair_server;
        if fs.non_contending {
            fs.non_contending = false;
            fs.inactive_timer_at = None;
        } else {
            self.rqs[cpu].dl.running_bw += bw;
        }
    }

    /// `task_non_contending()` of `cpu`'s fair server, as `dl_server_stop()`
    /// dequeues it.
    pub(crate) fn fair_server_non_contending(&mut self, cpu: usize) {
        let bw = self.fair_server_bw(cpu);
        let fs = self.rqs[cpu].fair_server;
        if fs.dl_runtime == 0 {
            return;
        }
        let zerolag = zerolag_time(fs.deadline, fs.runtime, fs.dl_runtime, FAIR_SERVER_PERIOD) - self.now as i128;
        if zerolag < 0 {
            let dl = &mut self.rqs[cpu].dl;
            dl.running_bw = dl.running_bw.saturating_sub(bw);
            return;
        }
        self.rqs[cpu].fair_server.non_contending = true;
        if self.dl_grub {
            let at = self.now + zerolag as u64;
            self.rqs[cpu].fair_server.inactive_timer_at = Some(at);
            self.request_timer(super::TimerRequest { cpu, at, what: super::TimerKind::FairServerInactive });
        }
    }

    /// `inactive_task_timer()` of `cpu`'s fair server.
    fn fair_server_inactive_timer(&mut self, cpu: usize) {
        let now = self.now;
        let fs = &mut self.rqs[cpu].fair_server;
        if fs.inactive_timer_at.is_none_or(|at| at > now) {
            return;
        }
        fs.inactive_timer_at = None;
        if !std::mem::take(&mut fs.non_contending) {
            return;
        }
        self.update_rq_clock(cpu);
        let bw = self.fair_server_bw(cpu);
        let dl = &mut self.rqs[cpu].dl;
        dl.running_bw = dl.running_bw.saturating_sub(bw);
    }

    /// `dl_server_apply_params()` for a new server runtime on `cpu` (the
    /// debugfs write), the server stopped: the old reservation leaves
    /// `this_bw` and the root domain, the new one enters
    /// (`dl_rq_change_utilization()`).
    pub(crate) fn fair_server_change_bw(&mut self, cpu: usize, runtime: u64) {
        let old = self.fair_server_bw(cpu);
        if self.rqs[cpu].fair_server.non_contending {
            let fs = &mut self.rqs[cpu].fair_server;
            fs.non_contending = false;
            fs.inactive_timer_at = None;
            let dl = &mut self.rqs[cpu].dl;
            dl.running_bw = dl.running_bw.saturating_sub(old);
        }
        self.__dl_sub(cpu, old);
        self.rqs[cpu].dl.this_bw -= old;
        self.rqs[cpu].fair_server.dl_runtime = runtime;
        let new = self.fair_server_bw(cpu);
        self.__dl_add(cpu, new);
        self.rqs[cpu].dl.this_bw += new;
    }

    /// Some task reclaims (SCHED_FLAG_RECLAIM): from now on the model arms
    /// the inactive timers GRUB's `running_bw` needs. The simulator creates
    /// every task before the run, so no entity is non-contending yet; one
    /// that were would stay active until it wakes.
    pub(crate) fn dl_grub_start(&mut self) {
        self.dl_grub = true;
    }

    /// An inactive timer (`what`: [`super::TimerKind::DlInactive`] or
    /// [`super::TimerKind::FairServerInactive`]) fired on `cpu` at `now`.
    pub fn dl_inactive_timer(&mut self, what: super::TimerKind, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| match what {
            super::TimerKind::DlInactive(p) => k.inactive_task_timer(p),
            super::TimerKind::FairServerInactive => k.fair_server_inactive_timer(cpu),
            _ => unreachable!("{what:?} is not an inactive timer"),
        })
    }

    /// A runqueue's deadline bandwidth: `running_bw`, `this_bw`, `extra_bw`
    /// (BW_SHIFT fixed point).
    pub fn dl_rq_bw(&self, cpu: usize) -> (u64, u64, u64) {
        let dl = &self.rqs[cpu].dl;
        (dl.running_bw, dl.this_bw, dl.extra_bw)
    }
}
