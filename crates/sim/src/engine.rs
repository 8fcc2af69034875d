//! The simulation loop: hardware events (work completion, ticks, IPIs, timers)
//! drive the kernel model, and the workload interpreter runs each thread's
//! program on the CPU the model gives it.
//!
//! Time is integer nanoseconds. A thread's `run` work is counted in
//! `ns · 1024 · 100` units so that progress per nanosecond is exactly
//! `capacity × speed%` (SMT siblings slow each other down).

use crate::queue::EventQueue;
use crate::rng::Rng;
use crate::workload::{resolve, Blocked, ObjState, Thread};
use schedlab_kernel::{IpiKind, Kernel, Outbox, TaskId, TaskState};
use schedlab_scenario::{Op, Repeat, Scenario};
use schedlab_topology::Topology;
use schedlab_trace::{Event, EventKind, Pid, UserOp};

/// Work units per nanosecond at capacity 1024 and full speed.
pub const UNITS_PER_NS: u64 = 1024 * 100;

/// The soft-lockup watchdog's period (`watchdog_thresh` 10 s ⇒ hrtimer every 4 s).
pub const WATCHDOG_PERIOD_NS: u64 = 4_000_000_000;

/// Ops a thread may execute at one instant before we call it a livelock.
const MAX_OPS_PER_INSTANT: u32 = 100_000;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// Create thread `0` (`wake_up_new_task`).
    Start(usize),
    /// The CPU's current thread reaches its next op boundary.
    CpuWork {
        cpu: usize,
        gen: u64,
    },
    /// Periodic scheduler tick.
    Tick {
        cpu: usize,
        gen: u64,
    },
    /// The fair server's deferral timer on `cpu`.
    FairServer {
        cpu: usize,
    },
    /// The soft-lockup watchdog's hrtimer on `cpu` (background = "kernel").
    Watchdog {
        cpu: usize,
    },
    /// The context switch away from the previous task completes (`prev->on_cpu = 0`).
    SwitchDone {
        cpu: usize,
        gen: u64,
    },
    /// An IPI (or a polling idle CPU noticing its flag) is handled.
    Ipi {
        cpu: usize,
        kind: IpiKind,
    },
    /// A sleep's hrtimer expires; `exited` once an idle CPU has left idle.
    Timer {
        thread: usize,
        gen: u64,
        cpu: usize,
        exited: bool,
    },
    End,
}

/// Keys of the per-CPU timers in the event queue, re-armed in place (see
/// `queue`): the next op boundary, the tick, the end of a context switch.
pub(crate) const KEYS_PER_CPU: usize = 3;

fn work_key(cpu: usize) -> usize {
    cpu * KEYS_PER_CPU
}

fn tick_key(cpu: usize) -> usize {
    cpu * KEYS_PER_CPU + 1
}

fn switch_key(cpu: usize) -> usize {
    cpu * KEYS_PER_CPU + 2
}

/// Per-CPU hardware state.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuHw {
    /// Bumped whenever the pending `CpuWork` event becomes stale. The queue
    /// replaces or cancels stale per-CPU events itself; debug builds assert
    /// that no stale one pops (the generations of `Tick` and `SwitchDone` too).
    pub gen: u64,
    pub tick_gen: u64,
    pub tick_armed: bool,
    /// Bumped per switch so a stale `SwitchDone` cannot finish a later one.
    pub switch_gen: u64,
    /// The current thread executes user code from this time (after the switch cost).
    pub exec_from: u64,
    /// Work units per ns for the current thread, as of `exec_from`.
    pub rate: u64,
}

