//! The model's `kernel/sched/syscalls.c`: `sched_setattr()` on a task, i.e.
//! `__sched_setscheduler()` with its policy, nice and RT priority.
//!
//! Follows 6.12.x. Simplified: no change to or from SCHED_DEADLINE at run
//! time (a deadline task gets its reservation at creation), uclamp per task
//! (its rules are in `fair/capacity.rs`), no
//! `SCHED_FLAG_KEEP_PARAMS` or `RESET_ON_FORK`; the permission and
//! bandwidth checks are the caller's (the scenario parser refuses what the
//! kernel would refuse); a fair task's custom slice is cleared, as a
//! `sched_attr` without `sched_runtime` clears it.

use crate::core::{Kernel, Outbox};
use crate::pelt;
use crate::sched::class::SchedClass;
use crate::sched::*;

/// A task's scheduling parameters as `sched_setattr()` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedAttr {
    pub policy: Policy,
    /// Fair policies only (−20..19).
    pub nice: i32,
    /// FIFO/RR only (1..99).
    pub rt_priority: u32,
}

impl SchedAttr {
    /// `__normal_prio()`.
    fn normal_prio(&self) -> i32 {
        match self.policy {
            Policy::Deadline => crate::deadline::MAX_DL_PRIO - 1,
            Policy::Fifo | Policy::Rr => MAX_RT_PRIO - 1 - self.rt_priority as i32,
            Policy::Normal | Policy::Batch | Policy::Idle => DEFAULT_PRIO + self.nice,
        }
    }

    /// `set_load_weight()`'s weight: SCHED_IDLE's own, else the one of the
    /// static priority, which an RT policy leaves as it was (`static_prio`).
    fn weight(&self, static_prio: i32) -> u32 {
        match self.policy {
            Policy::Idle => WEIGHT_IDLEPRIO,
            Policy::Fifo | Policy::Rr | Policy::Deadline => {
                SCHED_PRIO_TO_WEIGHT[(static_prio - DEFAULT_PRIO + 20) as usize]
            }
            Policy::Normal | Policy::Batch => SCHED_PRIO_TO_WEIGHT[(self.nice + 20) as usize],
        }
    }
}

impl Kernel {
    /// `__sched_setscheduler()` for task `t`, called from `exec_cpu` at
    /// `now` (the task itself, in the workload). Returns false when nothing
    /// changed (the kernel's early return for identical parameters).
    ///
    /// The order is the kernel's: a delayed task leaving the fair class
    /// finishes its sleep; the task is dequeued with DEQUEUE_SAVE|MOVE and
    /// put if running; the new parameters and weight are set (a fair task's
    /// lag rescaled to the new weight, `reweight_entity()` off the queue);
    /// it is enqueued again — at the head of its RT level when its priority
    /// number grew — and the classes' switched/prio_changed hooks run. A task
    /// boosted by PI keeps the boost (`rt_effective_prio()`).
    pub fn sched_setscheduler(
        &mut self,
        t: TaskId,
        attr: SchedAttr,
        now: u64,
        exec_cpu: usize,
        out: &mut Outbox,
    ) -> bool {
        self.entry(now, exec_cpu, out, |k| k.__sched_setscheduler(t, attr))
    }

    fn __sched_setscheduler(&mut self, p: TaskId, attr: SchedAttr) -> bool {
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        let task = &self.tasks[p as usize];
        if task.policy == attr.policy {
            let same = if !attr.policy.is_fair() {
                task.rt_priority == attr.rt_priority
            } else {
                task.static_prio == DEFAULT_PRIO + attr.nice && !task.se.custom_slice
            };
            if same {
                return false;
            }
        }
        let oldprio = task.prio;
        let mut newprio = attr.normal_prio();
        let mut queue_flags = qflags::DEQUEUE_SAVE | qflags::DEQUEUE_MOVE | qflags::DEQUEUE_NOCLOCK;
        // rt_effective_prio(): a PI boost above the new priority stays.
        if task.prio < task.normal_prio {
            newprio = newprio.min(task.prio);
            if newprio == oldprio {
                queue_flags &= !qflags::DEQUEUE_MOVE;
            }
        }
        let prev_class = self.class_of(p);
        let next_class = SchedClass::of_prio(newprio);
        if prev_class != next_class && self.tasks[p as usize].se.sched_delayed {
            self.dequeue_task(cpu, p, qflags::DEQUEUE_SLEEP | qflags::DEQUEUE_DELAYED | qflags::DEQUEUE_NOCLOCK);
        }
        let queued = self.tasks[p as usize].on_rq == OnRq::Queued;
        let running = self.rqs[cpu].curr == Some(p);
        if queued {
            self.dequeue_task(cpu, p, queue_flags);
        }
        if running {
            self.put_prev_task(cpu, p);
        }
        self.__setscheduler_params(p, cpu, attr, prev_class);
        self.tasks[p as usize].prio = newprio;
        // check_class_changing()
        if prev_class != next_class {
            next_class.switching_to(self, p);
        }
        if queued {
            let mut flags = qflags::ENQUEUE_RESTORE | qflags::ENQUEUE_NOCLOCK;
            if oldprio < newprio {
                flags |= qflags::ENQUEUE_HEAD;
            }
            self.tasks[p as usize].on_rq = OnRq::Queued;
            self.enqueue_task(cpu, p, flags);
        }
        if running {
            next_class.set_next_task_running(self, cpu, p);
        }
        self.check_class_changed(cpu, p, prev_class, oldprio);
        self.balance_callbacks(cpu);
        true
    }

