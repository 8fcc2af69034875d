//! `schedlab analyze TRACE`: the `schedlab run` report (or `perf sched`'s
//! views) for a trace captured elsewhere. Reading and analysing it is
//! `schedlab_sides::recorded`'s; this parses the flags and prints.

use std::path::PathBuf;

use clap::Args;
use schedlab_analysis::perf_sched::{NotOffered, TimehistOptions};
use schedlab_report::{TraceFilter, TraceOptions};
use schedlab_sides::recorded::{analyze_recorded, Recorded, View as RecordedView};
use schedlab_trace::TimeWindow;

use crate::args::{JsonArg, MemoryArg, PerfettoArg, ReportArgs, ThresholdArg, View, ViewArg};
use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = crate::examples::get("analyze"))]
pub struct AnalyzeArgs {
    /// The trace: /sys/kernel/tracing/trace or trace_pipe text, `trace-cmd report` text
    /// (default or -R), a trace.dat (read through `trace-cmd report -R -t`), a perf.data
    /// (through `perf script`), `perf script` text or a Perfetto trace; the kind is
    /// detected from the file's first bytes (perf script text from its first event line). Switches the capture is missing are put back where each event's header
    /// proves them, and figures they make uncertain are left out (docs/real-traces.md). A
    /// file is read as a stream, in memory that does not grow with its length; a pipe or `-`
    /// (standard input), a trace out of time order (a Perfetto trace), `--perfetto` or
    /// `--convert` read it whole, within --max-memory. Devices, directories and sockets are refused.
    pub trace: PathBuf,
    /// Scenario the trace is a run of: its thread names pick the workload's tasks by comm,
    /// and their affinities, objects, stall threshold and [[measure]]s are used.
    #[arg(long, value_name = "FILE", value_parser = crate::names::scenario(), hide_possible_values = true)]
    pub scenario: Option<PathBuf>,
    /// Comm glob patterns (comma-separated, `*` and `?`) of the tasks whose `signal` starts a handoff.
    #[arg(long, value_name = "PATTERNS")]
    pub wakers: Option<String>,
    /// Comm glob patterns of the tasks whose `wait_done` ends a handoff (the wakees).
    #[arg(long, value_name = "PATTERNS")]
    pub wakees: Option<String>,
    /// Only the events on these CPUs (a cpulist: `1`, `0-3,8`), as `perf sched -C`.
    #[arg(short = 'C', long = "cpu", value_name = "CPULIST", value_parser = schedlab_topology::parse_cpulist)]
    pub cpu: Option<schedlab_topology::CpuSet>,
    /// Only the rows of these processes' threads (comma-separated tgids), as `perf sched
    /// timehist -p`. Without PIDS (after the trace), --pids: `perf sched latency -p`.
    #[arg(short = 'p', long = "pid", value_name = "PIDS", value_delimiter = ',', num_args = 0..=1,
          value_parser = parse_pid)]
    pub pid: Option<Vec<i32>>,
    /// Only the rows of these threads (comma-separated tids), as perf's `-t`.
    #[arg(short = 't', long = "tid", value_name = "TIDS", value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Only the events from START to END, in the trace's seconds as it prints them
    /// (`49916.5,49916.8`; either side may be empty), as perf's `--time`.
    #[arg(long = "time", value_name = "START,END", value_parser = clap::value_parser!(TimeWindow))]
    pub time: Option<TimeWindow>,
    #[command(flatten)]
    pub view: ViewArg,
    /// `--view timehist`: also a line per wakeup, as `perf sched timehist -w`.
    #[arg(short = 'w', long)]
    pub wakeups: bool,
    /// `--view timehist`: also a line per migration, as `perf sched timehist -M`.
    #[arg(short = 'M', long)]
    pub migrations: bool,
    /// `--view timehist`: a column per CPU marking the line's (s a switch, i the idle
    /// task's, m a migration), as `perf sched timehist -V`.
    #[arg(short = 'V', long)]
    pub cpu_visual: bool,
    /// `--view timehist`: the task switched in, as `perf sched timehist -n`.
    #[arg(short = 'n', long)]
    pub next: bool,
    /// Not offered: perf's `timehist -s` (summary only); refused with the reason.
    #[arg(short = 's', long, hide = true)]
    pub summary: bool,
    /// Not offered: perf's `timehist -S` (lines and summary); refused with the reason.
    #[arg(short = 'S', long, hide = true)]
    pub with_summary: bool,
    /// Not offered: perf's `timehist -I` (idle-hist); refused with the reason.
    #[arg(short = 'I', long, hide = true)]
    pub idle_hist: bool,
    /// Not offered: perf's `timehist --state`; refused with the reason.
    #[arg(long, hide = true)]
    pub state: bool,
    #[command(flatten)]
    pub threshold: ThresholdArg,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub perfetto: PerfettoArg,
    /// Write the trace's events as a trace-cmd trace.dat (file format version 6, as
    /// `run --trace-dat` writes it), for `trace-cmd report` and KernelShark; `trace-cmd
    /// report -N` prints them as schedlab's ftrace text would. Only the events schedlab
    /// reads go in (other tracepoints are left out, the switches the repair put back are
    /// in), with one comm per task (its last). Reads the trace whole.
    #[arg(long, value_name = "FILE")]
    pub convert: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub memory: MemoryArg,
    /// Time limit of each helper a binary trace is read through (`trace-cmd`, `perf`),
    /// e.g. 1800s; past it the helper is stopped and the input refused. Default: 5 s for
    /// trace-cmd's header check, 120 s plus 1 s per MB of input for the conversion.
    #[arg(long, value_name = "DURATION", value_parser = parse_helper_timeout)]
    pub helper_timeout: Option<std::time::Duration>,
}

