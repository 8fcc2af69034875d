//! `schedlab run`: simulate one scenario and report.

use clap::Args;
use schedlab_sides::reported::{run_reported, Run, RunPrint, RunView, TraceFiles};
use schedlab_sim::SimOptions;
use std::path::PathBuf;

use crate::args::{
    DurationArg, FeaturesArg, JsonArg, MemoryArg, PerfettoArg, ReportArgs, SeedArg, ThresholdArg, TraceArg, View,
    ViewArg,
};
use crate::error::{CliError, Result};
use crate::output::is_stdout;

#[derive(Args)]
#[command(after_help = crate::examples::get("run"))]
pub struct RunArgs {
    /// Scenario file (TOML) or rt-app JSON file, e.g. scenarios/asym_min.toml, or a bundled
    /// scenario's name (`schedlab scenarios` lists them); `-` reads standard input.
    #[arg(value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: PathBuf,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub duration: DurationArg,
    #[command(flatten)]
    pub features: FeaturesArg,
    /// Topology preset name or TOML file (overrides the file's `topology`).
    #[arg(long, value_parser = crate::names::topology(), hide_possible_values = true)]
    pub topology: Option<String>,
    /// Kernel profile: 6.9, 6.12, 6.15 or mainline (overrides the file's `kernel`).
    #[arg(long, value_parser = crate::names::kernel_profile(), hide_possible_values = true)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub threshold: ThresholdArg,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub trace: TraceArg,
    #[command(flatten)]
    pub perfetto: PerfettoArg,
    /// Write the events as a trace-cmd trace.dat (file format version 6), which
    /// `trace-cmd report FILE` and KernelShark open like a recorded trace: the sched
    /// tracepoints with the kernel's fields, schedlab's decision events and the workload
    /// markers (`tracing_mark_write`) in an event system `schedlab`, each with the text
    /// --trace prints. `trace-cmd report -N FILE` prints the lines of --trace.
    #[arg(long, value_name = "FILE")]
    pub trace_dat: Option<PathBuf>,
    /// Write SVG plots to DIR: handoff-cdf.svg (one curve per wakee thread group) and
    /// stall-1.svg … stall-N.svg (per-CPU occupancy around the first N of --stalls).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub view: ViewArg,
    /// Check the kernel model's invariants as it runs: the runqueues and tasks each kernel
    /// entry touched after every entry, the whole model every (tasks + CPUs)-th entry
    /// (up to ~2.5x the run's time; default: only in debug builds).
    #[arg(long)]
    pub check_invariants: bool,
    /// Model a run captured like `schedlab real` captures one: each marker
    /// and each sched tracepoint costs CPU time (the topology's
    /// `trace_marker_ns` and `tracepoint_ns`). `compare` and `fidelity` do
    /// this always.
    #[arg(long)]
    pub traced: bool,
    /// Print the model's schedstats: each wakeup path try_to_wake_up() took (select then
    /// wakelist or direct, a task found still queued, a delayed task requeued, ...) with
    /// what it cost the wakers, and per class of CPUs the busy and newidle-balancing time.
    /// Always printed for a [schbench] scenario; always in --json.
    #[arg(long)]
    pub why: bool,
    /// Run the simulation and its analysis (the report, --trace, --perfetto) on one thread.
    /// By default they run as a pipeline on two threads when the machine has two CPUs;
    /// the output is the same either way, only the wall time differs.
    #[arg(long)]
    pub one_thread: bool,
    /// The livelock limit: stop when the simulation takes more than N engine steps per
    /// simulated microsecond over a millisecond of simulated time (default 500 + 20 per CPU;
    /// the busiest bundled scenario, schbench-spr, peaks at 27).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps_per_us: Option<u64>,
    /// The bound on simulated CPU time: refuse a run of more than N CPUs x simulated seconds
    /// (default 16384: seed 004's 60 s on 224 CPUs fits, about an hour here).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_cpu_seconds: Option<u64>,
    #[command(flatten)]
    pub memory: MemoryArg,
    /// For an rt-app JSON file: write rt-app's per-thread log files to DIR, named and laid
    /// out as rt-app 1.0 writes them (<log_basename>-<task>-<index>.log; its columns idx,
    /// perf, run, period, start, end, rel_st, slack, c_duration, c_period, wu_lat in us,
    /// one row per pass over a phase), so rt-app's and LISA's parsers read them. `perf`
    /// (rt-app's calibrated loop count) is 0: the model has no loops.
    #[arg(long, value_name = "DIR")]
    pub rtapp_log: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> Result {
    args.view.check()?;
    let timehist = args.view.view == View::Timehist;
    if timehist && args.trace.trace.as_deref().is_some_and(is_stdout) {
        return Err(CliError::Usage(
            "--view timehist and --trace - both want stdout: write the trace to a file".into(),
        )
        .into());
    }
    if args.trace_dat.as_deref().is_some_and(is_stdout) {
        return Err(CliError::Usage(
            "--trace-dat -: a trace.dat is binary and is not written to stdout; give a file".into(),
        )
        .into());
    }
    let scenario = schedlab_sides::load_scenario_on(
        &args.scenario,
        args.topology.as_deref(),
        args.kernel.as_deref(),
        args.threshold.threshold,
    )?;
    let opts = SimOptions {
        seed: args.seed.seed,
        duration_ns: args.duration.duration,
        features: args.features.features.clone(),
        topology: None,
        check_invariants: if args.check_invariants { Some(true) } else { None },
        invariant_budget: Some(schedlab_sim::INVARIANT_BUDGET),
        no_noise: args.seed.no_noise,
        traced: args.traced,
        memory_budget: Some(args.memory.budget(1)),
        max_steps_per_us: args.max_steps_per_us,
        max_cpu_seconds: args.max_cpu_seconds,
        rtapp_log: args.rtapp_log.is_some(),
    };
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let run = Run {
        options: opts,
        grace_ns: args.report.grace,
        kept_stalls: schedlab_report::kept_stalls(args.report.stalls),
        files: TraceFiles {
            ftrace: args.trace.trace.as_deref(),
            perfetto: args.perfetto.perfetto.as_deref(),
            trace_dat: args.trace_dat.as_deref(),
        },
        view: match args.view.view {
            View::Latency => RunView::Latency,
            View::Timehist => RunView::Timehist { json: args.json.json },
            _ => RunView::Report,
        },
        // The plots need the whole trace; otherwise the run streams into the
        // report's collectors and the trace files, and its memory stays bounded.
        keep_trace: args.plot.is_some(),
        pipelined: !args.one_thread && two_cpus,
        rtapp_log: args.rtapp_log.as_deref(),
        plot_dir: args.plot.as_deref(),
        plot_stalls: args.report.stalls,
    };
    let stdout = || std::io::BufWriter::new(std::io::stdout());
    let done = run_reported(&scenario, &run, &stdout)?;
    if timehist {
        return Ok(());
    }
    let print = RunPrint {
        json: args.json.json,
        latency_rows: args.view.latency_rows(),
        why: args.why,
        narratives: args.report.stalls,
        trace_file: args.trace.trace.as_deref(),
        perfetto_file: args.perfetto.perfetto.as_deref(),
        plot_dir: args.plot.as_deref(),
    };
    let text = done.render(&scenario, &print)?;
    if args.trace.trace.as_deref().is_some_and(is_stdout) {
        // `--trace -` took stdout: the report goes to stderr, and a failed
        // write is an error, unlike a message's.
        let mut err = std::io::stderr().lock();
        std::io::Write::write_all(&mut err, text.as_bytes()).map_err(|e| CliError::Stdout(e).into())
    } else {
        crate::output::emit(&text)
    }
}
