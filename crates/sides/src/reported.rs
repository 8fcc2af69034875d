//! `schedlab run`'s one simulated run and its report: streamed into the
//! report's collectors (and whatever else the caller streams it into: trace
//! files, perf views) in memory that does not grow with the run, or kept
//! whole when the caller needs the trace afterwards (plots). [`run_reported`]
//! is the whole command: the run, its trace files and its `perf sched` view.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use schedlab_analysis::perf_sched::{latency_json, LatencyRows, SchedLatency, Timehist, TimehistOptions};
use schedlab_analysis::SchbenchReport;
use schedlab_report::{AnalysisJson, Report, ReportCollector, RunJson, RunText, SimHeader};
use schedlab_scenario::Scenario;
use schedlab_sim::{simulate, simulate_observed, simulate_pipelined, SimOptions, SimResult, TraceObserver};
use schedlab_trace::files::{self, FtraceStream, PerfettoStream, TraceDatStream};
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

/// The files a run's events are written to beside its report.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceFiles<'a> {
    /// ftrace text (`-`: standard output).
    pub ftrace: Option<&'a Path>,
    pub perfetto: Option<&'a Path>,
    pub trace_dat: Option<&'a Path>,
}

/// A `perf sched` view made of the run's events beside its report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunView {
    Report,
    /// `perf sched latency`'s accounting, kept for the caller.
    Latency,
    /// `perf sched timehist`'s line per switch (a JSON object a line with
    /// `json`), written to the caller's output as the run goes.
    Timehist {
        json: bool,
    },
}

/// `schedlab run`: one simulation of a scenario, its report, its trace files
/// and view.
pub struct Run<'a> {
    pub options: SimOptions,
    pub grace_ns: u64,
    /// Stalls and stories the report keeps.
    pub kept_stalls: usize,
    pub files: TraceFiles<'a>,
    pub view: RunView,
    /// Keep the whole trace (for plots); otherwise the run streams.
    pub keep_trace: bool,
    /// A streamed run's simulation and analysis on two threads.
    pub pipelined: bool,
    /// Write rt-app's per-thread logs here (an rt-app JSON scenario).
    pub rtapp_log: Option<&'a Path>,
    /// Write the run's SVG plots here, of the first `plot_stalls` stalls
    /// (needs `keep_trace`).
    pub plot_dir: Option<&'a Path>,
    pub plot_stalls: usize,
}

/// A finished [`Run`].
pub struct RunDone {
    pub reported: Reported,
    /// [`RunView::Latency`]: perf's accounting and the run's task table.
    pub latency: Option<(SchedLatency, TaskTable)>,
    /// The wall time of the run and its trace files.
    pub wall: Duration,
    /// How many plots went to [`Run::plot_dir`].
    pub plots: usize,
}

