//! Scenario files: the workload model shared by the simulator and the real runner.
//!
//! A scenario names a topology, a kernel profile and features, a duration and
//! seed, and threads. Each thread has a scheduling policy, nice or RT priority,
//! an optional custom slice, an affinity (taskset cpulist), a start CPU and a
//! program of operations (`run`, `sleep`, `wait`/`signal` on eventfds,
//! `post`/`poll` on shared flags, `lock`/`unlock` of mutexes, `yield`),
//! looping or not. Operation names follow rt-app where it has one.
//!
//! Parsing validates everything it can without the kernel model; the feature
//! names and kernel profile are kept with their positions so the layer that
//! knows the feature table can report errors at the right line.
//!
//! # File format (TOML)
//!
//! ```toml
//! name = "demo"                 # default: the file name without .toml
//! description = "..."
//! topology = "ryzen-7950x"      # required: a preset or a file path relative to this file
//! kernel = "6.12"               # kernel profile (default "6.12"), checked by the kernel layer
//! features = ["NO_DELAY_DEQUEUE"]   # debugfs syntax, checked by the kernel layer
//! duration = "30s"              # absent: run until every program ends (then every
//!                               # thread needs a finite `loop` and every wait/poll a producer)
//! seed = 1                      # default 1
//! stall_threshold = "500us"     # default 500us
//! background = "quiet"          # or "kernel": watchdog stopper, kworkers
//! fair_server_runtime = "50ms"  # per 1 s period; "0" disables it
//! sched_rt_runtime_us = -1      # as /proc/sys/kernel; no throttling without RT_GROUP_SCHED
//! autogroup = false             # kernel.sched_autogroup_enabled for the run; absent: the host's
//!
//! [cgroup.batch]                # a cgroup (see `cgroup`): weight, max/period, cpus, idle
//! weight = 50                   # cpu.weight
//!
//! [mutex.m]                     # optional per-mutex options, keyed by the expanded name
//! pi = true                     # PTHREAD_PRIO_INHERIT (default false)
//!
//! [[thread]]
//! name = "worker"               # comm; with instances: "worker-0", "worker-1"; <= 15 bytes
//! instances = 2                 # default 1 (rt-app's `instance` also accepted), 1..1024
//! policy = "SCHED_OTHER"        # or SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR; case and
//!                               # the SCHED_ prefix optional
//! nice = 0                      # -20..19; `priority` is accepted as nice for fair policies
//!                               # (rt-app); for FIFO/RR `priority` is 1..99, default 10
//! slice = "3ms"                 # custom EEVDF slice (sched_runtime), 0.1ms..100ms, fair only
//! affinity = "4-7"              # cpulist, a CPU number, or [4, 5] (rt-app's `cpus` also
//!                               # accepted); default: every CPU of the topology
//! start_cpu = 4                 # must be in the affinity; default: the simulator decides
//! # session = "other"           # a process of its own (setsid): an autogroup while autogroup
//!                               # is on; its threads share no object with other sessions
//! delay = "0us"                 # before the thread starts
//! loop = true                   # true/-1 forever (default), false once, N times
//! program = [
//!   { run = "1ms" },            # CPU work at capacity 1024
//!   { sleep = "10ms" },
//!   { lock = "m" },             # pthread mutex (not recursive)
//!   { unlock = "m" },
//!   { post = "done{i}" },       # set a flag; {i} = this thread's instance index
//!   { wait = "efd{i}" },        # blocking eventfd read
//!   { signal = "kick", count = 1 },   # eventfd write (count default 1)
//!   { yield = true },           # sched_yield()
//!   { fork = "child" },         # pthread_create() a thread of table `child`
//! ]
//!
//! [[thread]]
//! name = "child"                # forked copies are child-0, child-1, ...
//! instances = 0                 # only `fork` creates it (rt-app's instance 0)
//! loop = 1
//! program = [{ run = "1ms" }]
//!
//! [[thread]]
//! name = "waker"
//! affinity = "2"
//! cgroup = "batch"              # a [cgroup.NAME]; its cpus would narrow the affinity
//! program = [
//!   { poll = "done{*}", after = "10us" },  # busy-poll every flag named done<N>;
//!                                          # binds {*} to the N that fired
//!   { signal = "efd{*}" },                 # efd<N> for that same N
//!   { poll = ["a", "b"] },                 # a plain list; binds nothing
//! ]
//!
//! [[measure]]                   # a named latency between two markers (see `Measure`)
//! name = "efd0 handoff"
//! from = "waker signal efd0"    # THREAD OP [OBJECT]; THREAD = comm or [[thread]] name;
//! to = "worker wait_done efd0"  # OBJECT `*` = any. Ops: signal wait_done post poll_done
//! within = "100us"              # lock unlock loop_end. Optional: count those in time
//! ```
//!
//! Durations are strings with a unit (`ns`, `us`/`µs`, `ms`, `s`) or integer
//! nanoseconds, as in topology files, except where the tool a key comes from
//! counts bare numbers otherwise (a program's `run` is rt-app's, in
//! microseconds): there a bare integer is refused with the unit to write
//! (`values::bare_integer_elsewhere`). An object
//! is created on first use and its kind (eventfd, flag, mutex) comes from the
//! operations that use it; one name used with two kinds is an error. A
//! `"name{*}"` poll matches every flag posted or polled anywhere in the file
//! as `name<N>` (N a decimal number), in numeric order; later `{*}` operands
//! of the same program iteration resolve to [`ObjRef::ByPolled`]. A
//! plain poll clears the binding.
//!
//! Also checked: mutexes are unlocked only when held, never locked twice,
//! released by the end of each iteration, and no two threads take two mutexes
//! in opposite orders (a lock-order cycle whose edges belong to distinct
//! threads).

