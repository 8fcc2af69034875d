//! The runqueue operations of `core.c` that dispatch to a task's class:
//! `enqueue_task()`, `dequeue_task()`, `activate_task()`, `__block_task()`,
//! `block_task()`, `wakeup_preempt()`, `deactivate_task()`,
//! `move_queued_task()`, `__set_cpus_allowed_ptr()` (the `sched_setaffinity()`
//! path) and `rt_mutex_setprio()`, which moves a task between the fair and RT
//! classes.
//!
//! Follows 6.12.x; simplified as described in [`crate::core`].

use crate::core::{Kernel, Outbox};
use crate::sched::class::SchedClass;
use crate::sched::*;
use schedlab_topology::CpuSet;
use schedlab_trace::EventKind;

impl Kernel {
    /// `enqueue_task()`.
    pub(crate) fn enqueue_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if flags & qflags::ENQUEUE_NOCLOCK == 0 {
            self.update_rq_clock(cpu);
        }
        self.charge(self.topo.costs.kernel.enqueue_ns);
        self.touched.cpu(cpu);
        self.touched.task(t);
        self.class_of(t).enqueue_task(self, cpu, t, flags);
    }

    /// `dequeue_task()`: false when the class kept the task queued (delayed).
    pub(crate) fn dequeue_task(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        if flags & qflags::DEQUEUE_NOCLOCK == 0 {
            self.update_rq_clock(cpu);
        }
        self.charge(self.topo.costs.kernel.dequeue_ns);
        self.touched.cpu(cpu);
        self.touched.task(t);
        self.class_of(t).dequeue_task(self, cpu, t, flags)
    }

    /// `activate_task()`.
    pub(crate) fn activate_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        self.enqueue_task(cpu, t, flags);
        self.tasks[t as usize].on_rq = OnRq::Queued;
    }

    /// `__block_task()`: the task is off the runqueue for good.
    pub(crate) fn __block_task(&mut self, _cpu: usize, t: TaskId) {
        self.tasks[t as usize].on_rq = OnRq::No;
    }

    /// `block_task()`.
    pub(super) fn block_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if self.dequeue_task(cpu, t, qflags::DEQUEUE_SLEEP | flags) {
            self.__block_task(cpu, t);
        }
    }

    /// `wakeup_preempt()`: the running class decides whether `p` of the same
    /// class preempts; a higher class always does, a lower one never.
    pub(crate) fn wakeup_preempt(&mut self, cpu: usize, p: TaskId, wake_flags: u32) {
        let (class, curr_class) = (self.class_of(p), self.class_of_curr(cpu));
        if class == curr_class {
            class.wakeup_preempt(self, cpu, p, wake_flags);
        } else if class.above(curr_class) {
            self.resched_curr(cpu);
        }
    }

    /// `deactivate_task()`: off the runqueue as a migration (not a sleep).
    pub(crate) fn deactivate_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        self.tasks[t as usize].on_rq = OnRq::Migrating;
        self.dequeue_task(cpu, t, flags);
    }

    /// A push or pull's move of queued task `p` from `src` to `dst`, both
    /// runqueue locks held (rt.c's and deadline.c's `deactivate_task()` →
    /// `set_task_cpu()` → `activate_task()`); the caller reschedules.
    pub(crate) fn move_queued_for_balance(&mut self, p: TaskId, src: usize, dst: usize) {
        self.finish_switch_of(p);
        self.update_rq_clock(src);
        self.deactivate_task(src, p, 0);
        self.set_task_cpu(p, dst);
        self.update_rq_clock(dst);
        self.activate_task(dst, p, 0);
    }

    /// `move_queued_task()`: move a queued, not running task to `new_cpu`.
    /// A delayed task stays delayed on its new runqueue.
    pub(crate) fn move_queued_task(&mut self, t: TaskId, new_cpu: usize) {
        let cpu = self.tasks[t as usize].cpu;
        self.update_rq_clock(cpu);
        self.deactivate_task(cpu, t, qflags::DEQUEUE_NOCLOCK);
        self.set_task_cpu(t, new_cpu);
        self.update_rq_clock(new_cpu);
        self.activate_task(new_cpu, t, qflags::ENQUEUE_NOCLOCK);
        self.wakeup_preempt(new_cpu, t, 0);
    }

    /// `sched_setaffinity()` → `__set_cpus_allowed_ptr()` →
    /// `affine_move_task()` (core.c, 6.12): a task already on a CPU of the
    /// new mask stays; otherwise the destination is
    /// `cpumask_any_and_distribute()` of the mask. A queued task that is not
    /// running moves at once (`move_queued_task()`); a running one is moved
    /// by the stopper of its CPU (`stop_one_cpu_nowait(migration_cpu_stop)`),
    /// which preempts it; a sleeping one wakes up inside the mask.
    /// Simplified: the caller does not wait for the stopper's completion (the
    /// task is preempted at once, so it resumes after it anyway); one
    /// distribute cursor for the machine instead of one per CPU. The model
    /// has no cpusets: `sched_setaffinity()`'s intersection with the task's
    /// cpuset (`cpuset_cpus_allowed()`) is made when the scenario is read
    /// (`schedlab_scenario::cgroup::within_cpuset`), so `mask` arrives cut.
    pub fn set_cpus_allowed_ptr(&mut self, t: TaskId, mask: CpuSet, now: u64, exec_cpu: usize, out: &mut Outbox) {
        self.entry(now, exec_cpu, out, |k| {
            assert!(!mask.is_empty(), "empty affinity mask");
            k.tasks[t as usize].cpus_mask = mask;
            let cpu = k.tasks[t as usize].cpu;
            if k.rqs[cpu].switching_out == Some(t) {
                // The migration stopper runs after the switch away from it.
                k.finish_task_switch(cpu);
            }
            if mask.contains(cpu) {
                return;
            }
            let Some(dest) = k.any_distribute(&mask) else { return };
            let task = &k.tasks[t as usize];
            if task.on_cpu || k.rqs[cpu].curr == Some(t) {
                k.rqs[cpu].migration_pending = Some((t, dest));
                k.stop_one_cpu_nowait(cpu);
            } else if task.on_rq == OnRq::Queued {
                k.move_queued_task(t, dest);
            }
        })
    }

    /// `migration_cpu_stop()` on `cpu`'s stopper: if the task of the queued
    /// request is still on this runqueue and still outside its mask, move it
    /// (`__migrate_task()` → `move_queued_task()`); a task that blocked
    /// meanwhile gets the destination as its `wake_cpu`.
    pub(crate) fn migration_cpu_stop(&mut self, cpu: usize) {
        let Some((t, dest)) = self.rqs[cpu].migration_pending.take() else { return };
        let task = &self.tasks[t as usize];
        if task.cpu != cpu || task.cpus_mask.contains(cpu) {
            return;
        }
        if task.on_rq == OnRq::Queued {
            self.update_rq_clock(cpu);
            self.move_queued_task(t, dest);
        } else {
            self.tasks[t as usize].wake_cpu = dest;
        }
    }

    /// `rt_mutex_setprio()`: change `p`'s effective priority to the best of
    /// its normal priority and its top PI waiter `pi_task`'s, moving it
    /// between classes when the boost crosses MAX_RT_PRIO or MAX_DL_PRIO; a
    /// deadline donor lends its reservation (deadline inheritance).
    pub(crate) fn rt_mutex_setprio(&mut self, p: TaskId, pi_task: Option<TaskId>) {
        let normal = self.tasks[p as usize].normal_prio;
        let prio = pi_task.map_or(normal, |t| self.tasks[t as usize].prio.min(normal));
        let oldprio = self.tasks[p as usize].prio;
        let dl_prio = |prio: i32| prio < crate::deadline::MAX_DL_PRIO;
        if prio == oldprio && !dl_prio(prio) {
            return;
        }
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        let pid = self.tasks[p as usize].pid;
        self.emit(cpu, EventKind::SchedPiSetprio { pid, oldprio, newprio: prio });
        let prev_class = self.class_of(p);
        let next_class = SchedClass::of_prio(prio);
        if prev_class != next_class && prev_class == SchedClass::Fair && self.tasks[p as usize].se.sched_delayed {
            // Leaving the fair class while delayed: finish the sleep first.
            self.dequeue_task(cpu, p, qflags::DEQUEUE_SLEEP | qflags::DEQUEUE_DELAYED | qflags::DEQUEUE_NOCLOCK);
        }
        let queued = self.tasks[p as usize].on_rq == OnRq::Queued;
        let running = self.rqs[cpu].curr == Some(p);
        let mut queue_flags = qflags::DEQUEUE_SAVE | qflags::DEQUEUE_MOVE | qflags::DEQUEUE_NOCLOCK;
        if queued {
            self.dequeue_task(cpu, p, queue_flags);
        }
        if running {
            self.put_prev_task(cpu, p);
        }
        // Deadline inheritance: a task below the deadline class, or a
        // deadline task whose donor's deadline is earlier, runs with the
        // donor's reservation (`p->dl.pi_se = pi_task->dl.pi_se`) from a
        // replenishment; otherwise with its own.
        let mut replenish = false;
        self.tasks[p as usize].dl.pi_se = None;
        if dl_prio(prio) {
            if let Some(d) = pi_task.filter(|&d| {
                !dl_prio(normal)
                    || (dl_prio(self.tasks[d as usize].prio)
                        && crate::deadline::dl_time_before(
                            self.tasks[d as usize].dl.deadline,
                            self.tasks[p as usize].dl.deadline,
                        ))
            }) {
                self.tasks[p as usize].dl.pi_se = Some(self.tasks[d as usize].dl.pi_se.unwrap_or(d));
                replenish = true;
            }
        }
        self.tasks[p as usize].prio = prio;
        // check_class_changing()
        if prev_class != next_class {
            next_class.switching_to(self, p);
        }
        queue_flags = qflags::ENQUEUE_RESTORE | qflags::ENQUEUE_NOCLOCK;
        if replenish {
            queue_flags |= qflags::ENQUEUE_REPLENISH;
        }
        if next_class == SchedClass::Rt && oldprio < prio {
            // A deboosted RT task goes to the head of its new level.
            queue_flags |= qflags::ENQUEUE_HEAD;
        }
        if queued {
            self.tasks[p as usize].on_rq = OnRq::Queued;
            self.enqueue_task(cpu, p, queue_flags);
        }
        if running {
            next_class.set_next_task_running(self, cpu, p);
        }
        self.check_class_changed(cpu, p, prev_class, oldprio);
        self.balance_callbacks(cpu);
    }

    /// `check_class_changed()`: after a priority or policy change, the old
    /// class lets go and the new one takes the task (`switched_from()`,
    /// `switched_to()`), or, within one class, it hears of the new
    /// priority (`prio_changed()`).
    pub(crate) fn check_class_changed(&mut self, cpu: usize, p: TaskId, prev_class: SchedClass, oldprio: i32) {
        let class = self.class_of(p);
        if prev_class != class {
            prev_class.switched_from(self, cpu, p);
            class.switched_to(self, cpu, p);
        } else if oldprio != self.tasks[p as usize].prio {
            class.prio_changed(self, cpu, p, oldprio);
        }
    }
}
