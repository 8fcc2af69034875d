//! `schedlab analyze TRACE`: the `schedlab run` report for a trace captured
//! elsewhere (tracefs `trace`/`trace_pipe` text or `trace-cmd report`),
//! streamed from a file (`TraceReport::stream`) or read whole.
//! How the workload is chosen and what is reported:
//! `schedlab_report::TraceReport` and `schedlab_report::workload`.

use std::path::PathBuf;

use clap::Args;
use schedlab_report::{Streamed, TraceOptions, TraceReport};
use schedlab_scenario::Scenario;

use crate::args::{JsonArg, MemoryArg, PerfettoArg, ReportArgs, ThresholdArg};
use crate::error::{CliError, Result};
use crate::output::write_perfetto;

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Trace text: /sys/kernel/tracing/trace, trace_pipe output or `trace-cmd report` output
    /// (the format is detected). A file is read as a stream, in memory that does not grow
    /// with its length; a pipe, a trace out of time order or `--perfetto` read it whole,
    /// within --max-memory.
    pub trace: PathBuf,
    /// Scenario the trace is a run of: its thread names pick the workload's tasks by comm,
    /// and their affinities, objects, stall threshold and [[measure]]s are used.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Comm glob patterns (comma-separated, `*` and `?`) of the tasks whose `signal` starts a handoff.
    #[arg(long, value_name = "PATTERNS")]
    pub wakers: Option<String>,
    /// Comm glob patterns of the tasks whose `wait_done` ends a handoff (the wakees).
    #[arg(long, value_name = "PATTERNS")]
    pub wakees: Option<String>,
    #[command(flatten)]
    pub threshold: ThresholdArg,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub perfetto: PerfettoArg,
    #[command(flatten)]
    pub json: JsonArg,
    #[command(flatten)]
    pub memory: MemoryArg,
}

/// The shortest common event line of a tracefs capture, bytes: a
/// `sched_wakeup` with a short comm is about 90 (a capture of this
/// project's host averaged 150 over all lines). The analysis holds the
/// text and one event per line, so its memory is at most
/// `1 + TRACE_EVENT_BYTES / SHORT_LINE_BYTES` times the input.
const SHORT_LINE_BYTES: u64 = 90;

/// Read all of `path`, refusing more than the budget lets the analysis
/// hold (a huge capture, `/dev/zero`, a FIFO that never ends) before it is
/// read in full.
fn read_bounded(path: &std::path::Path, shown: &str, budget: &schedlab_sim::MemoryBudget) -> Result<Vec<u8>> {
    use std::io::Read;
    let limit = budget.bytes / (SHORT_LINE_BYTES + schedlab_sim::TRACE_EVENT_BYTES) * SHORT_LINE_BYTES;
    let file = std::fs::File::open(path).map_err(|source| CliError::Read { path: shown.to_string(), source })?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| CliError::Read { path: shown.to_string(), source })?;
    if bytes.len() as u64 > limit {
        return Err(CliError::InputTooLarge {
            path: shown.to_string(),
            limit: schedlab_sim::gib(limit),
            budget: format!("{} ({})", schedlab_sim::gib(budget.bytes), budget.origin),
            raise_with: budget.raise_with.clone(),
        }
        .into());
    }
    Ok(bytes)
}

pub fn analyze_trace(args: AnalyzeArgs) -> Result {
    let scenario = match &args.scenario {
        Some(p) => Some(Scenario::load(p)?),
        None => None,
    };
    let path = args.trace.display().to_string();
    let opts = TraceOptions {
        scenario: scenario.as_ref(),
        wakers: args.wakers.as_deref(),
        wakees: args.wakees.as_deref(),
        threshold_ns: args.threshold.threshold,
        grace_ns: args.report.grace,
    };
    let perfetto = args.perfetto.perfetto.as_deref();
    // A regular file is read as a stream (two or three passes, bounded
    // memory); a pipe, or `--perfetto` (which needs every event), reads it
    // whole within the memory budget, as does a trace out of time order.
    let is_file = std::fs::metadata(&args.trace).is_ok_and(|m| m.is_file());
    let mut streamed = None;
    if is_file && perfetto.is_none() {
        let open = || std::fs::File::open(&args.trace).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
        match TraceReport::stream(&path, open, &opts)? {
            Streamed::Report(r) => streamed = Some(*r),
            Streamed::NotInTimeOrder { line } => eprintln!(
                "note: {path}:{line}: events are not in time order from here (per-CPU buffers one after \
                 the other?): reading the whole trace to sort it, within the memory budget"
            ),
        }
    }
    let report = match streamed {
        Some(r) => r,
        None => {
            let bytes = read_bounded(&args.trace, &path, &args.memory.budget(1))?;
            let (report, trace) = TraceReport::read(&path, &bytes, &opts)?;
            if let Some(p) = perfetto {
                write_perfetto(&trace, p)?;
            }
            report
        }
    };
    if args.json.json {
        crate::output::emit(&format!("{}\n", report.to_json(scenario.as_ref())?))?;
    } else {
        crate::output::emit(&report.render(scenario.as_ref(), args.report.stalls, perfetto))?;
    }
    Ok(())
}
