//! The model's `kernel/sched/core.c`: the [`Kernel`] state, task creation,
//! `try_to_wake_up()`, `__schedule()`, `sched_tick()`, `resched_curr()`.
//!
//! Every entry point takes the simulated time and the CPU whose context runs
//! the code (the waker's CPU for a wakeup, the ticking CPU for a tick), like
//! the kernel's `smp_processor_id()`. The simulator owns time and decides
//! when interrupts arrive; the model only writes what it asks for (trace
//! events, IPIs, timers) into the [`Outbox`] the caller hands the entry point.
//!
//! Preemption models: workload threads run in user space, where `none`,
//! `voluntary` and `full` behave alike (a reschedule takes effect on the next
//! return to user, i.e. when the IPI or tick interrupt returns); they differ
//! only for kernel code, which the model does not run. `lazy` differs: fair
//! reschedules set TIF_NEED_RESCHED_LAZY without an IPI and wait for the next
//! tick or kernel exit on that CPU.
//!
//! Laid out in pieces: this file holds the [`Kernel`] state and its
//! configuration, `update_rq_clock()`, task creation (`sched_fork()` +
//! `__sched_setscheduler()`), the idle-CPU predicates (`idle_cpu()`,
//! `available_idle_cpu()`, `sched_idle_cpu()`) and `resched_curr()` with the
//! IPIs it sends. The runqueue operations that dispatch to a class
//! (`enqueue_task()`, `dequeue_task()`, `activate_task()`,
//! `deactivate_task()`, `block_task()`, `wakeup_preempt()`,
//! `move_queued_task()`, `__set_cpus_allowed_ptr()`, `rt_mutex_setprio()`)
//! are in `queue`; `__schedule()` with the class pick and the context switch
//! (`pick_next_task()`, `put_prev_task()`, `finish_task_switch()`), its
//! callers' preludes (`set_current_state()`, `do_sched_yield()`) and
//! `sched_tick()` in `schedule`; the wakeup half (`try_to_wake_up()` and the
//! wakelist) in `ttwu`. Every class operation goes through the class table
//! (`crate::sched::class`): stop, the fair server (deadline), RT, fair and
//! idle.
//!
//! Follows 6.12.x. Simplified: one root domain and no cgroups; the stopper
//! and the fair server are not tasks (see [`crate::stop_task`] and
//! [`crate::deadline`]); no deadline tasks.

use crate::deadline::TimerRequest;
use crate::features::{Feature, Features};
use crate::pelt;
use crate::profile::Profile;
use crate::sched::class::SchedClass;
use crate::sched::*;
use crate::topology::{
    build_sched_domains_partitioned, sched_domain_spans, Partition, SchedDomains, SchedTopologyOptions,
};
use schedlab_topology::{CpuSet, PreemptModel, Topology};
use schedlab_trace::{Event, EventKind, Pid};

mod queue;
mod schedule;
mod stats;
mod ttwu;

pub use schedule::Switch;
pub use stats::{KernelStats, PathStat, WakeKind};

/// Static configuration of a kernel instance.
#[derive(Clone, Debug)]
pub struct KernelConfig {
    pub profile: Profile,
    pub features: Features,
    /// The machine: CPUs, capacities, ITMT priorities, HZ, idle polling.
    pub topology: Topology,
    /// The preemption model in effect (the topology's, unless the profile lacks it).
    pub preempt: PreemptModel,
    /// Emit trace events into each entry point's [`Outbox`].
    pub trace: bool,
    /// Seed of the model's own random choices (NI_RANDOM).
    pub seed: u64,
    /// cpuset partitions (`cpuset.cpus.partition`): each a root domain of
    /// its own, an isolated one without sched domains. Empty: the whole
    /// machine is one root domain.
    pub partitions: Vec<Partition>,
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
    /// SCHED_DEADLINE's reservation (admitted by the caller: [`Kernel::dl_admit`]).
    pub dl: Option<crate::deadline::DlParams>,
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
    /// The sending CPU (the distance to `cpu` sets the delivery cost).
    pub from: usize,
    pub cpu: usize,
    pub kind: IpiKind,
    /// The target is idle: it pays its idle-exit latency.
    pub idle: bool,
    /// No IPI is needed: the idle target polls its flags (`set_nr_if_polling()`).
    pub polled: bool,
}