    /// `__setscheduler_params()` → `set_load_weight(p, true)`: the policy,
    /// static and normal priority, RT priority, slice and weight. While the
    /// task is still in the fair class its class reweights it
    /// (`reweight_task_fair()` → `reweight_entity()` with the entity off the
    /// queue: the lag scales by old/new weight and the PELT load average is
    /// recomputed); otherwise the weight is simply set.
    fn __setscheduler_params(&mut self, p: TaskId, cpu: usize, attr: SchedAttr, class: SchedClass) {
        let base_slice = self.base_slice;
        let task = &mut self.tasks[p as usize];
        let new_weight = attr.weight(task.static_prio);
        task.policy = attr.policy;
        if attr.policy.is_fair() {
            task.static_prio = DEFAULT_PRIO + attr.nice;
            task.se.custom_slice = false;
            task.se.slice = base_slice;
        }
        task.rt_priority = attr.rt_priority;
        task.normal_prio = attr.normal_prio();
        self.set_load_weight(p, cpu, new_weight, class);
    }

    /// `set_load_weight(p, true)`: a task of the fair class, off the queue,
    /// is reweighted by its class (its lag scaled by old/new weight, its
    /// PELT load recomputed); any other just gets the weight.
    fn set_load_weight(&mut self, p: TaskId, cpu: usize, new_weight: u32, class: SchedClass) {
        let task = &mut self.tasks[p as usize];
        let old_weight = task.se.load.weight;
        if class == SchedClass::Fair && !task.se.on_rq {
            if new_weight != old_weight {
                task.se.vlag = task.se.vlag * old_weight as i64 / new_weight as i64;
            }
            // The task's own cfs_rq (its group's on `cpu`).
            debug_assert_eq!(self.tasks[p as usize].cpu, cpu);
            let q = self.cfs_rq_of(p);
            let (cfs, task) = self.cfs_and_entity(q, p);
            pelt::reweight_entity_load_avg(&mut cfs.avg, &mut task.se.avg, old_weight as u64, new_weight as u64);
        }
        self.tasks[p as usize].se.load = LoadWeight::new(new_weight);
    }

    /// `set_user_nice()` (syscalls.c, 6.12), what `setpriority()` calls: an RT
    /// task only records the nice value (it matters once it is fair again);
    /// a fair one is dequeued with DEQUEUE_SAVE, reweighted, enqueued again
    /// and its class told (`prio_changed_fair()`: the running task whose
    /// priority dropped reschedules). Unlike `sched_setscheduler()` a custom
    /// slice stays. Returns false when the nice value is already that.
    pub fn set_user_nice(&mut self, t: TaskId, nice: i32, now: u64, exec_cpu: usize, out: &mut Outbox) -> bool {
        self.entry(now, exec_cpu, out, |k| k.__set_user_nice(t, nice))
    }

    fn __set_user_nice(&mut self, p: TaskId, nice: i32) -> bool {
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        let task = &self.tasks[p as usize];
        if task.static_prio == DEFAULT_PRIO + nice {
            return false;
        }
        if !task.policy.is_fair() {
            self.tasks[p as usize].static_prio = DEFAULT_PRIO + nice;
            return true;
        }
        let class = self.class_of(p);
        let queued = task.on_rq == OnRq::Queued;
        let running = self.rqs[cpu].curr == Some(p);
        if queued {
            self.dequeue_task(cpu, p, qflags::DEQUEUE_SAVE | qflags::DEQUEUE_NOCLOCK);
        }
        if running {
            self.put_prev_task(cpu, p);
        }
        let attr = SchedAttr { policy: self.tasks[p as usize].policy, nice, rt_priority: 0 };
        self.tasks[p as usize].static_prio = DEFAULT_PRIO + nice;
        self.tasks[p as usize].normal_prio = attr.normal_prio();
        self.set_load_weight(p, cpu, attr.weight(DEFAULT_PRIO + nice), class);
        let task = &mut self.tasks[p as usize];
        let oldprio = task.prio;
        // effective_prio(): a PI boost into RT stays.
        if task.prio >= MAX_RT_PRIO {
            task.prio = task.normal_prio;
        }
        if queued {
            self.tasks[p as usize].on_rq = OnRq::Queued;
            self.enqueue_task(cpu, p, qflags::ENQUEUE_RESTORE | qflags::ENQUEUE_NOCLOCK);
        }
        if running {
            class.set_next_task_running(self, cpu, p);
        }
        self.check_class_changed(cpu, p, class, oldprio);
        true
    }
}

impl Kernel {
    /// The uclamp half of `__sched_setscheduler()` (`uclamp_validate()`,
    /// `__setscheduler_uclamp()`, core.c 6.12): set the clamps `p` asks for
    /// (`None` leaves one as it is) and turn on the `sched_uclamp_used` key.
    /// The caller has checked the values (0..=1024, min <= max), as
    /// `uclamp_validate()` would with EINVAL. The runqueue aggregation a
    /// queued task's new clamp would update is not modeled (module doc).
    pub fn sched_setattr_uclamp(&mut self, p: TaskId, min: Option<u32>, max: Option<u32>) {
        let t = &mut self.tasks[p as usize];
        let (lo, hi) = (min.or(t.uclamp_min), max.unwrap_or(t.uclamp_max));
        let floor = lo.unwrap_or(0);
        debug_assert!(floor <= hi && hi as u64 <= pelt::SCHED_CAPACITY_SCALE, "uclamp {floor}..{hi} not validated");
        (t.uclamp_min, t.uclamp_max) = (lo, hi);
        self.uclamp_used = true;
    }
}