pub(crate) struct Engine<'a> {
    pub scenario: &'a Scenario,
    pub topo: &'a Topology,
    pub kernel: Kernel,
    pub threads: Vec<Thread>,
    /// Task id → thread index.
    pub task_thread: Vec<usize>,
    pub objects: Vec<ObjState>,
    pub cpus: Vec<CpuHw>,
    /// SMT siblings of each CPU, itself excluded.
    pub siblings: Vec<Vec<usize>>,
    pub queue: EventQueue<Ev>,
    pub rng: Rng,
    pub now: u64,
    /// What the kernel's entry points asked of the hardware since the last
    /// `drain()`. The trace is `out.events[..traced]`: the kernel emits into
    /// it and the workload's markers are appended to the same buffer, so
    /// no event is copied. Events past `traced` are the kernel's since the
    /// last `drain()`, which adds them (a run drops what it never drained).
    pub out: Outbox,
    pub traced: usize,
    pub check_invariants: bool,
    pub end: Option<u64>,
    pub error: Option<String>,
}

impl<'a> Engine<'a> {
    fn pid_of(&self, thread: usize) -> Pid {
        self.kernel.task(self.threads[thread].task).pid
    }

    /// Take the kernel's new events into the trace, deliver its requests,
    /// then check the model.
    fn drain(&mut self) {
        self.traced = self.out.events.len();
        // Most kernel entries request neither an IPI nor a timer.
        if !self.out.ipis.is_empty() {
            self.deliver_ipis();
        }
        if !self.out.timers.is_empty() {
            let mut timers = std::mem::take(&mut self.out.timers);
            for t in timers.drain(..) {
                self.queue.push(t.at, Ev::FairServer { cpu: t.cpu });
            }
            self.out.timers = timers;
        }
        if self.check_invariants {
            if let Err(e) = self.kernel.check_invariants() {
                if self.error.is_none() {
                    self.error = Some(format!("invariant violated at {} ns: {e}", self.now));
                }
            }
        }
    }

    /// Queue the interrupts the kernel asked for, with their delivery latency.
    fn deliver_ipis(&mut self) {
        // Reuse the request buffer: no allocation per event in the steady state.
        let mut ipis = std::mem::take(&mut self.out.ipis);
        for ipi in ipis.drain(..) {
            let costs = &self.topo.costs;
            // A polling idle CPU only needs to leave its idle state; a halted
            // one needs the IPI first; a busy one takes the interrupt.
            let mut delay = if ipi.polled { 0 } else { costs.ipi_ns };
            if ipi.idle {
                delay += costs.idle_exit_ns;
            }
            if !ipi.polled && self.topo.jitter.ipi_ns > 0 {
                delay += self.rng.below_incl(self.topo.jitter.ipi_ns);
            }
            self.queue.push(self.now + delay, Ev::Ipi { cpu: ipi.cpu, kind: ipi.kind });
        }
        self.out.ipis = ipis;
    }

    /// The workload's marker: emitted whether or not the kernel's
    /// tracepoints are on (streamed schbench runs read only these).
    fn user_event(&mut self, cpu: usize, thread: usize, op: UserOp) {
        self.drain();
        let pid = self.pid_of(thread);
        self.out.events.push(Event {
            ts: self.now,
            cpu: cpu as u32,
            ctx_pid: pid,
            flags: *b"...1.",
            kind: EventKind::User { pid, op },
        });
        self.traced += 1;
    }

    /// Execution speed of whatever runs on `cpu` now.
    fn rate(&self, cpu: usize) -> u64 {
        let cap = self.topo.cpus[cpu].capacity as u64;
        let sibling_busy = self.siblings[cpu].iter().any(|&s| self.kernel.curr(s).is_some());
        cap * if sibling_busy { self.topo.costs.smt_speed_pct as u64 } else { 100 }
    }

    /// Account the current thread's progress up to now.
    fn settle(&mut self, cpu: usize) {
        let Some(t) = self.kernel.curr(cpu) else { return };
        let th = self.task_thread[t as usize];
        let hw = &mut self.cpus[cpu];
        if self.now > hw.exec_from {
            let done = (self.now - hw.exec_from).saturating_mul(hw.rate);
            let thread = &mut self.threads[th];
            if thread.run_started {
                thread.remaining = thread.remaining.saturating_sub(done);
            }
            hw.exec_from = self.now;
        }
    }

