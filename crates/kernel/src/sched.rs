//! The model's `kernel/sched/sched.h` and `struct task_struct`: task, entity
//! and runqueue state, weights, and the flag values the paths pass around.
//!
//! The class table, sched.h's `struct sched_class`, is the submodule
//! [`class`].
//!
//! Follows 6.12.x. Simplified: a task is in the deadline, RT or fair class
//! (the stopper and the fair server are not tasks), no
//! util_est; uclamp per task only (`uclamp_req`, no runqueue buckets: see
//! [`crate::fair::capacity`]). Task groups (FAIR_GROUP_SCHED) are in
//! [`crate::fair::group`]: a group's entity on a CPU is a [`Task`] slot whose
//! `my_q` names the group's cfs_rq there, so entity ids stay `TaskId`s.

pub mod class;
mod runqueues;

pub use runqueues::Runqueues;

use crate::fair::timeline::Timeline;
use crate::pelt::SchedAvg;
use schedlab_topology::CpuSet;
use schedlab_trace::Pid;
use std::collections::VecDeque;

/// Index of a task in [`crate::core::Kernel::tasks`] (also of a group's
/// sched_entity, see [`Task::my_q`]).
pub type TaskId = u32;

/// A `struct cfs_rq`: ids below the CPU count are the CPUs' root cfs_rqs
/// (`rq->cfs`), the rest index [`crate::core::Kernel::group_cfs`] from there.
pub type CfsRqId = usize;

/// `sched_prio_to_weight[]`: nice −20..19 → load weight (1024 at nice 0).
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];
/// `NICE_0_LOAD` in user-visible (scale_load_down) units.
pub const NICE_0_WEIGHT: u32 = 1024;
/// `WEIGHT_IDLEPRIO`: SCHED_IDLE tasks.
pub const WEIGHT_IDLEPRIO: u32 = 3;
/// `MAX_RT_PRIO`: prio values below this are RT.
pub const MAX_RT_PRIO: i32 = 100;
/// `DEFAULT_PRIO`: nice 0.
pub const DEFAULT_PRIO: i32 = 120;

/// `sched_prio_to_wmult[]`: ≈2^32/weight as the kernel tabulates it (its
/// rounding is neither floor nor nearest everywhere, so the values are kept).
pub const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644, 704093, 875809,
    1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765, 6557202, 8165337, 10153587, 12820798,
    15790321, 19976592, 24970740, 31350126, 39045157, 49367440, 61356676, 76695844, 95443717, 119304647, 148102320,
    186737708, 238609294, 286331153,
];

/// The inverse weight the kernel uses for `weight`: the table entry for nice
/// weights, `2^32 / weight` otherwise (`__update_inv_weight()`, e.g. WMULT_IDLEPRIO).
pub fn inv_weight(weight: u32) -> u32 {
    match SCHED_PRIO_TO_WEIGHT.iter().position(|&w| w == weight) {
        Some(i) => SCHED_PRIO_TO_WMULT[i],
        None => ((1u64 << 32) / weight.max(1) as u64).min(u32::MAX as u64) as u32,
    }
}

/// Scheduling policy as the kernel stores it in `p->policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    Normal,
    Batch,
    Idle,
    Fifo,
    Rr,
    /// SCHED_DEADLINE: the reservation is the task's [`crate::deadline::DlEntity`].
    Deadline,
}

impl Policy {
    /// `normal_policy()`: handled by the fair class and allowed to wakeup-preempt.
    pub fn is_normal(self) -> bool {
        self == Policy::Normal
    }
    pub fn is_fair(self) -> bool {
        matches!(self, Policy::Normal | Policy::Batch | Policy::Idle)
    }
}

/// `p->__state` (the subset the model uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    Running,
    Interruptible,
    Uninterruptible,
    /// Not yet woken by `wake_up_new_task()`.
    New,
    /// TASK_WAKING: a wakeup owns the task and is choosing its CPU.
    Waking,
    Dead,
}

/// `p->on_rq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnRq {
    No,
    /// TASK_ON_RQ_QUEUED (also while `sched_delayed`).
    Queued,
    /// TASK_ON_RQ_MIGRATING.
    Migrating,
}

/// `struct load_weight` in scale_load_down units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadWeight {
    pub weight: u32,
    pub inv_weight: u32,
}

impl LoadWeight {
    pub fn new(weight: u32) -> Self {
        LoadWeight { weight, inv_weight: inv_weight(weight) }
    }
}