use std::path::Path;

pub use schedlab_topology::{CpuSet, InputError, Topology};

mod build;
pub mod cgroup;
mod file;
mod measure;
mod rtapp;
pub mod schbench;
mod session;
mod validate;
mod values;

pub use build::{
    rt_runtime_below_fair_servers, DEFAULT_FAIR_SERVER_RUNTIME_NS, DEFAULT_KERNEL, DEFAULT_SEED, DEFAULT_STALL_NS,
    DEFAULT_TIMER_SLACK_NS, FAIR_SERVER_PERIOD_NS, MAX_COMM, MAX_INSTANCES, MAX_SLICE_NS, MIN_SLICE_NS,
};
pub use cgroup::{CgroupSpec, CpuMax};
pub use measure::{Marker, MarkerOp, Measure};
pub use schbench::Schbench;

/// Kernel activity the simulator adds besides the workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Background {
    /// Nothing but the workload (a `nowatchdog` box). The fair server is
    /// on either way; `fair_server_runtime` sets it.
    #[default]
    Quiet,
    /// A stock kernel's periodic per-CPU work: the soft-lockup watchdog's
    /// stopper (`migration/N`, every 4 s), a per-CPU kworker (vmstat, every
    /// 1 s).
    Kernel,
}

/// A value with the 1-based line/column where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub line: usize,
    pub col: usize,
}

/// Scheduling policy (`sched_setattr` policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    /// SCHED_DEADLINE, with the reservation in [`ThreadSpec::dl`].
    Deadline,
}

