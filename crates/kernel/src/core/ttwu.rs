//! The wakeup half of `kernel/sched/core.c`: `try_to_wake_up()` in the
//! kernel's order, `ttwu_runnable()`, the remote wakelist
//! (`ttwu_queue_wakelist()` / `sched_ttwu_pending()`), `select_task_rq()`,
//! `set_task_cpu()` and `wake_up_new_task()`; plus the ttwu patches proposed
//! in the seed threads as feature toggles.
//!
//! A task that just blocked stays `on_cpu` until its CPU has paid the
//! context-switch cost (`finish_task_switch()`); a wakeup in that window takes
//! the `p->on_cpu` wakelist shortcut when it can. Follows 6.12.x; the
//! TTWU_* patches are off in every profile. Simplified: where the kernel's
//! waker would spin on `p->on_cpu`, the model completes the switch at once.
//!
//! Timing: when `select_task_rq()` costs CPU time (`[costs.kernel]`), a
//! wakeup onto another CPU is queued only once that time has passed
//! ([`WakeRequest`]), so concurrent wakers can pick the same idle CPU as in
//! the kernel. A wakeup onto the waker's own CPU completes at once.

use crate::core::{IpiKind, Kernel, Outbox, WakeKind, WakeRequest};
use crate::features::Feature;
use crate::sched::{qflags::*, wflags::*, OnRq, TaskId, TaskState};
use schedlab_trace::{DelayedWhat, EventKind, WakePath};

impl Kernel {
    /// `ttwu_do_wakeup()`: TASK_RUNNING and `sched_wakeup`, emitted on the
    /// CPU doing the enqueue (the waker's, or the target's for the wakelist).
    fn ttwu_do_wakeup(&mut self, t: TaskId) {
        let task = &mut self.tasks[t as usize];
        task.state = TaskState::Running;
        let (pid, prio, cpu) = (task.pid, task.prio, task.cpu);
        self.emit(cpu, EventKind::SchedWakeup { pid, prio, target_cpu: cpu as u32 });
    }

    /// `ttwu_do_activate()`.
    fn ttwu_do_activate(&mut self, cpu: usize, t: TaskId, wake_flags: u32) {
        let mut en_flags = ENQUEUE_WAKEUP | ENQUEUE_NOCLOCK;
        if wake_flags & WF_MIGRATED != 0 {
            en_flags |= ENQUEUE_MIGRATED;
        }
        if wake_flags & WF_RQ_SELECTED != 0 {
            en_flags |= ENQUEUE_RQ_SELECTED;
        }
        self.activate_task(cpu, t, en_flags);
        self.wakeup_preempt(cpu, t, wake_flags);
        self.ttwu_do_wakeup(t);
        self.class_of(t).task_woken(self, cpu, t);
        self.update_avg_idle(cpu);
    }

    fn emit_ttwu(&mut self, t: TaskId, path: WakePath, cpu: usize) {
        let pid = self.tasks[t as usize].pid;
        self.emit(cpu, EventKind::Ttwu { pid, path, cpu: cpu as u32 });
    }

