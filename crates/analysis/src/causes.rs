//! The attribution report's types: [`Cause`] and what a stall's story holds.

use schedlab_trace::{BalanceKind, Nanos, Pid, PreemptReason, WakePath};
use serde::{Serialize, Serializer};

use crate::narrative::Step;

/// Why a stall happened, in kernel terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// `ttwu_runnable()` found `se.sched_delayed` (DELAY_DEQUEUE had left the
    /// ineligible sleeper queued) and requeued it on its old CPU without
    /// `select_task_rq()`; it waited there behind the culprit.
    DelayedInPlace,
    /// `ttwu_runnable()` found the task still queued (not delayed: woken
    /// before it finished blocking) and left it where it was, behind the culprit.
    RunnableInPlace,
    /// `select_task_rq()` chose a CPU on which the culprit was running at the
    /// decision, and `wakeup_preempt()` did not preempt it.
    BusyCpuSelected,
    /// Woken onto a CPU the culprit was running on, in a trace that does not
    /// say which wakeup path was taken (a real kernel's trace has no
    /// `schedlab_ttwu`): `ttwu_runnable()` in place or `select_task_rq()`
    /// look the same from the sched tracepoints.
    WokenOntoBusyCpu,
    /// `select_task_rq()` chose a CPU that was idle at the decision, but the
    /// load balancer (`schedlab_lb_migrate`) moved the culprit there, and the
    /// culprit ran first: a wakeup vs. balance race.
    StackedByBalancer,
    /// As [`Cause::StackedByBalancer`], but the culprit got there by its own
    /// wakeup (or was already queued there): two wakeups chose one idle CPU.
    StackedByWakeup,
    /// The wakee was queued elsewhere and a migration during its wait (load
    /// balancing) put it behind the culprit.
    MovedOntoBusyCpu,
    /// Switched out still runnable (`R`/`R+`: preempted by a fair task) and
    /// waited behind the culprit.
    Preempted,
    /// The culprit is of a higher class (prio < 100: RT, deadline or the stop
    /// class, e.g. `migration/N`): preempted by it or waiting behind it.
    HigherClass,
    /// Most of the stall was the wakeup's delivery or the target CPU leaving
    /// idle (wakelist IPI, resched IPI, idle exit), not another task.
    IpiIdleExit,
    /// Most of the stall was not a runqueue wait (the wakee was running).
    NoRunqueueWait,
}

impl Cause {
    pub const ALL: [Cause; 11] = [
        Cause::DelayedInPlace,
        Cause::RunnableInPlace,
        Cause::BusyCpuSelected,
        Cause::WokenOntoBusyCpu,
        Cause::StackedByBalancer,
        Cause::StackedByWakeup,
        Cause::MovedOntoBusyCpu,
        Cause::Preempted,
        Cause::HigherClass,
        Cause::IpiIdleExit,
        Cause::NoRunqueueWait,
    ];

    /// The cause-table label (the culprit goes in its own column).
    pub fn label(&self) -> &'static str {
        match self {
            Cause::DelayedInPlace => "woken in place while delayed (ttwu_runnable, no select_task_rq)",
            Cause::RunnableInPlace => "woken while still queued (ttwu_runnable)",
            Cause::BusyCpuSelected => "placed on a busy CPU by select_task_rq",
            Cause::WokenOntoBusyCpu => "woken onto a busy CPU (wakeup path not in the trace)",
            Cause::StackedByBalancer => "stacked by the load balancer after select_task_rq",
            Cause::StackedByWakeup => "stacked by a concurrent wakeup after select_task_rq",
            Cause::MovedOntoBusyCpu => "migrated onto a busy CPU while waiting",
            Cause::Preempted => "preempted, waiting behind a fair task",
            Cause::HigherClass => "preempted/waiting behind a higher class",
            Cause::IpiIdleExit => "IPI/idle-exit latency",
            Cause::NoRunqueueWait => "not a runqueue wait",
        }
    }

    /// One line for a narrative: `woken in place while delayed behind worker-0`.
    pub fn describe(&self, culprit: Option<&str>) -> String {
        let c = culprit.unwrap_or("another task");
        match self {
            Cause::DelayedInPlace => format!("woken in place while delayed behind {c}"),
            Cause::RunnableInPlace => format!("woken while still queued, behind {c}"),
            Cause::BusyCpuSelected => format!("placed on a busy CPU by select_task_rq behind {c}"),
            Cause::WokenOntoBusyCpu => format!("woken onto a CPU busy with {c} (wakeup path not traced)"),
            Cause::StackedByBalancer => format!("{c} moved onto the wake CPU by the load balancer and ran first"),
            Cause::StackedByWakeup => format!("{c} woken onto the same idle CPU and ran first"),
            Cause::MovedOntoBusyCpu => format!("migrated while waiting onto a CPU busy with {c}"),
            Cause::Preempted => format!("preempted, waiting behind {c}"),
            Cause::HigherClass => format!("preempted/waiting behind higher class {c}"),
            Cause::IpiIdleExit => "IPI/idle-exit latency".to_string(),
            Cause::NoRunqueueWait => "not a runqueue wait".to_string(),
        }
    }
}