/// What one kernel entry point asks of the hardware, in the order it asked:
/// the trace events it emitted, the interrupts to deliver and the timers to
/// arm. The caller hands one to every entry point (`schedule()`,
/// `sched_tick()`, `try_to_wake_up()`, the IPI and timer handlers, ...),
/// which appends to it; the kernel keeps none of it afterwards, so nothing
/// can be left undrained. A reschedule of the executing CPU is the
/// `need_resched` flag ([`Kernel::need_resched`]); of another CPU, an IPI.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outbox {
    /// Trace events (only when [`KernelConfig::trace`] is set).
    pub events: Vec<Event>,
    /// Interrupts to other CPUs (or polled flags of idle ones).
    pub ipis: Vec<IpiRequest>,
    /// Timers to fire (the fair server's deferral timer).
    pub timers: Vec<TimerRequest>,
    /// CPU time the entry's kernel paths took, per CPU that ran them
    /// (`[costs.kernel]`): the simulator takes it from whatever that CPU
    /// runs next.
    pub cpu_ns: Vec<(u32, u64)>,
    /// Wakeups whose CPU selection has run and whose queueing waits for the
    /// waker to spend the selection's CPU time ([`WakeRequest`]).
    pub wakes: Vec<WakeRequest>,
}

/// The second half of a remote `try_to_wake_up()`: `select_task_rq()` ran
/// at the entry's time and chose `cpu`; the task is TASK_WAKING until the
/// waker, `after_ns` later (the selection's `[costs.kernel]` time), queues it
/// with [`Kernel::ttwu_queue_selected`]. Until then the chosen CPU still
/// looks idle to every other CPU's `select_idle_sibling()`, as in the kernel,
/// where `ttwu_pending` or `nr_running` change only once the scan is over:
/// two wakers scanning at once can choose the same idle CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeRequest {
    pub task: TaskId,
    /// The CPU `select_task_rq()` chose.
    pub cpu: usize,
    pub wake_flags: u32,
    /// The waker's CPU, which runs the queueing.
    pub from: usize,
    pub after_ns: u64,
    /// What the wakeup charged its waker before the queueing (the
    /// selection, and a delayed task's dequeue): the model's schedstats
    /// count it with the rest.
    pub charged_ns: u64,
}

impl Outbox {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.ipis.is_empty()
            && self.timers.is_empty()
            && self.cpu_ns.is_empty()
            && self.wakes.is_empty()
    }

    /// Forget everything, keeping the buffers.
    pub fn clear(&mut self) {
        self.events.clear();
        self.ipis.clear();
        self.timers.clear();
        self.cpu_ns.clear();
        self.wakes.clear();
    }
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

