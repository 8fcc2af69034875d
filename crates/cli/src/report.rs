//! The sections every report shares (`run`, `analyze`, `real`): the longest stalls,
//! work conservation, the cause table and the stall narratives.

use schedlab_analysis::{
    render_cause_table, render_stall_narratives, render_work_conservation, Attribution, RunMetrics, WorkConservation,
};
use schedlab_trace::TaskTable;

/// "stalls N of M handoffs took >= T us", then the five longest, one line each.
pub(crate) fn print_stalls(metrics: &RunMetrics, handoffs: u64, threshold_ns: u64, table: &TaskTable) {
    println!();
    println!(
        "stalls    {} of {handoffs} handoffs took >= {} us ({:.3} %)",
        metrics.stalls.len(),
        threshold_ns / 1000,
        100.0 * metrics.stalls.len() as f64 / handoffs as f64
    );
    let mut worst: Vec<_> = metrics.stalls.iter().collect();
    worst.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.start_ts.cmp(&b.start_ts)));
    for s in worst.iter().take(5) {
        println!(
            "          {:>8} us  {} -> {} on {} at {}.{:06} s",
            s.latency_ns / 1000,
            table.comm(s.waker_pid),
            table.comm(s.wakee_pid),
            s.obj_name,
            s.start_ts / 1_000_000_000,
            s.start_ts % 1_000_000_000 / 1000
        );
    }
}

/// Work conservation, then (if there were stalls) the cause table and the
/// narratives of the first `narratives` stalls.
pub(crate) fn print_workcons_and_causes(
    workcons: &WorkConservation,
    attribution: &Attribution,
    grace_ns: u64,
    narratives: usize,
) {
    println!();
    println!(
        "work conservation: runnable tasks waiting while a CPU of their affinity is idle (strict, and >= {} us)",
        grace_ns / 1000
    );
    print!("{}", render_work_conservation(workcons));
    if attribution.stalls.is_empty() {
        return;
    }
    println!();
    println!(
        "stall causes: {} stalls, {}.{:03} ms of handoff time",
        attribution.stalls.len(),
        attribution.total_ns / 1_000_000,
        attribution.total_ns / 1000 % 1000
    );
    print!("{}", render_cause_table(attribution));
    if narratives > 0 {
        println!();
        print!("{}", render_stall_narratives(attribution, narratives));
    }
}
