//! The workload interpreter: one function per scenario operation, run by the
//! thread the kernel model has put on a CPU, at the engine's current time.
//!
//! Each op either completes at once (and the thread goes on to the next),
//! or asks for time (a `run` burst, a `poll` delay: the engine plans the op
//! boundary), or blocks the thread in the kernel model. A syscall costs
//! `[costs] syscall_ns` (its entry and exit) where the op pays it, and a
//! blocking one its kernel steps (`[costs.kernel] futex_wait`, then
//! `schedule_entry`: see [`Engine::block`]); the markers of an op carry the
//! time the op completed.

use super::{resolve, Blocked, ObjState, WaitStep};
use crate::engine::{Engine, Ev};
use crate::hrtimer::SleepTimer;
use crate::hw::{Hardware, UNITS_PER_NS};
use crate::SimError;
use schedlab_kernel::TaskState;
use schedlab_scenario::{grid_timer_step, ObjId, ObjRef, Op, Repeat, TimerMode};
use schedlab_trace::UserOp;
use std::ops::ControlFlow;

/// Ops a thread may execute at one instant before we call it a livelock.
const MAX_OPS_PER_INSTANT: u32 = 100_000;

/// Whether the thread goes on executing ops at this instant (`Continue`) or
/// the CPU waits for an event (`Break`: time must pass, or the run failed).
pub(super) type Flow<T = ()> = ControlFlow<(), T>;

pub(super) const NEXT: Flow = ControlFlow::Continue(());
pub(super) const STOP: Flow = ControlFlow::Break(());

impl<'a> Engine<'a> {
    /// The current thread of `cpu` executes ops until it must wait for time
    /// to pass, blocks, or is preempted.
    pub(crate) fn run_thread(&mut self, cpu: usize) {
        let mut budget = MAX_OPS_PER_INSTANT;
        loop {
            let Some(task) = self.kernel.curr(cpu) else { return };
            // Kernel time the last op spent on this CPU (a wakeup's IPI,
            // the tracepoints it wrote) ends before the next op begins: a
            // syscall returns only after its kernel work, so a waker that
            // signals and then waits blocks that much later.
            if self.hw.exec_from(cpu) > self.now || self.pending_ns[cpu] > 0 {
                return self.replan(cpu);
            }
            budget -= 1;
            if budget == 0 {
                let name = self.comm_of(self.task_thread[task as usize]);
                self.error = Some(SimError::Workload(format!(
                    "thread {name} executes ops forever without time passing (livelock at {} ns)",
                    self.now
                )));
                return;
            }
            let th = self.task_thread[task as usize];
            if self.exec_op(cpu, th).is_break() {
                return;
            }
        }
    }

    /// Execute the op at thread `th`'s program counter.
    fn exec_op(&mut self, cpu: usize, th: usize) -> Flow {
        if self.threads[th].in_window {
            return self.schedule_after_window(cpu, th);
        }
        // The scenario outlives the engine, so ops are borrowed, never cloned.
        if let Some(flow) = self.fork_setup(cpu, th) {
            return flow;
        }
        let program = &self.spec_of(th).program;
        let ops = &program.ops;
        let pc = self.threads[th].pc;
        let Some(op) = ops.get(pc) else { return self.end_of_iteration(cpu, th) };
        if let Some(log) = &mut self.threads[th].rtapp_log {
            log.before_op(pc, self.now, &program.rows);
        }
        let flow = self.exec_one(cpu, th, op);
        if self.threads[th].pc != pc {
            if let Some(log) = &mut self.threads[th].rtapp_log {
                log.op_done(op, self.now);
            }
        }
        flow
    }