/// The whole scheduler state of a machine.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub(crate) profile: Profile,
    pub(crate) features: Features,
    pub(crate) tasks: Vec<Task>,
    pub(crate) rqs: crate::sched::Runqueues,
    /// Task groups (FAIR_GROUP_SCHED); 0 is the root group, whose cfs_rqs are `rqs[cpu].cfs`.
    pub(crate) task_groups: Vec<crate::fair::group::TaskGroup>,
    /// The cfs_rqs of the other groups, `CfsRqId` nr_cpus and up.
    pub(crate) group_cfs: Vec<crate::sched::CfsRq>,
    /// Every entity's timeline node (`se->run_node`), shared by all cfs_rqs.
    pub(crate) run_nodes: crate::fair::timeline::RunNodes,
    /// `sysctl_sched_base_slice` for this machine.
    pub(crate) base_slice: u64,
    pub(crate) tick_ns: u64,
    pub(crate) preempt: PreemptModel,
    pub(crate) trace: bool,
    /// What entries changed, for [`Kernel::check_touched`] (off by default).
    pub(crate) touched: crate::invariants::Touched,
    /// The caller's outbox while an entry point runs (swapped in by
    /// `entry()`, swapped back out before it returns); empty otherwise.
    pub(crate) out: Outbox,
    pub(crate) topo: Topology,
    /// The sched domain hierarchy built from the topology.
    pub(crate) domains: SchedDomains,
    /// `sd_llc_shared`, indexed by CPU id of the LLC's `sd_llc_id`.
    pub(crate) llc_shared: Vec<LlcShared>,
    /// `sched_smt_active()`.
    pub(crate) smt_active: bool,
    /// PI mutexes, indexed by the workload's object id.
    pub(crate) rt_mutexes: Vec<crate::rtmutex::RtMutex>,
    /// The root domains (`struct root_domain`): one per cpuset partition,
    /// the last for the CPUs of no domain (`def_root_domain`); a runqueue
    /// names its own in `Rq::rd`.
    pub(crate) rds: Vec<RootDomain>,
    /// Cursor of `cpumask_any_distribute()`.
    pub(crate) distribute_cursor: usize,
    /// Per CPU, per domain level: the mutable half of `struct sched_domain`.
    pub(crate) sd_state: Vec<Vec<crate::fair::nohz::SdState>>,
    /// `struct sched_group_capacity` of every sched group, indexed by its id.
    pub(crate) sgc: Vec<crate::sched::SchedGroupCapacity>,
    /// The balancer's per-CPU sums by group span (not in the kernel: a cache).
    pub(crate) group_sums: crate::fair::lb::GroupSums,
    /// The global `nohz` state.
    pub(crate) nohz: crate::fair::nohz::Nohz,
    pub(crate) rng_state: u64,
    /// `env->tasks` of the balance in progress (reused, never freed).
    pub(crate) lb_detached: Vec<TaskId>,
    pub(crate) now: u64,
    pub(crate) exec_cpu: usize,
    /// Per CPU, where its charged kernel time (`[costs.kernel]`) has taken
    /// it: the instant it reaches the next thing it does at `now`, if later.
    /// Only the kernel's own charges count (not the engine's context switch,
    /// idle exits or interrupts), which is all a runqueue lock's timing reads.
    pub(crate) busy_until: Vec<u64>,
    /// Time CPUs spent spinning on a runqueue lock another CPU held
    /// ([`Kernel::rq_lock`]), in all.
    pub(crate) rq_lock_wait_ns: u64,
    /// `jiffies` at `now`, kept by `enter()`: the balancer reads it per
    /// domain, and computing it is a 64-bit division.
    pub(crate) jiffies: u64,
    /// `HZ` and `max_load_balance_interval`, fixed once `tick_ns` is (divisions too).
    pub(crate) hz: u64,
    pub(crate) max_lb_interval: u64,
    /// `cpu_smt_mask()` of each CPU. `Topology::smt_mask()` scans every CPU
    /// to build it, and the idle-core and balance paths ask for it per CPU.
    pub(crate) smt_masks: Vec<CpuSet>,
    /// `smt_masks[cpu].word_span()`, for loops over the siblings.
    pub(crate) smt_words: Vec<(usize, usize)>,
    /// The `sched_asym_cpucapacity` static key: some CPU has an
    /// `sd_asym_cpucapacity` domain. Fixed once the domains are built; the
    /// wakeup path tests it several times per wakeup.
    pub(crate) asym_cpucap_active: bool,
    /// The `sched_uclamp_used` static key: some task has set a clamp
    /// (`sched_setattr()` with SCHED_FLAG_UTIL_CLAMP_*). Until then
    /// `util_fits_cpu()` ignores clamps, as the kernel does.
    pub(crate) uclamp_used: bool,
    /// `available_idle_cpu()` calls since the wakeup path last read it:
    /// what `select_idle_sibling()` scanned, and pays for.
    pub(crate) idle_probes: std::cell::Cell<u32>,
    /// Everything [`Kernel::charge`] has charged, all CPUs: the model's
    /// schedstats read what a path cost as a difference of it.
    pub(crate) charged_ns: u64,
    /// `charged_ns` when the wakeup in progress began.
    pub(crate) wake_start_ns: u64,
    pub(crate) stats: KernelStats,
    /// Some task reclaims (SCHED_FLAG_RECLAIM): the deadline class arms the
    /// inactive timers GRUB reads (`deadline::grub`).
    pub(crate) dl_grub: bool,
    /// cpufreq policies and each CPU's frequency factor (`crate::cpufreq`).
    pub(crate) cpufreq: crate::cpufreq::Cpufreq,
    /// The energy models, one per topology `[[perf_domain]]` (`None` where
    /// registration fails, e.g. no power coefficient).
    pub(crate) em: Vec<Option<crate::energy_model::EmPerfDomain>>,
    /// The `sched_energy_present` static key (`sched_energy_enabled()`):
    /// some root domain has performance domains.
    pub(crate) sched_energy_present: bool,
}

