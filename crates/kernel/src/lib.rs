//! A pure model of the Linux scheduler (`kernel/sched/`), laid out as the
//! kernel's files:
//!
//! * [`core`] — core.c: the [`Kernel`] state, task creation, `resched_curr()`;
//!   its submodules hold the runqueue operations that dispatch to a class
//!   (`queue`), `__schedule()` and `sched_tick()` (`schedule`), and
//!   `try_to_wake_up()` with the wakelist (`ttwu`).
//! * [`sched`] — sched.h: task, entity and runqueue state, and the class
//!   table (`sched::class`) through which core reaches every class, as core.c
//!   reaches `struct sched_class`.
//! * [`fair`] — fair.c: the EEVDF class, with the EEVDF math, wakeup
//!   placement and `select_idle_sibling()` ([`fair::select`]), the PELT hooks
//!   ([`fair::pelt`]), the load balancer ([`fair::lb`], with its group
//!   statistics, imbalance calculation and task migration), the balance
//!   triggers and NOHZ idle balancing ([`fair::nohz`]) and the augmented
//!   rb-tree ([`fair::timeline`]).
//! * [`pelt`] — pelt.c's arithmetic, with fair.c's PELT bookkeeping and
//!   readers in submodules.
//! * [`rt`] — rt.c, with cpupri.c as a submodule.
//! * [`deadline`] — deadline.c's fair server; [`stop_task`] — the stop class
//!   (the `migration/N` stopper); [`rtmutex`] — rtmutex.c's priority
//!   inheritance.
//! * [`topology`] — topology.c: the sched domain hierarchy.
//! * [`features`] — features.h plus proposed patches as toggles;
//!   [`profile`] — what differs between kernel versions; [`invariants`] — the
//!   consistency checks run after every simulated step in debug builds.
//!
//! Versions: the model follows Debian's 6.12.x unless a function's doc says
//! otherwise; where mainline differs, [`Profile`] holds the rule and the doc
//! names it.
//!
//! The model is pure: no I/O, no clock, no randomness of its own beyond a
//! seeded generator. Callers pass the time, the executing CPU and an
//! [`Outbox`] to every entry point; what the kernel asks of the hardware
//! (trace events, IPIs, timers) comes back in the outbox, reschedules of the
//! executing CPU as [`Kernel::need_resched`]. State is read through
//! accessors ([`Kernel::task`], [`Kernel::rq`], ...).

pub mod core;
pub mod cpufreq;
pub mod cpufreq_schedutil;
pub mod deadline;
pub mod energy_model;
pub mod fair;
pub mod features;
pub mod invariants;
pub mod pelt;
pub mod profile;
pub mod rt;
pub mod rtmutex;
pub mod sched;
pub mod stop_task;
pub mod syscalls;
pub mod topology;

pub use crate::core::{
    IpiKind, IpiRequest, Kernel, KernelConfig, KernelStats, LlcShared, Outbox, PathStat, Switch, TaskParams, WakeKind,
    WakeRequest,
};
pub use deadline::{TimerKind, TimerRequest};
pub use features::{Feature, FeatureError, Features};
pub use invariants::InvariantError;
pub use profile::Profile;
pub use sched::class::SchedClass;
pub use sched::RootDomain;
pub use sched::{Policy, TaskId, TaskState};
pub use topology::{sched_domain_spans, Partition};

#[cfg(test)]
mod tests;
