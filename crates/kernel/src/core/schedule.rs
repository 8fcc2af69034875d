//! `core.c`'s `__schedule()` and what surrounds it: the class pick
//! (`__pick_next_task()`, `put_prev_task()`), the context switch and its
//! `sched_switch` trace (`finish_task_switch()`), the preludes of the callers
//! of `schedule()` (`set_current_state()`, `do_sched_yield()`), and
//! `sched_tick()`.
//!
//! Follows 6.12.x; simplified as described in [`crate::core`].

use super::stopper_pid;
use crate::core::{Kernel, Outbox};
use crate::sched::class::SchedClass;
use crate::sched::*;
use schedlab_trace::{Event, EventKind, Pid, PrevState};

fn prev_pid_prio(k: &Kernel, t: Option<TaskId>) -> (Pid, i32) {
    t.map(|t| (k.tasks[t as usize].pid, k.tasks[t as usize].prio)).unwrap_or((0, 120))
}

/// What `__schedule()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    pub prev: Option<TaskId>,
    pub next: Option<TaskId>,
}

impl Switch {
    pub fn switched(&self) -> bool {
        self.prev != self.next
    }
}

impl Kernel {
    /// `set_current_state()`: the running task on `cpu` is about to sleep.
    pub fn set_current_state(&mut self, cpu: usize, state: TaskState) {
        let t = self.rqs[cpu].curr.expect("set_current_state on an idle CPU");
        self.tasks[t as usize].state = state;
    }

