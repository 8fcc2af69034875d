//! The model's `kernel/sched/core.c`: the [`Kernel`] state, task creation,
//! `try_to_wake_up()`, `__schedule()`, `sched_tick()`, `resched_curr()`.
//!
//! Every entry point takes the simulated time and the CPU whose context runs
//! the code (the waker's CPU for a wakeup, the ticking CPU for a tick), like
//! the kernel's `smp_processor_id()`. The simulator owns time and decides
//! when interrupts arrive; the model only records what it asks for (reschedule
//! IPIs) in [`Kernel::ipis`].
//!
//! Preemption models: workload threads run in user space, where `none`,
//! `voluntary` and `full` behave alike (a reschedule takes effect on the next
//! return to user, i.e. when the IPI or tick interrupt returns); they differ
//! only for kernel code, which the model does not run. `lazy` differs: fair
//! reschedules set TIF_NEED_RESCHED_LAZY without an IPI and wait for the next
//! tick or kernel exit on that CPU.
//!
//! The wakeup half of core.c (`try_to_wake_up()` and the wakelist) lives in
//! [`crate::ttwu`]. Simplified: only the fair and idle classes exist yet.

use crate::features::{Feature, Features};
use crate::pelt;
use crate::profile::Profile;
use crate::sched::*;
use crate::topology::{build_sched_domains, SchedDomains};
use schedlab_topology::{CpuSet, PreemptModel, Topology};
use schedlab_trace::{Event, EventKind, Pid, PrevState};

/// Static configuration of a kernel instance.
#[derive(Clone, Debug)]
pub struct KernelConfig {
    pub profile: Profile,
    pub features: Features,
    /// The machine: CPUs, capacities, ITMT priorities, HZ, idle polling.
    pub topology: Topology,
    /// The preemption model in effect (the topology's, unless the profile lacks it).
    pub preempt: PreemptModel,
    /// Record events in [`Kernel::events`].
    pub trace: bool,
    /// Seed of the model's own random choices (NI_RANDOM).
    pub seed: u64,
}

/// What a new task looks like (`sched_setattr()` + affinity at creation).
#[derive(Clone, Debug)]
pub struct TaskParams {
    pub pid: Pid,
    pub policy: Policy,
    pub nice: i32,
    pub rt_priority: u32,
    /// Custom slice (fair `sched_runtime`), already clamped to 0.1–100 ms.
    pub slice_ns: Option<u64>,
    pub cpus_mask: CpuSet,
    /// The CPU the task is created on (the parent's CPU).
    pub cpu: usize,
    /// Start on `cpu` without fork balancing (a scenario's `start_cpu`).
    pub fixed_start: bool,
}

/// What an interrupt to another CPU asks it to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpiKind {
    /// `smp_send_reschedule()`: enter `schedule()` if need_resched.
    Resched,
    /// `send_call_function_single_ipi()` for the wakelist: run `sched_ttwu_pending()`.
    CallFunction,
    /// `kick_ilb()`'s nohz CSD: run `nohz_csd_func()` and idle-balance.
    NohzKick,
    /// The RT_PUSH_IPI irq_work: run `rto_push_irq_work_func()`.
    RtPushWork,
}

/// A request the model makes of the hardware: interrupt `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpiRequest {
    pub cpu: usize,
    pub kind: IpiKind,
    /// The target is idle: it pays its idle-exit latency.
    pub idle: bool,
    /// No IPI is needed: the idle target polls its flags (`set_nr_if_polling()`).
    pub polled: bool,
}

/// `struct sched_domain_shared`: per-LLC state the wakeup path reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcShared {
    /// Some core in the LLC has all its SMT siblings idle.
    pub has_idle_cores: bool,
    /// SIS_UTIL's scan budget for `select_idle_cpu()`.
    pub nr_idle_scan: u32,
    /// CPUs of the LLC not in nohz idle (`nr_busy_cpus`).
    pub nr_busy_cpus: u32,
    /// When the budget was last recomputed (ns).
    pub last_scan_update: u64,
}

/// The pid the model gives CPU `cpu`'s stopper thread (`migration/N`).
pub fn stopper_pid(cpu: usize) -> Pid {
    STOPPER_PID_BASE + cpu as Pid
}

const SCHED_NR_MIGRATE: usize = 32;

/// Uptime the rq clock shows at simulated time 0 (see `update_rq_clock()`).
pub const RQ_CLOCK_BASE: u64 = 1_000_000_000;

