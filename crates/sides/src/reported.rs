//! `schedlab run`'s one simulated run and its report: streamed into the
//! report's collectors (and whatever else the caller streams it into: trace
//! files, perf views) in memory that does not grow with the run, or kept
//! whole when the caller needs the trace afterwards (plots).

use std::collections::BTreeMap;

use schedlab_analysis::SchbenchReport;
use schedlab_report::{Report, ReportCollector};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, simulate_observed, simulate_pipelined, SimOptions, SimResult, TraceObserver};
use schedlab_trace::{Event, Pid, TaskInfo, TaskTable};

use crate::SideError;

/// How the run's events travel.
pub enum Events<'o> {
    /// Keep the whole trace in `SimResult::trace` and analyse it after.
    Kept,
    /// Analyse as the run goes and hand every event to `also` too; on two
    /// threads (simulation, then analysis) when `pipelined`. The output is
    /// the same either way, only the wall time differs.
    Streamed { also: &'o mut (dyn TraceObserver + Send), pipelined: bool },
}

/// A run and its analysis.
pub struct Reported {
    /// The run (its trace is empty when it streamed).
    pub result: SimResult,
    pub report: Report,
    /// schbench's figures, for a scenario with schbench markers.
    pub schbench: Option<SchbenchReport>,
    /// The events the run produced.
    pub events: usize,
    /// Each scenario thread's allowed CPUs by pid (the trace has no
    /// affinities; pids are handed out in thread order).
    pub allowed: BTreeMap<Pid, Vec<u32>>,
}

/// The scenario's threads' allowed CPUs, by the pids the model gives them.
pub fn scenario_affinities(scenario: &Scenario) -> BTreeMap<Pid, Vec<u32>> {
    scenario
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (schedlab_sim::FIRST_PID + i as Pid, t.affinity.to_u32_vec()))
        .collect()
}

/// Simulate `scenario` once and analyse it (work conservation with
/// `grace_ns`, `kept_stalls` stalls and stories kept one by one when it
/// streams).
pub fn simulate_reported(
    scenario: &Scenario,
    opts: &SimOptions,
    grace_ns: u64,
    kept_stalls: usize,
    events: Events<'_>,
) -> Result<Reported, SideError> {
    let allowed = scenario_affinities(scenario);
    let (also, pipelined) = match events {
        Events::Kept => {
            let result = simulate(scenario, opts)?;
            // Forked threads' pids are known once the run is over.
            let (_, with_forked) = crate::sim_workload(scenario, &result);
            let mut all = allowed.clone();
            all.extend(with_forked);
            let report = Report::of(
                &result.trace,
                Some(scenario),
                scenario.stall_threshold_ns,
                Some(result.end_ns),
                all,
                grace_ns,
            );
            let schbench = schedlab_analysis::schbench_report(&result.trace, result.end_ns);
            let events = result.trace.events.len();
            return Ok(Reported { result, report, schbench, events, allowed });
        }
        Events::Streamed { also, pipelined } => (also, pipelined),
    };
    let mut obs = Collecting { scenario, allowed: &allowed, grace_ns, kept_stalls, collector: None, also, events: 0 };
    // It keeps no trace: the budget bounds the process's resident memory
    // (SimError::Resident), looked at as it runs.
    let result = if pipelined {
        simulate_pipelined(scenario, opts, &mut obs, true)?
    } else {
        simulate_observed(scenario, opts, &mut obs, true)?
    };
    let events = obs.events;
    let collector = obs.collector.take().unwrap_or_else(|| {
        let nr_cpus = scenario.topology.nr_cpus() as u32;
        ReportCollector::new(scenario, &result.trace.table, nr_cpus, allowed.clone(), grace_ns)
            .with_kept_stalls(kept_stalls)
    });
    let (report, schbench) = collector.finish(result.end_ns);
    Ok(Reported { result, report, schbench, events, allowed })
}

/// The report's collector, made when the run's task table is known, in
/// front of the caller's observer.
struct Collecting<'a, 'o> {
    scenario: &'a Scenario,
    allowed: &'a BTreeMap<Pid, Vec<u32>>,
    grace_ns: u64,
    kept_stalls: usize,
    collector: Option<ReportCollector>,
    also: &'o mut (dyn TraceObserver + Send),
    events: usize,
}

impl TraceObserver for Collecting<'_, '_> {
    fn start(&mut self, table: &TaskTable) {
        let nr_cpus = self.scenario.topology.nr_cpus() as u32;
        self.collector = Some(
            ReportCollector::new(self.scenario, table, nr_cpus, self.allowed.clone(), self.grace_ns)
                .with_kept_stalls(self.kept_stalls),
        );
        self.also.start(table);
    }

    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        if let Some(c) = self.collector.as_mut() {
            c.task_forked(self.scenario, pid, info);
        }
        self.also.task_new(pid, info);
    }

    fn event(&mut self, e: &Event) {
        self.events += 1;
        if let Some(c) = self.collector.as_mut() {
            c.observe(e);
        }
        self.also.event(e);
    }
}
