//! A simulated run's schedstats for the report layer: the kernel model's
//! [`schedlab_kernel::KernelStats`] as the plain figures
//! [`schedlab_report::why::Why`] tabulates (the report does not know the
//! model's types; this crate knows both).

use schedlab_kernel::{KernelStats, WakeKind};
use schedlab_report::why::{cpu_classes, SchedStats, Why};
use schedlab_scenario::Scenario;

/// The plain figures of `k`.
pub fn sched_stats(k: &KernelStats) -> SchedStats {
    SchedStats {
        paths: WakeKind::ALL.iter().map(|&w| (w.as_str(), k.path(w).count, k.path(w).waker_ns)).collect(),
        cpu_busy_ns: k.cpu_busy_ns.clone(),
        cpu_newidle_ns: k.cpu_newidle_ns.clone(),
        newidle_balances: k.newidle_balances.clone(),
        newidle_failed: k.newidle_failed.clone(),
        rq_lock_wait_ns: k.rq_lock_wait_ns,
    }
}

/// The `why` section of a run of `scenario` that simulated `elapsed_ns`.
pub fn why(k: &KernelStats, scenario: &Scenario, elapsed_ns: u64) -> Why {
    Why::new(&sched_stats(k), &cpu_classes(scenario, k.cpu_busy_ns.len()), elapsed_ns)
}