/// First stopper pid; workload pids start far above it.
pub const STOPPER_PID_BASE: Pid = 100;

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

/// The whole scheduler state of a machine.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub profile: Profile,
    pub features: Features,
    pub tasks: Vec<Task>,
    pub rqs: Vec<Rq>,
    /// `sysctl_sched_base_slice` for this machine.
    pub base_slice: u64,
    pub tick_ns: u64,
    pub preempt: PreemptModel,
    pub trace: bool,
    /// Events since the simulator last drained them.
    pub events: Vec<Event>,
    /// Interrupts the simulator must deliver.
    pub ipis: Vec<IpiRequest>,
    /// Timers (fair server) the simulator must fire.
    pub timer_requests: Vec<crate::deadline::TimerRequest>,
    pub topo: Topology,
    /// The sched domain hierarchy built from the topology.
    pub domains: SchedDomains,
    /// `sd_llc_shared`, indexed by CPU id of the LLC's `sd_llc_id`.
    pub llc_shared: Vec<LlcShared>,
    /// `sched_smt_active()`.
    pub smt_active: bool,
    /// PI mutexes, indexed by the workload's object id.
    pub rt_mutexes: Vec<crate::rtmutex::RtMutex>,
    /// Root domain: CPUs with pushable RT tasks (`rto_mask`, `rto_count`).
    pub rto_mask: CpuSet,
    pub rto_count: u32,
    /// RT_PUSH_IPI chain state (`rto_cpu`, `rto_loop`, `rto_loop_next`).
    pub rto_cpu: i64,
    pub rto_loop: u64,
    pub rto_loop_next: u64,
    /// Cursor of `cpumask_any_distribute()`.
    pub(crate) distribute_cursor: usize,
    /// Per CPU, per domain level: the mutable half of `struct sched_domain`.
    pub sd_state: Vec<Vec<crate::fair_nohz::SdState>>,
    /// `sgc->imbalance`, indexed by sched group id.
    pub sgc_imbalance: Vec<bool>,
    /// `rd->overloaded`.
    pub rd_overloaded: bool,
    /// The global `nohz` state.
    pub nohz: crate::fair_nohz::Nohz,
    pub(crate) rng_state: u64,
    /// `env->tasks` of the balance in progress (reused, never freed).
    pub(crate) lb_detached: Vec<TaskId>,
    pub(crate) now: u64,
    pub(crate) exec_cpu: usize,
    /// `jiffies` at `now`, kept by `enter()`: the balancer reads it per
    /// domain, and computing it is a 64-bit division.
    pub(crate) jiffies: u64,
    /// `HZ` and `max_load_balance_interval`, fixed once `tick_ns` is (divisions too).
    pub(crate) hz: u64,
    pub(crate) max_lb_interval: u64,
    /// `cpu_smt_mask()` of each CPU. `Topology::smt_mask()` scans every CPU
    /// to build it, and the idle-core and balance paths ask for it per CPU.
    pub(crate) smt_masks: Vec<CpuSet>,
    /// The `sched_asym_cpucapacity` static key: some CPU has an
    /// `sd_asym_cpucapacity` domain. Fixed once the domains are built; the
    /// wakeup path tests it several times per wakeup.
    pub(crate) asym_cpucap_active: bool,
}

