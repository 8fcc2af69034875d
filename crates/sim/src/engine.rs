//! The event loop: hardware events (work completion, ticks, IPIs, timers)
//! pop from the queue in time order and drive the kernel model; the
//! hardware (`hw`) says what each costs, and the workload interpreter
//! (`workload::ops`) runs each thread's program on the CPU the model gives it.
//!
//! Time is integer nanoseconds. The trace is the engine's own stream: the
//! kernel's events are moved into it at each `drain()`, and the workload's
//! markers are appended after them, so their order is the order things
//! happened. Simplification: the kernel runs in zero time between events
//! (only the switch cost is charged, by the hardware model).

use crate::hrtimer::{HrtimerBases, SleepTimer};
use crate::hw::Hardware;
use crate::queue::EventQueue;
use crate::workload::{Blocked, ObjState, Thread};
use crate::SimError;
use schedlab_kernel::{IpiKind, Kernel, Outbox, TaskId, TimerKind, WakeRequest};
use schedlab_scenario::Scenario;
use schedlab_trace::{Event, EventKind, Pid, UserOp};

pub use crate::hw::UNITS_PER_NS;

/// The soft-lockup watchdog's period (`watchdog_thresh` 10 s ⇒ hrtimer every 4 s).
pub const WATCHDOG_PERIOD_NS: u64 = 4_000_000_000;

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
    /// A deadline task's replenishment timer, on the CPU that armed it.
    DlTimer {
        cpu: usize,
        task: schedlab_kernel::TaskId,
    },
    /// A deadline entity's inactive timer (its 0-lag time, for GRUB), on the
    /// CPU that armed it.
    DlInactive {
        cpu: usize,
        what: TimerKind,
    },
    /// schedutil's kthread has set cpufreq policy `policy`'s new frequency.
    CpufreqDone {
        policy: usize,
        cpu: usize,
    },
    /// A task group's CFS bandwidth timer (period or slack), pinned to `cpu`.
    CfsBandwidth {
        cpu: usize,
        what: TimerKind,
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
    /// `polled`: a polling idle CPU that only sees its flag (no interrupt
    /// to take, so no `ipi_receive` time).
    Ipi {
        cpu: usize,
        kind: IpiKind,
        polled: bool,
    },
    /// A polling idle state's time limit (`poll_idle()`): the governor
    /// chooses again. `gen` is the CPU's idle generation when it was armed.
    IdleTimeout {
        cpu: usize,
        gen: u64,
    },
    /// Interference from noise stream `0` (an interrupt, steal) arrives.
    Noise(usize),
    /// The timer interrupt that woke a task on `cpu` returns
    /// (`timer_irq_exit_ns` after the wakeup): the CPU may switch now.
    IrqExit {
        cpu: usize,
    },
    /// A sleep's hrtimer expires; `exited` once an idle CPU has left idle.
    Timer {
        thread: usize,
        gen: u64,
        cpu: usize,
        exited: bool,
    },
    /// A waker's selection time has passed: it queues the wakee on the
    /// CPU it chose (a `WakeRequest`, kept small: every event is this size).
    TtwuQueue {
        task: TaskId,
        cpu: u32,
        from: u32,
        wake_flags: u32,
        /// What the wakeup charged before (the model's schedstats).
        charged: u32,
    },
    End,
}

/// Keys of the per-CPU timers in the event queue, re-armed in place (see
/// `queue`): the next op boundary, the tick, the end of a context switch.
/// After them, one key per noise stream (each has one arrival pending,
/// re-armed as it pops).
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

/// The queue key of noise stream `i` on a machine of `nr_cpus` CPUs.
pub(crate) fn noise_key(nr_cpus: usize, i: usize) -> usize {
    nr_cpus * KEYS_PER_CPU + i
}