/// Run `run` on `scenario`; a listing goes to the writer `out` makes.
pub fn run_reported<W: Write + Send + 'static>(
    scenario: &Scenario,
    run: &Run,
    out: &dyn Fn() -> W,
) -> Result<RunDone, SideError> {
    if run.rtapp_log.is_some() && scenario.rtapp_log_basename.is_none() {
        return Err(SideError::RtappLogOfScenario(scenario.path.clone()));
    }
    let timehist = match run.view {
        RunView::Timehist { json } => Some(json),
        _ => None,
    };
    let mut latency = (run.view == RunView::Latency).then(|| (SchedLatency::new(), TaskTable::default()));
    let wall = Instant::now();
    let (grace, kept, opts) = (run.grace_ns, run.kept_stalls, &run.options);
    let reported = if run.keep_trace {
        let reported = simulate_reported(scenario, opts, grace, kept, Events::Kept)?;
        let trace = &reported.result.trace;
        if let Some((lat, table)) = latency.as_mut() {
            for ev in trace.in_time_order().iter() {
                lat.observe(ev);
            }
            *table = trace.table.clone();
        }
        if let Some(json) = timehist {
            let mut th = listing(out(), json)?;
            for ev in trace.in_time_order().iter() {
                match th.observe(ev, &trace.table) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(SideError::Output(e)),
                    _ => {}
                }
            }
            finish_listing(th)?;
        }
        if let Some(path) = run.files.ftrace {
            files::write_ftrace(trace, path, "--trace")?;
        }
        if let Some(path) = run.files.perfetto {
            files::write_perfetto(trace, path)?;
        }
        if let Some(path) = run.files.trace_dat {
            files::write_tracedat(trace, path)?;
        }
        reported
    } else {
        let mut obs = Streamed {
            nr_cpus: scenario.topology.nr_cpus() as u32,
            ftrace: run.files.ftrace.map(FtraceStream::create).transpose()?,
            perfetto: run.files.perfetto.map(PerfettoStream::create).transpose()?,
            trace_dat: run.files.trace_dat.map(TraceDatStream::create).transpose()?,
            timehist: match timehist {
                Some(json) => Some((listing(out(), json)?, TaskTable::default(), None)),
                None => None,
            },
            latency: latency.take(),
        };
        let events = Events::Streamed { also: &mut obs, pipelined: run.pipelined };
        let reported = simulate_reported(scenario, opts, grace, kept, events)?;
        if let Some(f) = obs.ftrace.take() {
            f.finish()?;
        }
        if let Some(f) = obs.perfetto.take() {
            f.finish()?;
        }
        if let Some(f) = obs.trace_dat.take() {
            f.finish()?;
        }
        if let Some((th, _, err)) = obs.timehist.take() {
            if let Some(e) = err {
                return Err(SideError::Output(e));
            }
            finish_listing(th)?;
        }
        latency = obs.latency.take();
        reported
    };
    let wall = wall.elapsed();
    let result = &reported.result;
    if let (Some(dir), Some(basename)) = (run.rtapp_log, &scenario.rtapp_log_basename) {
        schedlab_sim::write_rtapp_logs(dir, basename, scenario, result).map_err(SideError::RtappLog)?;
    }
    let report = &reported.report;
    debug_assert_eq!(report.attribution.explained() + report.attribution.unexplained, report.metrics.stall_count());
    let plots = match run.plot_dir {
        Some(dir) => schedlab_plot::write_run_plots(
            dir,
            &schedlab_plot::RunPlots {
                title: schedlab_report::run_plot_title(&scenario.name, result.seed),
                trace: &result.trace,
                metrics: &report.metrics,
                stalls: &report.attribution.stalls,
                groups: scenario
                    .threads
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.group.clone()))
                    .collect(),
                allowed: &reported.allowed,
                max_stalls: run.plot_stalls,
            },
        )?
        .len(),
        None => 0,
    };
    let mut reported = reported;
    // As a streamed run keeps them (the plots above counted them all).
    reported.report.keep_stalls(kept);
    Ok(RunDone { reported, latency, wall, plots })
}

/// How a finished run is printed.
pub struct RunPrint<'a> {
    pub json: bool,
    /// `perf sched latency`'s rows, for [`RunView::Latency`].
    pub latency_rows: LatencyRows,
    /// The schedstats section (always for a `[schbench]` scenario).
    pub why: bool,
    /// Narratives of the first N stalls.
    pub narratives: usize,
    /// Where the trace files went, for the report's closing lines.
    pub trace_file: Option<&'a Path>,
    pub perfetto_file: Option<&'a Path>,
    pub plot_dir: Option<&'a Path>,
}

impl RunDone {
    /// The report, its JSON, or the latency view's table, as `print` says.
    pub fn render(self, scenario: &Scenario, print: &RunPrint) -> Result<String, SideError> {
        let Reported { result, report, schbench, events, .. } = self.reported;
        let changed = result.features.diff_from(&result.profile.defaults);
        let groups = crate::model::group_rows(&result);
        let why = schedlab_sweep::why::why(&result.kernel_stats, scenario, result.end_ns);
        let latency_rows = |(lat, table): &(SchedLatency, TaskTable)| lat.rows_by(table, |_| true, print.latency_rows);
        if let (true, Some(latency)) = (print.json, &self.latency) {
            return Ok(latency_json(&latency_rows(latency)));
        }
        if print.json {
            let doc = RunJson {
                format: schedlab_report::FORMAT_VERSION,
                scenario: &scenario.name,
                topology: &result.topology.name,
                kernel: result.profile.name,
                features_changed: changed,
                seed: result.seed,
                simulated_ns: result.end_ns,
                notes: &result.notes,
                cgroups: &groups,
                why: &why,
                analysis: AnalysisJson::from(&report),
            };
            return Ok(format!("{}\n", schedlab_report::to_json(&doc)?));
        }
        let header = SimHeader {
            scenario,
            machine: &result.topology,
            kernel: result.profile.name,
            base_slice_ns: result.profile.base_slice_for(result.topology.nr_cpus()),
            features_changed: &changed,
            simulated_ns: result.end_ns,
            seed: result.seed,
            events,
            wall_s: self.wall.as_secs_f64(),
            notes: &result.notes,
            groups: &groups,
        };
        if let Some(latency) = &self.latency {
            let mut text = header.render();
            text.push('\n');
            text.push_str(&latency.0.render(&latency_rows(latency)));
            return Ok(text);
        }
        let text = RunText {
            header,
            report: &report,
            table: &result.trace.table,
            schbench,
            why: (print.why || scenario.schbench.is_some()).then_some(&why),
            narratives: print.narratives,
            trace_file: print.trace_file,
            perfetto_file: print.perfetto_file,
            plots: print.plot_dir.map(|dir| (dir, self.plots)),
        };
        Ok(text.render())
    }
}