impl Policy {
    pub fn is_rt(&self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
    /// The kernel's `rt_or_dl_task_policy()`: no nice, no timer slack.
    pub fn is_rt_or_dl(&self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
            Policy::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// Index into [`Scenario::objects`].
pub type ObjId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjKind {
    /// Counter semantics: `signal` adds, `wait` blocks until non-zero then takes all.
    Eventfd,
    /// A futex used as a binary semaphore, as schbench's `fpost()` /
    /// `fwait()` use it: a word that is 0 (blocked) or 1 (posted). `fpost`
    /// sets it with a compare-and-swap and makes the `FUTEX_WAKE` syscall
    /// only when it was 0; `fwait` takes a 1 with a compare-and-swap and
    /// makes the `FUTEX_WAIT` syscall only when it finds 0, which returns at
    /// once (EAGAIN) if a post came meanwhile. Starts at 0.
    Futex,
    /// Shared-memory flag: `post` sets it with a timestamp, `poll` busy-waits for it.
    Flag,
    /// A pthread mutex (plain now; PI with `pi = true` once the RT class lands).
    Mutex { pi: bool },
    /// A lock-free list of futexes to post (schbench's `xlist`): `list_add`
    /// pushes, `wake_list` takes them all. Only the `[schbench]` generator
    /// creates these.
    WakeList,
    /// One spin-trylock per CPU (schbench's `per_cpu_locks`, taken without
    /// `-L` around a request's work). Only the `[schbench]` generator
    /// creates these.
    CpuLocks,
    /// A pthread condition variable (`cond_wait`, `cond_signal`,
    /// `cond_broadcast`; rt-app's `wait`, `signal`, `broad`, `sync`,
    /// `suspend`, `resume`). A signal with no waiter is lost.
    Cond,
    /// rt-app's barrier: `users` arrivals release everyone (the count of
    /// `barrier` ops naming it over all threads, as rt-app counts them).
    Barrier { users: u32 },
    /// A named timer grid (rt-app's timer resource): its first boundary is
    /// one period after the start of the first thread that uses it, then one
    /// period after the previous boundary.
    Timer,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSpec {
    pub name: String,
    pub kind: ObjKind,
}

/// An object named by an operation: fixed, or chosen by the flag the most
/// recent `poll` of this thread matched (the `{*}` template).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjRef {
    Fixed(ObjId),
    /// `by_polled[k]` is used when the last poll matched its k-th flag.
    ByPolled(Vec<ObjId>),
}

/// When an [`Op::Timer`] of `period_ns` executed at `now` wakes: one period
/// after the previous boundary (`prev`; the first `timer` counts from
/// `now`), moved on by whole periods while that is not in the future — the
/// one rule for the simulator and the real runner.
pub fn next_timer_boundary(prev: Option<u64>, now: u64, period_ns: u64) -> u64 {
    let period = period_ns.max(1);
    let next = prev.unwrap_or(now).saturating_add(period);
    if next > now {
        next
    } else {
        next.saturating_add((now - next) / period * period + period)
    }
}

/// What a [`Op::GridTimer`] does when its next boundary has already
/// passed (rt-app's timer `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimerMode {
    /// rt-app's default: no sleep, and the grid restarts from now.
    Relative,
    /// No sleep, the grid stays: the missed boundaries are caught up by the
    /// next timers back to back.
    Absolute,
}

/// When a [`Op::GridTimer`] executed at `now` wakes, and where its grid goes
/// next: the boundary is one period after `prev` (`start` for the first
/// timer, the thread's start). Returns (the time to sleep until, or `None`
/// when the boundary has already passed; the grid's new previous boundary).
/// rt-app's `rtapp_timer` event, the one rule for the simulator and the
/// real runner.
pub fn grid_timer_step(prev: u64, now: u64, period_ns: u64, mode: TimerMode) -> (Option<u64>, u64) {
    let next = prev.saturating_add(period_ns);
    if now < next {
        (Some(next), next)
    } else {
        match mode {
            TimerMode::Relative => (None, now),
            TimerMode::Absolute => (None, next),
        }
    }
}

/// One operation of a thread's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// CPU work: `ns` of execution at capacity 1024 (rt-app `run`).
    Run {
        ns: u64,
    },
    /// Block for `ns` (`clock_nanosleep`, rt-app `sleep`).
    Sleep {
        ns: u64,
    },
    /// Block until the eventfd counter is non-zero, then reset it (`read()`).
    Wait {
        efd: ObjRef,
    },
    /// Add `count` to the eventfd counter, waking its waiter (`write()`).
    Signal {
        efd: ObjRef,
        count: u64,
    },
    /// schbench's `fwait()` on a [`ObjKind::Futex`]: take a post, or
    /// `FUTEX_WAIT` until one comes.
    FutexWait {
        futex: ObjRef,
    },
    /// schbench's `fpost()` on a [`ObjKind::Futex`]: post it and, if it was
    /// not posted already, `FUTEX_WAKE` one waiter.
    FutexPost {
        futex: ObjRef,
    },
    /// A plain store of 0 (blocked) to a futex word, dropping a post nobody
    /// took: schbench's message thread does `td->futex = FUTEX_BLOCKED` at
    /// the top of each loop. Only the `[schbench]` generator writes it.
    FutexReset {
        futex: ObjRef,
    },
    /// Set a flag with the current time as its payload.
    Post {
        flag: ObjRef,
    },
    /// Busy-poll (stay running) until one of `flags` is set and at least
    /// `after_ns` have passed since it was posted; consume it. The matched
    /// index drives later `ObjRef::ByPolled` operands.
    Poll {
        flags: Vec<ObjId>,
        after_ns: u64,
    },
    Lock {
        mutex: ObjRef,
    },
    Unlock {
        mutex: ObjRef,
    },
    /// `sched_yield()`.
    Yield,
    /// Sleep until the next boundary of a fixed period, counted from the
    /// thread's first `timer` (`clock_nanosleep(TIMER_ABSTIME)` as cyclictest
    /// and rt-app's absolute timers use it): the wakeups stay on the grid
    /// however long the loop took. Boundaries already passed are skipped.
    Timer {
        period_ns: u64,
    },
    /// Push futex `futex` onto wake list `list` (schbench's `xlist_add()`:
    /// a CAS, no syscall).
    ListAdd {
        list: ObjRef,
        futex: ObjRef,
    },
    /// Take every futex on `list` (`xlist_splice()`, newest first), mark
    /// the instant once (the `post` marker on the list: schbench's one
    /// shared `gettimeofday()` per list run), then `fpost` each in turn
    /// ([`Op::FutexPost`]: the waker pays the `FUTEX_WAKE` path each one
    /// takes). schbench's `xlist_wake_all()`.
    WakeList {
        list: ObjRef,
    },
    /// Take the lock of the CPU the thread runs on from the per-CPU array
    /// `locks`, spinning (`pthread_mutex_trylock()` in a loop, never
    /// sleeping) while another thread holds it; a thread that migrated
    /// while it spun drops the lock it got and starts again on its new CPU.
    /// schbench's `lock_this_cpu()`.
    LockCpu {
        locks: ObjId,
    },
    /// Release the per-CPU lock this thread holds in `locks`.
    UnlockCpu {
        locks: ObjId,
    },
    /// Busy-loop until `ns` of wall-clock time have passed since the op
    /// began, whether the thread ran all of it or not (rt-app `runtime`).
    RunWall {
        ns: u64,
    },
    /// rt-app's timer: sleep until the next boundary of the named grid
    /// `timer` (see [`grid_timer_step`]); a passed boundary does not sleep.
    GridTimer {
        timer: ObjId,
        period_ns: u64,
        mode: TimerMode,
    },
    /// `pthread_cond_wait(cond, mutex)`: with `mutex` held, release it and
    /// block until a signal or broadcast, then take `mutex` again.
    CondWait {
        cond: ObjRef,
        mutex: ObjRef,
    },
    /// `pthread_cond_signal()`: wake the longest waiter, if any.
    CondSignal {
        cond: ObjRef,
    },
    /// `pthread_cond_broadcast()`: wake every waiter.
    CondBroadcast {
        cond: ObjRef,
    },
    /// rt-app's barrier: the last of its users to arrive wakes the others,
    /// who wait for it.
    Barrier {
        barrier: ObjId,
    },
    /// `sched_setaffinity(0, cpus)` on itself: a thread now running outside
    /// `cpus` is moved by the migration stopper.
    SetAffinity {
        cpus: CpuSet,
    },
    /// `sched_setscheduler(0, policy, ...)` on itself (for fair policies the
    /// nice value as `setpriority()` sets it).
    SetScheduler {
        policy: Policy,
        nice: i32,
        rt_priority: u32,
    },
    /// `setpriority(PRIO_PROCESS, 0, nice)` on itself (`set_user_nice()`):
    /// a fair thread is reweighted; an RT one keeps the value for when it
    /// is fair again.
    SetPriority {
        nice: i32,
    },
    /// Move itself into [`Scenario::cgroups`]`[k]`, or with `None` back to
    /// the run's own group (writing its tid to `cgroup.threads` / `tasks`;
    /// the kernel's `sched_move_task()`).
    SetCgroup {
        cgroup: Option<usize>,
    },
    /// Create a thread from [`Scenario::templates`]`[template]`
    /// (`pthread_create()`, rt-app's `fork`): the child starts with the
    /// forker's policy, priority, slice and affinity (`sched_fork()`), is
    /// placed by fork balancing (`wake_up_new_task()`), then sets its own
    /// table's affinity and policy as its first steps, as an rt-app thread
    /// does. Named by [`Scenario::forked_comm`].
    Fork {
        template: u32,
    },
}

/// [`Scenario::forked_comm`] of a template.
pub fn forked_comm(template: &ThreadSpec, n: u64) -> String {
    let mut comm = format!("{}-{}", template.group, u64::from(template.instance) + n);
    let mut end = comm.len().min(MAX_COMM);
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    comm.truncate(end);
    comm
}

/// Most threads a scenario may start with ([[thread]] instances and
/// [schbench]'s together; forks have their own limit below). The model
/// keeps state per task and per runqueue, and each simulated millisecond
/// costs time in proportion to the threads, so this bounds both; 16384 is
/// about 30 times the 516 threads of seed 004's schbench on 224 CPUs. A
/// constant of schedlab: a larger run means changing it and rebuilding.
pub const MAX_THREADS: usize = 16_384;

/// Most threads one `fork` op of one thread may create in a run (rt-app's
/// `FORKS_LIMIT`: it exits with an error at the next).
pub const MAX_FORKS_PER_OP: u64 = 1024;
/// Most threads all `fork` ops of a run may create together: a bound on
/// the memory a fork chain can take (each forked thread's state is kept
/// until the run ends). Neither limit can be raised.
pub const MAX_FORKED_THREADS: u64 = 16_384;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    Forever,
    Times(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub ops: Vec<Op>,
    pub repeat: Repeat,
    /// The op indices where an rt-app log row begins (one pass over a
    /// phase's events), in order; empty for scenario files.
    pub rows: Vec<usize>,
}

/// One thread (an expanded instance of a `[[thread]]` table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    /// comm, at most 15 bytes (`<name>` or `<name>-<i>` for instances).
    pub name: String,
    /// The `[[thread]]` table it came from and its instance index.
    pub group: String,
    pub instance: u32,
    pub policy: Policy,
    /// Nice value for OTHER/BATCH/IDLE (−20..19).
    pub nice: i32,
    /// RT priority for FIFO/RR (1..99).
    pub rt_priority: u32,
    /// Custom slice (`sched_attr.sched_runtime`), 0.1–100 ms (the kernel clamps
    /// into this range; the parser refuses values outside it). Fair policies only.
    pub slice_ns: Option<u64>,
    /// `timer_slack_ns` (`prctl(PR_SET_TIMERSLACK)`): a sleep's hrtimer may
    /// expire this much late, and on an otherwise quiet CPU it does. 50 us
    /// for fair policies by default; always 0 for RT and deadline
    /// (`__setscheduler_params()`).
    pub timer_slack_ns: u64,
    /// SCHED_DEADLINE's reservation; `None` for every other policy.
    pub dl: Option<DlSpec>,
    /// Utilisation clamps set with `sched_setattr()` at the start
    /// (`uclamp_min`/`uclamp_max`, rt-app `util_min`/`util_max`); `None`
    /// when the file sets neither.
    pub uclamp: Option<UclampSpec>,
    pub affinity: CpuSet,
    /// CPU the thread starts on (always in `affinity`); `None` lets the
    /// simulator choose, e.g. the first CPU of its affinity.
    pub start_cpu: Option<usize>,
    /// Delay before the thread is created.
    pub start_delay_ns: u64,
    /// Its `[cgroup]` (index into [`Scenario::cgroups`]); `None`: the run's
    /// parent group itself when the file has cgroups, else wherever the
    /// runner runs.
    pub cgroup: Option<usize>,
    /// Its session (index into [`Scenario::sessions`]): a process of its
    /// own made with `setsid()`, so an autogroup of its own while
    /// autogroup is on. `None`: the runner's session.
    pub session: Option<usize>,
    pub program: Program,
    /// Where the `[[thread]]` table starts.
    pub line: usize,
}

