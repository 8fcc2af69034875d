//! The RT class (`kernel/sched/rt.c`): SCHED_FIFO and SCHED_RR on per-CPU
//! priority lists, wakeup preemption, RR time slices, CPU selection at
//! wakeup, and the push/pull balancing between CPUs in both forms
//! (RT_PUSH_IPI's irq_work chain, and the direct pull loop). `cpupri.c` is
//! the submodule `cpupri`.
//!
//! Follows 6.12.x. Simplified: no RT_GROUP_SCHED (and so no RT throttling by
//! `sched_rt_runtime_us`, as in 6.12 without it), no migrate-disable
//! (`push_cpu_stop`), no asymmetric-capacity fitness. A running deadline
//! task counts as above every RT priority (`rt_task()` is true for it).

use crate::core::{IpiKind, Kernel, Outbox};
use crate::features::Feature;
use crate::sched::class::SchedClass;
use crate::sched::{qflags::*, wflags::*, OnRq, Policy, TaskId, MAX_RT_PRIO};
use crate::topology::sd_flags::SD_WAKE_AFFINE;
use schedlab_topology::CpuSet;
use schedlab_trace::{EventKind, RtBalanceResult, RtBalanceResult::*};

mod cpupri;

/// `RR_TIMESLICE` at HZ: 100 ms worth of ticks.
fn rr_timeslice_ticks(tick_ns: u64) -> u32 {
    (100_000_000 / tick_ns).max(1) as u32
}

/// `RT_MAX_TRIES` of `find_lock_lowest_rq()`.
const RT_MAX_TRIES: u32 = 3;

impl Kernel {
    /// `rq->curr->prio`; the idle task ranks below every fair task.
    fn curr_prio(&self, cpu: usize) -> i32 {
        self.rqs[cpu].curr.map(|c| self.tasks[c as usize].prio).unwrap_or(MAX_RT_PRIO + 40)
    }

    /// `cpumask_any_and_distribute()`: spread choices round-robin.
    pub(crate) fn any_distribute(&mut self, mask: &CpuSet) -> Option<usize> {
        let n = self.nr_cpus();
        let start = self.distribute_cursor;
        for k in 1..=n {
            let c = (start + k) % n;
            if mask.contains(c) {
                self.distribute_cursor = c;
                return Some(c);
            }
        }
        None
    }

    /// `find_lowest_rq()`: where `p` could run at the lowest RT level.
    pub(crate) fn find_lowest_rq(&mut self, p: TaskId) -> Option<usize> {
        if self.tasks[p as usize].nr_cpus_allowed() == 1 {
            return None;
        }
        let lowest = self.cpupri_find(p)?;
        let cpu = self.tasks[p as usize].cpu;
        if lowest.contains(cpu) {
            return Some(cpu);
        }
        let this_cpu = Some(self.exec_cpu).filter(|c| lowest.contains(*c));
        for d in 0..self.domains.cpus[cpu].domains.len() {
            let dom = &self.domains.cpus[cpu].domains[d];
            if dom.flags & SD_WAKE_AFFINE != 0 {
                let span = dom.span;
                if let Some(t) = this_cpu.filter(|c| span.contains(*c)) {
                    return Some(t);
                }
                if let Some(best) = self.any_distribute(&lowest.and(&span)) {
                    return Some(best);
                }
            }
        }
        if let Some(t) = this_cpu {
            return Some(t);
        }
        self.any_distribute(&lowest)
    }

    // ---- enqueue / dequeue ----

    /// `enqueue_pushable_task()`.
    fn enqueue_pushable_task(&mut self, cpu: usize, p: TaskId) {
        let prio = self.tasks[p as usize].prio;
        let pos = {
            let tasks = &self.tasks;
            self.rqs[cpu].rt.pushable.iter().position(|&q| tasks[q as usize].prio > prio)
        };
        let rt = &mut self.rqs[cpu].rt;
        rt.pushable.retain(|&q| q != p);
        match pos {
            Some(i) => rt.pushable.insert(i.min(rt.pushable.len()), p),
            None => rt.pushable.push(p),
        }
        if prio < rt.highest_prio_next {
            rt.highest_prio_next = prio;
        }
        if !rt.overloaded {
            self.rt_set_overload(cpu);
        }
    }