/// `struct sched_entity` for a task.
///
/// vruntime/deadline are `i64` (the kernel's `u64` with wrap-safe compares);
/// a run would need ~10^8 simulated seconds to overflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedEntity {
    pub load: LoadWeight,
    pub on_rq: bool,
    pub sched_delayed: bool,
    pub rel_deadline: bool,
    pub custom_slice: bool,
    pub vruntime: i64,
    pub deadline: i64,
    /// Saved virtual lag while off the queue; while running, the slice
    /// protection stash (6.12 reuses the field the same way).
    pub vlag: i64,
    /// ≥6.17 protection end (`vprot`), used with `SliceProtection::MinQueuedSlice`.
    pub vprot: i64,
    pub slice: u64,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    /// PELT averages (`se->avg`).
    pub avg: SchedAvg,
    /// `se->runnable_weight` of a group entity: its cfs_rq's `h_nr_runnable`
    /// as of the last `se_update_runnable()` (unused for a task).
    pub runnable_weight: u32,
}

/// `wakee_flips` bookkeeping of a waker (`record_wakee()` / `wake_wide()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeStats {
    /// How often this task switched the task it wakes (halved each second).
    pub flips: u32,
    pub last_wakee: Option<TaskId>,
    /// `wakee_flip_decay_ts`, in ns.
    pub flip_decay_ts: u64,
}

/// `struct task_struct`, the scheduler-relevant part.
#[derive(Clone, Debug)]
pub struct Task {
    pub pid: Pid,
    pub policy: Policy,
    /// `static_prio` = 120 + nice.
    pub static_prio: i32,
    /// `normal_prio`: static_prio for fair, 99 − rt_priority for RT.
    pub normal_prio: i32,
    /// Effective `prio` (PI may boost it).
    pub prio: i32,
    pub state: TaskState,
    pub on_rq: OnRq,
    /// `p->on_cpu`: it is some CPU's `curr`.
    pub on_cpu: bool,
    /// `task_cpu(p)`.
    pub cpu: usize,
    pub cpus_mask: CpuSet,
    /// `p->wake_cpu`: where a wakeup starts looking (the waker's CPU under TTWU_QUEUE_DELAYED).
    pub wake_cpu: usize,
    /// `p->recent_used_cpu`, checked by `select_idle_sibling()`.
    pub recent_used_cpu: usize,
    /// As a waker: `wakee_flips`, `last_wakee`.
    pub wakee: WakeeStats,
    /// Queued on a wakelist as a migrated wakeup (`sched_remote_wakeup`).
    pub sched_remote_wakeup: bool,
    /// Queued on its own CPU's wakelist as a delayed task (TTWU_QUEUE_DELAYED).
    pub sched_remote_delayed: bool,
    /// `p->dl`: the deadline reservation and its state (zero unless SCHED_DEADLINE).
    pub dl: crate::deadline::DlEntity,
    /// `p->throttled`: on its cfs_rq's limbo list (task-based throttling):
    /// runnable (`on_rq`) but off the fair tree until the unthrottle.
    pub throttled: bool,
    pub se: SchedEntity,
    /// Voluntary/involuntary switch counts (`nvcsw`/`nivcsw`).
    pub nvcsw: u64,
    pub nivcsw: u64,
    /// Skip fork balancing for the first enqueue (scenario `start_cpu`).
    pub fixed_start: bool,
    /// On a wakelist as a load-balancer hand-off (LB_FIRST_MIGRATION patch).
    pub lb_wakelist: bool,
    /// The kind of the wakeup in progress when its start already knows it
    /// (a delayed task dequeued by the waker): counted at its queueing
    /// (the model's schedstats, `core::stats`).
    pub wake_kind: Option<crate::core::WakeKind>,
    /// RT priority as set by the user (1..99; 0 for fair policies).
    pub rt_priority: u32,
    /// `p->uclamp_req[UCLAMP_MIN]`: the utilisation floor asked for with
    /// `sched_setattr()` (SCHED_FLAG_UTIL_CLAMP_MIN), 0..=1024; `None` while
    /// not user-defined, when the kernel keeps the class default there (see
    /// `Kernel::uclamp_eff_value()`).
    pub uclamp_min: Option<u32>,
    /// `p->uclamp_req[UCLAMP_MAX].value` (SCHED_FLAG_UTIL_CLAMP_MAX); 1024 if never set.
    pub uclamp_max: u32,
    /// `p->rt.time_slice` of SCHED_RR, in ticks.
    pub rt_time_slice: u32,
    /// Queued on its rt_rq (`on_rt_rq()`).
    pub on_rt_rq: bool,
    /// `p->pi_blocked_on`: the rt_mutex this task waits for.
    pub pi_blocked_on: Option<u32>,
    /// rt_mutexes this task owns (for the PI chain).
    pub pi_locks_held: Vec<u32>,
    /// `task_group(p)`: index in [`crate::core::Kernel::task_groups`], 0 = the root.
    pub tg: usize,
    /// `se->my_q`: set only on a group's sched_entity, which is not a task
    /// (no pid, never on a CPU); the cfs_rq it stands for.
    pub my_q: Option<CfsRqId>,
}

