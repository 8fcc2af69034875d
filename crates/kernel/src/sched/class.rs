//! The class table: sched.h's `struct sched_class`, one entry per class in
//! the `DEFINE_SCHED_CLASS()` order (stop > dl > rt > fair > idle), each
//! operation dispatched to the class's own function in its file.
//!
//! Core reaches a class only through [`SchedClass`], as core.c reaches one
//! only through `p->sched_class`; nothing outside this file (and the RT
//! class's own code) asks whether a task is RT.
//!
//! Follows 6.12.x. Simplified: the stopper and the fair server are not tasks,
//! so no task is ever in the stop class ([`Kernel::class_of`] returns dl, rt
//! or fair, and idle stands for "no task"). The stop class's turn is taken
//! by `__schedule()` before the pick (its work is queued as
//! `stop_work_pending`, see [`crate::stop_task`]); the dl class holds the
//! SCHED_DEADLINE tasks and the fair server, which picks from the fair class.

use crate::core::Kernel;
use crate::deadline::MAX_DL_PRIO;
use crate::sched::{TaskId, MAX_RT_PRIO};

/// `struct sched_class`, in priority order: a lower variant outranks a
/// higher one (`sched_class_above()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SchedClass {
    /// `stop_sched_class`: the `migration/N` stopper.
    Stop,
    /// `dl_sched_class`: SCHED_DEADLINE tasks and `rq->fair_server`.
    Dl,
    /// `rt_sched_class`: SCHED_FIFO, SCHED_RR and PI-boosted tasks.
    Rt,
    /// `fair_sched_class`: SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE.
    Fair,
    /// `idle_sched_class`: the idle task (`rq->curr == None`).
    Idle,
}

impl SchedClass {
    /// The classes `__pick_next_task()` walks after the stop class's turn,
    /// highest first (`for_each_active_class()`).
    pub const PICK_ORDER: [SchedClass; 4] = [SchedClass::Dl, SchedClass::Rt, SchedClass::Fair, SchedClass::Idle];

    /// `__setscheduler_class()` for a task of effective priority `prio`
    /// (`dl_prio()`, `rt_prio()`).
    pub fn of_prio(prio: i32) -> SchedClass {
        if prio < MAX_DL_PRIO {
            SchedClass::Dl
        } else if prio < MAX_RT_PRIO {
            SchedClass::Rt
        } else {
            SchedClass::Fair
        }
    }

    /// `sched_class_above(self, other)`.
    pub fn above(self, other: SchedClass) -> bool {
        self < other
    }

