//! Workload objects shared between threads: eventfd counters, shared-memory
//! flags and mutexes, plus each thread's position in its program. The ops
//! that act on them are interpreted in `ops`.

mod attr;
mod cond;
mod fork;
mod futex;
mod ops;
pub mod rtapp_log;

pub(crate) use fork::Forks;

use schedlab_kernel::TaskId;
use schedlab_scenario::{ObjId, ObjKind, ObjRef, Scenario};

/// State of one eventfd / flag / mutex.
#[derive(Clone, Debug)]
pub enum ObjState {
    /// Counter semantics: `write(n)` adds n, a blocking `read()` takes all.
    Eventfd { counter: u64, waiters: Vec<usize> },
    /// schbench's binary-semaphore futex: the word (`posted`: 1, else 0)
    /// and the threads queued on its hash bucket, oldest first.
    Futex { posted: bool, waiters: Vec<usize> },
    /// A shared-memory flag with the time it was last posted.
    Flag { posted_at: Option<u64> },
    /// A mutex: owner thread and FIFO waiters. Unlock hands the lock to the
    /// first waiter directly (a simplification of futex wake + retry).
    Mutex { owner: Option<usize>, waiters: Vec<usize>, pi: bool },
    /// schbench's `xlist`: futexes pushed by `list_add`, oldest first.
    WakeList { entries: Vec<ObjId> },
    /// One spin-trylock per CPU: the thread holding each (grown on use).
    CpuLocks { owner: Vec<Option<usize>> },
    /// A condition variable's waiters, longest-waiting first.
    Cond { waiters: Vec<usize> },
    /// rt-app's barrier: how many more arrivals it waits for before the
    /// next one releases everyone, and who waits.
    Barrier { waiting: u32, waiters: Vec<usize> },
    /// A timer grid: its previous boundary, once a thread has used it.
    Timer { prev: Option<u64> },
}

impl ObjState {
    pub fn new(kind: ObjKind) -> Self {
        match kind {
            ObjKind::Eventfd => ObjState::Eventfd { counter: 0, waiters: Vec::new() },
            ObjKind::Futex => ObjState::Futex { posted: false, waiters: Vec::new() },
            ObjKind::Flag => ObjState::Flag { posted_at: None },
            ObjKind::Mutex { pi } => ObjState::Mutex { owner: None, waiters: Vec::new(), pi },
            ObjKind::WakeList => ObjState::WakeList { entries: Vec::new() },
            ObjKind::CpuLocks => ObjState::CpuLocks { owner: Vec::new() },
            ObjKind::Cond => ObjState::Cond { waiters: Vec::new() },
            // rt-app starts `waiting` at its user count less one: the last
            // arrival finds it at zero.
            ObjKind::Barrier { users } => ObjState::Barrier { waiting: users.saturating_sub(1), waiters: Vec::new() },
            ObjKind::Timer => ObjState::Timer { prev: None },
        }
    }
}

/// Why a thread is not executing its program right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    No,
    Sleep,
    Eventfd(ObjId),
    Futex(ObjId),
    Mutex(ObjId),
    Cond(ObjId),
    Barrier(ObjId),
}

/// Where a thread is in a blocking wait (`wait` on an eventfd, `fwait`):
/// the kernel's side of the syscall, step by step, so that each step takes
/// its CPU time and a waker finds the thread where the kernel would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStep {
    /// At the op's start (for `fwait`, its user-space compare-and-swap).
    Start,
    /// In the syscall, paying `[costs.kernel] futex_wait` before the
    /// value check and the queueing.
    Setup,
    /// Queued on the object and blocked (or woken in its window).
    Queued,
    /// `fwait`: the syscall returns (it slept, or found a post: `-EAGAIN`),
    /// then the compare-and-swap again.
    Returning,
    /// Satisfied: paying the return and the marker.
    Done,
}

/// Where a thread is in an `fpost` (also each post of a `wake_list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostStep {
    /// The marker and the compare-and-swap.
    Start,
    /// The compare-and-swap succeeded: the `FUTEX_WAKE` syscall.
    Syscall,
    /// A waiter is queued: `futex_wake()`'s bucket lock and unqueue, then
    /// the wakeup.
    Wake,
}