    /// `ttwu_runnable()`: the wakee is still queued (preempted, or left
    /// `sched_delayed` by DELAY_DEQUEUE). Stock kernels wake it in place with
    /// no CPU selection. Returns true when the wakeup is complete.
    ///
    /// Patches (off by default):
    /// * `TTWU_QUEUE_DELAYED` — Peter Zijlstra, "[PATCH v2 12/12] sched: Add
    ///   ttwu_queue support for delayed tasks" (2025-07-02): hand the wakeup of
    ///   a delayed task to its own CPU's wakelist, recording the waker's CPU
    ///   in `wake_cpu`; that CPU completes the dequeue and selects a CPU.
    /// * `TTWU_DEQUEUE` — Peter Zijlstra in the same thread (June 2025, seed
    ///   004): complete the delayed dequeue here and fall through to
    ///   `select_task_rq()`.
    /// * `DEQUEUE_DELAYED` — Mike Galbraith, "sched/fair: Dequeue sched_delayed
    ///   tasks when waking to a busy CPU" (Nov 2024, seed 000): the same, but only
    ///   when the runqueue is busy, the task may run elsewhere and it is not a
    ///   waker/wakee buddy of the running task.
    fn ttwu_runnable(&mut self, t: TaskId, wake_flags: u32) -> bool {
        if self.feat(Feature::TTWU_QUEUE_DELAYED) && self.tasks[t as usize].se.sched_delayed {
            self.tasks[t as usize].state = TaskState::Waking;
            self.tasks[t as usize].wake_cpu = self.exec_cpu;
            let cpu = self.tasks[t as usize].cpu;
            if self.ttwu_queue_wakelist(t, cpu, wake_flags | WF_DELAYED) {
                self.wake_done(WakeKind::DelayedWakelist);
                return true;
            }
        }
        if self.tasks[t as usize].on_rq != OnRq::Queued {
            return false;
        }
        let cpu = self.tasks[t as usize].cpu;
        // __task_rq_lock(): the wakee's runqueue, wherever it is.
        self.rq_lock(cpu);
        self.update_rq_clock(cpu);
        let delayed = self.tasks[t as usize].se.sched_delayed;
        if delayed {
            let flags = ENQUEUE_DELAYED | ENQUEUE_NOCLOCK;
            if self.feat(Feature::TTWU_DEQUEUE) || self.galbraith_dequeue_delayed(cpu, t) {
                let (pid, lag) = (self.tasks[t as usize].pid, self.tasks[t as usize].se.vlag);
                self.dequeue_task(cpu, t, DEQUEUE_SLEEP | DEQUEUE_DELAYED | DEQUEUE_NOCLOCK);
                self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::DequeuedAtWakeup, lag });
                self.rq_unlock(cpu);
                self.tasks[t as usize].wake_kind = Some(WakeKind::DelayedDequeued);
                return false;
            }
            self.emit_ttwu(t, WakePath::Runnable { delayed: true }, cpu);
            self.enqueue_task(cpu, t, flags);
        } else {
            self.emit_ttwu(t, WakePath::Runnable { delayed: false }, cpu);
        }
        if !self.tasks[t as usize].on_cpu {
            self.wakeup_preempt(cpu, t, wake_flags);
        }
        self.ttwu_do_wakeup(t);
        self.rq_unlock(cpu);
        self.wake_done(if delayed { WakeKind::RunnableDelayed } else { WakeKind::Runnable });
        true
    }

    /// Mike Galbraith's DEQUEUE_DELAYED condition: a busy runqueue, a task
    /// allowed elsewhere, and no waker/wakee relation with the running task.
    fn galbraith_dequeue_delayed(&self, cpu: usize, t: TaskId) -> bool {
        if !self.feat(Feature::DEQUEUE_DELAYED) {
            return false;
        }
        let rq = &self.rqs[cpu];
        let task = &self.tasks[t as usize];
        if rq.nr_running <= 1 || task.nr_cpus_allowed() <= 1 {
            return false;
        }
        let buddies = match rq.curr {
            Some(c) => self.tasks[c as usize].wakee.last_wakee == Some(t) || task.wakee.last_wakee == Some(c),
            None => task.wakee.last_wakee.is_none() && rq.idle_wakee.last_wakee == Some(t),
        };
        !buddies
    }

    /// `ttwu_queue_cond()`: whether to hand the wakeup to `cpu`'s wakelist
    /// instead of taking its runqueue lock from here. `def` is the answer for
    /// a busy target sharing our cache (false in stock kernels;
    /// TTWU_QUEUE_DEFAULT or a delayed wakeup make it true in the RFC).
    fn ttwu_queue_cond(&self, t: TaskId, cpu: usize, def: bool) -> bool {
        if !self.tasks[t as usize].cpus_mask.contains(cpu) {
            return false;
        }
        let this = self.exec_cpu;
        if !self.domains.cpus_share_cache(this, cpu) {
            return true;
        }
        if cpu == this {
            return false;
        }
        // The target is idle or about to be: let it do the enqueue itself.
        // A delayed task keeps nr_running above zero.
        if self.rqs[cpu].nr_running == 0 {
            return true;
        }
        def
    }

    /// `ttwu_queue_wakelist()`.
    fn ttwu_queue_wakelist(&mut self, t: TaskId, cpu: usize, wake_flags: u32) -> bool {
        let def = self.feat(Feature::TTWU_QUEUE_DEFAULT) || wake_flags & WF_DELAYED != 0;
        if !self.feat(Feature::TTWU_QUEUE) || !self.ttwu_queue_cond(t, cpu, def) {
            return false;
        }
        let task = &mut self.tasks[t as usize];
        task.sched_remote_wakeup = wake_flags & WF_MIGRATED != 0;
        task.sched_remote_delayed = wake_flags & WF_DELAYED != 0;
        self.emit_ttwu(t, WakePath::Wakelist, cpu);
        self.__ttwu_queue_wakelist(t, cpu);
        true
    }

    /// `__ttwu_queue_wakelist()`: mark `ttwu_pending` (so `idle_cpu()` turns
    /// false at once) and queue; the first entry raises the call-function IPI.
    fn __ttwu_queue_wakelist(&mut self, t: TaskId, cpu: usize) {
        self.charge(self.topo.costs.kernel.wakelist_ns);
        self.touched.cpu(cpu);
        self.touched.task(t);
        let rq = &mut self.rqs[cpu];
        rq.ttwu_pending = true;
        let first = rq.wake_list.is_empty();
        rq.wake_list.push(t);
        if first {
            self.send_ipi(cpu, IpiKind::CallFunction);
        }
    }

    /// `sched_ttwu_pending()`: the target CPU runs its wakelist (from the IPI
    /// or its idle loop), activating each task locally.
    pub fn sched_ttwu_pending(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            if k.rqs[cpu].wake_list.is_empty() {
                return;
            }
            // One lock for the whole list: what TTWU_QUEUE saves the wakers.
            k.rq_lock(cpu);
            k.update_rq_clock(cpu);
            let mut list = std::mem::take(&mut k.rqs[cpu].wake_list);
            for &t in &list {
                if k.tasks[t as usize].lb_wakelist {
                    // LB_FIRST_MIGRATION patch: the balancer handed this task over.
                    k.tasks[t as usize].lb_wakelist = false;
                    k.attach_task(cpu, t);
                    continue;
                }
                let mut wake_flags = 0;
                if k.tasks[t as usize].sched_remote_wakeup {
                    wake_flags |= WF_MIGRATED;
                }
                // The RFC series starts these flags at WF_TTWU so that
                // ttwu_delayed()'s select_task_rq() takes the wakeup path.
                if k.tasks[t as usize].sched_remote_delayed && k.ttwu_delayed(cpu, t, wake_flags | WF_TTWU | WF_DELAYED)
                {
                    continue;
                }
                if k.tasks[t as usize].on_cpu {
                    // The IPI is taken once the switch that queued it completes.
                    k.finish_task_switch(k.tasks[t as usize].cpu);
                }
                if k.tasks[t as usize].cpu != cpu {
                    // The kernel warns here; keep the task's CPU consistent.
                    k.set_task_cpu(t, cpu);
                }
                k.ttwu_do_activate(cpu, t, wake_flags);
            }
            list.clear();
            if k.rqs[cpu].wake_list.is_empty() {
                k.rqs[cpu].wake_list = list; // keep the buffer
                k.rqs[cpu].ttwu_pending = false;
            }
            k.rq_unlock(cpu);
        })
    }

    /// `ttwu_delayed()` (TTWU_QUEUE_DELAYED, v2 of the series, 2025-07-02):
    /// on the delayed task's own CPU, finish the delayed dequeue, select a
    /// CPU as if woken from `wake_cpu`, and either activate here (false) or
    /// forward to the chosen CPU (true). With TTWU_DELAYED_V1 (the RFC's
    /// first version, 2025-05-20) the owning CPU requeues it in place
    /// instead, as `ttwu_runnable()` would have (true).
    fn ttwu_delayed(&mut self, cpu: usize, t: TaskId, mut wake_flags: u32) -> bool {
        self.tasks[t as usize].sched_remote_delayed = false;
        // A task delayed as it blocked is still switching out of its CPU
        // (this one) when the waker queues it: the IPI is taken once that
        // switch completes, as for every wakelist entry. Selecting and
        // forwarding it before would run it on two CPUs at once.
        self.finish_switch_of(t);
        let p_cpu = self.tasks[t as usize].cpu;
        if self.feat(Feature::TTWU_DELAYED_V1) && self.tasks[t as usize].se.sched_delayed {
            // RFC v1: the owning CPU only does what ttwu_runnable() would
            // have done under its lock: requeue in place, no selection.
            self.update_rq_clock(p_cpu);
            self.enqueue_task(p_cpu, t, ENQUEUE_DELAYED | ENQUEUE_NOCLOCK);
            self.wakeup_preempt(p_cpu, t, wake_flags);
            self.ttwu_do_wakeup(t);
            return true;
        }
        if self.tasks[t as usize].on_rq == OnRq::Queued {
            let (pid, lag) = (self.tasks[t as usize].pid, self.tasks[t as usize].se.vlag);
            self.update_rq_clock(p_cpu);
            self.dequeue_task(p_cpu, t, DEQUEUE_NOCLOCK | DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            self.emit(cpu, EventKind::Delayed { pid, what: DelayedWhat::DequeuedAtWakeup, lag });
        }
        let wake_cpu = self.tasks[t as usize].wake_cpu;
        let target = self.select_task_rq(t, wake_cpu, &mut wake_flags);
        if target != self.tasks[t as usize].cpu {
            self.set_task_cpu(t, target);
            wake_flags |= WF_MIGRATED;
        }
        self.tasks[t as usize].sched_remote_wakeup = wake_flags & WF_MIGRATED != 0;
        if target == cpu {
            return false;
        }
        self.emit_ttwu(t, WakePath::Wakelist, target);
        self.__ttwu_queue_wakelist(t, target);
        true
    }

    /// `ttwu_queue()`: wakelist if the conditions hold, else lock the target
    /// runqueue from here and activate directly.
    fn ttwu_queue(&mut self, t: TaskId, cpu: usize, wake_flags: u32) {
        if self.ttwu_queue_wakelist(t, cpu, wake_flags) {
            self.wake_queued(t, true);
            return;
        }
        self.rq_lock(cpu);
        self.update_rq_clock(cpu);
        self.emit_ttwu(t, WakePath::Activate, cpu);
        self.ttwu_do_activate(cpu, t, wake_flags);
        self.rq_unlock(cpu);
        self.wake_queued(t, false);
    }

    /// `select_task_rq()`: the class's choice when the task may move, then
    /// the `is_cpu_allowed()` fallback.
    pub(crate) fn select_task_rq(&mut self, t: TaskId, cpu: usize, wake_flags: &mut u32) -> usize {
        self.select_task_rq_timed(t, cpu, wake_flags).0
    }

    /// [`Self::select_task_rq`], with the CPU time it charged (the fixed
    /// part and each CPU `select_idle_sibling()` tested).
    fn select_task_rq_timed(&mut self, t: TaskId, cpu: usize, wake_flags: &mut u32) -> (usize, u64) {
        let task = &self.tasks[t as usize];
        let mut cost = 0;
        let mut cpu = if task.nr_cpus_allowed() > 1 {
            self.idle_probes.set(0);
            let c = self.class_of(t).select_task_rq(self, t, cpu, *wake_flags);
            *wake_flags |= WF_RQ_SELECTED;
            let k = &self.topo.costs.kernel;
            cost = k.select_ns + k.select_per_cpu_ns * u64::from(self.idle_probes.get());
            self.charge(cost);
            c
        } else {
            task.cpus_mask.first().unwrap_or(cpu)
        };
        if !self.tasks[t as usize].cpus_mask.contains(cpu) {
            cpu = self.select_fallback_rq(t, cpu);
        }
        (cpu, cost)
    }

    /// `select_fallback_rq()` for a CPU the task may not run on: any CPU it
    /// may (simplified: the first; the kernel prefers the same node, then
    /// widens the mask).
    fn select_fallback_rq(&self, t: TaskId, cpu: usize) -> usize {
        self.tasks[t as usize].cpus_mask.first().unwrap_or(cpu)
    }

    /// `set_task_cpu()`: `sched_migrate_task`, the deadline class's migrate
    /// hook for a deadline task (`migrate_task_rq_dl()`), the fair one
    /// (`migrate_task_rq_fair()`, which the model runs for every task), then
    /// the new CPU.
    pub(crate) fn set_task_cpu(&mut self, t: TaskId, new_cpu: usize) {
        let task = &self.tasks[t as usize];
        if task.cpu == new_cpu {
            return;
        }
        let (pid, prio, orig) = (task.pid, task.prio, task.cpu);
        self.touched.cpu(orig);
        self.touched.cpu(new_cpu);
        self.touched.task(t);
        self.emit(orig, EventKind::SchedMigrateTask { pid, prio, orig_cpu: orig as u32, dest_cpu: new_cpu as u32 });
        if self.class_of(t) == crate::sched::class::SchedClass::Dl {
            self.migrate_task_rq_dl(t);
        }
        self.migrate_task_rq_fair(t, new_cpu);
        let task = &mut self.tasks[t as usize];
        task.cpu = new_cpu;
        task.wake_cpu = new_cpu;
    }

    /// `try_to_wake_up()` from the context of `exec_cpu`. Returns whether the
    /// task was woken (its state matched TASK_NORMAL).
    pub fn try_to_wake_up(
        &mut self,
        t: TaskId,
        now: u64,
        exec_cpu: usize,
        mut wake_flags: u32,
        out: &mut Outbox,
    ) -> bool {
        self.entry(now, exec_cpu, out, |k| {
            wake_flags |= WF_TTWU;
            k.touched.task(t);
            k.touched.cpu(k.tasks[t as usize].cpu);
            let task = &k.tasks[t as usize];
            if !matches!(task.state, TaskState::Interruptible | TaskState::Uninterruptible) {
                return false;
            }
            let (pid, prio, cpu) = (task.pid, task.prio, task.cpu);
            k.emit(cpu, EventKind::SchedWaking { pid, prio, target_cpu: cpu as u32 });
            k.wake_begin();
            if k.tasks[t as usize].on_rq != OnRq::No && k.ttwu_runnable(t, wake_flags) {
                return true;
            }
            k.tasks[t as usize].state = TaskState::Waking;
            if k.tasks[t as usize].on_cpu {
                if k.feat(Feature::TTWU_QUEUE_ON_CPU) && k.ttwu_queue_wakelist(t, cpu, wake_flags | WF_ON_CPU) {
                    k.wake_done(WakeKind::OnCpuWakelist);
                    return true;
                }
                // smp_cond_load_acquire(&p->on_cpu, !VAL): wait out the switch.
                k.finish_task_switch(cpu);
            }
            let prev = k.tasks[t as usize].wake_cpu;
            let (cpu, select_ns) = k.select_task_rq_timed(t, prev, &mut wake_flags);
            if select_ns > 0 && cpu != exec_cpu {
                // The scan took time: the chosen CPU learns of the wakee only
                // once it is over (see WakeRequest).
                let charged_ns = k.wake_charged();
                k.out.wakes.push(WakeRequest {
                    task: t,
                    cpu,
                    wake_flags,
                    from: exec_cpu,
                    after_ns: select_ns,
                    charged_ns,
                });
                return true;
            }
            k.ttwu_set_cpu_and_queue(t, cpu, wake_flags);
            true
        })
    }

    /// The rest of a wakeup whose selection took time ([`WakeRequest`]),
    /// run by the waker on `exec_cpu` once the selection's time has passed.
    /// Simplified: in the kernel `p->pi_lock`, held across the whole
    /// wakeup, keeps the task's affinity fixed meanwhile; the model
    /// re-checks it instead.
    pub fn ttwu_queue_selected(&mut self, w: WakeRequest, now: u64, out: &mut Outbox) {
        self.entry(now, w.from, out, |k| {
            debug_assert_eq!(k.tasks[w.task as usize].state, TaskState::Waking);
            k.wake_resume(w.charged_ns);
            let allowed = k.tasks[w.task as usize].cpus_mask.contains(w.cpu);
            let cpu = if allowed { w.cpu } else { k.select_fallback_rq(w.task, w.cpu) };
            k.ttwu_set_cpu_and_queue(w.task, cpu, w.wake_flags);
        })
    }

    /// `set_task_cpu()` when the selection moved the task, then `ttwu_queue()`.
    fn ttwu_set_cpu_and_queue(&mut self, t: TaskId, cpu: usize, mut wake_flags: u32) {
        if cpu != self.tasks[t as usize].cpu {
            wake_flags |= WF_MIGRATED;
            self.set_task_cpu(t, cpu);
        }
        self.ttwu_queue(t, cpu, wake_flags);
    }

    /// `wake_up_new_task()`: fork balancing picks the first CPU, PELT gets its
    /// initial utilisation, then the first enqueue.
    pub fn wake_up_new_task(&mut self, t: TaskId, now: u64, exec_cpu: usize, out: &mut Outbox) {
        self.entry(now, exec_cpu, out, |k| {
            debug_assert_eq!(k.tasks[t as usize].state, TaskState::New);
            k.tasks[t as usize].state = TaskState::Running;
            let prev = k.tasks[t as usize].cpu;
            k.tasks[t as usize].recent_used_cpu = prev;
            k.setup_new_dl_entity(t);
            let mut wake_flags = WF_FORK;
            let cpu = if k.tasks[t as usize].fixed_start { prev } else { k.select_task_rq(t, prev, &mut wake_flags) };
            // __set_task_cpu(): no migration event for a task that never ran.
            k.tasks[t as usize].cpu = cpu;
            k.tasks[t as usize].wake_cpu = cpu;
            k.update_rq_clock(cpu);
            k.post_init_entity_util_avg(t);
            k.activate_task(cpu, t, ENQUEUE_NOCLOCK | ENQUEUE_INITIAL);
            let (pid, prio) = (k.tasks[t as usize].pid, k.tasks[t as usize].prio);
            k.emit(cpu, EventKind::SchedWakeupNew { pid, prio, target_cpu: cpu as u32 });
            k.wakeup_preempt(cpu, t, WF_FORK);
        })
    }
}