    /// `class->enqueue_task()`. Fair's enqueue starts the fair server
    /// (`dl_server_start()` in `enqueue_task_fair()`).
    pub(crate) fn enqueue_task(self, k: &mut Kernel, cpu: usize, t: TaskId, flags: u32) {
        match self {
            SchedClass::Dl => k.enqueue_task_dl(cpu, t, flags),
            SchedClass::Rt => k.enqueue_task_rt(cpu, t, flags),
            SchedClass::Fair => {
                let (was_empty, was_idle) = (k.rqs[cpu].cfs.h_nr_queued == 0, k.rqs[cpu].nr_running == 0);
                k.enqueue_task_fair(cpu, t, flags);
                k.dl_server_start(cpu, was_empty, was_idle);
            }
            SchedClass::Stop | SchedClass::Idle => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->dequeue_task()`: false when the class kept the task queued
    /// (fair's DELAY_DEQUEUE).
    pub(crate) fn dequeue_task(self, k: &mut Kernel, cpu: usize, t: TaskId, flags: u32) -> bool {
        match self {
            SchedClass::Dl => {
                k.dequeue_task_dl(cpu, t, flags);
                true
            }
            SchedClass::Rt => {
                k.dequeue_task_rt(cpu, t);
                true
            }
            SchedClass::Fair => {
                let done = k.dequeue_task_fair(cpu, t, flags);
                if k.rqs[cpu].cfs.h_nr_queued == 0 {
                    k.dl_server_stop_on_empty(cpu);
                }
                done
            }
            SchedClass::Stop | SchedClass::Idle => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->yield_task()` for the running task of `cpu` (idle: nothing).
    pub(crate) fn yield_task(self, k: &mut Kernel, cpu: usize) {
        match self {
            SchedClass::Dl => k.yield_task_dl(cpu),
            SchedClass::Rt => k.yield_task_rt(cpu),
            SchedClass::Fair => k.yield_task_fair(cpu),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }

    /// `class->wakeup_preempt()`: `p` of this class woke where a task of
    /// the same class runs. The idle class's always reschedules.
    pub(crate) fn wakeup_preempt(self, k: &mut Kernel, cpu: usize, p: TaskId, wake_flags: u32) {
        match self {
            SchedClass::Dl => k.wakeup_preempt_dl(cpu, p),
            SchedClass::Rt => k.wakeup_preempt_rt(cpu, p),
            SchedClass::Fair => k.check_preempt_wakeup_fair(cpu, p, wake_flags),
            SchedClass::Idle => k.resched_curr(cpu),
            SchedClass::Stop => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->balance()` of prev's class before the pick (`prev_balance()`).
    /// Fair's newidle balance runs inside its own pick, as
    /// `pick_next_task_fair()` does.
    pub(crate) fn balance(self, k: &mut Kernel, cpu: usize, prev: TaskId) {
        match self {
            SchedClass::Dl => k.balance_dl(cpu, prev),
            SchedClass::Rt => k.balance_rt(cpu, prev),
            _ => {}
        }
    }

    /// `class->pick_next_task()`, or `pick_task()` followed by
    /// `put_prev_set_next_task()`: `None` lets the next class try.
    ///
    /// * dl: a serving fair server picks from the fair class, above RT.
    /// * rt: the head of the best list.
    /// * fair: an RT prev is put back before the fair pick (so its runtime
    ///   is charged first); `pick_next_task_fair()` puts a fair prev itself,
    ///   or here when nothing is picked and the CPU goes idle.
    /// * idle: the idle task, `None`.
    pub(crate) fn pick_next_task(self, k: &mut Kernel, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
        match self {
            SchedClass::Stop => None,
            SchedClass::Dl => {
                // The earliest deadline among the tasks and the fair server
                // (`__pick_task_dl()`); a server with nothing to serve stops
                // and the tasks are looked at again.
                let task = k.pick_task_dl(cpu);
                let server_first =
                    task.is_none_or(|(_, d)| crate::deadline::dl_time_before(k.rqs[cpu].fair_server.deadline, d));
                if server_first && k.fair_server_pick(cpu) {
                    return SchedClass::Fair.pick_next_task(k, cpu, prev);
                }
                let (next, _) = task?;
                if prev != Some(next) {
                    if let Some(p) = prev {
                        k.put_prev_task(cpu, p);
                    }
                    k.set_next_task_dl(cpu, next, true);
                }
                k.rqs[cpu].curr = Some(next);
                Some(next)
            }
            SchedClass::Rt => {
                if !k.rt_runnable(cpu) {
                    return None;
                }
                let next = k.pick_task_rt(cpu).expect("rt_nr_running > 0");
                if prev != Some(next) {
                    if let Some(p) = prev {
                        k.put_prev_task(cpu, p);
                    }
                    k.set_next_task_rt(cpu, next, true);
                }
                k.rqs[cpu].curr = Some(next);
                Some(next)
            }
            SchedClass::Fair => {
                let fair_prev = match prev {
                    Some(p) if k.class_of(p) != SchedClass::Fair => {
                        k.put_prev_task(cpu, p);
                        None
                    }
                    _ => prev,
                };
                let next = k.pick_next_task_fair(cpu, fair_prev);
                if next.is_none() {
                    if let Some(p) = fair_prev {
                        k.put_prev_task_fair(cpu, p);
                    }
                }
                next
            }
            SchedClass::Idle => None,
        }
    }

    /// `class->put_prev_task()`.
    pub(crate) fn put_prev_task(self, k: &mut Kernel, cpu: usize, p: TaskId) {
        match self {
            SchedClass::Dl => k.put_prev_task_dl(cpu, p),
            SchedClass::Rt => k.put_prev_task_rt(cpu, p),
            SchedClass::Fair => k.put_prev_task_fair(cpu, p),
            SchedClass::Stop | SchedClass::Idle => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->set_next_task(rq, p, first = false)`: a running task (re)enters
    /// this class, e.g. when a PI boost starts or ends.
    pub(crate) fn set_next_task_running(self, k: &mut Kernel, cpu: usize, p: TaskId) {
        match self {
            SchedClass::Dl => k.set_next_task_dl(cpu, p, false),
            SchedClass::Rt => k.set_next_task_rt(cpu, p, false),
            SchedClass::Fair => k.set_next_task_fair_running(cpu, p),
            SchedClass::Stop | SchedClass::Idle => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->task_tick()` for `cpu`'s running task `curr` (idle: nothing).
    pub(crate) fn task_tick(self, k: &mut Kernel, cpu: usize, curr: TaskId) {
        match self {
            SchedClass::Dl => k.task_tick_dl(cpu),
            SchedClass::Rt => k.task_tick_rt(cpu, curr),
            SchedClass::Fair => k.task_tick_fair(cpu),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }

    /// `class->update_curr()`: charge the running task up to the rq clock.
    pub(crate) fn update_curr(self, k: &mut Kernel, cpu: usize) {
        match self {
            SchedClass::Dl => k.update_curr_dl(cpu),
            SchedClass::Rt => k.update_curr_rt(cpu),
            SchedClass::Fair => k.update_curr_fair(cpu),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }

    /// `class->task_woken()`: after a wakeup's enqueue (dl and rt have one).
    pub(crate) fn task_woken(self, k: &mut Kernel, cpu: usize, p: TaskId) {
        match self {
            SchedClass::Dl => k.task_woken_dl(cpu, p),
            SchedClass::Rt => k.task_woken_rt(cpu, p),
            _ => {}
        }
    }

    /// `class->select_task_rq()`.
    pub(crate) fn select_task_rq(self, k: &mut Kernel, p: TaskId, cpu: usize, wake_flags: u32) -> usize {
        match self {
            SchedClass::Dl => k.select_task_rq_dl(p, cpu, wake_flags),
            SchedClass::Rt => k.select_task_rq_rt(p, cpu, wake_flags),
            SchedClass::Fair => k.select_task_rq_fair(p, cpu, wake_flags),
            SchedClass::Stop | SchedClass::Idle => unreachable!("no {self:?} tasks"),
        }
    }

    /// `class->switching_to()`: `p` is about to be enqueued in this class
    /// for the first time (an RR slice for a task entering RT).
    pub(crate) fn switching_to(self, k: &mut Kernel, p: TaskId) {
        if self == SchedClass::Rt {
            k.rt_init_slice(p);
        }
    }

    /// `class->switched_from()`: `p` left this class.
    pub(crate) fn switched_from(self, k: &mut Kernel, cpu: usize, p: TaskId) {
        match self {
            SchedClass::Dl => k.switched_from_dl(cpu, p),
            SchedClass::Rt => k.switched_from_rt(cpu, p),
            _ => {}
        }
    }

    /// `class->switched_to()`: `p` entered this class.
    pub(crate) fn switched_to(self, k: &mut Kernel, cpu: usize, p: TaskId) {
        match self {
            SchedClass::Dl => k.switched_to_dl(cpu, p),
            SchedClass::Rt => k.switched_to_rt(cpu, p),
            SchedClass::Fair => k.switched_to_fair(cpu, p),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }

    /// `class->prio_changed()`: `p` stayed in this class at a new priority.
    pub(crate) fn prio_changed(self, k: &mut Kernel, cpu: usize, p: TaskId, oldprio: i32) {
        match self {
            SchedClass::Dl => k.prio_changed_dl(cpu, p),
            SchedClass::Rt => k.prio_changed_rt(cpu, p, oldprio),
            SchedClass::Fair => k.prio_changed_fair(cpu, p, oldprio),
            SchedClass::Stop | SchedClass::Idle => {}
        }
    }
}

impl Kernel {
    /// `p->sched_class`.
    pub fn class_of(&self, t: TaskId) -> SchedClass {
        SchedClass::of_prio(self.tasks[t as usize].prio)
    }

    /// `rq->curr->sched_class`: idle when the idle task runs.
    pub fn class_of_curr(&self, cpu: usize) -> SchedClass {
        self.rqs[cpu].curr.map_or(SchedClass::Idle, |c| self.class_of(c))
    }

    /// `p->sched_class == &rt_sched_class`, for the RT class's own code.
    pub(crate) fn task_is_rt(&self, t: TaskId) -> bool {
        self.class_of(t) == SchedClass::Rt
    }

    /// `rt_task(p)`: an RT *priority*, which deadline tasks have too (the
    /// RT class's placement treats a running deadline task as above it).
    pub(crate) fn task_has_rt_prio(&self, t: TaskId) -> bool {
        self.tasks[t as usize].prio < MAX_RT_PRIO
    }
}