pub(crate) struct Engine<'a> {
    pub scenario: &'a Scenario,
    pub kernel: Kernel,
    /// The scenario's cgroups and sessions as the kernel's task groups.
    pub groups: crate::groups::GroupMap,
    /// What the kernel's entry points asked of the hardware since the last
    /// `drain()`: every entry point is handed this outbox.
    pub out: Outbox,
    pub hw: Hardware<'a>,
    pub threads: Vec<Thread>,
    /// Task id → thread index.
    pub task_thread: Vec<usize>,
    pub objects: Vec<ObjState>,
    pub queue: EventQueue<Ev>,
    pub now: u64,
    /// The trace so far (since the last `stream_to`). What the kernel emitted
    /// after the last `drain()` is not in it yet (a run drops what it never
    /// drained).
    pub trace: Vec<Event>,
    pub check_invariants: bool,
    /// Check every entry up to this size ([`SimOptions::invariant_budget`]).
    pub invariant_budget: u64,
    /// Kernel entries since the last check.
    pub unchecked_entries: u64,
    /// Charge the real runner's capture costs (markers, tracepoints).
    pub traced: bool,
    /// Kernel CPU time not yet charged, per CPU: the scheduling paths'
    /// (`[costs.kernel]`) and, in traced runs, the captured tracepoints'.
    pub pending_ns: Vec<u64>,
    /// Per CPU, until when a timer interrupt's tail after its wakeup runs
    /// (`timer_irq_exit_ns`): an idle CPU does not go back to idle meanwhile.
    pub irq_exit_at: Vec<u64>,
    /// Per CPU, the part of a timer's idle exit held back until after its
    /// handler (`idle_exit_tail_ns`, at most the drawn exit).
    pub idle_exit_tail: Vec<u64>,
    /// The sleeps' hrtimers per CPU, with their ranges (`hrtimer`).
    pub hrtimers: HrtimerBases,
    /// What one `hrtimer_run_queues()` expired (kept to reuse its buffer).
    pub hrtimer_expired: Vec<SleepTimer>,
    pub end: Option<u64>,
    pub error: Option<SimError>,
    pub forks: crate::workload::Forks,
}

impl<'a> Engine<'a> {
    pub(crate) fn pid_of(&self, thread: usize) -> Pid {
        self.kernel.task(self.threads[thread].task).pid
    }

    /// Take the kernel's new events into the trace, deliver its requests,
    /// then check the model.
    pub(crate) fn drain(&mut self) {
        if self.traced && self.hw.costs().tracepoint_ns > 0 {
            let ns = self.hw.costs().tracepoint_ns;
            for e in self.out.events.iter().filter(|e| e.kind.is_captured_tracepoint()) {
                self.pending_ns[e.cpu as usize] += ns;
            }
        }
        for (cpu, ns) in self.out.cpu_ns.drain(..) {
            self.pending_ns[cpu as usize] += ns;
        }
        if self.trace.is_empty() {
            // Streamed runs empty the trace every step: trade buffers, copy nothing.
            std::mem::swap(&mut self.trace, &mut self.out.events);
        } else {
            self.trace.append(&mut self.out.events);
        }
        if !self.out.wakes.is_empty() {
            let mut wakes = std::mem::take(&mut self.out.wakes);
            for w in wakes.drain(..) {
                let ev = Ev::TtwuQueue {
                    task: w.task,
                    cpu: w.cpu as u32,
                    from: w.from as u32,
                    wake_flags: w.wake_flags,
                    charged: w.charged_ns.min(u64::from(u32::MAX)) as u32,
                };
                self.queue.push(self.now + w.after_ns, ev);
            }
            self.out.wakes = wakes;
        }
        // Most kernel entries request neither an IPI nor a timer.
        if !self.out.ipis.is_empty() {
            self.deliver_ipis();
        }
        if !self.out.timers.is_empty() {
            let mut timers = std::mem::take(&mut self.out.timers);
            for t in timers.drain(..) {
                let ev = match t.what {
                    TimerKind::FairServer => Ev::FairServer { cpu: t.cpu },
                    TimerKind::DlTask(task) => Ev::DlTimer { cpu: t.cpu, task },
                    what @ (TimerKind::DlInactive(_) | TimerKind::FairServerInactive) => {
                        Ev::DlInactive { cpu: t.cpu, what }
                    }
                    TimerKind::CpufreqWork(policy) => Ev::CpufreqDone { policy, cpu: t.cpu },
                    what => Ev::CfsBandwidth { cpu: t.cpu, what },
                };
                self.queue.push(t.at, ev);
            }
            self.out.timers = timers;
        }
        if self.check_invariants {
            // What this entry touched, every entry; the whole model every
            // size/budget-th (amortized: `budget` tasks or CPUs per entry).
            if let Err(e) = self.kernel.check_touched() {
                self.fail_invariant(e);
            }
            self.unchecked_entries += 1;
            let size = (self.kernel.tasks().len() + self.pending_ns.len()) as u64;
            if self.unchecked_entries >= size / self.invariant_budget {
                self.check_now();
            }
        }
    }