    /// Re-plan the current thread's next op boundary on `cpu`.
    fn replan(&mut self, cpu: usize) {
        self.cpus[cpu].gen += 1;
        let gen = self.cpus[cpu].gen;
        let key = work_key(cpu);
        let Some(t) = self.kernel.curr(cpu) else { return self.queue.cancel(key) };
        let th = self.task_thread[t as usize];
        let exec_from = self.cpus[cpu].exec_from;
        self.cpus[cpu].rate = self.rate(cpu);
        if exec_from > self.now {
            self.queue.push_keyed(key, exec_from, Ev::CpuWork { cpu, gen });
            return;
        }
        let thread = &self.threads[th];
        let ops = &self.scenario.threads[thread.spec].program.ops;
        match ops.get(thread.pc) {
            Some(Op::Run { .. } | Op::WakeList { .. }) if thread.run_started => {
                let rate = self.cpus[cpu].rate.max(1);
                let ns = thread.remaining.div_ceil(rate);
                self.queue.push_keyed(key, self.now + ns, Ev::CpuWork { cpu, gen });
            }
            Some(Op::Poll { flags, after_ns }) => {
                if let Some(at) = self.earliest_post(flags) {
                    self.queue.push_keyed(key, (at + after_ns).max(self.now), Ev::CpuWork { cpu, gen });
                } else {
                    // Spin until a post re-plans us.
                    self.queue.cancel(key);
                }
            }
            _ => self.queue.push_keyed(key, self.now, Ev::CpuWork { cpu, gen }),
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

    /// SMT siblings of `cpu` change speed when `cpu` starts or stops running.
    fn siblings_changed(&mut self, cpu: usize) {
        for i in 0..self.siblings[cpu].len() {
            let s = self.siblings[cpu][i];
            if self.kernel.curr(s).is_some() {
                self.settle(s);
                self.replan(s);
            }
        }
    }

    /// Keep the periodic tick armed exactly while the CPU is busy (NOHZ idle).
    fn update_tick(&mut self, cpu: usize) {
        let busy = self.kernel.curr(cpu).is_some();
        let hw = &mut self.cpus[cpu];
        if busy && !hw.tick_armed {
            hw.tick_armed = true;
            hw.tick_gen += 1;
            let tick = self.topo.tick_ns();
            let next = (self.now / tick + 1) * tick;
            self.queue.push_keyed(tick_key(cpu), next, Ev::Tick { cpu, gen: hw.tick_gen });
        } else if !busy && hw.tick_armed {
            hw.tick_armed = false;
            hw.tick_gen += 1;
            self.queue.cancel(tick_key(cpu));
        }
    }

    /// `schedule()` on `cpu` and the hardware consequences of a switch.
    fn do_schedule(&mut self, cpu: usize, preempt: bool) {
        self.settle(cpu);
        let sw = self.kernel.schedule(cpu, self.now, preempt, &mut self.out);
        self.drain();
        if !sw.switched() {
            self.replan(cpu);
            return;
        }
        if sw.prev.is_some() {
            let cs = self.topo.costs.context_switch_ns;
            if cs == 0 {
                self.kernel.finish_task_switch(cpu);
            } else {
                self.cpus[cpu].switch_gen += 1;
                let gen = self.cpus[cpu].switch_gen;
                self.queue.push_keyed(switch_key(cpu), self.now + cs, Ev::SwitchDone { cpu, gen });
            }
        }
        if let Some(n) = sw.next {
            let th = self.task_thread[n as usize];
            let mut cost = self.topo.costs.context_switch_ns;
            if self.threads[th].last_cpu.is_some_and(|c| c != cpu) {
                cost += self.topo.costs.migration_cold_ns;
            }
            self.threads[th].last_cpu = Some(cpu);
            self.cpus[cpu].exec_from = self.now + cost;
        }
        self.update_tick(cpu);
        if sw.prev.is_none() || sw.next.is_none() {
            self.siblings_changed(cpu);
        }
        self.replan(cpu);
    }

    /// A preemption point on `cpu` (return to user from a syscall or interrupt).
    fn preempt_point(&mut self, cpu: usize) -> bool {
        if self.kernel.need_resched(cpu, true) {
            self.do_schedule(cpu, true);
            true
        } else {
            false
        }
    }

    /// Block the current thread of `cpu` and schedule.
    fn block(&mut self, cpu: usize, th: usize, why: Blocked) {
        self.threads[th].blocked = why;
        self.kernel.set_current_state(cpu, TaskState::Interruptible);
        self.do_schedule(cpu, false);
    }

    fn wake(&mut self, th: usize, cpu: usize) {
        self.threads[th].blocked = Blocked::No;
        let task = self.threads[th].task;
        self.kernel.try_to_wake_up(task, self.now, cpu, 0, &mut self.out);
        self.drain();
    }

    /// The current thread of `cpu` executes ops until it must wait for time
    /// to pass, blocks, or is preempted.
    fn run_thread(&mut self, cpu: usize) {
        let mut budget = MAX_OPS_PER_INSTANT;
        loop {
            let Some(task) = self.kernel.curr(cpu) else { return };
            if self.cpus[cpu].exec_from > self.now {
                return self.replan(cpu);
            }
            budget -= 1;
            if budget == 0 {
                let name = &self.scenario.threads[self.threads[self.task_thread[task as usize]].spec].name;
                self.error = Some(format!(
                    "thread {name} executes ops forever without time passing (livelock at {} ns)",
                    self.now
                ));
                return;
            }
            let th = self.task_thread[task as usize];
            let spec = self.threads[th].spec;
            // The scenario outlives the engine, so ops are borrowed, never cloned.
            let scenario: &'a Scenario = self.scenario;
            let ops = &scenario.threads[spec].program.ops;
            let pc = self.threads[th].pc;
            let Some(op) = ops.get(pc) else {
                // End of one iteration.
                let n = self.threads[th].iteration;
                self.user_event(cpu, th, UserOp::LoopEnd { n: n as u32 });
                self.threads[th].iteration += 1;
                let again = match self.scenario.threads[spec].program.repeat {
                    Repeat::Forever => true,
                    Repeat::Times(k) => self.threads[th].iteration < k,
                };
                if again {
                    self.threads[th].pc = 0;
                    continue;
                }
                self.threads[th].finished = true;
                self.kernel.set_current_state(cpu, TaskState::Dead);
                self.do_schedule(cpu, false);
                self.maybe_all_done();
                continue;
            };
            let polled = self.threads[th].polled;
            match op {
                &Op::Run { ns } => {
                    let thread = &mut self.threads[th];
                    if !thread.run_started {
                        let jitter = self.topo.jitter.burst_pct;
                        let mut work = ns as u128 * UNITS_PER_NS as u128;
                        if jitter > 0.0 {
                            let f = 1.0 + jitter / 100.0 * (2.0 * self.rng.unit_f64() - 1.0);
                            work = (work as f64 * f) as u128;
                        }
                        let thread = &mut self.threads[th];
                        thread.remaining = work.min(u64::MAX as u128) as u64;
                        thread.run_started = true;
                        self.cpus[cpu].exec_from = self.now;
                    }
                    if self.threads[th].remaining > 0 {
                        return self.replan(cpu);
                    }
                    let thread = &mut self.threads[th];
                    thread.run_started = false;
                    thread.pc += 1;
                }
                &Op::Sleep { ns } => {
                    self.threads[th].pc += 1;
                    self.threads[th].timer_gen += 1;
                    let gen = self.threads[th].timer_gen;
                    self.queue.push(self.now + ns, Ev::Timer { thread: th, gen, cpu, exited: false });
                    self.block(cpu, th, Blocked::Sleep);
                }
                Op::Wait { efd } => {
                    let Some(id) = resolve(efd, polled) else { return self.bad_ref(th) };
                    let ObjState::Eventfd { counter, waiters } = &mut self.objects[id as usize] else { unreachable!() };
                    if *counter > 0 {
                        *counter = 0;
                        self.threads[th].pc += 1;
                        self.user_event(cpu, th, UserOp::WaitDone { obj: id });
                    } else {
                        waiters.push(th);
                        self.block(cpu, th, Blocked::Eventfd(id));
                    }
                }
                &Op::Signal { ref efd, count } => {
                    let Some(id) = resolve(efd, polled) else { return self.bad_ref(th) };
                    self.threads[th].pc += 1;
                    self.signal(cpu, th, id, count);
                    self.preempt_point(cpu);
                }
                Op::ListAdd { list, efd } => {
                    let (Some(list), Some(efd)) = (resolve(list, polled), resolve(efd, polled)) else {
                        return self.bad_ref(th);
                    };
                    self.threads[th].pc += 1;
                    if let ObjState::WakeList { entries } = &mut self.objects[list as usize] {
                        entries.push(efd);
                    }
                }
                &Op::WakeList { ref list, cost_ns } => {
                    let Some(list) = resolve(list, polled) else { return self.bad_ref(th) };
                    if self.threads[th].wake_pos.is_none() {
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
                    let Some(&efd) = thread.wake_batch.get(pos) else {
                        thread.wake_pos = None;
                        thread.pc += 1;
                        continue;
                    };
                    // The futex syscall's CPU time, then the post.
                    if cost_ns > 0 && !thread.run_started {
                        thread.remaining = cost_ns * UNITS_PER_NS;
                        thread.run_started = true;
                        self.cpus[cpu].exec_from = self.now;
                    }
                    if self.threads[th].remaining > 0 {
                        return self.replan(cpu);
                    }
                    let thread = &mut self.threads[th];
                    thread.run_started = false;
                    thread.wake_pos = Some(pos + 1);
                    self.signal(cpu, th, efd, 1);
                    self.preempt_point(cpu);
                }
                Op::Post { flag } => {
                    let Some(id) = resolve(flag, polled) else { return self.bad_ref(th) };
                    self.threads[th].pc += 1;
                    self.user_event(cpu, th, UserOp::Post { obj: id });
                    if let ObjState::Flag { posted_at } = &mut self.objects[id as usize] {
                        *posted_at = Some(self.now);
                    }
                    self.replan_pollers(id);
                }
                &Op::Poll { ref flags, after_ns } => {
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
                        }
                        _ => return self.replan(cpu),
                    }
                }
                Op::Lock { mutex } if self.is_pi(mutex, polled) => {
                    let Some(id) = resolve(mutex, polled) else { return self.bad_ref(th) };
                    let task = self.threads[th].task;
                    if self.kernel.rt_mutex_lock(task, id, self.now, cpu, &mut self.out) {
                        self.threads[th].pc += 1;
                        self.user_event(cpu, th, UserOp::Lock { obj: id });
                    } else {
                        self.drain();
                        self.block(cpu, th, Blocked::Mutex(id));
                    }
                }
                Op::Unlock { mutex } if self.is_pi(mutex, polled) => {
                    let Some(id) = resolve(mutex, polled) else { return self.bad_ref(th) };
                    self.threads[th].pc += 1;
                    self.user_event(cpu, th, UserOp::Unlock { obj: id });
                    let task = self.threads[th].task;
                    let next = self.kernel.rt_mutex_unlock(task, id, self.now, cpu, &mut self.out);
                    self.drain();
                    if let Some(n) = next {
                        let nth = self.task_thread[n as usize];
                        self.wake(nth, cpu);
                    }
                    self.preempt_point(cpu);
                }
                Op::Lock { mutex } => {
                    let Some(id) = resolve(mutex, polled) else { return self.bad_ref(th) };
                    let ObjState::Mutex { owner, waiters, .. } = &mut self.objects[id as usize] else { unreachable!() };
                    match owner {
                        None => {
                            *owner = Some(th);
                            self.threads[th].pc += 1;
                            self.user_event(cpu, th, UserOp::Lock { obj: id });
                        }
                        Some(o) if *o == th => {
                            // Handed over by the previous owner while we slept.
                            self.threads[th].pc += 1;
                            self.user_event(cpu, th, UserOp::Lock { obj: id });
                        }
                        Some(_) => {
                            waiters.push(th);
                            self.block(cpu, th, Blocked::Mutex(id));
                        }
                    }
                }
                Op::Unlock { mutex } => {
                    let Some(id) = resolve(mutex, polled) else { return self.bad_ref(th) };
                    self.threads[th].pc += 1;
                    self.user_event(cpu, th, UserOp::Unlock { obj: id });
                    let ObjState::Mutex { owner, waiters, .. } = &mut self.objects[id as usize] else { unreachable!() };
                    *owner = None;
                    if !waiters.is_empty() {
                        let next = waiters.remove(0);
                        *owner = Some(next);
                        self.wake(next, cpu);
                    }
                    self.preempt_point(cpu);
                }
                Op::Yield => {
                    self.threads[th].pc += 1;
                    self.kernel.sched_yield(cpu, self.now, &mut self.out);
                    self.drain();
                    self.do_schedule(cpu, false);
                }
            }
        }
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
    fn is_pi(&self, mutex: &schedlab_scenario::ObjRef, polled: Option<usize>) -> bool {
        resolve(mutex, polled).is_some_and(|id| matches!(self.objects[id as usize], ObjState::Mutex { pi: true, .. }))
    }

    fn bad_ref(&mut self, th: usize) {
        let name = &self.scenario.threads[self.threads[th].spec].name;
        self.error = Some(format!("thread {name} used a {{*}} operand before any poll matched"));
    }

    /// A flag was posted: pollers that are running notice after their delay.
    fn replan_pollers(&mut self, flag: u32) {
        for cpu in 0..self.cpus.len() {
            let Some(t) = self.kernel.curr(cpu) else { continue };
            let th = &self.threads[self.task_thread[t as usize]];
            let ops = &self.scenario.threads[th.spec].program.ops;
            if let Some(Op::Poll { flags, .. }) = ops.get(th.pc) {
                if flags.contains(&flag) {
                    self.replan(cpu);
                }
            }
        }
    }

    fn maybe_all_done(&mut self) {
        if self.end.is_none() && self.threads.iter().all(|t| t.finished) {
            self.queue.push(self.now, Ev::End);
        }
    }

    /// Process one event; false when the run is over.
    pub fn step(&mut self) -> bool {
        let Some((t, ev)) = self.queue.pop() else {
            // Superseded timers used to pop (as no-ops) before the queue ran
            // dry: the clock ends where they would have taken it.
            self.now = self.now.max(self.queue.dropped_max());
            return false;
        };
        if let Some(end) = self.end {
            if t > end {
                self.now = end;
                return false;
            }
        }
        self.now = t;
        match ev {
            Ev::End => return false,
            Ev::Start(th) => {
                self.threads[th].started = true;
                let task = self.threads[th].task;
                let cpu = self.kernel.task(task).cpu;
                self.kernel.wake_up_new_task(task, self.now, cpu, &mut self.out);
                self.drain();
                if !self.preempt_point(cpu) {
                    self.replan_if_running(cpu);
                }
            }
            Ev::CpuWork { cpu, gen } => {
                debug_assert_eq!(gen, self.cpus[cpu].gen, "the queue replaced or cancelled this stale CpuWork");
                if gen == self.cpus[cpu].gen {
                    self.settle(cpu);
                    self.run_thread(cpu);
                }
            }
            Ev::Tick { cpu, gen } => {
                debug_assert_eq!(gen, self.cpus[cpu].tick_gen, "the queue replaced or cancelled this stale Tick");
                if gen == self.cpus[cpu].tick_gen {
                    self.cpus[cpu].tick_armed = false;
                    self.settle(cpu);
                    self.kernel.sched_tick(cpu, self.now, &mut self.out);
                    self.drain();
                    if !self.preempt_point(cpu) {
                        self.replan(cpu);
                    }
                    self.update_tick(cpu);
                }
            }
            Ev::FairServer { cpu } => {
                self.irq_on(cpu, Kernel::dl_server_timer);
            }
            Ev::Watchdog { cpu } => {
                self.irq_on(cpu, Kernel::watchdog_kick);
                self.queue.push(self.now + WATCHDOG_PERIOD_NS, Ev::Watchdog { cpu });
            }
            Ev::SwitchDone { cpu, gen } => {
                debug_assert_eq!(
                    gen, self.cpus[cpu].switch_gen,
                    "the queue replaced or cancelled this stale SwitchDone"
                );
                if gen == self.cpus[cpu].switch_gen {
                    self.kernel.finish_task_switch(cpu);
                    self.drain();
                }
            }
            Ev::Ipi { cpu, kind: IpiKind::Resched } => {
                self.preempt_point(cpu);
            }
            Ev::Ipi { cpu, kind: IpiKind::NohzKick } => {
                self.irq_on(cpu, Kernel::nohz_csd_func);
            }
            Ev::Ipi { cpu, kind: IpiKind::RtPushWork } => {
                self.irq_on(cpu, Kernel::rto_push_irq_work_func);
            }
            Ev::Ipi { cpu, kind: IpiKind::CallFunction } => {
                self.irq_on(cpu, Kernel::sched_ttwu_pending);
            }
            Ev::Timer { thread, gen, cpu, exited } => {
                if gen == self.threads[thread].timer_gen && self.threads[thread].blocked == Blocked::Sleep {
                    if !exited && self.kernel.curr(cpu).is_none() && self.topo.costs.idle_exit_ns > 0 {
                        let at = self.now + self.topo.costs.idle_exit_ns;
                        self.queue.push(at, Ev::Timer { thread, gen, cpu, exited: true });
                    } else {
                        self.settle(cpu);
                        self.wake(thread, cpu);
                        if !self.preempt_point(cpu) {
                            self.replan(cpu);
                        }
                    }
                }
            }
        }
        self.error.is_none()
    }

    /// An interrupt-context kernel entry on `cpu` (timer, IPI, irq_work):
    /// run it, then let the CPU reschedule; if it does not, re-plan the
    /// running thread's next op boundary (the handler may have changed its rate).
    fn irq_on(&mut self, cpu: usize, handler: fn(&mut Kernel, usize, u64, &mut Outbox)) {
        self.settle(cpu);
        handler(&mut self.kernel, cpu, self.now, &mut self.out);
        self.drain();
        if !self.preempt_point(cpu) {
            self.replan_if_running(cpu);
        }
    }

    fn replan_if_running(&mut self, cpu: usize) {
        if self.kernel.curr(cpu).is_some() {
            self.replan(cpu);
        }
    }

    /// Hand the trace so far to `sink` and forget it (streamed runs).
    pub fn stream_to(&mut self, sink: &mut dyn FnMut(&Event)) {
        for e in self.out.events.drain(..self.traced) {
            sink(&e);
        }
        self.traced = 0;
    }

    #[allow(dead_code)]
    pub fn thread_of_task(&self, t: TaskId) -> usize {
        self.task_thread[t as usize]
    }
}
