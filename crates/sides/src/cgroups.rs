//! A real run's cgroup rows: each scenario cgroup's CPU time in the run's
//! window, from the runner's per-thread times or the kernel's own counter,
//! beside its `cpu.stat` bandwidth counters.

use schedlab_report::{CgroupRow, Report};
use schedlab_runner::RealRun;
use schedlab_scenario::Scenario;

/// Per scenario cgroup: its threads' CPU time in the window (from the
/// trace's task rows) and its `cpu.stat` counters.
pub fn cgroup_rows(scenario: &Scenario, run: &RealRun, report: &Report) -> Vec<CgroupRow> {
    if scenario.cgroups.is_empty() {
        return Vec::new();
    }
    let traced = |tid: i32| report.metrics.tasks.iter().find(|t| t.pid == tid).map_or(0, |t| t.runtime_ns);
    let cpu_time =
        |tid: i32| run.threads.iter().find(|t| t.tid == tid).and_then(|t| t.outcome.as_ref()).map_or(0, |o| o.cpu_ns);
    let workload: u64 = run.threads.iter().map(|t| cpu_time(t.tid)).sum();
    // With moves, a thread's CPU time belongs to several groups: only the
    // kernel's own counter (v2 `usage_usec`) can split it.
    let moves = scenario.threads.iter().any(|t| t.moves_cgroup());
    let window = run.end_ns.saturating_sub(run.start_ns).max(1) as f64;
    scenario
        .cgroups
        .iter()
        .enumerate()
        .map(|(k, g)| {
            // A group's threads are its own and its descendants'.
            let inside = |mut at: Option<usize>| loop {
                match at {
                    Some(c) if c == k => break true,
                    Some(c) => at = scenario.cgroups[c].parent,
                    None => break false,
                }
            };
            let tids: Vec<i32> = scenario
                .threads
                .iter()
                .zip(&run.threads)
                .filter(|(s, _)| inside(s.cgroup))
                .map(|(_, t)| t.tid)
                .collect();
            let stat = run.cgroup_stats.iter().find(|s| s.name == g.name);
            let usage = stat.and_then(|s| s.usage_ns).filter(|_| moves);
            let cpu_time_ns: u64 = usage.unwrap_or_else(|| tids.iter().map(|&t| cpu_time(t)).sum());
            CgroupRow {
                name: g.name.clone(),
                threads: tids.len(),
                cpu_time_ns,
                traced_runtime_ns: tids.iter().map(|&t| traced(t)).sum(),
                cpus_used: cpu_time_ns as f64 / window,
                share_of_workload: if workload == 0 { 0.0 } else { cpu_time_ns as f64 / workload as f64 },
                nr_periods: stat.map_or(0, |s| s.nr_periods),
                nr_throttled: stat.map_or(0, |s| s.nr_throttled),
                throttled_ns: stat.map_or(0, |s| s.throttled_ns),
                by_starting_group: moves && usage.is_none(),
            }
        })
        .collect()
}