/// `struct rt_rq`: per-priority FIFO lists and the push bookkeeping.
#[derive(Clone, Debug)]
pub struct RtRq {
    /// One FIFO per kernel priority 0..99.
    pub queue: Vec<VecDeque<TaskId>>,
    /// Bit p set when `queue[p]` is non-empty.
    pub bitmap: u128,
    pub rt_nr_running: u32,
    pub rr_nr_running: u32,
    /// `highest_prio.curr`: best queued priority (99 = none).
    pub highest_prio_curr: i32,
    /// `highest_prio.next`: best pushable priority (99 = none).
    pub highest_prio_next: i32,
    /// `rt.overloaded`: has pushable tasks (in `rto_mask`).
    pub overloaded: bool,
    /// `pushable_tasks` plist: by priority, FIFO among equals.
    pub pushable: Vec<TaskId>,
}

impl RtRq {
    pub fn new() -> Self {
        RtRq {
            queue: (0..MAX_RT_PRIO).map(|_| VecDeque::new()).collect(),
            bitmap: 0,
            rt_nr_running: 0,
            rr_nr_running: 0,
            highest_prio_curr: MAX_RT_PRIO - 1,
            highest_prio_next: MAX_RT_PRIO - 1,
            overloaded: false,
            pushable: Vec::new(),
        }
    }
}

impl Default for RtRq {
    fn default() -> Self {
        Self::new()
    }
}

impl SchedEntity {
    /// An entity as `__sched_fork()` / `init_tg_cfs_entry()` leave it: not
    /// queued, no history, no averages.
    pub fn new(weight: u32, slice: u64, custom_slice: bool) -> Self {
        SchedEntity {
            load: LoadWeight::new(weight),
            on_rq: false,
            sched_delayed: false,
            rel_deadline: false,
            custom_slice,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            avg: SchedAvg::default(),
            runnable_weight: 0,
        }
    }
}

impl Task {
    pub fn nice(&self) -> i32 {
        self.static_prio - DEFAULT_PRIO
    }

    /// `p->nr_cpus_allowed`.
    pub fn nr_cpus_allowed(&self) -> usize {
        self.cpus_mask.len()
    }
}

