//! One scenario on both sides — the model and a real kernel — through one
//! analysis, so that a difference between the two is one between the model
//! and the kernel (or the hardware), not between two measuring tools.
//! `schedlab real`, `compare` and `fidelity` all analyse their runs here.

use std::collections::BTreeMap;

use schedlab_report::{Report, ReportCollector};
use schedlab_runner::RealRun;
use schedlab_scenario::Scenario;
use schedlab_sim::{SimResult, TraceObserver};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

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
        if let Some(spec) = scenario.workload_spec(&t.name) {
            pids.push(t.pid);
            allowed.insert(t.pid, spec.affinity.to_u32_vec());
        }
    }
    (pids, allowed)
}

/// The analysis of a simulated run: its workload threads' rows only.
pub fn analyze_sim(scenario: &Scenario, result: &SimResult, grace_ns: u64) -> Report {
    let (pids, allowed) = sim_workload(scenario, result);
    Report::of_workload(scenario, &result.trace, result.end_ns, allowed, &pids, grace_ns)
}

/// A simulated run and its analysis: the report of its workload and, when
/// asked, the report of its kernel tracepoints and markers alone (what a
/// real capture holds, so the two sides are attributed from the same kinds
/// of events).
pub struct SimSide {
    pub result: SimResult,
    pub report: Report,
    pub tracepoints: Option<Report>,
}

/// [`SimSide`] of a run analysed as it streams, in memory that does not
/// grow with its length: the same reports [`analyze_kept`] gives from the
/// kept trace (`SimResult::trace` comes back without events).
pub fn simulate_analyzed(
    scenario: &Scenario,
    opts: &schedlab_sim::SimOptions,
    grace_ns: u64,
    tracepoints_too: bool,
) -> Result<SimSide, schedlab_sim::SimError> {
    let nr_cpus = opts.topology.as_ref().unwrap_or(&scenario.topology).nr_cpus() as u32;
    let allowed: BTreeMap<Pid, Vec<u32>> = scenario
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (schedlab_sim::FIRST_PID + i as Pid, t.affinity.to_u32_vec()))
        .collect();
    let mut obs = SideObserver { scenario, nr_cpus, allowed, grace_ns, tracepoints_too, full: None, tp: None };
    let result = schedlab_sim::simulate_pipelined(scenario, opts, &mut obs, true)?;
    let (pids, _) = sim_workload(scenario, &result);
    let finish = |c: Option<ReportCollector>| {
        c.map(|c| {
            let (mut r, _) = c.finish(result.end_ns);
            r.retain_tasks(|p| pids.contains(&p));
            r
        })
    };
    let (report, tracepoints) = (finish(obs.full), finish(obs.tp));
    let report = report.unwrap_or_else(|| analyze_sim(scenario, &result, grace_ns));
    Ok(SimSide { result, report, tracepoints })
}

/// [`SimSide`] of a run whose whole trace was kept.
pub fn analyze_kept(scenario: &Scenario, result: SimResult, grace_ns: u64, tracepoints_too: bool) -> SimSide {
    let report = analyze_sim(scenario, &result, grace_ns);
    let tracepoints = tracepoints_too.then(|| {
        let (pids, allowed) = sim_workload(scenario, &result);
        let mut only = result.trace.clone();
        only.events.retain(|e| !schedlab_analysis::is_decision(&e.kind));
        Report::of_workload(scenario, &only, result.end_ns, allowed, &pids, grace_ns)
    });
    SimSide { result, report, tracepoints }
}

/// The collectors of [`simulate_analyzed`], made when the run's task table
/// is known.
struct SideObserver<'a> {
    scenario: &'a Scenario,
    nr_cpus: u32,
    allowed: BTreeMap<Pid, Vec<u32>>,
    grace_ns: u64,
    tracepoints_too: bool,
    full: Option<ReportCollector>,
    tp: Option<ReportCollector>,
}

impl TraceObserver for SideObserver<'_> {
    fn start(&mut self, table: &TaskTable) {
        let new = || ReportCollector::new(self.scenario, table, self.nr_cpus, self.allowed.clone(), self.grace_ns);
        self.full = Some(new());
        self.tp = self.tracepoints_too.then(new);
    }

    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        for c in self.full.iter_mut().chain(self.tp.iter_mut()) {
            c.task_forked(self.scenario, pid, info);
        }
    }

    fn event(&mut self, e: &Event) {
        if let Some(c) = self.full.as_mut() {
            c.observe(e);
        }
        if let Some(c) = self.tp.as_mut().filter(|_| !schedlab_analysis::is_decision(&e.kind)) {
            c.observe(e);
        }
    }
}
