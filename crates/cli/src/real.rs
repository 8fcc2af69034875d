//! `schedlab real`: run a scenario on this machine's kernel, capture its
//! sched tracepoints and markers through tracefs, and report it the way
//! `schedlab run` reports a simulation.

use clap::Args;
use schedlab_runner::RealOptions;
use schedlab_scenario::Scenario;
use schedlab_sides::{Host, Side as _};
use schedlab_sim::MemoryBudget;
use schedlab_topology::parse_duration;
use std::path::PathBuf;

use crate::args::{DurationArg, JsonArg, MemoryArg, ReportArgs, ThresholdArg, TraceArg};
use crate::error::Result;

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
#[command(after_help = crate::examples::get("real"))]
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

/// The scenario, with --threshold applied.
pub(crate) fn load(settings: &RealSettings) -> Result<Scenario> {
    Ok(schedlab_sides::load_scenario(&settings.scenario, settings.threshold.threshold)?)
}

/// The runner's options from the command line (`features` are only noted
/// on the host, set inside a guest).
pub(crate) fn options(settings: &RealSettings, trace: Option<PathBuf>, features: &[String]) -> RealOptions {
    RealOptions {
        duration_ns: settings.duration.duration,
        max_duration_ns: settings.max_duration,
        remap: settings.remap,
        buffer_kb: settings.buffer_kb,
        stat_runtime: settings.stat_runtime,
        set_rt_runtime: settings.set_rt_runtime,
        loops_per_us: settings.loops_per_us,
        features: features.to_vec(),
        trace_out: trace,
        kernel_settings_applied: false,
    }
}

/// The host side of `real` and `compare`.
pub(crate) fn host(
    settings: &RealSettings,
    trace: Option<PathBuf>,
    features: &[String],
    grace_ns: u64,
    budget: MemoryBudget,
) -> Result<Host> {
    Ok(Host::new(options(settings, trace, features), grace_ns, Some(budget))?)
}

pub fn real(args: RealArgs) -> Result {
    let host = host(&args.settings, args.trace.trace.clone(), &[], args.report.grace, args.memory.budget(1))?;
    let scenario = load(&args.settings)?;
    let mut analysed = host.run(&scenario, &mut |_| {})?;
    // As a simulated run's report keeps them.
    analysed.report.keep_stalls(schedlab_report::kept_stalls(args.report.stalls));
    let out = if args.json.json {
        analysed.json(&scenario)?
    } else {
        analysed.text(&scenario, args.report.stalls, args.trace.trace.as_deref())
    };
    crate::output::emit(&out)
}
