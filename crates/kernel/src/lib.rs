//! A pure model of the Linux scheduler (`kernel/sched/`).
//!
//! Modules follow the kernel's files: [`core`] and [`ttwu`] (core.c; the
//! class-dispatching runqueue operations and `__schedule()`/`sched_tick()` are
//! submodules of [`core`]), [`fair`], [`fair_select`], [`fair_pelt`] and
//! [`fair_lb`] (fair.c; the EEVDF math is a submodule of [`fair`], the load
//! balancer's group statistics, imbalance calculation and task migration are
//! submodules of [`fair_lb`]), [`pelt`] (pelt.c, with fair.c's PELT bookkeeping and readers
//! in submodules), [`topology`] (topology.c: the domain structures, with the
//! `SD_*` flags, the topology table and the domain build in submodules),
//! [`fair_nohz`] (fair.c's balance triggers: the tick's `sched_balance_trigger`,
//! NOHZ idle balancing and newidle balancing), [`rt`] (rt.c and cpupri.c),
//! [`rtmutex`] (rtmutex.c's priority inheritance), [`deadline`] (deadline.c's
//! fair server), [`stop_task`] (the stopper: active balance's and the
//! soft-lockup watchdog's `migration/N` work), [`sched`] (sched.h and the scheduler half of `task_struct`), [`features`]
//! (features.h plus proposed patches as toggles), [`timeline`] (the fair
//! class's augmented rb-tree). [`profile`] holds what differs between kernel
//! versions, [`invariants`] the consistency checks run after every simulated
//! step in debug builds.
//!
//! The model is pure: no I/O, no clock, no randomness. Callers pass the time
//! and the executing CPU to every entry point and read back events and
//! reschedule requests.

pub mod core;
pub mod deadline;
pub mod fair;
pub mod fair_lb;
pub mod fair_nohz;
pub mod fair_pelt;
pub mod fair_select;
pub mod features;
pub mod invariants;
pub mod pelt;
pub mod profile;
pub mod rt;
pub mod rtmutex;
pub mod sched;
pub mod stop_task;
pub mod timeline;
pub mod topology;
pub mod ttwu;

pub use crate::core::{IpiKind, IpiRequest, Kernel, KernelConfig, LlcShared, Switch, TaskParams};
pub use features::{Feature, FeatureError, Features};
pub use profile::Profile;
pub use sched::{Policy, TaskId, TaskState};
