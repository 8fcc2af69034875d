//! `schedlab run`: simulate one scenario and report.

use clap::Args;
use schedlab_kernel::Profile;
use schedlab_report::{run_plot_title, AnalysisJson, RunJson, RunText, SimHeader};
use schedlab_scenario::{Scenario, Spanned};
use schedlab_sides::reported::{simulate_reported, Events, Reported};
use schedlab_sim::{SimOptions, TraceObserver};
use schedlab_topology::Topology;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::args::{
    DurationArg, FeaturesArg, JsonArg, MemoryArg, PerfettoArg, ReportArgs, SeedArg, ThresholdArg, TraceArg, View,
    ViewArg,
};
use crate::error::{CliError, Result};
use crate::output::{
    is_stdout, write_ftrace, write_perfetto, write_tracedat, FtraceStream, PerfettoStream, TraceDatStream,
};
use schedlab_analysis::perf_sched::{SchedLatency, Timehist};

#[derive(Args)]
#[command(after_help = crate::examples::RUN)]
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

fn load_scenario(args: &RunArgs) -> Result<Scenario> {
    let path = &args.scenario;
    let mut scenario = match &args.topology {
        None => Scenario::load(path)?,
        Some(reference) => {
            let topo = Topology::resolve(reference, Path::new(".")).map_err(|e| CliError::Topology(e.to_string()))?;
            let text = schedlab_topology::diag::read_input(path, "scenario")?;
            let base = path.parent().unwrap_or(Path::new("."));
            Scenario::from_toml_str_on(&path.display().to_string(), &text, base, topo)?
        }
    };
    if let Some(k) = &args.kernel {
        if Profile::by_name(k).is_none() {
            return Err(CliError::UnknownProfile { name: k.clone() }.into());
        }
        scenario.kernel_profile = Spanned { value: k.clone(), line: 0, col: 0 };
    }
    if let Some(t) = args.threshold.threshold {
        scenario.stall_threshold_ns = t;
    }
    Ok(scenario)
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
    let scenario = load_scenario(&args)?;
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
    if let (Some(_), None) = (&args.rtapp_log, &scenario.rtapp_log_basename) {
        return Err(CliError::Usage(format!(
            "--rtapp-log writes rt-app's log files, but {} is a scenario file, not an rt-app JSON file",
            scenario.path
        ))
        .into());
    }
    // The plots need the whole trace; otherwise the run streams into the
    // report's collectors and the trace files, and its memory stays bounded.
    let keep_trace = args.plot.is_some();
    // `--view latency`: perf's accounting over the run's events, with its task table.
    let mut latency = (args.view.view == View::Latency).then(|| (SchedLatency::new(), Default::default()));
    let kept = schedlab_report::kept_stalls(args.report.stalls);
    let wall = Instant::now();
    let grace = args.report.grace;
    let Reported { result, mut report, schbench, events, allowed } = if keep_trace {
        let run = simulate_reported(&scenario, &opts, grace, kept, Events::Kept)?;
        let result = &run.result;
        if let Some((lat, table)) = latency.as_mut() {
            for ev in result.trace.in_time_order().iter() {
                lat.observe(ev);
            }
            *table = result.trace.table.clone();
        }
        if timehist {
            let mut th = listing(args.json.json)?;
            for ev in result.trace.in_time_order().iter() {
                listing_line(&mut th, ev, &result.trace.table)?;
            }
            finish_listing(th)?;
        }
        if let Some(path) = &args.trace.trace {
            write_ftrace(&result.trace, path, "--trace")?;
        }
        if let Some(path) = &args.perfetto.perfetto {
            write_perfetto(&result.trace, path)?;
        }
        if let Some(path) = &args.trace_dat {
            write_tracedat(&result.trace, path)?;
        }
        run
    } else {
        let mut obs = Streamed {
            nr_cpus: scenario.topology.nr_cpus() as u32,
            ftrace: args.trace.trace.as_deref().map(FtraceStream::create).transpose()?,
            perfetto: args.perfetto.perfetto.as_deref().map(PerfettoStream::create).transpose()?,
            trace_dat: args.trace_dat.as_deref().map(TraceDatStream::create).transpose()?,
            timehist: if timehist { Some((listing(args.json.json)?, Default::default(), None)) } else { None },
            latency: latency.take(),
        };
        let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let pipelined = !args.one_thread && two_cpus;
        let run = simulate_reported(&scenario, &opts, grace, kept, Events::Streamed { also: &mut obs, pipelined })?;
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
                return Err(CliError::Stdout(e).into());
            }
            finish_listing(th)?;
        }
        latency = obs.latency.take();
        run
    };
    let wall = wall.elapsed();
    if let (Some(dir), Some(basename)) = (&args.rtapp_log, &scenario.rtapp_log_basename) {
        schedlab_sim::write_rtapp_logs(dir, basename, &scenario, &result).map_err(|e| CliError::Write {
            flag: "--rtapp-log",
            path: e.path.display().to_string(),
            why: e.source.to_string(),
        })?;
    }
    debug_assert_eq!(report.attribution.explained() + report.attribution.unexplained, report.metrics.stall_count());

    let plots = match &args.plot {
        Some(dir) => schedlab_plot::write_run_plots(
            dir,
            &schedlab_plot::RunPlots {
                title: run_plot_title(&scenario.name, result.seed),
                trace: &result.trace,
                metrics: &report.metrics,
                stalls: &report.attribution.stalls,
                groups: scenario
                    .threads
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (schedlab_sim::FIRST_PID + i as i32, t.group.clone()))
                    .collect(),
                allowed: &allowed,
                max_stalls: args.report.stalls,
            },
        )?,
        None => Vec::new(),
    };
    // As a streamed run keeps them (the plots above counted them all).
    report.keep_stalls(kept);

    if timehist {
        return Ok(());
    }
    let trace_to_stdout = args.trace.trace.as_deref().is_some_and(is_stdout);
    let changed = result.features.diff_from(&result.profile.defaults);
    let groups = schedlab_sides::model::group_rows(&result);
    let why = schedlab_sweep::why::why(&result.kernel_stats, &scenario, result.end_ns);
    if let (true, Some((lat, table))) = (args.json.json, &latency) {
        let rows = lat.rows_by(table, |_| true, args.view.latency_rows());
        return report_out(&crate::analyze::latency_json(&rows), trace_to_stdout);
    }
    if args.json.json {
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
        report_out(&format!("{}\n", schedlab_report::to_json(&doc)?), trace_to_stdout)?;
        return Ok(());
    }

    let header = SimHeader {
        scenario: &scenario,
        machine: &result.topology,
        kernel: result.profile.name,
        base_slice_ns: result.profile.base_slice_for(result.topology.nr_cpus()),
        features_changed: &changed,
        simulated_ns: result.end_ns,
        seed: result.seed,
        events,
        wall_s: wall.as_secs_f64(),
        notes: &result.notes,
        groups: &groups,
    };
    if args.view.view == View::Latency {
        let mut text = header.render();
        text.push('\n');
        if let Some((lat, table)) = &latency {
            text.push_str(&lat.render(&lat.rows_by(table, |_| true, args.view.latency_rows())));
        }
        return report_out(&text, trace_to_stdout);
    }
    let text = RunText {
        header,
        report: &report,
        table: &result.trace.table,
        schbench,
        why: (args.why || scenario.schbench.is_some()).then_some(&why),
        narratives: args.report.stalls,
        trace_file: args.trace.trace.as_deref(),
        perfetto_file: args.perfetto.perfetto.as_deref(),
        plots: args.plot.as_deref().map(|dir| (dir, plots.len())),
    };
    report_out(&text.render(), trace_to_stdout)?;
    Ok(())
}

