//! `schedlab real`: run a scenario on this machine's kernel, capture its
//! sched tracepoints and markers through tracefs, and report it the way
//! `schedlab run` reports a simulation.

use clap::Args;
use schedlab_report::{AnalysisJson, CgroupRow, RealHeader, RealJson, RealText, Report};
use schedlab_runner::{capture_size, run_real, RealOptions, RealRun};
use schedlab_scenario::Scenario;
use schedlab_topology::parse_duration;
use std::path::{Path, PathBuf};

use crate::args::{DurationArg, JsonArg, MemoryArg, ReportArgs, ThresholdArg, TraceArg};
use crate::error::{CliError, Result};

/// The settings of a real run (shared with `schedlab compare`).
#[derive(Args, Clone)]
pub struct RealSettings {
    /// Scenario file (TOML) or rt-app JSON file, e.g. scenarios/asym_min-2cpu.toml, or a bundled
    /// scenario's name; `-` reads standard input.
    #[arg(value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: PathBuf,
    #[command(flatten)]
    pub duration: DurationArg,
    /// Limit for a scenario without a duration (it runs until every program ends).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub max_duration: u64,
    /// Map the scenario's CPUs onto this machine's when they do not exist here
    /// (in order, wrapping around); the mapping is printed.
    #[arg(long)]
    pub remap: bool,
    #[command(flatten)]
    pub threshold: ThresholdArg,
    /// Ring-buffer size per CPU in KB (default: 2 MB per second of run, at least 8 MB).
    #[arg(long, value_name = "KB")]
    pub buffer_kb: Option<u64>,
    /// Also capture sched_stat_runtime (one event per tick and switch).
    #[arg(long)]
    pub stat_runtime: bool,
    /// Apply the scenario's sched_rt_runtime_us for the run (restored after);
    /// without it RT throttling is never changed.
    #[arg(long)]
    pub set_rt_runtime: bool,
    /// Skip calibration: busy-loop iterations per microsecond of `run` work.
    #[arg(long, value_name = "N")]
    pub loops_per_us: Option<f64>,
}

#[derive(Args)]
#[command(after_help = crate::examples::REAL)]
pub struct RealArgs {
    #[command(flatten)]
    pub settings: RealSettings,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub trace: TraceArg,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub memory: MemoryArg,
}

pub(crate) fn load(settings: &RealSettings) -> Result<Scenario> {
    let mut s = Scenario::load(Path::new(&settings.scenario))?;
    if let Some(t) = settings.threshold.threshold {
        s.stall_threshold_ns = t;
    }
    Ok(s)
}

pub(crate) fn options(settings: &RealSettings, trace: Option<PathBuf>) -> RealOptions {
    RealOptions {
        duration_ns: settings.duration.duration,
        max_duration_ns: settings.max_duration,
        remap: settings.remap,
        buffer_kb: settings.buffer_kb,
        stat_runtime: settings.stat_runtime,
        set_rt_runtime: settings.set_rt_runtime,
        loops_per_us: settings.loops_per_us,
        features: Vec::new(),
        trace_out: trace,
        kernel_settings_applied: false,
    }
}

/// Run for real and analyse (work conservation with `grace_ns`); `features`
/// are only noted (the host's sched_features are not changed). A capture
/// that could outgrow `budget` is refused before anything runs.
pub(crate) fn real_run(
    settings: &RealSettings,
    trace: Option<PathBuf>,
    features: &[String],
    grace_ns: u64,
    budget: &schedlab_sim::MemoryBudget,
) -> Result<(Scenario, RealRun, Report)> {
    if trace.as_deref().is_some_and(crate::output::is_stdout) {
        return Err(CliError::TraceToStdout.into());
    }
    let scenario = load(settings)?;
    if let Some(l) = settings.loops_per_us {
        if !(l.is_finite() && l > 0.0) {
            return Err(CliError::LoopsPerUs(l).into());
        }
    }
    let mut opts = options(settings, trace);
    opts.features = features.to_vec();
    let size = capture_size(&scenario, &opts)?;
    if size.bytes > budget.bytes {
        return Err(CliError::CaptureTooLarge {
            cpus: size.cpus,
            buffer_kb: size.buffer_kb,
            factor: schedlab_runner::read_back_factor(),
            need: schedlab_sim::gib(size.bytes),
            budget: format!("{} ({})", schedlab_sim::gib(budget.bytes), budget.origin),
            raise_with: budget.raise_with.clone(),
        }
        .into());
    }
    let run = run_real(&scenario, &opts)?;
    let report = schedlab_fidelity::sides::analyze_real(&scenario, &run, grace_ns);
    Ok((scenario, run, report))
}

/// Per scenario cgroup: its threads' CPU time in the window (from the
/// trace's task rows) and its `cpu.stat` counters.
pub(crate) fn cgroup_rows(scenario: &Scenario, run: &RealRun, report: &Report) -> Vec<CgroupRow> {
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

/// The header lines of a real run: host, calibration, notes, capture.
pub(crate) fn real_header<'a>(scenario: &Scenario, run: &'a RealRun, report: &Report) -> RealHeader<'a> {
    RealHeader {
        cgroups: cgroup_rows(scenario, run, report),
        kernel: &run.kernel,
        host_cpus: &run.plan.host_cpus,
        worker_pid: run.worker_pid,
        calibration: run.calibration.describe(),
        notes: &run.notes,
        start_ns: run.start_ns,
        end_ns: run.end_ns,
        events_captured: run.events_captured,
        events: run.trace.events.len(),
        lost_events: run.lost_events,
    }
}

pub fn real(args: RealArgs) -> Result {
    let budget = args.memory.budget(1);
    let (scenario, run, mut report) =
        real_run(&args.settings, args.trace.trace.clone(), &[], args.report.grace, &budget)?;
    // As a simulated run's report keeps them.
    report.keep_stalls(schedlab_report::kept_stalls(args.report.stalls));
    if args.json.json {
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
            events_captured: run.events_captured,
            lost_events: run.lost_events,
            cgroups: &cgroup_rows(&scenario, &run, &report),
            analysis: AnalysisJson::from(&report),
        };
        crate::output::emit(&format!("{}\n", schedlab_report::to_json(&doc)?))?;
        return Ok(());
    }
    let text = RealText {
        scenario: &scenario,
        header: real_header(&scenario, &run, &report),
        report: &report,
        table: &run.trace.table,
        narratives: args.report.stalls,
        trace_file: args.trace.trace.as_deref(),
    };
    crate::output::emit(&text.render())?;
    Ok(())
}