    fn exec_one(&mut self, cpu: usize, th: usize, op: &'a Op) -> Flow {
        let polled = self.threads[th].polled;
        match *op {
            Op::Run { ns } => self.op_run(cpu, th, ns),
            Op::Sleep { ns } => self.op_sleep(cpu, th, ns),
            Op::Timer { period_ns } => self.op_timer(cpu, th, period_ns),
            Op::Wait { ref efd } => self.op_wait(cpu, th, efd, polled),
            Op::Signal { ref efd, count } => self.op_signal(cpu, th, efd, count, polled),
            Op::FutexWait { ref futex } => self.op_fwait(cpu, th, futex, polled),
            Op::FutexPost { ref futex } => self.op_fpost(cpu, th, futex, polled),
            Op::FutexReset { ref futex } => self.op_freset(th, futex, polled),
            Op::ListAdd { ref list, ref futex } => self.op_list_add(th, list, futex, polled),
            Op::WakeList { ref list } => self.op_wake_list(cpu, th, list, polled),
            Op::Post { ref flag } => self.op_post(cpu, th, flag, polled),
            Op::Poll { ref flags, after_ns } => self.op_poll(cpu, th, flags, after_ns),
            Op::Lock { ref mutex } => self.op_lock(cpu, th, mutex, polled),
            Op::Unlock { ref mutex } => self.op_unlock(cpu, th, mutex, polled),
            Op::Yield => self.op_yield(cpu, th),
            Op::LockCpu { locks } => self.op_lock_cpu(cpu, th, locks),
            Op::UnlockCpu { locks } => self.op_unlock_cpu(th, locks),
            Op::RunWall { ns } => self.op_run_wall(cpu, th, ns),
            Op::GridTimer { timer, period_ns, mode } => self.op_grid_timer(cpu, th, timer, period_ns, mode),
            Op::CondWait { ref cond, ref mutex } => self.op_cond_wait(cpu, th, cond, mutex, polled),
            Op::CondSignal { ref cond } => self.op_cond_signal(cpu, th, cond, polled, false),
            Op::CondBroadcast { ref cond } => self.op_cond_signal(cpu, th, cond, polled, true),
            Op::Barrier { barrier } => self.op_barrier(cpu, th, barrier),
            Op::SetAffinity { cpus } => self.op_set_affinity(cpu, th, cpus),
            Op::SetScheduler { policy, nice, rt_priority } => self.op_set_scheduler(cpu, th, policy, nice, rt_priority),
            Op::SetPriority { nice } => self.op_set_priority(cpu, th, nice),
            Op::SetCgroup { cgroup } => self.op_set_cgroup(cpu, th, cgroup),
            Op::Fork { template } => self.op_fork(cpu, th, template),
        }
    }

    /// CPU time the thread spends in syscalls and marker writes before an
    /// op takes effect, as `execute()` work (preemption can split it). True
    /// once paid.
    pub(super) fn pay(&mut self, cpu: usize, th: usize, ns: u64) -> bool {
        self.execute(cpu, th, |_| (ns > 0).then(|| ns.saturating_mul(UNITS_PER_NS)))
    }

    /// A marker write's cost, in runs that model the real runner's capture.
    pub(super) fn marker_ns(&self) -> u64 {
        if self.traced {
            self.hw.costs().trace_marker_ns
        } else {
            0
        }
    }

    pub(super) fn syscall_ns(&self) -> u64 {
        self.hw.costs().syscall_ns
    }

    /// Past the last op: the `loop_end` marker, then the next iteration or exit.
    fn end_of_iteration(&mut self, cpu: usize, th: usize) -> Flow {
        if let Some(log) = &mut self.threads[th].rtapp_log {
            log.close(self.now);
        }
        if !self.pay(cpu, th, self.marker_ns()) {
            return STOP;
        }
        let n = self.threads[th].iteration;
        self.user_event(cpu, th, UserOp::LoopEnd { n: n as u32 });
        self.threads[th].iteration += 1;
        let again = match self.spec_of(th).program.repeat {
            Repeat::Forever => true,
            Repeat::Times(k) => self.threads[th].iteration < k,
        };
        if again {
            self.threads[th].pc = 0;
            return NEXT;
        }
        self.threads[th].finished = true;
        self.kernel.set_current_state(cpu, TaskState::Dead);
        self.do_schedule(cpu, false);
        self.maybe_all_done();
        NEXT
    }

    /// `run`: a CPU burst, its length drawn once with the hardware's jitter.
    fn op_run(&mut self, cpu: usize, th: usize, ns: u64) -> Flow {
        if !self.execute(cpu, th, |hw| Some(hw.burst_work(ns))) {
            return STOP;
        }
        self.threads[th].pc += 1;
        NEXT
    }

