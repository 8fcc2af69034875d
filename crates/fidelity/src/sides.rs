//! One scenario on both sides — the model and a real kernel — through one
//! analysis, so that a difference between the two is one between the model
//! and the kernel (or the hardware), not between two measuring tools.
//! `schedlab real`, `compare` and `fidelity` all analyse their runs here.

use std::collections::BTreeMap;

use schedlab_report::Report;
use schedlab_runner::RealRun;
use schedlab_scenario::Scenario;
use schedlab_sim::SimResult;
use schedlab_trace::Pid;

/// The analysis of a real run: its workload threads' rows only.
/// Figures the capture cannot support (its repaired switches) are left out.
pub fn analyze_real(scenario: &Scenario, run: &RealRun, grace_ns: u64) -> Report {
    let mut report = Report::of_workload(scenario, &run.trace, run.end_ns, run.allowed.clone(), &run.tids(), grace_ns);
    report.leave_out_uncertain(&run.repairs);
    report
}

/// A simulated run's workload: the scenario's threads and those its
/// `fork`s created (not the model's own kworkers), with the CPUs each may
/// use. The simulation runs on the scenario's CPUs; with `--remap` a real
/// run's are the host's, so each run has its own affinities.
pub fn sim_workload(scenario: &Scenario, result: &SimResult) -> (Vec<Pid>, BTreeMap<Pid, Vec<u32>>) {
    let mut pids = Vec::new();
    let mut allowed = BTreeMap::new();
    for t in &result.threads {
        let spec =
            scenario.thread(&t.name).or_else(|| scenario.template_of_comm(&t.name).map(|k| &scenario.templates[k]));
        if let Some(spec) = spec {
            pids.push(t.pid);
            allowed.insert(t.pid, spec.affinity.iter().map(|c| c as u32).collect());
        }
    }
    (pids, allowed)
}

/// The analysis of a simulated run: its workload threads' rows only.
pub fn analyze_sim(scenario: &Scenario, result: &SimResult, grace_ns: u64) -> Report {
    let (pids, allowed) = sim_workload(scenario, result);
    Report::of_workload(scenario, &result.trace, result.end_ns, allowed, &pids, grace_ns)
}
