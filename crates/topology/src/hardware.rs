//! The machine's timing beyond its shape: cpuidle states and the governor
//! that picks among them, costs that depend on the distance between two
//! CPUs, and seeded interference (interrupts, steal).
//!
//! These are values, not behaviour: the simulator's hardware model
//! (`schedlab_sim::hw`) runs the governors and draws the noise. Each value
//! in a preset carries a comment saying whether it was measured (and how),
//! read from sysfs or a datasheet, or assumed.

use crate::CpuSet;

/// One cpuidle state, as `/sys/devices/system/cpu/cpuN/cpuidle/stateK` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleState {
    /// `stateK/name`: POLL, C1, C1E, C2, HLT, ...
    pub name: String,
    /// `stateK/latency`: the time to leave the state once woken.
    pub exit_latency_ns: u64,
    /// `stateK/residency`: the shortest idle for which entering pays off;
    /// governors only pick a state when they predict at least this long.
    pub target_residency_ns: u64,
    /// The CPU keeps `TIF_POLLING_NRFLAG` set in this state (the poll loop,
    /// MWAIT monitoring the flags' cache line): a remote wakeup only sets
    /// the flag and needs no IPI (`set_nr_if_polling()`).
    pub polling: bool,
    /// Measured exit cost as a function of how long the CPU idled, sorted by
    /// `idle_ns`; empty means the flat `exit_latency_ns`. A vCPU's halt is
    /// the example: the host polls for the vCPU for a while (KVM's
    /// halt_poll_ns), then deschedules it, then its own CPU goes deeper.
    pub exit_by_idle: Vec<ExitPoint>,
    /// Measured exit cost when the CPU's own timer ends the idle, same
    /// format; empty means `exit_by_idle`. In a VM the two differ: the
    /// guest's LAPIC timer is an hrtimer in the host, which must fire and
    /// wake the vCPU thread, while an IPI's exit is only the vCPU wakeup.
    /// On bare metal both are the same idle exit.
    pub timer_exit_by_idle: Vec<ExitPoint>,
}

/// A cost after an idle of `idle_ns`, median and 99th percentile: the
/// idle state's exit, or the sender's IPI (`KernelCosts::ipi_send_by_idle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitPoint {
    pub idle_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
}

impl IdleState {
    /// The state's exit cost after idling `idle_ns`: (median, p99). Linear
    /// between measured points; the ends hold beyond them.
    pub fn exit_after(&self, idle_ns: u64) -> (u64, u64) {
        curve_at(&self.exit_by_idle, idle_ns).unwrap_or((self.exit_latency_ns, self.exit_latency_ns))
    }

    /// The exit cost after idling `idle_ns` when the CPU's own timer wakes
    /// it: the timer curve, else the same as `exit_after`.
    pub fn timer_exit_after(&self, idle_ns: u64) -> (u64, u64) {
        curve_at(&self.timer_exit_by_idle, idle_ns).unwrap_or_else(|| self.exit_after(idle_ns))
    }
}

/// A curve's (p50, p99) at `idle_ns`, `None` when it has no points.
fn curve_at(pts: &[ExitPoint], idle_ns: u64) -> Option<(u64, u64)> {
    let first = pts.first()?;
    if idle_ns <= first.idle_ns {
        return Some((first.p50_ns, first.p99_ns));
    }
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if idle_ns <= b.idle_ns {
            let span = (b.idle_ns - a.idle_ns).max(1) as f64;
            let f = (idle_ns - a.idle_ns) as f64 / span;
            let lerp = |x: u64, y: u64| (x as f64 + (y as f64 - x as f64) * f).round() as u64;
            return Some((lerp(a.p50_ns, b.p50_ns), lerp(a.p99_ns, b.p99_ns)));
        }
    }
    let last = pts[pts.len() - 1];
    Some((last.p50_ns, last.p99_ns))
}

/// The cpuidle governor (`/sys/devices/system/cpu/cpuidle/current_governor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    /// No cpuidle driver: the idle loop enters the one state listed
    /// (x86 `default_idle()`: HLT) every time.
    None,
    /// `drivers/cpuidle/governors/menu.c`: the deepest state whose target
    /// residency fits the predicted idle (next timer, recent intervals).
    Menu,
    /// `drivers/cpuidle/governors/teo.c`: like menu, but the prediction
    /// counts how often recent idles ended before each state's residency.
    Teo,
    /// `drivers/cpuidle/governors/haltpoll.c` (guests): poll for an
    /// adaptive window, then halt.
    Haltpoll,
}