/// A SCHED_DEADLINE reservation as `sched_setattr()` takes it
/// (`sched_runtime`, `sched_deadline`, `sched_period`), in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DlSpec {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    /// 0: the deadline (the kernel's rule for `sched_period` = 0).
    pub period_ns: u64,
    /// `sched_flags` has SCHED_FLAG_RECLAIM (`reclaim = true`): GRUB
    /// reclaiming lets the task run on bandwidth nobody else is using.
    pub reclaim: bool,
}

/// Utilisation clamps as `sched_setattr()` takes them: each `Some` is sent
/// with its flag (SCHED_FLAG_UTIL_CLAMP_MIN / _MAX), 0..=1024, min <= max
/// (the kernel's own defaults, 0 and 1024, standing for a missing one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UclampSpec {
    pub min: Option<u32>,
    pub max: Option<u32>,
}

/// The largest clamp value (`SCHED_CAPACITY_SCALE`).
pub const UCLAMP_MAX_VALUE: u32 = 1024;

/// A session (see [`ThreadSpec::session`]) and its `[session.NAME]` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSpec {
    pub name: String,
    /// The nice value of its autogroup (`/proc/<pid>/autogroup`): its
    /// weight is nice's (`sched_prio_to_weight`), as for a task.
    pub nice: i32,
}