/// The report: on stdout, or on stderr when `--trace -` took stdout.
fn report_out(text: &str, trace_to_stdout: bool) -> Result {
    if trace_to_stdout {
        // The report itself: a failed write is an error, unlike a message's.
        let mut err = std::io::stderr().lock();
        std::io::Write::write_all(&mut err, text.as_bytes()).map_err(|e| CliError::Stdout(e).into())
    } else {
        crate::output::emit(text)
    }
}

/// A streamed run's trace files and perf views, started once the run's
/// task table is known (the report's collector is the side's).
struct Streamed {
    nr_cpus: u32,
    ftrace: Option<FtraceStream>,
    perfetto: Option<PerfettoStream>,
    trace_dat: Option<TraceDatStream>,
    /// `--view timehist`: the listing, the run's task table, the first write error.
    timehist: Option<(Listing, schedlab_trace::TaskTable, Option<std::io::Error>)>,
    /// `--view latency`: perf's accounting and the run's task table.
    latency: Option<(SchedLatency, schedlab_trace::TaskTable)>,
}

type Listing = Timehist<'static, std::io::BufWriter<std::io::Stdout>>;

/// `--view timehist`'s listing on stdout, every switch (a JSON object a line with `json`).
fn listing(json: bool) -> Result<Listing> {
    let opts = schedlab_analysis::perf_sched::TimehistOptions { json, ..Default::default() };
    Ok(Timehist::with_options(std::io::BufWriter::new(std::io::stdout()), |_, _| true, opts)
        .map_err(CliError::Stdout)?)
}

/// One event into the listing; a closed pipe (`| head`) ends it quietly.
fn listing_line(th: &mut Listing, ev: &schedlab_trace::Event, table: &schedlab_trace::TaskTable) -> Result {
    match th.observe(ev, table) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e).into()),
        _ => Ok(()),
    }
}

fn finish_listing(th: Listing) -> Result {
    let flushed = th.finish().and_then(|mut out| std::io::Write::flush(&mut out));
    match flushed {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Stdout(e).into()),
        _ => Ok(()),
    }
}

impl TraceObserver for Streamed {
    fn start(&mut self, table: &schedlab_trace::TaskTable) {
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

    fn task_new(&mut self, pid: schedlab_trace::Pid, info: &schedlab_trace::TaskInfo) {
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

    fn event(&mut self, e: &schedlab_trace::Event) {
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