/// `struct cfs_rq`: a CPU's root or a task group's on one CPU.
#[derive(Clone, Debug)]
pub struct CfsRq {
    /// `rq_of(cfs_rq)->cpu`.
    pub cpu: usize,
    /// `cfs_rq->tg`: index in [`crate::core::Kernel::task_groups`], 0 = the root.
    pub tg: usize,
    /// The group's entity on the parent cfs_rq (`tg->se[cpu]`); `None` at the root.
    pub se: Option<TaskId>,
    /// The cfs_rq that entity is queued on (`cfs_rq_of(tg->se[cpu])`).
    pub parent: Option<CfsRqId>,
    /// `cfs_rq_is_idle()`: the group has cpu.idle set.
    pub idle: bool,
    /// Group PELT (`fair::pelt`): a child's load to fold into this cfs_rq's
    /// group entity (`propagate`, `prop_runnable_sum`); this cfs_rq's part of
    /// its group's `tg->load_avg` and when it last changed it.
    pub propagate: bool,
    pub prop_runnable_sum: i64,
    pub tg_load_avg_contrib: u64,
    pub last_update_tg_load_avg: Option<u64>,
    /// `h_load`, `last_h_load_update` (jiffies), `h_load_next`: the load
    /// this cfs_rq carries at the root, cached per jiffy by `task_h_load()`.
    pub h_load: std::cell::Cell<u64>,
    pub last_h_load_update: std::cell::Cell<Option<u64>>,
    pub h_load_next: std::cell::Cell<Option<TaskId>>,
    /// `throttled_clock_pelt`, `throttled_clock_pelt_time`: the PELT clock stops while throttled.
    pub throttled_clock_pelt: u64,
    pub throttled_clock_pelt_time: u64,
    /// CFS bandwidth (`cfs_rq->runtime_enabled` etc., see [`crate::fair::bandwidth`]):
    /// the group has a quota; the runtime left of the slice it was handed.
    pub runtime_enabled: bool,
    pub runtime_remaining: i64,
    /// `cfs_rq->throttled`, and `throttle_count`: this or a cfs_rq above is throttled.
    pub throttled: bool,
    pub throttle_count: u32,
    /// When it was throttled with entities queued (`throttled_clock`), for `cpu.stat`.
    pub throttled_clock: Option<u64>,
    /// Task-based throttling (≥6.18): `pelt_clock_throttled`, the PELT
    /// clock stopped (an empty cfs_rq of a throttled hierarchy), and
    /// `throttled_limbo_list`, the tasks throttled out of it.
    pub pelt_clock_throttled: bool,
    pub limbo: Vec<TaskId>,
    /// Sum of queued entity weights including curr and delayed entities.
    pub load_weight: u64,
    /// Entities queued including curr and delayed ones (6.14+: `nr_queued`).
    pub nr_running: u32,
    pub h_nr_queued: u32,
    /// Queued tasks that are not delayed.
    pub h_nr_runnable: u32,
    pub h_nr_delayed: u32,
    /// SCHED_IDLE tasks queued.
    pub idle_h_nr_running: u32,
    /// Σ (vruntime − zero_vruntime)·w over entities in the tree (not curr).
    pub avg_vruntime: i64,
    /// Σ w over entities in the tree (not curr).
    pub avg_load: u64,
    pub zero_vruntime: i64,
    pub timeline: Timeline,
    pub curr: Option<TaskId>,
    pub next: Option<TaskId>,
    /// `rq->cfs_tasks`, most recently picked first (root only; tasks only).
    pub tasks: Vec<TaskId>,
    /// PELT averages of the runqueue (`cfs_rq->avg`).
    pub avg: SchedAvg,
    /// Load of tasks that migrated away, subtracted at the next update (`cfs_rq->removed`).
    pub removed: Removed,
}

/// `cfs_rq->removed`: contributions of tasks that left while not queued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub nr: u32,
    pub load_avg: u64,
    pub util_avg: u64,
    pub runnable_avg: u64,
}

impl CfsRq {
    /// An empty cfs_rq on `cpu` whose timeline is numbered `id`, its
    /// `CfsRqId` (a CPU's root cfs_rq: the CPU; a group's: `nr_cpus` + its
    /// slot in `group_cfs`), as `init_cfs_rq()` leaves it; a group's caller
    /// adds its group, entity and parent.
    pub fn new(cpu: usize, id: u32) -> Self {
        CfsRq {
            cpu,
            tg: 0,
            se: None,
            parent: None,
            idle: false,
            propagate: false,
            prop_runnable_sum: 0,
            tg_load_avg_contrib: 0,
            last_update_tg_load_avg: None,
            h_load: std::cell::Cell::new(0),
            last_h_load_update: std::cell::Cell::new(None),
            h_load_next: std::cell::Cell::new(None),
            throttled_clock_pelt: 0,
            throttled_clock_pelt_time: 0,
            runtime_enabled: false,
            runtime_remaining: 0,
            throttled: false,
            throttle_count: 0,
            throttled_clock: None,
            pelt_clock_throttled: false,
            limbo: Vec::new(),
            load_weight: 0,
            nr_running: 0,
            h_nr_queued: 0,
            h_nr_runnable: 0,
            h_nr_delayed: 0,
            idle_h_nr_running: 0,
            avg_vruntime: 0,
            avg_load: 0,
            // init_cfs_rq() starts the origin slightly below zero.
            zero_vruntime: -(1 << 20),
            timeline: Timeline::new(id),
            curr: None,
            next: None,
            tasks: Vec::new(),
            avg: SchedAvg::default(),
            removed: Removed::default(),
        }
    }
}