    fn fail_invariant(&mut self, source: schedlab_kernel::invariants::InvariantError) {
        if self.error.is_none() {
            self.error = Some(SimError::Invariant { at_ns: self.now, source });
        }
    }

    /// Check the model's invariants now (the run's end checks whatever a
    /// stride left unchecked).
    pub(crate) fn check_now(&mut self) {
        if !self.check_invariants || self.unchecked_entries == 0 {
            return;
        }
        self.unchecked_entries = 0;
        if let Err(e) = self.kernel.check_invariants() {
            self.fail_invariant(e);
        }
    }

    /// Queue the interrupts the kernel asked for, with their delivery latency.
    fn deliver_ipis(&mut self) {
        // Reuse the request buffer: no allocation per event in the steady state.
        let mut ipis = std::mem::take(&mut self.out.ipis);
        for ipi in ipis.drain(..) {
            let delay = self.hw.ipi_latency(ipi.from, ipi.cpu, ipi.polled, ipi.idle, self.now);
            self.queue.push(self.now + delay, Ev::Ipi { cpu: ipi.cpu, kind: ipi.kind, polled: ipi.polled });
        }
        self.out.ipis = ipis;
    }

    /// The workload's marker: emitted whether or not the kernel's
    /// tracepoints are on (streamed schbench runs read only these). The
    /// kernel's events so far are drained first, so the marker follows them.
    pub(crate) fn user_event(&mut self, cpu: usize, thread: usize, op: UserOp) {
        self.drain();
        let pid = self.pid_of(thread);
        self.trace.push(Event {
            ts: self.now,
            cpu: cpu as u32,
            ctx_pid: pid,
            flags: *b"...1.",
            kind: EventKind::User { pid, op },
        });
    }

    /// Account the current thread's progress up to now.
    pub(crate) fn settle(&mut self, cpu: usize) {
        let Some(t) = self.kernel.curr(cpu) else { return };
        let done = self.hw.advance(cpu, self.now);
        let thread = &mut self.threads[self.task_thread[t as usize]];
        if thread.run_started {
            thread.remaining = thread.remaining.saturating_sub(done);
        }
    }

    /// Re-plan the current thread's next op boundary on `cpu`.
    pub(crate) fn replan(&mut self, cpu: usize) {
        let gen = self.hw.next_work_gen(cpu);
        let key = work_key(cpu);
        let Some(t) = self.kernel.curr(cpu) else {
            // An idle CPU's tracepoint time delays nobody's work.
            self.pending_ns[cpu] = 0;
            return self.queue.cancel(key);
        };
        if self.pending_ns[cpu] > 0 {
            // The tracepoints this CPU wrote take its current thread's time.
            let resume = self.hw.exec_from(cpu).max(self.now) + std::mem::take(&mut self.pending_ns[cpu]);
            self.hw.set_exec_from(cpu, resume);
        }
        let th = self.task_thread[t as usize];
        let kernel = &self.kernel;
        self.hw.update_rate(cpu, |s| kernel.curr(s).is_some(), kernel.arch_scale_freq_capacity(cpu));
        let exec_from = self.hw.exec_from(cpu);
        let at = if exec_from > self.now { Some(exec_from) } else { self.next_op_boundary(th, cpu) };
        match at {
            Some(at) => self.queue.push_keyed(key, at, Ev::CpuWork { cpu, gen }),
            // Spin until a post re-plans us.
            None => self.queue.cancel(key),
        }
    }