/// A value of analyze's flags that is refused (clap prints it after the flag).
#[derive(Debug, thiserror::Error)]
enum FlagError {
    #[error(
        "`{0}` is not a pid: -p takes comma-separated pids (perf sched timehist -p); for one latency row \
         per thread (perf sched latency -p) put -p after the trace, or use --pids"
    )]
    Pid(String),
    #[error(transparent)]
    Duration(#[from] schedlab_topology::DurationError),
    #[error("must be longer than zero")]
    ZeroTimeout,
}

/// A pid of `-p PIDS`; a word that is not one is most likely the trace
/// after a bare `-p`.
fn parse_pid(s: &str) -> std::result::Result<i32, FlagError> {
    s.trim().parse().map_err(|_| FlagError::Pid(s.to_string()))
}

fn parse_helper_timeout(s: &str) -> std::result::Result<std::time::Duration, FlagError> {
    match schedlab_topology::parse_duration(s)? {
        0 => Err(FlagError::ZeroTimeout),
        ns => Ok(std::time::Duration::from_nanos(ns)),
    }
}

pub fn analyze_trace(mut args: AnalyzeArgs) -> Result {
    // The options are checked before the trace is read.
    refuse_timehist_options(&args)?;
    // `-p` alone is `perf sched latency -p`: one row per thread.
    if args.pid.as_ref().is_some_and(|p| p.is_empty()) {
        if args.view.view != View::Latency {
            return Err(CliError::Usage(
                "-p without PIDS is `perf sched latency -p` (one row per thread, also --pids), an option of \
                 --view latency; to choose processes give their pids: -p 1234,5678"
                    .into(),
            )
            .into());
        }
        args.view.pids = true;
    }
    args.view.check_pids()?;
    if (args.wakeups || args.migrations || args.cpu_visual || args.next) && args.view.view != View::Timehist {
        return Err(CliError::Usage(
            "-w/--wakeups, -M/--migrations, -V/--cpu-visual and -n/--next are options of --view timehist".into(),
        )
        .into());
    }
    let scenario = match &args.scenario {
        Some(p) => Some(schedlab_sides::load_scenario(p, None)?),
        None => None,
    };
    let json = args.json.json;
    let view = match args.view.view {
        View::Report => RecordedView::Report,
        View::Latency => RecordedView::Latency(args.view.latency_rows()),
        View::Map => RecordedView::Map { json },
        View::Timehist => RecordedView::Timehist(TimehistOptions {
            wakeups: args.wakeups,
            migrations: args.migrations,
            json,
            cpu_visual: args.cpu_visual,
            next: args.next,
            ..Default::default()
        }),
    };
    let perfetto = args.perfetto.perfetto.as_deref();
    let recorded = Recorded {
        path: args.trace.clone(),
        options: TraceOptions {
            scenario: scenario.as_ref(),
            wakers: args.wakers.as_deref(),
            wakees: args.wakees.as_deref(),
            threshold_ns: args.threshold.threshold,
            grace_ns: args.report.grace,
            filter: TraceFilter {
                cpus: args.cpu,
                time: args.time.unwrap_or_default(),
                pids: args.pid.clone().unwrap_or_default(),
                tids: args.tid.clone(),
            },
            kept_stalls: schedlab_report::kept_stalls(args.report.stalls),
        },
        view,
        perfetto,
        convert: args.convert.as_deref(),
        budget: args.memory.budget(1),
        helper_timeout: args.helper_timeout,
    };
    let stdout = || std::io::BufWriter::new(std::io::stdout());
    let analysed = analyze_recorded(&recorded, &stdout, &mut |note| stderr_line!("note: {note}"))?;
    match analysed.text(scenario.as_ref(), json, args.report.stalls, perfetto)? {
        Some(text) => crate::output::emit(&text),
        None => Ok(()),
    }
}

/// perf's timehist options schedlab does not offer, each refused with why.
fn refuse_timehist_options(args: &AnalyzeArgs) -> Result {
    let refused = if args.summary || args.with_summary {
        NotOffered::Summary
    } else if args.idle_hist {
        NotOffered::IdleHist
    } else if args.state {
        NotOffered::State
    } else {
        return Ok(());
    };
    Err(refused.into())
}