    /// `dequeue_pushable_task()`.
    fn dequeue_pushable_task(&mut self, cpu: usize, p: TaskId) {
        self.rqs[cpu].rt.pushable.retain(|&q| q != p);
        let next = self.rqs[cpu].rt.pushable.first().map(|&q| self.tasks[q as usize].prio);
        let rt = &mut self.rqs[cpu].rt;
        match next {
            Some(prio) => rt.highest_prio_next = prio,
            None => {
                rt.highest_prio_next = MAX_RT_PRIO - 1;
                if rt.overloaded {
                    self.rt_clear_overload(cpu);
                }
            }
        }
    }

    /// `rt_set_overload()`.
    fn rt_set_overload(&mut self, cpu: usize) {
        self.rqs[cpu].rt.overloaded = true;
        let rd = &mut self.rds[self.rqs[cpu].rd];
        rd.rto_mask.insert(cpu);
        rd.rto_count += 1;
    }

    /// `rt_clear_overload()`.
    fn rt_clear_overload(&mut self, cpu: usize) {
        self.rqs[cpu].rt.overloaded = false;
        let rd = &mut self.rds[self.rqs[cpu].rd];
        rd.rto_count -= 1;
        rd.rto_mask.remove(cpu);
    }

    /// `highest_prio.curr` after `inc_rt_prio()` / `dec_rt_prio()`: the
    /// first set bit of the priority bitmap (`sched_find_first_bit()`).
    fn recompute_highest_prio(&mut self, cpu: usize) {
        let rt = &mut self.rqs[cpu].rt;
        rt.highest_prio_curr = if rt.bitmap == 0 { MAX_RT_PRIO - 1 } else { rt.bitmap.trailing_zeros() as i32 };
    }

    /// `enqueue_task_rt()`: tail of its priority list (head with
    /// ENQUEUE_HEAD), pushable unless running or pinned.
    pub(crate) fn enqueue_task_rt(&mut self, cpu: usize, p: TaskId, flags: u32) {
        let task = &self.tasks[p as usize];
        let prio = task.prio as usize;
        let rr = task.policy == Policy::Rr;
        let rt = &mut self.rqs[cpu].rt;
        if flags & ENQUEUE_HEAD != 0 {
            rt.queue[prio].push_front(p);
        } else {
            rt.queue[prio].push_back(p);
        }
        rt.bitmap |= 1u128 << prio;
        rt.rt_nr_running += 1;
        rt.rr_nr_running += rr as u32;
        self.recompute_highest_prio(cpu);
        self.tasks[p as usize].on_rt_rq = true;
        self.add_nr_running(cpu, 1);
        if self.rqs[cpu].curr != Some(p) && self.tasks[p as usize].nr_cpus_allowed() > 1 {
            self.enqueue_pushable_task(cpu, p);
        }
        // enqueue_top_rt_rq() kicks cpufreq.
        self.cpufreq_update_util(cpu);
    }

    /// `dequeue_task_rt()`.
    pub(crate) fn dequeue_task_rt(&mut self, cpu: usize, p: TaskId) {
        let task = &self.tasks[p as usize];
        let prio = task.prio as usize;
        let rr = task.policy == Policy::Rr;
        let rt = &mut self.rqs[cpu].rt;
        if let Some(i) = rt.queue[prio].iter().position(|&q| q == p) {
            rt.queue[prio].remove(i);
        }
        if rt.queue[prio].is_empty() {
            rt.bitmap &= !(1u128 << prio);
        }
        rt.rt_nr_running -= 1;
        rt.rr_nr_running -= rr as u32;
        self.recompute_highest_prio(cpu);
        self.tasks[p as usize].on_rt_rq = false;
        self.rqs[cpu].nr_running -= 1;
        self.dequeue_pushable_task(cpu, p);
        // dequeue_rt_entity() ends in enqueue_top_rt_rq(), which kicks cpufreq.
        self.cpufreq_update_util(cpu);
    }