/// A parsed, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: String,
    pub name: String,
    pub description: String,
    /// `None`: run until every thread has finished its program.
    pub duration_ns: Option<u64>,
    pub seed: u64,
    /// The topology reference as written (preset name or file path).
    pub topology_ref: String,
    pub topology: Topology,
    /// Kernel profile name (`"6.12"`, `"mainline"`), checked by the kernel layer.
    /// Line and column are 0 when the file does not set `kernel` (default `"6.12"`).
    pub kernel_profile: Spanned<String>,
    /// Feature settings in debugfs syntax (`NO_DELAY_DEQUEUE`), checked by the kernel layer.
    pub features: Vec<Spanned<String>>,
    /// A handoff at or above this counts as a stall (default 500 µs, as in seed 000).
    pub stall_threshold_ns: u64,
    /// Kernel activity besides the workload (`background = "quiet" | "kernel"`).
    pub background: Background,
    /// The fair server's runtime per 1 s period (`fair_server_runtime`,
    /// debugfs `sched/fair_server/cpuN/runtime`); `None` keeps the kernel's 50 ms.
    pub fair_server_runtime_ns: Option<u64>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (`-1` = no limit); `None`
    /// keeps the kernel's 950000. Without `CONFIG_RT_GROUP_SCHED` (Debian's
    /// 6.12) this no longer throttles RT tasks — the fair server does — so
    /// the model only checks the write as the kernel would; the real runner
    /// sets it.
    pub sched_rt_runtime_us: Option<i64>,
    pub objects: Vec<ObjectSpec>,
    /// `[cgroup.NAME]` tables, parents before children.
    pub cgroups: Vec<CgroupSpec>,
    /// The sessions the threads' `session` keys name, in order of first use.
    pub sessions: Vec<SessionSpec>,
    /// `autogroup = true|false`: `kernel.sched_autogroup_enabled` for the
    /// run; `None` leaves the host's setting.
    pub autogroup: Option<Spanned<bool>>,
    pub threads: Vec<ThreadSpec>,
    /// The tables a `fork` op names, one thread each as forked copies
    /// start (`instance` is the table's instance count: the first forked
    /// copy's number). Not started with the run; a table with
    /// `instances = 0` is only here.
    pub templates: Vec<ThreadSpec>,
    /// `[[measure]]` latencies between workload markers.
    pub measures: Vec<Measure>,
    /// The `[schbench]` generator's parameters, when the file has one (its
    /// threads are in `threads`).
    pub schbench: Option<Schbench>,
    /// What the file said that the model or the real runner reads
    /// differently (an rt-app `calibration`, its log settings): reports
    /// print these.
    pub notes: Vec<String>,
    /// An rt-app file's `global.log_basename` (rt-app's default "rt-app"):
    /// the prefix of its per-thread log files. `None` for scenario files.
    pub rtapp_log_basename: Option<String>,
}