impl Kernel {
    pub fn new(cfg: KernelConfig) -> Self {
        // What intel_pstate sets up from HWP values, by the profile's
        // version (a topology without them is unchanged).
        let topo = crate::topology::intel_pstate::intel_pstate_init(cfg.topology, &cfg.profile);
        let nr_cpus = topo.nr_cpus();
        let doms = sched_domain_spans(&topo, &cfg.partitions);
        let domains = build_sched_domains_partitioned(&topo, &SchedTopologyOptions::default(), &doms);
        let mut rds: Vec<RootDomain> = doms.iter().map(|&span| RootDomain::new(span)).collect();
        let mut def_root_domain = RootDomain::new(CpuSet::empty());
        let mut rqs: Vec<Rq> = (0..nr_cpus).map(Rq::new).collect();
        for (cpu, rq) in rqs.iter_mut().enumerate() {
            rq.rd = match doms.iter().position(|d| d.contains(cpu)) {
                Some(i) => i,
                None => {
                    def_root_domain.span.insert(cpu);
                    doms.len()
                }
            };
            rq.cpu_capacity = topo.cpus[cpu].capacity as u64;
            if !cfg.profile.fair_server {
                rq.fair_server.dl_runtime = 0;
            }
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
                    .map(|d| crate::fair::nohz::SdState::new(d.newidle_call, d.newidle_success, d.newidle_ratio))
                    .collect()
            })
            .collect();
        // (Before def_root_domain joins: its CPUs have no sched domains.)
        let (em, sched_energy_present) = crate::topology::perf_domains::attach_perf_domains(&topo, &domains, &mut rds);
        rds.push(def_root_domain);
        let mut nohz = crate::fair::nohz::Nohz::default();
        for (cpu, rq) in rqs.iter_mut().enumerate() {
            // A CPU of no domain never joins the nohz idle mask (`on_null_domain()`).
            if domains.cpus[cpu].domains.is_empty() {
                continue;
            }
            rq.nohz_tick_stopped = true;
            rq.llc_nohz_idle = domains.cpus[cpu].sd_llc.is_some();
            nohz.idle_cpus_mask.insert(cpu);
            nohz.nr_cpus += 1;
        }
        let tick_ns = topo.tick_ns();
        let hz = 1_000_000_000 / tick_ns;
        let cpufreq = crate::cpufreq::Cpufreq::new(&topo, &em);
        let mut k = Kernel {
            jiffies: 0,
            hz,
            // HZ·nr_cpus/10 jiffies.
            max_lb_interval: (hz * nr_cpus as u64 / 10).max(1),
            smt_masks: (0..nr_cpus).map(|cpu| topo.smt_mask(cpu)).collect(),
            smt_words: (0..nr_cpus).map(|cpu| topo.smt_mask(cpu).word_span()).collect(),
            asym_cpucap_active: domains.cpus.iter().any(|c| c.sd_asym_cpucapacity.is_some()),
            uclamp_used: false,
            idle_probes: std::cell::Cell::new(0),
            charged_ns: 0,
            wake_start_ns: 0,
            stats: KernelStats::new(nr_cpus),
            rt_mutexes: Vec::new(),
            rds,
            distribute_cursor: 0,
            sd_state,
            sgc: crate::fair::capacity::init_sched_groups_capacity(&domains),
            group_sums: crate::fair::lb::GroupSums::new(&domains),
            nohz,
            rng_state: cfg.seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
            lb_detached: Vec::with_capacity(SCHED_NR_MIGRATE),
            base_slice: cfg.profile.base_slice_for(nr_cpus),
            profile: cfg.profile,
            features: cfg.features,
            tasks: Vec::new(),
            rqs: crate::sched::Runqueues::new(rqs, crate::fair::lb::GroupSums::read_on(&domains, sched_energy_present)),
            task_groups: vec![crate::fair::group::TaskGroup::root(nr_cpus)],
            group_cfs: Vec::new(),
            run_nodes: Default::default(),
            tick_ns,
            preempt: cfg.preempt,
            trace: cfg.trace,
            touched: Default::default(),
            out: Outbox::new(),
            smt_active: topo.has_smt(),
            topo,
            domains,
            llc_shared,
            now: 0,
            exec_cpu: 0,
            busy_until: vec![0; nr_cpus],
            rq_lock_wait_ns: 0,
            dl_grub: false,
            cpufreq,
            em,
            sched_energy_present,
        };
        k.init_dl_rq_bw();
        for cpu in 0..nr_cpus {
            for sd in 0..k.domains.cpus[cpu].domains.len() {
                k.set_balance_interval(cpu, sd, k.domains.cpus[cpu].domains[sd].balance_interval);
            }
        }
        k
    }

    pub fn nr_cpus(&self) -> usize {
        self.rqs.len()
    }

    /// Task `t` (`struct task_struct`), read-only.
    pub fn task(&self, t: TaskId) -> &Task {
        &self.tasks[t as usize]
    }

    /// Every task, indexed by [`TaskId`].
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// CPU `cpu`'s runqueue (`cpu_rq()`), read-only.
    pub fn rq(&self, cpu: usize) -> &Rq {
        &self.rqs[cpu]
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The machine the kernel runs on.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The sched domain hierarchy built from the topology.
    pub fn domains(&self) -> &SchedDomains {
        &self.domains
    }

    /// `sd_llc_shared` of the LLC with id `llc_id` (`sd_llc_id`).
    pub fn llc_shared(&self, llc_id: usize) -> &LlcShared {
        &self.llc_shared[llc_id]
    }

    /// The tick period, ns (`TICK_NSEC`).
    pub fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// `sysctl_sched_base_slice` for this machine, ns.
    pub fn base_slice(&self) -> u64 {
        self.base_slice
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
            let ctx_pid = if self.rqs[cpu].stopper_running {
                stopper_pid(cpu)
            } else {
                self.rqs[cpu].curr.map(|t| self.tasks[t as usize].pid).unwrap_or(0)
            };
            self.out.events.push(Event { ts: self.now, cpu: cpu as u32, ctx_pid, flags: *b"d..2.", kind });
        }
    }

    /// Run the body of an entry point: set the time and executing CPU, and
    /// let the code write what it asks of the hardware into `out`.
    pub(crate) fn entry<R>(
        &mut self,
        now: u64,
        exec_cpu: usize,
        out: &mut Outbox,
        body: impl FnOnce(&mut Self) -> R,
    ) -> R {
        debug_assert!(self.out.is_empty(), "the kernel wrote to its outbox outside an entry point");
        std::mem::swap(&mut self.out, out);
        self.enter(now, exec_cpu);
        self.touched.cpu(exec_cpu);
        let r = body(self);
        std::mem::swap(&mut self.out, out);
        r
    }

    /// Timers go out with the rest of the entry point's requests; arming
    /// one costs the executing CPU `[costs.kernel] hrtimer`.
    pub(crate) fn request_timer(&mut self, t: TimerRequest) {
        self.charge(self.topo.costs.kernel.hrtimer_ns);
        self.out.timers.push(t);
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
    /// `clock_task` is the rq clock (no IRQ or steal time accounting), and
    /// the PELT clock follows it as `update_rq_clock_pelt()` makes it
    /// ([`Kernel::update_rq_clock_pelt`]).
    pub(crate) fn update_rq_clock(&mut self, cpu: usize) {
        let clock = self.now + RQ_CLOCK_BASE;
        let delta = clock - self.rqs[cpu].clock.min(clock);
        self.rqs[cpu].clock = clock;
        self.update_rq_clock_pelt(cpu, delta);
    }

    /// `sched_fork()` (core.c, 6.12): create the child of `parent`, with
    /// pid `pid`, on the CPU the parent runs on. The child inherits the
    /// parent's policy, its *normal* priority (a PI boost is not inherited:
    /// `p->prio = current->normal_prio`), its nice, its RT priority, a custom
    /// slice and its CPU mask. Simplified: `sched_reset_on_fork` is not
    /// modeled (no scenario sets it), and the copy of the task itself costs
    /// nothing here; the caller charges the syscall. Placement is left to
    /// [`Kernel::wake_up_new_task`].
    pub fn sched_fork(&mut self, parent: TaskId, pid: Pid, cpu: usize) -> TaskId {
        let parent = &self.tasks[parent as usize];
        debug_assert!(parent.policy != Policy::Deadline, "a deadline task forked");
        let nice = if parent.policy.is_fair() { parent.static_prio - DEFAULT_PRIO } else { 0 };
        let params = TaskParams {
            pid,
            policy: parent.policy,
            nice,
            rt_priority: parent.rt_priority,
            slice_ns: parent.se.custom_slice.then_some(parent.se.slice),
            cpus_mask: parent.cpus_mask,
            cpu,
            fixed_start: false,
            // A deadline task cannot fork (`sched_fork()`: EAGAIN); the
            // scenario reader refuses it.
            dl: None,
        };
        let (tg, uclamp) = (parent.tg, (parent.uclamp_min, parent.uclamp_max));
        let child = self.add_task(params);
        // The clamps requested are copied with the task (`dup_task_struct()`;
        // `uclamp_fork()` resets them only under sched_reset_on_fork).
        (self.tasks[child as usize].uclamp_min, self.tasks[child as usize].uclamp_max) = uclamp;
        // The child starts in its parent's task group (`cgroup_fork()`, `sched_fork()` → `__set_task_cpu()`).
        self.tasks[child as usize].tg = tg;
        child
    }

    /// Create a task in TASK_NEW (`sched_fork()` + `__sched_setscheduler()`).
    pub fn add_task(&mut self, p: TaskParams) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let (static_prio, normal_prio, weight) = match p.policy {
            Policy::Deadline => (DEFAULT_PRIO, crate::deadline::MAX_DL_PRIO - 1, NICE_0_WEIGHT),
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
            throttled: false,
            dl: p.dl.map(crate::deadline::DlEntity::new).unwrap_or_default(),
            se: SchedEntity::new(weight, slice, p.slice_ns.is_some()),
            nvcsw: 0,
            nivcsw: 0,
            fixed_start: p.fixed_start,
            lb_wakelist: false,
            wake_kind: None,
            rt_priority: p.rt_priority,
            uclamp_min: None,
            uclamp_max: crate::pelt::SCHED_CAPACITY_SCALE as u32,
            rt_time_slice: 0,
            on_rt_rq: false,
            pi_blocked_on: None,
            pi_locks_held: Vec::new(),
            tg: 0,
            my_q: None,
        });
        self.rt_init_slice(id);
        if let Some(dl) = p.dl {
            // sched_dl_overflow()'s __dl_add(): the reservation is the root
            // domain's from sched_setattr() on.
            let bw = self.tasks[id as usize].dl.dl_bw;
            self.__dl_add(p.cpu, bw);
            if dl.reclaim {
                self.dl_grub_start();
            }
        }
        // sched_fork() → init_entity_runnable_average().
        pelt::init_entity_runnable_average(&mut self.tasks[id as usize].se.avg, weight as u64);
        id
    }

    /// The idle loop entered (or left) a state that keeps TIF_POLLING_NRFLAG
    /// set on `cpu`: do_idle()'s `__current_set_polling()` /
    /// `current_clr_polling()` around the state the cpuidle governor chose.
    /// Ignored on a busy CPU, whose flag is always clear.
    pub fn set_idle_polling(&mut self, cpu: usize, polling: bool) {
        // Written only when it changes (a mutable borrow is a write the
        // balancer's sums recount, [`crate::sched::Runqueues`]).
        let polling = polling && self.rqs[cpu].curr.is_none();
        if self.rqs[cpu].idle_polling != polling {
            self.rqs[cpu].idle_polling = polling;
        }
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
    /// queued, and no wakeup is pending on the wakelist. A CPU still in the
    /// newidle balance that preceded its idle ([`Rq::newidle_until`]) has
    /// the blocked task as `rq->curr` in the kernel: not idle.
    pub fn idle_cpu(&self, cpu: usize) -> bool {
        self.rqs[cpu].is_idle_at(self.now)
    }

    /// `available_idle_cpu()`: `idle_cpu()` on a CPU that is not a preempted vCPU
    /// (the model's vCPUs are never preempted).
    pub fn available_idle_cpu(&self, cpu: usize) -> bool {
        self.idle_probes.set(self.idle_probes.get().wrapping_add(1));
        self.idle_cpu(cpu)
    }

    /// Charge `ns` of CPU time to the CPU running this kernel path.
    pub(crate) fn charge(&mut self, ns: u64) {
        if ns == 0 {
            return;
        }
        self.charged_ns += ns;
        let cpu = self.exec_cpu as u32;
        match self.out.cpu_ns.last_mut() {
            Some((c, acc)) if *c == cpu => *acc += ns,
            _ => self.out.cpu_ns.push((cpu, ns)),
        }
        let busy = &mut self.busy_until[self.exec_cpu];
        *busy = (*busy).max(self.now) + ns;
    }

    /// Where the executing CPU's charged time has taken it.
    fn exec_reached(&self) -> u64 {
        self.busy_until[self.exec_cpu].max(self.now)
    }

    /// `rq_lock()` of `cpu`'s runqueue from the executing CPU (core.c 6.12:
    /// `raw_spin_rq_lock()` under `__task_rq_lock()`, `ttwu_queue()`,
    /// `sched_ttwu_pending()`). A remote one costs its cache lines' trip at
    /// that distance (`remote_rq`). The lock is held from the instant the
    /// CPU's charged time reaches it until [`Kernel::rq_unlock`]; a CPU that
    /// reaches it while another holds it spins, charged, until it is free:
    /// several wakers activating tasks on one runqueue queue up behind each
    /// other, which the wakelist (TTWU_QUEUE) avoids by leaving the
    /// activations to the target under one lock.
    ///
    /// Simplified: only the wakeup paths take the modeled lock (schedule(),
    /// the tick and the balancer charge their time without holding it);
    /// spinning is charged on the waiting CPU, but what it then does under
    /// the lock (the enqueue, the wakeup) still happens at `now`; a queued
    /// spinlock's fairness and handover cost are not modeled. With every
    /// `[costs.kernel]` value 0 nothing is ever held and nobody waits.
    pub(crate) fn rq_lock(&mut self, cpu: usize) {
        let wait = self.rqs[cpu].lock_free_at.saturating_sub(self.exec_reached());
        self.rq_lock_wait_ns += wait;
        self.charge(wait);
        if cpu != self.exec_cpu {
            let d = self.topo.distance(self.exec_cpu, cpu);
            let ns = self.topo.level_costs(d).remote_rq_ns;
            self.charge(ns);
        }
    }

    /// `rq_unlock()`: the lock is free once the executing CPU's charged time
    /// has passed what it did under it.
    pub(crate) fn rq_unlock(&mut self, cpu: usize) {
        let at = self.exec_reached();
        let rq = &mut self.rqs[cpu];
        rq.lock_free_at = rq.lock_free_at.max(at);
    }

    /// Time spent spinning on runqueue locks so far, all CPUs ([`Kernel::rq_lock`]).
    pub fn rq_lock_wait_ns(&self) -> u64 {
        self.rq_lock_wait_ns
    }

    /// `sched_idle_cpu()`: only SCHED_IDLE tasks are queued.
    pub fn sched_idle_cpu(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.nr_running > 0 && rq.nr_running == rq.cfs.idle_h_nr_running
    }

    /// `resched_curr()` / `resched_curr_lazy()`. Lazy requests only exist under
    /// `preempt=lazy` for fair tasks; they set a flag and send no IPI.
    pub(crate) fn resched_curr_maybe_lazy(&mut self, cpu: usize, lazy: bool) {
        let curr_fair = self.class_of_curr(cpu) == SchedClass::Fair;
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
    /// The sender's cost depends on how long a halted target has idled
    /// (`KernelCosts::ipi_send_after`).
    pub(crate) fn send_ipi(&mut self, cpu: usize, kind: IpiKind) {
        let idle = self.rqs[cpu].curr.is_none();
        let polled = idle && self.rqs[cpu].idle_polling;
        if polled {
            self.emit(cpu, EventKind::SchedWakeIdleWithoutIpi { cpu: cpu as u32 });
        } else if kind == IpiKind::Resched {
            self.emit(cpu, EventKind::Resched { cpu: cpu as u32, ipi: true });
        }
        if !polled {
            let idle_for = self.rqs[cpu].idle_since.filter(|_| idle).map(|t| self.now.saturating_sub(t));
            let cost = self.topo.costs.kernel.ipi_send_after(idle_for);
            self.charge(cost);
        }
        self.out.ipis.push(IpiRequest { from: self.exec_cpu, cpu, kind, idle, polled });
    }

    /// `resched_curr()`: the eager form, never lazy.
    pub(crate) fn resched_curr(&mut self, cpu: usize) {
        self.resched_curr_maybe_lazy(cpu, false);
    }
}
