//! A pure model of the Linux scheduler (`kernel/sched/`).
//!
//! Modules follow the kernel's files: [`core`] (core.c), [`fair`] (fair.c),
//! [`sched`] (sched.h and the scheduler half of `task_struct`), [`features`]
//! (features.h plus proposed patches as toggles), [`timeline`] (the fair
//! class's augmented rb-tree). [`profile`] holds what differs between kernel
//! versions, [`invariants`] the consistency checks run after every simulated
//! step in debug builds.
//!
//! The model is pure: no I/O, no clock, no randomness. Callers pass the time
//! and the executing CPU to every entry point and read back events and
//! reschedule requests.

pub mod core;
pub mod fair;
pub mod features;
pub mod invariants;
pub mod profile;
pub mod sched;
pub mod timeline;

pub use crate::core::{IpiRequest, Kernel, KernelConfig, Switch, TaskParams};
pub use features::{Feature, FeatureError, Features};
pub use profile::Profile;
pub use sched::{Policy, TaskId, TaskState};