type Listing<W> = Timehist<'static, W>;

/// `--view timehist`'s listing, every switch (a JSON object a line with `json`).
fn listing<W: Write>(out: W, json: bool) -> Result<Listing<W>, SideError> {
    let opts = TimehistOptions { json, ..Default::default() };
    Timehist::with_options(out, |_, _| true, opts).map_err(SideError::Output)
}

/// The listing flushed; a closed pipe (`| head`) ends it quietly.
fn finish_listing<W: Write>(th: Listing<W>) -> Result<(), SideError> {
    match th.finish().and_then(|mut out| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(SideError::Output(e)),
        _ => Ok(()),
    }
}

/// A streamed run's trace files and perf views, started once the run's
/// task table is known (the report's collector is [`Collecting`]).
struct Streamed<W: Write> {
    nr_cpus: u32,
    ftrace: Option<FtraceStream>,
    perfetto: Option<PerfettoStream>,
    trace_dat: Option<TraceDatStream>,
    /// `--view timehist`: the listing, the run's task table, the first write error.
    timehist: Option<(Listing<W>, TaskTable, Option<std::io::Error>)>,
    /// `--view latency`: perf's accounting and the run's task table.
    latency: Option<(SchedLatency, TaskTable)>,
}

impl<W: Write> TraceObserver for Streamed<W> {
    fn start(&mut self, table: &TaskTable) {
        let nr_cpus = self.nr_cpus;
        if let Some(f) = self.ftrace.as_mut() {
            f.start(table, nr_cpus);
        }
        if let Some(f) = self.perfetto.as_mut() {
            f.start(table, nr_cpus);
        }
        if let Some(f) = self.trace_dat.as_mut() {
            f.start(table, nr_cpus);
        }
        if let Some((_, t, _)) = self.timehist.as_mut() {
            *t = table.clone();
        }
        if let Some((_, t)) = self.latency.as_mut() {
            *t = table.clone();
        }
    }

    fn task_new(&mut self, pid: Pid, info: &TaskInfo) {
        if let Some(f) = self.ftrace.as_mut() {
            f.task_new(pid, info);
        }
        if let Some(f) = self.perfetto.as_mut() {
            f.task_new(pid, info);
        }
        if let Some(f) = self.trace_dat.as_mut() {
            f.task_new(pid, info);
        }
        if let Some((_, t, _)) = self.timehist.as_mut() {
            t.tasks.insert(pid, info.clone());
        }
        if let Some((_, t)) = self.latency.as_mut() {
            t.tasks.insert(pid, info.clone());
        }
    }

    fn event(&mut self, e: &Event) {
        if let Some((lat, _)) = self.latency.as_mut() {
            lat.observe(e);
        }
        if let Some(f) = self.ftrace.as_mut() {
            f.event(e);
        }
        if let Some(f) = self.perfetto.as_mut() {
            f.event(e);
        }
        if let Some(f) = self.trace_dat.as_mut() {
            f.event(e);
        }
        if let Some((th, table, err @ None)) = self.timehist.as_mut() {
            if let Err(x) = th.observe(e, table) {
                if x.kind() != std::io::ErrorKind::BrokenPipe {
                    *err = Some(x);
                }
            }
        }
    }
}