/// A workload thread and where it is in its program.
#[derive(Clone, Debug)]
pub struct Thread {
    pub task: TaskId,
    pub spec: usize,
    pub pc: usize,
    pub iteration: u64,
    /// Work left in the current `run` op, in ns·1024·100 units (see `hw`).
    pub remaining: u64,
    /// True once the current `run` op has been started (work assigned).
    pub run_started: bool,
    /// Index of the flag the last `poll` matched.
    pub polled: Option<usize>,
    pub blocked: Blocked,
    /// Bumped to cancel a pending sleep timer.
    pub timer_gen: u64,
    /// The last boundary of the thread's periodic `timer`, if it has one.
    pub timer_next: Option<u64>,
    pub started: bool,
    /// When it was created (a timer grid's origin).
    pub started_at: u64,
    /// The end of the `run_wall` in progress.
    pub wall_end: Option<u64>,
    /// The wakeup time of the `timer` op in progress (a thread's own or a
    /// grid's), chosen once when the op starts, before its syscall is paid:
    /// the syscall's cost may be preempted and the op re-entered.
    pub timer_wake_at: Option<u64>,
    /// Woken by a cond signal or a barrier's release: the op in progress
    /// goes on from its second half.
    pub signalled: bool,
    /// The task's `timer_slack_ns` now (`sched_setscheduler()` changes it).
    pub timer_slack_ns: u64,
    /// rt-app log rows, when asked for and the program has them.
    pub rtapp_log: Option<Box<rtapp_log::RowLog>>,
    pub finished: bool,
    /// CPU it last executed on (for the cache-cold penalty).
    pub last_cpu: Option<usize>,
    /// A `wake_list` in progress: the spliced eventfds, in wake order, and
    /// how many have been posted (the buffer is reused between runs).
    pub wake_batch: Vec<ObjId>,
    pub wake_pos: Option<usize>,
    /// Where a `wait` or `fwait` in progress is.
    pub wait: WaitStep,
    /// Where an `fpost` in progress is.
    pub post: PostStep,
    /// Between becoming findable by a waker (queued on what it waits for,
    /// TASK_INTERRUPTIBLE) and `__schedule()` dequeuing it: paying
    /// `[costs.kernel] schedule_entry` before `schedule()` (see
    /// `Engine::block`).
    pub in_window: bool,
    /// A `lock_cpu` in progress: the CPU whose lock it spins on (the one
    /// `sched_getcpu()` gave when it started trying).
    pub spin_cpu: Option<usize>,
    /// The per-CPU lock this thread holds.
    pub cpu_lock: Option<usize>,
    /// Set for a thread a `fork` created: its comm, and how far it is in
    /// setting its own table's attributes.
    pub forked: Option<Box<fork::Forked>>,
}

impl Thread {
    pub fn new(task: TaskId, spec: usize, timer_slack_ns: u64) -> Self {
        Thread {
            task,
            spec,
            pc: 0,
            iteration: 0,
            remaining: 0,
            run_started: false,
            polled: None,
            blocked: Blocked::No,
            timer_gen: 0,
            timer_next: None,
            started: false,
            started_at: 0,
            wall_end: None,
            timer_wake_at: None,
            signalled: false,
            timer_slack_ns,
            rtapp_log: None,
            finished: false,
            last_cpu: None,
            wake_batch: Vec::new(),
            wake_pos: None,
            wait: WaitStep::Start,
            post: PostStep::Start,
            in_window: false,
            spin_cpu: None,
            cpu_lock: None,
            forked: None,
        }
    }
}

/// Resolve an operand against the thread's last poll match.
pub fn resolve(r: &ObjRef, polled: Option<usize>) -> Option<ObjId> {
    match r {
        ObjRef::Fixed(id) => Some(*id),
        ObjRef::ByPolled(v) => polled.and_then(|k| v.get(k).copied()),
    }
}

pub fn initial_objects(s: &Scenario) -> Vec<ObjState> {
    s.objects.iter().map(|o| ObjState::new(o.kind)).collect()
}
