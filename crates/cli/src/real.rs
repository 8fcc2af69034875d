//! `schedlab real`: run a scenario on this machine's kernel, capture its
//! sched tracepoints and markers through tracefs, and report it the way
//! `schedlab run` reports a simulation.

use clap::Args;
use schedlab_runner::{run_real, RealOptions, RealRun};
use schedlab_scenario::Scenario;
use schedlab_topology::parse_duration;
use schedlab_trace::{Pid, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::report::{cpulist, fmt_secs, print_report, Report, ReportArgs};

/// The settings of a real run (shared with `schedlab compare`).
#[derive(Args, Clone)]
pub struct RealSettings {
    /// Scenario file (TOML), e.g. scenarios/asym_min-2cpu.toml.
    pub scenario: PathBuf,
    /// How long the workload runs, e.g. 30s, 500ms (overrides the file's `duration`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
    /// Limit for a scenario without a duration (it runs until every program ends).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub max_duration: u64,
    /// Map the scenario's CPUs onto this machine's when they do not exist here
    /// (in order, wrapping around); the mapping is printed.
    #[arg(long)]
    pub remap: bool,
    /// Handoffs at or above this count as stalls (default: the file's `stall_threshold`, else 500us).
    #[arg(long, value_parser = parse_duration)]
    pub threshold: Option<u64>,
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
    /// Write the captured tracefs text (the whole capture, as read from `trace`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Analyse `trace` up to `end_ns`; per-thread rows only for `workload`
/// (a real trace names every task on the machine).
pub(crate) fn analyze_run(
    scenario: &Scenario,
    trace: &Trace,
    end_ns: u64,
    allowed: BTreeMap<Pid, Vec<u32>>,
    workload: &[Pid],
    grace_ns: u64,
) -> Report {
    let mut r = Report::of(trace, Some(scenario), scenario.stall_threshold_ns, Some(end_ns), allowed, grace_ns);
    r.retain_tasks(|pid| workload.contains(&pid));
    r
}

pub(crate) fn load(settings: &RealSettings) -> Result<Scenario, String> {
    let mut s = Scenario::load(Path::new(&settings.scenario)).map_err(|e| e.to_string())?;
    if let Some(t) = settings.threshold {
        s.stall_threshold_ns = t;
    }
    Ok(s)
}

pub(crate) fn options(settings: &RealSettings, trace: Option<PathBuf>) -> RealOptions {
    RealOptions {
        duration_ns: settings.duration,
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
) -> Result<(Scenario, RealRun, Report), String> {
    let scenario = load(settings)?;
    if let Some(l) = settings.loops_per_us {
        if !(l.is_finite() && l > 0.0) {
            return Err(format!("--loops-per-us {l}: expected a positive number of iterations per microsecond"));
        }
    }
    let mut opts = options(settings, trace);
    opts.features = features.to_vec();
    let run = run_real(&scenario, &opts).map_err(|e| e.to_string())?;
    let report = analyze_run(&scenario, &run.trace, run.end_ns, run.allowed.clone(), &run.tids(), grace_ns);
    Ok((scenario, run, report))
}

/// The header lines of a real run: host, calibration, notes, capture.
pub(crate) fn print_real_header(run: &RealRun) {
    let cpus = cpulist(run.plan.host_cpus.iter().copied());
    println!("host      Linux {}, CPUs {cpus}, worker pid {}", run.kernel, run.worker_pid);
    println!("calibr.   {}", run.calibration.describe());
    for note in &run.notes {
        println!("note      {note}");
    }
    println!(
        "run       {} on the host kernel; {} events captured, {} in the run's window, {} lost",
        fmt_secs(run.end_ns - run.start_ns),
        run.events_captured,
        run.trace.events.len(),
        run.lost_events
    );
}

pub fn real(args: RealArgs) -> Result<(), String> {
    let (scenario, run, report) = real_run(&args.settings, args.trace.clone(), &[], args.report.grace)?;
    if args.json {
        let doc = serde_json::json!({
            "scenario": scenario.name,
            "kernel": run.kernel,
            "host_cpus": run.plan.host_cpus,
            "cpu_map": run.plan.cpu_map,
            "calibration": run.calibration,
            "notes": run.notes,
            "threads": run.threads,
            "window_ns": [run.start_ns, run.end_ns],
            "events_captured": run.events_captured,
            "lost_events": run.lost_events,
            "metrics": report.metrics,
            "work_conservation": report.workcons,
            "attribution": report.attribution,
            "measures": report.measures,
        });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        return Ok(());
    }
    println!("scenario  {} ({})", scenario.name, scenario.path);
    if !scenario.description.is_empty() {
        println!("          {}", scenario.description);
    }
    print_real_header(&run);
    println!();
    print_report(&report, &run.trace.table, args.report.stalls);
    if let Some(path) = &args.trace {
        println!();
        println!("trace     {} ({} events captured, tracefs text)", path.display(), run.events_captured);
    }
    Ok(())
}
