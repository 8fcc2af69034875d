//! The model's rule tests on crafted states. They sit inside the crate
//! because they set up and corrupt state (a task's `recent_used_cpu`, an
//! LLC's scan budget, a runqueue's counters) that only the crate may write.

mod balance;
mod bandwidth;
mod capacity;
mod common;
mod costs;
mod cpufreq;
mod deadline;
mod eas;
mod eevdf;
mod grub;
mod invariants;
mod pressure;
mod rt;
mod syscalls;
mod wakeup;