    /// A cpufreq transition finished: the policy's busy CPUs are credited
    /// their work at the old speed and go on at the new one.
    fn cpufreq_transition_done(&mut self, policy: usize, cpu: usize) {
        let cpus = self.kernel.cpufreq_policies()[policy].cpus;
        let busy: Vec<usize> = cpus.iter().filter(|&c| self.kernel.curr(c).is_some()).collect();
        for &cpu in &busy {
            self.settle(cpu);
        }
        self.kernel.cpufreq_transition_done(policy, cpu, self.now, &mut self.out);
        self.drain();
        for &cpu in &busy {
            self.replan(cpu);
        }
    }

    /// SMT siblings of `cpu` change speed when `cpu` starts or stops running.
    fn siblings_changed(&mut self, cpu: usize) {
        for i in 0..self.hw.siblings(cpu).len() {
            let s = self.hw.siblings(cpu)[i];
            if self.kernel.curr(s).is_some() {
                self.settle(s);
                self.replan(s);
            }
        }
    }

    /// Keep the periodic tick armed exactly while the CPU is busy (NOHZ idle).
    fn update_tick(&mut self, cpu: usize) {
        if self.kernel.curr(cpu).is_some() {
            if let Some((at, gen)) = self.hw.arm_tick(cpu, self.now) {
                self.queue.push_keyed(tick_key(cpu), at, Ev::Tick { cpu, gen });
            }
        } else if self.hw.disarm_tick(cpu) {
            self.queue.cancel(tick_key(cpu));
        }
    }

    /// `schedule()` on `cpu` and the hardware consequences of a switch.
    pub(crate) fn do_schedule(&mut self, cpu: usize, preempt: bool) {
        self.settle(cpu);
        let sw = self.kernel.schedule(cpu, self.now, preempt, &mut self.out);
        self.drain();
        if !sw.switched() {
            self.replan(cpu);
            return;
        }
        if sw.prev.is_some() {
            let cs = self.hw.context_switch_ns();
            if cs == 0 {
                self.kernel.finish_task_switch(cpu);
            } else {
                let gen = self.hw.start_switch(cpu);
                self.queue.push_keyed(switch_key(cpu), self.now + cs, Ev::SwitchDone { cpu, gen });
            }
        }
        if let Some(n) = sw.next {
            if sw.prev.is_none() {
                self.leave_idle(cpu);
            }
            let th = self.task_thread[n as usize];
            let cost = self.hw.switch_in_cost(self.threads[th].last_cpu, cpu);
            self.threads[th].last_cpu = Some(cpu);
            self.hw.set_exec_from(cpu, self.now + cost);
        } else {
            // What the kernel charged on the way to idle (the newidle
            // balance) passes before the idle state is entered.
            let held = std::mem::take(&mut self.pending_ns[cpu]);
            if held > 0 {
                self.hw.hold_busy(cpu, self.now, held);
            }
            self.go_idle(cpu);
        }
        self.update_tick(cpu);
        if sw.prev.is_none() || sw.next.is_none() {
            self.siblings_changed(cpu);
        }
        self.replan(cpu);
    }

    /// The idle loop on `cpu`: the governor picks a state (once an interrupt
    /// or steal in progress is over), which sets the kernel's polling flag;
    /// a polling state's time limit is armed.
    pub(crate) fn go_idle(&mut self, cpu: usize) {
        let at = self.now.max(self.hw.busy_until(cpu));
        let e = self.hw.enter_idle(cpu, at);
        self.kernel.set_idle_polling(cpu, e.polling);
        if let Some(t) = e.timeout_at {
            self.queue.push(t, Ev::IdleTimeout { cpu, gen: e.gen });
        }
    }

    /// `cpu` leaves its idle state (the flag it polled is cleared).
    fn leave_idle(&mut self, cpu: usize) {
        if self.hw.is_idle(cpu) {
            self.hw.leave_idle(cpu, self.now);
            self.kernel.set_idle_polling(cpu, false);
        }
    }

    /// An interrupt or timer on `cpu`: an idle CPU leaves its state for the
    /// handler and, if it still has nothing to run afterwards, idles again
    /// in a state the governor chooses afresh.
    fn on_interrupt(&mut self, cpu: usize, handler: impl FnOnce(&mut Self)) {
        let was_idle = self.hw.is_idle(cpu);
        if was_idle {
            self.leave_idle(cpu);
        }
        handler(self);
        if was_idle && self.kernel.curr(cpu).is_none() && !self.hw.is_idle(cpu) && self.irq_exit_at[cpu] <= self.now {
            self.go_idle(cpu);
        }
    }