impl ThreadSpec {
    /// Its program moves it between cgroups (a `cgroup` op).
    pub fn moves_cgroup(&self) -> bool {
        self.program.ops.iter().any(|op| matches!(op, Op::SetCgroup { .. }))
    }
}

impl Scenario {
    /// Parse and validate scenario text. `path` is used in error messages and
    /// for the default name; `base_dir` is where a topology file path is
    /// resolved (the scenario file's directory).
    pub fn from_toml_str(path: &str, text: &str, base_dir: &Path) -> Result<Scenario, InputError> {
        Self::parse(path, text, base_dir, None)
    }

    /// Like [`Scenario::from_toml_str`] but run on `topology` instead of the
    /// one the file names (a `--topology` override). Affinities are checked
    /// against it, and `topology_ref` becomes its name.
    pub fn from_toml_str_on(
        path: &str,
        text: &str,
        base_dir: &Path,
        topology: Topology,
    ) -> Result<Scenario, InputError> {
        Self::parse(path, text, base_dir, Some(topology))
    }

    /// Read and parse a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, InputError> {
        let shown = path.display().to_string();
        let text = schedlab_topology::diag::read_input(path, "scenario")?;
        let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Self::from_toml_str(&shown, &text, base)
    }

    fn parse(path: &str, text: &str, base_dir: &Path, topology: Option<Topology>) -> Result<Scenario, InputError> {
        if rtapp::looks_like_json(text) {
            return rtapp::parse(path, text, base_dir, topology);
        }
        let raw: file::RawScenario =
            toml::from_str(text).map_err(|e| schedlab_topology::diag::toml_error(path, text, &e))?;
        let lines = schedlab_topology::diag::LineIndex::new(text);
        build::build(values::Ctx { path, text, lines: &lines, rtapp: false }, raw, base_dir, topology)
    }

    /// The comm of the `n`th thread (0-based) forked from template
    /// `template` in a run: `<table>-<k>`, numbered on from the table's
    /// instances, cut to the kernel's 15 bytes as `prctl(PR_SET_NAME)`
    /// cuts it. rt-app itself names forked threads `<task>-<index>-<nnnn>`.
    pub fn forked_comm(&self, template: usize, n: u64) -> String {
        forked_comm(&self.templates[template], n)
    }

    /// The template whose forked threads may carry `comm` (the table name,
    /// `-`, a number; a cut comm matches on what is left), for telling a
    /// real run's forked threads from the rest of the machine.
    pub fn template_of_comm(&self, comm: &str) -> Option<usize> {
        self.templates.iter().position(|t| {
            let full = format!("{}-", t.group);
            if comm.len() < MAX_COMM {
                comm.strip_prefix(&full).is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            } else {
                let cut = &full.as_bytes()[..full.len().min(comm.len())];
                comm.as_bytes().starts_with(cut) && comm.as_bytes()[cut.len()..].iter().all(|b| b.is_ascii_digit())
            }
        })
    }

    /// The template a forked thread named `comm` was made from.
    pub fn forked_spec(&self, comm: &str) -> Option<&ThreadSpec> {
        self.template_of_comm(comm).map(|k| &self.templates[k])
    }

    /// The spec of a workload thread by its comm: a `[[thread]]` copy or a
    /// forked one.
    pub fn workload_spec(&self, comm: &str) -> Option<&ThreadSpec> {
        self.thread(comm).or_else(|| self.forked_spec(comm))
    }

    /// The thread with this comm.
    pub fn thread(&self, name: &str) -> Option<&ThreadSpec> {
        self.threads.iter().find(|t| t.name == name)
    }

    /// The object with this name.
    pub fn object_id(&self, name: &str) -> Option<ObjId> {
        self.objects.iter().position(|o| o.name == name).map(|i| i as ObjId)
    }

    /// An error located at a spanned value of this scenario's file.
    pub fn error_at<T>(&self, at: &Spanned<T>, message: impl Into<String>) -> InputError {
        InputError::new(self.path.clone(), at.line, at.col, message)
    }
}

#[cfg(test)]
mod timer_tests {
    use super::next_timer_boundary;

    #[test]
    fn boundaries_stay_on_the_grid() {
        assert_eq!(next_timer_boundary(None, 500, 1_000), 1_500, "the first counts from now");
        assert_eq!(next_timer_boundary(Some(1_500), 1_700, 1_000), 2_500);
        assert_eq!(next_timer_boundary(Some(1_500), 2_500, 1_000), 3_500, "a boundary at now has passed");
        assert_eq!(next_timer_boundary(Some(1_500), 5_200, 1_000), 5_500, "missed ones are skipped");
        assert_eq!(next_timer_boundary(Some(u64::MAX - 10), u64::MAX - 5, 1_000), u64::MAX);
    }
}