/// `struct rq`.
#[derive(Clone, Debug)]
pub struct Rq {
    pub cpu: usize,
    /// `rq->rd`: index of its root domain in `Kernel::rds`.
    pub rd: usize,
    /// Tasks on this runqueue in any class, including delayed ones.
    pub nr_running: u32,
    /// `rq->curr`; `None` is the idle task.
    pub curr: Option<TaskId>,
    pub cfs: CfsRq,
    /// TIF_NEED_RESCHED of curr.
    pub need_resched: bool,
    /// TIF_NEED_RESCHED_LAZY of curr (PREEMPT_LAZY).
    pub need_resched_lazy: bool,
    /// `rq_clock()`, in ns.
    pub clock: u64,
    /// `rq->clock_pelt`: the clock PELT runs on, advancing by
    /// `arch_scale_cpu_capacity() / 1024` of the rq clock while a task runs
    /// and brought back to the rq clock when the CPU goes idle
    /// (`update_rq_clock_pelt()`, `update_idle_rq_clock_pelt()`).
    pub clock_pelt: u64,
    /// `rq->lost_idle_time`: idle time a fully busy CPU could not give back
    /// to `clock_pelt`; `rq_clock_pelt()` is `clock_pelt - lost_idle_time`.
    pub lost_idle_time: u64,
    pub nr_switches: u64,
    /// When the CPU last went idle (`rq->idle_stamp`), if idle.
    pub idle_stamp: Option<u64>,
    /// A wakeup is queued on this CPU's wakelist (`rq->ttwu_pending`).
    pub ttwu_pending: bool,
    /// The wakelist (`wake_entry` llist), in queueing order.
    pub wake_list: Vec<TaskId>,
    /// `wakee_flips` of this CPU's idle task, which wakes tasks from interrupts.
    pub idle_wakee: WakeeStats,
    /// `capacity_of()`: the CPU's capacity left to fair tasks by RT and DL
    /// time, as `update_cpu_capacity()` last set it (the balancer's local
    /// group refresh, [`crate::fair::capacity`]).
    pub cpu_capacity: u64,
    /// `rq->avg_rt`: PELT of the time RT tasks ran here (util only).
    pub avg_rt: SchedAvg,
    /// `rq->avg_dl`: PELT of the time DL tasks ran here (util only; the
    /// fair server's time is fair time).
    pub avg_dl: SchedAvg,
    /// `rq->misfit_task_load`, set by `update_misfit_status()`: the current
    /// task's `task_h_load()`, at least 1, while it does not fit this CPU
    /// and a bigger one is allowed; else 0.
    pub misfit_task_load: u64,
    /// The task switched away from whose switch has not completed: it is
    /// still `on_cpu` until `finish_task_switch()`.
    pub switching_out: Option<TaskId>,
    /// TIF_POLLING_NRFLAG of the idle task: the idle state the hardware
    /// model put this CPU in watches the flags (the poll loop, MWAIT), so a
    /// remote wakeup sets need_resched without an IPI. Set by the idle loop,
    /// i.e. the simulator's cpuidle model, through `Kernel::set_idle_polling`.
    pub idle_polling: bool,
    /// When the idle task was switched in, while it runs (the model's own
    /// record: the kernel's `idle_stamp` is consumed by a wakeup and moved
    /// by newidle balancing, the fair server's idle clock by its accounting). What an IPI to this CPU costs its sender
    /// depends on it (`[costs.kernel] ipi_send_by_idle`).
    pub idle_since: Option<u64>,
    // ---- load balancing (fair.c) ----
    /// `rq->next_balance`, in jiffies.
    pub next_balance: u64,
    /// `rq->idle_balance`: the CPU was idle at its last tick.
    pub idle_balance: bool,
    /// `rq->nohz_tick_stopped`: in `nohz.idle_cpus_mask`.
    pub nohz_tick_stopped: bool,
    /// `nohz_flags(cpu)`: kick flags the idle load balancer must act on.
    pub nohz_flags: u32,
    /// `rq->nohz_idle_balance`: flags taken by the softirq of a kicked ILB.
    pub nohz_idle_balance: u32,
    /// `rq->has_blocked_load`.
    pub has_blocked_load: bool,
    /// `rq->avg_idle`, ns.
    pub avg_idle: u64,
    /// `rq->max_idle_balance_cost`, ns.
    pub max_idle_balance_cost: u64,
    /// `rq->active_balance`: a stopper push is queued.
    pub active_balance: bool,
    /// `rq->push_cpu`: where the active balance pushes to.
    pub push_cpu: usize,
    /// The stopper has work queued (`stop_one_cpu_nowait()`), run at the next `schedule()`.
    pub stop_work_pending: bool,
    /// `migration_cpu_stop()` work queued by `affine_move_task()`: the task
    /// whose affinity no longer allows this CPU, and where it goes.
    pub migration_pending: Option<(TaskId, usize)>,
    /// The stopper's work is running now: `curr` is cleared for it, but the
    /// events it emits are in `migration/N`'s context, as the kernel's are.
    pub stopper_running: bool,
    /// Set while `schedule()` runs the stopper so the switch out of it is traced.
    pub stopper_ran: bool,
    /// The SD_SHARE_LLC domain of this CPU counts it as idle (`sd->nohz_idle`).
    pub llc_nohz_idle: bool,
    /// `rq->rt`.
    pub rt: RtRq,
    /// Queued balance callbacks (`rq->balance_callback`): RT push, RT pull.
    pub push_callback: bool,
    pub pull_callback: bool,
    /// An RT push irq_work is queued for this CPU (RT_PUSH_IPI chain).
    pub rto_push_pending: bool,
    /// `rq->fair_server`.
    pub fair_server: crate::deadline::FairServer,
    /// `rq->dl`: the CPU's deadline tasks.
    pub dl: crate::deadline::DlRq,
    /// When the last modeled holder of `rq->__lock` lets it go, by the
    /// charged time of the CPU that held it (`Kernel::rq_lock`): another
    /// CPU reaching the lock earlier spins until then.
    pub lock_free_at: u64,
    /// Since when a task has been current (the model's schedstats).
    pub busy_since: Option<u64>,
    /// Until when a newidle balance that found nothing keeps the CPU: its
    /// charged time (`[costs.kernel] balance_per_cpu`). The kernel balances
    /// with the blocked task still `rq->curr`, so `idle_cpu()` is false
    /// meanwhile and wakers' idle scans pass the CPU by.
    pub newidle_until: u64,
}