    /// Interference from noise stream `i`: the CPU's current work stops for
    /// its length; an idle CPU wakes for it (paying its exit latency) unless
    /// it is steal, which a halted vCPU does not notice. Interrupts for the
    /// CPU meanwhile wait for its end (`Hardware::ipi_latency`).
    fn noise(&mut self, i: usize) {
        let busy = self.kernel.curr(self.hw.noise_cpu(i)).is_some();
        let (cpu, a) = self.hw.noise_arrives(i, self.now, busy);
        self.queue.push_keyed(noise_key(self.hw.nr_cpus(), i), a.next_at, Ev::Noise(i));
        if a.duration_ns == 0 {
            return;
        }
        if self.kernel.curr(cpu).is_some() {
            self.settle(cpu);
            let resume = self.hw.exec_from(cpu).max(self.now) + a.duration_ns;
            self.hw.set_exec_from(cpu, resume);
            self.replan(cpu);
        } else if Hardware::noise_wakes_idle(a.kind) && self.hw.is_idle(cpu) {
            let exit = self.hw.exit_cost(cpu, self.now);
            self.hw.extend_busy(cpu, exit);
            self.leave_idle(cpu);
            self.go_idle(cpu);
        }
    }

    /// A preemption point on `cpu` (return to user from a syscall or interrupt).
    pub(crate) fn preempt_point(&mut self, cpu: usize) -> bool {
        if self.kernel.need_resched(cpu, true) {
            self.do_schedule(cpu, true);
            true
        } else {
            false
        }
    }