    /// `requeue_task_rt()`: to the tail (or head) of its priority list.
    fn requeue_task_rt(&mut self, cpu: usize, p: TaskId, head: bool) {
        let prio = self.tasks[p as usize].prio as usize;
        let q = &mut self.rqs[cpu].rt.queue[prio];
        if let Some(i) = q.iter().position(|&x| x == p) {
            q.remove(i);
            if head {
                q.push_front(p);
            } else {
                q.push_back(p);
            }
        }
    }

    // ---- pick / put / tick ----

    /// `pick_task_rt()`: head of the highest non-empty list.
    pub(crate) fn pick_task_rt(&self, cpu: usize) -> Option<TaskId> {
        let rt = &self.rqs[cpu].rt;
        if rt.bitmap == 0 {
            return None;
        }
        rt.queue[rt.bitmap.trailing_zeros() as usize].front().copied()
    }

    /// `set_next_task_rt()`: the running task is not pushable; on a real
    /// switch (`first`), `avg_rt` is brought up to now as idle time when the
    /// CPU comes from another class (`rq->curr` is still the previous task),
    /// and a push of what is left is queued.
    pub(crate) fn set_next_task_rt(&mut self, cpu: usize, p: TaskId, first: bool) {
        self.tasks[p as usize].se.exec_start = self.rqs[cpu].clock;
        self.dequeue_pushable_task(cpu, p);
        if !first {
            return;
        }
        if self.class_of_curr(cpu) != SchedClass::Rt {
            self.update_rt_rq_load_avg(cpu, false);
        }
        self.rt_queue_push_tasks(cpu);
    }