impl Kernel {
    pub fn new(cfg: KernelConfig) -> Self {
        let topo = cfg.topology;
        let nr_cpus = topo.nr_cpus();
        let domains = build_sched_domains(&topo);
        let mut rqs: Vec<Rq> = (0..nr_cpus).map(Rq::new).collect();
        for (cpu, rq) in rqs.iter_mut().enumerate() {
            rq.cpu_capacity = topo.cpus[cpu].capacity as u64;
        }
        // Before the first periodic balance measures utilisation, let SIS_UTIL
        // scan the whole LLC as if it were idle; at boot every core is idle.
        let llc_shared = (0..nr_cpus)
            .map(|cpu| LlcShared {
                nr_idle_scan: domains.cpus[cpu].sd_llc_size,
                has_idle_cores: topo.has_smt(),
                last_scan_update: 0,
                // Every CPU starts idle with its tick stopped.
                nr_busy_cpus: 0,
            })
            .collect();
        let sd_state = domains
            .cpus
            .iter()
            .map(|c| {
                c.domains
                    .iter()
                    .map(|d| crate::fair_nohz::SdState {
                        balance_interval: d.balance_interval,
                        newidle_call: d.newidle_call,
                        newidle_success: d.newidle_success,
                        newidle_ratio: d.newidle_ratio,
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let mut nohz = crate::fair_nohz::Nohz::default();
        for (cpu, rq) in rqs.iter_mut().enumerate() {
            rq.nohz_tick_stopped = true;
            rq.llc_nohz_idle = domains.cpus[cpu].sd_llc.is_some();
            nohz.idle_cpus_mask.insert(cpu);
            nohz.nr_cpus += 1;
        }
        let tick_ns = topo.tick_ns();
        let hz = 1_000_000_000 / tick_ns;
        Kernel {
            jiffies: 0,
            hz,
            // HZ·nr_cpus/10 jiffies.
            max_lb_interval: (hz * nr_cpus as u64 / 10).max(1),
            smt_masks: (0..nr_cpus).map(|cpu| topo.smt_mask(cpu)).collect(),
            asym_cpucap_active: domains.cpus.iter().any(|c| c.sd_asym_cpucapacity.is_some()),
            rt_mutexes: Vec::new(),
            rto_mask: CpuSet::empty(),
            rto_count: 0,
            rto_cpu: -1,
            rto_loop: 0,
            rto_loop_next: 0,
            distribute_cursor: 0,
            sd_state,
            sgc_imbalance: Vec::new(),
            rd_overloaded: false,
            nohz,
            rng_state: cfg.seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
            lb_detached: Vec::with_capacity(SCHED_NR_MIGRATE),
            base_slice: cfg.profile.base_slice_for(nr_cpus),
            profile: cfg.profile,
            features: cfg.features,
            tasks: Vec::new(),
            rqs,
            tick_ns,
            preempt: cfg.preempt,
            trace: cfg.trace,
            events: Vec::new(),
            ipis: Vec::new(),
            timer_requests: Vec::new(),
            smt_active: topo.has_smt(),
            topo,
            domains,
            llc_shared,
            now: 0,
            exec_cpu: 0,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.rqs.len()
    }

    pub fn feat(&self, f: Feature) -> bool {
        self.features.is_set(f)
    }

    /// Record an event in the context of the executing CPU. `_rq` names the
    /// runqueue the code is working on (events are always stamped with the
    /// CPU that executes, as ftrace does).
    pub(crate) fn emit(&mut self, _rq: usize, kind: EventKind) {
        if self.trace {
            let cpu = self.exec_cpu;
            let ctx_pid = self.rqs[cpu].curr.map(|t| self.tasks[t as usize].pid).unwrap_or(0);
            self.events.push(Event { ts: self.now, cpu: cpu as u32, ctx_pid, flags: *b"d..2.", kind });
        }
    }

    /// Set the time and executing CPU for the kernel code about to run.
    pub(crate) fn enter(&mut self, now: u64, exec_cpu: usize) {
        debug_assert!(now >= self.now, "time went backwards: {} < {}", now, self.now);
        self.now = now;
        self.jiffies = now / self.tick_ns;
        self.exec_cpu = exec_cpu;
    }

    pub fn now(&self) -> u64 {
        self.now
    }

    /// `update_rq_clock()`. The rq clock reads as if the machine had been up
    /// for [`RQ_CLOCK_BASE`] when the run starts, so a task that never ran is
    /// not "cache hot" (`exec_start == 0`) and PELT never sees time zero.
    pub(crate) fn update_rq_clock(&mut self, cpu: usize) {
        self.rqs[cpu].clock = self.now + RQ_CLOCK_BASE;
    }

    /// Create a task in TASK_NEW (`sched_fork()` + `__sched_setscheduler()`).
    pub fn add_task(&mut self, p: TaskParams) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let (static_prio, normal_prio, weight) = match p.policy {
            Policy::Fifo | Policy::Rr => (DEFAULT_PRIO, MAX_RT_PRIO - 1 - p.rt_priority as i32, NICE_0_WEIGHT),
            Policy::Idle => (DEFAULT_PRIO + p.nice, DEFAULT_PRIO + p.nice, WEIGHT_IDLEPRIO),
            Policy::Normal | Policy::Batch => {
                (DEFAULT_PRIO + p.nice, DEFAULT_PRIO + p.nice, SCHED_PRIO_TO_WEIGHT[(p.nice + 20) as usize])
            }
        };
        let slice = p.slice_ns.unwrap_or(self.base_slice);
        self.tasks.push(Task {
            pid: p.pid,
            policy: p.policy,
            static_prio,
            normal_prio,
            prio: normal_prio,
            state: TaskState::New,
            on_rq: OnRq::No,
            on_cpu: false,
            cpu: p.cpu,
            cpus_mask: p.cpus_mask,
            wake_cpu: p.cpu,
            recent_used_cpu: p.cpu,
            wakee: WakeeStats::default(),
            sched_remote_wakeup: false,
            sched_remote_delayed: false,
            se: SchedEntity {
                load: LoadWeight::new(weight),
                on_rq: false,
                sched_delayed: false,
                rel_deadline: false,
                custom_slice: p.slice_ns.is_some(),
                vruntime: 0,
                deadline: 0,
                vlag: 0,
                vprot: 0,
                slice,
                exec_start: 0,
                sum_exec_runtime: 0,
                prev_sum_exec_runtime: 0,
                avg: Default::default(),
            },
            nvcsw: 0,
            nivcsw: 0,
            fixed_start: p.fixed_start,
            lb_wakelist: false,
            rt_priority: p.rt_priority,
            rt_time_slice: 0,
            on_rt_rq: false,
            pi_blocked_on: None,
            pi_locks_held: Vec::new(),
        });
        self.rt_init_slice(id);
        // sched_fork() → init_entity_runnable_average().
        pelt::init_entity_runnable_average(&mut self.tasks[id as usize].se.avg, weight as u64);
        id
    }

    pub fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].curr
    }

    /// Whether the CPU must enter `schedule()` at its next preemption point.
    /// `lazy_ok` says whether the point honours TIF_NEED_RESCHED_LAZY (every
    /// return to user space does).
    pub fn need_resched(&self, cpu: usize, lazy_ok: bool) -> bool {
        let rq = &self.rqs[cpu];
        rq.need_resched || (lazy_ok && rq.need_resched_lazy)
    }

    /// `idle_cpu()`: the idle task runs, nothing (not even a delayed task) is
    /// queued, and no wakeup is pending on the wakelist.
    pub fn idle_cpu(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.curr.is_none() && rq.nr_running == 0 && !rq.ttwu_pending
    }

    /// `available_idle_cpu()`: `idle_cpu()` on a CPU that is not a preempted vCPU
    /// (the model's vCPUs are never preempted).
    pub fn available_idle_cpu(&self, cpu: usize) -> bool {
        self.idle_cpu(cpu)
    }

    /// `sched_idle_cpu()`: only SCHED_IDLE tasks are queued.
    pub fn sched_idle_cpu(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.nr_running > 0 && rq.nr_running == rq.cfs.idle_h_nr_running
    }

    /// `resched_curr()` / `resched_curr_lazy()`. Lazy requests only exist under
    /// `preempt=lazy` for fair tasks; they set a flag and send no IPI.
    pub(crate) fn resched_curr_maybe_lazy(&mut self, cpu: usize, lazy: bool) {
        let curr_fair = self.rqs[cpu].curr.map(|t| self.tasks[t as usize].policy.is_fair()).unwrap_or(false);
        let lazy = lazy && self.preempt == PreemptModel::Lazy && curr_fair;
        let rq = &mut self.rqs[cpu];
        if rq.need_resched {
            return;
        }
        if lazy {
            if !rq.need_resched_lazy {
                rq.need_resched_lazy = true;
                self.emit(cpu, EventKind::Resched { cpu: cpu as u32, ipi: false });
            }
            return;
        }
        rq.need_resched = true;
        if cpu == self.exec_cpu {
            self.emit(cpu, EventKind::Resched { cpu: cpu as u32, ipi: false });
            return;
        }
        self.send_ipi(cpu, IpiKind::Resched);
    }

    /// `smp_send_reschedule()` / `send_call_function_single_ipi()`: an idle
    /// target that polls is woken by the flag alone (`set_nr_if_polling()`).
    pub(crate) fn send_ipi(&mut self, cpu: usize, kind: IpiKind) {
        let idle = self.rqs[cpu].curr.is_none();
        let polled = idle && self.topo.costs.idle_polling;
        if polled {
            self.emit(cpu, EventKind::SchedWakeIdleWithoutIpi { cpu: cpu as u32 });
        } else if kind == IpiKind::Resched {
            self.emit(cpu, EventKind::Resched { cpu: cpu as u32, ipi: true });
        }
        self.ipis.push(IpiRequest { cpu, kind, idle, polled });
    }

    pub(crate) fn resched_curr(&mut self, cpu: usize) {
        self.resched_curr_maybe_lazy(cpu, false);
    }

    /// `enqueue_task()`.
    pub(crate) fn enqueue_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if flags & qflags::ENQUEUE_NOCLOCK == 0 {
            self.update_rq_clock(cpu);
        }
        if self.task_is_rt(t) {
            self.enqueue_task_rt(cpu, t, flags);
        } else {
            self.enqueue_task_fair(cpu, t, flags);
            self.fair_server_update(cpu);
        }
    }

    /// `dequeue_task()`: false when the class kept the task queued (delayed).
    pub(crate) fn dequeue_task(&mut self, cpu: usize, t: TaskId, flags: u32) -> bool {
        if flags & qflags::DEQUEUE_NOCLOCK == 0 {
            self.update_rq_clock(cpu);
        }
        if self.task_is_rt(t) {
            self.dequeue_task_rt(cpu, t);
            true
        } else {
            self.dequeue_task_fair(cpu, t, flags)
        }
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
    fn block_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        if self.dequeue_task(cpu, t, qflags::DEQUEUE_SLEEP | flags) {
            self.__block_task(cpu, t);
        }
    }

    /// `wakeup_preempt()`: let the running class decide whether `p` preempts.
    pub(crate) fn wakeup_preempt(&mut self, cpu: usize, p: TaskId, wake_flags: u32) {
        match self.rqs[cpu].curr {
            // The idle class's check always reschedules.
            None => self.resched_curr(cpu),
            Some(c) => match (self.task_is_rt(p), self.task_is_rt(c)) {
                (true, true) => self.wakeup_preempt_rt(cpu, p),
                (false, false) => self.check_preempt_wakeup_fair(cpu, p, wake_flags),
                // A higher class always preempts; a lower one never does.
                (true, false) => self.resched_curr(cpu),
                (false, true) => {}
            },
        }
    }

    /// `deactivate_task()`: off the runqueue as a migration (not a sleep).
    pub(crate) fn deactivate_task(&mut self, cpu: usize, t: TaskId, flags: u32) {
        self.tasks[t as usize].on_rq = OnRq::Migrating;
        self.dequeue_task(cpu, t, flags);
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

    /// `sched_setaffinity()` → `__set_cpus_allowed_ptr()`: a queued task that
    /// is not running and sits outside the new mask is moved at once
    /// (`move_queued_task()`); a sleeping one simply wakes up inside it.
    /// Simplified: the running case (a stopper migration) is not modeled;
    /// a running task leaves at its next wakeup.
    pub fn set_cpus_allowed_ptr(&mut self, t: TaskId, mask: CpuSet, now: u64, exec_cpu: usize) {
        self.enter(now, exec_cpu);
        assert!(!mask.is_empty(), "empty affinity mask");
        self.tasks[t as usize].cpus_mask = mask;
        let cpu = self.tasks[t as usize].cpu;
        if self.rqs[cpu].switching_out == Some(t) {
            // The migration stopper runs after the switch away from it.
            self.finish_task_switch(cpu);
        }
        let task = &self.tasks[t as usize];
        if task.on_rq == OnRq::Queued && !task.on_cpu && !mask.contains(task.cpu) {
            let dest = mask.first().expect("non-empty mask");
            self.move_queued_task(t, dest);
        }
    }

    /// `set_current_state()`: the running task on `cpu` is about to sleep.
    pub fn set_current_state(&mut self, cpu: usize, state: TaskState) {
        let t = self.rqs[cpu].curr.expect("set_current_state on an idle CPU");
        self.tasks[t as usize].state = state;
    }

    /// `do_sched_yield()` minus the `schedule()` the caller performs next.
    pub fn sched_yield(&mut self, cpu: usize, now: u64) {
        self.enter(now, cpu);
        self.update_rq_clock(cpu);
        match self.rqs[cpu].curr {
            // yield_task_rt(): to the tail of its priority list.
            Some(c) if self.task_is_rt(c) => {
                let prio = self.tasks[c as usize].prio as usize;
                let q = &mut self.rqs[cpu].rt.queue[prio];
                if let Some(i) = q.iter().position(|&x| x == c) {
                    q.remove(i);
                    q.push_back(c);
                }
            }
            _ => self.yield_task_fair(cpu),
        }
    }

    /// `pick_next_task()`: fair, else idle.
    /// `__pick_next_task()`: `balance_rt()` when an RT prev leaves (the
    /// `prev_balance()` pull), then the classes in order rt > fair > idle.
    /// `put_prev`/`set_next` run only when the task changes, as in
    /// `put_prev_set_next_task()`.
    fn pick_next_task(&mut self, cpu: usize, prev: Option<TaskId>) -> Option<TaskId> {
        let prev_rt = prev.filter(|&p| self.task_is_rt(p));
        if let Some(p) = prev_rt {
            self.balance_rt(cpu, p);
        }
        self.fair_server_stop_if_idle(cpu);
        if self.rt_runnable(cpu) && !self.fair_server_serving(cpu) {
            let next = self.pick_task_rt(cpu).expect("rt_nr_running > 0");
            if prev != Some(next) {
                if let Some(p) = prev {
                    self.put_prev_task(cpu, p);
                }
                self.set_next_task_rt(cpu, next, true);
            }
            self.rqs[cpu].curr = Some(next);
            self.fair_server_update(cpu);
            return Some(next);
        }
        let fair_prev = if let Some(p) = prev_rt {
            // Leaving the RT class: put it back before the fair pick.
            self.put_prev_task_rt(cpu, p);
            None
        } else {
            prev
        };
        let next = self.pick_next_task_fair(cpu, fair_prev);
        if next.is_none() {
            if let Some(p) = fair_prev {
                self.put_prev_task_fair(cpu, p);
            }
        }
        next
    }

    /// `put_prev_task()` of `p`'s class.
    pub(crate) fn put_prev_task(&mut self, cpu: usize, p: TaskId) {
        if self.task_is_rt(p) {
            self.put_prev_task_rt(cpu, p);
        } else {
            self.put_prev_task_fair(cpu, p);
        }
    }

    /// `rt_mutex_setprio()`: change `p`'s effective priority to the best of
    /// its normal priority and `pi_prio` (a PI waiter's), moving it between
    /// the fair and RT classes when the boost crosses MAX_RT_PRIO.
    pub(crate) fn rt_mutex_setprio(&mut self, p: TaskId, pi_prio: Option<i32>) {
        let normal = self.tasks[p as usize].normal_prio;
        let prio = pi_prio.map_or(normal, |pp| pp.min(normal));
        let oldprio = self.tasks[p as usize].prio;
        if prio == oldprio {
            return;
        }
        let cpu = self.tasks[p as usize].cpu;
        self.update_rq_clock(cpu);
        let pid = self.tasks[p as usize].pid;
        self.emit(cpu, EventKind::SchedPiSetprio { pid, oldprio, newprio: prio });
        let was_rt = oldprio < MAX_RT_PRIO;
        let will_rt = prio < MAX_RT_PRIO;
        if was_rt != will_rt && !was_rt && self.tasks[p as usize].se.sched_delayed {
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
        self.tasks[p as usize].prio = prio;
        if will_rt && !was_rt {
            self.rt_init_slice(p);
        }
        queue_flags = qflags::ENQUEUE_RESTORE | qflags::ENQUEUE_NOCLOCK;
        if will_rt && oldprio < prio {
            // A deboosted RT task goes to the head of its new level.
            queue_flags |= qflags::ENQUEUE_HEAD;
        }
        if queued {
            self.tasks[p as usize].on_rq = OnRq::Queued;
            self.enqueue_task(cpu, p, queue_flags);
        }
        if running {
            if will_rt {
                self.set_next_task_rt(cpu, p, false);
            } else {
                self.set_next_task_fair_running(cpu, p);
            }
        }
        // check_class_changed()
        if was_rt && !will_rt {
            self.switched_from_rt(cpu, p);
        } else if !was_rt && will_rt {
            self.switched_to_rt(cpu, p);
        } else if will_rt {
            self.prio_changed_rt(cpu, p, oldprio);
        } else if queued && self.rqs[cpu].curr.is_some() && !running {
            self.wakeup_preempt(cpu, p, 0);
        }
        self.balance_callbacks(cpu);
    }

    /// `__schedule()`. `preempt` is SM_PREEMPT (an involuntary switch: the
    /// task stays runnable whatever its state); otherwise a task whose state
    /// is not TASK_RUNNING is blocked first. Queued stopper work (active
    /// balance) runs first, as the stop class outranks everything: prev is
    /// switched out to `migration/N`, the stopper's work runs, then the next
    /// task is picked.
    pub fn schedule(&mut self, cpu: usize, now: u64, preempt: bool) -> Switch {
        self.enter(now, cpu);
        self.update_rq_clock(cpu);
        let prev = self.rqs[cpu].curr;
        let prev_state = prev.map(|t| self.tasks[t as usize].state);
        if let (Some(p), Some(state)) = (prev, prev_state) {
            if !preempt && state != TaskState::Running {
                // try_to_block_task(): TASK_DEAD is a special state, never delayed.
                let special = if state == TaskState::Dead { qflags::DEQUEUE_SPECIAL } else { 0 };
                self.block_task(cpu, p, qflags::DEQUEUE_NOCLOCK | special);
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
        if self.rqs[cpu].stop_work_pending {
            self.rqs[cpu].stop_work_pending = false;
            if let Some(p) = prev {
                self.put_prev_task_fair(cpu, p);
                self.tasks[p as usize].on_cpu = false;
                self.account_switch_out(p, preempt, prev_state);
            }
            self.rqs[cpu].curr = None;
            let stopper = stopper_pid(cpu);
            self.trace_switch(cpu, prev_pid_prio(self, prev), trace_state, (stopper, 0));
            self.active_load_balance_cpu_stop(cpu);
            from = None;
            from_state = PrevState::Sleeping;
            // The stopper is the task switched away from next.
            self.rqs[cpu].stopper_ran = true;
        }
        let next = self.pick_next_task(cpu, from);
        let rq = &mut self.rqs[cpu];
        rq.need_resched = false;
        rq.need_resched_lazy = false;
        let stopper_ran = std::mem::take(&mut rq.stopper_ran);
        if next != from || stopper_ran {
            let rq = &mut self.rqs[cpu];
            rq.nr_switches += 1;
            rq.curr = next;
            if next.is_none() {
                rq.idle_stamp = Some(rq.clock);
                // set_next_task_idle() → update_idle_core(); the tick stops (NOHZ).
                self.__update_idle_core(cpu);
                self.nohz_balance_enter_idle(cpu);
            }
            if let Some(p) = from {
                // prev stays on_cpu until the switch completes
                // (finish_task_switch()); a second switch completes the first.
                self.finish_task_switch(cpu);
                self.rqs[cpu].switching_out = Some(p);
                self.account_switch_out(p, preempt, prev_state);
            }
            if let Some(n) = next {
                self.tasks[n as usize].on_cpu = true;
            }
            let from_pid = if stopper_ran { (stopper_pid(cpu), 0) } else { prev_pid_prio(self, from) };
            self.trace_switch(cpu, from_pid, from_state, prev_pid_prio(self, next));
        }
        // finish_task_switch() / the no-switch path: run queued balance callbacks.
        self.balance_callbacks(cpu);
        Switch { prev, next }
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
            self.events.push(Event {
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
            self.tasks[p as usize].on_cpu = false;
        }
    }

    /// `sched_tick()` on `cpu`: promote a lazy reschedule, the class tick,
    /// then `sched_balance_trigger()`; the SCHED_SOFTIRQ it raises runs at
    /// the end of the tick interrupt.
    pub fn sched_tick(&mut self, cpu: usize, now: u64) {
        self.enter(now, cpu);
        self.update_rq_clock(cpu);
        if self.rqs[cpu].need_resched_lazy {
            self.resched_curr(cpu);
        }
        match self.rqs[cpu].curr {
            Some(c) if self.task_is_rt(c) => self.task_tick_rt(cpu, c),
            Some(_) => self.task_tick_fair(cpu),
            None => {}
        }
        self.rqs[cpu].idle_balance = self.idle_cpu(cpu);
        if self.sched_balance_trigger(cpu) {
            self.sched_balance_softirq(cpu);
        }
    }

    /// Bring curr's accounting up to `now` (what any `update_curr()` caller
    /// would do) without other side effects; used before reading runtimes.
    pub fn sync_curr(&mut self, cpu: usize, now: u64) {
        self.enter(now, cpu);
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
    }
}