impl Rq {
    /// [`Kernel::idle_cpu`](crate::core::Kernel::idle_cpu) of this
    /// runqueue at `now`, for loops that hold the runqueue already.
    pub fn is_idle_at(&self, now: u64) -> bool {
        self.curr.is_none() && self.nr_running == 0 && !self.ttwu_pending && now >= self.newidle_until
    }

    pub fn new(cpu: usize) -> Self {
        Rq {
            cpu,
            rd: 0,
            nr_running: 0,
            curr: None,
            cfs: CfsRq::new(cpu, cpu as u32),
            need_resched: false,
            need_resched_lazy: false,
            clock: 0,
            clock_pelt: 0,
            lost_idle_time: 0,
            nr_switches: 0,
            idle_stamp: None,
            ttwu_pending: false,
            wake_list: Vec::new(),
            idle_wakee: WakeeStats::default(),
            cpu_capacity: 1024,
            avg_rt: SchedAvg::default(),
            avg_dl: SchedAvg::default(),
            misfit_task_load: 0,
            switching_out: None,
            idle_polling: false,
            idle_since: None,
            next_balance: 0,
            idle_balance: false,
            nohz_tick_stopped: false,
            nohz_flags: 0,
            nohz_idle_balance: 0,
            has_blocked_load: false,
            // sched_init(): twice the migration cost; max_idle_balance_cost = migration cost.
            avg_idle: 1_000_000,
            max_idle_balance_cost: 500_000,
            active_balance: false,
            push_cpu: 0,
            stop_work_pending: false,
            migration_pending: None,
            stopper_running: false,
            stopper_ran: false,
            llc_nohz_idle: false,
            rt: RtRq::new(),
            push_callback: false,
            pull_callback: false,
            rto_push_pending: false,
            dl: crate::deadline::DlRq::default(),
            // Every CPU starts in the idle task.
            fair_server: crate::deadline::FairServer {
                idle_since: Some(0),
                ..crate::deadline::FairServer::new(crate::deadline::FAIR_SERVER_RUNTIME)
            },
            lock_free_at: 0,
            busy_since: None,
            newidle_until: 0,
        }
    }
}