    /// `put_prev_task_rt()`: the time since the switch in counts in
    /// `avg_rt`; still queued and movable → pushable again.
    pub(crate) fn put_prev_task_rt(&mut self, cpu: usize, p: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu, true);
        if self.tasks[p as usize].on_rt_rq && self.tasks[p as usize].nr_cpus_allowed() > 1 {
            self.enqueue_pushable_task(cpu, p);
        }
    }

    /// `update_curr_rt()` → `update_curr_common()`: runtime accounting.
    pub(crate) fn update_curr_rt(&mut self, cpu: usize) {
        let Some(c) = self.rqs[cpu].curr else { return };
        if !self.task_is_rt(c) {
            return;
        }
        self.update_curr_common(cpu, c);
    }

    /// `task_tick_rt()`: `avg_rt` counts the tick's span as RT time;
    /// SCHED_RR rotates among equal priorities every 100 ms.
    pub(crate) fn task_tick_rt(&mut self, cpu: usize, p: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu, true);
        if self.tasks[p as usize].policy != Policy::Rr {
            return;
        }
        let t = &mut self.tasks[p as usize];
        t.rt_time_slice = t.rt_time_slice.saturating_sub(1);
        if t.rt_time_slice > 0 {
            return;
        }
        t.rt_time_slice = rr_timeslice_ticks(self.tick_ns);
        let prio = t.prio as usize;
        if self.rqs[cpu].rt.queue[prio].len() > 1 {
            self.requeue_task_rt(cpu, p, false);
            self.resched_curr(cpu);
        }
    }

    /// `yield_task_rt()`: the running task goes to the tail of its list.
    pub(crate) fn yield_task_rt(&mut self, cpu: usize) {
        let Some(c) = self.rqs[cpu].curr else { return };
        self.requeue_task_rt(cpu, c, false);
    }

    /// `p->rt.time_slice = sched_rr_timeslice`: a full RR slice, at creation
    /// (`__sched_fork()`) and for a task entering the RT class.
    pub(crate) fn rt_init_slice(&mut self, p: TaskId) {
        self.tasks[p as usize].rt_time_slice = rr_timeslice_ticks(self.tick_ns);
    }

    // ---- wakeup ----

    /// `wakeup_preempt_rt()`.
    pub(crate) fn wakeup_preempt_rt(&mut self, cpu: usize, p: TaskId) {
        let prio = self.tasks[p as usize].prio;
        if prio < self.curr_prio(cpu) {
            self.resched_curr(cpu);
            return;
        }
        if prio == self.curr_prio(cpu) && !self.rqs[cpu].need_resched {
            self.check_preempt_equal_prio(cpu, p);
        }
    }

    /// `check_preempt_equal_prio()`: let a wakee that cannot move take the
    /// CPU from an equal-priority task that can.
    fn check_preempt_equal_prio(&mut self, cpu: usize, p: TaskId) {
        let curr = self.rqs[cpu].curr.unwrap();
        if self.tasks[curr as usize].nr_cpus_allowed() == 1 || self.cpupri_find(curr).is_none() {
            return;
        }
        if self.tasks[p as usize].nr_cpus_allowed() != 1 && self.cpupri_find(p).is_some() {
            return;
        }
        self.requeue_task_rt(cpu, p, true);
        self.resched_curr(cpu);
    }

    /// `select_task_rq_rt()`: leave the wakee on `cpu` unless an RT task
    /// that will not yield to it runs there; then the lowest-priority CPU,
    /// if the wakee outranks that CPU's best.
    pub(crate) fn select_task_rq_rt(&mut self, p: TaskId, cpu: usize, wake_flags: u32) -> usize {
        if wake_flags & (WF_TTWU | WF_FORK) == 0 {
            return cpu;
        }
        let test = self.rqs[cpu].curr.is_some_and(|c| {
            self.task_has_rt_prio(c)
                && (self.tasks[c as usize].nr_cpus_allowed() < 2
                    || self.tasks[c as usize].prio <= self.tasks[p as usize].prio)
        });
        if test {
            if let Some(target) = self.find_lowest_rq(p) {
                if self.tasks[p as usize].prio < self.rqs[target].rt.highest_prio_curr {
                    return target;
                }
            }
        }
        cpu
    }

    /// `task_woken_rt()`: a woken RT task that will not run here soon is pushed.
    pub(crate) fn task_woken_rt(&mut self, cpu: usize, p: TaskId) {
        let Some(curr) = self.rqs[cpu].curr else { return };
        let need_to_push = !self.tasks[p as usize].on_cpu
            && !self.rqs[cpu].need_resched
            && self.tasks[p as usize].nr_cpus_allowed() > 1
            && self.task_has_rt_prio(curr)
            && (self.tasks[curr as usize].nr_cpus_allowed() < 2
                || self.tasks[curr as usize].prio <= self.tasks[p as usize].prio);
        if need_to_push {
            self.push_rt_tasks(cpu);
        }
    }

    // ---- balance callbacks ----

    /// `rt_queue_push_tasks()`.
    pub(crate) fn rt_queue_push_tasks(&mut self, cpu: usize) {
        if !self.rqs[cpu].rt.pushable.is_empty() {
            self.rqs[cpu].push_callback = true;
        }
    }

    /// `rt_queue_pull_task()`.
    pub(crate) fn rt_queue_pull_task(&mut self, cpu: usize) {
        self.rqs[cpu].pull_callback = true;
    }

    /// `__balance_callbacks()`: run what was queued on `cpu`'s runqueue.
    /// (A flag is cleared only when set: a mutable borrow of the runqueue
    /// is a write the balancer's sums recount, [`crate::sched::Runqueues`].)
    pub(crate) fn balance_callbacks(&mut self, cpu: usize) {
        if self.rqs[cpu].push_callback {
            self.rqs[cpu].push_callback = false;
            self.push_rt_tasks(cpu);
        }
        if self.rqs[cpu].pull_callback {
            self.rqs[cpu].pull_callback = false;
            self.pull_rt_task(cpu);
        }
        self.dl_balance_callback(cpu);
    }

    /// `need_pull_rt_task()` + `balance_rt()`: a CPU lowering its RT level pulls.
    pub(crate) fn balance_rt(&mut self, cpu: usize, prev: TaskId) {
        let prev_t = &self.tasks[prev as usize];
        if !prev_t.on_rt_rq && self.rqs[cpu].rt.highest_prio_curr > prev_t.prio {
            self.pull_rt_task(cpu);
        }
    }

    // ---- push ----

    /// `pick_next_pushable_task()`.
    fn pick_next_pushable_task(&self, cpu: usize) -> Option<TaskId> {
        let p = *self.rqs[cpu].rt.pushable.first()?;
        debug_assert!(self.tasks[p as usize].cpu == cpu && self.tasks[p as usize].on_rt_rq);
        Some(p)
    }

    /// `find_lock_lowest_rq()`: a CPU whose best RT priority is strictly
    /// below the task's, rechecked as the kernel does after locking.
    fn find_lock_lowest_rq(&mut self, p: TaskId, cpu: usize) -> Option<usize> {
        for _ in 0..RT_MAX_TRIES {
            let lowest = self.find_lowest_rq(p)?;
            if lowest == cpu {
                return None;
            }
            let prio = self.tasks[p as usize].prio;
            if self.rqs[lowest].rt.highest_prio_curr <= prio {
                return None;
            }
            if !self.tasks[p as usize].cpus_mask.contains(lowest) || self.pick_next_pushable_task(cpu) != Some(p) {
                return None;
            }
            if self.rqs[lowest].rt.highest_prio_curr > prio {
                return Some(lowest);
            }
        }
        None
    }

    /// `push_rt_task()`: move the first pushable task to a lower-priority CPU.
    fn push_rt_task(&mut self, cpu: usize) -> bool {
        if !self.rqs[cpu].rt.overloaded {
            return false;
        }
        let Some(mut next) = self.pick_next_pushable_task(cpu) else { return false };
        loop {
            if self.tasks[next as usize].prio < self.curr_prio(cpu) {
                self.emit_rt_push(cpu, next, None, RtBalanceResult::Resched);
                self.resched_curr(cpu);
                return false;
            }
            if self.rqs[cpu].curr == Some(next) {
                return false;
            }
            match self.find_lock_lowest_rq(next, cpu) {
                Some(lowest) => {
                    self.emit_rt_push(cpu, next, Some(lowest), RtBalanceResult::Moved);
                    self.move_queued_for_balance(next, cpu, lowest);
                    self.resched_curr(lowest);
                    return true;
                }
                None => {
                    self.emit_rt_push(cpu, next, None, RtBalanceResult::NoLowerCpu);
                    match self.pick_next_pushable_task(cpu) {
                        Some(t) if t != next => next = t,
                        _ => return false,
                    }
                }
            }
        }
    }

    fn emit_rt_push(&mut self, cpu: usize, p: TaskId, dst: Option<usize>, result: RtBalanceResult) {
        let pid = self.tasks[p as usize].pid;
        self.emit(cpu, EventKind::RtPush { pid, src_cpu: cpu as u32, dst_cpu: dst.map(|c| c as u32), result });
    }

    /// `push_rt_tasks()`.
    pub(crate) fn push_rt_tasks(&mut self, cpu: usize) {
        while self.push_rt_task(cpu) {}
    }

    // ---- pull ----

    /// `pick_highest_pushable_task()`: the best pushable task of `src` that
    /// is not running and may run on `this_cpu`.
    fn pick_highest_pushable_task(&self, src: usize, this_cpu: usize) -> Option<TaskId> {
        self.rqs[src]
            .rt
            .pushable
            .iter()
            .copied()
            .find(|&p| !self.tasks[p as usize].on_cpu && self.tasks[p as usize].cpus_mask.contains(this_cpu))
    }

    /// `pull_rt_task()`: with RT_PUSH_IPI, ask the overloaded CPUs to push
    /// (they choose among all CPUs the task may use); without it, scan them
    /// and pull only tasks allowed on this CPU.
    pub(crate) fn pull_rt_task(&mut self, this_cpu: usize) {
        let rd = &self.rds[self.rqs[this_cpu].rd];
        if rd.rto_count == 0 {
            return;
        }
        if rd.rto_count == 1 && rd.rto_mask.contains(this_cpu) {
            return;
        }
        if self.feat(Feature::RT_PUSH_IPI) {
            self.tell_cpu_to_push(this_cpu);
            return;
        }
        let mut resched = false;
        let sources: Vec<usize> = self.rds[self.rqs[this_cpu].rd].rto_mask.iter().collect();
        for src in sources {
            if src == this_cpu {
                continue;
            }
            let first_pushable = self.rqs[src].rt.pushable.first().map_or(0, |&p| self.tasks[p as usize].pid);
            if self.rqs[src].rt.highest_prio_next >= self.rqs[this_cpu].rt.highest_prio_curr {
                self.emit(this_cpu, EventKind::RtPull { src_cpu: src as u32, pid: first_pushable, result: NotHigher });
                continue;
            }
            let Some(p) = self.pick_highest_pushable_task(src, this_cpu) else {
                self.emit(
                    this_cpu,
                    EventKind::RtPull { src_cpu: src as u32, pid: first_pushable, result: NotAllowedHere },
                );
                continue;
            };
            {
                let prio = self.tasks[p as usize].prio;
                let pid = self.tasks[p as usize].pid;
                let pulled = prio < self.rqs[this_cpu].rt.highest_prio_curr && prio >= self.curr_prio(src);
                let result = if pulled { RtBalanceResult::Moved } else { NotHigher };
                self.emit(this_cpu, EventKind::RtPull { src_cpu: src as u32, pid, result });
                if pulled {
                    self.move_queued_for_balance(p, src, this_cpu);
                    resched = true;
                }
            }
        }
        if resched {
            self.resched_curr(this_cpu);
        }
    }

    /// `rto_next_cpu()`: the next overloaded CPU of the IPI chain of the
    /// executing CPU's root domain (not us).
    fn rto_next_cpu(&mut self) -> Option<usize> {
        let this_cpu = self.exec_cpu;
        let rd = &mut self.rds[self.rqs[this_cpu].rd];
        loop {
            let from = if rd.rto_cpu < 0 { 0 } else { rd.rto_cpu as usize + 1 };
            let next = rd.rto_mask.iter().find(|&c| c >= from);
            match next {
                Some(c) => {
                    rd.rto_cpu = c as i64;
                    if c == this_cpu {
                        continue;
                    }
                    return Some(c);
                }
                None => {
                    rd.rto_cpu = -1;
                    if rd.rto_loop == rd.rto_loop_next {
                        return None;
                    }
                    rd.rto_loop = rd.rto_loop_next;
                }
            }
        }
    }

    /// `tell_cpu_to_push()`: start (or extend) the RT_PUSH_IPI chain of
    /// this CPU's root domain.
    fn tell_cpu_to_push(&mut self, this_cpu: usize) {
        let rd = &mut self.rds[self.rqs[this_cpu].rd];
        rd.rto_loop_next += 1;
        if rd.rto_cpu >= 0 {
            return; // a chain is already running; it will rescan
        }
        if let Some(cpu) = self.rto_next_cpu() {
            self.rqs[cpu].rto_push_pending = true;
            self.emit(this_cpu, EventKind::RtPushIpi { dst_cpu: cpu as u32, first: true });
            self.send_ipi(cpu, IpiKind::RtPushWork);
        }
    }

    /// `rto_push_irq_work_func()` on `cpu`: push, then pass the irq_work on.
    pub fn rto_push_irq_work_func(&mut self, cpu: usize, now: u64, out: &mut Outbox) {
        self.entry(now, cpu, out, |k| {
            k.update_rq_clock(cpu);
            k.rqs[cpu].rto_push_pending = false;
            if !k.rqs[cpu].rt.pushable.is_empty() {
                while k.push_rt_task(cpu) {}
            }
            if let Some(next) = k.rto_next_cpu() {
                k.rqs[next].rto_push_pending = true;
                k.emit(cpu, EventKind::RtPushIpi { dst_cpu: next as u32, first: false });
                k.send_ipi(next, IpiKind::RtPushWork);
            }
        })
    }

    // ---- class changes ----

    /// `switched_from_rt()`: the last RT task left; pull others here.
    pub(crate) fn switched_from_rt(&mut self, cpu: usize, p: TaskId) {
        if self.tasks[p as usize].on_rq != OnRq::Queued || self.rqs[cpu].rt.rt_nr_running > 0 {
            return;
        }
        self.rt_queue_pull_task(cpu);
    }

    /// `switched_to_rt()`: the running task's time counts in `avg_rt` from
    /// now on; a queued one may push or preempt.
    pub(crate) fn switched_to_rt(&mut self, cpu: usize, p: TaskId) {
        if self.rqs[cpu].curr == Some(p) {
            self.update_rt_rq_load_avg(cpu, false);
            return;
        }
        if self.tasks[p as usize].on_rq == OnRq::Queued {
            if self.tasks[p as usize].nr_cpus_allowed() > 1 && self.rqs[cpu].rt.overloaded {
                self.rt_queue_push_tasks(cpu);
            }
            if self.tasks[p as usize].prio < self.curr_prio(cpu) {
                self.resched_curr(cpu);
            }
        }
    }

    /// `prio_changed_rt()`. With the seed-003 patch (RT_PUSH_ON_BOOST,
    /// Chaosheng Qu, "sched/rt: queue a push when a queued RT task is
    /// boosted"), a queued task whose priority rose on an overloaded
    /// runqueue also queues a push.
    pub(crate) fn prio_changed_rt(&mut self, cpu: usize, p: TaskId, oldprio: i32) {
        if self.tasks[p as usize].on_rq != OnRq::Queued {
            return;
        }
        let prio = self.tasks[p as usize].prio;
        let running = self.rqs[cpu].curr == Some(p);
        let (resched, push, pull) = if running {
            (prio > self.rqs[cpu].rt.highest_prio_curr, false, oldprio < prio)
        } else {
            // Stock kernels queue no push here: a boosted waiter stays put
            // until something else reschedules one of its allowed CPUs.
            let push = self.feat(Feature::RT_PUSH_ON_BOOST)
                && prio < oldprio
                && self.rqs[cpu].rt.overloaded
                && !self.rqs[cpu].rt.pushable.is_empty();
            (prio < self.curr_prio(cpu), push, false)
        };
        let pid = self.tasks[p as usize].pid;
        self.emit(cpu, EventKind::RtPrioChanged { pid, oldprio, newprio: prio, running, resched, push, pull });
        if pull {
            self.rt_queue_pull_task(cpu);
        }
        if resched {
            self.resched_curr(cpu);
        }
        if push {
            self.rt_queue_push_tasks(cpu);
        }
    }

    /// Whether the CPU's RT state says an RT task outranks `prio` (for the
    /// class-level pick).
    pub(crate) fn rt_runnable(&self, cpu: usize) -> bool {
        self.rqs[cpu].rt.rt_nr_running > 0
    }
}