    /// User-space CPU time an op spends before it goes on, over as many
    /// engine steps as preemption splits it into. `work` is asked once, when
    /// the op first runs (a burst's jitter is drawn then); `None` is no work.
    /// True once it is done, false while it runs (the CPU is replanned for
    /// its end).
    fn execute(&mut self, cpu: usize, th: usize, work: impl FnOnce(&mut Hardware) -> Option<u64>) -> bool {
        if !self.threads[th].run_started {
            if let Some(units) = work(&mut self.hw) {
                let thread = &mut self.threads[th];
                thread.remaining = units;
                thread.run_started = true;
                self.hw.set_exec_from(cpu, self.now);
            }
        }
        if self.threads[th].remaining > 0 {
            self.replan(cpu);
            return false;
        }
        self.threads[th].run_started = false;
        true
    }

    /// `sleep`: `nanosleep()`, an hrtimer and a block.
    ///
    /// `hrtimer_nanosleep()` arms the timer with the range [`ns`, `ns` +
    /// the thread's timer slack]; the hrtimer interrupt comes at the hard
    /// end of the range unless another hrtimer interrupt on the CPU (the
    /// tick, another sleeper's) falls inside it first (`crate::hrtimer`).
    fn op_sleep(&mut self, cpu: usize, th: usize, ns: u64) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        self.sleep_until(cpu, th, self.now + ns);
        NEXT
    }

    /// `timer`: `clock_nanosleep(TIMER_ABSTIME)` to the thread's next
    /// boundary, computed once as the op starts (the program's own
    /// arithmetic before the call), so re-entering the op while its syscall
    /// cost is being paid does not move the boundary on again.
    fn op_timer(&mut self, cpu: usize, th: usize, period_ns: u64) -> Flow {
        if self.threads[th].timer_wake_at.is_none() {
            let next = schedlab_scenario::next_timer_boundary(self.threads[th].timer_next, self.now, period_ns);
            self.threads[th].timer_next = Some(next);
            self.threads[th].timer_wake_at = Some(next);
        }
        self.sleep_to_timer_wake(cpu, th)
    }

    /// The second half of a timer op: the `clock_nanosleep()` syscall's
    /// cost, then the sleep to the wakeup time chosen as the op started.
    fn sleep_to_timer_wake(&mut self, cpu: usize, th: usize) -> Flow {
        if !self.pay(cpu, th, self.syscall_ns()) {
            return STOP;
        }
        let at = self.threads[th].timer_wake_at.take().unwrap_or(self.now);
        self.threads[th].pc += 1;
        self.sleep_until(cpu, th, at);
        NEXT
    }

    /// Arm the thread's hrtimer on `cpu` for the range [`at`, `at` plus its
    /// timer slack] and block; the interrupt is due at the hard end.
    fn sleep_until(&mut self, cpu: usize, th: usize, at: u64) {
        let soft = at.max(self.now);
        let hard = soft + self.threads[th].timer_slack_ns;
        self.threads[th].timer_gen += 1;
        let gen = self.threads[th].timer_gen;
        self.hw.arm_timer(cpu, hard);
        self.hrtimers.start(cpu, SleepTimer { soft, hard, thread: th, gen });
        self.queue.push(hard, Ev::Timer { thread: th, gen, cpu, exited: false });
        self.block(cpu, th, Blocked::Sleep);
    }

    /// `run_wall`: spin until `ns` of wall-clock time have passed since the
    /// op began, however much of it the thread was on a CPU.
    fn op_run_wall(&mut self, cpu: usize, th: usize, ns: u64) -> Flow {
        let end = *self.threads[th].wall_end.get_or_insert(self.now.saturating_add(ns));
        if self.now < end {
            self.replan(cpu);
            return STOP;
        }
        self.threads[th].wall_end = None;
        self.threads[th].pc += 1;
        NEXT
    }

    /// A grid `timer` (rt-app's `timer` event): the next boundary of the
    /// grid is chosen by [`schedlab_scenario::grid_timer_step`] from the
    /// grid's previous one (the creating thread's start for its first use);
    /// a boundary in the future is slept to with `clock_nanosleep(ABSTIME)`,
    /// so the syscall's own time does not shift the grid; a passed one is
    /// not slept at all (no syscall: rt-app reads the clock from the vDSO).
    fn op_grid_timer(&mut self, cpu: usize, th: usize, timer: ObjId, period_ns: u64, mode: TimerMode) -> Flow {
        if self.threads[th].timer_wake_at.is_none() {
            let pc = self.threads[th].pc;
            let origin = self.threads[th].started_at;
            let ObjState::Timer { prev } = &mut self.objects[timer as usize] else { unreachable!() };
            let base = prev.unwrap_or(origin);
            let (sleep, next_prev) = grid_timer_step(base, self.now, period_ns, mode);
            *prev = Some(next_prev);
            if let Some(log) = &mut self.threads[th].rtapp_log {
                log.timer(pc, base.saturating_add(period_ns), self.now, period_ns, sleep.is_some());
            }
            match sleep {
                Some(at) => self.threads[th].timer_wake_at = Some(at),
                None => {
                    self.threads[th].pc += 1;
                    return NEXT;
                }
            }
        }
        self.sleep_to_timer_wake(cpu, th)
    }

    /// `wait`: a blocking eventfd `read()`, which takes the whole counter.
    /// `eventfd_read()` (fs/eventfd.c, 6.12): the wait queue's lock, the
    /// counter checked under it, and when it is 0 the reader queued and
    /// TASK_INTERRUPTIBLE before the unlock and `schedule()`; woken, it
    /// checks again. The steps are [`WaitStep`]s; the setup costs
    /// `[costs.kernel] futex_wait`, the syscall's entry and exit
    /// `[costs] syscall_ns` once the counter is taken.
    fn op_wait(&mut self, cpu: usize, th: usize, efd: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, efd, polled)?;
        loop {
            match self.threads[th].wait {
                WaitStep::Start => self.threads[th].wait = WaitStep::Setup,
                WaitStep::Setup | WaitStep::Queued | WaitStep::Returning => {
                    if self.threads[th].wait == WaitStep::Setup && !self.pay(cpu, th, self.futex_wait_ns()) {
                        return STOP;
                    }
                    let ObjState::Eventfd { counter, waiters } = &mut self.objects[id as usize] else { unreachable!() };
                    if *counter == 0 {
                        waiters.push(th);
                        self.threads[th].wait = WaitStep::Queued;
                        self.block(cpu, th, Blocked::Eventfd(id));
                        return NEXT;
                    }
                    *counter = 0;
                    self.threads[th].wait = WaitStep::Done;
                }
                WaitStep::Done => {
                    // read() returns, then the marker is written.
                    if !self.pay(cpu, th, self.syscall_ns() + self.marker_ns()) {
                        return STOP;
                    }
                    self.threads[th].wait = WaitStep::Start;
                    self.threads[th].pc += 1;
                    self.user_event(cpu, th, UserOp::WaitDone { obj: id });
                    return NEXT;
                }
            }
        }
    }

    /// `signal`: an eventfd `write()`, then the return to user preempts.
    fn op_signal(&mut self, cpu: usize, th: usize, efd: &ObjRef, count: u64, polled: Option<usize>) -> Flow {
        let id = self.operand(th, efd, polled)?;
        // The marker's write, then write()'s entry: the wakeup comes after them.
        if !self.pay(cpu, th, self.marker_ns() + self.syscall_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        self.signal(cpu, th, id, count);
        self.preempt_point(cpu);
        NEXT
    }

    /// `list_add`: push a futex on a wake list (no syscall, no marker).
    fn op_list_add(&mut self, th: usize, list: &ObjRef, futex: &ObjRef, polled: Option<usize>) -> Flow {
        let list = self.operand(th, list, polled)?;
        let futex = self.operand(th, futex, polled)?;
        self.threads[th].pc += 1;
        if let ObjState::WakeList { entries } = &mut self.objects[list as usize] {
            entries.push(futex);
        }
        NEXT
    }

    /// `wake_list`: splice the list, then `fpost` each entry in turn, each
    /// followed by the syscall's return to user space (a preemption point).
    fn op_wake_list(&mut self, cpu: usize, th: usize, list: &ObjRef, polled: Option<usize>) -> Flow {
        let list = self.operand(th, list, polled)?;
        if self.threads[th].wake_pos.is_none() {
            if !self.pay(cpu, th, self.marker_ns()) {
                return STOP;
            }
            // xlist_splice() returns the newest entry first; one
            // timestamp stands for the whole list run.
            let thread = &mut self.threads[th];
            let mut batch = std::mem::take(&mut thread.wake_batch);
            batch.clear();
            if let ObjState::WakeList { entries } = &mut self.objects[list as usize] {
                std::mem::swap(entries, &mut batch);
            }
            batch.reverse();
            let thread = &mut self.threads[th];
            thread.wake_batch = batch;
            thread.wake_pos = Some(0);
            self.user_event(cpu, th, UserOp::Post { obj: list });
        }
        let thread = &mut self.threads[th];
        let pos = thread.wake_pos.unwrap_or(0);
        let Some(&futex) = thread.wake_batch.get(pos) else {
            thread.wake_pos = None;
            thread.pc += 1;
            return NEXT;
        };
        if !self.fpost(cpu, th, futex) {
            return STOP;
        }
        self.threads[th].wake_pos = Some(pos + 1);
        self.preempt_point(cpu);
        NEXT
    }

    /// `post`: a store to a shared-memory flag; running pollers notice.
    fn op_post(&mut self, cpu: usize, th: usize, flag: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, flag, polled)?;
        if !self.pay(cpu, th, self.marker_ns()) {
            return STOP;
        }
        self.threads[th].pc += 1;
        self.user_event(cpu, th, UserOp::Post { obj: id });
        if let ObjState::Flag { posted_at } = &mut self.objects[id as usize] {
            *posted_at = Some(self.now);
        }
        self.replan_pollers(id);
        NEXT
    }

    /// `poll`: spin until one of `flags` has been posted `after_ns` ago;
    /// the earliest post wins (ties: the first flag listed) and is consumed.
    fn op_poll(&mut self, cpu: usize, th: usize, flags: &[u32], after_ns: u64) -> Flow {
        let best = flags
            .iter()
            .enumerate()
            .filter_map(|(k, f)| match self.objects[*f as usize] {
                ObjState::Flag { posted_at: Some(t) } => Some((t, k, *f)),
                _ => None,
            })
            .min();
        match best {
            Some((t, k, f)) if t + after_ns <= self.now => {
                if let ObjState::Flag { posted_at } = &mut self.objects[f as usize] {
                    *posted_at = None;
                }
                self.threads[th].polled = Some(k);
                self.threads[th].pc += 1;
                self.user_event(cpu, th, UserOp::PollDone { obj: f });
                NEXT
            }
            _ => {
                self.replan(cpu);
                STOP
            }
        }
    }

    /// `lock`: a PI mutex is the kernel model's rt_mutex; a plain one is
    /// modeled here, handed to the first waiter on unlock.
    fn op_lock(&mut self, cpu: usize, th: usize, mutex: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, mutex, polled)?;
        if self.acquire_mutex(cpu, th, id) {
            self.threads[th].pc += 1;
            self.user_event(cpu, th, UserOp::Lock { obj: id });
        }
        NEXT
    }

    /// Take mutex `id` for thread `th`, or block it until the owner hands
    /// it over (true once it holds the lock). A PTHREAD_PRIO_INHERIT mutex
    /// is the kernel model's `rt_mutex_lock()`.
    pub(super) fn acquire_mutex(&mut self, cpu: usize, th: usize, id: ObjId) -> bool {
        if self.is_pi(id) {
            let task = self.threads[th].task;
            if self.kernel.rt_mutex_lock(task, id, self.now, cpu, &mut self.out) {
                return true;
            }
            self.drain();
            self.block(cpu, th, Blocked::Mutex(id));
            return false;
        }
        let ObjState::Mutex { owner, waiters, .. } = &mut self.objects[id as usize] else { unreachable!() };
        match owner {
            None => {
                *owner = Some(th);
                true
            }
            // Handed over by the previous owner while we slept.
            Some(o) if *o == th => true,
            Some(_) => {
                waiters.push(th);
                self.block(cpu, th, Blocked::Mutex(id));
                false
            }
        }
    }

    /// `unlock`: the marker, the hand-over to the first waiter, a preemption point.
    fn op_unlock(&mut self, cpu: usize, th: usize, mutex: &ObjRef, polled: Option<usize>) -> Flow {
        let id = self.operand(th, mutex, polled)?;
        self.threads[th].pc += 1;
        self.release_mutex(cpu, th, id);
        self.preempt_point(cpu);
        NEXT
    }

    /// Thread `th` releases mutex `id`: the `unlock` marker, then the lock
    /// goes to the first waiter, who is woken (a PI mutex:
    /// `rt_mutex_unlock()`, which also ends the owner's boost).
    pub(super) fn release_mutex(&mut self, cpu: usize, th: usize, id: ObjId) {
        self.user_event(cpu, th, UserOp::Unlock { obj: id });
        if self.is_pi(id) {
            let task = self.threads[th].task;
            let next = self.kernel.rt_mutex_unlock(task, id, self.now, cpu, &mut self.out);
            self.drain();
            if let Some(n) = next {
                let nth = self.task_thread[n as usize];
                self.wake(nth, cpu);
            }
            return;
        }
        let ObjState::Mutex { owner, waiters, .. } = &mut self.objects[id as usize] else { unreachable!() };
        *owner = None;
        if !waiters.is_empty() {
            let next = waiters.remove(0);
            *owner = Some(next);
            self.wake(next, cpu);
        }
    }

    /// `yield`: `sched_yield()`, then `schedule()`.
    fn op_yield(&mut self, cpu: usize, th: usize) -> Flow {
        self.threads[th].pc += 1;
        self.kernel.sched_yield(cpu, self.now, &mut self.out);
        self.drain();
        self.do_schedule(cpu, false);
        NEXT
    }

    /// When the current thread `th` of `cpu`, executing from now, next needs
    /// the interpreter: the end of its burst, its poll's delay, or at once.
    /// `None` while it spins on flags nobody has posted.
    pub(crate) fn next_op_boundary(&self, th: usize, cpu: usize) -> Option<u64> {
        let thread = &self.threads[th];
        let ops = &self.spec_of(th).program.ops;
        match ops.get(thread.pc) {
            // CPU work in progress: a burst, or an op's syscall and marker time.
            _ if thread.run_started => {
                let rate = self.hw.rate(cpu).max(1);
                Some(self.now + thread.remaining.div_ceil(rate))
            }
            // A forked thread still setting its attributes goes on at once.
            _ if thread.forked.as_ref().is_some_and(|f| f.in_setup()) => Some(self.now),
            Some(Op::Poll { flags, after_ns }) => self.earliest_post(flags).map(|at| (at + after_ns).max(self.now)),
            Some(Op::RunWall { .. }) => Some(thread.wall_end.unwrap_or(self.now).max(self.now)),
            // Spinning on a held per-CPU lock: nothing to do until it is released.
            Some(&Op::LockCpu { locks }) => match (&self.objects[locks as usize], thread.spin_cpu) {
                (ObjState::CpuLocks { owner }, Some(c)) if owner.get(c).copied().flatten().is_some() => None,
                _ => Some(self.now),
            },
            _ => Some(self.now),
        }
    }

    fn earliest_post(&self, flags: &[u32]) -> Option<u64> {
        flags
            .iter()
            .filter_map(|f| match self.objects[*f as usize] {
                ObjState::Flag { posted_at } => posted_at,
                _ => None,
            })
            .min()
    }

    /// Block the current thread of `cpu`: it is queued on what it waits
    /// for, TASK_INTERRUPTIBLE (`set_current_state()`), then `schedule()`.
    ///
    /// Between the two it is still on its runqueue and its CPU for
    /// `[costs.kernel] schedule_entry` (`schedule()`'s way into
    /// `__schedule()` up to the dequeue): a waker in that window finds
    /// `p->on_rq` and takes `ttwu_runnable()`, which only sets it
    /// TASK_RUNNING again, and `__schedule()` then does not block it — the
    /// wait returns without a sleep. Preemption in the window keeps it
    /// queued, as SM_PREEMPT does. With no such cost, `schedule()` at once.
    pub(super) fn block(&mut self, cpu: usize, th: usize, why: Blocked) {
        self.threads[th].blocked = why;
        self.kernel.set_current_state(cpu, TaskState::Interruptible);
        if self.hw.costs().kernel.schedule_entry_ns == 0 {
            self.do_schedule(cpu, false);
        } else {
            self.threads[th].in_window = true;
        }
    }

    /// The rest of [`Self::block`]: once the window's CPU time is paid,
    /// `__schedule()`, which dequeues the thread unless a waker set it
    /// TASK_RUNNING meanwhile.
    fn schedule_after_window(&mut self, cpu: usize, th: usize) -> Flow {
        if !self.pay(cpu, th, self.hw.costs().kernel.schedule_entry_ns) {
            return STOP;
        }
        self.threads[th].in_window = false;
        self.do_schedule(cpu, false);
        NEXT
    }

    pub(super) fn futex_wait_ns(&self) -> u64 {
        self.hw.costs().kernel.futex_wait_ns
    }

    pub(crate) fn wake(&mut self, th: usize, cpu: usize) {
        self.threads[th].blocked = Blocked::No;
        let task = self.threads[th].task;
        self.kernel.try_to_wake_up(task, self.now, cpu, 0, &mut self.out);
        self.drain();
    }

    /// `write()` of `count` to eventfd `id` by thread `th` on `cpu`: the
    /// `signal` marker, then every waiter is woken (no preemption point).
    fn signal(&mut self, cpu: usize, th: usize, id: u32, count: u64) {
        self.user_event(cpu, th, UserOp::Signal { obj: id });
        let ObjState::Eventfd { counter, waiters } = &mut self.objects[id as usize] else { unreachable!() };
        *counter += count;
        let mut woken = std::mem::take(waiters);
        for &w in &woken {
            self.wake(w, cpu);
        }
        woken.clear();
        if let ObjState::Eventfd { waiters, .. } = &mut self.objects[id as usize] {
            if waiters.is_empty() {
                *waiters = woken; // give the buffer back
            }
        }
    }

    /// A PTHREAD_PRIO_INHERIT mutex: the kernel model owns it (rt_mutex).
    fn is_pi(&self, id: ObjId) -> bool {
        matches!(self.objects[id as usize], ObjState::Mutex { pi: true, .. })
    }

    /// The object an operand names; a `{*}` operand before any poll matched
    /// stops the run.
    pub(super) fn operand(&mut self, th: usize, r: &ObjRef, polled: Option<usize>) -> Flow<ObjId> {
        match resolve(r, polled) {
            Some(id) => ControlFlow::Continue(id),
            None => {
                let name = self.comm_of(th);
                self.error =
                    Some(SimError::Workload(format!("thread {name} used a {{*}} operand before any poll matched")));
                ControlFlow::Break(())
            }
        }
    }

    /// `lock_cpu`: schbench's `lock_this_cpu()`. The trylock loop spins on
    /// the lock of the CPU the thread was on when it started; once it has
    /// the lock it checks its CPU again, and a thread that migrated meanwhile
    /// releases the lock and starts over. Simplified: the trylocks cost no
    /// CPU time of their own beyond the spinning.
    fn op_lock_cpu(&mut self, cpu: usize, th: usize, locks: u32) -> Flow {
        let target = *self.threads[th].spin_cpu.get_or_insert(cpu);
        let ObjState::CpuLocks { owner } = &mut self.objects[locks as usize] else { unreachable!() };
        if owner.len() <= target {
            owner.resize(target + 1, None);
        }
        match owner[target] {
            None if target == cpu => {
                owner[target] = Some(th);
                let t = &mut self.threads[th];
                t.spin_cpu = None;
                t.cpu_lock = Some(target);
                t.pc += 1;
                NEXT
            }
            // Got it after migrating: drop it and try the current CPU's.
            None => {
                self.threads[th].spin_cpu = None;
                NEXT
            }
            Some(_) => {
                // Spin until the holder's unlock re-plans us.
                self.replan(cpu);
                STOP
            }
        }
    }

    /// `unlock_cpu`: release the held per-CPU lock; a thread spinning on it
    /// while running takes it next.
    fn op_unlock_cpu(&mut self, th: usize, locks: u32) -> Flow {
        self.threads[th].pc += 1;
        let Some(held) = self.threads[th].cpu_lock.take() else {
            return NEXT;
        };
        if let ObjState::CpuLocks { owner } = &mut self.objects[locks as usize] {
            owner[held] = None;
        }
        for cpu in 0..self.hw.nr_cpus() {
            let Some(t) = self.kernel.curr(cpu) else { continue };
            let spinner = self.task_thread[t as usize];
            if self.threads[spinner].spin_cpu == Some(held) {
                self.replan(cpu);
            }
        }
        NEXT
    }

    /// A flag was posted: pollers that are running notice after their delay.
    fn replan_pollers(&mut self, flag: u32) {
        for cpu in 0..self.hw.nr_cpus() {
            let Some(t) = self.kernel.curr(cpu) else { continue };
            let i = self.task_thread[t as usize];
            let th = &self.threads[i];
            let ops = &self.spec_of(i).program.ops;
            if let Some(Op::Poll { flags, .. }) = ops.get(th.pc) {
                if flags.contains(&flag) {
                    self.replan(cpu);
                }
            }
        }
    }
}