    pub(crate) fn maybe_all_done(&mut self) {
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
                self.threads[th].started_at = self.now;
                let task = self.threads[th].task;
                let cpu = self.kernel.task(task).cpu;
                self.kernel.wake_up_new_task(task, self.now, cpu, &mut self.out);
                self.drain();
                if !self.preempt_point(cpu) {
                    self.replan_if_running(cpu);
                }
            }
            Ev::CpuWork { cpu, gen } => {
                let current = self.hw.work_gen(cpu);
                debug_assert_eq!(gen, current, "the queue replaced or cancelled this stale CpuWork");
                if gen == current {
                    self.settle(cpu);
                    self.run_thread(cpu);
                }
            }
            Ev::Tick { cpu, gen } => {
                if self.hw.tick_fired(cpu, gen) {
                    self.settle(cpu);
                    self.kernel.sched_tick(cpu, self.now, &mut self.out);
                    self.drain();
                    // The tick is an hrtimer of the same base: the sleeps
                    // whose range it falls into end in its interrupt.
                    let next_tick = self.hw.tick_after(self.now);
                    self.hrtimer_run_queues(cpu, Some(next_tick));
                    if !self.preempt_point(cpu) {
                        self.replan(cpu);
                    }
                    self.update_tick(cpu);
                }
            }
            Ev::FairServer { cpu } => {
                self.on_interrupt(cpu, |e| e.hrtimer_irq_on(cpu, Kernel::dl_server_timer));
            }
            Ev::DlTimer { cpu, task } => {
                self.on_interrupt(cpu, |e| e.hrtimer_irq_on(cpu, |k, c, now, out| k.dl_timer(task, c, now, out)));
            }
            Ev::DlInactive { cpu, what } => {
                self.on_interrupt(cpu, |e| {
                    e.hrtimer_irq_on(cpu, |k, c, now, out| k.dl_inactive_timer(what, c, now, out))
                });
            }
            Ev::CpufreqDone { policy, cpu } => self.cpufreq_transition_done(policy, cpu),
            Ev::CfsBandwidth { cpu, what } => {
                self.on_interrupt(cpu, |e| {
                    e.hrtimer_irq_on(cpu, |k, c, now, out| k.cfs_bandwidth_timer(what, c, now, out))
                });
            }
            Ev::Watchdog { cpu } => {
                self.on_interrupt(cpu, |e| e.hrtimer_irq_on(cpu, Kernel::watchdog_kick));
                self.queue.push(self.now + WATCHDOG_PERIOD_NS, Ev::Watchdog { cpu });
            }
            Ev::IdleTimeout { cpu, gen } => {
                if let Some(e) = self.hw.idle_timeout(cpu, gen, self.now) {
                    self.kernel.set_idle_polling(cpu, e.polling);
                    if let Some(t) = e.timeout_at {
                        self.queue.push(t, Ev::IdleTimeout { cpu, gen: e.gen });
                    }
                }
            }
            Ev::Noise(i) => self.noise(i),
            Ev::IrqExit { cpu } => {
                if self.irq_exit_at[cpu] == self.now && !self.preempt_point(cpu) {
                    if self.kernel.curr(cpu).is_some() {
                        self.replan(cpu);
                    } else if !self.hw.is_idle(cpu) {
                        self.go_idle(cpu);
                    }
                }
            }
            Ev::SwitchDone { cpu, gen } => {
                if self.hw.switch_done(cpu, gen) {
                    self.kernel.finish_task_switch(cpu);
                    self.drain();
                }
            }
            Ev::TtwuQueue { task, cpu, from, wake_flags, charged } => {
                // Still the waker's syscall: no preemption point here, its
                // next op (planned after the selection's time) comes next.
                let w = WakeRequest {
                    task,
                    cpu: cpu as usize,
                    wake_flags,
                    from: from as usize,
                    after_ns: 0,
                    charged_ns: u64::from(charged),
                };
                self.settle(w.from);
                self.kernel.ttwu_queue_selected(w, self.now, &mut self.out);
                self.drain();
                self.replan_if_running(w.from);
            }
            Ev::Ipi { cpu, kind, polled } => {
                if !polled {
                    // The interrupt's entry, dispatch and exit take the
                    // CPU's time: its current thread's, or on an idle CPU
                    // the woken one's (whoever runs next starts that much later).
                    self.pending_ns[cpu] += self.hw.costs().kernel.ipi_receive_ns;
                }
                match kind {
                    IpiKind::Resched => self.on_interrupt(cpu, |e| {
                        e.preempt_point(cpu);
                    }),
                    IpiKind::NohzKick => self.on_interrupt(cpu, |e| e.irq_on(cpu, Kernel::nohz_csd_func)),
                    IpiKind::RtPushWork => self.on_interrupt(cpu, |e| e.irq_on(cpu, Kernel::rto_push_irq_work_func)),
                    IpiKind::CallFunction => self.on_interrupt(cpu, |e| e.irq_on(cpu, Kernel::sched_ttwu_pending)),
                }
                if self.kernel.curr(cpu).is_none() {
                    // Nothing was woken: the idle CPU's time delays nobody.
                    self.pending_ns[cpu] = 0;
                }
            }
            Ev::Timer { thread, gen, cpu, exited } => {
                if gen == self.threads[thread].timer_gen && self.threads[thread].blocked == Blocked::Sleep {
                    let busy_until = self.hw.busy_until(cpu);
                    if busy_until > self.now {
                        // The CPU is in an interrupt or stolen: the timer interrupt
                        // waits, its delivery overlapping the wait.
                        let delivered = if exited { self.now } else { self.now + self.hw.costs().timer_irq_ns };
                        self.queue.push(busy_until.max(delivered), Ev::Timer { thread, gen, cpu, exited: true });
                        return self.error.is_none();
                    }
                    // First arrival: the interrupt's delivery, plus the idle
                    // exit when the CPU sleeps; then the handler runs.
                    let delay = if exited {
                        0
                    } else if self.kernel.curr(cpu).is_none() {
                        let (exit, tail) = self.hw.timer_exit_and_tail(cpu, self.now);
                        self.idle_exit_tail[cpu] = tail;
                        self.hw.costs().timer_irq_ns + exit - tail
                    } else {
                        self.hw.costs().timer_irq_ns
                    };
                    if delay > 0 {
                        self.queue.push(self.now + delay, Ev::Timer { thread, gen, cpu, exited: true });
                    } else {
                        self.on_interrupt(cpu, |e| {
                            e.settle(cpu);
                            let next_tick = e.hw.next_tick(cpu, e.now);
                            e.hrtimer_run_queues(cpu, next_tick);
                            e.timer_irq_exit(cpu);
                        });
                    }
                }
            }
        }
        self.error.is_none()
    }

    /// The rest of a timer interrupt after its callback woke a task
    /// (`hrtimer_interrupt()` reprogramming the next event, the interrupt's
    /// return): `timer_irq_exit_ns` of the CPU's time, which the running
    /// thread loses, before the return's preemption point; on a CPU that
    /// was idle also the held-back end of its exit (`idle_exit_tail_ns`). With no such
    /// cost the CPU reschedules at once.
    fn timer_irq_exit(&mut self, cpu: usize) {
        let tail = self.hw.costs().timer_irq_exit_ns + std::mem::take(&mut self.idle_exit_tail[cpu]);
        if tail == 0 {
            if !self.preempt_point(cpu) {
                self.replan(cpu);
            }
            return;
        }
        if self.kernel.curr(cpu).is_some() {
            let resume = self.hw.exec_from(cpu).max(self.now) + tail;
            self.hw.set_exec_from(cpu, resume);
            self.replan(cpu);
        }
        self.irq_exit_at[cpu] = self.now + tail;
        self.queue.push(self.now + tail, Ev::IrqExit { cpu });
    }

    /// `__hrtimer_run_queues()` for the sleeps armed on `cpu`, in an hrtimer
    /// interrupt there: every sleep the walk reaches (see `hrtimer`) ends,
    /// in hard-expiry order, its thread woken from this CPU. `next_tick` is
    /// the tick's next expiry if it runs on the CPU.
    fn hrtimer_run_queues(&mut self, cpu: usize, next_tick: Option<u64>) {
        let mut expired = std::mem::take(&mut self.hrtimer_expired);
        let threads = &self.threads;
        self.hrtimers.run_queues(
            cpu,
            self.now,
            next_tick,
            |t| threads[t.thread].timer_gen == t.gen && threads[t.thread].blocked == Blocked::Sleep,
            &mut expired,
        );
        for t in expired.drain(..) {
            self.hw.disarm_timer(cpu, t.hard);
            self.wake(t.thread, cpu);
        }
        self.hrtimer_expired = expired;
    }

    /// An hrtimer's interrupt on `cpu` (the fair server's, a deadline
    /// task's replenishment or inactive timer, a bandwidth or the watchdog
    /// timer): its handler, then the
    /// sleeps whose range it falls into, then the CPU may reschedule.
    fn hrtimer_irq_on(&mut self, cpu: usize, handler: impl FnOnce(&mut Kernel, usize, u64, &mut Outbox)) {
        self.interrupt(cpu, true, handler);
    }

    /// An interrupt-context kernel entry on `cpu` (an IPI, irq_work): run
    /// it, then let the CPU reschedule; if it does not, re-plan the running
    /// thread's next op boundary (the handler may have changed its rate).
    fn irq_on(&mut self, cpu: usize, handler: impl FnOnce(&mut Kernel, usize, u64, &mut Outbox)) {
        self.interrupt(cpu, false, handler);
    }

    fn interrupt(&mut self, cpu: usize, hrtimer: bool, handler: impl FnOnce(&mut Kernel, usize, u64, &mut Outbox)) {
        self.settle(cpu);
        handler(&mut self.kernel, cpu, self.now, &mut self.out);
        self.drain();
        if hrtimer {
            let next_tick = self.hw.next_tick(cpu, self.now);
            self.hrtimer_run_queues(cpu, next_tick);
        }
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
        for e in self.trace.drain(..) {
            sink(&e);
        }
    }

    #[allow(dead_code)]
    pub fn thread_of_task(&self, t: TaskId) -> usize {
        self.task_thread[t as usize]
    }
}

#[cfg(test)]
mod tests {
    /// Every queued event is as large as the largest variant, and the
    /// queue moves them on every push and pop.
    #[test]
    fn an_event_stays_small() {
        assert!(std::mem::size_of::<super::Ev>() <= 40, "{} bytes", std::mem::size_of::<super::Ev>());
    }
}