/// A component of a stall's time (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Wakeup,
    IdleExit,
    Behind,
    Running,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Component {
    pub part: Part,
    /// The task run in front of the wakee (`Behind` only).
    pub pid: Option<Pid>,
    pub comm: Option<String>,
    pub ns: u64,
}

/// `wakeup_preempt()`'s verdict on the wakee vs. the CPU's current task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PreemptCheck {
    pub curr_pid: Pid,
    pub curr: String,
    pub preempt: bool,
    /// Serialized as [`PreemptReason::as_str`] (`not_picked`, `idle`, ...).
    #[serde(serialize_with = "reason_str")]
    pub reason: PreemptReason,
}

/// The `try_to_wake_up()` that began the culprit's waiting episode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WakeDecision {
    pub ts: Nanos,
    /// Who ran `try_to_wake_up()` and on which CPU.
    pub waker_pid: Pid,
    pub waker_cpu: u32,
    /// The path `schedlab_ttwu` reported; `None` in a trace without it.
    /// Serialized as that event's `path` field (`runnable`,
    /// `runnable_delayed`, `activate`, `wakelist`), `unknown` for `None`.
    #[serde(serialize_with = "path_str")]
    pub path: Option<WakePath>,
    /// The CPU the wakee was enqueued on (`sched_wakeup`'s `target_cpu`).
    pub cpu: u32,
    /// `requeue_delayed_entity()`'s lag when the delayed entity was requeued.
    pub requeued_lag_ns: Option<i64>,
    pub preempt: Option<PreemptCheck>,
    /// The task current on `cpu` at the decision (0 = idle).
    pub curr_at_decision: Pid,
}

/// How a task last reached a CPU: a `sched_migrate_task` onto it and the
/// balancer decision that made it, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuArrival {
    pub ts: Nanos,
    pub src_cpu: u32,
    pub dst_cpu: u32,
    /// The balancer path, serialized as [`BalanceKind::as_str`] (`periodic`,
    /// `newidle`, `nohz_idle`, `active`); `None`: moved by its wakeup's
    /// `select_task_rq()`.
    #[serde(serialize_with = "balancer_str")]
    pub balancer: Option<BalanceKind>,
    /// When `need_active_balance()` queued the stopper for this move.
    pub active_queued_ts: Option<Nanos>,
}

fn reason_str<S: Serializer>(reason: &PreemptReason, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(reason.as_str())
}

fn path_str<S: Serializer>(path: &Option<WakePath>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match path {
        Some(WakePath::Runnable { delayed: true }) => "runnable_delayed",
        Some(WakePath::Runnable { delayed: false }) => "runnable",
        Some(WakePath::Activate) => "activate",
        Some(WakePath::Wakelist) => "wakelist",
        None => "unknown",
    })
}

fn balancer_str<S: Serializer>(kind: &Option<BalanceKind>, s: S) -> Result<S::Ok, S::Error> {
    match kind {
        Some(k) => s.serialize_some(k.as_str()),
        None => s.serialize_none(),
    }
}