impl Governor {
    pub fn as_str(self) -> &'static str {
        match self {
            Governor::None => "none",
            Governor::Menu => "menu",
            Governor::Teo => "teo",
            Governor::Haltpoll => "haltpoll",
        }
    }
}

/// `/sys/module/haltpoll/parameters/*`: how the guest's poll window adapts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HaltpollParams {
    /// `guest_halt_poll_ns`: the longest poll window.
    pub guest_halt_poll_ns: u64,
    /// `guest_halt_poll_grow`: factor by which the window grows.
    pub grow: u32,
    /// `guest_halt_poll_grow_start`: the first non-zero window.
    pub grow_start_ns: u64,
    /// `guest_halt_poll_shrink`: divisor when an idle outlasts the maximum (0 = reset to 0).
    pub shrink: u32,
    /// `guest_halt_poll_allow_shrink`.
    pub allow_shrink: bool,
}

impl Default for HaltpollParams {
    /// The kernel's defaults (haltpoll.c, 6.12): 200 us, grow x2 from 50 us, shrink /2.
    fn default() -> Self {
        HaltpollParams { guest_halt_poll_ns: 200_000, grow: 2, grow_start_ns: 50_000, shrink: 2, allow_shrink: true }
    }
}

/// How a machine idles: its states (shallowest first) and the governor.
#[derive(Clone, Debug, PartialEq)]
pub struct Idle {
    /// `current_driver`, for reports (`acpi_idle`, `intel_idle`, `haltpoll`, `none`).
    pub driver: String,
    pub governor: Governor,
    /// Never empty: a file without `[idle]` gets one state from
    /// `[costs] idle_exit_ns` / `idle_polling`.
    pub states: Vec<IdleState>,
    pub haltpoll: HaltpollParams,
}

/// How far apart two CPUs are, from the closest sched-domain level they share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same CPU: no IPI, no cache to refill.
    Same,
    /// SMT siblings: one core, one L1/L2.
    Smt,
    /// Another core sharing the last-level cache.
    Llc,
    /// The same package (and node), another LLC: a Zen CCD, a tile.
    Package,
    /// Another NUMA node or package.
    Numa,
}

impl Distance {
    /// The levels a cost table has, closest first (`Same` costs nothing).
    pub const LEVELS: [Distance; 4] = [Distance::Smt, Distance::Llc, Distance::Package, Distance::Numa];

    pub fn as_str(self) -> &'static str {
        match self {
            Distance::Same => "same",
            Distance::Smt => "smt",
            Distance::Llc => "llc",
            Distance::Package => "package",
            Distance::Numa => "numa",
        }
    }

    /// Index into a per-level table (`LEVELS`); `Same` has none.
    pub fn level(self) -> Option<usize> {
        Distance::LEVELS.iter().position(|&d| d == self)
    }
}

/// What crossing one distance level costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelCosts {
    /// IPI from a CPU to one at this distance, until its handler runs.
    pub ipi_ns: u64,
    /// Cache refill of a task whose last CPU was at this distance.
    pub migration_cold_ns: u64,
    /// Extra CPU time, on the CPU doing it, of taking a runqueue lock last
    /// held at this distance and touching that runqueue (the lock's, the
    /// runqueue's and the task's cache lines move here): a remote wakeup
    /// that activates directly instead of through the wakelist, or wakes a
    /// task still queued there (`ttwu_runnable()`).
    pub remote_rq_ns: u64,
}

