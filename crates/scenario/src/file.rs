//! The serde schema of a scenario file, as written (before expansion).
//!
//! Every table denies unknown keys. Values whose type depends on context
//! (durations, cpulists, `loop`, `poll`, `yield`) are kept as
//! `toml::Value` so that [`crate::build`] can explain exactly what was
//! expected at the value's own line and column.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::{Spanned, Value};

/// The top level of a scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub duration: Option<Spanned<Value>>,
    pub seed: Option<Spanned<i64>>,
    pub topology: Spanned<String>,
    pub kernel: Option<Spanned<String>>,
    pub features: Option<Vec<Spanned<String>>>,
    pub stall_threshold: Option<Spanned<Value>>,
    pub background: Option<Spanned<String>>,
    pub fair_server_runtime: Option<Spanned<Value>>,
    pub sched_rt_runtime_us: Option<Spanned<i64>>,
    /// `kernel.sched_autogroup_enabled` for the run.
    pub autogroup: Option<Spanned<bool>>,
    /// `[mutex.NAME]` tables: per-mutex options.
    pub mutex: Option<BTreeMap<Spanned<String>, Spanned<RawMutex>>>,
    /// `[session.NAME]` tables: options of a session threads name.
    pub session: Option<BTreeMap<Spanned<String>, Spanned<RawSession>>>,
    /// `[cgroup.NAME]` tables: the cgroups threads run in.
    pub cgroup: Option<BTreeMap<Spanned<String>, Spanned<RawCgroup>>>,
    pub thread: Option<Spanned<Vec<Spanned<RawThread>>>>,
    pub measure: Option<Vec<Spanned<crate::measure::RawMeasure>>>,
    /// `[schbench]`: the built-in schbench generator.
    pub schbench: Option<Spanned<crate::schbench::RawSchbench>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMutex {
    /// `PTHREAD_PRIO_INHERIT`.
    pub pi: Option<Spanned<bool>>,
}

/// One `[session.NAME]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSession {
    /// The autogroup's nice value.
    pub nice: Option<Spanned<i64>>,
}

/// One `[cgroup.NAME]` table (cgroup v2 names; the real runner writes the
/// v1 equivalents where the host has v1).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCgroup {
    /// `cpu.weight`, 1..10000 (default 100).
    pub weight: Option<Spanned<i64>>,
    /// The quota of `cpu.max`: CPU time per period.
    pub max: Option<Spanned<Value>>,
    /// The period of `cpu.max` (default 100ms).
    pub period: Option<Spanned<Value>>,
    /// `cpuset.cpus`.
    pub cpus: Option<Spanned<Value>>,
    /// `cpu.idle`.
    pub idle: Option<Spanned<bool>>,
    /// `cpuset.cpus.partition`: "member" (default), "root" or "isolated".
    pub partition: Option<Spanned<String>>,
}

/// One `[[thread]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawThread {
    pub name: Spanned<String>,
    #[serde(alias = "instance")]
    pub instances: Option<Spanned<i64>>,
    pub policy: Option<Spanned<String>>,
    pub nice: Option<Spanned<i64>>,
    pub priority: Option<Spanned<i64>>,
    pub slice: Option<Spanned<Value>>,
    /// SCHED_DEADLINE's reservation: `runtime` every `period`, by `deadline`.
    pub runtime: Option<Spanned<Value>>,
    pub deadline: Option<Spanned<Value>>,
    pub period: Option<Spanned<Value>>,
    /// SCHED_FLAG_RECLAIM: GRUB lets the reservation use idle bandwidth.
    pub reclaim: Option<Spanned<bool>>,
    /// `sched_attr.sched_util_min` with SCHED_FLAG_UTIL_CLAMP_MIN (0..1024).
    pub uclamp_min: Option<Spanned<i64>>,
    /// `sched_attr.sched_util_max` with SCHED_FLAG_UTIL_CLAMP_MAX (0..1024).
    pub uclamp_max: Option<Spanned<i64>>,
    pub timer_slack: Option<Spanned<Value>>,
    #[serde(alias = "cpus")]
    pub affinity: Option<Spanned<Value>>,
    pub start_cpu: Option<Spanned<i64>>,
    /// The `[cgroup.NAME]` it runs in.
    pub cgroup: Option<Spanned<String>>,
    /// The session (`setsid()`) it runs in: one autogroup per session.
    pub session: Option<Spanned<String>>,
    pub delay: Option<Spanned<Value>>,
    #[serde(rename = "loop")]
    pub repeat: Option<Spanned<Value>>,
    pub program: Spanned<Vec<Spanned<RawOp>>>,
    /// Where rt-app log rows begin (rt-app files only; see `Program::rows`).
    #[serde(skip)]
    pub rows: Vec<usize>,
}

/// One operation table in a program: exactly one of the operation keys,
/// plus the modifiers that operation takes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOp {
    pub run: Option<Spanned<Value>>,
    pub sleep: Option<Spanned<Value>>,
    pub timer: Option<Spanned<Value>>,
    pub wait: Option<Spanned<String>>,
    pub signal: Option<Spanned<String>>,
    pub fwait: Option<Spanned<String>>,
    pub fpost: Option<Spanned<String>>,
    pub post: Option<Spanned<String>>,
    pub poll: Option<Spanned<Value>>,
    pub lock: Option<Spanned<String>>,
    pub unlock: Option<Spanned<String>>,
    #[serde(rename = "yield")]
    pub yield_: Option<Spanned<Value>>,
    /// `signal` modifier: how much to add to the eventfd counter.
    pub count: Option<Spanned<i64>>,
    /// `poll` modifier: minimum time after the post before the poll succeeds.
    pub after: Option<Spanned<Value>>,
    pub run_wall: Option<Spanned<Value>>,
    pub cond_wait: Option<Spanned<String>>,
    pub cond_signal: Option<Spanned<String>>,
    pub cond_broadcast: Option<Spanned<String>>,
    pub barrier: Option<Spanned<String>>,
    pub setaffinity: Option<Spanned<Value>>,
    pub setscheduler: Option<Spanned<String>>,
    pub setpriority: Option<Spanned<i64>>,
    /// Move the thread to another `[cgroup.NAME]` (`"/"`: out of every one).
    pub cgroup: Option<Spanned<String>>,
    pub fork: Option<Spanned<String>>,
    /// `cond_wait` modifier: the mutex the waiter holds.
    pub mutex: Option<Spanned<String>>,
    /// `timer` modifier: the named grid (rt-app's timer `ref`).
    #[serde(rename = "ref")]
    pub ref_: Option<Spanned<String>>,
    /// `timer` modifier: `relative` or `absolute` (rt-app's timer `mode`).
    pub mode: Option<Spanned<String>>,
    /// `setscheduler` modifiers.
    pub nice: Option<Spanned<i64>>,
    pub priority: Option<Spanned<i64>>,
}

/// The operation keys, in the order they are reported.
pub(crate) const OP_KEYS: &[&str] = &[
    "run",
    "sleep",
    "wait",
    "signal",
    "post",
    "poll",
    "lock",
    "unlock",
    "yield",
    "timer",
    "run_wall",
    "cond_wait",
    "cond_signal",
    "cond_broadcast",
    "barrier",
    "setaffinity",
    "setscheduler",
    "setpriority",
    "cgroup",
    "fork",
    "fwait",
    "fpost",
];
