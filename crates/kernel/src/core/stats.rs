//! The model's schedstats (kernel/sched/stats.c in spirit): how each
//! wakeup went and what the kernel's own paths cost the CPUs that ran
//! them, over a run. The kernel keeps `ttwu_count`/`ttwu_local` and
//! `sched_balance_newidle()`'s measured cost; the model keeps what a
//! throughput question needs: the wakeups by the path `try_to_wake_up()`
//! took, with the CPU time charged to their wakers (`[costs.kernel]`),
//! and per CPU the time it ran a task and the time charged to newidle
//! balancing. Counting only: nothing here changes what the model decides.

use super::Kernel;
use crate::sched::TaskId;

/// The path a wakeup took (`try_to_wake_up()`, core.c 6.12, and the seed
/// patches' variants of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WakeKind {
    /// `select_task_rq()`, then the target's wakelist (`ttwu_queue_wakelist()`).
    SelectWakelist,
    /// `select_task_rq()`, then a direct activation under the target's lock.
    SelectDirect,
    /// `ttwu_runnable()` of a task still queued, not delayed: woken inside
    /// its blocking window, or preempted before it blocked.
    Runnable,
    /// `ttwu_runnable()` of a `sched_delayed` task: requeued in place.
    RunnableDelayed,
    /// Dequeued but still switching out (`p->on_cpu`): its CPU's wakelist.
    OnCpuWakelist,
    /// TTWU_QUEUE_DELAYED: a delayed task handed to its own CPU's wakelist.
    DelayedWakelist,
    /// TTWU_DEQUEUE / DEQUEUE_DELAYED: a delayed task's dequeue completed by
    /// the waker, then `select_task_rq()` and the queueing.
    DelayedDequeued,
}

impl WakeKind {
    pub const ALL: [WakeKind; 7] = [
        WakeKind::SelectWakelist,
        WakeKind::SelectDirect,
        WakeKind::Runnable,
        WakeKind::RunnableDelayed,
        WakeKind::OnCpuWakelist,
        WakeKind::DelayedWakelist,
        WakeKind::DelayedDequeued,
    ];

    /// A short name for tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            WakeKind::SelectWakelist => "select+wakelist",
            WakeKind::SelectDirect => "select+direct",
            WakeKind::Runnable => "runnable in place",
            WakeKind::RunnableDelayed => "runnable delayed",
            WakeKind::OnCpuWakelist => "on-CPU wakelist",
            WakeKind::DelayedWakelist => "delayed wakelist",
            WakeKind::DelayedDequeued => "delayed dequeued",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Wakeups of one kind and what they cost their wakers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStat {
    pub count: u64,
    /// CPU time charged on the waker's CPU by the wakeup (`[costs.kernel]`:
    /// the selection, the lock or the wakelist, the IPI, the enqueue).
    pub waker_ns: u64,
}

/// Counts over a run: see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Indexed by [`WakeKind`] in [`WakeKind::ALL`]'s order.
    pub wakeups: [PathStat; 7],
    /// Per CPU: time a task was current (not the idle task).
    pub cpu_busy_ns: Vec<u64>,
    /// Per CPU: CPU time charged to `sched_balance_newidle()`.
    pub cpu_newidle_ns: Vec<u64>,
    /// Per CPU: newidle balances that ran a `sched_balance_rq()`, and of
    /// those, how many pulled nothing.
    pub newidle_balances: Vec<u64>,
    pub newidle_failed: Vec<u64>,
    /// Time spent spinning on runqueue locks, all CPUs.
    pub rq_lock_wait_ns: u64,
}

impl KernelStats {
    pub fn new(nr_cpus: usize) -> Self {
        KernelStats {
            cpu_busy_ns: vec![0; nr_cpus],
            cpu_newidle_ns: vec![0; nr_cpus],
            newidle_balances: vec![0; nr_cpus],
            newidle_failed: vec![0; nr_cpus],
            ..Default::default()
        }
    }

    pub fn path(&self, kind: WakeKind) -> PathStat {
        self.wakeups[kind.index()]
    }

    /// Every wakeup counted.
    pub fn total_wakeups(&self) -> u64 {
        self.wakeups.iter().map(|p| p.count).sum()
    }
}

impl Kernel {
    /// The run's counts so far (busy time up to the last switch of each CPU;
    /// [`Kernel::stats_at`] closes the open intervals).
    pub fn stats(&self) -> &KernelStats {
        &self.stats
    }

    /// The counts with each CPU's busy interval in progress closed at `now`.
    pub fn stats_at(&self, now: u64) -> KernelStats {
        let mut s = self.stats.clone();
        for (cpu, rq) in self.rqs.iter().enumerate() {
            if let Some(since) = rq.busy_since {
                s.cpu_busy_ns[cpu] += now.saturating_sub(since);
            }
        }
        s.rq_lock_wait_ns = self.rq_lock_wait_ns;
        s
    }

    /// A wakeup starts on the executing CPU: its charges count from here.
    pub(crate) fn wake_begin(&mut self) {
        self.wake_start_ns = self.charged_ns;
    }

    /// The wakeup in progress took path `kind`: count it with what it charged.
    pub(crate) fn wake_done(&mut self, kind: WakeKind) {
        let p = &mut self.stats.wakeups[kind.index()];
        p.count += 1;
        p.waker_ns += self.charged_ns - self.wake_start_ns;
    }

    /// The second half of a wakeup whose selection took time
    /// ([`super::WakeRequest`]): what its first half charged counts too.
    pub(crate) fn wake_resume(&mut self, first_half_ns: u64) {
        self.wake_start_ns = self.charged_ns.saturating_sub(first_half_ns);
    }

    /// What the wakeup in progress has charged so far.
    pub(crate) fn wake_charged(&self) -> u64 {
        self.charged_ns - self.wake_start_ns
    }

    /// The queueing after `select_task_rq()` (`ttwu_queue()`) of `t`: a
    /// selection's wakeup, or the kind its start marked on the task.
    pub(crate) fn wake_queued(&mut self, t: TaskId, wakelist: bool) {
        let kind = self.tasks[t as usize].wake_kind.take();
        self.wake_done(kind.unwrap_or(if wakelist { WakeKind::SelectWakelist } else { WakeKind::SelectDirect }));
    }

    /// `cpu` switched from `prev_busy` to `next_busy` (a task current or not).
    pub(crate) fn account_busy(&mut self, cpu: usize, next_busy: bool) {
        let now = self.now;
        let rq = &mut self.rqs[cpu];
        if let Some(since) = rq.busy_since.take() {
            self.stats.cpu_busy_ns[cpu] += now.saturating_sub(since);
        }
        if next_busy {
            rq.busy_since = Some(now);
        }
    }
}