/// An allowed CPU of the wakee other than the one it was queued on, and how
/// long it was idle while the wakee waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuIdle {
    pub cpu: u32,
    pub idle_ns: u64,
}

/// One stall, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StallStory {
    pub wakee_pid: Pid,
    pub wakee: String,
    pub waker_pid: Pid,
    pub waker: String,
    pub obj_name: String,
    /// Signal and wait return; `latency_ns` is the handoff.
    pub start_ts: Nanos,
    pub end_ts: Nanos,
    pub latency_ns: u64,
    pub cause: Cause,
    /// [`Cause::describe`] with the culprit.
    pub cause_text: String,
    pub culprit_pid: Option<Pid>,
    pub culprit: Option<String>,
    /// The culprit's share of the handoff (ns), or the IPI/idle-exit time.
    pub cause_ns: u64,
    /// The CPU where the wakee waited behind the culprit.
    pub culprit_cpu: Option<u32>,
    pub culprit_arrival: Option<CpuArrival>,
    pub wakeup: Option<WakeDecision>,
    /// When and where the wakee last blocked before the wakeup, and the lag
    /// it was left delayed with (DELAY_DEQUEUE), if it was.
    pub blocked_ts: Option<Nanos>,
    pub blocked_cpu: Option<u32>,
    pub blocked_delayed_lag_ns: Option<i64>,
    /// How the wakee itself last reached the CPU it blocked on.
    pub wakee_arrival: Option<CpuArrival>,
    /// Runnable-but-not-running time inside the handoff.
    pub wait_ns: u64,
    pub components: Vec<Component>,
    /// Allowed CPUs idle during the wait (only those idle at some point).
    pub idle_allowed: Vec<CpuIdle>,
    /// The decisions in order (times relative to the signal in renderings).
    pub steps: Vec<Step>,
    /// The chain in one line.
    pub summary: String,
}

/// One row of the cause table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseRow {
    pub cause: Cause,
    pub label: String,
    pub culprit_pid: Option<Pid>,
    pub culprit: Option<String>,
    pub stalls: u64,
    /// Sum of these stalls' handoff latencies.
    pub total_ns: u64,
    /// `total_ns` over all stalls' latency, in percent.
    pub share_pct: f64,
}

/// Every stall of a run, explained, and the causes aggregated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    pub threshold_ns: u64,
    /// Sum of all stalls' handoff latencies.
    pub total_ns: u64,
    /// By total time, largest first.
    pub causes: Vec<CauseRow>,
    /// In the order their waits returned (as [`crate::RunMetrics::stalls`]):
    /// the first [`crate::KEPT_STALLS`] of a streamed analysis (or as many
    /// as it was told to keep), every one of [`crate::attribute_stalls`]'s.
    pub stalls: Vec<StallStory>,
    /// Stories told after those: in `causes` and `total_ns`, not kept
    /// (serialised only when some were left out).
    #[serde(skip_serializing_if = "crate::is_zero")]
    pub stalls_not_kept: u64,
    /// Stalls a streamed run could not explain (their signal had left the
    /// bounded window, see `AttributionCollector`): counted in the metrics,
    /// missing from `stalls`, `causes` and `total_ns`.
    #[serde(skip_serializing_if = "crate::is_zero")]
    pub unexplained: u64,
}

impl Attribution {
    /// Stalls explained: the stories kept and those only counted.
    pub fn explained(&self) -> u64 {
        self.stalls.len() as u64 + self.stalls_not_kept
    }

    /// Keep only the first `n` stories (the rest stay in the cause table
    /// and the totals, counted in `stalls_not_kept`).
    pub fn keep_stalls(&mut self, n: usize) {
        crate::keep_first(&mut self.stalls, n, &mut self.stalls_not_kept);
    }

    /// Stalls per cause (all culprits together).
    pub fn count(&self, cause: Cause) -> u64 {
        self.causes.iter().filter(|r| r.cause == cause).map(|r| r.stalls).sum()
    }
}