/// `struct sched_group_capacity`: the run-time state of one sched group,
/// shared by every CPU that sees the group (indexed by
/// [`crate::topology::SchedGroup::id`]; the kernel shares an overlap
/// group's by its balance CPU, the model keeps one per overlap group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedGroupCapacity {
    /// `sgc->capacity`: the CPUs' `capacity_of()` summed.
    pub capacity: u64,
    /// `sgc->min_capacity`.
    pub min_capacity: u64,
    /// `sgc->max_capacity`.
    pub max_capacity: u64,
    /// `sgc->next_update`, jiffies: before it a newidle balance does not
    /// refresh the capacities.
    pub next_update: u64,
    /// `sgc->imbalance`: a balance left tasks behind for affinity.
    pub imbalance: bool,
}

/// `struct root_domain`: what the RT balancer and the fair overload flag
/// share among the CPUs of one partition.
#[derive(Clone, Debug)]
pub struct RootDomain {
    pub span: CpuSet,
    /// CPUs with pushable RT tasks (`rto_mask`, `rto_count`).
    pub rto_mask: CpuSet,
    pub rto_count: u32,
    /// RT_PUSH_IPI chain state (`rto_cpu`, `rto_loop`, `rto_loop_next`).
    pub rto_cpu: i64,
    pub rto_loop: u64,
    pub rto_loop_next: u64,
    /// `rd->overloaded`.
    pub overloaded: bool,
    /// `rd->overutilized`: some CPU's utilisation does not fit its capacity
    /// (only kept while EAS is on, [`crate::fair::eas`]).
    pub overutilized: bool,
    /// `rd->pd`: the performance domains EAS uses here, as indices into the
    /// kernel's energy models, in the kernel's list order; empty = no EAS.
    pub pd: Vec<usize>,
}

impl RootDomain {
    pub(crate) fn new(span: CpuSet) -> Self {
        RootDomain {
            span,
            rto_mask: CpuSet::empty(),
            rto_count: 0,
            rto_cpu: -1,
            rto_loop: 0,
            rto_loop_next: 0,
            overloaded: false,
            overutilized: false,
            pd: Vec::new(),
        }
    }
}

/// Flags of `enqueue_task()` / `dequeue_task()` (values as in 6.12's sched.h).
pub mod qflags {
    pub const DEQUEUE_SLEEP: u32 = 0x01;
    pub const DEQUEUE_SAVE: u32 = 0x02;
    pub const DEQUEUE_MOVE: u32 = 0x04;
    pub const DEQUEUE_NOCLOCK: u32 = 0x08;
    pub const DEQUEUE_SPECIAL: u32 = 0x10;
    pub const DEQUEUE_MIGRATING: u32 = 0x100;
    pub const DEQUEUE_DELAYED: u32 = 0x200;
    /// 6.18's task-based throttling: a task leaving for the limbo list, and
    /// each group entity it empties, is never delayed (not in 6.12; a value
    /// of the model's that no other flag uses).
    pub const DEQUEUE_THROTTLE: u32 = 0x800;

    pub const ENQUEUE_WAKEUP: u32 = 0x01;
    pub const ENQUEUE_RESTORE: u32 = 0x02;
    pub const ENQUEUE_MOVE: u32 = 0x04;
    pub const ENQUEUE_NOCLOCK: u32 = 0x08;
    pub const ENQUEUE_HEAD: u32 = 0x10;
    pub const ENQUEUE_REPLENISH: u32 = 0x20;
    pub const ENQUEUE_MIGRATED: u32 = 0x40;
    pub const ENQUEUE_INITIAL: u32 = 0x80;
    pub const ENQUEUE_MIGRATING: u32 = 0x100;
    pub const ENQUEUE_DELAYED: u32 = 0x200;
    pub const ENQUEUE_RQ_SELECTED: u32 = 0x400;
}

/// Wake flags (`WF_*`, 6.12 values).
pub mod wflags {
    pub const WF_EXEC: u32 = 0x02;
    pub const WF_FORK: u32 = 0x04;
    pub const WF_TTWU: u32 = 0x08;
    pub const WF_SYNC: u32 = 0x10;
    pub const WF_MIGRATED: u32 = 0x20;
    pub const WF_CURRENT_CPU: u32 = 0x40;
    pub const WF_RQ_SELECTED: u32 = 0x80;
    /// RFC (Peter Zijlstra 2025): the on_cpu wakelist path.
    pub const WF_ON_CPU: u32 = 0x100;
    /// RFC (Peter Zijlstra 2025): a delayed task's wakeup handed to its own CPU.
    pub const WF_DELAYED: u32 = 0x200;
}