    /// `do_sched_yield()` minus the `schedule()` the caller performs next.
    pub fn sched_yield(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            k.class_of_curr(cpu).yield_task(k, cpu);
        })
    }

    /// `__pick_next_task()`: prev's class balances first (`prev_balance()`:
    /// RT pulls when an RT prev lowers the CPU's RT level), the fair server
    /// stops if it has nothing left to serve, then each class in
    /// [`SchedClass::PICK_ORDER`] may pick — the stop class already had its
    /// turn in `schedule()`. `put_prev`/`set_next` run only when the task
    /// changes, as in `put_prev_set_next_task()`.
    /// Simplified: no core scheduling, no sched_ext, no fast path (the walk
    /// gives the same answer).
    fn pick_next_task(&mut self, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
        if let Some(p) = prev {
            self.class_of(p).balance(self, cpu, p);
        }
        for class in SchedClass::PICK_ORDER {
            if let Some(next) = class.pick_next_task(self, cpu, prev) {
                return Some(next);
            }
        }
        None
    }

    /// `put_prev_task()` of `p`'s class.
    pub(crate) fn put_prev_task(&mut self, cpu: usize, p: TaskId) {
        self.class_of(p).put_prev_task(self, cpu, p);
    }

    /// `__schedule()`. `preempt` is SM_PREEMPT (an involuntary switch: the
    /// task stays runnable whatever its state); otherwise a task whose state
    /// is not TASK_RUNNING is blocked first. Queued stopper work (active
    /// balance, the soft-lockup watchdog) runs first, as the stop class outranks everything: prev is
    /// switched out to `migration/N`, the stopper's work runs, then the next
    /// task is picked.
    pub fn schedule(&mut self, cpu: usize, now: u64, preempt: bool, out: &mut Outbox) -> Switch {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            let prev = k.rqs[cpu].curr;
            let prev_state = prev.map(|t| k.tasks[t as usize].state);
            if let (Some(p), Some(state)) = (prev, prev_state) {
                if !preempt && state != TaskState::Running {
                    // try_to_block_task(): TASK_DEAD is a special state, never delayed.
                    let special = if state == TaskState::Dead { qflags::DEQUEUE_SPECIAL } else { 0 };
                    k.block_task(cpu, p, qflags::DEQUEUE_NOCLOCK | special);
                }
            }
            let trace_state = match prev_state {
                None => PrevState::Running { preempt: false },
                Some(_) if preempt => PrevState::Running { preempt: true },
                Some(TaskState::Running) => PrevState::Running { preempt: false },
                Some(TaskState::Uninterruptible) => PrevState::DiskSleep,
                Some(TaskState::Dead) => PrevState::Dead,
                Some(_) => PrevState::Sleeping,
            };
            let mut from = prev;
            let mut from_state = trace_state;
            if k.rqs[cpu].stop_work_pending {
                k.rqs[cpu].stop_work_pending = false;
                if let Some(p) = prev {
                    // The watchdog's stopper preempts RT tasks too.
                    k.put_prev_task(cpu, p);
                    k.tasks[p as usize].on_cpu = false;
                    k.account_switch_out(p, preempt, prev_state);
                }
                k.rqs[cpu].curr = None;
                let stopper = stopper_pid(cpu);
                k.trace_switch(cpu, prev_pid_prio(k, prev), trace_state, (stopper, 0));
                k.rqs[cpu].stopper_running = true;
                k.migration_cpu_stop(cpu);
                k.active_load_balance_cpu_stop(cpu);
                k.rqs[cpu].stopper_running = false;
                from = None;
                from_state = PrevState::Sleeping;
                // The stopper is the task switched away from next.
                k.rqs[cpu].stopper_ran = true;
            }
            let next = k.pick_next_task(cpu, from);
            let rq = &mut k.rqs[cpu];
            rq.need_resched = false;
            rq.need_resched_lazy = false;
            let stopper_ran = std::mem::take(&mut rq.stopper_ran);
            if next != from || stopper_ran {
                let rq = &mut k.rqs[cpu];
                rq.nr_switches += 1;
                rq.curr = next;
                k.account_busy(cpu, next.is_some());
                if from.is_none() && next.is_some() {
                    k.fair_server_idle_exit(cpu);
                }
                let now = k.now;
                let rq = &mut k.rqs[cpu];
                rq.idle_since = next.is_none().then_some(now);
                if next.is_none() {
                    rq.idle_stamp = Some(rq.clock);
                    k.fair_server_idle_enter(cpu);
                    // set_next_task_idle() → update_idle_core(); the tick stops (NOHZ).
                    k.__update_idle_core(cpu);
                    k.update_idle_rq_clock_pelt(cpu);
                    k.nohz_balance_enter_idle(cpu);
                }
                // A switch completes the one before it (the kernel's
                // finish_task_switch() runs in the next task's context): also
                // when this one starts from idle or from the stopper, whose
                // pick may be the task still switching out here.
                k.finish_task_switch(cpu);
                for t in [from, next].into_iter().flatten() {
                    k.touched.task(t);
                }
                if let Some(p) = from {
                    // prev stays on_cpu until the switch completes.
                    k.rqs[cpu].switching_out = Some(p);
                    k.account_switch_out(p, preempt, prev_state);
                }
                if let Some(n) = next {
                    k.tasks[n as usize].on_cpu = true;
                }
                let from_pid = if stopper_ran { (stopper_pid(cpu), 0) } else { prev_pid_prio(k, from) };
                k.trace_switch(cpu, from_pid, from_state, prev_pid_prio(k, next));
            }
            // finish_task_switch() / the no-switch path: run queued balance callbacks.
            k.balance_callbacks(cpu);
            Switch { prev, next }
        })
    }

    fn account_switch_out(&mut self, p: TaskId, preempt: bool, state: Option<TaskState>) {
        if preempt || state == Some(TaskState::Running) {
            self.tasks[p as usize].nivcsw += 1;
        } else {
            self.tasks[p as usize].nvcsw += 1;
        }
    }

    /// `sched_switch`, recorded in the context of the task switched away from.
    fn trace_switch(&mut self, cpu: usize, prev: (Pid, i32), prev_state: PrevState, next: (Pid, i32)) {
        if self.trace {
            self.out.events.push(Event {
                ts: self.now,
                cpu: cpu as u32,
                ctx_pid: prev.0,
                flags: *b"d..2.",
                kind: EventKind::SchedSwitch {
                    prev_pid: prev.0,
                    prev_prio: prev.1,
                    prev_state,
                    next_pid: next.0,
                    next_prio: next.1,
                },
            });
        }
    }

    /// `finish_task_switch()`: the previous task is off the CPU for good
    /// (`prev->on_cpu = 0`). The simulator calls it when the context switch
    /// cost has been paid; a wakeup that must wait for it calls it early.
    pub fn finish_task_switch(&mut self, cpu: usize) {
        if let Some(p) = self.rqs[cpu].switching_out.take() {
            self.touched.cpu(cpu);
            self.touched.task(p);
            self.tasks[p as usize].on_cpu = false;
        }
    }

    /// A task still switching out of its CPU (the previous task of a switch
    /// whose cost the simulator is still charging) is off that CPU by the
    /// time a balance callback or a remote puller can move it: in 6.12's
    /// `finish_task_switch()`, `finish_task()` clears `prev->on_cpu` before
    /// `finish_lock_switch()` runs the callbacks and drops the runqueue lock
    /// the puller needs. Without this a push moved a preempted task that
    /// the model still had on its old CPU (found by `schedlab hunt`).
    pub(crate) fn finish_switch_of(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        if self.rqs[cpu].switching_out == Some(t) {
            self.finish_task_switch(cpu);
        }
    }

    /// `sched_tick()` on `cpu`: promote a lazy reschedule, the class tick,
    /// then `sched_balance_trigger()`; the SCHED_SOFTIRQ it raises runs at
    /// the end of the tick interrupt.
    pub fn sched_tick(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            if k.rqs[cpu].need_resched_lazy {
                k.resched_curr(cpu);
            }
            if let Some(c) = k.rqs[cpu].curr {
                k.class_of(c).task_tick(k, cpu, c);
            }
            k.rqs[cpu].idle_balance = k.idle_cpu(cpu);
            if k.sched_balance_trigger(cpu) {
                k.sched_balance_softirq(cpu);
            }
        })
    }

    /// Bring curr's accounting up to `now` (what any `update_curr()` caller
    /// would do) without other side effects; used before reading runtimes.
    pub fn sync_curr(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            k.class_of_curr(cpu).update_curr(k, cpu);
        })
    }
}
