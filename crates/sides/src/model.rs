//! The model side: the scenario simulated over consecutive seeds, each run
//! analysed as it streams (or from its kept trace when the caller needs the
//! trace), its workload's threads only.

use std::collections::BTreeMap;

use schedlab_report::{CgroupRow, Report, ReportCollector};
use schedlab_scenario::Scenario;
pub use schedlab_sim::sim_workload;
use schedlab_sim::{simulate, SimOptions, SimResult, TraceObserver};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

use crate::{Side, SideError};

/// The simulator as a side.
#[derive(Clone, Debug)]
pub struct Model {
    /// Every run's options; `seed` is the first run's (`None`: the scenario's).
    pub options: SimOptions,
    /// Runs, over consecutive seeds from the first.
    pub seeds: u64,
    /// The analysis's grace window for work conservation.
    pub grace_ns: u64,
    /// Also analyse the first run from its kernel tracepoints and markers
    /// alone: what a real capture holds, so that a comparison attributes
    /// both sides from the same kinds of events.
    pub tracepoints_first: bool,
    /// Keep the first run's whole trace (to write it); the others stream
    /// in memory that does not grow with their length.
    pub keep_first: bool,
}

impl Model {
    /// The seed of the first run.
    pub fn first_seed(&self, scenario: &Scenario) -> u64 {
        self.options.seed.unwrap_or(scenario.seed)
    }

    /// The same runs with `extra` sched_features set on top of these.
    pub fn with_features(&self, extra: &[String]) -> Model {
        let mut m = self.clone();
        m.options.features.extend(extra.iter().cloned());
        m
    }
}

impl Side for Model {
    type Runs = Vec<SimSide>;

    fn run(&self, scenario: &Scenario, _log: &mut dyn FnMut(&str)) -> Result<Vec<SimSide>, SideError> {
        let first = self.first_seed(scenario);
        (0..self.seeds)
            .map(|i| {
                let opts = SimOptions { seed: Some(first + i), ..self.options.clone() };
                let tp = self.tracepoints_first && i == 0;
                Ok(if self.keep_first && i == 0 {
                    analyze_kept(scenario, simulate(scenario, &opts)?, self.grace_ns, tp)
                } else {
                    simulate_analyzed(scenario, &opts, self.grace_ns, tp)?
                })
            })
            .collect()
    }
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

/// The model's task groups as a real run reports its cgroups: CPU time
/// from the tasks' `sum_exec_runtime` (the trace's runtime is the same
/// figure here).
pub fn group_rows(result: &SimResult) -> Vec<CgroupRow> {
    let total: u64 = result.threads.iter().map(|t| t.runtime_ns).sum();
    let secs = result.end_ns.max(1) as f64;
    result
        .groups
        .iter()
        .map(|g| {
            let (nr_periods, nr_throttled, throttled_ns) = g.bandwidth.unwrap_or_default();
            CgroupRow {
                name: g.name.clone(),
                threads: g.threads,
                cpu_time_ns: g.runtime_ns,
                traced_runtime_ns: g.runtime_ns,
                cpus_used: g.runtime_ns as f64 / secs,
                share_of_workload: if total > 0 { g.runtime_ns as f64 / total as f64 } else { 0.0 },
                nr_periods,
                nr_throttled,
                throttled_ns,
                by_starting_group: false,
            }
        })
        .collect()
}
