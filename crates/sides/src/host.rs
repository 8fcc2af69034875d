//! The host side: the scenario on this machine's kernel through the real
//! runner (real threads, a tracefs capture), analysed as a simulated run is.

use schedlab_report::{AnalysisJson, RealJson, RealText, Report};
use schedlab_runner::{capture_size, run_real, RealOptions, RealRun};
use schedlab_scenario::Scenario;
use schedlab_sim::MemoryBudget;

use crate::headers::real_header;
use crate::{AnalysedRun, Side, SideError};

/// This machine's kernel as a side. Its run forks: call it from a
/// single-threaded process, as root (tracefs, SCHED_FIFO).
pub struct Host {
    /// The run's options (`features` are only noted: the host's
    /// sched_features are not changed).
    pub options: RealOptions,
    /// The analysis's grace window for work conservation.
    pub grace_ns: u64,
    /// A capture that could outgrow it is refused before anything runs
    /// (`None`: no limit).
    pub budget: Option<MemoryBudget>,
}

impl Host {
    /// The side, refusing a `--trace -` (stdout carries the report).
    pub fn new(options: RealOptions, grace_ns: u64, budget: Option<MemoryBudget>) -> Result<Host, SideError> {
        if options.trace_out.as_deref().is_some_and(schedlab_trace::files::is_stdout) {
            return Err(SideError::TraceToStdout);
        }
        Ok(Host { options, grace_ns, budget })
    }
}

impl Side for Host {
    type Runs = AnalysedRun;

    fn run(&self, scenario: &Scenario, _log: &mut dyn FnMut(&str)) -> Result<AnalysedRun, SideError> {
        if let Some(l) = self.options.loops_per_us {
            if !(l.is_finite() && l > 0.0) {
                return Err(SideError::LoopsPerUs(l));
            }
        }
        if let Some(budget) = &self.budget {
            let size = capture_size(scenario, &self.options)?;
            if size.bytes > budget.bytes {
                return Err(SideError::CaptureTooLarge {
                    cpus: size.cpus,
                    buffer_kb: size.buffer_kb,
                    factor: schedlab_runner::read_back_factor(),
                    need: schedlab_sim::gib(size.bytes),
                    budget: format!("{} ({})", schedlab_sim::gib(budget.bytes), budget.origin),
                    raise_with: budget.raise_with.clone(),
                });
            }
        }
        let run = run_real(scenario, &self.options)?;
        let report = analyze_real(scenario, &run, self.grace_ns);
        Ok(AnalysedRun { run, report })
    }
}

/// The analysis of a real run: its workload threads' rows only.
/// Figures the capture cannot support (its repaired switches) are left out.
pub fn analyze_real(scenario: &Scenario, run: &RealRun, grace_ns: u64) -> Report {
    let mut report = Report::of_workload(scenario, &run.trace, run.end_ns, run.allowed.clone(), &run.tids(), grace_ns);
    report.leave_out_uncertain(&run.repairs);
    report
}

impl AnalysedRun {
    /// `schedlab real --json`: the run's record beside its analysis.
    pub fn json(&self, scenario: &Scenario) -> Result<String, SideError> {
        let (run, report) = (&self.run, &self.report);
        let doc = RealJson {
            format: schedlab_report::FORMAT_VERSION,
            scenario: &scenario.name,
            kernel: &run.kernel,
            host_cpus: &run.plan.host_cpus,
            cpu_map: &run.plan.cpu_map,
            calibration: &run.calibration,
            notes: &run.notes,
            threads: &run.threads,
            window_ns: [run.start_ns, run.end_ns],
            steal: &run.steal,
            events_captured: run.events_captured,
            lost_events: run.lost_events,
            cgroups: &crate::cgroups::cgroup_rows(scenario, run, report),
            analysis: AnalysisJson::from(report),
        };
        Ok(format!("{}\n", schedlab_report::to_json(&doc)?))
    }

    /// `schedlab real`'s text: the header, the threads, the first
    /// `narratives` stalls told.
    pub fn text(&self, scenario: &Scenario, narratives: usize, trace_file: Option<&std::path::Path>) -> String {
        RealText {
            scenario,
            header: real_header(scenario, &self.run, &self.report),
            report: &self.report,
            table: &self.run.trace.table,
            narratives,
            trace_file,
        }
        .render()
    }
}