/// CPU time of the kernel's scheduling paths, charged on the CPU that runs
/// them (`[costs.kernel]`). All 0 unless a topology gives them: a measured
/// host folds them into its probed switch and IPI costs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCosts {
    /// `enqueue_task()` of a task (the class's enqueue, its PELT update).
    pub enqueue_ns: u64,
    /// `dequeue_task()`.
    pub dequeue_ns: u64,
    /// `select_task_rq_fair()`'s fixed part: the domain walk, wake_affine.
    pub select_ns: u64,
    /// Each CPU `select_idle_sibling()` tests (`available_idle_cpu()`: the
    /// other CPU's runqueue lines read from here).
    pub select_per_cpu_ns: u64,
    /// `__ttwu_queue_wakelist()` on the waker: the lock-free add to the
    /// target's list (the IPI it may raise costs `ipi_send_ns`).
    pub wakelist_ns: u64,
    /// Sending one IPI, on the sender (the APIC write; in a VM an exit):
    /// onto a busy CPU, and onto an idle one when `ipi_send_by_idle` is empty.
    pub ipi_send_ns: u64,
    /// Sending an IPI to a CPU that has idled (not polling) for a given
    /// time, sorted by `idle_ns` (p50 charged; p99 kept for the record).
    /// In a guest the send is an exit in which the host wakes the target's
    /// vCPU thread, and that costs more the longer the vCPU has halted (the
    /// host stops polling for it, its own CPU goes deeper); on bare metal
    /// the APIC write does not care and the curve is left out.
    pub ipi_send_by_idle: Vec<ExitPoint>,
    /// Each CPU whose runqueue a `sched_balance_rq()` reads
    /// (`update_sg_lb_stats()` over the domain's span), on the balancing
    /// CPU: periodic, newidle and nohz idle balancing alike. When set, the
    /// newidle gate (`avg_idle` against `max_newidle_lb_cost`) weighs this
    /// instead of `[costs] newidle_balance_ns_per_cpu`, as the kernel
    /// weighs the time its balance took.
    pub balance_per_cpu_ns: u64,
    /// Taking one IPI on the target: entry, the handler's dispatch
    /// (`scheduler_ipi()`, the call-function queue), exit. None for a
    /// polling idle CPU, which only sees its flag.
    pub ipi_receive_ns: u64,
    /// Programming an hrtimer, on the CPU that does it: each start of the
    /// fair server's timer and of a bandwidth timer (`hrtimer_start()`,
    /// reprogramming the clock event device). Simplified: cancels
    /// (`hrtimer_try_to_cancel()` in `dl_server_stop()`) cost nothing.
    pub hrtimer_ns: u64,
    /// A blocking wait's kernel work between the syscall's entry and the
    /// waiter becoming findable by a waker, on the waiter: `futex_wait()`'s
    /// `futex_wait_setup()` and `futex_queue()` (hash the address, lock the
    /// bucket, read the user word, queue, unlock), and the same shape for
    /// an eventfd `read()` or a pthread object (its wait queue's lock, the
    /// add). The value check comes at its end: a post before it returns at
    /// once (`-EAGAIN`).
    pub futex_wait_ns: u64,
    /// A wake's kernel work before `try_to_wake_up()`, on the waker, when
    /// a waiter is queued: `futex_wake()`'s bucket lock, matching and
    /// unqueueing the waiter (`futex_wake_mark()`), or an eventfd
    /// `write()`'s wait-queue lock. A `FUTEX_WAKE` that finds no waiter
    /// returns after the hash (`futex_hb_waiters_pending()`), which
    /// `[costs] syscall_ns` covers.
    pub futex_wake_ns: u64,
    /// `schedule()` from the blocking caller's last unlock until
    /// `__schedule()` dequeues the task (`sched_submit_work()`, the
    /// runqueue lock, the clock update, `try_to_block_task()`): the window
    /// in which the task is queued on a wait queue yet still on its
    /// runqueue and CPU, so a waker takes `ttwu_runnable()` and the task
    /// does not sleep at all.
    pub schedule_entry_ns: u64,
}

impl KernelCosts {
    /// What sending an IPI costs the sender: onto a CPU idle for
    /// `idle_ns` (the curve, linear between points), else onto a busy one.
    pub fn ipi_send_after(&self, idle_ns: Option<u64>) -> u64 {
        match idle_ns {
            Some(idle) => curve_at(&self.ipi_send_by_idle, idle).map_or(self.ipi_send_ns, |(p50, _)| p50),
            None => self.ipi_send_ns,
        }
    }
}

/// What kind of interference a noise source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoiseKind {
    /// A hardware interrupt's handler: the CPU's current work stops.
    Irq,
    /// Softirq work run on interrupt exit (timers, networking, RCU).
    Softirq,
    /// The host runs something else on this vCPU's physical CPU: nothing in
    /// the guest progresses, interrupts included, until it gives it back.
    Steal,
}

impl NoiseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoiseKind::Irq => "irq",
            NoiseKind::Softirq => "softirq",
            NoiseKind::Steal => "steal",
        }
    }
}

/// One source of seeded interference on some CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseSource {
    pub name: String,
    pub kind: NoiseKind,
    pub cpus: CpuSet,
    /// Mean arrivals per second on each CPU (a Poisson process).
    pub rate_hz: f64,
    /// Log-normal duration through these two quantiles (equal: fixed).
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// Durations are cut at this length.
    pub max_ns: u64,
    /// Only while the CPU runs a task: the tick's own interrupt, which
    /// NOHZ stops on an idle CPU.
    pub busy_only: bool,
}
