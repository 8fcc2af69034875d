//! `schedlab real`: run a scenario on this machine's kernel, capture its
//! sched tracepoints and markers through tracefs, and report it the way
//! `schedlab run` reports a simulation.

use clap::Args;
use schedlab_report::{AnalysisJson, RealHeader, RealJson, RealText, Report};
use schedlab_runner::{run_real, RealOptions, RealRun};
use schedlab_scenario::Scenario;
use schedlab_topology::parse_duration;
use std::path::{Path, PathBuf};

use crate::args::{DurationArg, JsonArg, ReportArgs, ThresholdArg, TraceArg};
use crate::error::{CliError, Result};

/// The settings of a real run (shared with `schedlab compare`).
#[derive(Args, Clone)]
pub struct RealSettings {
    /// Scenario file (TOML) or rt-app JSON file, e.g. scenarios/asym_min-2cpu.toml; `-` reads standard input.
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
pub struct RealArgs {
    #[command(flatten)]
    pub settings: RealSettings,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub trace: TraceArg,
    #[command(flatten)]
    pub json: JsonArg,
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
/// are only noted (the host's sched_features are not changed).
pub(crate) fn real_run(
    settings: &RealSettings,
    trace: Option<PathBuf>,
    features: &[String],
    grace_ns: u64,
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
    let run = run_real(&scenario, &opts)?;
    let report = schedlab_fidelity::sides::analyze_real(&scenario, &run, grace_ns);
    Ok((scenario, run, report))
}

/// The header lines of a real run: host, calibration, notes, capture.
pub(crate) fn real_header(run: &RealRun) -> RealHeader<'_> {
    RealHeader {
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
    let (scenario, run, report) = real_run(&args.settings, args.trace.trace.clone(), &[], args.report.grace)?;
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
            analysis: AnalysisJson::from(&report),
        };
        crate::output::emit(&format!("{}\n", schedlab_report::to_json(&doc)?))?;
        return Ok(());
    }
    let text = RealText {
        scenario: &scenario,
        header: real_header(&run),
        report: &report,
        table: &run.trace.table,
        narratives: args.report.stalls,
        trace_file: args.trace.trace.as_deref(),
    };
    crate::output::emit(&text.render())?;
    Ok(())
}
